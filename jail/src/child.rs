//! The code that runs in the new process between `clone` and `exec` (K1).
//!
//! The process was cloned with `CLONE_VM | CLONE_VFORK` straight into new user, mount and PID
//! namespaces (see `spawn`): it shares paddock's memory while the cloning thread waits, so this
//! code must not allocate, lock or touch thread-locals; it only makes system calls on values
//! the parent prepared. `run` takes these steps in order (an unconfined program, the preset's
//! `confine = "off"`, skips 2–4 and 8):
//!
//! 1. `die_with_paddock`: default signal handling, death with paddock (`PR_SET_PDEATHSIG`,
//!    then a check that paddock did not die before it was set);
//! 2. `map_ids`: the caller's uid and gid mapped to themselves;
//! 3. `mount_view`: the private mount namespace, every protected path and placeholder bound
//!    read-only and the directories on the way pinned (K2), owner-only files under `/etc`
//!    covered when paddock runs as root (`mask`), paddock's data directory covered by an empty
//!    read-only tmpfs, and a procfs of the new PID namespace over `/proc` (the program sees its
//!    own processes only);
//! 4. `grant_proc`: that `/proc` granted in the Landlock ruleset;
//! 5. `standard_streams`: standard streams, every other inherited descriptor closed on
//!    `execve`;
//! 6. `enter_directory_and_group`: working directory, process group (or a session whose
//!    controlling terminal is the program's standard input, for a program run on a terminal);
//! 7. `limit_resources`: resource limits;
//! 8. `lock_down`: no capabilities, `no_new_privs`, the Landlock ruleset, the seccomp filter;
//! 9. `execute`: `execve`.
//!
//! A failed system call is recorded as a `Step` (numbered in the order the calls run) and its
//! errno, in memory the parent reads after `clone` returns, and the process exits. Nothing here
//! runs in paddock's own process but `failure_message`, which the parent calls to read it.

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

/// The system calls that can fail, numbered in the order `run` makes them: a failure records
/// one, for the parent's error message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(super) enum Step {
    DieWithPaddock = 1,
    MapIds,
    PrivateMounts,
    BindProtected,
    HideRootOnly,
    HideDataDirectory,
    MountProc,
    GrantProc,
    StandardStreams,
    CloseInherited,
    WorkingDirectory,
    ProcessGroup,
    ControllingTerminal,
    ResourceLimits,
    DropCapabilities,
    NoNewPrivs,
    EnforceLandlock,
    InstallSeccomp,
    Execute,
}

/// What each step does, in the order they run (a unit test holds the order).
const STEPS: [(Step, &str); 19] = [
    (Step::DieWithPaddock, "die with paddock (PR_SET_PDEATHSIG)"),
    (
        Step::MapIds,
        "map the user and group ids (/proc/self/uid_map)",
    ),
    (Step::PrivateMounts, "make the mount namespace private"),
    (Step::BindProtected, "bind protected paths read-only"),
    (Step::HideRootOnly, "hide files only root may read (/etc)"),
    (Step::HideDataDirectory, "hide paddock's data directory"),
    (Step::MountProc, "mount a procfs for the PID namespace"),
    (Step::GrantProc, "grant /proc in the Landlock ruleset"),
    (Step::StandardStreams, "set up standard streams"),
    (
        Step::CloseInherited,
        "close inherited descriptors on execve (close_range)",
    ),
    (Step::WorkingDirectory, "change to the working directory"),
    (
        Step::ProcessGroup,
        "start a process group (a session, on a terminal)",
    ),
    (
        Step::ControllingTerminal,
        "make the terminal the session's controlling terminal",
    ),
    (Step::ResourceLimits, "set resource limits"),
    (Step::DropCapabilities, "drop capabilities"),
    (Step::NoNewPrivs, "set no_new_privs"),
    (Step::EnforceLandlock, "enforce the Landlock ruleset"),
    (Step::InstallSeccomp, "install the seccomp filter"),
    (Step::Execute, "execute the program"),
];

/// A step that failed, and the errno it failed with.
struct Failed {
    step: Step,
    errno: c_int,
}

impl Failed {
    /// The failure as the child records it in `ChildPlan::failure`: never zero.
    fn encode(&self) -> u64 {
        ((self.step as u64) << 32) | self.errno as u32 as u64
    }
}

/// The parent's message for what the child recorded in `ChildPlan::failure`, or `None` when
/// no step failed.
pub(super) fn failure_message(recorded: u64) -> Option<String> {
    if recorded == 0 {
        return None;
    }
    let step = (recorded >> 32) as usize;
    let what = STEPS
        .get(step.wrapping_sub(1))
        .map_or("?", |(_, what)| what);
    let errno = std::io::Error::from_raw_os_error((recorded & 0xffff_ffff) as i32);
    Some(format!("could not {what}: {errno}"))
}

/// `Err` with `step` and the errno when a system call returned -1 (errno read straight after
/// the call, before anything else can change it).
fn check(step: Step, returned: c_int) -> Result<(), Failed> {
    if returned == -1 {
        return Err(Failed {
            step,
            errno: errno(),
        });
    }
    Ok(())
}

/// The entry point given to `clone`. `arg` points at a `ChildPlan`.
pub(super) extern "C" fn child_main(arg: *mut libc::c_void) -> c_int {
    // SAFETY: the parent passes a pointer to a ChildPlan it keeps alive, unmoved, until this
    // process has called execve or exited (CLONE_VFORK).
    let plan = unsafe { &*(arg as *const ChildPlan) };
    // SAFETY: this is the child between `clone` and `execve`, which the steps require.
    let Err(failed) = unsafe { run(plan) };
    plan.failure
        .store(failed.encode(), std::sync::atomic::Ordering::SeqCst);
    // SAFETY: _exit never returns and runs nothing of the parent's.
    unsafe { libc::_exit(127) }
}

/// Runs the steps in order (the list at the top); returns only on failure.
///
/// # Safety
/// Only in the child between `clone` and `execve`, as every step: each makes system calls that
/// change this process alone, on pointers from the plan the parent prepared (and keeps alive)
/// before `clone`.
unsafe fn run(plan: &ChildPlan) -> Result<std::convert::Infallible, Failed> {
    // SAFETY: the caller's promise above is each step's.
    unsafe {
        die_with_paddock(plan)?;
        if !plan.unconfined {
            map_ids(plan)?;
            mount_view(plan)?;
            grant_proc(plan)?;
        }
        standard_streams(plan)?;
        enter_directory_and_group(plan)?;
        limit_resources(plan)?;
        if !plan.unconfined {
            lock_down(plan)?;
        }
        execute(plan)
    }
}

/// Default signal handling, and death with paddock: `PR_SET_PDEATHSIG`, then a check that
/// paddock did not die between `clone` and `prctl` (then no signal comes).
unsafe fn die_with_paddock(plan: &ChildPlan) -> Result<(), Failed> {
    // SAFETY: system calls on stack values and the plan's pidfd.
    unsafe {
        default_signals();
        check(
            Step::DieWithPaddock,
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0),
        )?;
        if plan.paddock >= 0 {
            let mut poll = libc::pollfd {
                fd: plan.paddock,
                events: libc::POLLIN,
                revents: 0,
            };
            if libc::poll(&mut poll, 1, 0) != 0 {
                return Err(Failed {
                    step: Step::DieWithPaddock,
                    errno: libc::ESRCH,
                });
            }
        }
        Ok(())
    }
}

/// The caller's uid and gid mapped to themselves in the new user namespace.
unsafe fn map_ids(plan: &ChildPlan) -> Result<(), Failed> {
    // SAFETY: writes of the plan's C strings to this process's /proc files.
    unsafe {
        check(Step::MapIds, write_proc(c"/proc/self/setgroups", c"deny"))?;
        check(
            Step::MapIds,
            write_proc(c"/proc/self/uid_map", &plan.uid_map),
        )?;
        check(
            Step::MapIds,
            write_proc(c"/proc/self/gid_map", &plan.gid_map),
        )
    }
}

/// What the program sees of the file system: the mount namespace made private, the protected
/// paths bound, root-only files and paddock's data directory covered, and a procfs of the new
/// PID namespace over `/proc`.
unsafe fn mount_view(plan: &ChildPlan) -> Result<(), Failed> {
    let null = std::ptr::null();
    // SAFETY: mounts in this process's own mount namespace, on the plan's C strings and
    // static ones.
    unsafe {
        check(
            Step::PrivateMounts,
            libc::mount(
                null,
                c"/".as_ptr(),
                null,
                libc::MS_REC | libc::MS_PRIVATE,
                null.cast(),
            ),
        )?;
        for bind in &plan.binds {
            bind_protected(bind)?;
        }
        for (path, dir) in plan.masks {
            let path = path.as_ptr();
            let hidden = if *dir {
                let flags = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
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
            check(Step::HideRootOnly, hidden)?;
        }
        for dir in &plan.hidden {
            let flags = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
            check(
                Step::HideDataDirectory,
                libc::mount(
                    c"tmpfs".as_ptr(),
                    dir.as_ptr(),
                    c"tmpfs".as_ptr(),
                    flags,
                    null.cast(),
                ),
            )?;
        }
        let proc_flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        check(
            Step::MountProc,
            libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                proc_flags,
                null.cast(),
            ),
        )
    }
}

/// One protected path bound onto itself (read-only unless only pinned), then checked to be
/// the file the parent saw.
unsafe fn bind_protected(bind: &Bind) -> Result<(), Failed> {
    let null = std::ptr::null();
    let path = bind.path.as_ptr();
    // SAFETY: mounts in this process's own mount namespace on the bind's C string; `stat`
    // writes into a zeroed stack value.
    let stat = unsafe {
        check(
            Step::BindProtected,
            libc::mount(path, path, null, libc::MS_BIND | libc::MS_REC, null.cast()),
        )?;
        if bind.read_only {
            let flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | bind.keep_flags;
            check(
                Step::BindProtected,
                libc::mount(null, path, null, flags, null.cast()),
            )?;
        }
        let mut stat: libc::stat = std::mem::zeroed();
        check(Step::BindProtected, libc::stat(path, &mut stat))?;
        stat
    };
    if (stat.st_dev, stat.st_ino) != bind.identity {
        return Err(Failed {
            step: Step::BindProtected,
            errno: libc::ESTALE,
        });
    }
    Ok(())
}

/// The new `/proc` granted in the Landlock ruleset (as `proc_access` allows), which could
/// only name it once it was mounted.
unsafe fn grant_proc(plan: &ChildPlan) -> Result<(), Failed> {
    // SAFETY: open, landlock_add_rule on the plan's ruleset with a stack rule, and close.
    unsafe {
        let proc = libc::open(c"/proc".as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
        check(Step::GrantProc, proc)?;
        let rule = LandlockPathBeneath {
            allowed_access: plan.proc_access,
            parent_fd: proc,
        };
        check(
            Step::GrantProc,
            libc::syscall(libc::SYS_landlock_add_rule, plan.ruleset, 1, &rule, 0) as c_int,
        )?;
        libc::close(proc);
        Ok(())
    }
}

/// The plan's descriptors as the standard streams; every other descriptor closes on `execve`.
unsafe fn standard_streams(plan: &ChildPlan) -> Result<(), Failed> {
    // SAFETY: dup2 and close_range on this process's descriptors.
    unsafe {
        check(Step::StandardStreams, libc::dup2(plan.stdin, 0))?;
        check(Step::StandardStreams, libc::dup2(plan.stdout, 1))?;
        check(Step::StandardStreams, libc::dup2(plan.stderr, 2))?;
        // Whatever paddock inherited (an IDE's, a CI runner's or make's descriptors) or holds
        // must not reach the program: every descriptor above 2 closes on execve. The
        // Landlock ruleset's is still needed until then.
        check(
            Step::CloseInherited,
            libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, CLOSE_RANGE_CLOEXEC) as c_int,
        )
    }
}

/// The working directory, and a process group of the program's own (or, on a terminal, a
/// session whose controlling terminal is its standard input).
unsafe fn enter_directory_and_group(plan: &ChildPlan) -> Result<(), Failed> {
    // SAFETY: chdir on the plan's C string; setsid, ioctl on descriptor 0, setpgid.
    unsafe {
        check(Step::WorkingDirectory, libc::chdir(plan.cwd.as_ptr()))?;
        if plan.terminal {
            check(Step::ProcessGroup, libc::setsid())?;
            check(
                Step::ControllingTerminal,
                libc::ioctl(0, libc::TIOCSCTTY, 0),
            )
        } else {
            check(Step::ProcessGroup, libc::setpgid(0, 0))
        }
    }
}

/// The plan's resource limits, soft and hard alike.
unsafe fn limit_resources(plan: &ChildPlan) -> Result<(), Failed> {
    for &(resource, value) in &plan.rlimits {
        let limit = libc::rlimit {
            rlim_cur: value,
            rlim_max: value,
        };
        // SAFETY: setrlimit with a stack value.
        check(Step::ResourceLimits, unsafe {
            libc::setrlimit(resource, &limit)
        })?;
    }
    Ok(())
}

/// No capabilities, `no_new_privs`, then the Landlock ruleset and the seccomp filter enforced.
unsafe fn lock_down(plan: &ChildPlan) -> Result<(), Failed> {
    // SAFETY: prctl, landlock_restrict_self on the plan's ruleset, and seccomp with the plan's
    // filter, which the parent keeps alive.
    unsafe {
        check(Step::DropCapabilities, drop_capabilities())?;
        check(
            Step::NoNewPrivs,
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0),
        )?;
        check(
            Step::EnforceLandlock,
            libc::syscall(libc::SYS_landlock_restrict_self, plan.ruleset, 0) as c_int,
        )?;
        let call = libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &plan.filter,
        );
        check(Step::InstallSeccomp, call as c_int)
    }
}

/// `execve`, which returns only when it failed.
unsafe fn execute(plan: &ChildPlan) -> Result<std::convert::Infallible, Failed> {
    // SAFETY: the program path and the NULL-terminated argument and environment arrays the
    // parent keeps alive until `clone` returns.
    unsafe {
        libc::execve(
            plan.program.as_ptr(),
            plan.argv.as_ptr(),
            plan.envp.as_ptr(),
        );
    }
    Err(Failed {
        step: Step::Execute,
        errno: errno(),
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_described_in_the_order_they_run() {
        for (index, (step, _)) in STEPS.iter().enumerate() {
            assert_eq!(*step as usize, index + 1, "{step:?}");
        }
        assert_eq!(STEPS.last().map(|(step, _)| *step), Some(Step::Execute));
    }

    #[test]
    fn a_recorded_failure_names_its_step_and_errno() {
        let failed = Failed {
            step: Step::WorkingDirectory,
            errno: libc::ENOENT,
        };
        let message = failure_message(failed.encode()).unwrap_or_default();
        assert!(
            message.starts_with("could not change to the working directory: "),
            "{message}"
        );
        assert_eq!(failure_message(0), None);
    }
}
