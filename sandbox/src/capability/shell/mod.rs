//! The shell of the `exec` capability: bash source run for the model, always confined, in one
//! persistent shell per session and plugin (`main_shell`), or in a copy of it for a command on
//! a terminal, one started in the background, or one sent while the shell is busy (`copy`).
//!
//! A command still running when its call's `yield` passes keeps running; the call answers
//! with what it printed so far and the command's `session_id`, which `write_stdin` polls,
//! interrupts or types into. Every command has a time limit (the grant's), the session's
//! commands and processes are listed (`shell_jobs`), and all of them die when the session
//! ends or paddock does. Output is kept within the call's budget, head and tail, with the
//! whole of it in a file the answer names (`transcript`).
//!
//! What may run is judged before anything runs (`judge`): the gate asks from the same
//! judgement, and a command the rules would ask about runs only when it is exactly the one
//! the gate admitted.

mod copy;
pub(crate) mod judge;
mod main_shell;
mod procs;
mod run;
mod transcript;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use self::judge::{ShellJudgement, ShellVerdict, judge_command};
use self::main_shell::{MainShell, STATE_FILE};
use self::run::{Ended, RunShared};
use self::transcript::{Transcript, WholeOutput};
use crate::capability::confined::{Confined, private_tmp};
use crate::capability::locate::{find_program, host_dir};
use crate::fs::protect::Protect;
use crate::grant::{ExecGrant, LiveOutput, Mount, SessionState, SpillDir};
use crate::wasm::bindings::exec;

/// Commands kept for `shell_jobs` and `write_stdin` after they ended and were reported.
const KEPT_ENDED: usize = 16;
/// Copies (tty, background) running at once.
const MAX_COPIES: usize = 8;
/// How long an interrupted command has to end before its call answers anyway.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);
/// Bytes kept of what background jobs print while no command runs.
const BETWEEN_BYTES: usize = 16 << 10;
/// Bytes of a report's budget left for paddock's notes.
const NOTE_ROOM: usize = 2 << 10;

/// What a shell call needs from its call.
pub(crate) struct ShellCall {
    pub plugin: String,
    pub grant: Option<ExecGrant>,
    pub mounts: Vec<Mount>,
    pub protect: Protect,
    pub output_bytes: Option<u64>,
    pub spill: Option<SpillDir>,
    pub admitted: Option<String>,
    /// Admitted as a follow-up of a judged command (see `judge::is_follow_up`).
    pub follow_up: bool,
    pub session: SessionState,
    pub live: Option<LiveOutput>,
    pub deadline: std::time::Instant,
    pub cancel: CancellationToken,
}

impl ShellCall {
    fn key(&self) -> String {
        format!("plugins.{}.grants.exec", self.plugin)
    }

    fn grant(&self) -> Result<&ExecGrant, String> {
        let grant = self.grant.as_ref().ok_or_else(|| {
            format!(
                "running a shell is not granted to this plugin; add `{}` to the preset",
                self.key()
            )
        })?;
        Ok(grant)
    }

    /// How long this call waits before answering, within its own deadline.
    fn yield_for(&self, asked: Option<u32>) -> Result<Duration, String> {
        let grant = self.grant()?;
        let wanted = asked.map_or(grant.yield_time, |ms| Duration::from_millis(ms.into()));
        let room = self
            .deadline
            .saturating_duration_since(std::time::Instant::now())
            .saturating_sub(Duration::from_secs(1));
        Ok(wanted.min(room))
    }

    /// Bytes of the head and of the tail a report keeps.
    fn half_budget(&self) -> usize {
        let budget = self
            .output_bytes
            .map_or(usize::MAX, |b| usize::try_from(b).unwrap_or(usize::MAX));
        let budget = budget.min(self.grant.as_ref().map_or(1 << 20, |g| g.output_bytes));
        budget.saturating_sub(NOTE_ROOM) / 2
    }
}

/// The session's shell: its persistent bash, its commands, and the temporary directory all
/// its processes share.
struct Shells {
    tmp: Arc<tempfile::TempDir>,
    /// Names this shell's whole-output files.
    tag: String,
    main: Option<MainShell>,
    runs: BTreeMap<u32, Entry>,
    next_id: u32,
}

struct Entry {
    command: String,
    kind: Kind,
    shared: Arc<RunShared>,
    copy: Option<copy::Copy>,
    reported_end: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Main,
    Copy,
    Tty,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Main => "shell",
            Kind::Copy => "copy",
            Kind::Tty => "tty",
        }
    }
}

/// Runs `f` with the session's shell, made on first use.
async fn with_shells<T>(
    state: &SessionState,
    f: impl AsyncFnOnce(&mut Shells) -> Result<T, String>,
) -> Result<T, String> {
    let mut slot = state.0.lock().await;
    if slot.as_ref().is_none_or(|s| !s.is::<Shells>()) {
        let tmp = private_tmp()?;
        let tag = tmp
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().replace("paddock-exec-", ""))
            .unwrap_or_default();
        *slot = Some(Box::new(Shells {
            tmp,
            tag,
            main: None,
            runs: BTreeMap::new(),
            next_id: 1,
        }));
    }
    let shells = slot
        .as_mut()
        .and_then(|s| s.downcast_mut::<Shells>())
        .ok_or("the session's shell state is of another kind")?;
    f(shells).await
}

/// Judges `command` for the gate, with the names the session's shell has defined.
pub async fn judge_for_gate(
    state: &SessionState,
    grant: &ExecGrant,
    plugin: &str,
    command: &str,
) -> Result<ShellJudgement, String> {
    let key = format!("plugins.{plugin}.grants.exec");
    let names = {
        let slot = state.0.lock().await;
        slot.as_ref()
            .and_then(|s| s.downcast_ref::<Shells>())
            .and_then(|s| s.main.as_ref())
            .map(MainShell::names)
            .unwrap_or_default()
    };
    judge_command(grant, &names, command, &key)
}

/// Runs `cmd` in the session's shell (or a copy of it) and reports on it once it ends or its
/// call's `yield` passes.
pub(crate) async fn shell(
    call: ShellCall,
    cmd: exec::ShellCommand,
) -> Result<exec::ShellReport, String> {
    let grant = call.grant()?.clone();
    if call.follow_up {
        return Err(judge::FOLLOW_UP.to_string());
    }
    let key = call.key();
    let yield_for = if cmd.background {
        Duration::ZERO
    } else {
        call.yield_for(cmd.yield_ms)?
    };
    let limit = match cmd.timeout_ms {
        Some(ms) => grant.timeout.min(Duration::from_millis(ms.into())),
        None => grant.timeout,
    };
    let workdir = cmd
        .workdir
        .as_deref()
        .map(|w| workdir(&call.mounts, w))
        .transpose()?;
    with_shells(&call.session, async |shells| {
        let mut notes = shells.replace_dead_main().await?;
        let names = shells
            .main
            .as_ref()
            .map(MainShell::names)
            .unwrap_or_default();
        let judged = judge_command(&grant, &names, &cmd.command, &key)?;
        admit(&judged.verdict, call.admitted.as_deref(), &cmd.command)?;
        let id = shells.next_id;
        shells.next_id += 1;
        let whole = whole_output(&call, &shells.tmp, &shells.tag, id);
        let shared = Arc::new(RunShared::new(Transcript::new(call.half_budget(), whole)));
        let kill_at = Instant::now() + limit;
        let (kind, busy_note) = shells.kind_for(&cmd);
        notes.extend(busy_note);
        let copy = match kind {
            Kind::Main => {
                let between = shells.start_main(&call, &grant, &key).await?;
                if !between.is_empty() {
                    shared.push(between.as_bytes());
                }
                let main = shells.main.as_mut().expect("just started");
                main.send(id, &cmd.command, workdir.as_deref(), shared.clone())
                    .await?;
                watch_time(main, shared.clone(), kill_at, limit);
                None
            }
            Kind::Copy | Kind::Tty => {
                shells.room_for_copy()?;
                let tty = kind == Kind::Tty;
                let copy = shells.start_copy(
                    &call,
                    &grant,
                    &key,
                    &cmd,
                    workdir.as_deref(),
                    tty,
                    shared.clone(),
                    kill_at,
                )?;
                Some(copy)
            }
        };
        shells.runs.insert(
            id,
            Entry {
                command: cmd.command.clone(),
                kind,
                shared,
                copy,
                reported_end: false,
            },
        );
        let mut report = shells
            .report(id, yield_for, &call.cancel, call.live.as_ref())
            .await?;
        notes.append(&mut report.notes);
        report.notes = notes;
        Ok(report)
    })
    .await
}

/// Refuses a command the rules deny, and one they would ask about unless the gate admitted
/// exactly it.
fn admit(verdict: &ShellVerdict, admitted: Option<&str>, command: &str) -> Result<(), String> {
    match verdict {
        ShellVerdict::Allow => Ok(()),
        ShellVerdict::Deny(reason) => Err(format!("refused: {reason}")),
        ShellVerdict::Ask(reasons) if admitted != Some(command) => Err(format!(
            "this command needs the user's approval, and this call does not carry it ({}); \
             only a tool whose `command` argument is the command is asked about",
            reasons.join("; ")
        )),
        ShellVerdict::Ask(_) => Ok(()),
    }
}

pub(crate) async fn write_stdin(
    call: ShellCall,
    session_id: u32,
    chars: String,
    yield_ms: Option<u32>,
) -> Result<exec::ShellReport, String> {
    let yield_for = call.yield_for(yield_ms)?;
    with_shells(&call.session, async |shells| {
        let Some(entry) = shells.runs.get(&session_id) else {
            return Err(format!(
                "there is no command with session_id {session_id}; {}",
                shells.listing()
            ));
        };
        if let (false, Some(ended)) = (chars.is_empty(), entry.shared.ended()) {
            return Err(format!(
                "command {session_id} has already ended ({}), so nothing was sent to it; send \
                 an empty \"chars\" to read what it printed last",
                ended
                    .status
                    .map_or("killed".to_string(), |s| format!("exit status {s}"))
            ));
        }
        if !chars.is_empty() {
            let bytes = chars.clone().into_bytes();
            match (entry.kind, &entry.copy) {
                (Kind::Tty, Some(copy)) => {
                    let _ = copy.control.send(copy::Control::Type(bytes));
                }
                _ if chars.chars().all(|c| c == '\u{3}') => shells.interrupt(session_id),
                _ => {
                    return Err(format!(
                        "command {session_id} runs without a terminal, so its standard input is \
                         closed (it reads /dev/null); only \"\\u0003\" (interrupt) can be sent \
                         to it. To type into a program, run it with \"tty\": true"
                    ));
                }
            }
        }
        shells
            .report(session_id, yield_for, &call.cancel, call.live.as_ref())
            .await
    })
    .await
}

pub(crate) async fn shell_jobs(call: ShellCall) -> Vec<exec::ShellJob> {
    with_shells(&call.session, async |shells| Ok(shells.jobs()))
        .await
        .unwrap_or_default()
}

impl Shells {
    /// A shell that exited since (`exit` in a background command's copy cannot do that, but a
    /// job can kill it) is ended for good, so the command starts a new one; the notes say so.
    async fn replace_dead_main(&mut self) -> Result<Vec<String>, String> {
        let mut notes = Vec::new();
        if let Some(dead) = self.main.take_if(|main| main.dead()) {
            let (_, cleaned) = dead.finish().await;
            notes.extend(cleaned?);
            notes.push("the shell had exited; this command runs in a new one".into());
        }
        Ok(notes)
    }

    /// Where `cmd` runs: on a terminal of its own, in a copy of the shell when it goes to the
    /// background or the shell is busy (a note then says what that means), else in the shell.
    fn kind_for(&self, cmd: &exec::ShellCommand) -> (Kind, Option<String>) {
        if cmd.tty {
            return (Kind::Tty, None);
        }
        if cmd.background {
            return (Kind::Copy, None);
        }
        let Some(busy) = self.main.as_ref().and_then(MainShell::busy) else {
            return (Kind::Main, None);
        };
        let note = format!(
            "the shell is still running command {busy}, so this one ran in a copy of the \
             shell as it was before that command: what it changes (directory, variables) is \
             not kept. Interrupt {busy} with write_stdin \"\\u0003\" to have the shell back"
        );
        (Kind::Copy, Some(note))
    }

    /// Refuses another copy while `MAX_COPIES` run.
    fn room_for_copy(&self) -> Result<(), String> {
        let running = self
            .runs
            .values()
            .filter(|e| e.copy.is_some() && e.shared.ended().is_none())
            .count();
        if running >= MAX_COPIES {
            return Err(format!(
                "{running} commands already run in copies of the shell (at most \
                 {MAX_COPIES}); end one with write_stdin \"\\u0003\" (see shell_jobs)"
            ));
        }
        Ok(())
    }

    /// Makes sure the persistent shell runs; what its jobs printed since the last command.
    async fn start_main(
        &mut self,
        call: &ShellCall,
        grant: &ExecGrant,
        key: &str,
    ) -> Result<String, String> {
        if let Some(main) = &self.main {
            let taken = main.take_between();
            return Ok(if taken.text.is_empty() {
                String::new()
            } else {
                format!(
                    "[printed by the shell's background jobs since the last command]\n{}\n[end of \
                     background output]\n",
                    taken.text
                )
            });
        }
        let bash = find_program("bash")?;
        let confined = confinement(call, grant, &bash, key, &self.tmp)?;
        let env = confined.environment(&grant.env);
        let cwd = host_dir(&call.mounts, None)?;
        let main = MainShell::start(
            |program| confined.start(program),
            &bash,
            env,
            &cwd,
            BETWEEN_BYTES,
        )
        .await?;
        self.main = Some(main);
        Ok(String::new())
    }

    #[allow(clippy::too_many_arguments)]
    fn start_copy(
        &mut self,
        call: &ShellCall,
        grant: &ExecGrant,
        key: &str,
        cmd: &exec::ShellCommand,
        workdir: Option<&Path>,
        tty: bool,
        shared: Arc<RunShared>,
        kill_at: Instant,
    ) -> Result<copy::Copy, String> {
        let bash = find_program("bash")?;
        let confined = confinement(call, grant, &bash, key, &self.tmp)?;
        let env = confined.environment(&grant.env);
        let cwd = host_dir(&call.mounts, None)?;
        let state = self.tmp.path().join(STATE_FILE);
        copy::start(
            |program| confined.start(program),
            &bash,
            env,
            &cwd,
            &state,
            workdir,
            &cmd.command,
            tty,
            shared,
            kill_at,
        )
    }

    fn interrupt(&self, id: u32) {
        let Some(entry) = self.runs.get(&id) else {
            return;
        };
        match (&entry.copy, entry.kind) {
            (Some(copy), Kind::Tty) => {
                let _ = copy.control.send(copy::Control::Type(vec![3]));
            }
            (Some(copy), _) => {
                let _ = copy.control.send(copy::Control::Interrupt);
            }
            (None, _) => {
                if let Some(group) = self.main.as_ref().and_then(MainShell::group) {
                    group.signal(libc::SIGINT);
                }
            }
        }
    }

    /// Waits up to `yield_for` for command `id`, then says where it stands and what it
    /// printed since the last report.
    async fn report(
        &mut self,
        id: u32,
        yield_for: Duration,
        cancel: &CancellationToken,
        live: Option<&LiveOutput>,
    ) -> Result<exec::ShellReport, String> {
        let shared = self
            .runs
            .get(&id)
            .map(|e| e.shared.clone())
            .ok_or_else(|| format!("no command {id}"))?;
        // Whoever watches sees the output as it comes while this call waits for it.
        let _watching = live.map(|live| shared.watch(live.clone()));
        let mut notes = Vec::new();
        let ended = tokio::select! {
            biased;
            ended = shared.wait() => Some(ended),
            // A poll that does not wait looks once.
            _ = std::future::ready(()), if yield_for.is_zero() => shared.ended(),
            _ = tokio::time::sleep(yield_for) => None,
            _ = cancel.cancelled() => {
                self.interrupt(id);
                notes.push(
                    "the call was cancelled, so the command was interrupted (SIGINT)".to_string(),
                );
                tokio::time::timeout(INTERRUPT_GRACE, shared.wait()).await.ok()
            }
        };
        let mut ended = ended.map(|e| Ended {
            status: e.status,
            notes: e.notes,
        });
        let kind = self.runs.get(&id).map(|e| e.kind);
        if let (Some(ended), Some(Kind::Main)) = (&mut ended, kind) {
            self.after_main_command(ended).await;
        }
        let taken = shared.take();
        notes.extend(taken.note);
        notes.extend(shared.take_notes());
        let running = ended.is_none();
        if let Some(ended) = &ended {
            notes.extend(ended.notes.iter().cloned());
            if let Some(entry) = self.runs.get_mut(&id) {
                entry.reported_end = true;
            }
        }
        self.forget_old();
        Ok(exec::ShellReport {
            session_id: id,
            running,
            status: ended.and_then(|e| e.status),
            output: taken.text,
            notes,
        })
    }

    /// After a command of the persistent shell: the protected paths its processes made are
    /// removed, and a shell that exited is ended for good (its status is the command's).
    async fn after_main_command(&mut self, ended: &mut Ended) {
        let Some(main) = &self.main else {
            return;
        };
        if main.dead() {
            let main = self.main.take().expect("checked above");
            let (code, cleaned) = main.finish().await;
            if ended.status.is_none() {
                ended.status = code;
            }
            match cleaned {
                Ok(notes) => ended.notes.extend(notes.iter().map(|n| plain_note(n))),
                Err(e) => ended.notes.push(e),
            }
            return;
        }
        match main.clean_up() {
            Ok(notes) => ended.notes.extend(notes.iter().map(|n| plain_note(n))),
            Err(e) => ended.notes.push(e),
        }
    }

    /// Drops the oldest commands that ended and were reported, beyond `KEPT_ENDED`.
    fn forget_old(&mut self) {
        let ended: Vec<u32> = self
            .runs
            .iter()
            .filter(|(_, e)| e.reported_end)
            .map(|(id, _)| *id)
            .collect();
        for id in ended.iter().take(ended.len().saturating_sub(KEPT_ENDED)) {
            self.runs.remove(id);
        }
    }

    fn jobs(&self) -> Vec<exec::ShellJob> {
        let mut jobs: Vec<exec::ShellJob> = self
            .runs
            .iter()
            .map(|(id, e)| {
                let ended = e.shared.ended();
                exec::ShellJob {
                    session_id: *id,
                    command: e.command.chars().take(200).collect(),
                    running: ended.is_none(),
                    status: ended.and_then(|e| e.status),
                    kind: e.kind.name().to_string(),
                }
            })
            .collect();
        // The persistent shell's processes: its jobs started with `&` outlive their command.
        // (A copy runs one command, listed above by its session id.)
        if let Some(pid) = self.main.as_ref().and_then(MainShell::pid) {
            jobs.extend(procs::processes(pid).into_iter().map(|p| exec::ShellJob {
                session_id: p.pid as u32,
                command: p.command,
                running: true,
                status: None,
                kind: "process".into(),
            }));
        }
        jobs
    }

    fn listing(&self) -> String {
        let running: Vec<String> = self
            .runs
            .iter()
            .filter(|(_, e)| e.shared.ended().is_none())
            .map(|(id, e)| format!("{id} ({})", e.command.chars().take(60).collect::<String>()))
            .collect();
        if running.is_empty() {
            "no command is running".into()
        } else {
            format!("running: {}", running.join(", "))
        }
    }
}

/// The jail of one of the shell's processes: the grant's, or none at all under the preset's
/// `confine = "off"` (a container that is the outer boundary).
fn confinement(
    call: &ShellCall,
    grant: &ExecGrant,
    bash: &Path,
    key: &str,
    tmp: &Arc<tempfile::TempDir>,
) -> Result<Confined, String> {
    if grant.confine {
        Confined::prepare_in(&call.mounts, &call.protect, grant, bash, key, tmp.clone())
    } else {
        Ok(Confined::unconfined(tmp.clone(), key))
    }
}

/// A clean-up note as a report's note: the report says it is paddock's.
fn plain_note(note: &str) -> String {
    let note = note.trim();
    note.strip_prefix("[paddock] ").unwrap_or(note).to_string()
}

/// Interrupts a command of the persistent shell that runs past `limit`, and kills the shell
/// if it does not stop.
fn watch_time(main: &MainShell, shared: Arc<RunShared>, kill_at: Instant, limit: Duration) {
    let Some(group) = main.group() else {
        return;
    };
    tokio::spawn(async move {
        tokio::select! {
            _ = shared.wait() => {}
            _ = tokio::time::sleep_until(kill_at) => {
                shared.note(format!(
                    "it ran past its time limit of {}s and was interrupted (SIGINT); a longer \
                     `timeout_ms`, up to the preset's limit, lets it run longer",
                    limit.as_secs()
                ));
                group.signal(libc::SIGINT);
                if tokio::time::timeout(INTERRUPT_GRACE, shared.wait()).await.is_err() {
                    shared.note("it did not stop on SIGINT, so the shell was killed".into());
                    group.signal(libc::SIGKILL);
                }
            }
        }
    });
}

/// Where a command's whole output goes: the session's spill directory, read back with
/// read_file, else the shell's temporary directory, read back with the shell.
fn whole_output(
    call: &ShellCall,
    tmp: &tempfile::TempDir,
    tag: &str,
    id: u32,
) -> Option<WholeOutput> {
    let name = format!("shell-{tag}-{id}.log");
    let create = |path: &Path| {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .ok()
    };
    if let Some(spill) = &call.spill
        && let Some(file) = create(&spill.host.join(&name))
    {
        return Some(WholeOutput {
            file,
            shown: format!("{}/{name}", spill.guest),
            read_with: "read_file (its offset and limit)",
            failed: false,
        });
    }
    let path = tmp.path().join(&name);
    Some(WholeOutput {
        file: create(&path)?,
        shown: path.display().to_string(),
        read_with: "the shell (`sed -n`, `grep`, `tail`)",
        failed: false,
    })
}

/// The host directory a `workdir` names: a guest path inside a mount, a path relative to
/// the first mount, or the host path the shell prints (`pwd`) inside a mount.
fn workdir(mounts: &[Mount], given: &str) -> Result<PathBuf, String> {
    if given.starts_with('/')
        && !mounts
            .iter()
            .any(|m| Path::new(given).starts_with(&m.guest))
        && let Some(mount) = mounts
            .iter()
            .find(|m| Path::new(given).starts_with(&m.host))
    {
        let rel = Path::new(given)
            .strip_prefix(&mount.host)
            .unwrap_or(Path::new(""));
        return host_dir(
            mounts,
            Some(&Path::new(&mount.guest).join(rel).to_string_lossy()),
        );
    }
    let guest = if given.starts_with('/') {
        given.to_string()
    } else {
        let first = mounts.first().map_or("/workspace", |m| m.guest.as_str());
        format!("{first}/{given}")
    };
    host_dir(mounts, Some(&guest))
}
