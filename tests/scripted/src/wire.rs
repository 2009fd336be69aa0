//! Renders a scripted turn as the SSE frames a real provider would send, modelled by hand on
//! the published references: OpenAI Chat Completions chunks (`chat.completion.chunk`, a usage
//! chunk with `choices: []`, `[DONE]`) and Anthropic Messages events (`message_start`,
//! `content_block_*`, `ping`, `message_delta`, `message_stop`). One frame per chunk.
//! Reasoning: `reasoning_content` deltas (DeepSeek, vLLM), and Anthropic thinking blocks with
//! `thinking_delta`, `signature_delta`, and `redacted_thinking`.

use super::script::{ScriptFinish, Turn};
use serde_json::{Value, json};

fn openai_finish(finish: &ScriptFinish) -> String {
    match finish {
        ScriptFinish::Stop | ScriptFinish::Refusal => "stop",
        ScriptFinish::ToolCalls => "tool_calls",
        ScriptFinish::Length => "length",
        ScriptFinish::ContentFilter => "content_filter",
        ScriptFinish::Raw(raw) => raw,
    }
    .to_owned()
}

fn anthropic_finish(finish: &ScriptFinish) -> String {
    match finish {
        ScriptFinish::Stop => "end_turn",
        ScriptFinish::ToolCalls => "tool_use",
        ScriptFinish::Length => "max_tokens",
        ScriptFinish::ContentFilter | ScriptFinish::Refusal => "refusal",
        ScriptFinish::Raw(raw) => raw,
    }
    .to_owned()
}

/// Puts the turn's garbage lines after the first frame and drops the end marker if asked.
fn finish_frames(turn: &Turn, mut frames: Vec<String>, end: String) -> Vec<String> {
    if !turn.omit_end {
        frames.push(end);
    }
    let at = frames.len().min(1);
    for (i, line) in turn.garbage.iter().enumerate() {
        frames.insert(at + i, format!("{line}\n\n"));
    }
    frames
}

pub fn openai_frames(turn: &Turn, model: &str) -> Vec<String> {
    if let Some(raw) = &turn.raw {
        return raw.clone();
    }
    let chunk = |choices: Value| {
        let v = json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk",
            "created": 1_700_000_000, "model": model, "choices": choices});
        format!("data: {v}\n\n")
    };
    let delta = |delta: Value| chunk(json!([{"index": 0, "delta": delta, "finish_reason": null}]));
    let mut frames = vec![delta(json!({"role": "assistant", "content": ""}))];
    for piece in &turn.reasoning {
        frames.push(delta(json!({"reasoning_content": piece})));
    }
    for piece in &turn.text {
        if turn.finish == Some(ScriptFinish::Refusal) {
            frames.push(delta(json!({"refusal": piece})));
        } else {
            frames.push(delta(json!({"content": piece})));
        }
    }
    for (index, call) in turn.calls.iter().enumerate() {
        for (n, piece) in call.pieces().into_iter().enumerate() {
            let mut tool = json!({"index": index, "function": {"arguments": piece}});
            if n == 0 {
                tool["type"] = json!("function");
                tool["function"]["name"] = json!(call.name);
                if let Some(id) = &call.id {
                    tool["id"] = json!(id);
                }
            }
            frames.push(delta(json!({"tool_calls": [tool]})));
        }
    }
    if let Some(finish) = &turn.finish {
        frames.push(chunk(
            json!([{"index": 0, "delta": {}, "finish_reason": openai_finish(finish)}]),
        ));
    }
    if let Some(usage) = turn.usage {
        let v = json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk",
            "created": 1_700_000_000, "model": model, "choices": [],
            "usage": {"prompt_tokens": usage.input, "completion_tokens": usage.output,
                      "total_tokens": usage.input + usage.output}});
        frames.push(format!("data: {v}\n\n"));
    }
    finish_frames(turn, frames, "data: [DONE]\n\n".to_owned())
}

pub fn anthropic_frames(turn: &Turn, model: &str) -> Vec<String> {
    if let Some(raw) = &turn.raw {
        return raw.clone();
    }
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let usage = turn.usage;
    let mut frames = vec![event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_scripted", "type": "message",
            "role": "assistant", "content": [], "model": model, "stop_reason": null,
            "stop_sequence": null,
            "usage": {"input_tokens": usage.map_or(0, |u| u.input), "output_tokens": 1}}}),
    )];
    let mut index = 0;
    if !turn.reasoning.is_empty() {
        frames.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ));
        for piece in &turn.reasoning {
            frames.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "thinking_delta", "thinking": piece}}),
            ));
        }
        if let Some(signature) = &turn.signature {
            frames.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "signature_delta", "signature": signature}}),
            ));
        }
        frames.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    if let Some(data) = &turn.redacted {
        frames.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "redacted_thinking", "data": data}}),
        ));
        frames.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    if !turn.text.is_empty() {
        frames.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "text", "text": ""}}),
        ));
        frames.push(event("ping", json!({"type": "ping"})));
        for piece in &turn.text {
            frames.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "text_delta", "text": piece}}),
            ));
        }
        frames.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for call in &turn.calls {
        let mut block = json!({"type": "tool_use", "name": call.name, "input": {}});
        if let Some(id) = &call.id {
            block["id"] = json!(id);
        }
        frames.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": block}),
        ));
        for piece in call.pieces() {
            frames.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece}}),
            ));
        }
        frames.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    let mut message_delta = json!({"type": "message_delta",
        "delta": {"stop_reason": null, "stop_sequence": null},
        "usage": {"output_tokens": usage.map_or(0, |u| u.output)}});
    if let Some(finish) = &turn.finish {
        message_delta["delta"]["stop_reason"] = json!(anthropic_finish(finish));
    }
    frames.push(event("message_delta", message_delta));
    let end = event("message_stop", json!({"type": "message_stop"}));
    finish_frames(turn, frames, end)
}
