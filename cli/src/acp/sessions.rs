//! The editor's sessions. A `session/new` names a session and its mode (a preset) without
//! starting it; its first prompt starts the paddock session under that id, so the mode can be
//! changed until then (`session/set_mode`) and no log is left for a session never used. After
//! that a paddock session keeps its preset, pinned in its log: a mode change between prompts
//! forks it (`Session::fork_under`), the whole conversation and the files as they are, into a
//! new paddock session started under the new preset exactly as a first prompt starts one, and
//! the editor's id goes on in the fork; the old session (its plugins, its shell) is dropped.
//! A change while a prompt runs is refused. `session/load` reopens a recorded session (the
//! same recovery as `paddock resume`), the newest fork a mode change made of it
//! (`session::switched_to`), and replays its history as updates.
//!
//! One prompt runs at a time per session; `session/cancel` interrupts it: the running calls
//! are cancelled (a program in the jail is killed), and the prompt answers `cancelled`. The
//! paddock session is swapped and a prompt claims it under one lock (`started`), so a prompt
//! never runs on a session a mode change has replaced.
//!
//! The editor is untrusted input: a prompt's blocks are read by `prompt.rs` (images only when
//! `initialize` offered them), a mode must be one `modes.rs` offers, and the MCP servers it
//! passes are never started, only named in the thread (`not_connected` says why).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CurrentModeUpdate, LoadSessionRequest, LoadSessionResponse, McpServer, NewSessionRequest,
    NewSessionResponse, PromptRequest, PromptResponse, SessionModeState, SessionNotification,
    SessionUpdate, SetSessionModeRequest, SetSessionModeResponse, StopReason as AcpStop,
};
use agent_client_protocol::{Client, Error, ErrorCode};

use super::permission::EditorApprover;
use super::replay;
use super::updates::Updates;
use super::{modes, prompt};
use paddock::agent::{Quiet, TurnEnd};
use paddock::log::StopReason;
use paddock::session::{
    Env, Interrupter, ModelChoice, ReopenOptions, Session, SessionBuilder, new_session_id,
};
use paddock_types::text::sanitize;

/// How new sessions start (the command line's flags).
pub struct Defaults {
    pub preset: String,
    pub model: ModelChoice,
    pub max_turns: Option<u64>,
}

/// Every session this editor has opened, by id.
pub struct Sessions {
    defaults: Defaults,
    /// Whether `initialize` offers image prompts: the model new sessions start with takes
    /// images.
    images: bool,
    open: Mutex<HashMap<String, Arc<EditorSession>>>,
}

/// One editor session: named, in a mode, and started once prompted.
struct EditorSession {
    id: String,
    cwd: PathBuf,
    mode: Mutex<String>,
    cx: ConnectionTo<Client>,
    /// The paddock session the editor's id goes on in now (its own id, or the newest fork a
    /// mode change made); taken with `running` set under this lock (the module doc).
    started: tokio::sync::Mutex<Option<Arc<Session>>>,
    running: Mutex<Option<Interrupter>>,
    cancelled: AtomicBool,
    /// What the thread is told before the next prompt's turn (the editor's MCP servers that
    /// were not connected).
    notes: Mutex<Vec<String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn invalid(message: String) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, message)
}

fn failed(message: String) -> Error {
    Error::new(ErrorCode::INTERNAL_ERROR, message)
}

/// The data directory, with `cwd` as the working directory.
fn env_at(cwd: &Path) -> Result<Env, Error> {
    let mut env =
        Env::open().map_err(|e| failed(format!("cannot open paddock's data directory: {e:#}")))?;
    env.cwd = cwd.to_path_buf();
    Ok(env)
}

/// A `cwd` the editor sent: absolute, and a directory.
fn checked_cwd(cwd: &Path) -> Result<PathBuf, Error> {
    if !cwd.is_absolute() || !cwd.is_dir() {
        return Err(invalid(format!(
            "cwd `{}` is not an absolute path to a directory; send the project's directory, e.g. \"/home/me/project\"",
            sanitize(&cwd.display().to_string())
        )));
    }
    Ok(cwd.to_path_buf())
}

impl Sessions {
    pub fn new(defaults: Defaults) -> Sessions {
        Sessions {
            images: sees_images(&defaults),
            defaults,
            open: Mutex::new(HashMap::new()),
        }
    }

    /// Whether prompts may carry images (`promptCapabilities.image`).
    pub fn takes_images(&self) -> bool {
        self.images
    }

    fn get(&self, id: &str) -> Result<Arc<EditorSession>, Error> {
        lock(&self.open).get(id).cloned().ok_or_else(|| {
            invalid(format!(
                "no session `{}` is open in this paddock acp; start one with session/new, or reopen a recorded one with session/load",
                sanitize(id)
            ))
        })
    }

    /// `session/new`: a session named now, started by its first prompt. The preset is found
    /// now, so a missing one is reported here.
    pub fn new_session(
        &self,
        request: NewSessionRequest,
        cx: ConnectionTo<Client>,
    ) -> Result<NewSessionResponse, Error> {
        let cwd = checked_cwd(&request.cwd)?;
        let preset = self.defaults.preset.clone();
        modes::check_preset(&env_at(&cwd)?, &preset)?;
        let modes = self.modes(&cwd, &preset)?;
        let id = new_session_id();
        let session = EditorSession {
            id: id.clone(),
            cwd,
            mode: Mutex::new(preset),
            cx,
            started: tokio::sync::Mutex::new(None),
            running: Mutex::new(None),
            cancelled: AtomicBool::new(false),
            notes: Mutex::new(not_connected(&request.mcp_servers)),
        };
        lock(&self.open).insert(id.clone(), Arc::new(session));
        Ok(NewSessionResponse::new(id).modes(modes))
    }

    /// `session/load`: the recorded session reopened (recovery settled as `paddock resume`
    /// settles it) and its history sent as updates before the answer.
    pub async fn load_session(
        &self,
        request: LoadSessionRequest,
        cx: ConnectionTo<Client>,
    ) -> Result<LoadSessionResponse, Error> {
        let id = request.session_id.0.to_string();
        let cwd = checked_cwd(&request.cwd)?;
        if let Ok(open) = self.get(&id) {
            let started = open.started.lock().await.clone();
            if let Some(session) = started {
                replay::send(&open.cx, &id, session.log_path(), &open.cwd);
            }
            let mode = lock(&open.mode).clone();
            return Ok(LoadSessionResponse::new().modes(self.modes(&open.cwd, &mode)?));
        }
        let env = env_at(&cwd)?;
        // A mode change went on in a fork: the editor's id continues the newest one.
        let latest = paddock::session::switched_to(&env.store.root().join("sessions"), &id);
        let options = ReopenOptions {
            wait: false,
            max_output_tokens: None,
            moved: Default::default(),
            approver: Box::new(EditorApprover::new(cx.clone(), &id)),
            max_turns: self.defaults.max_turns,
            without_message: false,
        };
        let reopened = Session::reopen(env, &latest, options).await.map_err(|e| {
            invalid(format!(
                "cannot load session `{}`: {e}; `paddock log --list` lists the recorded sessions",
                sanitize(&latest)
            ))
        })?;
        let session = reopened.settle(&Quiet).await.map_err(|e| {
            failed(format!(
                "cannot settle session `{}`: {e}",
                sanitize(&latest)
            ))
        })?;
        replay::send(&cx, &id, session.log_path(), &cwd);
        let mode = session.preset_name().to_string();
        let modes = self.modes(&cwd, &mode)?;
        let editor = EditorSession {
            id: id.clone(),
            cwd,
            mode: Mutex::new(mode),
            cx,
            started: tokio::sync::Mutex::new(Some(Arc::new(session))),
            running: Mutex::new(None),
            cancelled: AtomicBool::new(false),
            notes: Mutex::new(not_connected(&request.mcp_servers)),
        };
        lock(&self.open).insert(id, Arc::new(editor));
        Ok(LoadSessionResponse::new().modes(modes))
    }

    /// `session/set_mode`: another preset. Before the first prompt the session simply starts
    /// under it; after, between prompts, the paddock session is forked under it (the module
    /// doc). Only a mode offered is taken, and not while a prompt runs.
    pub async fn set_mode(
        &self,
        request: SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, Error> {
        let editor = self.get(&request.session_id.0)?;
        let wanted = request.mode_id.0.to_string();
        // Under the lock a prompt claims the session with: no prompt starts meanwhile.
        let mut started = editor.started.lock().await;
        let current = lock(&editor.mode).clone();
        let offered = self.modes(&editor.cwd, &current)?;
        if !offered.available_modes.iter().any(|m| *m.id.0 == *wanted) {
            let names: Vec<String> = offered
                .available_modes
                .iter()
                .map(|m| m.id.0.to_string())
                .collect();
            return Err(invalid(format!(
                "no mode `{}`: the modes are the presets {} (`paddock preset list`)",
                sanitize(&wanted),
                names.join(", ")
            )));
        }
        if wanted == current {
            return Ok(SetSessionModeResponse::new());
        }
        if lock(&editor.running).is_some() {
            return Err(Error::new(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "session `{}` is working on a prompt under mode `{}`: the mode changes between prompts, so the running turn never changes preset under it; wait for the prompt's answer (or send session/cancel), then set mode `{}` again",
                    editor.id,
                    sanitize(&current),
                    sanitize(&wanted)
                ),
            ));
        }
        if let Some(session) = started.as_ref() {
            let builder = editor.builder(&self.defaults, &wanted)?;
            let fork = session.fork_under(builder).await.map_err(|e| {
                failed(format!(
                    "cannot switch session `{}` to mode `{}`: {e}; it goes on in mode `{}`",
                    editor.id,
                    sanitize(&wanted),
                    sanitize(&current)
                ))
            })?;
            for warning in fork.warnings() {
                tracing::warn!("{}", warning.message);
            }
            lock(&editor.notes).push(format!(
                "[paddock: mode `{}`: this thread goes on as session {}, a fork of {} under that preset (`paddock log --list`); the old session's shell and \"always\" answers ended with it]\n\n",
                sanitize(&wanted),
                fork.id(),
                session.id()
            ));
            // The old session ends here: its plugins and its shell (with the old preset's
            // mounts) are dropped with it, before the next prompt can run.
            *started = Some(Arc::new(fork));
        }
        *lock(&editor.mode) = wanted.clone();
        let update = SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(wanted));
        let _ = editor
            .cx
            .send_notification(SessionNotification::new(editor.id.clone(), update));
        Ok(SetSessionModeResponse::new())
    }

    /// `session/cancel`: the running prompt is interrupted; nothing when none runs.
    pub fn cancel(&self, id: &str) {
        let Ok(editor) = self.get(id) else {
            return;
        };
        editor.cancelled.store(true, Ordering::SeqCst);
        if let Some(interrupter) = lock(&editor.running).as_ref() {
            interrupter.interrupt();
        }
    }

    /// `session/prompt`: one turn (and the follow-ups it leaves) on the prompt's text, its
    /// progress sent as updates; the answer is how it stopped.
    pub async fn prompt(&self, request: PromptRequest) -> Result<PromptResponse, Error> {
        let editor = self.get(&request.session_id.0)?;
        let (text, images) = prompt::content(&request.prompt, self.images)?;
        let session = {
            let mut started = editor.started.lock().await;
            let session = editor.start(&mut started, &self.defaults).await?;
            if !images.is_empty() && !model_sees_images(&session) {
                return Err(invalid(format!(
                    "session `{}` runs model `{}`, which takes no images (its [model] has vision = false, or it is not known to see images); send the prompt without them, or pick a mode whose model has vision = true (docs/providers.md)",
                    editor.id,
                    sanitize(&session.record().model)
                )));
            }
            let mut running = lock(&editor.running);
            if running.is_some() {
                return Err(Error::new(
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "session `{}` is already working on a prompt; wait for its answer, or send session/cancel first",
                        editor.id
                    ),
                ));
            }
            *running = Some(session.interrupter());
            editor.cancelled.store(false, Ordering::SeqCst);
            session
        };
        let updates = Updates::new(editor.cx.clone(), &editor.id, &editor.cwd);
        for note in std::mem::take(&mut *lock(&editor.notes)) {
            updates.say(&note);
        }
        let end = session.send_with_images(&text, &images, &updates).await;
        lock(&editor.running).take();
        if editor.cancelled.swap(false, Ordering::SeqCst) {
            return Ok(PromptResponse::new(AcpStop::Cancelled));
        }
        Ok(PromptResponse::new(stop_of(&end, &updates)))
    }
}

impl EditorSession {
    /// How a paddock session of this editor session starts under `preset`: as every one does
    /// (the preset found and trusted, judged and loaded by `start`), with the command line's
    /// model and budgets, its questions asked in this thread.
    fn builder(&self, defaults: &Defaults, preset: &str) -> Result<SessionBuilder, Error> {
        Ok(Session::builder(env_at(&self.cwd)?)
            .preset(preset)
            .model(defaults.model.clone())
            .max_turns(defaults.max_turns)
            .approver(Box::new(EditorApprover::new(self.cx.clone(), &self.id))))
    }

    /// The paddock session (`started`, whose lock the caller holds), started under this id
    /// with the current mode on the first prompt.
    async fn start(
        &self,
        started: &mut Option<Arc<Session>>,
        defaults: &Defaults,
    ) -> Result<Arc<Session>, Error> {
        if let Some(session) = started.as_ref() {
            return Ok(Arc::clone(session));
        }
        let preset = lock(&self.mode).clone();
        let session = self
            .builder(defaults, &preset)?
            .id(self.id.clone())
            .start()
            .await
            .map_err(|e| {
                failed(format!(
                    "cannot start the session with preset `{}`: {e}",
                    sanitize(&preset)
                ))
            })?;
        for warning in session.warnings() {
            tracing::warn!("{}", warning.message);
        }
        let session = Arc::new(session);
        *started = Some(Arc::clone(&session));
        Ok(session)
    }
}

/// ACP's stop reason for how a turn ended; an end that is neither done nor a budget is told
/// to the editor as a message first.
fn stop_of(end: &TurnEnd, updates: &Updates) -> AcpStop {
    let told = match end.reason {
        StopReason::Completed => return AcpStop::EndTurn,
        StopReason::Interrupted | StopReason::Terminated => return AcpStop::Cancelled,
        StopReason::MaxTurns => return AcpStop::MaxTurnRequests,
        StopReason::Truncated => AcpStop::MaxTokens,
        StopReason::ModelError if end.detail.as_deref() == Some("the model refused to answer") => {
            AcpStop::Refusal
        }
        _ => AcpStop::EndTurn,
    };
    updates.say(&format!(
        "\n\n[paddock: the turn stopped ({}){}]",
        end.reason.as_str(),
        end.detail
            .as_deref()
            .map(|d| format!(": {}", sanitize(d)))
            .unwrap_or_default()
    ));
    told
}

/// Whether `session`'s model is sent images (not the demo or a script, and `vision`).
fn model_sees_images(session: &Session) -> bool {
    session
        .record()
        .model_config
        .as_ref()
        .is_some_and(|config| config.accepts_images())
}

/// Whether the model new sessions start with takes images: `--preset`'s (found from paddock's
/// own working directory, where an editor starts it) with the model flags applied. Anything
/// that cannot be found offers none; the session's start reports it.
fn sees_images(defaults: &Defaults) -> bool {
    let Ok(cwd) = std::env::current_dir() else {
        return false;
    };
    let Ok(env) = env_at(&cwd) else {
        return false;
    };
    let project = modes::project_presets_for(&env, &defaults.preset);
    let Ok(file) = paddock::preset::find_written(&defaults.preset, &cwd, project)
        .map_err(|e| e.to_string())
        .and_then(|found| found.parse().map_err(|e| e.to_string()))
    else {
        return false;
    };
    defaults
        .model
        .config(&defaults.preset, file.model)
        .ok()
        .flatten()
        .is_some_and(|config| config.accepts_images())
}

/// What the thread is told of each MCP server the editor passed: not connected, and how to
/// have it. A session's MCP servers are its preset's (`[mcp.NAME]`): the preset's verdict
/// checks them and `paddock.lock` pins their tools. The editor's list has neither (Zed sends
/// every server the user configured, with every thread), and connecting it would run the
/// editor's command or reach the editor's host, and put tools nobody reviewed for this
/// project before the model. Only the name is repeated (one line, cut), never the command,
/// its environment or headers.
fn not_connected(servers: &[McpServer]) -> Vec<String> {
    servers
        .iter()
        .map(|server| {
            let value = serde_json::to_value(server).unwrap_or_default();
            let name = value["name"].as_str().unwrap_or("unnamed");
            let name = paddock_types::text::one_line(name, 80);
            let name = sanitize(&name);
            tracing::warn!("the editor's MCP server `{name}` was not connected");
            format!(
                "[paddock: MCP server `{name}` from the editor was not connected: a session's MCP servers are its preset's, checked by the preset's verdict and pinned by paddock.lock. To use it, declare it as [mcp.NAME] in a preset (docs/mcp.md) and pick that preset as the mode.]\n\n"
            )
        })
        .collect()
}

impl Sessions {
    /// The modes offered in `cwd`, `current` the session's (`modes`), with `--preset`'s.
    fn modes(&self, cwd: &Path, current: &str) -> Result<SessionModeState, Error> {
        modes::offered(&env_at(cwd)?, current, &self.defaults.preset)
    }
}
