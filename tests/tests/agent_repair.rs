//! Calls from real models, end to end through the real binary (SPEC V6, V7, V8; issue 11):
//! repaired arguments run and the log records each repair; text that is not JSON never runs;
//! concatenated objects tell the model what ran and what did not; anomalies in the stream are
//! logged and shown by `run`.

mod agent_common;

use agent_common::{Project, text};
use paddock_tests::scripted::{Script, ScriptCall, ScriptedServer, Step, Turn};
use serde_json::{Value, json};

async fn server(steps: Vec<Step>) -> ScriptedServer {
    ScriptedServer::start(Script { steps })
        .await
        .expect("scripted server")
}

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
    let project = Project::new(&[("a.txt", "alpha\n"), ("b.txt", "beta\n")]);
    let calls = vec![
        ScriptCall::new(
            "c1",
            "read_file",
            r#"{"path":"a.txt"}{"path":"b.txt"}{"path":"a.txt"}"#,
            &[],
        ),
        ScriptCall::new("c2", "read_file", r#"{"path": a.txt}"#, &[]),
        ScriptCall::new("c3", "read_file", "```json\n{'path': 'b.txt',}\n```", &[]),
    ];
    let server = server(vec![
        Step::Reply(Turn::calls(calls)),
        Step::Reply(Turn::text(&["done"])),
    ])
    .await;
    let url = server.openai_base_url();
    let output = project.paddock(&run_args(&url, "read them")).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let events = project.events(&project.only_session());

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_anomalies_are_logged_and_shown_by_run() {
    let project = Project::new(&[]);
    let noisy = Turn {
        garbage: vec!["data: this is not json".into()],
        ..Turn::text(&["hello"])
    };
    let server = server(vec![Step::Reply(noisy)]).await;
    let url = server.openai_base_url();
    let output = project.paddock(&run_args(&url, "say hello")).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        text(&output).contains("stream: data that is not JSON was skipped: \"this is not json\""),
        "{}",
        text(&output)
    );
    let events = project.events(&project.only_session());
    let anomaly = events
        .iter()
        .find(|e| e["type"] == "stream/anomaly")
        .expect("a stream/anomaly event");
    assert_eq!(
        anomaly["data"]["anomalies"][0],
        json!({"kind": "non_json_data", "sample": "this is not json"})
    );
    let at = |kind: &str| events.iter().position(|e| e["type"] == kind);
    assert!(at("assistant/message") < at("stream/anomaly"));
}
