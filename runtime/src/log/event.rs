//! The events of a session log (L1): one JSON object per line, each with a sequence number, a
//! time and a typed body. The history the model sees is derived from them (`history`), never
//! kept anywhere else.

use serde::{Deserialize, Serialize};

use crate::model::{
    AttemptStatus, Diagnostic, Finish, ImageRef, Outcome, Reasoning, ToolCall, Usage,
};

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// 1, 2, 3, ... in file order, without gaps.
    pub seq: u64,
    /// Milliseconds since the Unix epoch.
    pub ts_ms: u64,
    #[serde(flatten)]
    pub body: Body,
}

/// What happened. Serialized as `"type": "...", "data": {...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data")]
pub enum Body {
    /// The first event: what the session runs with, so `resume` rebuilds the same session (P1).
    #[serde(rename = "session/start")]
    SessionStart(Box<SessionStart>),
    /// A message from the user (the task, a follow-up) or from paddock itself (a nudge),
    /// with the images the user attached: named by hash, their bytes in the session's
    /// `blobs/` (`log::Blobs`), never inline.
    #[serde(rename = "user/message")]
    UserMessage {
        text: String,
        source: Source,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageRef>,
    },
    /// The loop starts working on the latest message.
    #[serde(rename = "turn/start")]
    TurnStart { turn: u64 },
    /// A model request began an attempt (L3).
    #[serde(rename = "attempt/start")]
    AttemptStart { attempt: String, number: u32 },
    /// An attempt ended; a failed one's partial output is kept for display only (L3).
    #[serde(rename = "attempt/end")]
    AttemptEnd {
        attempt: String,
        status: AttemptStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partial_text: Option<String>,
    },
    /// The committed assistant message of a completed attempt.
    #[serde(rename = "assistant/message")]
    AssistantMessage {
        attempt: String,
        text: String,
        tool_calls: Vec<ToolCall>,
        finish: Finish,
        outcome: Outcome,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
        /// The reasoning the provider streamed (thinking with its signature, redacted
        /// thinking as it came): kept for the trajectory, and sent back where the provider
        /// requires it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasoning: Vec<Reasoning>,
    },
    /// What was odd about the stream of a completed attempt: ignored
    /// events, late deltas, a repeated start, data that was not JSON. Written after the
    /// assistant message it belongs to, only when there was something.
    #[serde(rename = "stream/anomaly")]
    StreamAnomaly {
        attempt: String,
        anomalies: Vec<Diagnostic>,
    },
    /// A call is queued. Written before any call of its batch starts, and durable before any
    /// tool with side effects (not idempotent) runs (L1).
    #[serde(rename = "tool/call")]
    ToolCall {
        id: String,
        name: String,
        /// The registered tool the name resolved to, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
        /// Safe to run again when its outcome is unknown (L2).
        idempotent: bool,
        /// The real paths the call may touch; recovery re-runs a started idempotent call only
        /// when no later call touching them has started (L8). Absent: it may touch anything.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        touches: Option<Touches>,
    },
    /// A call entered the sandbox. Synced before a tool that is not idempotent runs, so a crash
    /// after it reads as "outcome unknown", never as "not executed" (L2). An idempotent call's
    /// start is written unsynced: if a crash loses it, "not executed" is as safe as "run again".
    #[serde(rename = "tool/start")]
    ToolStart { id: String },
    /// What the model reads back for a call.
    #[serde(rename = "tool/result")]
    ToolResult {
        id: String,
        content: String,
        is_error: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        /// The arguments the tool ran with, after repairs and hooks (C3).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        args: Option<serde_json::Value>,
        /// The repairs applied to the model's call, in order (V3).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        repairs: Vec<LoggedRepair>,
        /// How the question about the call was answered, when it needed approval (T2).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approval: Option<Asked>,
        /// Images the tool returned, named by hash (bytes in the session's `blobs/`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageRef>,
    },
    /// Input that arrived while the loop ran (I1), logged before it is acknowledged.
    #[serde(rename = "inbox/in")]
    InboxIn {
        id: String,
        source: Source,
        lane: Lane,
        text: String,
    },
    /// An inbox entry entered the history (steering before a model request, or a follow-up).
    #[serde(rename = "inbox/take")]
    InboxTake { id: String },
    /// A compaction began: the model is asked to summarize the history of every event up to
    /// `upto` (L1). Without its `context/compacted` (a crash, a failed request) it changes
    /// nothing: a half-done compaction is ignored.
    #[serde(rename = "context/compact")]
    ContextCompact {
        id: String,
        /// Events with `seq <= upto` are what the summary replaces.
        upto: u64,
        reason: CompactReason,
        /// What the user asked the summary to keep (`/compact FOCUS`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        focus: Option<String>,
        /// The window the server revealed by refusing a request as too long (`overflow`), in
        /// tokens: from here on the session keeps its requests inside it, whatever the preset
        /// says, until the session moves to another model (`session/model`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        window: Option<u64>,
    },
    /// The summary arrived: from here on the history derived from the log shows it in place of
    /// the events up to `upto` (L1). The summary is model text and is sent as such, never as
    /// instructions.
    #[serde(rename = "context/compacted")]
    ContextCompacted {
        id: String,
        upto: u64,
        summary: String,
        /// The summary request's attempt (the last one when there were several rounds), and the
        /// usage and cost of all its rounds: budgets count them (B3).
        attempt: String,
        /// Summary requests made: a history longer than one request can carry is summarized in
        /// rounds, each folding the summary so far into the next part.
        #[serde(default = "one", skip_serializing_if = "is_one")]
        rounds: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// The session moved to another model or server (`resume`/`chat --resume` with
    /// `--base-url`, `--model`, `--provider`): from here on requests go there. No secrets: the
    /// key stays in the environment variable the configuration names.
    #[serde(rename = "session/model")]
    SessionModel {
        model: String,
        model_config: Box<crate::model::ProviderConfig>,
    },
    /// The session's writable mounts (and exec write grants) were recorded: checkpoint `id`
    /// of the checkpoint store (`paddock_checkpoint::Record`), taken as turn `turn` began, or,
    /// with `ended`, as it ended (what `rewind` compares with to find changes made outside the
    /// session).
    #[serde(rename = "checkpoint")]
    Checkpoint {
        id: String,
        turn: u64,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        ended: bool,
        /// Taken just before this call of the turn started (the preset's `grain = "call"`:
        /// every call that is not idempotent), not at the turn's start or end.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call: Option<String>,
        /// The host directories it records, mounts then exec write grants, so a reader of
        /// the log (a resumed process, a rewind after a crash) knows what it covers without
        /// the store. Logs written before grants were recorded leave it out: their checkpoints
        /// record the writable mounts alone.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        roots: Vec<String>,
    },
    /// The mounts were put back as checkpoint `to` (taken when turn `turn` began) recorded
    /// them; `before` is the checkpoint of the mounts just before, so a rewind can itself be
    /// undone, and `after` the one just after (what the next rewind compares with to find
    /// changes made outside the session). Nothing before it in the log is changed.
    #[serde(rename = "rewind")]
    Rewind {
        turn: u64,
        to: String,
        before: String,
        after: String,
    },
    /// The conversation went back to where it stood when turn `turn` began: the events from
    /// `from` (the message that started that turn) up to this one stay in the log but are no
    /// longer part of the history the model is sent; the next turn is turn `turn` again.
    #[serde(rename = "conversation/rewind")]
    ConversationRewind { turn: u64, from: u64 },
    /// A subagent this session's `task` call `call` started has ended: what it spent, charged
    /// to this session's budgets (`Spent` counts it as this session's own), and how it ended.
    /// Written before the call's `tool/result`.
    #[serde(rename = "subagent/end")]
    SubagentEnd {
        call: String,
        session: String,
        reason: StopReason,
        spent: ChildSpent,
    },
    /// The loop stopped, and why (B1).
    #[serde(rename = "turn/end")]
    TurnEnd {
        reason: StopReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
}

/// What a session was started with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionStart {
    pub session: String,
    /// The preset's name, where it came from, and its full text (resume parses this text, not
    /// whatever the file says now).
    pub preset: String,
    pub preset_origin: String,
    pub preset_text: String,
    /// Where the preset came from: shipped, user, project (trusted, T1) or file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset_from: Option<crate::preset::Origin>,
    /// SHA-256 of `preset_text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset_sha256: Option<String>,
    /// The directory relative mounts resolved against.
    pub cwd: String,
    /// Every plugin that loaded, with the SHA-256 of its bytes (hooks as `hook:NAME`); resume
    /// refuses changed ones.
    pub plugins: Vec<PluginHash>,
    /// `provider/model`, or `scripted-demo`.
    pub model: String,
    /// How the model was reached (no secrets: the key stays in the environment variable it
    /// names). `None` for the scripted demo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_config: Option<crate::model::ProviderConfig>,
    /// The text of the user's model script (`--model-script`), when the session ran on one:
    /// `resume` replays this text, not whatever the file says now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_script: Option<String>,
    /// The whole system prompt: the preset's (or paddock's default) with the project's
    /// instruction files appended.
    pub system: String,
    /// The project instruction files appended to `system` (`AGENTS.md`, `CLAUDE.md`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instructions: Vec<InstructionRecord>,
    /// What a call that needs approval gets when the session was told not to ask
    /// (`--on-ask deny|allow|fail`); absent when questions go to whoever can answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_ask: Option<String>,
    /// Which of paddock's sandbox layers were in force on the machine the session started on
    /// (what `paddock doctor` shows): a harness reading the log knows what held.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<LayerRecord>,
    /// What the check against `paddock.lock` did at the start: plugins and MCP servers
    /// recorded, grants that changed, MCP tools blocked and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lock: Vec<String>,
    /// A subagent's parent: the session and the `task` call that started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentLink>,
    /// The skills listed in the system prompt, and the tokens the listing adds to every
    /// request (estimated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<SkillsRecord>,
    /// The tools the model is offered, as it is offered them (name, description, argument
    /// schema): what a trajectory's `tool_definitions` says the agent could call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<crate::model::ToolDef>,
    /// A fork's origin: the session whose history up to a turn this log begins with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkLink>,
}

/// Where a fork came from: its log begins with `session`'s events before turn `turn` began,
/// or, with `call`, before that call of turn `turn` started. A fork made by a mode change
/// (`preset`) begins with all of `session`'s history, `turn` being the one it goes on with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkLink {
    pub session: String,
    pub turn: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// The fork goes on under another preset than its parent's (an editor's mode change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<PresetSwitch>,
}

/// A fork's change of preset: the parent's, and the one the fork started under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PresetSwitch {
    pub from: String,
    pub to: String,
}

/// Where a subagent came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentLink {
    pub session: String,
    /// The id of the parent's `task` call.
    pub call: String,
    /// 1 for a child of a session a person started, 2 for its child, ...
    pub depth: u64,
}

/// What a subagent spent, in the budgets its parent is charged: model requests (turns),
/// tokens and cost, its own children's included. Wall time is not charged: a child runs
/// inside its parent's turn, whose clock already counts it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ChildSpent {
    pub model_requests: u64,
    pub tokens: u64,
    pub cost_usd: f64,
}

/// The skills a session's system prompt lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillsRecord {
    pub names: Vec<String>,
    pub listing_tokens: u64,
}

/// One sandbox layer as the session found it at its start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerRecord {
    pub name: String,
    pub in_force: bool,
    /// What is in force (`ABI 7`), or why it is missing.
    pub detail: String,
}

/// A project instruction file as it went into the system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstructionRecord {
    pub file: String,
    pub sha256: String,
    pub bytes: u64,
}

/// What a call may touch: real host paths (empty: anything its mounts reach), and whether it
/// may change them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Touches {
    pub paths: Vec<String>,
    pub writes: bool,
}

impl Touches {
    /// Whether running one of the two calls again could change what the other did or saw:
    /// either writes, and their paths overlap (the same path, or one inside the other).
    pub fn overlaps(&self, other: &Touches) -> bool {
        if !(self.writes || other.writes) {
            return false;
        }
        if self.paths.is_empty() || other.paths.is_empty() {
            return true;
        }
        self.paths.iter().any(|a| {
            other.paths.iter().any(|b| {
                let (a, b) = (std::path::Path::new(a), std::path::Path::new(b));
                a.starts_with(b) || b.starts_with(a)
            })
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginHash {
    pub name: String,
    pub sha256: String,
}

/// Who said something (I1). Text from tools or the web is never a `Source` of instructions
/// (I3): it only ever arrives as a tool result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    User,
    /// paddock itself: nudges and notices.
    System,
}

/// When an inbox entry takes effect (I2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Lane {
    /// Abort what is running now.
    Interrupt,
    /// Steering: enters before the next model request, after the current tool batch.
    NextStep,
    /// Follow-up: runs when the loop would otherwise stop.
    NextTurn,
}

/// Why a compaction ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactReason {
    /// The next request would have passed `compact_at` of the context window.
    Threshold,
    /// The user asked (`/compact`, `Agent::compact`).
    Requested,
    /// The server refused a request as longer than its context.
    Overflow,
}

impl CompactReason {
    pub fn as_str(self) -> &'static str {
        match self {
            CompactReason::Threshold => "threshold",
            CompactReason::Requested => "requested",
            CompactReason::Overflow => "overflow",
        }
    }
}

/// How the question about a call was answered, as its result is logged (`approval`, T2).
/// Written as text: `once`, `always: PATTERN`, `always (earlier): PATTERN`, `unanswered`. A no
/// is not here: it is the `DECLINED` result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// Yes, this once.
    Once,
    /// Yes, and to every call the pattern covers from now on.
    Always(String),
    /// Not asked: a pattern approved earlier in the session covers it.
    AlwaysEarlier(String),
    /// It needed an answer no one could give (no terminal, `--on-ask deny|fail`); the call was
    /// refused, and the `result` line counts it in `denied_calls`.
    Unanswered,
    /// Text this version does not write (another version's), kept as it was.
    Written(String),
}

impl Asked {
    const ALWAYS: &str = "always: ";
    const EARLIER: &str = "always (earlier): ";

    /// The text the log holds.
    pub fn as_text(&self) -> String {
        match self {
            Asked::Once => "once".into(),
            Asked::Always(pattern) => format!("{}{pattern}", Asked::ALWAYS),
            Asked::AlwaysEarlier(pattern) => format!("{}{pattern}", Asked::EARLIER),
            Asked::Unanswered => "unanswered".into(),
            Asked::Written(text) => text.clone(),
        }
    }

    /// Reads the text back; text this version does not write is kept as `Written`, so a log
    /// from another version still reads, and nothing in it is lost.
    pub fn parse(text: &str) -> Asked {
        match text {
            "once" => Asked::Once,
            "unanswered" => Asked::Unanswered,
            _ => text
                .strip_prefix(Asked::EARLIER)
                .map(|p| Asked::AlwaysEarlier(p.to_string()))
                .or_else(|| {
                    text.strip_prefix(Asked::ALWAYS)
                        .map(|p| Asked::Always(p.to_string()))
                })
                .unwrap_or_else(|| Asked::Written(text.to_string())),
        }
    }
}

/// A repair as the log holds it: one this version knows, typed, or one another version wrote
/// (a repair since renamed or removed), kept as it was written so the log still reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LoggedRepair {
    Known(crate::calls::Repair),
    Written(serde_json::Value),
}

impl Serialize for Asked {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.as_text())
    }
}

impl<'de> Deserialize<'de> for Asked {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Asked::parse(&String::deserialize(d)?))
    }
}

/// Why the loop stopped (B1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model answered without a call, and the message does not announce one (B2).
    Completed,
    MaxTurns,
    TokenBudget,
    TimeBudget,
    CostBudget,
    /// Ctrl-C, an interrupt entry, or paddock stopped mid-turn (found on resume).
    Interrupted,
    /// The response was cut by the output limit and carried no call to retry.
    Truncated,
    /// The model kept saying it would call a tool and sent none, after nudges.
    DroppedToolCall,
    /// The user was asked to approve a call and said no; the turn waits for them.
    Denied,
    /// The provider failed after its retries, refused, or filtered the response.
    ModelError,
    /// The provider's stream could not be made sense of.
    ProtocolError,
    /// paddock itself failed (a mount vanished, a plugin could not be set up): not the model's
    /// to fix (V5).
    HostError,
    /// A signal (SIGTERM, SIGHUP) ended the session: what `timeout`, CI runners and
    /// Kubernetes send. The running calls are cancelled and backfilled, as for an interrupt.
    Terminated,
    /// A call needed approval and the session was told to stop rather than deny it
    /// (`--on-ask fail`): no one could be asked.
    ApprovalRequired,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Completed => "completed",
            StopReason::MaxTurns => "max_turns",
            StopReason::TokenBudget => "token_budget",
            StopReason::TimeBudget => "time_budget",
            StopReason::CostBudget => "cost_budget",
            StopReason::Interrupted => "interrupted",
            StopReason::Truncated => "truncated",
            StopReason::DroppedToolCall => "dropped_tool_call",
            StopReason::Denied => "denied",
            StopReason::ModelError => "model_error",
            StopReason::ProtocolError => "protocol_error",
            StopReason::HostError => "host_error",
            StopReason::Terminated => "terminated",
            StopReason::ApprovalRequired => "approval_required",
        }
    }
}

/// A minimal `session/start` for the log's unit tests.
#[cfg(test)]
pub(crate) fn test_start() -> Body {
    Body::SessionStart(Box::new(SessionStart {
        session: "s".into(),
        preset: "default".into(),
        preset_origin: "<embedded>".into(),
        preset_text: String::new(),
        preset_from: None,
        preset_sha256: None,
        cwd: "/".into(),
        plugins: Vec::new(),
        model: "m".into(),
        model_config: None,
        system: String::new(),
        instructions: Vec::new(),
        on_ask: None,
        layers: Vec::new(),
        lock: Vec::new(),
        parent: None,
        skills: None,
        model_script: None,
        tools: Vec::new(),
        forked_from: None,
    }))
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

#[cfg(test)]
mod asked_tests {
    use super::*;

    #[test]
    fn an_answer_is_written_as_its_text_and_read_back_as_the_same_answer() {
        for asked in [
            Asked::Once,
            Asked::Always("run_command git *".into()),
            Asked::AlwaysEarlier("write_file src/**".into()),
            Asked::Unanswered,
        ] {
            let text = serde_json::to_value(&asked).unwrap();
            assert!(text.is_string(), "{text}");
            assert_eq!(serde_json::from_value::<Asked>(text).unwrap(), asked);
        }
        assert_eq!(Asked::Always("x".into()).as_text(), "always: x");
        assert_eq!(
            Asked::AlwaysEarlier("x".into()).as_text(),
            "always (earlier): x"
        );
        // Text another version wrote is kept as it was, and written back the same.
        let other: Asked = serde_json::from_value(serde_json::json!("sometimes")).unwrap();
        assert_eq!(other, Asked::Written("sometimes".into()));
        assert_eq!(serde_json::to_value(&other).unwrap(), "sometimes");
    }

    #[test]
    fn a_results_repairs_are_read_back_typed_and_another_versions_kept() {
        let line = r#"{"id":"c1","content":"ok","is_error":false,"repairs":[{"repair":"empty_arguments"},{"repair":"kept_raw","text":"x"}],"approval":"always: read_file *"}"#;
        let body: Body = serde_json::from_value(serde_json::json!({
            "type": "tool/result",
            "data": serde_json::from_str::<serde_json::Value>(line).unwrap(),
        }))
        .unwrap();
        let Body::ToolResult {
            repairs, approval, ..
        } = body
        else {
            panic!("a tool/result")
        };
        // A repair this version knows is typed; one an older version wrote (`kept_raw` is gone)
        // is kept as written: the log still reads, and nothing is lost.
        assert_eq!(
            repairs,
            vec![
                LoggedRepair::Known(crate::calls::Repair::EmptyArguments),
                LoggedRepair::Written(serde_json::json!({"repair": "kept_raw", "text": "x"})),
            ]
        );
        assert_eq!(approval, Some(Asked::Always("read_file *".into())));
    }
}
