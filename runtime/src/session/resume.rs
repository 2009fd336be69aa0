//! Reopening a recorded session (L2, L5): take its lock, read and check its log, rebuild its
//! preset from the recorded text, refuse changed plugins, and reconnect its model, or move it
//! to another server (recorded as `session/model`); then settle what a crash or an interrupt
//! left open (`Reopened::settle`) before the session goes on.

use std::path::Path;

use super::error::{SetupCode, SetupError};
use super::client::is_client_session;
use super::recorded::{load_recorded, recorded_found};
use super::start::plugin_hashes;
use super::tools::Loaded;
use super::{Env, Session};
use crate::agent::model_script::ModelScript;
use crate::agent::scripted::ScriptedProvider;
use crate::agent::{NO_TASK, Observer};
use crate::ask::{Approver, OnAsk};
use crate::log::{
    Body, Event, LOG_FILE, LockError, LogWriter, PluginHash, Recovery, SessionLock, SessionLog,
    SessionStart, Settle, StopReason, Streamed, Wait, recover_tail, stream_log,
};
use crate::model::{ProviderConfig, ProviderKind, connect};
use crate::pipeline::RawCall;

/// Where a reopened session's requests go from now on (recorded in the log when it changes).
#[derive(Debug, Default, Clone)]
pub struct ModelMove {
    /// Another OpenAI-compatible (or Anthropic) server; the key, if needed, is read from
    /// `PADDOCK_API_KEY`.
    pub base_url: Option<String>,
    /// Another model name.
    pub model: Option<String>,
    /// Wire format of `base_url` (default: the session's).
    pub provider: Option<ProviderKind>,
}

/// How to reopen a session.
pub struct ReopenOptions {
    /// Wait for another paddock process that has the session, instead of refusing.
    pub wait: bool,
    /// Output limit per model response from now on, instead of the recorded one.
    pub max_output_tokens: Option<u32>,
    pub moved: ModelMove,
    pub approver: Box<dyn Approver>,
    /// Overrides the preset's `limits.max_turns`.
    pub max_turns: Option<u64>,
    /// The caller has no new message: a log without a task is refused before anything is
    /// written to it (not even a torn last line cut).
    pub without_message: bool,
}

/// A session ready to go on once `settle` has settled what recovery found.
pub struct Reopened {
    session: Session,
    recovery: Recovery,
    /// How the last turn ended, counting the end recovery is about to write.
    pub last_turn: Option<StopReason>,
    /// Bytes of a torn last line that recovery dropped.
    pub torn: Option<usize>,
    /// What the model is told of the shell the last run took with it.
    shell_note: Option<String>,
}

/// Reopens session `id` of `env`'s data directory.
pub(super) async fn reopen(
    env: Env,
    id: &str,
    options: ReopenOptions,
) -> Result<Reopened, SetupError> {
    let ReopenOptions {
        wait,
        max_output_tokens,
        moved,
        approver,
        max_turns,
        without_message,
    } = options;
    let fail = SetupError::usage;
    let path = env.store.session_dir(id).join(LOG_FILE);
    if !path.is_file() {
        return Err(fail(format!(
            "no session `{id}` (looked for {}); `paddock log --list` shows the sessions",
            path.display()
        )));
    }
    // One writer: the lock is taken before the log is read, so no other process can append
    // between what recovery reads and what it writes.
    let lock = lock_session(&path, wait).await?;
    let read = read_to_resume(&path, id, without_message)?;
    let mut start = read.start.clone();
    if let Some(parent) = &start.parent {
        // A subagent's tools and budgets were narrowed by its parent's `task` call; its
        // recorded preset is the parent's, so reopening it alone would hand it back more.
        return Err(fail(format!(
            "session `{id}` is a subagent of session `{}` (its `task` call `{}`): what it may \
             do was its parent's to give, so it is not resumed on its own; resume `{}` instead",
            parent.session, parent.call, parent.session
        )));
    }
    let approver: Box<dyn Approver> = match start.on_ask.as_deref().map(OnAsk::parse) {
        Some(Some(mode)) if approver.yields_to_recorded_mode() => Box::new(mode),
        Some(None) => {
            return Err(fail(format!(
                "session `{id}` records an --on-ask mode paddock does not know ({:?}); the \
                 modes are deny, allow and fail: the log was changed by hand",
                start.on_ask.as_deref().unwrap_or_default()
            )));
        }
        _ => approver,
    };
    let mut loaded = load_recorded(env, &start, approver).await?;
    loaded.start_compiling();
    same_plugins(&start.plugins, &plugin_hashes(&loaded)).map_err(fail)?;
    let recorded = read.state.model_config.clone();
    let moved_to = move_model(recorded.as_ref(), &moved)?;
    let config = moved_to.clone().or(recorded);
    offer_recorded(&mut loaded, &start, &path, config.clone());
    let provider = provider_for(config.as_ref(), &read, max_output_tokens)?;
    let writer = LogWriter::reopen_streamed(&path, &read)
        .map_err(|e| fail(format!("cannot reopen {}: {e}", path.display())))?;
    let recovery = recover_tail(&read.tail, read.tail_opens_in_turn);
    let last_turn = recovery
        .steps
        .iter()
        .rev()
        .find_map(|step| match step {
            Settle::Append(Body::TurnEnd { reason, .. }) => Some(*reason),
            _ => None,
        })
        .or(read.state.last_stop);
    let torn = read.torn.as_ref().map(String::len);
    let shell_note = read.state.shells.resume_note();
    let log = SessionLog::from_state(writer, read.state);
    if let Some(config) = moved_to {
        log.append_synced(Body::SessionModel {
            model: config.model.clone(),
            model_config: Box::new(config.clone()),
        })
        .map_err(|e| SetupError::host(format!("cannot write the session log: {e}")))?;
    }
    if let Some(config) = &config {
        start.model = config.model.clone();
        start.model_config = Some(config.clone());
    }
    Ok(Reopened {
        session: Session::new(loaded, provider, log, start, path, lock, max_turns),
        recovery,
        last_turn,
        torn,
        shell_note,
    })
}

/// The session's lock (L6), waited for when `wait` says so.
pub(super) async fn lock_session(path: &Path, wait: bool) -> Result<SessionLock, SetupError> {
    let wait = if wait { Wait::Yes } else { Wait::No };
    let dir = path.parent().unwrap_or(path).to_path_buf();
    match tokio::task::spawn_blocking(move || SessionLock::acquire(&dir, wait)).await {
        Ok(Ok(lock)) => Ok(lock),
        Ok(Err(e @ LockError::Held { .. })) => {
            Err(SetupError::new(SetupCode::SessionInUse, e.to_string()))
        }
        Ok(Err(e)) => Err(SetupError::usage(e.to_string())),
        Err(e) => Err(SetupError::usage(format!(
            "waiting for the session lock failed: {e}"
        ))),
    }
}

/// The log of session `id`, streamed (the state the loop needs and the events recovery needs,
/// not every event), refused when it is not a conversation to go on with.
fn read_to_resume(path: &Path, id: &str, without_message: bool) -> Result<Streamed, SetupError> {
    let fail = SetupError::usage;
    let read = stream_log(path).map_err(|e| fail(e.to_string()))?;
    if is_client_session(&read.start) {
        return Err(fail(format!(
            "session `{id}`'s calls came from a client (`{}`), not a model: there is no \
             conversation to go on with; `paddock log {id}` shows what it ran",
            read.start.model
        )));
    }
    if without_message && !read.state.has_task {
        return Err(fail(format!(
            "{NO_TASK}: paddock resume {id} \"...\" (nothing was changed in its log)"
        )));
    }
    Ok(read)
}

/// Offers the host's tools (`task`, `skill`, `skill_run`) again, as the start did: from the
/// recorded preset, with the project's presets and skills as its trust stands now (recorded,
/// never asked: resume asks nothing about trust).
fn offer_recorded(
    loaded: &mut Loaded,
    start: &SessionStart,
    log: &Path,
    model: Option<ProviderConfig>,
) {
    let found = recorded_found(start);
    let project = super::trust::ProjectUse::decide(
        &loaded.env,
        &start.preset,
        &super::trust::RecordedTrust,
    );
    super::offer::host_tools(
        loaded,
        super::offer::Offer {
            found: &found,
            log,
            project: project.presets,
            trusted: project.instructions,
            model: Some(model),
            child: None,
            child_tap: None,
        },
    );
}

/// The model the session goes on with: `config`'s server, or the scripted demo (or the
/// user's model script, as the start recorded it) moved past the responses the log already has.
fn provider_for(
    config: Option<&ProviderConfig>,
    read: &Streamed,
    max_output_tokens: Option<u32>,
) -> Result<Box<dyn crate::model::Provider>, SetupError> {
    match config {
        None => {
            let scripted = match &read.start.model_script {
                Some(text) => ModelScript::parse("the session's model script", text)
                    .map(ScriptedProvider::script)
                    .map_err(SetupError::usage)?,
                None => ScriptedProvider::demo(),
            };
            let spent = &read.state.spent;
            scripted.skip((spent.model_requests - spent.compactions) as usize);
            Ok(Box::new(scripted))
        }
        Some(config) => connect(with_limit(config, max_output_tokens))
            .map_err(|e| SetupError::usage(e.to_string())),
    }
}

impl Reopened {
    /// Bytes of a torn last line that recovery dropped.
    pub fn torn(&self) -> Option<usize> {
        self.torn
    }

    /// How the last turn ended, counting the end recovery is about to write.
    pub fn last_turn(&self) -> Option<StopReason> {
        self.last_turn
    }

    /// The session as recorded, before recovery settles anything.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Settles what recovery found, then hands over the session: the temporary files of writes
    /// the crash interrupted are removed first; then, in the calls' order, synthesized results
    /// are appended, idempotent calls are run again one at a time (each result logged as it
    /// ends), and the open turn is ended last. Each step is told to `observer` as a notice.
    pub async fn settle(self, observer: &dyn Observer) -> Result<Session, SetupError> {
        let Reopened {
            session,
            recovery,
            shell_note,
            ..
        } = self;
        let written =
            |e: std::io::Error| SetupError::host(format!("cannot write the session log: {e}"));
        {
            let agent = session.agent(observer);
            for line in agent.remove_interrupted_temps(&recovery.interrupted) {
                observer.notice(&line);
            }
            for step in recovery.steps {
                match step {
                    Settle::Append(body) => {
                        if let Body::ToolResult { id, code, .. } = &body {
                            observer.notice(&format!(
                                "call {id}: {} (recorded on resume)",
                                code.as_deref().unwrap_or("")
                            ));
                        }
                        agent.log.append(body).map_err(written)?;
                    }
                    Settle::Rerun(call) => {
                        observer.notice(&format!(
                            "call {}: running `{}` again (idempotent; its result was lost)",
                            call.id, call.name
                        ));
                        let call = RawCall {
                            id: call.id,
                            name: call.name,
                            arguments: call.arguments,
                        };
                        agent.run_queued(&[call]).await.map_err(written)?;
                    }
                }
            }
            // The shell died with the last run: the model hears it before it goes on.
            if let Some(note) = shell_note {
                observer.notice("the shell of the last run ended with it (the model is told)");
                agent
                    .log
                    .append(Body::UserMessage {
                        text: note,
                        source: crate::log::Source::System,
                        images: Vec::new(),
                    })
                    .map_err(written)?;
            }
            agent.log.sync().map_err(written)?;
        }
        Ok(session)
    }
}

/// The configuration `moved` asks for, or `None` when it asks for no change.
fn move_model(
    current: Option<&ProviderConfig>,
    moved: &ModelMove,
) -> Result<Option<ProviderConfig>, SetupError> {
    if moved.base_url.is_none() && moved.model.is_none() && moved.provider.is_none() {
        return Ok(None);
    }
    let unchanged = current.is_some_and(|c| {
        moved
            .base_url
            .as_ref()
            .is_none_or(|u| c.base_url.as_ref() == Some(u))
            && moved.model.as_ref().is_none_or(|m| &c.model == m)
            && moved.provider.is_none_or(|p| p == c.kind)
    });
    if unchanged {
        return Ok(None);
    }
    let kind = moved
        .provider
        .unwrap_or_else(|| current.map_or(ProviderKind::Openai, |c| c.kind));
    let Some(url) = moved
        .base_url
        .clone()
        .or_else(|| current.and_then(|c| c.base_url.clone()))
    else {
        return Err(SetupError::new(
            SetupCode::NoModel,
            "this session ran without a model server (the scripted demo, or a provider's \
             default URL): name the server's base URL to move it to one",
        ));
    };
    let model = moved
        .model
        .clone()
        .or_else(|| current.map(|c| c.model.clone()))
        .unwrap_or_else(|| "default".into());
    let mut config = match current {
        // Same server: keep its settings (timeouts, headers, key variable), change the model.
        Some(c) if moved.base_url.is_none() && moved.provider.is_none() => c.clone(),
        _ => ProviderConfig::new(kind, &model, Some(&url)),
    };
    config.model = model;
    if moved.base_url.is_some() {
        config.api_key_env = std::env::var_os("PADDOCK_API_KEY")
            .is_some()
            .then(|| "PADDOCK_API_KEY".to_string());
    }
    if let Some(limit) = current.and_then(|c| c.max_output_tokens) {
        config.max_output_tokens.get_or_insert(limit);
    }
    Ok(Some(config))
}

/// The recorded model configuration, with --max-output-tokens applied.
fn with_limit(config: &ProviderConfig, limit: Option<u32>) -> ProviderConfig {
    let mut config = config.clone();
    if let Some(limit) = limit {
        config.max_output_tokens = Some(limit);
    }
    config
}

/// Resume runs the plugins the session ran with, or refuses (P1).
fn same_plugins(then: &[PluginHash], now: &[PluginHash]) -> Result<(), String> {
    for old in then {
        match now.iter().find(|p| p.name == old.name) {
            Some(new) if new.sha256 != old.sha256 => {
                return Err(format!(
                    "plugin `{}` changed since the session started (sha256 {} then, {} now); resuming would run different code. Start a new session",
                    old.name, old.sha256, new.sha256
                ));
            }
            None => {
                return Err(format!(
                    "plugin `{}` (sha256 {}) that the session ran with is no longer available; reinstall it or start a new session",
                    old.name, old.sha256
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The newest session of the data directory `sessions` started in `cwd` (for
/// `chat --continue`), by its start time; sessions whose calls came from a client are not
/// conversations to go on with.
pub fn latest_in(sessions: &Path, cwd: &Path) -> Option<String> {
    let mut best: Option<(u64, String)> = None;
    for entry in std::fs::read_dir(sessions).ok()?.flatten() {
        let Some(first) = first_line(&entry.path().join(LOG_FILE)) else {
            continue;
        };
        let Ok(event) = serde_json::from_str::<Event>(&first) else {
            continue;
        };
        if let Body::SessionStart(start) = &event.body
            && Path::new(&start.cwd) == cwd
            && !is_client_session(start)
            && best.as_ref().is_none_or(|(ts, _)| event.ts_ms >= *ts)
        {
            best = Some((event.ts_ms, start.session.clone()));
        }
    }
    best.map(|(_, id)| id)
}

/// The session that session `id` of the data directory `sessions` goes on in now: the
/// newest fork made by a change of preset (an editor's mode change) of `id`, of that fork, and
/// so on; `id` itself when it has none. Forks made otherwise (`paddock fork`) are sessions of
/// their own and are not followed.
pub fn switched_to(sessions: &Path, id: &str) -> String {
    let mut switches: Vec<(String, u64, String)> = Vec::new();
    for entry in std::fs::read_dir(sessions).into_iter().flatten().flatten() {
        let Some(first) = first_line(&entry.path().join(LOG_FILE)) else {
            continue;
        };
        let Ok(event) = serde_json::from_str::<Event>(&first) else {
            continue;
        };
        if let Body::SessionStart(start) = &event.body
            && let Some(fork) = &start.forked_from
            && fork.preset.is_some()
        {
            switches.push((fork.session.clone(), event.ts_ms, start.session.clone()));
        }
    }
    let mut current = id.to_string();
    // Each step goes to a session started later; the bound keeps a log edited into a loop
    // from turning this into one.
    for _ in 0..=switches.len() {
        let next = switches
            .iter()
            .filter(|(parent, _, _)| *parent == current)
            .max_by_key(|(_, ts, _)| *ts);
        match next {
            Some((_, _, child)) => current.clone_from(child),
            None => break,
        }
    }
    current
}

/// The first line of a file, read without the rest.
fn first_line(path: &Path) -> Option<String> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let mut line = String::new();
    std::io::BufReader::new(file).read_line(&mut line).ok()?;
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_start(sessions: &Path, id: &str, ts_ms: u64, model: &str, cwd: &Path) {
        let dir = sessions.join(id);
        std::fs::create_dir_all(&dir).unwrap();
        let first = serde_json::json!({
            "seq": 1, "ts_ms": ts_ms, "type": "session/start",
            "data": {"session": id, "preset": "default", "preset_origin": "shipped",
                     "preset_text": "", "cwd": cwd, "plugins": [], "model": model,
                     "system": ""}
        });
        std::fs::write(dir.join(LOG_FILE), format!("{first}\n")).unwrap();
    }

    /// A session `id` started at `ts_ms` as a fork of `parent`, by a change of preset or not.
    fn write_fork(sessions: &Path, id: &str, ts_ms: u64, parent: &str, switch: bool) {
        write_start(sessions, id, ts_ms, "m", Path::new("/p"));
        let log = sessions.join(id).join(LOG_FILE);
        let mut first: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
        first["data"]["forked_from"] = serde_json::json!({"session": parent, "turn": 2});
        if switch {
            first["data"]["forked_from"]["preset"] = serde_json::json!({"from": "a", "to": "b"});
        }
        std::fs::write(&log, format!("{first}\n")).unwrap();
    }

    #[test]
    fn a_session_goes_on_in_its_newest_fork_by_a_change_of_preset_and_not_in_other_forks() {
        let data = tempfile::tempdir().unwrap();
        let sessions = data.path();
        write_start(sessions, "1-root", 1_000, "m", Path::new("/p"));
        assert_eq!(switched_to(sessions, "1-root"), "1-root");
        write_fork(sessions, "2-plain", 2_000, "1-root", false);
        assert_eq!(switched_to(sessions, "1-root"), "1-root", "a plain fork is not followed");
        write_fork(sessions, "3-old", 3_000, "1-root", true);
        write_fork(sessions, "4-new", 4_000, "1-root", true);
        write_fork(sessions, "5-next", 5_000, "4-new", true);
        assert_eq!(switched_to(sessions, "1-root"), "5-next");
        assert_eq!(switched_to(sessions, "3-old"), "3-old");
        // Logs edited into a loop end the walk instead of running it forever.
        write_fork(sessions, "6-a", 6_000, "7-b", true);
        write_fork(sessions, "7-b", 7_000, "6-a", true);
        let end = switched_to(sessions, "6-a");
        assert!(end == "6-a" || end == "7-b", "{end}");
    }

    #[test]
    fn the_latest_session_to_go_on_with_skips_sessions_whose_calls_came_from_a_client() {
        let data = tempfile::tempdir().unwrap();
        let cwd = Path::new("/work/project");
        write_start(data.path(), "1-a", 1_000, "scripted-demo", cwd);
        write_start(data.path(), "2-b", 2_000, "mcp-client", cwd);
        write_start(data.path(), "3-c", 3_000, "tool-call", cwd);
        write_start(
            data.path(),
            "4-d",
            4_000,
            "scripted-demo",
            Path::new("/elsewhere"),
        );
        assert_eq!(latest_in(data.path(), cwd).as_deref(), Some("1-a"));
        write_start(data.path(), "5-e", 5_000, "gpt-x", cwd);
        assert_eq!(latest_in(data.path(), cwd).as_deref(), Some("5-e"));
    }
}
