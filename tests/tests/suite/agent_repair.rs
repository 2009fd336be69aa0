//! Calls from real models, end to end (V6, V7, V8), in process through the library's
//! `Session`: repaired arguments run and the log records each repair; text that is not JSON
//! never runs; concatenated objects tell the model what ran and what did not; anomalies in the
//! stream are logged and told to the observer. Through the real binary: `run` and `chat` show
//! the anomalies.

use crate::agent_common::{Project, Seen, anthropic, openai, server, text};
use paddock::agent::Quiet;
use paddock::log::StopReason;
use paddock_tests::scripted::{ScriptCall, Step, Turn};
use serde_json::{Value, json};

fn run_args<'a>(url: &'a str, task: &'a str) -> Vec<&'a str> {
    vec!["run", task, "--base-url", url, "--model", "scripted"]
}

fn result_of<'e>(events: &'e [Value], id: &str) -> &'e Value {
    events
        .iter()
        .find(|e| e["type"] == "tool/result" && e["data"]["id"] == id)
        .map(|e| &e["data"])
        .unwrap_or_else(|| panic!("no result for {id}"))
}

fn started(events: &[Value], id: &str) -> bool {
    events
        .iter()
        .any(|e| e["type"] == "tool/start" && e["data"]["id"] == id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_ran_what_did_not_and_every_repair_reach_the_model_and_the_log() {
    let project = Project::warm(&[("a.txt", "alpha\n"), ("b.txt", "beta\n")]);
    let calls = vec![
        ScriptCall::new(
            "c1",
            "read_file",
            r#"{"path":"a.txt"}{"path":"b.txt"}{"path":"a.txt"}"#,
            &[],
        ),
        // Two bare words: which string was meant is a guess, so it is refused.
        ScriptCall::new("c2", "read_file", r#"{"path": a.txt b.txt}"#, &[]),
        ScriptCall::new("c3", "read_file", "```json\n{'path': 'b.txt',}\n```", &[]),
    ];
    let server = server(vec![
        Step::Reply(Turn::calls(calls)),
        Step::Reply(Turn::text(&["done"])),
    ])
    .await;
    let session = project.start(openai(&server)).await;
    let end = session.send("read them", &Quiet).await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);
    let events = project.events(session.id());

    // V7: the first object ran; the model is told the other did not.
    let c1 = result_of(&events, "c1");
    let content = c1["content"].as_str().unwrap_or_default();
    assert!(content.contains("alpha"), "{content}");
    assert!(
        content.contains(
            r#"the arguments held 3 JSON objects (2 different); only {"path":"a.txt"} ran. NOT run: {"path":"b.txt"}"#
        ),
        "{content}"
    );
    assert_eq!(
        c1["repairs"],
        json!([{"repair": "split_concatenated", "found": 3, "taken": 0, "not_run": [{"path": "b.txt"}]}])
    );
    // V6: unparsable arguments never start a tool; the model gets where and what.
    let c2 = result_of(&events, "c2");
    assert_eq!(c2["code"], "INVALID_JSON");
    assert!(!started(&events, "c2"));
    let message = c2["content"].as_str().unwrap_or_default();
    assert!(message.contains("line 1 column 10"), "{message}");
    assert!(message.contains("path (string, required)"), "{message}");
    // V8: a fenced, single-quoted object with a trailing comma runs, each repair logged.
    let c3 = result_of(&events, "c3");
    assert!(c3["content"].as_str().unwrap_or_default().contains("beta"));
    let kinds: Vec<&str> = c3["repairs"]
        .as_array()
        .map(|r| r.iter().filter_map(|r| r["repair"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(kinds, ["code_fence", "trailing_commas", "single_quotes"]);
    assert_eq!(c3["args"], json!({"path": "b.txt"}));

    // What the model read back in the next request is what the log holds.
    let requests = server.requests();
    let sent = requests[1].body["messages"].to_string();
    assert!(sent.contains("NOT run"), "{sent}");
}

/// A reply whose stream carries a `data:` line that is not JSON.
fn noisy() -> Step {
    Step::Reply(Turn {
        garbage: vec!["data: this is not json".into()],
        ..Turn::text(&["hello"])
    })
}

/// What `run` and `chat` show under the answer for `noisy`.
const SHOWN: &str = "stream: line 3 is not JSON and was skipped: \"this is not json\"";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_anomalies_are_logged_after_the_message_and_told_to_the_observer() {
    let project = Project::warm(&[]);
    let server = server(vec![noisy()]).await;
    let session = project.start(openai(&server)).await;
    let seen = Seen::default();
    let end = session.send("say hello", &seen).await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);
    assert_eq!(
        format!("stream: {}", seen.anomalies.lock().unwrap().join("\n")),
        SHOWN
    );
    let events = project.events(session.id());
    let anomaly = events
        .iter()
        .find(|e| e["type"] == "stream/anomaly")
        .expect("a stream/anomaly event");
    assert_eq!(
        anomaly["data"]["anomalies"][0],
        json!({"kind": "non_json_data", "line": 3, "sample": "this is not json"})
    );
    let at = |kind: &str| events.iter().position(|e| e["type"] == kind);
    assert!(at("assistant/message") < at("stream/anomaly"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_anomalies_are_shown_by_run() {
    let project = Project::warm(&[]);
    let server = server(vec![noisy()]).await;
    let url = server.openai_base_url();
    let output = project.paddock(&run_args(&url, "say hello")).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(text(&output).contains(SHOWN), "{}", text(&output));
    assert_eq!(
        project
            .events(&project.only_session())
            .iter()
            .filter(|e| e["type"] == "stream/anomaly")
            .count(),
        1
    );
}

fn raw(frames: &[&str]) -> Step {
    Step::Reply(Turn {
        raw: Some(frames.iter().map(|f| f.to_string()).collect()),
        ..Turn::default()
    })
}

/// A second Anthropic message spliced into the first (its
/// `write_file` call cut off) runs nothing; the attempt is recorded as failed, naming the
/// splice, and the retry's answer is the one kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spliced_anthropic_response_runs_nothing_and_is_retried_as_failed() {
    let project = Project::warm(&[]);
    let start = |id: &str| {
        format!(
            "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"{id}\",\"usage\":{{\"input_tokens\":5,\"output_tokens\":1}}}}}}\n\n"
        )
    };
    let tool = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"write_file\",\"input\":{}}}\n\n";
    let args = |json: &str| {
        format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":{}}}}}\n\n",
            serde_json::to_string(json).unwrap_or_default()
        )
    };
    let end = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let (first, second) = (start("msg_a"), start("msg_b"));
    let (cut, whole) = (
        args(r#"{"path": "cut"#),
        args(r#"{"path": "b.txt", "content": "x"}"#),
    );
    let spliced = [first.as_str(), tool, &cut, &second, tool, &whole, end];
    let server = server(vec![
        raw(&spliced),
        Step::Reply(Turn::text(&["nothing written"])),
    ])
    .await;
    let session = project.start(anthropic(&server)).await;
    let end = session.send("write b", &Quiet).await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);
    let events = project.events(session.id());
    assert!(
        !events
            .iter()
            .any(|e| e["type"] == "tool/start" || e["type"] == "tool/call"),
        "{events:?}"
    );
    let ends: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "attempt/end")
        .collect();
    assert_eq!(ends.len(), 2, "{ends:?}");
    assert_eq!(ends[0]["data"]["status"], "failed");
    let error = ends[0]["data"]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("msg_b") && error.contains("spliced"),
        "{error}"
    );
    assert_eq!(ends[1]["data"]["status"], "completed");
    assert!(!project.dir.path().join("b.txt").exists());
}

/// `chat` shows stream anomalies under the answer, as `run` does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_anomalies_are_shown_by_chat() {
    use std::io::Write;
    let project = Project::warm(&[]);
    let server = server(vec![noisy()]).await;
    let url = server.openai_base_url();
    let mut child = project
        .command(&["chat", "--base-url", &url, "--model", "scripted"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn paddock chat");
    let mut stdin = child.stdin.take().expect("piped stdin");
    writeln!(stdin, "say hello").expect("type a line");
    let started = std::time::Instant::now();
    while !project.sessions().first().is_some_and(|id| {
        std::fs::read_to_string(project.log_path(id)).is_ok_and(|t| t.contains("\"turn/end\""))
    }) {
        assert!(started.elapsed().as_secs() < 30, "the turn never ended");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    drop(stdin);
    let output = tokio::task::spawn_blocking(move || child.wait_with_output().expect("wait"))
        .await
        .expect("join");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(text(&output).contains(SHOWN), "{}", text(&output));
}
