//! `cargo xtask bench mcp`: what serving a tool over MCP costs a client, measured in
//! one run.
//!
//! The same trivial call, the bench plugin's `echo`, two ways, interleaved so that both see the
//! same machine:
//!
//! - through `paddock mcp serve` (the release binary) over its standard streams, from an
//!   `rmcp` client: the JSON-RPC round trip, the pipeline (repair, validation, hooks, approval,
//!   sandbox, budget) and the session log the server writes for every call;
//! - in process, as `paddock tool call` runs it (`exec::run_call`): the pipeline and the
//!   sandbox, nothing else.
//!
//! Ends with one line: `BENCH mcp_call_p50_us=… direct_p50_us=… mcp_over_direct=…`.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;
#[path = "common/paddock_bin.rs"]
mod paddock_bin;

use common::{micros, percentile};

use std::process::Stdio;
use std::time::Instant;

use paddock::calls::AliasTable;
use paddock::pipeline::run_call;
use paddock_sandbox::Sandbox;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResponse, ContentBlock};

const ROUNDS: usize = 500;
const WARMUP: usize = 20;

const PLUGINS: &str = r#"
[plugins.bench]
source = "{bench}"
mounts = [{ host = ".", guest = "/workspace", mode = "ro" }]
"#;

fn main() {
    common::block_on(run());
}

async fn run() {
    let work = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("tempdir");
    let sandbox = Sandbox::new(home.path().join("cache")).expect("sandbox");
    let registry = common::registry(&sandbox, work.path(), home.path(), PLUGINS).await;
    let aliases = AliasTable::default();

    // The served side reads the same preset file `common::registry` wrote.
    let served_home = tempfile::tempdir().expect("tempdir");
    let mut child = tokio::process::Command::new(paddock_bin::paddock_bin())
        .args(["mcp", "serve", "--preset"])
        .arg(home.path().join("bench.toml"))
        .current_dir(work.path())
        .env("PADDOCK_HOME", served_home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("paddock mcp serve starts");
    let transport = (
        child.stdout.take().expect("stdout"),
        child.stdin.take().expect("stdin"),
    );
    let client = ().serve(transport).await.expect("MCP handshake");
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "echo"), "echo is served");

    let args = serde_json::json!({ "text": "ping" });
    let raw = args.to_string();
    let mut over_mcp = Vec::with_capacity(ROUNDS);
    let mut direct = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS + WARMUP {
        let mut params = CallToolRequestParams::new("echo");
        params.arguments = args.as_object().cloned();
        let started = Instant::now();
        let answer = client.peer().call_tool_once(params).await;
        let elapsed = started.elapsed();
        match answer.expect("tools/call") {
            CallToolResponse::Complete(result) => {
                assert_ne!(result.is_error, Some(true), "{:?}", result.content);
                assert!(
                    matches!(result.content.first(), Some(ContentBlock::Text(t)) if t.text.contains("ping")),
                    "{:?}",
                    result.content
                );
            }
            other => panic!("echo answered {other:?}"),
        }
        if round >= WARMUP {
            over_mcp.push(elapsed);
        }

        let cx = common::open_context(&sandbox, &registry, &aliases);
        let started = Instant::now();
        let done = run_call(&cx, "b", "echo", &raw).await;
        let elapsed = started.elapsed();
        assert!(done.result.expect("echo runs").content.contains("ping"));
        if round >= WARMUP {
            direct.push(elapsed);
        }
    }
    client.cancel().await.expect("closes");
    let _ = child.wait().await;

    let mcp_p50 = percentile(&mut over_mcp, 0.5);
    let direct_p50 = percentile(&mut direct, 0.5);
    println!(
        "over MCP p50 {:.0} us p90 {:.0} us; direct p50 {:.0} us p90 {:.0} us ({ROUNDS} calls each)",
        micros(mcp_p50),
        micros(percentile(&mut over_mcp, 0.9)),
        micros(direct_p50),
        micros(percentile(&mut direct, 0.9)),
    );
    println!(
        "BENCH mcp_call_p50_us={:.1} direct_p50_us={:.1} mcp_over_direct={:.2}",
        micros(mcp_p50),
        micros(direct_p50),
        mcp_p50.as_secs_f64() / direct_p50.as_secs_f64()
    );
}
