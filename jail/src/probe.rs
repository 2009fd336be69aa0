//! What this machine lets the jail enforce, layer by layer, for `paddock doctor`: inside a
//! container that forbids user namespaces (docker's default seccomp profile, Kubernetes
//! "restricted" pods, gVisor) or on an old kernel, a layer can be missing, and then every
//! confined run fails closed. Each probe does what the jail does, without confining anything.

/// One layer of the process jail and whether it is in force here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    pub name: &'static str,
    /// What it stops.
    pub purpose: &'static str,
    /// `Ok(detail)` when in force, `Err(why)` when the kernel or the container refuses it.
    pub state: Result<String, String>,
}

/// Every layer, probed.
pub fn layers() -> Vec<Layer> {
    vec![
        Layer {
            name: "namespaces",
            purpose: "a program sees only its mounts (mount namespace), its own processes \
                      (PID namespace, with its own /proc) and runs as an unprivileged user \
                      (user namespace); it dies with everything it started",
            state: super::namespaces_available()
                .map(|()| "user, mount and PID namespaces".to_string())
                .map_err(Clone::clone),
        },
        Layer {
            name: "landlock",
            purpose: "file access limited to the granted paths by the kernel, whatever the \
                      program does with names and links",
            state: super::rules::build(&super::FsAccess::default(), false).map(|_| {
                format!(
                    "ABI {} (paddock needs {} or newer)",
                    landlock_abi(),
                    super::rules::REQUIRED as i32
                )
            }),
        },
        Layer {
            name: "seccomp",
            purpose: "no sockets without the network grant, no ptrace, no kernel keyrings, \
                      no new namespaces from inside",
            state: seccomp(),
        },
        Layer {
            name: "rlimits",
            purpose: "CPU seconds, memory, processes, file size and open files per program",
            state: Ok("always".into()),
        },
    ]
}

/// The kernel's Landlock ABI version (0 when it has none).
fn landlock_abi() -> i64 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with this flag the kernel reads no attribute and returns the ABI version.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    abi.max(0)
}

/// Whether a seccomp filter can be loaded: the kernel has it (mode query works) and nothing
/// here forbids `no_new_privs`. A process already under a filter (a container's profile) can
/// still add its own.
fn seccomp() -> Result<String, String> {
    // SAFETY: PR_GET_SECCOMP only reads this thread's mode.
    let mode = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    match mode {
        -1 => Err(format!(
            "the kernel has no seccomp ({})",
            std::io::Error::last_os_error()
        )),
        0 => Ok("filters load".into()),
        _ => Ok("filters load (paddock already runs under a filter, e.g. a container's)".into()),
    }
}
