//! `cargo xtask bench agent`: what the agent loop adds around the model and the tools, in one
//! run.
//!
//! - per-turn overhead: turns of one trivial `echo` call through the whole loop (history
//!   derived from the log, attempt and message events, the call queued and synced, its start
//!   synced, its result logged) against the same scripted model answers and the same calls
//!   made directly;
//! - what one synced log append costs on this disk (the loop pays two per call, one per batch);
//! - eight 20 ms read-only calls in one turn: the turn's wall time against 20 ms, to show the
//!   per-call start syncs do not serialize a parallel batch away.
//!
//! - deriving the history of a 10k-event session with compactions: every line
//!   parsed and taken into the session state, then the request's history rendered, as
//!   `resume` does.
//!
//! Ends with one line:
//! `BENCH turn_overhead_us=… fsync_us=… parallel_turn_ms=… derive_ms_10k=…` (bar: ≤ 50 ms).

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;
#[path = "common/long_session.rs"]
mod long_session;

use common::{micros, percentile};

use std::time::{Duration, Instant};

use paddock::agent::scripted::{Reply, ScriptedProvider};
use paddock::agent::{Agent, Quiet};
use paddock::calls::AliasTable;
use paddock::log::{Body, LogWriter, SessionLog, Source};
use paddock::model::{EventSink, ModelRequest, Provider};
use paddock::preset::LoopBudgets;
use paddock_sandbox::Sandbox;
use tokio_util::sync::CancellationToken;

/// The bench plugin, read-only on the work directory.
const PLUGINS: &str = r#"
[plugins.bench]
source = "{bench}"
mounts = [{ host = ".", guest = "/workspace", mode = "ro" }]
"#;

fn main() {
    common::block_on(run());
}

fn replies(turns: usize, call: (&str, &str), per_turn: usize) -> Vec<Reply> {
    let calls: Vec<(&str, &str)> = std::iter::repeat_n(call, per_turn).collect();
    let mut replies: Vec<Reply> = (0..turns).map(|_| Reply::new("", &calls)).collect();
    replies.push(Reply::new("done", &[]));
    replies
}

async fn run() {
    let work = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("tempdir");
    let sandbox = Sandbox::new(home.path().join("cache")).expect("sandbox");
    let registry = common::registry(&sandbox, work.path(), home.path(), PLUGINS).await;
    let aliases = AliasTable::default();
    let budgets = LoopBudgets {
        max_turns: 10_000,
        max_tokens: u64::MAX,
        max_wall_secs: 3600,
        max_cost_usd: f64::MAX,
        max_parallel_tool_calls: 8,
        max_subagents: 2,
        max_depth: 1,
        wrap_up: false,
    };
    let context = || common::open_context(&sandbox, &registry, &aliases);
    let echo = ("echo", r#"{"text":"hi"}"#);
    let mut session = 0;
    // One turn of `turns` model requests through the loop; returns its wall time.
    let mut through_loop = async |provider: ScriptedProvider| {
        session += 1;
        let path = home.path().join(format!("s{session}/events.jsonl"));
        let log = SessionLog::new(LogWriter::create(&path).expect("log"), Vec::new());
        let agent = Agent {
            terminated: None,
            checkpoints: None,
            provider: &provider,
            calls: context(),
            max_parallel: 8,
            tools: Vec::new(),
            system: "bench".into(),
            budgets: budgets.clone(),
            log: &log,
            inbox: None,
            observer: &Quiet,
        };
        let started = Instant::now();
        let end = agent.send("go").await;
        let elapsed = started.elapsed();
        assert_eq!(end.reason, paddock::log::StopReason::Completed, "{end:?}");
        elapsed
    };

    // 1. Per-turn overhead, over rounds so that a noisy stretch hits all three alike.
    let turns = 50;
    let (mut looped, mut model_only, mut calls_only) = (Vec::new(), Vec::new(), Vec::new());
    let echo_entry = registry.get("echo").expect("echo");
    let cancel = CancellationToken::new();
    for _ in 0..12 {
        looped.push(
            through_loop(ScriptedProvider::new(replies(turns, echo, 1))).await / turns as u32,
        );
        let provider = ScriptedProvider::new(replies(turns, echo, 1));
        let request = ModelRequest::default();
        let started = Instant::now();
        for _ in 0..=turns {
            provider
                .complete(&request, &EventSink::none(), &cancel)
                .await
                .expect("scripted reply");
        }
        model_only.push(started.elapsed() / turns as u32);
        let started = Instant::now();
        for _ in 0..turns {
            let report = sandbox
                .call(
                    echo_entry.plugin().expect("a plugin tool"),
                    "echo",
                    echo.1,
                    &echo_entry.grant,
                    &cancel,
                )
                .await;
            assert!(report.result.is_ok());
        }
        calls_only.push(started.elapsed() / turns as u32);
    }
    let (looped, model_only, calls_only) = (
        percentile(&mut looped, 0.5),
        percentile(&mut model_only, 0.5),
        percentile(&mut calls_only, 0.5),
    );
    let overhead = looped.saturating_sub(model_only + calls_only);
    println!(
        "per turn: loop {:.1} us = scripted model {:.1} us + echo call {:.1} us + loop overhead {:.1} us",
        micros(looped),
        micros(model_only),
        micros(calls_only),
        micros(overhead)
    );

    // 2. One synced append.
    let mut writer = LogWriter::create(&home.path().join("fsync/events.jsonl")).expect("log");
    let mut syncs = Vec::new();
    for i in 0..200 {
        let started = Instant::now();
        writer
            .append(Body::UserMessage {
                images: Vec::new(),
                text: format!("line {i}"),
                source: Source::User,
            })
            .expect("append");
        writer.sync().expect("sync");
        syncs.push(started.elapsed());
    }
    let fsync = percentile(&mut syncs, 0.5);
    println!("synced append: p50 {:.1} us", micros(fsync));

    // 3. Eight 20 ms calls in one turn.
    let mut best = Duration::MAX;
    for _ in 0..5 {
        let wall = through_loop(ScriptedProvider::new(replies(
            1,
            ("nap", r#"{"ms": 20}"#),
            8,
        )))
        .await;
        best = best.min(wall);
    }
    println!(
        "one turn of 8 x nap 20 ms (plus the closing answer): {:.1} ms",
        best.as_secs_f64() * 1e3
    );
    // 4. The history of a 10k-event session with compactions, derived from its events.
    let events = long_session::events(10_000, 40, 400);
    let lines: Vec<String> = events
        .iter()
        .map(|e| serde_json::to_string(e).expect("event"))
        .collect();
    let mut derive = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let mut state = paddock::log::SessionState::default();
        for line in &lines {
            state.push(&serde_json::from_str(line).expect("event"));
        }
        let rendered = state.history.render(None);
        derive.push(started.elapsed());
        assert!(rendered.len() > 4 && rendered.len() < 400);
    }
    let derive = percentile(&mut derive, 0.5);
    println!(
        "parse and derive the history of {} events ({} compactions): {:.2} ms",
        events.len(),
        events
            .iter()
            .filter(|e| matches!(e.body, Body::ContextCompacted { .. }))
            .count(),
        derive.as_secs_f64() * 1e3
    );
    println!(
        "BENCH turn_overhead_us={:.1} fsync_us={:.1} parallel_turn_ms={:.1} derive_ms_10k={:.2}",
        micros(overhead),
        micros(fsync),
        best.as_secs_f64() * 1e3,
        derive.as_secs_f64() * 1e3
    );
}
