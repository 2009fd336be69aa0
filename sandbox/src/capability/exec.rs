//! The `exec` capability (S6): run an allow-listed program on the host for a plugin whose
//! preset grants `plugins.<name>.grants.exec`.
//!
//! The program gets a cleared environment (only allow-listed variables pass), a working
//! directory inside one of the call's mounts, its own process group, a timeout, and capped
//! output. When the call is cancelled, times out, or its future is dropped, the whole process
//! group is killed (`killpg`), so nothing it started outlives the call.
//!
//! The program runs confined by the kernel (K1, `confine`): it sees only the call's mounts
//! (read-only ones read-only, protected paths read-only), the system's read-only locations and
//! a private temporary directory; no network unless granted; and it is PID 1 of its own PID
//! namespace, so nothing it starts outlives it, `setsid` or not. Which programs and arguments
//! may run is `exec_policy`'s job.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::capability::confined::{Confined, ConfinedRun, Program};
use crate::capability::exec_policy;
use crate::capability::locate::{find_program, host_dir};
use crate::capability::shell;
use crate::capability::shell::judge::{self, ShellVerdict, judge_argv};
use crate::fs::protect::Protect;
use crate::grant::{ExecGrant, Mount};
use crate::wasm::bindings::exec;
use crate::wasm::store::CallState;

/// What a run needs from its call.
struct ExecCall {
    plugin: String,
    grant: Option<ExecGrant>,
    mounts: Vec<Mount>,
    protect: Protect,
    deadline: Instant,
    cancel: CancellationToken,
    /// The command the call's gate admitted (`shell::judge::admitted_command`).
    admitted: Option<String>,
    /// Admitted as a follow-up of a judged command: it may start nothing.
    follow_up: bool,
}

impl exec::Host for CallState {
    fn run(
        &mut self,
        cmd: exec::Command,
    ) -> impl Future<Output = Result<exec::Output, String>> + Send {
        let call = ExecCall {
            plugin: self.plugin.clone(),
            grant: self.exec.clone(),
            mounts: self.mounts.clone(),
            protect: self.protect.clone(),
            deadline: self.deadline,
            cancel: self.cancel.clone(),
            admitted: self.admitted_command.clone(),
            follow_up: self.follow_up,
        };
        run(call, cmd)
    }

    fn shell(
        &mut self,
        cmd: exec::ShellCommand,
    ) -> impl Future<Output = Result<exec::ShellReport, String>> + Send {
        shell::shell(self.shell_call(), cmd)
    }

    fn write_stdin(
        &mut self,
        session_id: u32,
        chars: String,
        yield_ms: Option<u32>,
    ) -> impl Future<Output = Result<exec::ShellReport, String>> + Send {
        shell::write_stdin(self.shell_call(), session_id, chars, yield_ms)
    }

    fn shell_jobs(&mut self) -> impl Future<Output = Vec<exec::ShellJob>> + Send {
        shell::shell_jobs(self.shell_call())
    }
}

impl CallState {
    fn shell_call(&self) -> shell::ShellCall {
        shell::ShellCall {
            plugin: self.plugin.clone(),
            grant: self.exec.clone(),
            mounts: self.mounts.clone(),
            protect: self.protect.clone(),
            output_bytes: self.output_bytes,
            spill: self.spill.clone(),
            admitted: self.admitted_command.clone(),
            follow_up: self.follow_up,
            session: self.session.clone(),
            live: self.live_output.clone(),
            deadline: self.deadline,
            cancel: self.cancel.clone(),
        }
    }
}

/// A started program, confined or not: its streams, and how to wait for it and kill it.
enum Running {
    /// Confined (the default): PID 1 of its own namespace; killing it kills all it started,
    /// and dropping it cleans up after it (`ConfinedRun`).
    Confined(Option<Box<ConfinedRun>>),
    /// `confine = "off"`: its own process group, killed as a group.
    Plain(tokio::process::Child, Option<i32>),
}

impl Running {
    async fn wait(&mut self) -> Option<i32> {
        match self {
            Running::Confined(Some(run)) => run.wait().await,
            Running::Confined(None) => None,
            Running::Plain(child, _) => child.wait().await.ok().and_then(|s| s.code()),
        }
    }

    fn kill(&mut self) {
        match self {
            Running::Confined(Some(run)) => run.kill(),
            // SAFETY: killpg has no memory-safety preconditions; a stale group gives ESRCH.
            Running::Plain(_, Some(group)) => unsafe {
                libc::killpg(*group, libc::SIGKILL);
            },
            Running::Plain(..) | Running::Confined(None) => {}
        }
    }

    /// The confined run, for its clean-up.
    fn take_confined(&mut self) -> Option<ConfinedRun> {
        match self {
            Running::Confined(run) => run.take().map(|run| *run),
            Running::Plain(..) => None,
        }
    }
}

impl Drop for Running {
    /// Whether the run ended, timed out, was cancelled or its future dropped by the call's
    /// deadline: nothing it started outlives it.
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs `cmd` for the call: admitted, started (confined unless the grant says otherwise), fed
/// its input, waited for within its time limit, and cleaned up after.
async fn run(call: ExecCall, cmd: exec::Command) -> Result<exec::Output, String> {
    let key = format!("plugins.{}.grants.exec", call.plugin);
    let Some(grant) = &call.grant else {
        return Err(format!(
            "running programs is not granted to this plugin; add `{key}` to the preset"
        ));
    };
    if call.follow_up {
        return Err(judge::FOLLOW_UP.to_string());
    }
    admit(grant, &cmd, call.admitted.as_deref(), &key)?;
    let program = find_program(&cmd.program)?;
    let cwd = host_dir(&call.mounts, cmd.cwd.as_deref())?;
    let mut timeout = grant
        .timeout
        .min(call.deadline.saturating_duration_since(Instant::now()));
    if let Some(ms) = cmd.timeout_ms {
        timeout = timeout.min(Duration::from_millis(ms.into()));
    }
    let (mut running, streams) = if grant.confine {
        start_confined(&call, grant, &cmd, &program, &cwd, &key)?
    } else {
        start_plain(grant, &cmd, &program, &cwd)?
    };
    let (stdout, stderr) = feed_and_read(streams, cmd.stdin, grant.output_bytes);

    let (status, timed_out) = tokio::select! {
        biased;
        _ = call.cancel.cancelled() => {
            // Dropping it kills it, waits for all it started and cleans up after it.
            drop(running);
            return Err("cancelled; the program and everything it started were killed".into());
        }
        status = running.wait() => (status, false),
        _ = tokio::time::sleep(timeout) => (None, true),
    };
    // Whatever the program left running goes with it, so the pipes close too.
    running.kill();
    let _ = running.wait().await;
    let (stdout, cut_out) = collect(stdout).await;
    let (mut stderr, cut_err) = collect(stderr).await;
    if let Some(run) = running.take_confined() {
        // Every process of the run is dead by now (its PID namespace is gone), so what it
        // left at a protected path cannot change under the clean-up; a directory the
        // clean-up cannot list fails the call rather than being skipped.
        for note in run.finish().await? {
            stderr.extend_from_slice(note.as_bytes());
        }
    }
    Ok(exec::Output {
        status,
        stdout,
        stderr,
        truncated: cut_out || cut_err,
        timed_out,
    })
}

/// Refuses a program the grant's allow-list does not allow. The grant's `deny` and `ask`
/// rules hold for a program as for a shell command: one an `ask` rule matches runs only when
/// it is the command the call's gate admitted.
fn admit(
    grant: &ExecGrant,
    cmd: &exec::Command,
    admitted: Option<&str>,
    key: &str,
) -> Result<(), String> {
    exec_policy::check(&grant.allow, &cmd.program, &cmd.args, key)?;
    let mut words = vec![cmd.program.clone()];
    words.extend(cmd.args.iter().cloned());
    let line = paddock_shell_judge::quote_words(&words);
    match judge_argv(grant, &words, key)?.verdict {
        ShellVerdict::Deny(reason) => Err(format!("refused: {reason}")),
        ShellVerdict::Ask(reasons) if admitted != Some(line.as_str()) => Err(format!(
            "`{line}` needs the user's approval ({}), and this call does not carry it",
            reasons.join("; ")
        )),
        ShellVerdict::Ask(_) | ShellVerdict::Allow => Ok(()),
    }
}

/// Starts the program in the grant's jail.
fn start_confined(
    call: &ExecCall,
    grant: &ExecGrant,
    cmd: &exec::Command,
    program: &Path,
    cwd: &Path,
    key: &str,
) -> Result<(Running, Streams), String> {
    let confined = Confined::prepare(&call.mounts, &call.protect, grant, program, key)?;
    let env = confined.environment(&grant.env);
    let mut run = confined
        .start(Program {
            path: program,
            args: &cmd.args,
            env,
            cwd,
            stdin: cmd.stdin.is_some(),
            terminal: None,
        })
        .map_err(|e| {
            format!(
                "cannot start `{}` confined: {e}; paddock runs no program unconfined unless \
                 `{key}.confine = \"off\"` accepts the risk",
                program.display()
            )
        })?;
    let child = run.child();
    let streams = Streams::of(child.stdin.take(), child.stdout.take(), child.stderr.take());
    Ok((Running::Confined(Some(Box::new(run))), streams))
}

/// Starts the program unconfined (`confine = "off"`), in a process group of its own.
fn start_plain(
    grant: &ExecGrant,
    cmd: &exec::Command,
    program: &Path,
    cwd: &Path,
) -> Result<(Running, Streams), String> {
    let env: Vec<(String, std::ffi::OsString)> = grant
        .env
        .iter()
        .filter_map(|name| std::env::var_os(name).map(|value| (name.clone(), value)))
        .collect();
    let mut command = tokio::process::Command::new(program);
    command
        .args(&cmd.args)
        .env_clear()
        .envs(env)
        .current_dir(cwd)
        .stdin(if cmd.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}", program.display()))?;
    let streams = Streams::of(child.stdin.take(), child.stdout.take(), child.stderr.take());
    let group = child.id().map(|pid| pid as i32);
    Ok((Running::Plain(child, group), streams))
}

type ProgramIn = Box<dyn AsyncWrite + Send + Unpin>;
type ProgramOut = Box<dyn AsyncRead + Send + Unpin>;
/// A task reading one output stream: what it kept, and whether it cut the rest.
type Reading = tokio::task::JoinHandle<(Vec<u8>, bool)>;

/// A program's standard streams, whichever way it was started.
struct Streams {
    stdin: Option<ProgramIn>,
    stdout: Option<ProgramOut>,
    stderr: Option<ProgramOut>,
}

impl Streams {
    fn of(
        stdin: Option<impl AsyncWrite + Send + Unpin + 'static>,
        stdout: Option<impl AsyncRead + Send + Unpin + 'static>,
        stderr: Option<impl AsyncRead + Send + Unpin + 'static>,
    ) -> Streams {
        Streams {
            stdin: stdin.map(|s| Box::new(s) as ProgramIn),
            stdout: stdout.map(|s| Box::new(s) as ProgramOut),
            stderr: stderr.map(|s| Box::new(s) as ProgramOut),
        }
    }
}

/// Writes `input` to the program and reads its output, each in a task of its own so none
/// waits for another; each output keeps its first `cap` bytes.
fn feed_and_read(
    streams: Streams,
    input: Option<Vec<u8>>,
    cap: usize,
) -> (Option<Reading>, Option<Reading>) {
    if let (Some(bytes), Some(mut stdin)) = (input, streams.stdin) {
        tokio::spawn(async move {
            // A program that does not read its input is not an error.
            let _ = stdin.write_all(&bytes).await;
        });
    }
    let stdout = streams.stdout.map(|s| tokio::spawn(read_capped(s, cap)));
    let stderr = streams.stderr.map(|s| tokio::spawn(read_capped(s, cap)));
    (stdout, stderr)
}

async fn collect(task: Option<Reading>) -> (Vec<u8>, bool) {
    match task {
        Some(task) => task.await.unwrap_or_default(),
        None => (Vec::new(), false),
    }
}

/// Keeps the first `cap` bytes and drains the rest, so the program never blocks on a full pipe.
async fn read_capped(mut from: ProgramOut, cap: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut cut = false;
    let mut buf = [0u8; 8192];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                cut |= n > room;
            }
        }
    }
    (kept, cut)
}
