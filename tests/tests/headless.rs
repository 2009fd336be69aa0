//! The headless contract under fire (docs/json-events.md): fifty `run --json` sessions at
//! once against scripted models, half of them sent SIGTERM or SIGHUP at a random point (during
//! set-up, the model's stream, a tool call, or after the end); and Ctrl-C (SIGINT) at fixed
//! points from the first instruction of `main` on. Every one must end with a parsable `result`
//! line whose `exit_code` is the process's, with a documented stop for it, and none may hang.
//! A signal is sent once the process catches it (`SigCgt` in /proc/PID/status): before that,
//! the process is still being loaded, and nothing can.
//!
//! A binary of its own: fifty processes at once would slow the timing tests of `terminal/`
//! beside it past their bounds; cargo runs test binaries one after another.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::{Duration, Instant};

use paddock_tests::scripted::{Fault, Script, ScriptedServer, Step, Turn};
use paddock_tests::send_signal;
use serde_json::Value;

#[path = "suite/agent_common/mod.rs"]
mod agent_common;

use agent_common::{Project, call_step};

const SESSIONS: usize = 50;

/// A small deterministic generator: the same points every run, spread over the whole session.
fn points(seed: u64, n: usize, max_ms: u64) -> Vec<u64> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % max_ms
        })
        .collect()
}

/// Waits until process `pid` catches SIGTERM and SIGHUP (or has ended).
async fn catches_termination(pid: &str) {
    catches(pid, &[libc::SIGTERM, libc::SIGHUP]).await;
}

/// Waits until process `pid` catches every one of `signals` (or has ended).
async fn catches(pid: &str, signals: &[libc::c_int]) {
    let wanted = signals.iter().fold(0u64, |mask, s| mask | 1u64 << (s - 1));
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            return;
        };
        let caught = status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .unwrap_or(0);
        if caught & wanted == wanted {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// A scripted model that asks for one `read_file` and then streams its answer slowly, stalling
/// `stall_ms` after the first frame: a signal lands mid-stream for many runs.
async fn slow_server(stall_ms: u64) -> ScriptedServer {
    ScriptedServer::start(Script {
        steps: vec![
            call_step("c1", "read_file", r#"{"path":"notes.txt"}"#),
            Step::Reply(
                Turn::text(&["Read it", ", done."]).with_fault(Fault::StallAfter {
                    frames: 1,
                    ms: stall_ms,
                }),
            ),
        ],
    })
    .await
    .unwrap()
}

/// `paddock run --json "read notes.txt"` against `server`, its output piped, started.
fn spawn_run(project: &Project, server: &ScriptedServer) -> std::process::Child {
    let url = server.openai_base_url();
    let mut cmd = project.command(&[
        "run",
        "--json",
        "read notes.txt",
        "--base-url",
        &url,
        "--model",
        "scripted",
    ]);
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd.spawn().expect("spawn paddock")
}

/// The `result` line a run ended with (its `data`), which must be the last line, parse, and
/// carry the process's own exit code; `what` names the run in a failure.
fn result_line(out: &std::process::Output, what: &str) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_else(|| {
        panic!(
            "{what}: printed nothing ({:?}); stderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let line: Value = serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("{what}: the last line is not JSON ({e}): {last}"));
    assert_eq!(line["type"], "result", "{what}: {last}");
    assert_eq!(
        out.status.code(),
        line["data"]["exit_code"].as_i64().map(|c| c as i32),
        "{what}: the process exit code is the result line's: {last}"
    );
    line["data"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_sessions_half_of_them_terminated_all_end_with_a_result_line() {
    // One data directory: both built-in plugins compile once (a call of each first), then
    // every session shares the cache.
    let project = Project::new(&[("notes.txt", "hello\n")]);
    for (tool, args) in [("list_dir", "{}"), ("glob", r#"{"pattern":"*"}"#)] {
        let warm = project.paddock(&["tool", "call", tool, args]).await;
        assert!(warm.status.success(), "{warm:?}");
    }
    let mut servers = Vec::new();
    for _ in 0..SESSIONS {
        servers.push(slow_server(1_500).await);
    }
    let delays = points(0x9e37_79b9_7f4a_7c15, SESSIONS, 3_000);
    let mut runs = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        let child = spawn_run(&project, server);
        let signal = (i % 2 == 0).then(|| {
            let signal = if i % 4 == 0 {
                libc::SIGTERM
            } else {
                libc::SIGHUP
            };
            (delays[i], signal)
        });
        runs.push(tokio::task::spawn(async move {
            let pid = child.id().to_string();
            if let Some((after, signal)) = signal {
                catches_termination(&pid).await;
                tokio::time::sleep(Duration::from_millis(after)).await;
                send_signal(child.id(), signal);
            }
            let started = Instant::now();
            let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap());
            let out = tokio::time::timeout(Duration::from_secs(120), out)
                .await
                .unwrap_or_else(|_| panic!("session {i} hung (pid {pid})"))
                .unwrap();
            (i, signal, out, started.elapsed())
        }));
    }
    let mut terminated = 0;
    for run in runs {
        let (i, signal, out, _took) = run.await.unwrap();
        let result = result_line(&out, &format!("session {i} ({signal:?})"));
        let code = out.status.code();
        let stop = result["stop_reason"].as_str().unwrap();
        match (signal, stop, code) {
            (_, "completed", Some(0)) => {}
            (Some(_), "terminated", Some(143)) => terminated += 1,
            other => panic!("session {i}: undocumented ending {other:?}: {result}"),
        }
    }
    // The points spread over the whole session: most signals land while it runs.
    assert!(
        terminated >= SESSIONS / 4,
        "only {terminated} of {} signalled sessions ended terminated",
        SESSIONS / 2
    );
}

/// Ctrl-C at 5, 10, 20, 50, 200 and 500 ms after the program started (once its Rust runtime
/// catches SIGSEGV for stack overflows, which it does before `main`; before that the process is
/// still being loaded): while it parses its command line, opens the data directory, compiles
/// the built-ins (a fresh data directory), starts the session, or streams the answer. Each run
/// ends with a `result` line, `interrupted`, exit 130, and its log says the turn was
/// interrupted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ctrl_c_at_any_point_of_set_up_ends_with_a_result_line_and_130() {
    let project = Project::new(&[("notes.txt", "hello\n")]);
    for after in [5u64, 10, 20, 50, 200, 500] {
        let server = slow_server(5_000).await;
        let spawned = Instant::now();
        let child = spawn_run(&project, &server);
        let pid = child.id().to_string();
        catches(&pid, &[libc::SIGSEGV]).await;
        let caught_after = spawned.elapsed();
        tokio::time::sleep(Duration::from_millis(after)).await;
        send_signal(child.id(), libc::SIGINT);
        let sent_after = spawned.elapsed();
        let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap());
        let out = tokio::time::timeout(Duration::from_secs(60), out)
            .await
            .unwrap_or_else(|_| panic!("Ctrl-C {after} ms in: paddock hung (pid {pid})"))
            .unwrap();
        let what = format!(
            "Ctrl-C {after} ms in (started {caught_after:?} after spawn, sent {sent_after:?} after)"
        );
        let result = result_line(&out, &what);
        assert_eq!(
            (result["stop_reason"].as_str(), out.status.code()),
            (Some("interrupted"), Some(130)),
            "{what}: {result}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let session = result["session"]
            .as_str()
            .expect("a session id")
            .to_string();
        let events = project.events(&session);
        assert_eq!(
            agent_common::last_stop(&events),
            "interrupted",
            "Ctrl-C {after} ms in: the log records the interrupted turn"
        );
    }
}
