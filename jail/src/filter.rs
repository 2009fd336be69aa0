//! The seccomp filter of a confined program (K1): system calls that would reach around the
//! other layers are refused with `EPERM` (or `ENOSYS` where libc must fall back).
//!
//! Refused always: changing mounts or namespaces (`mount`, `unshare`, `setns`, `clone` with a
//! new-namespace flag, `clone3`, whose flags live in memory a filter cannot read), inspecting
//! other processes (`ptrace`, `process_vm_*`), kernel surfaces no build tool needs (`bpf`,
//! `io_uring_*`, `keyctl`, `perf_event_open`, `userfaultfd`, modules, `kexec`), handles by
//! inode (`open_by_handle_at`), typing into a terminal (`ioctl` `TIOCSTI`, `TIOCLINUX`), and
//! the x32 system call numbers. Without the network grant, `socket` is refused for every
//! family: the program may still use pipes and `socketpair`, but not connect to a host socket
//! by path (ssh-agent, D-Bus) or by address. With it, only `AF_INET` and `AF_INET6`: the
//! network grant is for hosts, not for the user's local services (an ssh-agent or a Docker
//! socket found by path would act with the user's keys or as root), and Landlock cannot
//! restrict connecting to a socket by path. `socketpair` stays allowed.
//!
//! The filter is one short classic-BPF program assembled here rather than by a filter
//! compiler: the kernel emulates a new filter for every system call number when it is
//! installed (its action cache), once per spawned program, and seccompiler's per-rule chains
//! and one-action-per-filter (which needed a second filter for `clone3`) tripled what exec's
//! confinement cost (`cargo xtask bench exec`).

use std::collections::HashMap;
use std::sync::OnceLock;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_ALLOW: u32 = 0x7fff_0000;
/// x32 system calls are numbered from here; they would bypass checks on the x86_64 numbers.
const X32_BIT: u32 = 0x4000_0000;

/// Offsets in `struct seccomp_data`: nr, arch, then six 64-bit arguments from byte 16. Only
/// the low 32 bits of an argument are compared, which is what the kernel itself uses of
/// `ioctl`'s command, `clone`'s namespace flags and `socket`'s family.
const NR: u32 = 0;
const ARCH: u32 = 4;
fn arg_low(i: u32) -> u32 {
    16 + 8 * i
}

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

const NAMESPACE_FLAGS: libc::c_int = libc::CLONE_NEWUSER
    | libc::CLONE_NEWNS
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWCGROUP;

/// The filter for a program with or without the network, assembled once per process.
pub(super) fn program(network: bool) -> &'static [libc::sock_filter] {
    static BUILT: OnceLock<[Vec<libc::sock_filter>; 2]> = OnceLock::new();
    &BUILT.get_or_init(|| [build(false), build(true)])[network as usize]
}

/// Where a jump goes.
#[derive(Clone, Copy)]
enum To {
    Next,
    Label(&'static str),
}

/// A tiny assembler: jumps name labels, resolved into forward offsets at the end.
#[derive(Default)]
struct Asm {
    code: Vec<(u16, u32, To, To)>,
    labels: HashMap<&'static str, usize>,
}

impl Asm {
    fn load(&mut self, offset: u32) {
        self.code.push((
            (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
            offset,
            To::Next,
            To::Next,
        ));
    }
    fn jump(&mut self, op: u32, k: u32, yes: To, no: To) {
        self.code
            .push(((libc::BPF_JMP | op | libc::BPF_K) as u16, k, yes, no));
    }
    fn ret(&mut self, action: u32) {
        self.code.push((
            (libc::BPF_RET | libc::BPF_K) as u16,
            action,
            To::Next,
            To::Next,
        ));
    }
    fn label(&mut self, name: &'static str) {
        self.labels.insert(name, self.code.len());
    }
    fn finish(self) -> Vec<libc::sock_filter> {
        let offset = |at: usize, to: To| -> u8 {
            let target = match to {
                To::Next => at + 1,
                To::Label(name) => self.labels[name],
            };
            // Classic BPF jumps forward only, by at most 255 instructions.
            u8::try_from(target - at - 1).expect("a short forward jump")
        };
        self.code
            .iter()
            .enumerate()
            .map(|(at, &(code, k, yes, no))| libc::sock_filter {
                code,
                jt: offset(at, yes),
                jf: offset(at, no),
                k,
            })
            .collect()
    }
}

fn build(network: bool) -> Vec<libc::sock_filter> {
    use To::{Label, Next};
    let mut a = Asm::default();
    a.load(ARCH);
    a.jump(libc::BPF_JEQ, AUDIT_ARCH, Label("native"), Next);
    a.ret(RET_KILL_PROCESS);
    a.label("native");
    a.load(NR);
    if cfg!(target_arch = "x86_64") {
        a.jump(libc::BPF_JGE, X32_BIT, Label("eperm"), Next);
    }
    a.jump(
        libc::BPF_JEQ,
        libc::SYS_clone3 as u32,
        Label("enosys"),
        Next,
    );
    a.jump(libc::BPF_JEQ, libc::SYS_clone as u32, Label("clone"), Next);
    a.jump(
        libc::BPF_JEQ,
        libc::SYS_socket as u32,
        Label("socket"),
        Next,
    );
    a.jump(libc::BPF_JEQ, libc::SYS_ioctl as u32, Label("ioctl"), Next);
    for &call in ALWAYS_REFUSED {
        a.jump(libc::BPF_JEQ, call as u32, Label("eperm"), Next);
    }
    a.ret(RET_ALLOW);

    a.label("clone");
    a.load(arg_low(0));
    a.jump(
        libc::BPF_JSET,
        NAMESPACE_FLAGS as u32,
        Label("eperm"),
        Label("allow"),
    );

    a.label("socket");
    if network {
        a.load(arg_low(0));
        for family in [libc::AF_INET, libc::AF_INET6] {
            a.jump(libc::BPF_JEQ, family as u32, Label("allow"), Next);
        }
    }
    a.ret(RET_ERRNO | libc::EPERM as u32);

    a.label("ioctl");
    a.load(arg_low(1));
    a.jump(libc::BPF_JEQ, libc::TIOCSTI as u32, Label("eperm"), Next);
    a.jump(
        libc::BPF_JEQ,
        libc::TIOCLINUX as u32,
        Label("eperm"),
        Label("allow"),
    );

    a.label("allow");
    a.ret(RET_ALLOW);
    a.label("eperm");
    a.ret(RET_ERRNO | libc::EPERM as u32);
    a.label("enosys");
    a.ret(RET_ERRNO | libc::ENOSYS as u32);
    a.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the filter on one system call, as the kernel would: (nr, args) → action.
    fn run(filter: &[libc::sock_filter], nr: i64, args: [u64; 6]) -> u32 {
        let mut data = Vec::new();
        data.extend_from_slice(&(nr as u32).to_le_bytes());
        data.extend_from_slice(&AUDIT_ARCH.to_le_bytes());
        data.extend_from_slice(&0u64.to_le_bytes());
        for arg in args {
            data.extend_from_slice(&arg.to_le_bytes());
        }
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let f = filter[pc];
            let class = f.code as u32 & 0x07;
            match class {
                c if c == libc::BPF_LD => {
                    let at = f.k as usize;
                    acc = u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
                    pc += 1;
                }
                c if c == libc::BPF_RET => return f.k,
                _ => {
                    let op = f.code as u32 & 0xf0;
                    let taken = match op {
                        o if o == libc::BPF_JEQ => acc == f.k,
                        o if o == libc::BPF_JGE => acc >= f.k,
                        o if o == libc::BPF_JSET => acc & f.k != 0,
                        _ => panic!("unexpected op {op:#x}"),
                    };
                    pc += 1 + if taken { f.jt } else { f.jf } as usize;
                }
            }
        }
    }

    const EPERM: u32 = RET_ERRNO | libc::EPERM as u32;

    #[test]
    // ioctl numbers are `c_ulong`, u64 here but not on every target.
    #[allow(clippy::unnecessary_cast)]
    fn the_filter_refuses_what_it_says_and_allows_the_rest() {
        let closed = build(false);
        let open = build(true);
        let none = [0; 6];
        assert_eq!(run(&closed, libc::SYS_read, none), RET_ALLOW);
        assert_eq!(run(&closed, libc::SYS_mount, none), EPERM);
        assert_eq!(run(&closed, libc::SYS_unshare, none), EPERM);
        assert_eq!(
            run(&closed, libc::SYS_clone3, none),
            RET_ERRNO | libc::ENOSYS as u32
        );
        assert_eq!(
            run(
                &closed,
                libc::SYS_clone,
                [libc::SIGCHLD as u64, 0, 0, 0, 0, 0]
            ),
            RET_ALLOW
        );
        let newuser = (libc::CLONE_NEWUSER | libc::SIGCHLD) as u64;
        assert_eq!(
            run(&closed, libc::SYS_clone, [newuser, 0, 0, 0, 0, 0]),
            EPERM
        );
        assert_eq!(
            run(
                &closed,
                libc::SYS_socket,
                [libc::AF_UNIX as u64, 1, 0, 0, 0, 0]
            ),
            EPERM
        );
        assert_eq!(
            run(
                &open,
                libc::SYS_socket,
                [libc::AF_INET as u64, 1, 0, 0, 0, 0]
            ),
            RET_ALLOW
        );
        assert_eq!(
            run(
                &open,
                libc::SYS_socket,
                [libc::AF_NETLINK as u64, 3, 0, 0, 0, 0]
            ),
            EPERM
        );
        // The network grant is for hosts: no socket to reach a local service by path.
        assert_eq!(
            run(
                &open,
                libc::SYS_socket,
                [libc::AF_UNIX as u64, 1, 0, 0, 0, 0]
            ),
            EPERM
        );
        // The kernel reads ioctl's command as 32 bits: high bits set must not slip through.
        let sti = libc::TIOCSTI as u64 | (1 << 32);
        assert_eq!(run(&closed, libc::SYS_ioctl, [0, sti, 0, 0, 0, 0]), EPERM);
        assert_eq!(
            run(
                &closed,
                libc::SYS_ioctl,
                [0, libc::FIONREAD as u64, 0, 0, 0, 0]
            ),
            RET_ALLOW
        );
        assert_eq!(run(&closed, 0x4000_0000 | libc::SYS_read, none), EPERM);
    }
}
