//! A session log as an ATIF-v1.8 trajectory (the Agent Trajectory Interchange Format that
//! evaluation harnesses read: Harbor, Docent, NeMo), for `paddock log SESSION --atif` and
//! `run --atif FILE`. A function of the events alone, like everything derived from the log (L1).
//!
//! The mapping: `session/start` gives the agent (paddock, its version, the model, the tools it
//! offered as `tool_definitions`) and a `system` step with the whole system prompt; each user
//! message, steering entry and follow-up taken into the history a `user` step (paddock's own
//! nudges a `system` step); each committed
//! assistant message an `agent` step with its text, its calls as the model named them, the
//! arguments each call ran with (after repairs and hooks; the model's raw text kept beside them
//! when it differs), the results of those calls as the same step's observation, and the
//! message's usage and cost; a completed compaction an `agent` step holding the summary (the
//! model wrote it, and its requests are spent like any other). The stop is the last
//! `turn/end`'s, at the root (`extra.stop_reason`, and in words in `notes`); a log that ends
//! without one (a crash, a kill) says so. A call that never got a result is given one that says
//! so, so every call pairs. The totals are the log's own (`Spent`), compactions included.
//!
//! A message's or result's images are image parts whose path is the image's blob in the
//! session's directory; an assistant message's streamed reasoning is its step's
//! `reasoning_content`.
//!
//! What it leaves out: failed attempts (their partial output is for display only), stream
//! anomalies, approvals beyond a result's `extra`, and inbox entries never taken into the
//! history. The types are in `atif_schema.rs`.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::atif_schema::{
    Agent, Content, FinalMetrics, ImageSource, Metrics, Observation, ObservationResult,
    SCHEMA_VERSION, Step, StepSource, SubagentTrajectoryRef, ToolCall, Trajectory,
};
use super::blobs::{BLOBS_DIR, Blobs};
use super::event::{Body, CompactReason, Event, Lane, SessionStart, Source, StopReason};
use super::read::{LogError, read_log};
use super::state::Spent;
use crate::model::{Finish, ImageRef, Outcome, Usage, reasoning_text};
use paddock_types::stamp::rfc3339_ms;

/// The trajectory of the session at `log` (its `events.jsonl`). A torn last line (a crash
/// mid-write) is left out and noted.
pub fn trajectory_of_log(log: &Path) -> Result<Trajectory, LogError> {
    let read = read_log(log)?;
    let mut trajectory = trajectory_with(&read.events, Some(Blobs::of_log(log)));
    if read.torn.is_some() {
        add_note(
            &mut trajectory,
            "The log's last line is torn (paddock stopped while writing it); it is left out.",
        );
    }
    embed_subagents(&mut trajectory, &read.events, log);
    Ok(trajectory)
}

/// Embeds the trajectory of every subagent the session's `subagent/end` events name (their
/// logs beside this one in the data directory, read the same way, theirs embedded in
/// turn), each with its session id as `trajectory_id`, which the `task` call's result
/// refers to. A subagent whose log cannot be read is noted and its reference dropped: a
/// reference must resolve.
fn embed_subagents(trajectory: &mut Trajectory, events: &[Event], log: &Path) {
    let sessions = log.parent().and_then(Path::parent);
    let mut embedded = Vec::new();
    let mut missing: Vec<(String, String)> = Vec::new();
    for event in events {
        let Body::SubagentEnd { session, .. } = &event.body else {
            continue;
        };
        let child_log = sessions.map(|dir| dir.join(session).join(super::LOG_FILE));
        match child_log.map(|path| trajectory_of_log(&path)) {
            Some(Ok(mut child)) => {
                child.trajectory_id = Some(session.clone());
                embedded.push(child);
            }
            Some(Err(e)) => missing.push((session.clone(), e.to_string())),
            None => missing.push((session.clone(), "no data directory".into())),
        }
    }
    if !missing.is_empty() {
        let gone = |r: &SubagentTrajectoryRef| {
            missing
                .iter()
                .any(|(session, _)| r.trajectory_id.as_deref() == Some(session.as_str()))
        };
        for step in &mut trajectory.steps {
            for result in step.observation.iter_mut().flat_map(|o| &mut o.results) {
                if let Some(refs) = &mut result.subagent_trajectory_ref {
                    refs.retain(|r| !gone(r));
                }
                if result
                    .subagent_trajectory_ref
                    .as_ref()
                    .is_some_and(Vec::is_empty)
                {
                    result.subagent_trajectory_ref = None;
                }
            }
        }
        let listed: Vec<String> = missing
            .iter()
            .map(|(session, why)| format!("{session} ({why})"))
            .collect();
        add_note(
            trajectory,
            &format!(
                "The trajectories of these subagents are left out, their logs unreadable: {}.",
                listed.join(", ")
            ),
        );
    }
    if !embedded.is_empty() {
        trajectory.subagent_trajectories = Some(embedded);
    }
}

/// Writes the trajectory of the session at `log` to `out` as one JSON document: beside it
/// first, then renamed, so a reader never sees half of one. Private (0600) like the log.
pub fn write_trajectory(log: &Path, out: &Path) -> Result<(), TrajectoryError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let trajectory = trajectory_of_log(log)?;
    let json = serde_json::to_vec_pretty(&trajectory).map_err(std::io::Error::other);
    let name = out
        .file_name()
        .map_or_else(|| "trajectory".into(), |n| n.to_string_lossy().into_owned());
    let aside = out.with_file_name(format!(".{name}.{}.new", std::process::id()));
    let written = json.and_then(|mut json| {
        json.push(b'\n');
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&aside)?;
        file.write_all(&json)?;
        file.sync_all()?;
        std::fs::rename(&aside, out)
    });
    written.map_err(|source| {
        let _ = std::fs::remove_file(&aside);
        TrajectoryError::Write {
            path: out.display().to_string(),
            source,
        }
    })
}

/// Why a trajectory could not be written.
#[derive(Debug, thiserror::Error)]
pub enum TrajectoryError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("cannot write the trajectory to {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

/// The trajectory of a session from its events, in file order; see the module doc. Never
/// empty: a log without a single event still gives one step that says so.
pub fn trajectory(events: &[Event]) -> Trajectory {
    trajectory_with(events, None)
}

/// `trajectory`, its images named by their paths in `blobs` (without it, relative to the
/// session's directory).
fn trajectory_with(events: &[Event], blobs: Option<Blobs>) -> Trajectory {
    let mut map = Mapping {
        blobs,
        ..Mapping::default()
    };
    for event in events {
        map.push(event);
    }
    map.finish(events)
}

/// What the walk over the events keeps.
#[derive(Default)]
struct Mapping {
    session: Option<String>,
    first_model: Option<String>,
    /// The model requests go to now (`session/model` moves it).
    model: Option<String>,
    preset: Option<String>,
    /// The tools the session offered the model, from its `session/start`.
    tools: Vec<crate::model::ToolDef>,
    steps: Vec<Step>,
    /// Each call's step and place in it, by id (the latest call of an id wins), and its
    /// argument text as the model sent it.
    calls: HashMap<String, (usize, usize, String)>,
    /// Calls whose tool entered the sandbox.
    started: std::collections::HashSet<String>,
    /// Inbox entries by id, until they are taken into the history.
    inbox: HashMap<String, (Source, Lane, String)>,
    /// Compactions begun, by id: why.
    compacting: HashMap<String, (CompactReason, Option<String>)>,
    /// Subagents that ended, by the id of the `task` call that started them.
    subagents: HashMap<String, SubagentTrajectoryRef>,
    turns: u64,
    /// The last `turn/end`, and whether a turn started after it.
    stop: Option<(StopReason, Option<String>)>,
    turn_open: bool,
    /// Results whose call is in no assistant message.
    unpaired_results: u64,
    /// Where the images the events name are.
    blobs: Option<Blobs>,
}

impl Mapping {
    /// Takes one event into the mapping. A table, one arm per event kind: an arm that does
    /// more than keep a value is a method below.
    fn push(&mut self, event: &Event) {
        let at = Some(rfc3339_ms(event.ts_ms));
        match &event.body {
            Body::SessionStart(start) => self.session_start(at, start),
            Body::UserMessage {
                text,
                source,
                images,
            } => {
                let message = Content::with_images(text.clone(), self.image_sources(images));
                self.step(at, step_source(*source), message, None);
            }
            Body::InboxIn {
                id,
                source,
                lane,
                text,
            } => {
                self.inbox
                    .insert(id.clone(), (*source, *lane, text.clone()));
            }
            Body::InboxTake { id } => self.inbox_take(at, id),
            Body::AssistantMessage {
                attempt,
                text,
                tool_calls,
                finish,
                outcome,
                usage,
                cost_usd,
                reasoning,
            } => {
                let calls = self.model_calls(tool_calls);
                let extra = message_extra(attempt, finish, outcome);
                let step = self.agent_step(at, text.clone(), extra, usage.as_ref(), *cost_usd, 1);
                step.tool_calls = (!calls.is_empty()).then_some(calls);
                step.reasoning_content = Some(reasoning_text(reasoning)).filter(|t| !t.is_empty());
            }
            Body::ToolCall { id, name, tool, .. } => {
                if let Some(tool) = tool.as_ref().filter(|t| *t != name)
                    && let Some(call) = self.call_mut(id)
                {
                    extra_of(&mut call.extra).insert("tool".into(), json!(tool));
                }
            }
            Body::ToolStart { id } => {
                self.started.insert(id.clone());
            }
            Body::ToolResult {
                id,
                content,
                is_error,
                code,
                args,
                repairs,
                approval,
                images,
            } => {
                let content = Content::with_images(content.clone(), self.image_sources(images));
                self.result(
                    at,
                    id,
                    content,
                    *is_error,
                    code.as_deref(),
                    args.as_ref(),
                    repairs,
                    approval.as_ref(),
                );
            }
            Body::ContextCompact {
                id, reason, focus, ..
            } => {
                self.compacting.insert(id.clone(), (*reason, focus.clone()));
            }
            Body::ContextCompacted {
                id,
                upto,
                summary,
                rounds,
                usage,
                cost_usd,
                ..
            } => {
                let extra = object([("compaction", self.compaction(id, *upto))]);
                let requests = u64::from(*rounds);
                self.agent_step(
                    at,
                    summary.clone(),
                    extra,
                    usage.as_ref(),
                    *cost_usd,
                    requests,
                );
            }
            Body::SessionModel { model, .. } => self.model = Some(model.clone()),
            Body::TurnStart { turn } => {
                self.turns = self.turns.max(*turn);
                self.turn_open = true;
            }
            Body::TurnEnd { reason, detail } => {
                self.stop = Some((*reason, detail.clone()));
                self.turn_open = false;
            }
            Body::ConversationRewind { turn, from } => {
                let rewind = json!({ "turn": turn, "from_seq": from });
                let text = format!(
                    "The conversation went back to where it stood when turn {turn} began: the \
                     steps from event {from} on are no longer part of it, and what follows goes \
                     on from there."
                );
                self.step(
                    at,
                    StepSource::System,
                    text,
                    Some(object([("rewind", rewind)])),
                );
            }
            Body::AttemptStart { .. }
            | Body::AttemptEnd { .. }
            | Body::StreamAnomaly { .. }
            | Body::Checkpoint { .. }
            | Body::Rewind { .. } => {}
            Body::SubagentEnd {
                call,
                session,
                reason,
                spent,
            } => {
                let extra = object([
                    ("stop_reason", json!(reason.as_str())),
                    ("spent", json!(spent)),
                ]);
                self.subagents.insert(
                    call.clone(),
                    SubagentTrajectoryRef {
                        trajectory_id: Some(session.clone()),
                        session_id: Some(session.clone()),
                        trajectory_path: None,
                        extra: Some(extra),
                    },
                );
            }
        }
    }

    /// Where each image is, for the trajectory's image parts.
    fn image_sources(&self, images: &[ImageRef]) -> Vec<ImageSource> {
        images
            .iter()
            .map(|image| ImageSource {
                media_type: image.media_type.clone(),
                path: match &self.blobs {
                    Some(blobs) => blobs.path(&image.sha256).display().to_string(),
                    None => format!("{BLOBS_DIR}/{}", image.sha256),
                },
            })
            .collect()
    }

    /// The session, its first model and preset, and the system prompt as a step of its own.
    fn session_start(&mut self, at: Option<String>, start: &SessionStart) {
        self.session = Some(start.session.clone());
        self.first_model = Some(start.model.clone());
        self.model = Some(start.model.clone());
        self.preset = Some(start.preset.clone());
        self.tools = start.tools.clone();
        if !start.system.is_empty() {
            self.step(at, StepSource::System, start.system.clone(), None);
        }
    }

    /// An inbox entry taken into the history is a step; one never taken leaves none.
    fn inbox_take(&mut self, at: Option<String>, id: &str) {
        if let Some((source, lane, text)) = self.inbox.remove(id) {
            let lane = serde_json::to_value(lane).unwrap_or(Value::Null);
            let extra = object([("lane", lane), ("inbox_id", json!(id))]);
            self.step(at, step_source(source), text, Some(extra));
        }
    }

    /// An assistant message's calls as the model named them, each remembered by id with its
    /// place on the step about to be appended.
    fn model_calls(&mut self, tool_calls: &[crate::model::ToolCall]) -> Vec<ToolCall> {
        let index = self.steps.len();
        tool_calls
            .iter()
            .enumerate()
            .map(|(place, call)| {
                let raw = call.arguments.clone();
                self.calls.insert(call.id.clone(), (index, place, raw));
                model_call(call)
            })
            .collect()
    }

    /// A completed compaction's `extra.compaction`: what it summarized, and why, from its start.
    fn compaction(&mut self, id: &str, upto: u64) -> Value {
        let mut compaction = object([("upto_seq", json!(upto))]);
        if let Some((reason, focus)) = self.compacting.remove(id) {
            compaction.insert("reason".into(), json!(reason.as_str()));
            if let Some(focus) = focus {
                compaction.insert("focus".into(), json!(focus));
            }
        }
        Value::Object(compaction)
    }

    /// Appends a step the model wrote in `requests` requests, with the model requests go to
    /// now and the usage and cost they were charged.
    fn agent_step(
        &mut self,
        at: Option<String>,
        message: impl Into<Content>,
        extra: Map<String, Value>,
        usage: Option<&Usage>,
        cost_usd: Option<f64>,
        requests: u64,
    ) -> &mut Step {
        let model_name = self.model.clone();
        let step = self.step(at, StepSource::Agent, message.into(), Some(extra));
        step.model_name = model_name;
        step.metrics = metrics(usage, cost_usd);
        step.llm_call_count = Some(requests);
        step
    }

    /// Appends a step numbered after the last one and returns it.
    fn step(
        &mut self,
        timestamp: Option<String>,
        source: StepSource,
        message: impl Into<Content>,
        extra: Option<Map<String, Value>>,
    ) -> &mut Step {
        self.steps.push(Step {
            step_id: self.steps.len() as u64 + 1,
            timestamp,
            source,
            model_name: None,
            message: message.into(),
            reasoning_content: None,
            tool_calls: None,
            observation: None,
            metrics: None,
            llm_call_count: None,
            extra,
        });
        let last = self.steps.len() - 1;
        &mut self.steps[last]
    }

    fn call_mut(&mut self, id: &str) -> Option<&mut ToolCall> {
        let &(step, place, _) = self.calls.get(id)?;
        self.steps[step].tool_calls.as_mut()?.get_mut(place)
    }

    /// A result goes on the step of its call, with the arguments the tool ran with.
    #[allow(clippy::too_many_arguments)]
    fn result(
        &mut self,
        at: Option<String>,
        id: &str,
        content: Content,
        is_error: bool,
        code: Option<&str>,
        args: Option<&Value>,
        repairs: &[super::LoggedRepair],
        approval: Option<&super::Asked>,
    ) {
        let mut extra = object([("is_error", json!(is_error))]);
        if let Some(code) = code {
            extra.insert("code".into(), json!(code));
        }
        if let Some(approval) = approval {
            extra.insert("approval".into(), json!(approval.as_text()));
        }
        let result = ObservationResult {
            source_call_id: Some(id.to_string()),
            content: Some(content),
            subagent_trajectory_ref: self.subagents.get(id).map(|r| vec![r.clone()]),
            extra: Some(extra),
        };
        let Some((step, _, raw)) = self.calls.get(id).cloned() else {
            // A result for a call no assistant message made: kept on a step of its own,
            // without a call id to pair (the schema pairs ids within a step).
            self.unpaired_results += 1;
            let mut orphan = result;
            if let (Some(extra), Some(id)) = (orphan.extra.as_mut(), orphan.source_call_id.take()) {
                extra.insert("call_id".into(), json!(id));
            }
            let message = format!("A result for call {id}, which no assistant message made.");
            self.step(at, StepSource::System, message, None).observation = Some(Observation {
                results: vec![orphan],
            });
            return;
        };
        if let Some(call) = self.call_mut(id) {
            ran_with(call, &raw, args, repairs);
        }
        let step = &mut self.steps[step];
        let observation = step.observation.get_or_insert(Observation {
            results: Vec::new(),
        });
        // A second result for one id replaces the first (recovery settles a call once; this
        // only keeps the pairing one to one if a log ever says otherwise).
        observation
            .results
            .retain(|r| r.source_call_id.as_deref() != Some(id));
        observation.results.push(result);
    }

    /// Gives every call without a result one that says why, then builds the trajectory.
    fn finish(mut self, events: &[Event]) -> Trajectory {
        let mut unanswered = 0;
        for step in &mut self.steps {
            let Some(calls) = &step.tool_calls else {
                continue;
            };
            let answered: Vec<String> = step
                .observation
                .iter()
                .flat_map(|o| &o.results)
                .filter_map(|r| r.source_call_id.clone())
                .collect();
            let missing: Vec<ObservationResult> = calls
                .iter()
                .filter(|c| !answered.contains(&c.tool_call_id))
                .map(|call| {
                    let started = self.started.contains(&call.tool_call_id);
                    no_result(&call.tool_call_id, started)
                })
                .collect();
            if missing.is_empty() {
                continue;
            }
            unanswered += missing.len();
            step.observation
                .get_or_insert(Observation {
                    results: Vec::new(),
                })
                .results
                .extend(missing);
        }
        if self.steps.is_empty() {
            self.step(
                events.first().map(|e| rfc3339_ms(e.ts_ms)),
                StepSource::System,
                "The session log holds no message.".to_string(),
                None,
            );
        }

        let (stop_reason, notes) = self.stop_in_words();
        let mut notes = vec![notes];
        if unanswered > 0 {
            notes.push(format!(
                "{unanswered} call(s) have no result in the log; each is given one that says so."
            ));
        }
        if self.unpaired_results > 0 {
            notes.push(format!(
                "{} result(s) belong to no call of an assistant message; each is on a system \
                 step of its own.",
                self.unpaired_results
            ));
        }
        let mut root = object([("stop_reason", stop_reason), ("turns", json!(self.turns))]);
        if let Some((_, Some(detail))) = &self.stop
            && !self.turn_open
        {
            root.insert("stop_detail".into(), json!(detail));
        }
        if self.stop.is_none() || self.turn_open {
            root.insert("log_ends_without_stop".into(), json!(true));
        }

        let tally = Spent::of(events, 0);
        let priced = self
            .steps
            .iter()
            .any(|s| s.metrics.as_ref().is_some_and(|m| m.cost_usd.is_some()));
        let final_metrics = FinalMetrics {
            total_prompt_tokens: Some(tally.input_tokens),
            total_completion_tokens: Some(tally.tokens - tally.input_tokens),
            total_cached_tokens: Some(tally.cache_read_tokens),
            // The schema's total includes subagents' cost.
            total_cost_usd: priced.then_some(tally.charged_cost()),
            total_steps: Some(self.steps.len() as u64),
            extra: Some(object([
                ("cache_write_tokens", json!(tally.cache_write_tokens)),
                ("model_requests", json!(tally.model_requests)),
                ("tool_calls", json!(tally.tool_calls)),
                ("subagents_spent", json!(tally.children)),
            ])),
        };
        let agent_extra = self.preset.as_ref().map(|p| object([("preset", json!(p))]));
        Trajectory {
            schema_version: SCHEMA_VERSION.into(),
            session_id: self.session,
            trajectory_id: None,
            subagent_trajectories: None,
            agent: Agent {
                name: "paddock".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                model_name: self.first_model,
                tool_definitions: tool_definitions(&self.tools),
                extra: agent_extra,
            },
            steps: self.steps,
            notes: Some(notes.join(" ")),
            final_metrics: Some(final_metrics),
            extra: Some(root),
        }
    }

    /// The stop as a value for `extra.stop_reason` (null when the log ends without one) and as
    /// a sentence.
    fn stop_in_words(&self) -> (Value, String) {
        match (&self.stop, self.turn_open) {
            (Some((reason, detail)), false) => {
                let detail = detail
                    .as_deref()
                    .map_or(String::new(), |d| format!(" ({d})"));
                (
                    json!(reason.as_str()),
                    format!(
                        "The session stopped: {}{detail}. {}",
                        reason.as_str(),
                        meaning(*reason)
                    ),
                )
            }
            _ if self.turns == 0 => (
                Value::Null,
                "The log ends without a stop: no turn started (paddock stopped before \
                 the first model request)."
                    .into(),
            ),
            _ => (
                Value::Null,
                format!(
                    "The log ends without a stop: turn {} has no turn/end (paddock was killed \
                     or crashed during it); `paddock resume {}` recovers and continues it.",
                    self.turns,
                    self.session.as_deref().unwrap_or("SESSION"),
                ),
            ),
        }
    }
}

/// The offered tools in OpenAI's function-calling shape, as ATIF's `agent.tool_definitions`
/// has them; none when the log names none (a log written before `session/start` kept them).
fn tool_definitions(tools: &[crate::model::ToolDef]) -> Option<Vec<Value>> {
    let definitions: Vec<Value> = tools
        .iter()
        .map(|tool| {
            json!({"type": "function", "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            }})
        })
        .collect();
    (!definitions.is_empty()).then_some(definitions)
}

/// An assistant message's step's `extra`: its attempt, and how its stream finished and was
/// taken.
fn message_extra(attempt: &str, finish: &Finish, outcome: &Outcome) -> Map<String, Value> {
    object([
        ("attempt", json!(attempt)),
        (
            "finish",
            serde_json::to_value(finish).unwrap_or(Value::Null),
        ),
        (
            "outcome",
            serde_json::to_value(outcome).unwrap_or(Value::Null),
        ),
    ])
}

/// What a stop reason means, in a sentence.
fn meaning(reason: StopReason) -> &'static str {
    match reason {
        StopReason::Completed => "The model answered without a call: the task is done.",
        StopReason::MaxTurns => "The turn budget ran out before the model was done.",
        StopReason::TokenBudget => "The token budget ran out before the model was done.",
        StopReason::TimeBudget => "The time budget ran out before the model was done.",
        StopReason::CostBudget => "The cost budget ran out before the model was done.",
        StopReason::Interrupted => "It was interrupted before the model was done.",
        StopReason::Truncated => "The model's answer was cut by its output limit.",
        StopReason::DroppedToolCall => "The model kept announcing a call it never sent.",
        StopReason::Denied => "A call was declined; the session waits for the user.",
        StopReason::ModelError => "The model provider failed, refused or filtered the answer.",
        StopReason::ProtocolError => "The provider's stream could not be understood.",
        StopReason::HostError => "paddock itself failed (not the model's doing).",
        StopReason::Terminated => "A signal (SIGTERM, SIGHUP) ended it before the model was done.",
        StopReason::ApprovalRequired => {
            "A call needed approval no one could give, and the session was told to stop."
        }
    }
}

fn step_source(source: Source) -> StepSource {
    match source {
        Source::User => StepSource::User,
        Source::System => StepSource::System,
    }
}

/// A call as the model sent it: its arguments if they are a JSON object, else `{}` with the
/// raw text kept (a later result may say what the tool really ran with).
fn model_call(call: &crate::model::ToolCall) -> ToolCall {
    let (arguments, extra) = match serde_json::from_str::<Value>(&call.arguments) {
        Ok(Value::Object(arguments)) => (arguments, None),
        _ => (
            Map::new(),
            Some(object([("raw_arguments", json!(call.arguments))])),
        ),
    };
    ToolCall {
        tool_call_id: call.id.clone(),
        function_name: call.name.clone(),
        arguments,
        extra,
    }
}

/// Sets a call's arguments to those the tool ran with; the model's own text stays under
/// `extra.raw_arguments` when it was not that same object, and the repairs under `extra.repairs`.
fn ran_with(call: &mut ToolCall, raw: &str, args: Option<&Value>, repairs: &[super::LoggedRepair]) {
    if let Some(Value::Object(ran)) = args
        && *ran != call.arguments
    {
        call.arguments = ran.clone();
        extra_of(&mut call.extra).insert("raw_arguments".into(), json!(raw));
    }
    if !repairs.is_empty() {
        extra_of(&mut call.extra).insert("repairs".into(), json!(repairs));
    }
}

/// The result of a call the log has none for.
fn no_result(id: &str, started: bool) -> ObservationResult {
    let (status, content) = if started {
        (
            "outcome_unknown",
            "No result: the tool started, but the log ends before it finished, so its \
             outcome is unknown.",
        )
    } else {
        (
            "not_run",
            "No result: the log ends before this call started; it did not run.",
        )
    };
    ObservationResult {
        source_call_id: Some(id.to_string()),
        content: Some(Content::Text(content.into())),
        subagent_trajectory_ref: None,
        extra: Some(object([("status", json!(status))])),
    }
}

/// A step's metrics from a message's usage: `prompt_tokens` is all of the input (paddock's
/// `input_tokens` already counts what was read from and written to a prompt cache).
fn metrics(usage: Option<&Usage>, cost_usd: Option<f64>) -> Option<Metrics> {
    if usage.is_none() && cost_usd.is_none() {
        return None;
    }
    let mut metrics = Metrics {
        cost_usd,
        ..Metrics::default()
    };
    if let Some(usage) = usage {
        metrics.prompt_tokens = Some(usage.input_tokens);
        metrics.completion_tokens = Some(usage.output_tokens);
        metrics.cached_tokens = Some(usage.cache_read_tokens);
        metrics.extra = Some(object([(
            "cache_write_tokens",
            json!(usage.cache_write_tokens),
        )]));
    }
    Some(metrics)
}

fn add_note(trajectory: &mut Trajectory, note: &str) {
    trajectory.notes = Some(match trajectory.notes.take() {
        Some(notes) => format!("{notes} {note}"),
        None => note.to_string(),
    });
}

fn object<const N: usize>(entries: [(&str, Value); N]) -> Map<String, Value> {
    entries
        .into_iter()
        .map(|(key, value)| (key.to_string(), value))
        .collect()
}

fn extra_of(extra: &mut Option<Map<String, Value>>) -> &mut Map<String, Value> {
    extra.get_or_insert_with(Map::new)
}

#[cfg(test)]
#[path = "atif_tests.rs"]
mod tests;
