//! A command run in a copy of the shell: its own bash in its own jail (same mounts, same
//! rules, the same temporary directory), started from the state the persistent shell saved
//! after its last command: directory, exported variables, functions, aliases and options.
//! Used for a command on a terminal (`tty`), one started in the background, and one sent
//! while the persistent shell is still busy. What a copy changes is not kept.
//!
//! A copy's bash is PID 1 of its own namespace: when it ends, everything it started ends.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use paddock_jail::Pty;
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::run::{Ended, RunShared};
use crate::capability::confined::{ConfinedRun, Program};

/// What a call may ask of a running copy.
pub(super) enum Control {
    /// Type these bytes (a terminal only).
    Type(Vec<u8>),
    /// Signal its foreground (SIGINT).
    Interrupt,
}

/// A running copy, as the shell keeps it: dropping it kills the copy.
pub(super) struct Copy {
    pub control: mpsc::UnboundedSender<Control>,
}

/// The script a copy's bash runs: the saved state, the call's directory, then the command.
const SCRIPT: &str = r#"builtin source -- "$1" 2>/dev/null
if [[ -n $2 ]]; then builtin cd -- "$2" || builtin exit 1; fi
builtin eval -- "$3""#;

/// Starts `command` in a copy; a task owns it until it ends, then records how.
#[allow(clippy::too_many_arguments)]
pub(super) fn start(
    start: impl FnOnce(Program<'_>) -> Result<ConfinedRun, String>,
    bash: &Path,
    mut env: Vec<(String, std::ffi::OsString)>,
    cwd: &Path,
    state: &Path,
    workdir: Option<&Path>,
    command: &str,
    tty: bool,
    shared: Arc<RunShared>,
    kill_at: Instant,
) -> Result<Copy, String> {
    let pty = if tty { Some(Pty::open()?) } else { None };
    if tty {
        env.push(("TERM".into(), "xterm-256color".into()));
    }
    let script = if tty {
        SCRIPT.to_string()
    } else {
        format!("builtin exec 2>&1\n{SCRIPT}")
    };
    let args = vec![
        "--noprofile".to_string(),
        "--norc".into(),
        "-c".into(),
        script,
        "paddock-copy".into(),
        state.to_string_lossy().into_owned(),
        workdir
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default(),
        command.to_string(),
    ];
    use std::os::fd::AsFd;
    let mut run = start(Program {
        path: bash,
        args: &args,
        env,
        cwd,
        stdin: false,
        terminal: pty.as_ref().map(|p| p.secondary.as_fd()),
    })?;
    let (control, commands) = mpsc::unbounded_channel();
    let child = run.child();
    let readers: Vec<tokio::task::JoinHandle<()>> = match pty {
        Some(pty) => {
            let primary = Arc::new(pty.primary);
            drop(pty.secondary);
            let reader = {
                let primary = primary.clone();
                let shared = shared.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 << 10];
                    while let Ok(n) = paddock_jail::terminal::read(&primary, &mut buf).await {
                        if n == 0 {
                            break;
                        }
                        shared.push(&buf[..n]);
                    }
                })
            };
            tokio::spawn(own(
                run,
                commands,
                Some(primary),
                shared,
                kill_at,
                vec![reader],
            ));
            return Ok(Copy { control });
        }
        None => [child.stdout.take(), child.stderr.take()]
            .into_iter()
            .flatten()
            .map(|mut pipe| {
                let shared = shared.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 << 10];
                    while let Ok(n) = pipe.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        shared.push(&buf[..n]);
                    }
                })
            })
            .collect(),
    };
    tokio::spawn(own(run, commands, None, shared, kill_at, readers));
    Ok(Copy { control })
}

/// Owns the copy until it ends (or the shell drops it, or its time runs out), then cleans up
/// after it and records the end.
async fn own(
    mut run: ConfinedRun,
    mut commands: mpsc::UnboundedReceiver<Control>,
    terminal: Option<Arc<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>>>,
    shared: Arc<RunShared>,
    kill_at: Instant,
    readers: Vec<tokio::task::JoinHandle<()>>,
) {
    let group = run.group();
    let mut notes = Vec::new();
    let mut interrupted_at: Option<Instant> = None;
    let code = loop {
        let give_up = interrupted_at.map(|at| at + Duration::from_secs(2));
        tokio::select! {
            code = run.wait() => break code,
            command = commands.recv() => match command {
                Some(Control::Type(bytes)) => {
                    if let Some(terminal) = &terminal
                        && let Err(e) = paddock_jail::terminal::write(terminal, &bytes).await
                    {
                        notes.push(format!("typing into the terminal failed: {e}"));
                    }
                }
                // A command that does not stop on SIGINT is killed 2 s later, as at its
                // time limit: one that ignores it, or one bash ran in its own place as PID 1
                // of the namespace, where the kernel drops a signal it has no handler for.
                Some(Control::Interrupt) => {
                    group.signal(libc::SIGINT);
                    interrupted_at.get_or_insert_with(Instant::now);
                }
                // The shell let go of it (the session ended): it dies.
                None => {
                    run.kill();
                    break None;
                }
            },
            _ = tokio::time::sleep_until(kill_at), if interrupted_at.is_none() => {
                notes.push("it ran past its time limit and was interrupted (SIGINT)".into());
                group.signal(libc::SIGINT);
                interrupted_at = Some(Instant::now());
            }
            _ = tokio::time::sleep_until(give_up.unwrap_or(kill_at)), if give_up.is_some() => {
                notes.push("it did not stop on SIGINT and was killed".into());
                run.kill();
            }
        }
    };
    for reader in readers {
        let _ = tokio::time::timeout(Duration::from_secs(1), reader).await;
    }
    match run.finish().await {
        Ok(cleaned) => notes.extend(cleaned.iter().map(|n| {
            let n = n.trim();
            n.strip_prefix("[paddock] ").unwrap_or(n).to_string()
        })),
        Err(e) => notes.push(e),
    }
    shared.end(Ended {
        status: code,
        notes,
    });
}
