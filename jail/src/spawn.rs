//! Starting a confined program and waiting for it (K1), without `fork`.
//!
//! `clone(CLONE_VM | CLONE_VFORK | CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_PIDFD)`
//! starts the program's process directly as PID 1 of a new PID namespace, sharing paddock's
//! memory (as `posix_spawn` does) until it calls `execve`: copying paddock's page tables for a
//! `fork` would cost more than all the confinement together. The child's steps are in `child`.
//!
//! The process is watched through its pidfd: waiting is an async read on it, killing is
//! `pidfd_send_signal`, so a recycled pid can never be hit. Killing it (PID 1) makes the kernel
//! kill every process of its namespace.
//!
//! Every clone is made by one thread that lives as long as paddock (`Spawner`): the child's
//! `PR_SET_PDEATHSIG` fires when the thread that cloned it ends, so cloning from a pool thread
//! that retires would kill programs early, while this way they die exactly when paddock does,
//! `SIGKILL` included.
//!
//! Tearing a mount namespace down waits for an RCU grace period. When the program's exit
//! dropped the last reference, that wait lay between its end and the call's result; so
//! paddock takes a reference of its own (`PIDFD_GET_MNT_NAMESPACE`) as soon as the program
//! runs, and a background thread drops it after the call (`Retired`).

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::Ordering;

use tokio::io::unix::AsyncFd;
use tokio::net::unix::pipe;

use super::Jail;
use super::child::{ChildPlan, child_main, failure_message};

/// Stack of the cloned process until it calls execve.
const STACK_BYTES: usize = 256 << 10;

/// What to run.
pub struct Program<'a> {
    pub path: &'a Path,
    pub args: &'a [String],
    pub env: Vec<(String, std::ffi::OsString)>,
    pub cwd: &'a Path,
    pub stdin: bool,
    /// The secondary end of a pseudo-terminal paddock opened: the program's three standard
    /// streams and its controlling terminal (its session's), instead of pipes.
    pub terminal: Option<std::os::fd::BorrowedFd<'a>>,
}

/// A running confined program.
pub struct ConfinedChild {
    pidfd: AsyncFd<OwnedFd>,
    /// The program's process group (or session), signalled by its id until it is reaped.
    group: std::sync::Arc<super::group::Group>,
    /// Started by `Jail::unconfined`: killing it kills its process group too.
    unconfined: bool,
    /// The program's mount namespace, held so its teardown happens off the call's path.
    mount_ns: Option<OwnedFd>,
    pub stdin: Option<pipe::Sender>,
    pub stdout: Option<pipe::Receiver>,
    pub stderr: Option<pipe::Receiver>,
    reaped: bool,
}

fn cstring(bytes: &[u8], what: &str) -> Result<CString, String> {
    CString::new(bytes).map_err(|_| format!("{what} contains a NUL byte"))
}

/// A pipe whose both ends are above the standard descriptors and close on exec.
fn pipe_pair() -> Result<(OwnedFd, OwnedFd), String> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
        return Err(format!("pipe: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: both descriptors are fresh and ours.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((above_stdio(read)?, above_stdio(write)?))
}

/// A close-on-exec copy of `fd`.
fn dup(fd: &OwnedFd) -> Result<OwnedFd, String> {
    fd.try_clone().map_err(|e| format!("dup: {e}"))
}

/// When paddock runs with a standard stream closed, a new descriptor can be 0, 1 or 2; the
/// child's `dup2` onto those numbers would then clobber it. Move it up.
fn above_stdio(fd: OwnedFd) -> Result<OwnedFd, String> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: F_DUPFD_CLOEXEC returns a new descriptor ≥ 3 or -1.
    let moved = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if moved == -1 {
        return Err(format!("fcntl: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: fresh descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(moved) })
}

impl Jail {
    /// Starts `program` inside this jail.
    pub fn spawn(self, program: Program<'_>) -> Result<ConfinedChild, String> {
        let command = Command::of(&program)?;
        let (given, kept) = streams(&program)?;
        let (plan, ruleset) = self.plan(&command, &given);
        let (pidfd, pid) = clone_on_spawner(&plan)?;
        let mount_ns = if plan.unconfined {
            None
        } else {
            mount_namespace(&pidfd)
        };
        let failure = plan.failure.load(Ordering::SeqCst);
        // The child has exec'd (or exited); what it was given can go.
        drop((given, ruleset));
        let mut child = ConfinedChild::started(pidfd, pid, plan.unconfined, mount_ns)?;
        if let Some(message) = failure_message(failure) {
            child.reap_blocking();
            return Err(message);
        }
        child.connect(kept)?;
        Ok(child)
    }

    /// What the child needs, pointing into `command` and `given`, which must outlive the
    /// clone; and the Landlock ruleset, whose descriptor the plan names, to keep as long.
    fn plan(self, command: &Command, given: &GivenStreams) -> (ChildPlan, OwnedFd) {
        let plan = ChildPlan {
            program: command.path.clone(),
            argv: nul_terminated(&command.args),
            envp: nul_terminated(&command.env),
            cwd: command.cwd.clone(),
            stdin: given.stdin.as_raw_fd(),
            stdout: given.stdout.as_raw_fd(),
            stderr: given.stderr.as_raw_fd(),
            terminal: given.terminal.is_some(),
            unconfined: self.unconfined,
            uid_map: self.uid_map,
            gid_map: self.gid_map,
            binds: self.binds,
            masks: self.masks,
            hidden: self.hidden,
            paddock: paddock_pidfd(),
            rlimits: self.rlimits,
            ruleset: self.ruleset.as_raw_fd(),
            proc_access: self.proc_access,
            filter: libc::sock_fprog {
                len: self.filter.len() as u16,
                filter: self.filter.as_ptr() as *mut libc::sock_filter,
            },
            failure: std::sync::atomic::AtomicU64::new(0),
        };
        (plan, self.ruleset)
    }
}

/// The program's path, arguments (the path first), environment and working directory as the
/// C strings `execve` takes.
struct Command {
    path: CString,
    args: Vec<CString>,
    env: Vec<CString>,
    cwd: CString,
}

impl Command {
    fn of(program: &Program<'_>) -> Result<Command, String> {
        let path = cstring(program.path.as_os_str().as_bytes(), "the program path")?;
        let mut args = vec![path.clone()];
        for arg in program.args {
            args.push(cstring(arg.as_bytes(), "an argument")?);
        }
        let env = program
            .env
            .iter()
            .map(|(k, v)| {
                let mut pair = k.as_bytes().to_vec();
                pair.push(b'=');
                pair.extend_from_slice(v.as_bytes());
                cstring(&pair, "an environment variable")
            })
            .collect::<Result<Vec<_>, _>>()?;
        let cwd = cstring(program.cwd.as_os_str().as_bytes(), "the working directory")?;
        Ok(Command {
            path,
            args,
            env,
            cwd,
        })
    }
}

/// The descriptors the child makes its standard streams, closed once it has exec'd.
struct GivenStreams {
    /// paddock's copy of the terminal the program runs on, if it does.
    terminal: Option<OwnedFd>,
    stdin: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
}

/// The other ends of the program's pipes, which paddock keeps: none on a terminal, and no
/// standard input to write when the program reads `/dev/null`.
struct KeptStreams {
    stdin: Option<OwnedFd>,
    stdout: Option<OwnedFd>,
    stderr: Option<OwnedFd>,
}

/// The program's standard streams: the terminal's secondary end for all three, or pipes (and
/// `/dev/null` for a program given no input).
fn streams(program: &Program<'_>) -> Result<(GivenStreams, KeptStreams), String> {
    let terminal = match program.terminal {
        Some(fd) => Some(above_stdio(
            fd.try_clone_to_owned()
                .map_err(|e| format!("terminal: {e}"))?,
        )?),
        None => None,
    };
    let (stdin_read, stdin_write) = if let Some(terminal) = &terminal {
        (above_stdio(dup(terminal)?)?, None)
    } else if program.stdin {
        let (r, w) = pipe_pair()?;
        (r, Some(w))
    } else {
        let null = std::fs::File::open("/dev/null").map_err(|e| format!("/dev/null: {e}"))?;
        (above_stdio(OwnedFd::from(null))?, None)
    };
    let (stdout_read, stdout_write) = match &terminal {
        Some(terminal) => (None, above_stdio(dup(terminal)?)?),
        None => pipe_pair().map(|(r, w)| (Some(r), w))?,
    };
    let (stderr_read, stderr_write) = match &terminal {
        Some(terminal) => (None, above_stdio(dup(terminal)?)?),
        None => pipe_pair().map(|(r, w)| (Some(r), w))?,
    };
    let given = GivenStreams {
        terminal,
        stdin: stdin_read,
        stdout: stdout_write,
        stderr: stderr_write,
    };
    let kept = KeptStreams {
        stdin: stdin_write,
        stdout: stdout_read,
        stderr: stderr_read,
    };
    Ok((given, kept))
}

fn nul_terminated(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// A pidfd of paddock's own process, opened once (-1 where the kernel has none): the child
/// polls it to learn whether paddock died before its death signal was set.
fn paddock_pidfd() -> RawFd {
    static PIDFD: std::sync::OnceLock<RawFd> = std::sync::OnceLock::new();
    *PIDFD.get_or_init(|| {
        // SAFETY: pidfd_open on our own pid; the descriptor is kept for the process's life.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) } as RawFd;
        if fd >= 0 {
            // SAFETY: fcntl on the descriptor just opened.
            unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        }
        fd.max(-1)
    })
}

/// A clone for the spawner thread to make: the plan (kept alive by the caller, who waits for
/// the answer) and where to answer.
struct CloneRequest {
    plan: *const ChildPlan,
    answer: std::sync::mpsc::SyncSender<Result<(OwnedFd, libc::pid_t), String>>,
}

// SAFETY: the plan's pointers are only read by the spawner thread (and the child it clones)
// while the requesting thread blocks on the answer, keeping the plan alive and unmoved.
unsafe impl Send for CloneRequest {}

/// Clones the child on the spawner thread; returns its pidfd and pid once it has exec'd or
/// exited.
fn clone_on_spawner(plan: &ChildPlan) -> Result<(OwnedFd, libc::pid_t), String> {
    static SPAWNER: std::sync::OnceLock<
        Option<std::sync::Mutex<std::sync::mpsc::Sender<CloneRequest>>>,
    > = std::sync::OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<CloneRequest>();
        std::thread::Builder::new()
            .name("paddock-spawner".into())
            .spawn(move || {
                for request in rx {
                    // SAFETY: see `CloneRequest`.
                    let answer = clone_into(unsafe { &*request.plan });
                    let _ = request.answer.send(answer);
                }
            })
            .ok()
            .map(|_| std::sync::Mutex::new(tx))
    });
    let spawner = spawner
        .as_ref()
        .ok_or("cannot start the thread that starts confined programs")?;
    let (answer, answered) = std::sync::mpsc::sync_channel(1);
    spawner
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send(CloneRequest {
            plan: plan as *const ChildPlan,
            answer,
        })
        .map_err(|_| "the thread that starts confined programs is gone")?;
    answered
        .recv()
        .map_err(|_| "the thread that starts confined programs is gone".to_string())?
}

/// Clones the child; returns its pidfd and pid once it has exec'd or exited.
fn clone_into(plan: &ChildPlan) -> Result<(OwnedFd, libc::pid_t), String> {
    // SAFETY: a private anonymous mapping, unmapped below; the child runs on it only until
    // execve (after which it has its own memory) or _exit.
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            STACK_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if stack == libc::MAP_FAILED {
        return Err(format!("stack: {}", std::io::Error::last_os_error()));
    }
    let namespaces = if plan.unconfined {
        0
    } else {
        libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID
    };
    let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | namespaces | libc::SIGCHLD;
    let mut pidfd: RawFd = -1;
    // SAFETY: the stack grows down from its top; `plan` outlives the child's use of it because
    // CLONE_VFORK suspends this thread until the child calls execve or exits.
    let pid = unsafe {
        let top = (stack as *mut u8).add(STACK_BYTES);
        libc::clone(
            child_main,
            top.cast(),
            flags,
            plan as *const ChildPlan as *mut libc::c_void,
            &mut pidfd as *mut RawFd,
        )
    };
    let error = std::io::Error::last_os_error();
    // SAFETY: the child no longer uses the stack (see above).
    unsafe { libc::munmap(stack, STACK_BYTES) };
    if pid == -1 {
        return Err(format!("clone into new namespaces: {error}"));
    }
    // SAFETY: CLONE_PIDFD stored a fresh descriptor for the child.
    Ok((unsafe { OwnedFd::from_raw_fd(pidfd) }, pid))
}

impl ConfinedChild {
    /// The program just cloned, watched through its pidfd; its pipes are connected after.
    fn started(
        pidfd: OwnedFd,
        pid: libc::pid_t,
        unconfined: bool,
        mount_ns: Option<OwnedFd>,
    ) -> Result<ConfinedChild, String> {
        Ok(ConfinedChild {
            // SAFETY: the pidfd is ours alone; nothing else registers or closes it.
            pidfd: unsafe { AsyncFd::register(pidfd) }.map_err(|e| format!("pidfd: {e}"))?,
            group: std::sync::Arc::new(super::group::Group::new(pid)),
            unconfined,
            mount_ns,
            stdin: None,
            stdout: None,
            stderr: None,
            reaped: false,
        })
    }

    /// The pipe ends paddock kept, as the program's asynchronous streams.
    fn connect(&mut self, kept: KeptStreams) -> Result<(), String> {
        let receiver =
            |fd: OwnedFd| pipe::Receiver::from_owned_fd(fd).map_err(|e| format!("pipe: {e}"));
        self.stdout = kept.stdout.map(receiver).transpose()?;
        self.stderr = kept.stderr.map(receiver).transpose()?;
        self.stdin = match kept.stdin {
            Some(fd) => Some(pipe::Sender::from_owned_fd(fd).map_err(|e| format!("pipe: {e}"))?),
            None => None,
        };
        Ok(())
    }

    /// Waits for the program to end; its exit code, or `None` when a signal ended it.
    pub async fn wait(&mut self) -> std::io::Result<Option<i32>> {
        loop {
            if let Some(code) = self.try_reap()? {
                return Ok(code);
            }
            // A pidfd turns readable when the process ends, and stays so.
            self.pidfd.readable().await?.clear_ready();
        }
    }

    /// Kills the program, and with it every process of its PID namespace.
    pub fn kill(&self) {
        // Unconfined, it is no PID 1 whose end ends the rest: its process group goes too.
        if self.unconfined {
            self.group.signal(libc::SIGKILL);
        }
        // SAFETY: pidfd_send_signal on our own pidfd; fails harmlessly once it is gone.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.pidfd.get_ref().as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            );
        }
    }

    /// Sends `signal` to the program's process group (its session's, on a terminal): the
    /// program and what it started in the foreground.
    pub fn signal_group(&self, signal: libc::c_int) {
        self.group.signal(signal);
    }

    /// A handle that signals the program's process group from anywhere until the program is
    /// reaped, and does nothing after.
    pub fn group(&self) -> std::sync::Arc<super::group::Group> {
        self.group.clone()
    }

    /// The program's pid as paddock's namespace sees it (its processes are listed under
    /// `/proc` with the same PID namespace as this one).
    pub fn pid(&self) -> libc::pid_t {
        self.group.pid()
    }

    /// Stops `Group::signal` before the program is reaped, so its id, free again after,
    /// is never signalled.
    fn retire_group(&self) {
        self.group.retire();
    }

    /// `Some(code)` once the process has ended and been reaped.
    fn try_reap(&mut self) -> std::io::Result<Option<Option<i32>>> {
        if self.reaped {
            return Ok(Some(None));
        }
        // Has it ended? (Looked at without reaping, so the group can be retired first.)
        if self.wait_id(libc::WNOWAIT)?.0 == 0 {
            return Ok(None);
        }
        self.retire_group();
        let (pid, status, code) = self.wait_id(0)?;
        if pid == 0 {
            return Ok(None);
        }
        self.reaped = true;
        Ok(Some((code == libc::CLD_EXITED).then_some(status)))
    }

    /// `waitid` on the program's pidfd without blocking, with `flags` added: the pid (zero
    /// while it runs), its status and how it ended.
    fn wait_id(&self, flags: libc::c_int) -> std::io::Result<(libc::pid_t, i32, i32)> {
        // SAFETY: `siginfo_t` is plain data; all zeroes is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid on our own pidfd, writing into `info`, which lives across the call.
        let ret = unsafe {
            libc::waitid(
                libc::P_PIDFD,
                self.pidfd.get_ref().as_raw_fd() as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | flags,
            )
        };
        if ret == -1 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: si_pid and si_status are valid for a CLD_* siginfo (zero when nothing ended).
        let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
        Ok((pid, status, info.si_code))
    }

    /// Waits (blocking the thread) until the program has ended; as PID 1 of its namespace,
    /// that is after every process it started.
    pub fn reap_blocking(&mut self) {
        if self.reaped {
            return;
        }
        self.retire_group();
        // SAFETY: `siginfo_t` is plain data; all zeroes is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: as in try_reap, blocking.
        unsafe {
            libc::waitid(
                libc::P_PIDFD,
                self.pidfd.get_ref().as_raw_fd() as libc::id_t,
                &mut info,
                libc::WEXITED,
            );
        }
        self.reaped = true;
    }
}

/// `PIDFD_GET_MNT_NAMESPACE` (`_IO(0xFF, 3)`, Linux 6.11).
const PIDFD_GET_MNT_NAMESPACE: libc::c_ulong = 0xFF03;

/// A reference to the mount namespace of the process behind `pidfd`, if it still runs and the
/// kernel has the ioctl; `None` only costs the teardown wait on the call's path.
fn mount_namespace(pidfd: &OwnedFd) -> Option<OwnedFd> {
    // SAFETY: an ioctl on our own pidfd; it returns a new descriptor or -1.
    let fd = unsafe { libc::ioctl(pidfd.as_raw_fd(), PIDFD_GET_MNT_NAMESPACE as _, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: a fresh descriptor that only this function holds.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // The kernel opens it close-on-exec; make sure, as other threads may spawn programs.
    // SAFETY: fcntl on our own descriptor.
    unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
    Some(fd)
}

impl Drop for ConfinedChild {
    /// A program whose call ended (timeout, cancellation, a dropped future) dies with its
    /// whole namespace; a thread reaps it so no zombie stays behind.
    fn drop(&mut self) {
        if let Some(ns) = self.mount_ns.take() {
            super::retire::retire(Box::new(ns));
        }
        if self.reaped {
            return;
        }
        self.kill();
        if let Ok(Some(_)) = self.try_reap() {
            return;
        }
        self.retire_group();
        let fd = self.pidfd.get_ref().try_clone();
        if let Ok(fd) = fd {
            std::thread::spawn(move || {
                // SAFETY: `siginfo_t` is plain data; all zeroes is a valid value.
                let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
                // SAFETY: waitid on a pidfd we own.
                unsafe {
                    libc::waitid(
                        libc::P_PIDFD,
                        fd.as_raw_fd() as libc::id_t,
                        &mut info,
                        libc::WEXITED,
                    );
                }
            });
        }
    }
}
