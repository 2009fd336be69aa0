//! A long session's events, generated with the log's own types: a task, then steps of one
//! model request (attempt start and end, the assistant message with one call and its usage),
//! the call queued, started and answered, and every `compact_every` steps a compaction (its
//! start, the summary request's attempt, the summary) keeping the last four steps. Turns of
//! 50 steps each end and the next starts with a follow-up message.

use paddock::log::{Body, CompactReason, Event, SessionStart, Source, StopReason};
use paddock::model::{AttemptStatus, Finish, Outcome, ToolCall, Usage};

/// The `session/start` of a generated session.
pub fn start(cwd: &str) -> Body {
    Body::SessionStart(Box::new(SessionStart {
        session: "long".into(),
        preset: "default".into(),
        preset_origin: "<embedded preset default>".into(),
        preset_text: String::new(),
        preset_from: None,
        preset_sha256: None,
        cwd: cwd.into(),
        plugins: Vec::new(),
        model: "scripted-demo".into(),
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

/// About `events` events (the last step is finished), each result `result_bytes` long.
pub fn events(events: usize, compact_every: usize, result_bytes: usize) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::with_capacity(events + 16);
    let push = |out: &mut Vec<Event>, body: Body| {
        let seq = out.len() as u64 + 1;
        out.push(Event {
            seq,
            ts_ms: 1_700_000_000_000 + seq,
            body,
        });
        seq
    };
    push(&mut out, start("/work"));
    let content = "a line of a result that a tool returned\n".repeat(result_bytes / 40 + 1);
    let mut assistants: Vec<u64> = Vec::new();
    let mut step = 0usize;
    while out.len() < events {
        if step.is_multiple_of(50) {
            if step > 0 {
                push(
                    &mut out,
                    Body::TurnEnd {
                        reason: StopReason::Completed,
                        detail: None,
                    },
                );
            }
            push(
                &mut out,
                Body::UserMessage {
                    images: Vec::new(),
                    text: format!("task {step}: go on with the work"),
                    source: Source::User,
                },
            );
            push(
                &mut out,
                Body::TurnStart {
                    turn: step as u64 / 50 + 1,
                },
            );
        }
        step += 1;
        let attempt = format!("att_{step:016x}");
        push(
            &mut out,
            Body::AttemptStart {
                attempt: attempt.clone(),
                number: 1,
            },
        );
        push(
            &mut out,
            Body::AttemptEnd {
                attempt: attempt.clone(),
                status: AttemptStatus::Completed,
                error: None,
                partial_text: None,
            },
        );
        let id = format!("call_{step}");
        let seq = push(
            &mut out,
            Body::AssistantMessage {
                reasoning: Vec::new(),
                attempt,
                text: "Reading the next file.".into(),
                tool_calls: vec![ToolCall {
                    id: id.clone(),
                    name: "read_file".into(),
                    arguments: format!(r#"{{"path":"src/file_{step}.rs"}}"#),
                }],
                finish: Finish::ToolCalls,
                outcome: Outcome::ToolCalls,
                usage: Some(Usage {
                    input_tokens: 1000,
                    output_tokens: 20,
                    ..Usage::default()
                }),
                cost_usd: None,
            },
        );
        assistants.push(seq);
        push(
            &mut out,
            Body::ToolCall {
                id: id.clone(),
                name: "read_file".into(),
                tool: Some("fs/read_file".into()),
                idempotent: true,
                touches: None,
            },
        );
        push(&mut out, Body::ToolStart { id: id.clone() });
        push(
            &mut out,
            Body::ToolResult {
                images: Vec::new(),
                id,
                content: content[..result_bytes].to_string(),
                is_error: false,
                code: None,
                args: None,
                repairs: Vec::new(),
                approval: None,
            },
        );
        if compact_every > 0 && step.is_multiple_of(compact_every) && assistants.len() > 4 {
            let upto = assistants[assistants.len() - 4] - 1;
            let id = format!("cmp_{step}");
            push(
                &mut out,
                Body::ContextCompact {
                    id: id.clone(),
                    upto,
                    reason: CompactReason::Threshold,
                    focus: None,
                    window: None,
                },
            );
            let attempt = format!("att_c{step:015x}");
            push(
                &mut out,
                Body::AttemptStart {
                    attempt: attempt.clone(),
                    number: 1,
                },
            );
            push(
                &mut out,
                Body::AttemptEnd {
                    attempt: attempt.clone(),
                    status: AttemptStatus::Completed,
                    error: None,
                    partial_text: None,
                },
            );
            push(
                &mut out,
                Body::ContextCompacted {
                    id,
                    upto,
                    summary: format!("Summary up to step {step}: files read, nothing changed yet."),
                    attempt,
                    rounds: 1,
                    usage: Some(Usage {
                        input_tokens: 3000,
                        output_tokens: 200,
                        ..Usage::default()
                    }),
                    cost_usd: None,
                },
            );
        }
    }
    out
}
