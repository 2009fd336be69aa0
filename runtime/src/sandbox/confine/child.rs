//! The part of confinement that runs in the forked child, between `fork` and `exec` (K1).
//!
//! Everything here was prepared by the parent (`Jail::prepare`): strings are already C strings,
//! the Landlock ruleset and the seccomp program are already built. The child only makes
//! system calls, in this order:
//!
//! 1. `unshare` a user, mount and PID namespace (and a network namespace unless the grant
//!    allows the network), and map the caller's uid and gid to themselves;
//! 2. bind every protected path read-only (K2) in the private mount namespace;
//! 3. `fork` once more: the grandchild is PID 1 of the new PID namespace, so when it exits or
//!    is killed the kernel kills everything it started, `setsid` or not. The first child only
//!    waits for it and exits with its status;
//! 4. in the grandchild: resource limits, no capabilities, `no_new_privs`, Landlock, seccomp;
//!    then `exec`.
//!
//! Nothing in this file runs in paddock's own process: paddock is never restricted.

use std::ffi::CString;
use std::io;

use std::os::fd::{FromRawFd, OwnedFd};

use landlock::{AccessFs, BitFlags, PathBeneath, RulesetCreated, RulesetCreatedAttr};
use seccompiler::BpfProgram;

/// One resource limit for the program (`setrlimit`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Rlimit {
    pub resource: libc::__rlimit_resource_t,
    pub value: libc::rlim_t,
}

/// A read-only bind mount over a protected path, with the flags the kernel requires us to
/// keep on remount (a mount's `nosuid`/`nodev`/`noexec` are locked inside a user namespace).
#[derive(Debug)]
pub(super) struct ReadOnlyBind {
    pub path: CString,
    pub keep_flags: libc::c_ulong,
}

/// What the child applies; built by the parent, consumed once in the child.
pub(super) struct ChildPlan {
    pub network: bool,
    pub uid_map: Vec<u8>,
    pub gid_map: Vec<u8>,
    pub binds: Vec<ReadOnlyBind>,
    pub rlimits: Vec<Rlimit>,
    pub ruleset: Option<RulesetCreated>,
    /// What the program may do under `/proc`: granted on a fresh procfs of its own PID
    /// namespace (which lists only its processes), or on the host's `/proc` where the kernel
    /// refuses a new one (`host_proc`, opened by the parent).
    pub proc_access: BitFlags<AccessFs>,
    pub host_proc: Option<OwnedFd>,
    /// Applied in order; the kernel runs every installed filter and the strictest answer wins.
    pub filters: Vec<BpfProgram>,
}

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Writes `data` to a /proc file of this process.
fn write_proc(path: &std::ffi::CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is a valid C string; the fd is ours and closed on every path.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd == -1 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        libc::close(fd);
        if written != data.len() as isize {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

impl ChildPlan {
    /// Runs in the child after `fork`. Returns only in the grandchild, ready to `exec`; the
    /// intermediate process never returns (it exits with the grandchild's status).
    pub(super) fn enter(&mut self) -> io::Result<()> {
        let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID;
        if !self.network {
            flags |= libc::CLONE_NEWNET;
        }
        // SAFETY: unshare only changes this (single-threaded, forked) process's namespaces.
        check(unsafe { libc::unshare(flags) })?;
        write_proc(c"/proc/self/setgroups", b"deny")?;
        write_proc(c"/proc/self/uid_map", &self.uid_map)?;
        write_proc(c"/proc/self/gid_map", &self.gid_map)?;
        self.bind_protected()?;
        self.fork_init()?;
        self.restrict()
    }

    fn bind_protected(&self) -> io::Result<()> {
        // SAFETY: mount(2) with valid C strings, in our private mount namespace only.
        unsafe {
            // Nothing we mount may propagate back to the host's namespace.
            check(libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            for bind in &self.binds {
                check(libc::mount(
                    bind.path.as_ptr(),
                    bind.path.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                ))?;
                check(libc::mount(
                    std::ptr::null(),
                    bind.path.as_ptr(),
                    std::ptr::null(),
                    libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | bind.keep_flags,
                    std::ptr::null(),
                ))?;
            }
        }
        Ok(())
    }

    /// Forks the PID namespace's init. The parent of that fork waits and mirrors its status.
    fn fork_init(&self) -> io::Result<()> {
        // SAFETY: fork in a single-threaded child; each side only makes system calls.
        let pid = unsafe { libc::fork() };
        if pid == -1 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // The program dies with the process paddock holds, so killing that one (or its
            // process group) takes the whole namespace down.
            // SAFETY: prctl with plain integer arguments.
            check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) })?;
            return Ok(());
        }
        // This process only waits. It lets go of every descriptor, above all the pipe on which
        // the parent learns that `exec` happened (it would otherwise wait for this process,
        // the whole run long) and the program's output pipes.
        // SAFETY: close_range only closes this process's descriptors.
        if unsafe { libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) } == -1 {
            for fd in 0..4096 {
                // SAFETY: closing a descriptor that may not exist is harmless (EBADF).
                unsafe { libc::close(fd) };
            }
        }
        let mut status = 0;
        loop {
            // SAFETY: waiting for our own child with a valid status pointer.
            let ret = unsafe { libc::waitpid(pid, &mut status, 0) };
            if ret == pid {
                break;
            }
            if ret == -1 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                // SAFETY: _exit never returns and runs no destructors.
                unsafe { libc::_exit(127) };
            }
        }
        let code = if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            128 + libc::WTERMSIG(status)
        };
        // SAFETY: as above.
        unsafe { libc::_exit(code) }
    }

    fn restrict(&mut self) -> io::Result<()> {
        let proc = self.own_proc().or_else(|_| {
            self.host_proc
                .take()
                .ok_or_else(|| io::Error::other("no /proc"))
        })?;
        let ruleset = self
            .ruleset
            .take()
            .ok_or_else(|| io::Error::other("Landlock ruleset already used"))?
            .add_rule(PathBeneath::new(proc, self.proc_access))
            .map_err(io::Error::other)?;
        for limit in &self.rlimits {
            let value = libc::rlimit {
                rlim_cur: limit.value,
                rlim_max: limit.value,
            };
            // SAFETY: setrlimit with a valid pointer.
            check(unsafe { libc::setrlimit(limit.resource, &value) })?;
        }
        drop_capabilities()?;
        // restrict_self sets no_new_privs first, then enforces the ruleset on this thread.
        ruleset.restrict_self().map_err(io::Error::other)?;
        for filter in &self.filters {
            seccompiler::apply_filter(filter).map_err(io::Error::other)?;
        }
        Ok(())
    }
}

impl ChildPlan {
    /// Mounts a procfs for this PID namespace over `/proc`, so the program sees its own
    /// processes only (not paddock's or anyone else's command lines), and opens it.
    fn own_proc(&self) -> io::Result<OwnedFd> {
        // SAFETY: mount and open with valid C strings; the fd is wrapped at once.
        unsafe {
            check(libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            ))?;
            let fd = libc::open(c"/proc".as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
            if fd == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(OwnedFd::from_raw_fd(fd))
        }
    }
}

/// The program keeps no capability in its user namespace, even as root there: the bounding
/// set is emptied and `SECBIT_NOROOT` stops `exec` from granting them back to uid 0.
fn drop_capabilities() -> io::Result<()> {
    const SECBITS: libc::c_ulong = 0x1 | 0x2 | 0x4 | 0x8 | 0x20 | 0x40 | 0x80;
    // SAFETY: prctl with plain integer arguments.
    unsafe {
        check(libc::prctl(libc::PR_SET_SECUREBITS, SECBITS, 0, 0, 0))?;
        for cap in 0..64 {
            // EINVAL past the last capability this kernel knows.
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) == -1 {
                break;
            }
        }
        let header = CapHeader {
            version: 0x2008_0522,
            pid: 0,
        };
        let data = [CapData::default(); 2];
        check(libc::syscall(libc::SYS_capset, &header, data.as_ptr()) as libc::c_int)?;
    }
    Ok(())
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}
