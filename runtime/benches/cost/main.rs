//! `cargo xtask bench cost`: what a long session costs at the providers' prompt caches. The
//! session: a task, 40 `read_file` calls of about 6 KB each, then an answer, run through the
//! real binary against a loopback model server that records every request body. Each
//! provider's caching rule (`rules.rs`) prices the requests, against "uncached": the same
//! session with ageing off (`age_after = 0`) and no caching at all. A second session with a
//! smaller window compacts part-way; its summary requests show how much of them a prefix cache
//! serves. Ends with one line:
//! `BENCH cached_prefix_fraction=… openai_billed_over_uncached=… anthropic_billed_over_uncached=…
//! summary_cached_fraction=…`
//! (bars with the default settings: ≥ 0.9, ≤ 0.13, ≤ 0.14, ≥ 0.8).

#![allow(clippy::print_stdout, clippy::print_stderr)]

#[allow(dead_code)]
#[path = "../scale/loopback.rs"]
mod loopback;
mod rules;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use loopback::{Loopback, Reply, Wire};
use serde_json::Value;

#[path = "../common/paddock_bin.rs"]
mod paddock_bin;
const CALLS: usize = 40;
const FILE_BYTES: usize = 6_000;
/// How paddock's summary instruction on the session's prefix opens, and its own system
/// prompt for summaries in rounds.
const COMPACT_NOW: &str = "[paddock: this conversation is being compacted";
const COMPACT_SYSTEM: &str = "You summarize the earlier part";

/// The bodies one session sent, and which of them were summary requests.
struct Recorded {
    bodies: Vec<Value>,
    summaries: Vec<bool>,
}

fn is_summary(body: &Value) -> bool {
    let text = |m: Option<&Value>| {
        let Some(m) = m else {
            return String::new();
        };
        match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
            _ => String::new(),
        }
    };
    let messages = body["messages"].as_array();
    let last = text(messages.and_then(|m| m.last()));
    let first = text(messages.and_then(|m| m.first()));
    last.contains(COMPACT_NOW) || first.starts_with(COMPACT_SYSTEM)
}

/// Runs the session with `[model]` lines `extra`, speaking `wire`.
fn session(wire: Wire, extra: &str) -> Recorded {
    let recorded: Arc<Mutex<Vec<Value>>> = Arc::default();
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let keep = Arc::clone(&recorded);
    let server = Loopback::start_speaking(wire, move |_, body| {
        let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let summary = is_summary(&body);
        keep.lock().expect("recorded").push(body);
        if summary {
            return Reply::Text("Summary: the files f0 to f39 were read, one by one.".into());
        }
        let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if n < CALLS {
            let id = match wire {
                Wire::OpenAi => format!("call_{n}"),
                Wire::Anthropic => format!("toolu_{n}"),
            };
            Reply::Call(id, "read_file", format!(r#"{{"path":"f{n}.txt"}}"#))
        } else {
            Reply::Text("All forty files are read.".into())
        }
    });
    let work = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("tempdir");
    for n in 0..CALLS {
        let line = format!("line {n:>3} of a source file, as a project has them: let x = {n};\n");
        let text = line.repeat(FILE_BYTES / line.len() + 1);
        std::fs::write(work.path().join(format!("f{n}.txt")), &text[..FILE_BYTES]).expect("file");
    }
    let provider = match wire {
        Wire::OpenAi => "openai",
        Wire::Anthropic => "anthropic",
    };
    let base = match wire {
        Wire::OpenAi => server.base_url(),
        Wire::Anthropic => server.base_url().trim_end_matches("/v1").to_string(),
    };
    let preset = format!(
        "[model]\nprovider = \"{provider}\"\nmodel = \"bench\"\nbase_url = \"{base}\"\n{extra}\n\n\
         [limits]\nmax_turns = 1000\nmax_tokens = 100_000_000\n\n\
         [plugins.fs]\nsource = \"builtin:fs\"\n\
         mounts = [{{ host = \".\", guest = \"/workspace\", mode = \"ro\" }}]\n\n\
         [plugins.search]\nsource = \"builtin:search\"\n\
         mounts = [{{ host = \".\", guest = \"/workspace\", mode = \"ro\" }}]\n\n\
         [tools]\nenable = [\"read_file\", \"list_dir\", \"grep\", \"glob\"]\n"
    );
    std::fs::write(work.path().join("cost.toml"), preset).expect("preset");
    let status = paddock(
        home.path(),
        work.path(),
        &[
            "run",
            "--preset",
            "cost.toml",
            "Read f0.txt to f39.txt one by one, then say you are done.",
        ],
    )
    .status()
    .expect("run paddock");
    assert!(status.success(), "the {provider} session failed: {status}");
    let bodies = recorded.lock().expect("recorded").clone();
    let summaries = bodies.iter().map(is_summary).collect();
    Recorded { bodies, summaries }
}

fn paddock(home: &Path, cwd: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(paddock_bin::paddock_bin());
    cmd.args(args)
        .current_dir(cwd)
        .env("PADDOCK_HOME", home)
        .env("NO_COLOR", "1")
        .env_remove("PADDOCK_BASE_URL")
        .env_remove("PADDOCK_MODEL")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

fn openai_prompts(recorded: &Recorded) -> Vec<Vec<u8>> {
    recorded.bodies.iter().map(rules::openai_prompt).collect()
}

fn main() {
    // Uncached: ageing off, no breakpoints; every input token billed in full.
    let uncached_openai = session(Wire::OpenAi, "age_after = 0");
    let uncached_anthropic = session(Wire::Anthropic, "age_after = 0\ncache_ttl = \"off\"");
    let plain = |r: &Recorded| rules::openai(&openai_prompts(r)).0.input;
    let plain_anthropic: f64 = {
        let blocks: Vec<_> = uncached_anthropic
            .bodies
            .iter()
            .map(rules::anthropic_blocks)
            .collect();
        rules::anthropic(&blocks).input
    };

    let openai = session(Wire::OpenAi, "");
    let (openai_bill, _) = rules::openai(&openai_prompts(&openai));
    let anthropic = session(Wire::Anthropic, "");
    let blocks: Vec<_> = anthropic
        .bodies
        .iter()
        .map(rules::anthropic_blocks)
        .collect();
    let anthropic_bill = rules::anthropic(&blocks);
    let breakpoints = blocks
        .iter()
        .map(|b| b.iter().filter(|(_, marked)| *marked).count())
        .max()
        .unwrap_or(0);
    assert!(breakpoints <= 4, "{breakpoints} breakpoints in one request");

    // A window the session passes part-way: it compacts, and its summaries ask on its prefix.
    let compacting = session(Wire::OpenAi, "context_window = 40000");
    let (_, cached_each) = rules::openai(&openai_prompts(&compacting));
    let summary_cached: Vec<(f64, f64)> = cached_each
        .iter()
        .zip(&compacting.summaries)
        .filter(|(_, summary)| **summary)
        .map(|(each, _)| *each)
        .collect();
    assert!(
        !summary_cached.is_empty(),
        "the session with a 40k window compacted"
    );
    let summary_fraction = summary_cached.iter().map(|(_, c)| c).sum::<f64>()
        / summary_cached.iter().map(|(i, _)| i).sum::<f64>();

    let sent = |r: &Recorded| r.bodies.iter().map(|b| b.to_string().len()).sum::<usize>();
    println!(
        "requests: {} (OpenAI), {} (Anthropic); bytes sent: {} with defaults, {} with ageing off",
        openai.bodies.len(),
        anthropic.bodies.len(),
        sent(&openai),
        sent(&uncached_openai)
    );
    println!(
        "OpenAI rule: {:.0}k of {:.0}k input tokens cached, {:.0}k billed; uncached {:.0}k",
        openai_bill.read / 1e3,
        openai_bill.input / 1e3,
        openai_bill.billed / 1e3,
        plain(&uncached_openai) / 1e3
    );
    println!(
        "Anthropic rule: {:.0}k read, {:.0}k written of {:.0}k input, {:.0}k billed; uncached {:.0}k; \
         at most {breakpoints} breakpoints a request",
        anthropic_bill.read / 1e3,
        anthropic_bill.written / 1e3,
        anthropic_bill.input / 1e3,
        anthropic_bill.billed / 1e3,
        plain_anthropic / 1e3
    );
    println!(
        "summary requests: {} ({:?} of each cached)",
        summary_cached.len(),
        summary_cached
            .iter()
            .map(|(input, cached)| format!("{:.3}", cached / input))
            .collect::<Vec<_>>()
    );
    println!(
        "BENCH cached_prefix_fraction={:.3} openai_billed_over_uncached={:.3} \
         anthropic_billed_over_uncached={:.3} summary_cached_fraction={:.3}",
        openai_bill.read / openai_bill.input,
        openai_bill.billed / plain(&uncached_openai),
        anthropic_bill.billed / plain_anthropic,
        summary_fraction
    );
}
