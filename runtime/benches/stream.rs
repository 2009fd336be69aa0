//! `cargo xtask bench stream`: how fast the assemblers turn SSE into messages (M1, V2).
//!
//! Two numbers. `assemble_mb_s`: SSE bytes per second through the whole in-memory path (UTF-8
//! repair, `eventsource-stream` framing, JSON parsing, assembly), for a long response cut into
//! network-sized chunks; the lower of the OpenAI and Anthropic formats is reported. `finish_us`:
//! the median time from handing over the last chunk of a typical tool-calling response (the one
//! carrying the finish reason, usage and end marker) to the finished message, arguments parsed.
//! No HTTP here: the network path is exercised by the end-to-end tests.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use common::micros;

use anyhow::{Context, bail};
use bytes::Bytes;
use paddock::model::assembler::{AnthropicAssembler, OpenAiAssembler, WireAssembler};
use paddock::model::{AssistantMessage, AttemptId, replay};
use serde_json::json;
use std::cell::Cell;
use std::time::{Duration, Instant};

/// A typical TCP read from a streaming provider.
const NETWORK_CHUNK: usize = 1_460;

fn main() {
    if let Err(e) = run() {
        eprintln!("bench stream: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> anyhow::Result<()> {
    let openai_mb_s = throughput("openai", &openai_body(4_000, 3), openai)?;
    let anthropic_mb_s = throughput("anthropic", &anthropic_body(4_000, 3), anthropic)?;
    let finish_openai = finish_latency(&openai_body(40, 3), openai)?;
    let finish_anthropic = finish_latency(&anthropic_body(40, 3), anthropic)?;
    println!(
        "openai: {openai_mb_s:.1} MB/s, finish {:.1} µs; anthropic: {anthropic_mb_s:.1} MB/s, finish {:.1} µs",
        micros(finish_openai),
        micros(finish_anthropic)
    );
    println!(
        "BENCH assemble_mb_s={:.1} finish_us={:.1}",
        openai_mb_s.min(anthropic_mb_s),
        micros(finish_openai.max(finish_anthropic))
    );
    Ok(())
}

fn openai(attempt: AttemptId) -> OpenAiAssembler {
    OpenAiAssembler::new(attempt)
}

fn anthropic(attempt: AttemptId) -> AnthropicAssembler {
    AnthropicAssembler::new(attempt)
}

/// Text like a model writes: words, code, quotes and a little non-ASCII.
fn token(i: usize) -> String {
    const WORDS: [&str; 8] = [
        " the",
        " function",
        " returns",
        " `Result`",
        " \"path\"",
        " é",
        "\n",
        " {x}",
    ];
    WORDS[i % WORDS.len()].to_owned()
}

/// Arguments of a realistic edit: a path and a few KB of code, as JSON text.
fn arguments(n: usize) -> String {
    let code: String = (0..120)
        .map(|i| format!("    let v{i} = compute(\"{n}\", {i});\n"))
        .collect();
    json!({"path": format!("src/file_{n}.rs"), "content": code}).to_string()
}

/// Splits `text` into pieces of about `size` bytes on character boundaries.
fn pieces(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut from = 0;
    while from < text.len() {
        let mut to = (from + size).min(text.len());
        while !text.is_char_boundary(to) {
            to += 1;
        }
        out.push(&text[from..to]);
        from = to;
    }
    out
}

fn openai_body(tokens: usize, calls: usize) -> String {
    let mut out = String::new();
    let mut data = |v: serde_json::Value| out.push_str(&format!("data: {v}\n\n"));
    let chunk = |delta: serde_json::Value| {
        json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk",
        "created": 1_700_000_000, "model": "gpt-4.1-mini", "system_fingerprint": "fp_bench",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": null}]})
    };
    data(chunk(json!({"role": "assistant", "content": ""})));
    for i in 0..tokens {
        data(chunk(json!({"content": token(i)})));
    }
    for n in 0..calls {
        data(chunk(
            json!({"tool_calls": [{"index": n, "id": format!("call_{n}"), "type": "function",
            "function": {"name": "edit_file", "arguments": ""}}]}),
        ));
        for piece in pieces(&arguments(n), 12) {
            data(chunk(
                json!({"tool_calls": [{"index": n, "function": {"arguments": piece}}]}),
            ));
        }
    }
    data(
        json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "choices":
        [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    );
    data(
        json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": 1200, "completion_tokens": 900, "total_tokens": 2100}}),
    );
    out.push_str("data: [DONE]\n\n");
    out
}

fn anthropic_body(tokens: usize, calls: usize) -> String {
    let mut out = String::new();
    let mut event =
        |name: &str, v: serde_json::Value| out.push_str(&format!("event: {name}\ndata: {v}\n\n"));
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_bench", "type": "message",
        "role": "assistant", "content": [], "model": "claude-sonnet-4-5", "stop_reason": null,
        "stop_sequence": null, "usage": {"input_tokens": 1200, "output_tokens": 1}}}),
    );
    event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0,
        "content_block": {"type": "text", "text": ""}}),
    );
    for i in 0..tokens {
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": token(i)}}),
        );
    }
    event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    for n in 0..calls {
        let index = n + 1;
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": format!("toolu_{n}"), "name": "edit_file", "input": {}}}),
        );
        for piece in pieces(&arguments(n), 12) {
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece}}),
            );
        }
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use",
        "stop_sequence": null}, "usage": {"output_tokens": 900}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out
}

fn network_chunks(body: &str) -> Vec<Bytes> {
    body.as_bytes()
        .chunks(NETWORK_CHUNK)
        .map(Bytes::copy_from_slice)
        .collect()
}

fn check(message: &AssistantMessage, calls: usize) -> anyhow::Result<()> {
    if message.calls.len() != calls || message.calls.iter().any(|c| c.parsed.is_none()) {
        bail!("the benchmark stream did not assemble into {calls} parsed calls");
    }
    Ok(())
}

/// MB/s over the best of several runs of the whole body.
fn throughput<A: WireAssembler>(
    name: &str,
    body: &str,
    new: fn(AttemptId) -> A,
) -> anyhow::Result<f64> {
    let chunks = network_chunks(body);
    let mut best = Duration::MAX;
    for _ in 0..15 {
        let input = chunks.clone();
        let started = Instant::now();
        let message = replay(new(AttemptId("att_bench".into())), input)
            .with_context(|| format!("{name} stream"))?;
        best = best.min(started.elapsed());
        check(&message, 3)?;
    }
    Ok(body.len() as f64 / 1e6 / best.as_secs_f64())
}

/// The median time from handing over the last chunk to the finished message.
fn finish_latency<A: WireAssembler>(
    body: &str,
    new: fn(AttemptId) -> A,
) -> anyhow::Result<Duration> {
    // The last network read carries the last three events (finish reason, usage, end marker),
    // as a provider flushes them together.
    let ends: Vec<usize> = body.match_indices("\n\n").map(|(i, _)| i + 2).collect();
    let tail = ends.len().checked_sub(4).map_or(0, |i| ends[i]);
    let mut chunks = network_chunks(&body[..tail]);
    chunks.push(Bytes::copy_from_slice(&body.as_bytes()[tail..]));
    let mut samples = Vec::new();
    for _ in 0..301 {
        let last_handed = Cell::new(None);
        let count = chunks.len();
        let input = chunks.iter().cloned().enumerate().map(|(i, chunk)| {
            if i + 1 == count {
                last_handed.set(Some(Instant::now()));
            }
            chunk
        });
        let message = replay(new(AttemptId("att_bench".into())), input)?;
        let done = Instant::now();
        check(&message, 3)?;
        let handed = last_handed.get().context("the last chunk was read")?;
        samples.push(done - handed);
    }
    samples.sort_unstable();
    Ok(samples[samples.len() / 2])
}
