//! The headless contract (docs/json-events.md): a call that needs approval when no one can
//! answer is denied, or decided by `on_ask` (deny, allow, fail), in process through the
//! library's `Session`; through the real binary, `run --json` counts it (`denied_calls`) and
//! exits by it, and a panic still ends the stream with its `result` line.

use paddock::agent::{Quiet, TurnEnd};
use paddock::ask::OnAsk;
use paddock::log::StopReason;
use paddock_tests::scripted::{Script, ScriptedServer, Step, Turn};
use serde_json::Value;

use crate::agent_common::{Project, call_step, last_stop, openai};

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
async fn asking_server() -> ScriptedServer {
    ScriptedServer::start(Script {
        steps: vec![
            call_step("c1", "run_command", r#"{"program":"ls"}"#),
            Step::Reply(Turn::text(&["Done."])),
        ],
    })
    .await
    .unwrap()
}

/// A session on `coding` that nobody can be asked in, deciding by `on_ask` (the builder's
/// default without one), sent "list the files": its server, how the turn ended, its events.
async fn asking_session(on_ask: Option<OnAsk>) -> (ScriptedServer, TurnEnd, Vec<Value>) {
    let project = Project::warm(&[("notes.txt", "hello\n")]);
    let server = asking_server().await;
    let mut builder = project.builder(openai(&server)).preset("coding");
    if let Some(mode) = on_ask {
        builder = builder.on_ask(mode);
    }
    let session = builder.start().await.unwrap();
    let end = session.send("list the files", &Quiet).await;
    let events = project.events(session.id());
    (server, end, events)
}

fn tool_result(events: &[Value]) -> Value {
    events
        .iter()
        .find(|e| e["type"] == "tool/result")
        .expect("a tool/result")["data"]
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_anyone_to_answer_a_call_is_denied_and_the_start_records_how() {
    for (on_ask, recorded) in [(None, Value::Null), (Some(OnAsk::Deny), "deny".into())] {
        let (_server, end, events) = asking_session(on_ask).await;
        assert_eq!(
            end.reason,
            StopReason::Completed,
            "{on_ask:?}: {:?}",
            end.detail
        );
        let call = tool_result(&events);
        assert_eq!(call["code"], "DENIED", "{on_ask:?}: {call}");
        assert_eq!(call["approval"], "unanswered");
        assert_eq!(events[0]["data"]["on_ask"], recorded);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_ask_allow_runs_the_call_and_the_start_records_it() {
    let (_server, end, events) = asking_session(Some(OnAsk::Allow)).await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);
    let call = tool_result(&events);
    assert_eq!(call["is_error"], false, "{call}");
    assert!(
        call["content"].as_str().unwrap().contains("notes.txt"),
        "{call}"
    );
    assert_eq!(call["approval"], "once");
    assert_eq!(events[0]["data"]["on_ask"], "allow");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_ask_fail_stops_the_session_with_its_own_reason() {
    let (server, end, events) = asking_session(Some(OnAsk::Fail)).await;
    assert_eq!(end.reason, StopReason::ApprovalRequired, "{:?}", end.detail);
    assert_eq!(last_stop(&events), "approval_required");
    let call = tool_result(&events);
    assert_eq!(call["code"], "APPROVAL_REQUIRED", "{call}");
    // The model was not asked again after the stop.
    assert_eq!(server.remaining_steps(), 1);
}

/// `run --json --on-ask MODE` in one project: the result line counts the denied call and
/// carries the stop reason and its exit code, which the process exits with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_json_counts_denied_calls_and_exits_by_on_ask() {
    let project = Project::warm(&[("notes.txt", "hello\n")]);
    let cases = [
        (None, 0, "completed", 1),
        (Some("deny"), 0, "completed", 1),
        (Some("allow"), 0, "completed", 0),
        (Some("fail"), 6, "approval_required", 1),
    ];
    for (on_ask, code, stop, denied) in cases {
        let server = asking_server().await;
        let url = server.openai_base_url();
        let mut args = vec!["run", "--json", "list the files", "--preset", "coding"];
        args.extend(["--base-url", &url, "--model", "scripted"]);
        if let Some(mode) = on_ask {
            args.extend(["--on-ask", mode]);
        }
        let out = project.paddock(&args).await;
        let result = result_line(&out.stdout);
        assert_eq!(out.status.code(), Some(code), "{on_ask:?}: {result}");
        assert_eq!(result["stop_reason"], stop, "{on_ask:?}: {result}");
        assert_eq!(result["exit_code"], code, "{on_ask:?}: {result}");
        assert_eq!(result["denied_calls"], denied, "{on_ask:?}: {result}");
        let session = result["session"].as_str().unwrap().to_string();
        let start = &project.events(&session)[0]["data"];
        assert_eq!(start["on_ask"], on_ask.map_or(Value::Null, Value::from));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_still_ends_the_stream_with_a_result_line() {
    let project = Project::warm(&[("notes.txt", "hello\n")]);
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

/// A command line clap refuses still answers in the form the caller asked for: `run --json`
/// ends with a `result` line (`setup_error`, exit 2) naming the bad value; `tool call --json`
/// prints its JSON object; without `--json`, clap's own message on standard error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_line_that_does_not_parse_still_answers_in_its_json_form() {
    let project = Project::new(&[("notes.txt", "hello\n")]);
    let out = project
        .paddock(&["run", "--json", "--on-ask", "alow", "read notes.txt"])
        .await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let result = result_line(&out.stdout);
    assert_eq!(result["stop_reason"], "setup_error", "{result}");
    assert_eq!(result["exit_code"], 2, "{result}");
    assert_eq!(result["code"], "USAGE_ERROR", "{result}");
    let detail = result["detail"].as_str().unwrap();
    assert!(
        detail.contains("alow") && detail.contains("--on-ask"),
        "the detail names the option and the value: {detail}"
    );
    // An option that does not exist, before the subcommand's words.
    let out = project
        .paddock(&["run", "--json", "--max-turn", "1", "read notes.txt"])
        .await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        result_line(&out.stdout)["detail"]
            .as_str()
            .unwrap()
            .contains("--max-turn")
    );

    let out = project
        .paddock(&["tool", "call", "--json", "read_file", "{}", "extra"])
        .await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let object: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(object["ok"], false, "{object}");
    assert_eq!(object["error"]["code"], "USAGE_ERROR", "{object}");

    let out = project.paddock(&["run", "--on-ask", "alow", "x"]).await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("alow"));

    // Asking for help is not an error, with or without --json.
    let out = project.paddock(&["run", "--json", "--help"]).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Usage"));
}

/// Rules before questions: under `coding` (`run_command` is high risk, asked about), a call
/// the exec capability would refuse whatever the answer (a program off the allow-list or not
/// on PATH, a `cwd` outside the mounts or with `..`) is refused with that reason and nobody is
/// asked; an allowed one still needs the question (here: no terminal, so it is denied saying
/// so).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_rules_refuse_is_refused_before_anyone_is_asked() {
    let project = Project::warm(&[("notes.txt", "hello\n")]);
    for (args, says) in [
        (r#"{"program":"rm","args":["notes.txt"]}"#, "is not allowed"),
        (
            r#"{"program":"ls","args":["-la"],"cwd":"/etc"}"#,
            "is not inside a mount",
        ),
        (
            r#"{"program":"ls","cwd":"src/../.."}"#,
            "may not contain `..`",
        ),
    ] {
        let out = project
            .paddock(&[
                "tool",
                "call",
                "run_command",
                args,
                "--preset",
                "coding",
                "--json",
            ])
            .await;
        let answer: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(says) && !message.contains("needs approval"),
            "{args}: refused by the rule, without a question: {answer}"
        );
    }
    let out = project
        .paddock(&[
            "tool",
            "call",
            "run_command",
            r#"{"program":"ls","args":["-la"]}"#,
            "--preset",
            "coding",
            "--json",
        ])
        .await;
    let answer: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("needs approval"),
        "an allowed program is still asked about: {answer}"
    );
}

/// A session `run --on-ask allow` started, resumed where no one can be asked, still decides
/// its asks by the recorded mode: the call runs (before, the resumed session had only the
/// terminal's approver, and denied it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_headless_session_resumed_headless_keeps_its_on_ask_mode() {
    let project = Project::warm(&[("notes.txt", "hello\n")]);
    let server = ScriptedServer::start(Script {
        steps: vec![
            Step::Reply(Turn::text(&["Hello."])),
            call_step("c1", "run_command", r#"{"program":"ls"}"#),
            Step::Reply(Turn::text(&["Done."])),
        ],
    })
    .await
    .unwrap();
    let url = server.openai_base_url();
    let args = [
        "run", "--json", "hi", "--preset", "coding", "--on-ask", "allow",
    ];
    let out = project
        .paddock(&[&args[..], &["--base-url", &url, "--model", "scripted"]].concat())
        .await;
    let result = result_line(&out.stdout);
    assert_eq!(result["stop_reason"], "completed", "{result}");
    let session = result["session"].as_str().unwrap().to_string();

    let out = project
        .paddock(&["resume", &session, "list the files"])
        .await;
    assert!(out.status.success(), "{out:?}");
    let events = project.events(&session);
    let call = tool_result(&events);
    assert_eq!(call["approval"], "once", "{call}");
    assert_eq!(call["is_error"], false, "{call}");
    assert!(
        call["content"].as_str().unwrap().contains("notes.txt"),
        "{call}"
    );
}
