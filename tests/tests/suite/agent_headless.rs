//! The headless contract of `run --json` (docs/json-events.md): a call that needs approval when
//! no one can answer is denied and counted (`denied_calls`), or decided by `--on-ask
//! deny|allow|fail`; and a panic still ends the stream with its `result` line.

use paddock_tests::scripted::{Script, ScriptedServer, Step, Turn};
use serde_json::Value;

use crate::agent_common::{Project, call_step};

/// The last line of a `run --json`, parsed: it must be the `result`.
fn result_line(stdout: &[u8]) -> Value {
    let text = String::from_utf8_lossy(stdout);
    let last = text.lines().last().expect("run --json printed nothing");
    let value: Value = serde_json::from_str(last).expect("the last line is JSON");
    assert_eq!(value["type"], "result", "{last}");
    value["data"].clone()
}

/// The `coding` preset asks before `run_command` (high risk); the model calls it once, then
/// answers.
async fn asking_run(on_ask: Option<&str>) -> (Project, ScriptedServer, std::process::Output) {
    let project = Project::new(&[("notes.txt", "hello\n")]);
    let server = ScriptedServer::start(Script {
        steps: vec![
            call_step("c1", "run_command", r#"{"program":"ls"}"#),
            Step::Reply(Turn::text(&["Done."])),
        ],
    })
    .await
    .unwrap();
    let url = server.openai_base_url();
    let mut args = vec![
        "run",
        "--json",
        "list the files",
        "--preset",
        "coding",
        "--base-url",
        &url,
        "--model",
        "scripted",
    ];
    if let Some(mode) = on_ask {
        args.extend(["--on-ask", mode]);
    }
    let out = project.paddock(&args).await;
    (project, server, out)
}

fn tool_result(project: &Project) -> Value {
    let events = project.events(&project.only_session());
    events
        .iter()
        .find(|e| e["type"] == "tool/result")
        .expect("a tool/result")["data"]
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_anyone_to_answer_a_call_is_denied_and_counted() {
    for on_ask in [None, Some("deny")] {
        let (project, _server, out) = asking_run(on_ask).await;
        let result = result_line(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{on_ask:?}: {result}");
        assert_eq!(result["stop_reason"], "completed");
        assert_eq!(result["denied_calls"], 1, "{on_ask:?}: {result}");
        let call = tool_result(&project);
        assert_eq!(call["code"], "DENIED");
        assert_eq!(call["approval"], "unanswered");
        let start = &project.events(&project.only_session())[0]["data"];
        assert_eq!(start["on_ask"], on_ask.map_or(Value::Null, Value::from));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_ask_allow_runs_the_call_and_the_start_records_it() {
    let (project, _server, out) = asking_run(Some("allow")).await;
    let result = result_line(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{result}");
    assert_eq!(result["denied_calls"], 0);
    let call = tool_result(&project);
    assert_eq!(call["is_error"], false, "{call}");
    assert!(
        call["content"].as_str().unwrap().contains("notes.txt"),
        "{call}"
    );
    assert_eq!(call["approval"], "once");
    let start = &project.events(&project.only_session())[0]["data"];
    assert_eq!(start["on_ask"], "allow");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_ask_fail_stops_the_session_with_its_own_reason_and_exit_code() {
    let (project, server, out) = asking_run(Some("fail")).await;
    let result = result_line(&out.stdout);
    assert_eq!(out.status.code(), Some(6), "{result}");
    assert_eq!(result["stop_reason"], "approval_required");
    assert_eq!(result["exit_code"], 6);
    assert_eq!(result["denied_calls"], 1);
    let call = tool_result(&project);
    assert_eq!(call["code"], "APPROVAL_REQUIRED", "{call}");
    // The model was not asked again after the stop.
    assert_eq!(server.remaining_steps(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_still_ends_the_stream_with_a_result_line() {
    let project = Project::new(&[("notes.txt", "hello\n")]);
    let server = ScriptedServer::start(Script {
        steps: vec![
            call_step("c1", "read_file", r#"{"path":"notes.txt"}"#),
            Step::Reply(Turn::text(&["Done."])),
        ],
    })
    .await
    .unwrap();
    let url = server.openai_base_url();
    let mut cmd = project.command(&[
        "run",
        "--json",
        "read it",
        "--base-url",
        &url,
        "--model",
        "scripted",
    ]);
    // The fourth append of the process (in the middle of the turn) panics.
    cmd.env("PADDOCK_CRASH_AT_APPEND", "4:panic");
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(101), "{out:?}");
    let result = result_line(&out.stdout);
    assert_eq!(result["stop_reason"], "host_error");
    assert_eq!(result["exit_code"], 101);
    assert_eq!(result["session"], Value::from(project.only_session()));
    assert!(String::from_utf8_lossy(&out.stderr).contains("asked for a panic"));
}
