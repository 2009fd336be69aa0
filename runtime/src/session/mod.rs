//! Sessions as a library: everything between "this workspace, this preset, this model" and a
//! running session, owned here rather than by a front-end, which only turns flags into a
//! `SessionBuilder` (or `ReopenOptions`), shows what an `Observer` is told, and maps a
//! `TurnEnd` or a `SetupError` to an exit code. Nothing here prints.
//!
//! - `env.rs`: the machine (data directory, working directory, sandbox);
//! - `verdict/`: the one judgement every preset gets before anything runs (P1);
//! - `tools.rs`: a judged preset loaded for use (registry, aliases, hooks, approval);
//! - `trust.rs`: whether the project's own configuration may be used (T1);
//! - `start.rs`: a new session (`SessionBuilder`); `resume.rs`: a recorded one reopened and
//!   its recovery settled (L2, L5);
//! - this file: `Session`, a running session: send a message, steer it through its inbox,
//!   interrupt it.

mod env;
mod error;
mod resume;
mod start;
mod tools;
mod trust;
pub mod verdict;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

pub use env::Env;
pub use error::SetupError;
pub use resume::{ModelMove, ReopenOptions, Reopened, latest_in};
pub(crate) use start::start_for_client;
pub use start::{ModelChoice, SessionBuilder};
pub use tools::parse_mount;
pub(crate) use tools::{Loaded, load_preset};
pub use trust::{RecordedTrust, Trust};

use crate::agent::{Agent, Inbox, Observer, TurnEnd};
use crate::log::{SessionLock, SessionLog, SessionStart};
use crate::model::{Provider, ToolDef};

/// A running session: its tools, its model, its log (held: it has one writer, L6), and the
/// inbox where messages arrive while it works.
pub struct Session {
    pub(crate) loaded: Loaded,
    provider: Box<dyn Provider>,
    pub(crate) log: SessionLog,
    start: SessionStart,
    path: PathBuf,
    max_turns: Option<u64>,
    inbox: Inbox,
    /// Cancels the turn that is running (or the next one, until it starts).
    turn: Arc<Mutex<CancellationToken>>,
    _lock: SessionLock,
}

/// Interrupts a session's running turn from elsewhere (a signal handler's task).
#[derive(Clone)]
pub struct Interrupter(Arc<Mutex<CancellationToken>>);

impl Interrupter {
    /// Cancels the running turn: its calls are cancelled and backfilled, the turn ends
    /// `interrupted`.
    pub fn interrupt(&self) {
        lock(&self.0).cancel();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Session {
    /// A new session in `env`'s working directory; `start()` starts it.
    pub fn builder(env: Env) -> SessionBuilder {
        SessionBuilder::new(env)
    }

    /// Reopens recorded session `id` of `env`'s data directory; `Reopened::settle` settles
    /// what recovery found and hands the session over.
    pub async fn reopen(
        env: Env,
        id: &str,
        options: ReopenOptions,
    ) -> Result<Reopened, SetupError> {
        resume::reopen(env, id, options).await
    }

    fn new(
        loaded: Loaded,
        provider: Box<dyn Provider>,
        log: SessionLog,
        start: SessionStart,
        path: PathBuf,
        lock: SessionLock,
        max_turns: Option<u64>,
    ) -> Session {
        let turn = Arc::new(Mutex::new(loaded.cancel.clone()));
        Session {
            loaded,
            provider,
            log,
            start,
            path,
            max_turns,
            inbox: Inbox::new(),
            turn,
            _lock: lock,
        }
    }

    pub fn id(&self) -> &str {
        &self.start.session
    }

    /// The data directory the session lives in.
    pub fn data_dir(&self) -> &Path {
        self.loaded.env.store.root()
    }

    /// The session's `events.jsonl`.
    pub fn log_path(&self) -> &Path {
        &self.path
    }

    /// What `session/start` records: preset, model, working directory, plugin hashes, system
    /// prompt (with any later `session/model` move applied).
    pub fn record(&self) -> &SessionStart {
        &self.start
    }

    /// The tools the model is offered.
    pub fn tools(&self) -> Vec<ToolDef> {
        self.loaded
            .registry
            .tools()
            .map(|t| ToolDef {
                name: t.spec.name.clone(),
                description: t.spec.description.clone(),
                parameters: t.spec.parameters.clone(),
            })
            .collect()
    }

    /// The preset's warnings (shown once by the front-end; `run --json` emits them as events).
    pub fn warnings(&self) -> &[verdict::Shown] {
        &self.loaded.warnings
    }

    /// Where messages arrive while a turn works: `steer` (the next model request) and
    /// `follow_up` (after the turn).
    pub fn inbox(&self) -> &Inbox {
        &self.inbox
    }

    /// Whether the session's recorded task is set (a message was ever sent).
    pub fn has_task(&self) -> bool {
        self.log.with_state(|state| state.has_task)
    }

    /// Interrupts the running turn.
    pub fn interrupt(&self) {
        lock(&self.turn).cancel();
    }

    /// A handle that interrupts the running turn, for another task.
    pub fn interrupter(&self) -> Interrupter {
        Interrupter(Arc::clone(&self.turn))
    }

    /// Sends `message` and runs the turn (and any follow-ups) to its end. The turn is set up
    /// when this is called, so `interrupt` reaches it even before it is first polled.
    pub fn send<'a>(
        &'a self,
        message: &'a str,
        observer: &'a dyn Observer,
    ) -> impl std::future::Future<Output = TurnEnd> + 'a {
        let agent = self.agent(observer);
        async move { agent.send(message).await }
    }

    /// Goes on from where the log stands (an interrupted or budget-stopped turn).
    pub fn go_on<'a>(
        &'a self,
        observer: &'a dyn Observer,
    ) -> impl std::future::Future<Output = TurnEnd> + 'a {
        let agent = self.agent(observer);
        async move { agent.run_turns().await }
    }

    /// Logs `entry` (synced) and, unless it is an interrupt, queues it: steering for the next
    /// model request or a follow-up for after the turn. Logged before it is acknowledged (I1);
    /// false, and nothing logged, for an id already accepted.
    pub fn accept(&self, entry: crate::agent::Entry) -> std::io::Result<bool> {
        self.inbox.accept(&self.log, entry)
    }

    /// Summarizes the conversation so far (`/compact`); `None` when there is nothing to
    /// compact yet.
    pub async fn compact(
        &self,
        focus: Option<&str>,
        observer: &dyn Observer,
    ) -> Result<Option<crate::agent::Compaction>, String> {
        self.agent(observer).compact(focus).await
    }

    /// The token of the turn about to run: the current one, or a new one if the last turn was
    /// interrupted.
    fn fresh_turn(&self) -> CancellationToken {
        let mut turn = lock(&self.turn);
        if turn.is_cancelled() {
            *turn = CancellationToken::new();
        }
        turn.clone()
    }

    /// The agent loop over this session, its calls cancelled by `interrupt`.
    pub(crate) fn agent<'a>(&'a self, observer: &'a dyn Observer) -> Agent<'a> {
        let loaded = &self.loaded;
        let mut budgets = loaded.resolved.limits.clone();
        if let Some(n) = self.max_turns {
            budgets.max_turns = n;
        }
        let mut calls = loaded.context();
        calls.cancel = self.fresh_turn();
        Agent {
            provider: self.provider.as_ref(),
            calls,
            max_parallel: usize::try_from(loaded.max_parallel).unwrap_or(usize::MAX),
            tools: self.tools(),
            system: self.start.system.clone(),
            budgets,
            log: &self.log,
            inbox: Some(&self.inbox),
            observer,
        }
    }
}
