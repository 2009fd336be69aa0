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

use std::path::{Component, Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::bindings::exec;
use super::call::CallState;
use super::confined::Confined;
use super::exec_policy;
use super::grant::{ExecGrant, Mount};
use super::protect::Protect;

/// What a run needs from its call.
struct ExecCall {
    plugin: String,
    grant: Option<ExecGrant>,
    mounts: Vec<Mount>,
    protect: Protect,
    deadline: Instant,
    cancel: CancellationToken,
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
        };
        run(call, cmd)
    }
}

/// Kills the process group when dropped: the one place that guarantees no orphan, whether
/// the run ends, times out, is cancelled, or its future is dropped by the call's deadline.
struct GroupGuard(i32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        // SAFETY: killpg has no memory-safety preconditions; a stale or empty group gives ESRCH.
        unsafe {
            libc::killpg(self.0, libc::SIGKILL);
        }
    }
}

async fn run(call: ExecCall, cmd: exec::Command) -> Result<exec::Output, String> {
    let key = format!("plugins.{}.grants.exec", call.plugin);
    let Some(grant) = &call.grant else {
        return Err(format!(
            "running programs is not granted to this plugin; add `{key}` to the preset"
        ));
    };
    exec_policy::check(&grant.allow, &cmd.program, &cmd.args, &key)?;
    let program = find_program(&cmd.program)?;
    let cwd = host_dir(&call.mounts, cmd.cwd.as_deref())?;
    let mut timeout = grant
        .timeout
        .min(call.deadline.saturating_duration_since(Instant::now()));
    if let Some(ms) = cmd.timeout_ms {
        timeout = timeout.min(Duration::from_millis(ms.into()));
    }

    let mut command = tokio::process::Command::new(&program);
    command
        .args(&cmd.args)
        .env_clear()
        .current_dir(&cwd)
        .stdin(if cmd.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    for name in &grant.env {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    let confined = if grant.confine {
        let mut confined = Confined::prepare(&call.mounts, &call.protect, grant, &program, &key)?;
        command.env("TMPDIR", confined.tmp.path());
        let mut jail = confined.jail_for_child()?;
        // SAFETY: the closure runs in the forked child before exec and only makes system
        // calls on values prepared by the parent (see `confine::child`).
        unsafe {
            command.pre_exec(move || jail.enter());
        }
        Some(confined)
    } else {
        None
    };
    let mut child = command
        .spawn()
        .map_err(|e| {
            if grant.confine {
                format!(
                    "cannot start `{}` confined: {e}; the kernel refused a step of the sandbox \
                     set-up (see `confine = \"off\"` in `{key}` to run unconfined at your own risk)",
                    program.display()
                )
            } else {
                format!("cannot start `{}`: {e}", program.display())
            }
        })?;
    let guard = child.id().map(|pid| GroupGuard(pid as i32));

    if let (Some(bytes), Some(mut stdin)) = (cmd.stdin, child.stdin.take()) {
        tokio::spawn(async move {
            // A program that does not read its input is not an error.
            let _ = stdin.write_all(&bytes).await;
        });
    }
    let cap = grant.output_bytes;
    let stdout = child
        .stdout
        .take()
        .map(|s| tokio::spawn(read_capped(s, cap)));
    let stderr = child
        .stderr
        .take()
        .map(|s| tokio::spawn(read_capped(s, cap)));

    let (status, timed_out) = tokio::select! {
        biased;
        _ = call.cancel.cancelled() => {
            drop(guard);
            return Err("cancelled; the program and everything it started were killed".into());
        }
        status = child.wait() => (status.ok().and_then(|s| s.code()), false),
        _ = tokio::time::sleep(timeout) => (None, true),
    };
    // Whatever the program left running in its group goes with it, so the pipes close too.
    drop(guard);
    let _ = child.wait().await;
    let (stdout, cut_out) = collect(stdout).await;
    let (mut stderr, cut_err) = collect(stderr).await;
    if let Some(confined) = confined {
        // Every process of the run is dead now (its PID namespace is gone), so what it left
        // at a protected path cannot change under us.
        for note in confined.undo_protected_creations() {
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

async fn collect(task: Option<tokio::task::JoinHandle<(Vec<u8>, bool)>>) -> (Vec<u8>, bool) {
    match task {
        Some(task) => task.await.unwrap_or_default(),
        None => (Vec::new(), false),
    }
}

/// Keeps the first `cap` bytes and drains the rest, so the program never blocks on a full pipe.
async fn read_capped(mut from: impl AsyncRead + Unpin, cap: usize) -> (Vec<u8>, bool) {
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

/// A bare name is looked up on the host's PATH; a path must be absolute.
fn find_program(program: &str) -> Result<PathBuf, String> {
    if program.contains('/') {
        let path = PathBuf::from(program);
        return if path.is_absolute() {
            Ok(path)
        } else {
            Err(format!(
                "program `{program}`: give a bare name or an absolute path"
            ))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| format!("program `{program}` is not on the host's PATH"))
}

/// Maps a guest directory to its host directory, refusing anything outside the mounts.
fn host_dir(mounts: &[Mount], guest: Option<&str>) -> Result<PathBuf, String> {
    let Some(first) = mounts.first() else {
        return Err(
            "this plugin has no mounts, so there is no directory to run in; add a mount".into(),
        );
    };
    let Some(guest) = guest else {
        return Ok(first.host.clone());
    };
    let guest_path = Path::new(guest);
    for mount in mounts {
        let Ok(rel) = guest_path.strip_prefix(&mount.guest) else {
            continue;
        };
        if rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(format!("cwd {guest:?} may not contain `..`"));
        }
        let host = mount
            .host
            .join(rel)
            .canonicalize()
            .map_err(|e| format!("cwd {guest:?}: {e}"))?;
        // A symlink inside the mount may not lead out of it.
        if !host.starts_with(&mount.host) || !host.is_dir() {
            return Err(format!("cwd {guest:?} is not a directory inside its mount"));
        }
        return Ok(host);
    }
    Err(format!(
        "cwd {guest:?} is not inside a mount (mounts: {})",
        mounts
            .iter()
            .map(|m| m.guest.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}
