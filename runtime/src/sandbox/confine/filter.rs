//! The seccomp filter of a confined program (K1): system calls that would reach around the
//! other layers are refused with `EPERM` (or `ENOSYS` where libc must fall back).
//!
//! Refused always: changing mounts or namespaces (`mount`, `unshare`, `setns`, new-namespace
//! `clone` flags, `clone3` whose flags cannot be inspected), inspecting other processes
//! (`ptrace`, `process_vm_*`), kernel surfaces no build tool needs (`bpf`, `io_uring_*`,
//! `keyctl`, `perf_event_open`, `userfaultfd`, modules, `kexec`), handles by inode
//! (`open_by_handle_at`), and typing into a terminal (`ioctl` `TIOCSTI`, `TIOCLINUX`).
//! Without the network grant, `socket` is refused for every family: the program may still use
//! pipes and `socketpair`, but not connect to a host socket by path (ssh-agent, D-Bus) or by
//! address. With it, only `AF_UNIX`, `AF_INET` and `AF_INET6` sockets may be opened.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

#[cfg(target_arch = "x86_64")]
const ARCH: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
const ARCH: TargetArch = TargetArch::aarch64;

const ALWAYS_REFUSED: &[libc::c_long] = &[
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_bpf,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_acct,
];

const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Qword, op, value).map_err(|e| e.to_string())
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(|e| e.to_string())
}

/// Builds the filter for one program. An error here is a bug or an unknown architecture,
/// reported as the confinement being unavailable.
pub(super) fn build(network: bool) -> Result<BpfProgram, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for &call in ALWAYS_REFUSED {
        rules.insert(call, Vec::new());
    }
    // One rule per flag: the rules of a syscall are alternatives.
    let clone_rules = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            rule(vec![cond(
                0,
                SeccompCmpOp::MaskedEq(flag as u64),
                flag as u64,
            )?])
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_clone, clone_rules);
    rules.insert(
        libc::SYS_ioctl,
        vec![
            rule(vec![cond(1, SeccompCmpOp::Eq, libc::TIOCSTI)?])?,
            rule(vec![cond(1, SeccompCmpOp::Eq, libc::TIOCLINUX)?])?,
        ],
    );
    if network {
        let families = [libc::AF_UNIX, libc::AF_INET, libc::AF_INET6];
        let others = families
            .iter()
            .map(|&f| cond(0, SeccompCmpOp::Ne, f as u64))
            .collect::<Result<Vec<_>, _>>()?;
        rules.insert(libc::SYS_socket, vec![rule(others)?]);
    } else {
        rules.insert(libc::SYS_socket, Vec::new());
    }
    let refuse = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        ARCH,
    )
    .map_err(|e| e.to_string())?;
    refuse
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())
}

/// The second filter. `clone3` passes its flags in memory a filter cannot read: it answers
/// `ENOSYS` so that libc falls back to `clone`, whose flags `build`'s rules check. (seccompiler
/// has one match action per filter, so this is a filter of its own.)
pub(super) fn build_clone3() -> Result<BpfProgram, String> {
    let filter = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        ARCH,
    )
    .map_err(|e| e.to_string())?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())
}
