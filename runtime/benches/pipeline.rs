//! `cargo xtask bench pipeline`: what the tool-call pipeline costs, measured in one run.
//!
//! - repair plus validation per call (`check_call`), for valid arguments, for broken ones
//!   (an alias, a renamed field, double encoding, a truncated document, prose), and for the
//!   repairs real models need (`repair_p50_us`: raw new lines, unescaped quotes, trailing
//!   commas, a fence, prose around the object, comments, single quotes, bare keys, `None`);
//! - scheduler overhead per call: a batch of trivial `echo` calls through the scheduler against
//!   the same calls straight into the sandbox;
//! - wall time of 8 read-only calls that each sleep 20 ms, with `max_parallel_tool_calls` 8
//!   against 1.
//!
//! Ends with one line: `BENCH validate_p50_us=… broken_p50_us=… repair_p50_us=… sched_overhead_us=…
//! parallel_speedup=…`. Bars: `validate_p50_us` ≤ 20 and `repair_p50_us` ≤ 20.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use common::{micros, percentile};

use std::time::{Duration, Instant};

use paddock::calls::{AliasTable, Registry, check_call};
use paddock::pipeline::{RawCall, Scheduler};
use paddock_sandbox::Sandbox;
use tokio_util::sync::CancellationToken;

/// The bench plugin and fs, both read-write on the work directory.
const PLUGINS: &str = r#"
[plugins.bench]
source = "{bench}"
mounts = [{ host = ".", guest = "/workspace", mode = "rw" }]
[plugins.fs]
source = "builtin:fs"
mounts = [{ host = ".", guest = "/workspace", mode = "rw" }]
"#;

fn main() {
    common::block_on(run());
}

/// The median of every sample of `calls` pooled, which is the BENCH figure. Each input's own
/// median is printed too: the inputs cost from 0.3 to 3.5 us, so the pooled median falls where
/// two of them meet and moves with either one's spread; compare builds input by input.
fn check_p50(
    group: &str,
    registry: &Registry,
    aliases: &AliasTable,
    calls: &[(&str, &str)],
) -> Duration {
    let mut per_input = vec![Vec::new(); calls.len()];
    for _ in 0..2000 {
        for ((name, raw), samples) in calls.iter().zip(&mut per_input) {
            let started = Instant::now();
            std::hint::black_box(check_call(registry, aliases, name, raw));
            samples.push(started.elapsed());
        }
    }
    let mut pooled = Vec::new();
    print!("{group}, p50 per input in order (us):");
    for samples in &mut per_input {
        pooled.extend_from_slice(samples);
        print!(" {:.2}", micros(percentile(samples, 0.5)));
    }
    println!();
    percentile(&mut pooled, 0.5)
}

fn calls(name: &str, args: &str, n: usize) -> Vec<RawCall> {
    (0..n)
        .map(|i| RawCall {
            id: format!("c{i}"),
            name: name.into(),
            arguments: args.into(),
        })
        .collect()
}

async fn run() {
    let work = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("a.txt"), "alpha\n").expect("file");
    let sandbox = Sandbox::new(home.path().join("cache")).expect("sandbox");
    let registry = common::registry(&sandbox, work.path(), home.path(), PLUGINS).await;
    let aliases = AliasTable::default();

    // 1. Repair + validation per call.
    let valid = [
        (
            "read_file",
            r#"{"path": "src/main.rs", "offset": 10, "limit": 50}"#,
        ),
        ("nap", r#"{"ms": 20}"#),
        (
            "write_slowly",
            r#"{"path": "a.txt", "text": "hello", "ms": 1}"#,
        ),
    ];
    let broken = [
        ("Read", r#"{"file_path": "src/main.rs"}"#),
        ("read_file", r#""{\"path\": \"src/main.rs\"}""#),
        ("read_file", r#"{"path": "src/ma"#),
        ("read_file", "read src/main.rs please"),
        ("read_file", r#"{"limit": 5}{"path": "a.txt"}"#),
    ];
    // The V8 repairs real models need, one input per step.
    let repairable = [
        (
            "write_slowly",
            "{\"path\": \"a.txt\", \"text\": \"fix: parser\n\nLonger body\", \"ms\": 1}",
        ),
        (
            "write_slowly",
            r#"{"path": "a.txt", "text": "say "hi" now", "ms": 1}"#,
        ),
        ("read_file", r#"{"path": "src/main.rs", "limit": 50,}"#),
        ("read_file", "```json\n{\"path\": \"src/main.rs\"}\n```"),
        (
            "read_file",
            "I'll read it: {\"path\": \"src/main.rs\"} and then look.",
        ),
        (
            "read_file",
            "{\"path\": \"src/main.rs\" // the entry point\n}",
        ),
        ("read_file", "{'path': 'src/main.rs'}"),
        ("read_file", r#"{path: "src/main.rs", offset: 1}"#),
        ("read_file", r#"{"path": "src/main.rs", "offset": None}"#),
    ];
    let valid_p50 = check_p50("valid", &registry, &aliases, &valid);
    let broken_p50 = check_p50("broken", &registry, &aliases, &broken);
    let repair_p50 = check_p50("repair", &registry, &aliases, &repairable);
    println!(
        "repair+validate: valid p50 {:.2} us, broken p50 {:.2} us, V8 repairs p50 {:.2} us",
        micros(valid_p50),
        micros(broken_p50),
        micros(repair_p50)
    );

    // 2. Scheduler overhead per call: echo through the scheduler vs straight to the sandbox.
    let n = 400;
    let echo = registry.get("echo").expect("echo tool");
    let cancel = CancellationToken::new();
    let direct_started = Instant::now();
    for _ in 0..n {
        let report = sandbox
            .call(
                echo.plugin().expect("a plugin tool"),
                "echo",
                r#"{"text":"hi"}"#,
                &echo.grant,
                &cancel,
            )
            .await;
        assert!(report.result.is_ok());
    }
    let direct = direct_started.elapsed();
    let scheduler = |max_parallel| Scheduler {
        cx: common::open_context(&sandbox, &registry, &aliases),
        max_parallel,
        events: None,
        on_start: None,
        on_end: None,
    };
    // `echo` is concurrency-safe; a pool of 1 runs them one by one, as the direct loop does.
    let batch = calls("echo", r#"{"text":"hi"}"#, n);
    let scheduled_started = Instant::now();
    let records = scheduler(1).run(&batch).await;
    let scheduled = scheduled_started.elapsed();
    assert!(records.iter().all(|r| r.result.is_ok()));
    let overhead = scheduled.saturating_sub(direct) / n as u32;
    println!(
        "scheduler: {n} echo calls {:.1} ms scheduled vs {:.1} ms direct, overhead {:.1} us/call",
        scheduled.as_secs_f64() * 1e3,
        direct.as_secs_f64() * 1e3,
        micros(overhead)
    );

    // 3. Eight 20 ms read-only calls, pool of 8 against pool of 1 (best of 5 each).
    let naps = calls("nap", r#"{"ms": 20}"#, 8);
    let wall = |max_parallel| {
        let naps = &naps;
        let scheduler = scheduler(max_parallel);
        async move {
            let mut best = Duration::MAX;
            for _ in 0..5 {
                let started = Instant::now();
                let records = scheduler.run(naps).await;
                best = best.min(started.elapsed());
                assert!(records.iter().all(|r| r.result.is_ok()));
            }
            best
        }
    };
    let serial = wall(1).await;
    let parallel = wall(8).await;
    let speedup = serial.as_secs_f64() / parallel.as_secs_f64();
    println!(
        "8 x nap 20 ms: pool of 1 {:.1} ms, pool of 8 {:.1} ms, speedup {speedup:.2}",
        serial.as_secs_f64() * 1e3,
        parallel.as_secs_f64() * 1e3
    );
    println!(
        "BENCH validate_p50_us={:.2} broken_p50_us={:.2} repair_p50_us={:.2} sched_overhead_us={:.1} parallel_speedup={speedup:.2}",
        micros(valid_p50),
        micros(broken_p50),
        micros(repair_p50),
        micros(overhead)
    );
}
