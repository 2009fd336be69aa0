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
//!   its recovery settled (L2, L5); `recorded.rs`: a recorded preset loaded again;
//!   `client.rs`: what tells a client's session; `sweep.rs`: client sessions a kill left
//!   unsettled;
//! - this file: `Session`, a running session: send a message, steer it through its inbox,
//!   interrupt it.

mod client;
mod env;
mod error;
mod fork;
mod lock;
mod offer;
mod recorded;
mod resume;
mod rewind;
mod skill_run;
mod skill_tool;
mod start;
mod sweep;
mod task;
mod tools;
mod trust;
pub mod verdict;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

pub use env::Env;
pub use error::{SetupCode, SetupError};
pub use fork::{ForkAt, ForkOptions, Forked};
pub use resume::{ModelMove, ReopenOptions, Reopened, latest_in, switched_to};
pub use rewind::{CallPoint, TurnSummary};
pub use start::{ModelChoice, SessionBuilder, new_session_id};
pub use task::ChildTap;
pub use tools::{LoadFor, Loaded, load_preset};
pub use trust::{RecordedTrust, Trust};

use crate::agent::{Agent, Inbox, Observer, TurnEnd};
use crate::log::{Body, Lane, SessionLock, SessionLog, SessionStart, Source};
use crate::model::{Finish, Outcome, Provider, ToolCall, ToolDef};
use crate::pipeline::{CallContext, CallRecord, LoggedCalls, RawCall, Unwatched};
use paddock_types::contract::ToolSpec;

/// A running session: its tools, its model, its log (held: it has one writer, L6), and the
/// inbox where messages arrive while it works.
pub struct Session {
    pub(crate) loaded: Loaded,
    provider: Box<dyn Provider>,
    /// Shared only with its `task` tool (weakly), which charges children's spending to it.
    pub(crate) log: Arc<SessionLog>,
    start: SessionStart,
    path: PathBuf,
    max_turns: Option<u64>,
    inbox: Inbox,
    /// Cancels the turn that is running (or the next one, until it starts).
    turn: Arc<Mutex<CancellationToken>>,
    /// Set by `terminate`: the interrupted turn ends `terminated`, and no later turn starts.
    terminated: Arc<AtomicBool>,
    /// Held while a client's calls are logged and run: one message's calls at a time.
    client_calls: tokio::sync::Mutex<()>,
    /// The recorders of the writable mounts (checkpoints before each turn, rewind).
    checkpoints: Option<crate::rewind::Checkpoints>,
    /// Why there are none, when there is a writable mount (the preset, the bounds).
    checkpoints_off: Option<String>,
    _lock: SessionLock,
}

/// Interrupts a session's running turn from elsewhere (a signal handler's task).
#[derive(Clone)]
pub struct Interrupter {
    turn: Arc<Mutex<CancellationToken>>,
    terminated: Arc<AtomicBool>,
}

impl Interrupter {
    /// Cancels the running turn: its calls are cancelled and backfilled, the turn ends
    /// `interrupted`.
    pub fn interrupt(&self) {
        lock(&self.turn).cancel();
    }

    /// Ends the session (SIGTERM, SIGHUP): the running turn is cancelled like an interrupt
    /// and ends `terminated`; a turn that has not started yet ends `terminated` at once.
    pub fn terminate(&self) {
        self.terminated.store(true, Ordering::SeqCst);
        lock(&self.turn).cancel();
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

    /// Forks recorded session `parent` of `env`'s data directory at `options.at` (the start
    /// of a turn, or just before a call): a new session whose log begins with the parent's
    /// history up to then, and
    /// whose mounts are put back as they were then (the parent's log is left as it is; its
    /// files are the same files). See `fork.rs`.
    pub async fn fork(
        env: Env,
        parent: &str,
        options: ForkOptions,
        observer: &dyn Observer,
    ) -> Result<Forked, SetupError> {
        fork::fork(env, parent, options, observer).await
    }

    /// `fork` of this session, which this process holds: see `Session::fork`. This session
    /// goes on as it is (its files are the fork's too).
    pub async fn fork_here(
        &self,
        options: ForkOptions,
        observer: &dyn Observer,
    ) -> Result<Forked, SetupError> {
        self.log
            .sync()
            .map_err(|e| SetupError::host(format!("cannot write the session log: {e}")))?;
        let env = self.loaded.env.clone();
        fork::from_log(env, self.id(), &self.path, options, observer).await
    }

    /// Goes on from this session's whole conversation in a new session that `builder`
    /// starts under its preset (an editor's mode change): the files stay as they are, this
    /// session's log is only read, and the new one's `session/start` names it
    /// (`forked_from`, with the change of preset). Between turns only. Drop this session
    /// after: its plugins and shell end with it. See `fork.rs`.
    pub async fn fork_under(&self, builder: SessionBuilder) -> Result<Session, SetupError> {
        fork::under(self, builder).await
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
        let log = Arc::new(log);
        loaded.log_slot.set(&log);
        let turn = Arc::new(Mutex::new(loaded.cancel.clone()));
        let (checkpoints, checkpoints_off) = match checkpoints_for(&loaded) {
            Ok(found) => (found, None),
            Err(why) => (None, Some(why)),
        };
        Session {
            loaded,
            provider,
            log,
            start,
            path,
            max_turns,
            inbox: Inbox::new(),
            turn,
            terminated: Arc::new(AtomicBool::new(false)),
            client_calls: tokio::sync::Mutex::new(()),
            checkpoints,
            checkpoints_off,
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
        self.loaded.tool_defs()
    }

    /// The tools the model is offered, each as its plugin declares it (description, argument
    /// schema, runtime metadata: what an MCP front end serves).
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        self.loaded
            .registry
            .tools()
            .map(|t| t.spec.clone())
            .collect()
    }

    /// The name of the preset the session runs.
    pub fn preset_name(&self) -> &str {
        &self.loaded.preset
    }

    /// The plugin that has a tool named `tool` which the preset leaves out (its `[tools]`
    /// enable and disable lists), if one does: what a front end tells a person who asked for
    /// it by name. The model is never told about tools its preset hides.
    pub fn left_out(&self, tool: &str) -> Option<&str> {
        self.loaded.registry.left_out(tool)
    }

    /// The preset's warnings (shown once by the front-end; `run --json` emits them as events).
    pub fn warnings(&self) -> &[verdict::Shown] {
        &self.loaded.warnings
    }

    /// Whether the session's recorded task is set (a message was ever sent).
    pub fn has_task(&self) -> bool {
        self.log.with_state(|state| state.has_task)
    }

    /// Interrupts the running turn.
    pub fn interrupt(&self) {
        lock(&self.turn).cancel();
    }

    /// A handle that interrupts the running turn, or ends the session, for another task.
    pub fn interrupter(&self) -> Interrupter {
        Interrupter {
            turn: Arc::clone(&self.turn),
            terminated: Arc::clone(&self.terminated),
        }
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

    /// `send` with images the user attached (checked with `ImagePart::from_bytes`); they are
    /// kept in the session's blob store and named by hash in the log.
    pub fn send_with_images<'a>(
        &'a self,
        message: &'a str,
        images: &'a [crate::model::ImagePart],
        observer: &'a dyn Observer,
    ) -> impl std::future::Future<Output = TurnEnd> + 'a {
        let agent = self.agent(observer);
        async move { agent.send_with_images(message, images).await }
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

    /// Steers the turn that is working: `text`, from the user, is logged now and enters before
    /// the next model request (after the tool calls in flight finish). Sent while no turn
    /// works, it waits for the next one.
    pub fn steer(&self, text: impl Into<String>) -> io::Result<()> {
        self.queue(Lane::NextStep, text.into())
    }

    /// Queues `text`, from the user, as a follow-up: it is logged now and becomes the next
    /// turn when the working one ends (`send` and `go_on` run it before they return).
    pub fn follow_up(&self, text: impl Into<String>) -> io::Result<()> {
        self.queue(Lane::NextTurn, text.into())
    }

    fn queue(&self, lane: Lane, text: String) -> io::Result<()> {
        // Random, so an id never repeats one logged before a reopen (a repeat is dropped).
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).map_err(|e| io::Error::other(e.to_string()))?;
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let kind = if lane == Lane::NextStep {
            "steer"
        } else {
            "follow-up"
        };
        self.accept(crate::agent::Entry {
            id: format!("{kind}-{id}"),
            source: Source::User,
            lane,
            text,
        })
        .map(drop)
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

    /// Runs a client's call (`mcp serve`, `tool call`) as a model's runs: logged as a message
    /// with this one call, checked once, queued, started (synced when it is not idempotent)
    /// and its result written as it ends, under the preset's hooks, approval and grants.
    /// `cancel` stops it. Only for a session started with `SessionBuilder::client`.
    pub async fn call(&self, call: RawCall, cancel: CancellationToken) -> io::Result<CallRecord> {
        let mut records = self.call_batch(vec![call], None, cancel).await?;
        records
            .pop()
            .ok_or_else(|| io::Error::other("the scheduler returned no record"))
    }

    /// Runs a client's calls as one message with several calls (`tool batch`): scheduled as
    /// a model's are (parallel where safe, at most `max_parallel`, default the preset's), one
    /// record per call in order. Calls of two messages never interleave in the log.
    pub async fn call_batch(
        &self,
        calls: Vec<RawCall>,
        max_parallel: Option<usize>,
        cancel: CancellationToken,
    ) -> io::Result<Vec<CallRecord>> {
        if !client::is_client_session(&self.start) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "this session's calls come from its model; a client's calls need a session \
                 started with `SessionBuilder::client`",
            ));
        }
        let mut ids = std::collections::HashSet::new();
        if let Some(twice) = calls.iter().find(|c| !ids.insert(c.id.as_str())) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "two calls have the id `{}`; give each call its own id",
                    twice.id
                ),
            ));
        }
        let _one = self.client_calls.lock().await;
        let Some(first) = calls.first() else {
            return Ok(Vec::new());
        };
        self.log.append(Body::AssistantMessage {
            attempt: first.id.clone(),
            text: String::new(),
            tool_calls: calls
                .iter()
                .map(|c| ToolCall {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                })
                .collect(),
            finish: Finish::ToolCalls,
            outcome: Outcome::ToolCalls,
            usage: None,
            cost_usd: None,
            reasoning: Vec::new(),
        })?;
        let cx = CallContext {
            cancel,
            ..self.loaded.context()
        };
        let prepared: Vec<_> = calls.into_iter().map(|c| cx.check(c)).collect();
        let max_parallel = max_parallel
            .unwrap_or_else(|| usize::try_from(self.loaded.max_parallel).unwrap_or(usize::MAX));
        LoggedCalls {
            cx: cx.clone(),
            max_parallel,
            log: &self.log,
            watch: &Unwatched,
        }
        .run(&prepared)
        .await
    }

    /// The token of the turn about to run: the current one, or a new one if the last turn was
    /// interrupted.
    fn fresh_turn(&self) -> CancellationToken {
        let mut turn = lock(&self.turn);
        // A terminated session keeps its cancelled token: no later turn runs.
        if turn.is_cancelled() && !self.terminated.load(Ordering::SeqCst) {
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
        calls.live = observer.live_tap();
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
            terminated: Some(&self.terminated),
            checkpoints: self.checkpoints.as_ref(),
        }
    }
}

/// The checkpoint recorders of a loaded preset's writable mounts (its plugins' and MCP
/// servers') and of its exec grants' `write` directories (its plugins' and hooks'); none
/// when nothing is writable, and why when they are off or cannot be set up (then turns run
/// without checkpoints: a rewind says why).
fn checkpoints_for(loaded: &Loaded) -> Result<Option<crate::rewind::Checkpoints>, String> {
    let resolved = &loaded.resolved;
    let mut mounts = Vec::new();
    let mut protect = Vec::new();
    let mut grants = Vec::new();
    for plugin in &resolved.plugins {
        mounts.extend(plugin.grant.mounts.iter().cloned());
        protect.push(&plugin.grant.protect);
        grants.extend(plugin.grant.exec.iter().flat_map(|e| e.write.iter().cloned()));
    }
    for hook in &resolved.hooks {
        grants.extend(hook.grant.exec.iter().flat_map(|e| e.write.iter().cloned()));
    }
    for server in &resolved.mcp {
        mounts.extend(server.mounts.iter().cloned());
        protect.push(&server.protect);
    }
    crate::rewind::Checkpoints::new(
        loaded.env.store.root(),
        &mounts,
        &grants,
        &protect,
        &resolved.checkpoints,
    )
    .inspect_err(|e| tracing::warn!("checkpoints are off for this session: {e}"))
}
