//! The Landlock ruleset of a confined program (K1): which files it may read, write or run.
//!
//! Allowed: the call's mounts (read-write where the call has them read-write, else read-only),
//! read-only system locations a program needs to start, the program's own directory, the
//! grant's extra `read`/`write` paths, a private temporary directory, and a few device nodes.
//! Everything else (the home directory, paddock's data directory, other projects) is denied
//! by the kernel, whatever path the program uses. Signals to processes outside the sandbox and
//! abstract UNIX sockets are scoped too where the kernel supports it (ABI 6).
//!
//! Rules are bound to the directories' inodes when the ruleset is built, so a path swapped for
//! a symlink afterwards gains nothing.

use std::path::{Path, PathBuf};

use std::os::fd::OwnedFd;
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope,
};

/// Read-only locations every program may need to start (dynamic loader, libraries, locale,
/// certificates, `/etc/passwd` for its own name). Missing ones are skipped.
const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/bin",
    "/sbin",
    "/etc",
    "/opt",
    "/sys/devices/system/cpu",
    "/sys/fs/cgroup",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Device nodes a program may write: output it throws away.
const DEVICE_WRITE: &[&str] = &["/dev/null"];

/// The oldest ABI paddock accepts: file reads, writes, renames across directories (2) and
/// truncation (3) must all be under its control, or the sandbox would have holes.
pub(super) const REQUIRED: ABI = ABI::V3;
/// The newest ABI whose file rights paddock asks for when the kernel has them.
const WANTED: ABI = ABI::V5;

/// Paths a ruleset grants, by kind.
#[derive(Debug, Default)]
pub struct FsAccess {
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
}

/// What a program may do under `/proc` (read), granted by the child on the procfs it sees
/// (the raw access bits of the kernel ABI).
pub(super) fn proc_access() -> u64 {
    AccessFs::from_read(WANTED).bits()
}

/// Builds the ruleset in the parent (opening every path now); the child only enforces it.
/// Fails when the kernel lacks Landlock or the required ABI: confinement fails closed.
/// Without `network`, TCP bind and connect are refused too where the kernel can (ABI 4), on
/// top of the seccomp filter that refuses every socket.
pub(super) fn build(access: &FsAccess, network: bool) -> Result<OwnedFd, String> {
    let read = AccessFs::from_read(WANTED);
    let all = AccessFs::from_all(WANTED);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(REQUIRED))
        .map_err(|e| format!("Landlock ABI {} or newer: {e}", REQUIRED as i32))?
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .map_err(|e| e.to_string())?
        .scope(Scope::Signal | Scope::AbstractUnixSocket)
        .map_err(|e| e.to_string())?;
    if !network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI::V4))
            .map_err(|e| e.to_string())?;
    }
    let mut ruleset = ruleset.create().map_err(|e| format!("Landlock: {e}"))?;
    for (fd, dir, writable) in system_paths() {
        let access = if *writable { all } else { read };
        ruleset = add_fd(ruleset, fd, *dir, access).map_err(|e| format!("Landlock rule: {e}"))?;
    }
    for path in &access.read {
        ruleset = add(ruleset, path, read)?;
    }
    for path in &access.write {
        ruleset = add(ruleset, path, all)?;
    }
    Option::<OwnedFd>::from(ruleset)
        .ok_or_else(|| "Landlock is not supported by this kernel".into())
}

/// The system locations, opened once per process: (handle, is a directory, writable).
/// Missing ones are skipped (a system without `/lib32`).
fn system_paths() -> &'static [(PathFd, bool, bool)] {
    static PATHS: OnceLock<Vec<(PathFd, bool, bool)>> = OnceLock::new();
    PATHS.get_or_init(|| {
        let read = SYSTEM_READ.iter().map(|p| (*p, false));
        let write = DEVICE_WRITE.iter().map(|p| (*p, true));
        read.chain(write)
            .filter_map(|(path, writable)| {
                let fd = PathFd::new(path).ok()?;
                Some((fd, Path::new(path).is_dir(), writable))
            })
            .collect()
    })
}

fn add_fd(
    ruleset: RulesetCreated,
    fd: &PathFd,
    dir: bool,
    access: landlock::BitFlags<AccessFs>,
) -> Result<RulesetCreated, landlock::RulesetError> {
    // A rule on a file (not a directory) may only carry file rights.
    let access = if dir {
        access
    } else {
        access & AccessFs::from_file(WANTED)
    };
    ruleset.add_rule(PathBeneath::new(fd, access))
}

/// Adds one rule; a path that does not exist is skipped.
fn add(
    ruleset: RulesetCreated,
    path: &Path,
    access: landlock::BitFlags<AccessFs>,
) -> Result<RulesetCreated, String> {
    let fd = match PathFd::new(path) {
        Ok(fd) => fd,
        Err(_) if !path.exists() => return Ok(ruleset),
        Err(e) => return Err(format!("cannot open {}: {e}", path.display())),
    };
    // A rule on a file (not a directory) may only carry file rights.
    let access = if path.is_dir() {
        access
    } else {
        access & AccessFs::from_file(WANTED)
    };
    ruleset
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|e| format!("Landlock rule for {}: {e}", path.display()))
}
