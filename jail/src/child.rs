//! The code that runs in the new process between `clone` and `exec` (K1).
//!
//! The process was cloned with `CLONE_VM | CLONE_VFORK` straight into new user, mount and PID
//! namespaces (see `spawn`): it shares paddock's memory while the cloning thread waits, so this
//! code must not allocate, lock or touch thread-locals; it only makes system calls on values
//! the parent prepared. In order:
//!
//! 1. default signal handling, death with paddock (`PR_SET_PDEATHSIG`, then a check that
//!    paddock did not die before it was set), and the caller's uid and gid mapped to
//!    themselves;
//! 2. every protected path and placeholder bound read-only in the private mount namespace
//!    and the directories on the way pinned (K2), owner-only files under `/etc` covered when
//!    paddock runs as root (`mask`), paddock's data directory covered by an empty read-only
//!    tmpfs, and a procfs of the new PID namespace over `/proc` (the program sees its own
//!    processes only);
//! 3. standard streams, every other inherited descriptor closed on `execve`, working
//!    directory, process group (or a session whose controlling terminal is the program's
//!    standard input, for a program run on a terminal), resource limits;
//! 4. no capabilities, `no_new_privs`, the Landlock ruleset, the seccomp filter;
//! 5. `execve`.
//!
//! A failed step is recorded (step and errno) in memory the parent reads after `clone`
//! returns, and the process exits. Nothing here runs in paddock's own process.

use std::ffi::{CStr, CString};
use std::os::fd::RawFd;

use libc::{c_char, c_int};

/// A bind mount of a path onto itself, read-only or only pinned, with the flags the kernel
/// requires us to keep on remount (a mount's `nosuid`/`nodev`/`noexec` are locked inside a
/// user namespace).
#[derive(Debug)]
pub(super) struct Bind {
    pub path: CString,
    pub read_only: bool,
    pub keep_flags: libc::c_ulong,
    /// Device and inode the parent saw through the held mount: the bound path must be it.
    pub identity: (u64, u64),
}

/// Everything the child needs, prepared by the parent. Read by the child through a pointer.
pub(super) struct ChildPlan {
    pub program: CString,
    /// NULL-terminated pointers into `program`'s argument and environment strings, which the
    /// parent keeps alive until `clone` returns.
    pub argv: Vec<*const c_char>,
    pub envp: Vec<*const c_char>,
    pub cwd: CString,
    pub stdin: RawFd,
    pub stdout: RawFd,
    pub stderr: RawFd,
    /// When the program runs on a terminal (its standard streams are the terminal's other
    /// end): it leads a new session whose controlling terminal that is, instead of a process
    /// group of its own.
    pub terminal: bool,
    /// Run as the user, without namespaces, Landlock or seccomp (the preset's explicit
    /// `confine = "off"`): only the streams, directory, process group and death with paddock.
    pub unconfined: bool,
    pub uid_map: CString,
    pub gid_map: CString,
    pub binds: Vec<Bind>,
    /// Owner-only system files to cover (`mask`): (path, is a directory).
    pub masks: &'static [(CString, bool)],
    /// Directories to cover with an empty read-only tmpfs (paddock's data directory).
    pub hidden: Vec<CString>,
    /// A pidfd of paddock's process (or -1): readable once paddock has died.
    pub paddock: RawFd,
    pub rlimits: Vec<(super::Resource, libc::rlim_t)>,
    pub ruleset: RawFd,
    /// What the program may do under its `/proc`.
    pub proc_access: u64,
    pub filter: libc::sock_fprog,
    /// Where the child reports a failed step: (step, errno). Written by the child only.
    pub failure: std::sync::atomic::AtomicU64,
}

/// The steps, for the parent's error message.
pub(super) const STEPS: &[&str] = &[
    "",
    "map the user and group ids (/proc/self/uid_map)",
    "make the mount namespace private",
    "bind protected paths read-only",
    "mount a procfs for the PID namespace",
    "grant /proc in the Landlock ruleset",
    "set up standard streams",
    "change to the working directory",
    "set resource limits",
    "drop capabilities",
    "set no_new_privs",
    "enforce the Landlock ruleset",
    "install the seccomp filter",
    "execute the program",
    "hide files only root may read (/etc)",
    "die with paddock (PR_SET_PDEATHSIG)",
    "hide paddock's data directory",
    "close inherited descriptors on execve (close_range)",
];

/// The entry point given to `clone`. `arg` points at a `ChildPlan`.
pub(super) extern "C" fn child_main(arg: *mut libc::c_void) -> c_int {
    // SAFETY: the parent passes a pointer to a ChildPlan it keeps alive, unmoved, until this
    // process has called execve or exited (CLONE_VFORK).
    let plan = unsafe { &*(arg as *const ChildPlan) };
    let (step, errno) = run(plan);
    plan.failure.store(
        ((step as u64) << 32) | errno as u32 as u64,
        std::sync::atomic::Ordering::SeqCst,
    );
    // SAFETY: _exit never returns and runs nothing of the parent's.
    unsafe { libc::_exit(127) }
}

/// Runs the steps; returns only on failure, with (step, errno).
fn run(plan: &ChildPlan) -> (usize, c_int) {
    macro_rules! step {
        ($n:expr, $call:expr) => {
            if $call == -1 {
                return ($n, errno());
            }
        };
    }
    // SAFETY: system calls only, in the child between `clone` and `execve`; every pointer
    // comes from the plan the parent prepared (and keeps alive) before `clone`.
    unsafe {
        default_signals();
        step!(
            15,
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0)
        );
        if plan.paddock >= 0 {
            // paddock may have died between `clone` and `prctl`: then no signal comes.
            let mut poll = libc::pollfd {
                fd: plan.paddock,
                events: libc::POLLIN,
                revents: 0,
            };
            if libc::poll(&mut poll, 1, 0) != 0 {
                return (15, libc::ESRCH);
            }
        }
        if !plan.unconfined {
            step!(1, write_proc(c"/proc/self/setgroups", c"deny"));
            step!(1, write_proc(c"/proc/self/uid_map", &plan.uid_map));
            step!(1, write_proc(c"/proc/self/gid_map", &plan.gid_map));
            let null = std::ptr::null();
            step!(
                2,
                libc::mount(
                    null,
                    c"/".as_ptr(),
                    null,
                    libc::MS_REC | libc::MS_PRIVATE,
                    null.cast()
                )
            );
            for bind in &plan.binds {
                let path = bind.path.as_ptr();
                step!(
                    3,
                    libc::mount(path, path, null, libc::MS_BIND | libc::MS_REC, null.cast())
                );
                if bind.read_only {
                    let flags =
                        libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | bind.keep_flags;
                    step!(3, libc::mount(null, path, null, flags, null.cast()));
                }
                let mut stat: libc::stat = std::mem::zeroed();
                step!(3, libc::stat(path, &mut stat));
                if (stat.st_dev, stat.st_ino) != bind.identity {
                    return (3, libc::ESTALE);
                }
            }
            for (path, dir) in plan.masks {
                let path = path.as_ptr();
                let hidden = if *dir {
                    let flags =
                        libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
                    libc::mount(
                        c"tmpfs".as_ptr(),
                        path,
                        c"tmpfs".as_ptr(),
                        flags,
                        null.cast(),
                    )
                } else {
                    libc::mount(
                        c"/dev/null".as_ptr(),
                        path,
                        null,
                        libc::MS_BIND,
                        null.cast(),
                    )
                };
                step!(14, hidden);
            }
            for dir in &plan.hidden {
                let flags = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
                step!(
                    16,
                    libc::mount(
                        c"tmpfs".as_ptr(),
                        dir.as_ptr(),
                        c"tmpfs".as_ptr(),
                        flags,
                        null.cast()
                    )
                );
            }
            let proc_flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
            step!(
                4,
                libc::mount(
                    c"proc".as_ptr(),
                    c"/proc".as_ptr(),
                    c"proc".as_ptr(),
                    proc_flags,
                    null.cast()
                )
            );
            let proc = libc::open(c"/proc".as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
            step!(5, proc);
            let rule = LandlockPathBeneath {
                allowed_access: plan.proc_access,
                parent_fd: proc,
            };
            step!(
                5,
                libc::syscall(libc::SYS_landlock_add_rule, plan.ruleset, 1, &rule, 0) as c_int
            );
            libc::close(proc);
        }
        step!(6, libc::dup2(plan.stdin, 0));
        step!(6, libc::dup2(plan.stdout, 1));
        step!(6, libc::dup2(plan.stderr, 2));
        // Whatever paddock inherited (an IDE's, a CI runner's or make's descriptors) or holds
        // must not reach the program: every descriptor above 2 closes on execve. The
        // Landlock ruleset's is still needed until then.
        step!(
            17,
            libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, CLOSE_RANGE_CLOEXEC) as c_int
        );
        step!(7, libc::chdir(plan.cwd.as_ptr()));
        if plan.terminal {
            step!(7, libc::setsid());
            step!(6, libc::ioctl(0, libc::TIOCSCTTY, 0));
        } else {
            step!(7, libc::setpgid(0, 0));
        }
        for &(resource, value) in &plan.rlimits {
            let limit = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            step!(8, libc::setrlimit(resource, &limit));
        }
        if !plan.unconfined {
            step!(9, drop_capabilities());
            step!(10, libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
            step!(
                11,
                libc::syscall(libc::SYS_landlock_restrict_self, plan.ruleset, 0) as c_int
            );
            let call = libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &plan.filter,
            );
            step!(12, call as c_int);
        }
        libc::execve(
            plan.program.as_ptr(),
            plan.argv.as_ptr(),
            plan.envp.as_ptr(),
        );
        (13, errno())
    }
}

/// `CLOSE_RANGE_CLOEXEC` (Linux 5.11): mark the range close-on-exec instead of closing it.
const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;

/// `struct landlock_path_beneath_attr` (packed in the kernel ABI).
#[repr(C, packed)]
struct LandlockPathBeneath {
    allowed_access: u64,
    parent_fd: i32,
}

fn errno() -> c_int {
    // SAFETY: reading errno. (In this process errno lives in the cloning thread's TLS, which
    // is suspended; the value is read back at once.)
    unsafe { *libc::__errno_location() }
}

/// Unblocks every signal and restores default handling of SIGPIPE, which Rust programs
/// ignore: `execve` resets handled signals but keeps ignored ones. This process has its own
/// copy of the handler table (no `CLONE_SIGHAND`), so paddock's handlers are untouched.
unsafe fn default_signals() {
    // SAFETY: plain system calls on stack values.
    unsafe {
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Writes `data` to a /proc file of this process; -1 on failure.
unsafe fn write_proc(path: &CStr, data: &CStr) -> c_int {
    // SAFETY: valid C strings; the fd is ours and closed on every path.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd == -1 {
            return -1;
        }
        let bytes = data.to_bytes();
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        if written == bytes.len() as isize {
            0
        } else {
            -1
        }
    }
}

/// The program keeps no capability in its user namespace, even as uid 0 there: the bounding
/// set is emptied, `SECBIT_NOROOT` stops `exec` from granting them back, and the current sets
/// are cleared.
unsafe fn drop_capabilities() -> c_int {
    const SECBITS: libc::c_ulong = 0x1 | 0x2 | 0x4 | 0x8 | 0x20 | 0x40 | 0x80;
    // SAFETY: prctl and capset with valid arguments.
    unsafe {
        if libc::prctl(libc::PR_SET_SECUREBITS, SECBITS, 0, 0, 0) == -1 {
            return -1;
        }
        // Stops with EINVAL past the last capability this kernel knows.
        let mut cap = 0;
        while libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) == 0 {
            cap += 1;
        }
        let header = CapHeader {
            version: 0x2008_0522,
            pid: 0,
        };
        let data = [CapData::default(); 2];
        libc::syscall(libc::SYS_capset, &header, data.as_ptr()) as c_int
    }
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}
