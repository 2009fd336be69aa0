//! `cargo xtask bench hooks`: what a hook costs per call (H2), measured in one run.
//!
//! - one pre-tool plus one post-tool WASM hook (the shipped `audit` hook, both phases) through
//!   the real `HookChain`: a fresh store and instance per hook call, as in a session;
//! - the same two decisions made the way command hooks work elsewhere: spawning a process per
//!   event that reads the event JSON on stdin and prints a decision.
//!
//! Ends with one line: `BENCH hook_pair_p50_us=… process_over_wasm=…`.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use common::{micros, percentile};

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use paddock::ask::NoOneToAsk;
use paddock::hooks::{Approval, HookChain};
use paddock::pipeline::GateCall;
use paddock::plugin_store::PluginStore;
use paddock::preset::{self, ResolveContext};
use paddock_sandbox::{Permission, Sandbox};
use paddock_types::contract::{Risk, RuntimeMeta, ToolOutput, ToolSpec};
use tokio_util::sync::CancellationToken;

/// One command-hook decision: spawn, write the event, read and parse the answer.
fn process_hook(event: &str) -> serde_json::Value {
    let mut child = Command::new("sh")
        .args(["-c", r#"cat >/dev/null; echo '{"decision":"allow"}'"#])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn sh");
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(event.as_bytes()).expect("write event");
    }
    let out = child.wait_with_output().expect("hook output");
    serde_json::from_slice(&out.stdout).expect("a JSON decision")
}

fn main() {
    common::block_on(run());
}

async fn run() {
    let work = tempfile::tempdir().expect("tempdir");
    let sandbox = Sandbox::new(work.path().join("cache")).expect("sandbox");
    let audit = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/target/wasm32-wasip2/release/audit.wasm");
    assert!(audit.exists(), "run `cargo xtask build-plugins` first");
    let text = format!(
        "[[hooks]]\nsource = \"{0}\"\non = \"pre\"\n[[hooks]]\nsource = \"{0}\"\non = \"post\"\n[approval]\nlow = \"allow\"\n",
        audit.display()
    );
    let path = work.path().join("bench.toml");
    std::fs::write(&path, text).expect("write preset");
    let file = preset::load_in(path.to_str().expect("utf-8 path"), work.path()).expect("preset");
    let cx = ResolveContext {
        cwd: work.path(),
        data_dir: &work.path().join("home"),
        spill: None,
        mount_override: None,
    };
    let resolved = file.resolve("bench", &cx).expect("resolve");
    let store = PluginStore::open(work.path().join("home"));
    let approval = Approval {
        policy: resolved.approval,
        approver: Box::new(NoOneToAsk),
    };
    let chain = HookChain::load(&sandbox, &store, &resolved, approval)
        .await
        .expect("hooks load");

    let spec = ToolSpec {
        name: "read_file".into(),
        description: String::new(),
        parameters: serde_json::json!({"type": "object"}),
        examples: Vec::new(),
        meta: RuntimeMeta {
            read_only: Some(true),
            risk: Some(Risk::Low),
            ..RuntimeMeta::default()
        },
    };
    let args = serde_json::json!({"path": "src/main.rs"});
    let cancel = CancellationToken::new();
    let call = GateCall {
        call_id: "c1",
        session_id: "bench",
        preset: "bench",
        tool: &spec,
        args: &args,
        plugin: None,
        cancel: &cancel,
    };
    let result = Ok(ToolOutput::complete("fn main() {}\n"));

    let mut pairs = Vec::new();
    for i in 0..2200 {
        let started = Instant::now();
        let verdict = chain.pre_tool_use(call).await;
        let outcome = chain.post_tool_use(call, result.clone()).await;
        let elapsed = started.elapsed();
        assert_eq!(verdict.permission, Permission::Allow);
        assert_eq!(outcome.context.len(), 1);
        if i >= 200 {
            pairs.push(elapsed); // the first 200 warm up
        }
    }
    let wasm_p50 = percentile(&mut pairs, 0.5);
    let wasm_p99 = percentile(&mut pairs, 0.99);

    let event = serde_json::json!({
        "tool_name": "read_file", "tool_input": args, "call_id": "c1",
        "session_id": "bench", "preset": "bench",
    })
    .to_string();
    let mut spawns = Vec::new();
    for i in 0..220 {
        let started = Instant::now();
        let pre = process_hook(&event);
        let post = process_hook(&event);
        let elapsed = started.elapsed();
        assert_eq!(pre["decision"], "allow");
        std::hint::black_box(post);
        if i >= 20 {
            spawns.push(elapsed);
        }
    }
    let process_p50 = percentile(&mut spawns, 0.5);
    println!(
        "hook pair (pre + post, WASM): p50 {:.1} us, p99 {:.1} us; process hooks: p50 {:.1} us",
        micros(wasm_p50),
        micros(wasm_p99),
        micros(process_p50)
    );
    println!(
        "BENCH hook_pair_p50_us={:.1} process_over_wasm={:.1}",
        micros(wasm_p50),
        process_p50.as_secs_f64() / wasm_p50.as_secs_f64()
    );
}
