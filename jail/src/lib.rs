//! paddock's process jail: kernel confinement of every host process paddock starts for a tool
//! (K1, K2): the programs of the `exec` capability and MCP servers. No WebAssembly here, and
//! the process-level `unsafe` of confinement (`clone`, the code between `clone` and `execve`,
//! the seccomp program's load); every `unsafe` block says why it is sound. (The runtime keeps
//! three small ones of its own: `killpg` of an unconfined run's group, the open-file limit
//! `mcp serve` raises, and setting an environment variable before any thread exists.)
//!
//! A confined program runs in its own user, mount and PID namespaces, with the protected paths
//! of its mounts bound read-only, its own `/proc`, resource limits, no capabilities,
//! `no_new_privs`, a Landlock ruleset and a seccomp filter (see `spawn`, `child`, `rules`,
//! `filter`); without the network grant it cannot open a socket at all. It is PID 1 of its
//! namespace, so when it ends or is killed every process it started dies with it.
//!
//! Confinement fails closed: when the kernel lacks a piece, `Jail::prepare` says which one and
//! names the preset key (`confine = "off"`) that accepts running unconfined.
//!
//! What it does not do: decide what is granted (the preset), or which programs and arguments
//! may run (`exec_policy`).

#![warn(clippy::undocumented_unsafe_blocks)]

mod child;
mod filter;
mod group;
mod mask;
mod probe;
mod pty;
mod retire;
mod rules;
mod spawn;

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use child::Bind;
pub use probe::{Layer, layers};
pub use pty::Pty;
/// Reading and typing into a `Pty`'s primary end.
pub mod terminal {
    pub use super::pty::{read, write};
}
pub use group::Group;
pub use retire::retire;
pub use retire::settle;
pub use rules::FsAccess;
pub use spawn::{ConfinedChild, Program};

/// The type `setrlimit` takes its resource as: glibc's own, an `int` elsewhere (musl, the
/// static binary's libc).
#[cfg(target_env = "gnu")]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(target_env = "gnu"))]
type Resource = libc::c_int;

/// `statvfs`'s flag for `relatime` (Linux's value; musl's libc crate does not name it).
const ST_RELATIME: libc::c_ulong = 0x1000;

/// Resource limits of a confined program (from the grant).
#[derive(Debug, Clone, Copy)]
pub struct ProcessLimits {
    pub cpu_secs: u64,
    pub address_space_bytes: u64,
    pub processes: u64,
    pub file_bytes: u64,
    pub open_files: u64,
}

/// What to confine a program to.
pub struct JailSpec {
    pub fs: FsAccess,
    /// Paths to bind in the program's mount namespace, in order (they may lead through held
    /// mounts, `/proc/self/fd/N/...`): protected paths and placeholders read-only, and the
    /// directories on the way to them pinned.
    pub binds: Vec<(PathBuf, BindMode)>,
    pub network: bool,
    pub limits: ProcessLimits,
}

/// How a path is bound onto itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindMode {
    /// Read-only: nothing in it can be written, created or removed.
    ReadOnly,
    /// As writable as before, but a mount point: it cannot be renamed away or removed.
    Pin,
}

/// Directories no confined program may see, whatever its grants say (paddock's data
/// directory: compiled code, its key, session logs): each is covered by an empty read-only
/// tmpfs in the program's mount namespace.
static HIDDEN: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Hides `dir` (if it exists) from every program confined from now on.
pub fn hide_from_programs(dir: &Path) {
    let Ok(real) = dir.canonicalize() else {
        return;
    };
    let mut hidden = HIDDEN.lock().unwrap_or_else(|e| e.into_inner());
    if !hidden.contains(&real) {
        hidden.push(real);
    }
}

/// A prepared confinement: everything opened, built and checked in paddock's process, so the
/// child only makes system calls. Used once, by `Jail::spawn`.
pub struct Jail {
    ruleset: OwnedFd,
    proc_access: u64,
    filter: &'static [libc::sock_filter],
    uid_map: CString,
    gid_map: CString,
    binds: Vec<Bind>,
    masks: &'static [mask::Masked],
    hidden: Vec<CString>,
    rlimits: Vec<(Resource, libc::rlim_t)>,
    /// `Jail::unconfined`: none of the above is applied.
    unconfined: bool,
}

impl Jail {
    /// `key` is the preset key of the grant, for the error that says how to accept the risk.
    pub fn prepare(spec: JailSpec, key: &str) -> Result<Jail, String> {
        let unavailable = |what: String| {
            format!(
                "cannot confine the program: {what}. paddock refuses to run it unconfined; to \
                 accept the risk, set `confine = \"off\"` in `{key}` of the preset"
            )
        };
        namespaces_available().map_err(|e| unavailable(e.clone()))?;
        let ruleset = rules::build(&spec.fs, spec.network).map_err(unavailable)?;
        let filter = filter::program(spec.network);
        let binds = spec
            .binds
            .iter()
            .map(|(path, mode)| bind(path, *mode))
            .collect::<Result<Vec<_>, _>>()
            .map_err(unavailable)?;
        let hidden = HIDDEN
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|dir| dir.is_dir())
            .map(|dir| CString::new(dir.as_os_str().as_bytes()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| unavailable("the data directory's path has a NUL byte".into()))?;
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let map = |id: u32| CString::new(format!("{id} {id} 1")).expect("digits have no NUL");
        let limits = spec.limits;
        Ok(Jail {
            ruleset,
            proc_access: rules::proc_access(),
            filter,
            uid_map: map(uid),
            gid_map: map(gid),
            binds,
            masks: mask::for_uid(uid),
            hidden,
            rlimits: vec![
                (libc::RLIMIT_CPU, limits.cpu_secs),
                (libc::RLIMIT_AS, limits.address_space_bytes),
                (libc::RLIMIT_NPROC, limits.processes),
                (libc::RLIMIT_FSIZE, limits.file_bytes),
                (libc::RLIMIT_NOFILE, limits.open_files),
                (libc::RLIMIT_CORE, 0),
            ],
            unconfined: false,
        })
    }

    /// No confinement at all, for a preset's explicit `confine = "off"` (where the kernel
    /// offers no namespaces, say inside a container): the program runs as the user, in its
    /// own process group (or on its terminal), with its streams, and dies with paddock. What
    /// it starts is not killed with it, except through its process group.
    pub fn unconfined() -> Result<Jail, String> {
        let null = std::fs::File::open("/dev/null").map_err(|e| format!("/dev/null: {e}"))?;
        Ok(Jail {
            ruleset: OwnedFd::from(null),
            proc_access: 0,
            filter: &[],
            uid_map: CString::default(),
            gid_map: CString::default(),
            binds: Vec::new(),
            masks: &[],
            hidden: Vec::new(),
            rlimits: vec![(libc::RLIMIT_CORE, 0)],
            unconfined: true,
        })
    }
}

/// A bind of `path` onto itself, keeping the flags its mount has (locked in a user namespace).
///
/// `path` may lead through a held mount (`/proc/self/fd/N/.git`); the child cannot bind through
/// such a descriptor (it belongs to paddock's mount namespace), so the bind is made at the
/// kernel's current name for the path, and the child checks, after binding, that this name
/// still leads to the device and inode seen here. A swap in between fails the run.
fn bind(path: &Path, mode: BindMode) -> Result<Bind, String> {
    // A protected path that is itself a symlink is bound where it leads.
    let real = path
        .canonicalize()
        .map_err(|e| format!("cannot resolve protected path {}: {e}", path.display()))?;
    let target = std::fs::metadata(&real)
        .map_err(|e| format!("cannot inspect protected path {}: {e}", real.display()))?;
    let c_path = CString::new(real.as_os_str().as_bytes())
        .map_err(|_| format!("protected path {} has a NUL byte", real.display()))?;
    // SAFETY: `statvfs` is plain data; all zeroes is a valid value.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid NUL-terminated path and an out pointer to `stat`, alive across the call.
    if unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) } == -1 {
        return Err(format!(
            "cannot inspect protected path {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    let mut keep = 0;
    for (st, ms) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (ST_RELATIME, libc::MS_RELATIME),
    ] {
        if stat.f_flag & st != 0 {
            keep |= ms;
        }
    }
    Ok(Bind {
        path: c_path,
        read_only: mode == BindMode::ReadOnly,
        keep_flags: keep,
        identity: (target.dev(), target.ino()),
    })
}

/// Whether this kernel lets paddock create the namespaces a jail needs, probed once per
/// process in a throw-away child.
fn namespaces_available() -> Result<(), &'static String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE.get_or_init(probe_namespaces).as_ref().map(|_| ())
}

fn probe_namespaces() -> Result<(), String> {
    let flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID;
    // SAFETY: the child only calls unshare and _exit, both async-signal-safe.
    let pid = unsafe { libc::fork() };
    if pid == -1 {
        return Err(format!("fork: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: as above.
        unsafe {
            let code = if libc::unshare(flags) == 0 {
                0
            } else {
                *libc::__errno_location()
            };
            libc::_exit(code);
        }
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    match libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)) {
        Some(0) => Ok(()),
        Some(errno) => Err(format!(
            "the kernel refused user namespaces ({}): a container's seccomp profile (docker's \
             default, Kubernetes \"restricted\") forbids them, or check `sysctl \
             kernel.unprivileged_userns_clone` and `user.max_user_namespaces`",
            std::io::Error::from_raw_os_error(errno)
        )),
        None => Err("the namespace probe died".into()),
    }
}

#[cfg(all(test, target_env = "gnu"))]
mod portable_tests {
    /// The value musl's bindings lack is glibc's.
    #[test]
    fn relatime_is_the_kernels_flag() {
        assert_eq!(super::ST_RELATIME, libc::ST_RELATIME);
    }
}
