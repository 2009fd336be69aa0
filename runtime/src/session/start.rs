//! Starting a new session: the preset found (a project's only when trusted) and judged, the
//! model chosen (the scripted demo, a server given by its URL, or the preset's `[model]`),
//! the tools loaded, and `session/start` written, synced, under the session's lock (L6).

use std::path::Path;

use super::error::{SetupCode, SetupError};
use super::tools::{LoadFor, Loaded, judge_preset};
use super::client::NoModel;
use super::sweep::OpenMarks;
use super::trust::{ProjectUse, Trust};
use super::{Env, Session};
use crate::agent::DEFAULT_SYSTEM;
use crate::agent::model_script::ModelScript;
use crate::agent::scripted::ScriptedProvider;
use crate::ask::{Approver, OnAsk};
use crate::log::{
    Body, Event, ForkLink, InstructionRecord, LOG_FILE, LayerRecord, LogWriter, PluginHash,
    SessionLock, SessionLog, SessionStart, Tap, Wait,
};
use crate::model::{ProviderConfig, ProviderKind, connect};
use paddock_sandbox::SpillDir;
use crate::preset;

/// Which model a new session talks to. The default is the preset's `[model]`.
#[derive(Debug, Clone, Default)]
pub struct ModelChoice {
    /// The scripted demo model: no network, no key.
    pub demo: bool,
    /// The user's model script (`--model-script FILE`): like the demo, its replies theirs.
    pub script: Option<ModelScript>,
    /// An OpenAI-compatible (or, with `provider = "anthropic"`, Anthropic) server instead of the
    /// preset's `[model]`; the key, if the server needs one, is read from `PADDOCK_API_KEY`.
    pub base_url: Option<String>,
    /// The model name to request (with `base_url`: default the preset's, else `default`).
    pub model: Option<String>,
    /// Wire format for `base_url` (default: OpenAI's).
    pub provider: Option<ProviderKind>,
    /// Output limit per model response, instead of the preset's.
    pub max_output_tokens: Option<u32>,
}

impl ModelChoice {
    /// The model a session started with this choice and a preset whose `[model]` is
    /// `from_preset` talks to; `None` for the demo or a model script (what a front end asks
    /// before a session starts, e.g. whether the model takes images).
    pub fn config(
        &self,
        preset_name: &str,
        from_preset: Option<ProviderConfig>,
    ) -> Result<Option<ProviderConfig>, SetupError> {
        choose_model(self, preset_name, from_preset)
    }
}

/// Everything a new session is started from. `Session::builder` makes one.
pub struct SessionBuilder {
    env: Env,
    preset: String,
    model: ModelChoice,
    approver: Box<dyn Approver>,
    trust: Box<dyn Trust>,
    tap: Option<Tap>,
    max_turns: Option<u64>,
    mounts: Vec<String>,
    client: Option<String>,
    on_ask: Option<OnAsk>,
    child: Option<super::task::ChildOf>,
    child_tap: Option<super::task::ChildTap>,
    id: Option<String>,
    continues: Option<Continued>,
}

/// What a session started under another preset (`Session::fork_under`) takes from the one it
/// goes on from: the link to it, and its history as the new log's events after
/// `session/start` (numbered from 2), whose images are in `blobs`, the parent's blob store.
pub(super) struct Continued {
    pub link: ForkLink,
    pub history: Vec<Event>,
    pub blobs: std::path::PathBuf,
}

impl SessionBuilder {
    pub(super) fn new(env: Env) -> SessionBuilder {
        SessionBuilder {
            env,
            preset: "default".into(),
            model: ModelChoice::default(),
            approver: Box::new(crate::ask::NoOneToAsk),
            trust: Box::new(super::trust::RecordedTrust),
            tap: None,
            max_turns: None,
            mounts: Vec::new(),
            client: None,
            on_ask: None,
            child: None,
            child_tap: None,
            id: None,
            continues: None,
        }
    }

    /// The new session's id (from `new_session_id`), instead of a fresh one: for a front end
    /// that names a session before its first message starts it (ACP's `session/new`). Starting
    /// under an id whose log exists is refused.
    pub fn id(mut self, id: String) -> SessionBuilder {
        self.id = Some(id);
        self
    }

    /// The session goes on from another one's history (see `Continued`).
    pub(super) fn continues(mut self, continued: Continued) -> SessionBuilder {
        self.continues = Some(continued);
        self
    }

    /// Shows every event of every subagent this session starts (and theirs), with the child's
    /// session id, as it is written (`run --json`).
    pub fn child_tap(mut self, tap: super::task::ChildTap) -> SessionBuilder {
        self.child_tap = Some(tap);
        self
    }

    /// The session is a subagent: its preset as proved, its parent, model, tools and budgets.
    pub(crate) fn child(mut self, child: super::task::ChildOf) -> SessionBuilder {
        self.child = Some(child);
        self
    }

    /// A preset name (looked up as `paddock preset list` shows) or a path to a `.toml` file.
    pub fn preset(mut self, name_or_path: &str) -> SessionBuilder {
        self.preset = name_or_path.to_string();
        self
    }

    pub fn model(mut self, model: ModelChoice) -> SessionBuilder {
        self.model = model;
        self
    }

    /// Who answers approval questions (default: nobody, so `ask` denies).
    pub fn approver(mut self, approver: Box<dyn Approver>) -> SessionBuilder {
        self.approver = approver;
        self
    }

    /// Whether the working directory's own configuration may be used (default: only when the
    /// user has trusted it with `paddock trust`; nothing is asked).
    pub fn trust(mut self, trust: Box<dyn Trust>) -> SessionBuilder {
        self.trust = trust;
        self
    }

    /// Shows every event to `tap` as it is written (`run --json`).
    pub fn tap(mut self, tap: Tap) -> SessionBuilder {
        self.tap = Some(tap);
        self
    }

    /// Overrides the preset's `limits.max_turns`.
    pub fn max_turns(mut self, max_turns: Option<u64>) -> SessionBuilder {
        self.max_turns = max_turns;
        self
    }

    /// Nobody is asked: a call that needs approval is denied, run, or stops the session
    /// (`OnAsk`), and `session/start` records which. Replaces any `approver`.
    pub fn on_ask(mut self, on_ask: OnAsk) -> SessionBuilder {
        self.approver = Box::new(on_ask);
        self.on_ask = Some(on_ask);
        self
    }

    /// `--mount HOST:GUEST[:ro|rw]` specs that replace every plugin's mounts.
    pub fn mounts(mut self, mounts: Vec<String>) -> SessionBuilder {
        self.mounts = mounts;
        self
    }

    /// The session's calls come from a client (an MCP client, `tool call`), named here and
    /// recorded as its model: no model is connected and there is no system prompt;
    /// `Session::call` runs the client's calls, logged as a model's are.
    pub fn client(mut self, name: &str) -> SessionBuilder {
        self.client = Some(name.to_string());
        self
    }

    /// Loads the preset, chooses the model, and writes `session/start` (synced).
    pub async fn start(self) -> Result<Session, SetupError> {
        if let Some(client) = self.client.clone() {
            return self.start_for_client(&client).await;
        }
        let SessionBuilder {
            env,
            preset: preset_name,
            model,
            approver,
            trust,
            tap,
            max_turns,
            mounts,
            client: _,
            on_ask,
            child,
            child_tap,
            id,
            continues,
        } = self;
        let project = ProjectUse::decide(&env, &preset_name, trust.as_ref());
        if child.is_none() {
            for line in OpenMarks::of(&env).settle_dead(&env).await {
                trust.notice(&line);
            }
        }
        let found = match &child {
            Some(child) => child.found.clone(),
            None => preset::find_written(&preset_name, &env.cwd, project.presets)
                .map_err(|e| SetupError::usage(e.to_string()))?,
        };

        let file = found
            .parse()
            .map_err(|e| SetupError::usage(e.to_string()))?;
        let base = preset::system_prompt(&file, &found.source.text, &env.cwd)
            .map_err(|e| SetupError::usage(e.to_string()))?
            .unwrap_or_else(|| DEFAULT_SYSTEM.to_string());
        let instructions = if project.instructions {
            let (files, notices) = preset::read_instructions(&env.cwd);
            for notice in notices {
                trust.notice(&notice);
            }
            files
        } else {
            Vec::new()
        };
        let model_config = match &child {
            Some(child) => child.model.clone(),
            None => choose_model(&model, &preset_name, file.model.clone())?,
        };
        let session = id.unwrap_or_else(new_session_id);
        let cwd = env.cwd.clone();
        let dir = env.store.session_dir(&session);
        let path = dir.join(LOG_FILE);
        if session.is_empty() || !session.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(SetupError::usage(format!(
                "`{}` is not a session id: ids are letters, digits and `-` (new_session_id makes one)",
                paddock_types::text::sanitize(&session)
            )));
        }
        if path.exists() {
            return Err(SetupError::usage(format!(
                "session {session} already has a log ({}); give a new id (new_session_id) or reopen it",
                path.display()
            )));
        }
        let started = async {
            // The same verdict as `preset check`: a preset it refuses never starts (P1).
            let judged = judge_preset(
                env,
                &found,
                &preset_name,
                &mounts,
                LoadFor::Session(&session),
            )
            .await?;
            // The model before any plugin or server starts: a missing key refuses here.
            let provider: Box<dyn crate::model::Provider> = match &model_config {
                None => match &model.script {
                    Some(script) => Box::new(ScriptedProvider::script(script.clone())),
                    None => Box::new(ScriptedProvider::demo()),
                },
                Some(config) => {
                    connect(config.clone()).map_err(|e| SetupError::usage(e.to_string()))?
                }
            };
            let mut loaded = judged.load(approver).await?;
            if let Some(note) = &loaded.lock_ignored {
                trust.notice(note);
            }
            let skills = super::offer::host_tools(
                &mut loaded,
                super::offer::Offer {
                    found: &found,
                    log: &path,
                    project: project.presets,
                    trusted: project.instructions,
                    model: Some(model_config.clone()),
                    child: child.as_ref(),
                    child_tap: child_tap.clone(),
                },
            );
            loaded.start_compiling();
            let model_name = match (&model_config, &model.script) {
                (Some(c), _) => c.model.clone(),
                (None, Some(script)) => format!("model-script {}", script.name),
                (None, None) => "scripted-demo".to_string(),
            };
            let mut system = preset::with_instructions(&base, &instructions);
            system.push_str(&skills.listing);
            let mut start = start_record(
                &loaded,
                found,
                &cwd,
                (model_name, model_config),
                system,
                &instructions,
            );
            start.model_script = model.script.as_ref().map(|s| s.text.clone());
            start.on_ask = on_ask.map(|mode| mode.as_str().to_string());
            start.parent = child.as_ref().map(|c| c.link.clone());
            start.skills = skills.record;
            let tap = match (&child, &child_tap) {
                (Some(_), Some(children)) => Some(super::offer::tag_child(children.clone(), &session)),
                _ => tap,
            };
            let history = match continues {
                Some(Continued { mut link, history, blobs }) => {
                    if let Some(switch) = &mut link.preset {
                        switch.to.clone_from(&start.preset);
                    }
                    start.forked_from = Some(link);
                    copy_blobs(&blobs, &dir)?;
                    history
                }
                None => Vec::new(),
            };
            let (lock, log) = begin_log_with(&path, &start, history, tap)?;
            Ok(Session::new(
                loaded, provider, log, start, path, lock, max_turns,
            ))
        }
        .await;
        forget_if_unstarted(&dir, &started);
        started
    }
}

/// After a start: if it failed before its `session/start` was written, the directory loading
/// made for it (its empty spill directory) is removed, so a command that started no session
/// leaves no session directory (`log --list` would show it as "no log"). Only empty
/// directories go: `remove_dir` removes nothing else.
fn forget_if_unstarted(dir: &Path, started: &Result<Session, SetupError>) {
    if started.is_err() {
        let _ = std::fs::remove_dir(dir.join(SpillDir::NAME));
        let _ = std::fs::remove_dir(dir);
    }
}

impl SessionBuilder {
    /// A session whose calls come from a client instead of a model: the preset found (a
    /// project's only when trusted), judged and loaded, and `session/start` written, synced,
    /// under the session's lock, with the client's name as its model and no system prompt.
    async fn start_for_client(self, client: &str) -> Result<Session, SetupError> {
        let SessionBuilder {
            env,
            preset: preset_name,
            approver,
            trust,
            tap,
            mounts,
            child_tap,
            ..
        } = self;
        let project = ProjectUse::decide_for_client(&env, &preset_name, trust.as_ref());
        let found = preset::find_written(&preset_name, &env.cwd, project.presets)
            .map_err(|e| SetupError::usage(e.to_string()))?;
        let marks = OpenMarks::of(&env);
        for line in marks.settle_dead(&env).await {
            trust.notice(&line);
        }
        let session = new_session_id();
        let cwd = env.cwd.clone();
        let dir = env.store.session_dir(&session);
        let path = dir.join(LOG_FILE);
        let started = async {
            let mut loaded = judge_preset(env, &found, &preset_name, &mounts, LoadFor::Session(&session))
                .await?
                .load(approver)
                .await?;
            if let Some(note) = &loaded.lock_ignored {
                trust.notice(note);
            }
            super::offer::host_tools(
                &mut loaded,
                super::offer::Offer {
                    found: &found,
                    log: &path,
                    project: project.presets,
                    trusted: project.presets,
                    model: None,
                    child: None,
                    child_tap,
                },
            );
            let model = (client.to_string(), None);
            let start = start_record(&loaded, found, &cwd, model, String::new(), &[]);
            let (lock, log) = begin_log(&path, &start, tap)?;
            if let Err(note) = marks.mark(&session) {
                trust.notice(&note);
            }
            let provider = Box::new(NoModel::new(client));
            Ok(Session::new(loaded, provider, log, start, path, lock, None))
        }
        .await;
        forget_if_unstarted(&dir, &started);
        started
    }
}

/// What `session/start` records: the preset as found (name, origin, hash, text), the working
/// directory, the hash of every plugin and hook the session loaded, the model, the system
/// prompt and the instruction files in it.
fn start_record(
    loaded: &Loaded,
    found: preset::Found,
    cwd: &Path,
    (model, model_config): (String, Option<ProviderConfig>),
    system: String,
    instructions: &[preset::InstructionFile],
) -> SessionStart {
    SessionStart {
        session: loaded.session.clone(),
        preset: loaded.preset.clone(),
        preset_origin: found.source.location.clone(),
        preset_sha256: Some(found.source.sha256()),
        preset_from: Some(found.source.origin),
        preset_text: found.source.text,
        cwd: cwd.display().to_string(),
        plugins: plugin_hashes(loaded),
        model,
        model_config,
        system,
        instructions: instructions
            .iter()
            .map(|f| InstructionRecord {
                file: f.name.clone(),
                sha256: f.sha256.clone(),
                bytes: f.text.len() as u64,
            })
            .collect(),
        on_ask: None,
        layers: layer_records(),
        lock: loaded.lock_notes.clone(),
        parent: None,
        skills: None,
        model_script: None,
        tools: loaded.tool_defs(),
        forked_from: None,
    }
}

/// The sandbox layers in force here, as `paddock doctor` shows them (probed once a process).
fn layer_records() -> Vec<LayerRecord> {
    paddock_sandbox::layers()
        .into_iter()
        .map(|layer| {
            let in_force = layer.state.is_ok();
            LayerRecord {
                name: layer.name.to_string(),
                in_force,
                detail: layer.state.unwrap_or_else(|why| why),
            }
        })
        .collect()
}

/// Takes the new session's lock (L6) and writes its `session/start`, synced; every event is
/// shown to `tap` as it is written.
pub(super) fn begin_log(
    path: &Path,
    start: &SessionStart,
    tap: Option<Tap>,
) -> Result<(SessionLock, SessionLog), SetupError> {
    begin_log_with(path, start, Vec::new(), tap)
}

/// `begin_log` with `history` (numbered from 2) written after `session/start`, in the same
/// atomic write.
fn begin_log_with(
    path: &Path,
    start: &SessionStart,
    history: Vec<Event>,
    tap: Option<Tap>,
) -> Result<(SessionLock, SessionLog), SetupError> {
    let dir = path.parent().unwrap_or(path);
    let lock = SessionLock::acquire(dir, Wait::No).map_err(|e| SetupError::usage(e.to_string()))?;
    let log = LogWriter::start_with(path, Body::SessionStart(Box::new(start.clone())), history)
        .map(|(writer, events)| {
            if let Some(tap) = &tap {
                events.iter().for_each(tap);
            }
            let log = SessionLog::new(writer, events);
            match tap {
                Some(tap) => log.with_tap(tap),
                None => log,
            }
        })
        .map_err(|e| {
            // The directory is this start's own (a fresh random id): nothing else is in it.
            let _ = std::fs::remove_dir_all(dir);
            SetupError::usage(format!(
                "cannot create the session log {}: {e}",
                path.display()
            ))
        })?;
    Ok((lock, log))
}

/// The images the parent's history names, copied from its blob store `from` into the new
/// session's directory `dir` (they are named by their hash: a copy is the same image).
pub(super) fn copy_blobs(from: &Path, dir: &Path) -> Result<(), SetupError> {
    let Ok(entries) = std::fs::read_dir(from) else {
        return Ok(());
    };
    let to = dir.join(crate::log::BLOBS_DIR);
    let copied = |e: std::io::Error| {
        SetupError::host(format!(
            "cannot copy the images of {} into {}: {e}",
            from.display(),
            to.display()
        ))
    };
    std::fs::create_dir_all(&to).map_err(copied)?;
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            std::fs::copy(entry.path(), to.join(entry.file_name())).map_err(copied)?;
        }
    }
    Ok(())
}

/// The model: the demo (`None`), a server by URL, or the preset's `[model]`.
fn choose_model(
    choice: &ModelChoice,
    preset_name: &str,
    from_preset: Option<ProviderConfig>,
) -> Result<Option<ProviderConfig>, SetupError> {
    if choice.demo || choice.script.is_some() {
        return Ok(None);
    }
    let mut config = match model_from(choice, from_preset) {
        Some(config) => config,
        None => {
            return Err(SetupError::new(
                SetupCode::NoModel,
                format!(
                    "the preset `{preset_name}` has no [model]: choose the scripted demo, a \
                     model server by its base URL (with PADDOCK_API_KEY if it needs a key), or \
                     a preset with a [model] section such as `coding` (docs/providers.md)"
                ),
            ));
        }
    };
    if let Some(limit) = choice.max_output_tokens {
        config.max_output_tokens = Some(limit);
    }
    Ok(Some(config))
}

/// The server by URL, else the preset's `[model]` (with the model name applied); `None` if
/// neither.
fn model_from(choice: &ModelChoice, from_preset: Option<ProviderConfig>) -> Option<ProviderConfig> {
    if let Some(url) = &choice.base_url {
        let kind = choice.provider.unwrap_or(ProviderKind::Openai);
        let model = choice
            .model
            .clone()
            .or_else(|| from_preset.as_ref().map(|c| c.model.clone()))
            .unwrap_or_else(|| "default".into());
        let mut config = ProviderConfig::new(kind, &model, Some(url));
        if std::env::var_os("PADDOCK_API_KEY").is_some() {
            config.api_key_env = Some("PADDOCK_API_KEY".into());
        }
        return Some(config);
    }
    from_preset.map(|mut config| {
        if let Some(model) = &choice.model {
            config.model = model.clone();
        }
        config
    })
}

/// Every tool plugin and hook of `loaded` with the SHA-256 of its code, as `session/start`
/// records them (resume refuses changed code).
pub(super) fn plugin_hashes(loaded: &Loaded) -> Vec<PluginHash> {
    let tools = loaded.registry.plugins().iter().map(|p| PluginHash {
        name: p.name.clone(),
        sha256: p.sha256.clone(),
    });
    let hooks = loaded
        .chain
        .hashes()
        .into_iter()
        .map(|(name, sha256)| PluginHash { name, sha256 });
    tools.chain(hooks).collect()
}

/// A sortable, unique id: seconds since the epoch, then 32 random bits (fifty sessions
/// started in one second by a harness must not collide: 16 bits of the clock did, now and
/// then); the clock's nanoseconds and the pid stand in if the kernel has no randomness.
pub fn new_session_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut bytes = [0u8; 4];
    let random = match getrandom::fill(&mut bytes) {
        Ok(()) => u32::from_le_bytes(bytes),
        Err(_) => now.subsec_nanos() ^ std::process::id().rotate_left(16),
    };
    format!("{}-{random:08x}", now.as_secs())
}
