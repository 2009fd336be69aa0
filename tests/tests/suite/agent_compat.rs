//! A session against a server that behaves like llama-cpp-python's (M1, V2, L3, L4, B3),
//! in process through the library's `Session`: each call runs once, the second request is
//! accepted, tools are offered with `tool_choice`, output is bounded (the output limit, the
//! attempt's wall clock), a repeated 500 is not retried on, and a session in which the model
//! never called a tool warns. Through the real binary: `--max-output-tokens`
//! reaches `run` and `resume`, a repeated 500 is shown once, and a session in which the model
//! never called a tool says so on its final line.

use crate::agent_common::{Project, Seen, answer, last_stop, openai, reopen_options, text, types};
use paddock::agent::Quiet;
use paddock::log::StopReason;
use paddock::session::{ModelChoice, ReopenOptions, Session};
use paddock_tests::scripted::{
    Fault, Quirks, Script, ScriptCall, ScriptedServer, Step, Turn, null_content_error,
};
use serde_json::{Value, json};

const LLAMA_CPP_PYTHON: Quirks = Quirks {
    refuse_null_content: true,
    drop_tools_without_tool_choice: true,
    mirror_function_call: true,
};

async fn server(steps: Vec<Step>, quirks: Quirks) -> ScriptedServer {
    ScriptedServer::start_with(Script { steps }, quirks)
        .await
        .expect("scripted server")
}

fn run_args<'a>(url: &'a str, task: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["run", task, "--base-url", url, "--model", "local"];
    args.extend_from_slice(extra);
    args
}

fn count(events: &[Value], kind: &str) -> usize {
    events.iter().filter(|e| e["type"] == kind).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_loop_against_llama_cpp_python_runs_the_call_once_and_completes() {
    let project = Project::warm(&[("notes.txt", "the secret word is paddock\n")]);
    let read = ScriptCall::new("call_q1", "read_file", r#"{"path": "notes.txt"}"#, &[5, 12]);
    let server = server(
        vec![
            Step::Reply(Turn::calls(vec![read])),
            Step::Reply(Turn::text(&["The word is paddock."])),
        ],
        LLAMA_CPP_PYTHON,
    )
    .await;
    let local = ModelChoice {
        model: Some("local".into()),
        ..openai(&server)
    };
    let session = project.start(local).await;
    let end = session.send("what is the word?", &Quiet).await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);
    assert_eq!(end.warning, None, "the model called a tool");

    let events = project.events(session.id());
    assert_eq!(answer(&events), "The word is paddock.");
    assert_eq!(count(&events, "tool/call"), 1, "{:?}", types(&events));
    assert_eq!(count(&events, "tool/result"), 1);
    assert_eq!(last_stop(&events), "completed");

    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the second request was accepted at once");
    assert_eq!(requests[0].body["tool_choice"], json!("auto"));
    assert_eq!(requests[0].body["max_tokens"], json!(8192));
    let messages = requests[1].body["messages"].as_array().expect("messages");
    let assistant = messages
        .iter()
        .find(|m| m["role"] == "assistant")
        .expect("the call went back");
    assert_eq!(assistant["content"], json!(""));
    assert_eq!(assistant["tool_calls"].as_array().map(Vec::len), Some(1));
    let results: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(results.len(), 1, "one result for one call");
    assert_eq!(results[0]["tool_call_id"], "call_q1");
}

/// A model that never calls a tool, for two turns.
async fn toolless() -> ScriptedServer {
    server(
        vec![
            Step::Reply(Turn::text(&["I know without looking."])),
            Step::Reply(Turn::text(&["Still no tool."])),
        ],
        Quirks::default(),
    )
    .await
}

/// Each response asked for at most 123, then 77 tokens: the output limit of the first turn,
/// then of the reopened session's.
fn limited_to_123_then_77(server: &ScriptedServer) {
    let requests = server.requests();
    assert_eq!(requests[0].body["max_tokens"], json!(123));
    assert_eq!(requests[1].body["max_tokens"], json!(77));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_output_limit_reaches_each_request_and_a_toolless_session_warns() {
    let project = Project::warm(&[("a.txt", "a\n")]);
    let server = toolless().await;
    let limited = ModelChoice {
        max_output_tokens: Some(123),
        ..openai(&server)
    };
    let session = project.start(limited).await;
    let id = session.id().to_string();
    let end = session.send("read a.txt", &Quiet).await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);
    let warning = end.warning.unwrap_or_default();
    assert!(
        warning.contains("the model called no tool in this session although 7 were offered"),
        "{warning}"
    );
    assert!(warning.contains("docs/providers.md"), "{warning}");
    drop(session);

    let options = ReopenOptions {
        max_output_tokens: Some(77),
        ..reopen_options()
    };
    let session = project.reopen(&id, options, &Seen::default()).await;
    let end = session.send("use the tool", &Quiet).await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);
    limited_to_123_then_77(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_output_limit_flag_reaches_run_and_resume_and_a_toolless_session_says_so() {
    let project = Project::warm(&[("a.txt", "a\n")]);
    let server = toolless().await;
    let url = server.openai_base_url();
    let output = project
        .paddock(&run_args(
            &url,
            "read a.txt",
            &["--max-output-tokens", "123"],
        ))
        .await;
    let said = text(&output);
    assert_eq!(output.status.code(), Some(0), "{said}");
    let last = said
        .lines()
        .rfind(|l| l.starts_with("stopped:"))
        .unwrap_or("");
    assert!(
        last.contains("the model called no tool in this session although 7 were offered"),
        "{said}"
    );
    assert!(last.contains("docs/providers.md"), "{last}");

    let id = project.only_session();
    let output = project
        .paddock(&["resume", &id, "use the tool", "--max-output-tokens", "77"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    limited_to_123_then_77(&server);

    let zero = project
        .paddock(&run_args(&url, "x", &["--max-output-tokens", "0"]))
        .await;
    assert_eq!(zero.status.code(), Some(2), "{}", text(&zero));
}

/// A server that refuses three times with the same 500 body, then would answer.
async fn refusing_server() -> ScriptedServer {
    let refusal = || Step::Status {
        status: 500,
        body: null_content_error(2),
        retry_after_secs: None,
        retry_after_ms: None,
    };
    server(
        vec![
            refusal(),
            refusal(),
            refusal(),
            Step::Reply(Turn::text(&["no"])),
        ],
        Quirks::default(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_500_repeated_with_the_same_body_is_not_retried_on_and_logged_whole() {
    let project = Project::warm(&[]);
    let server = refusing_server().await;
    let session = project.start(openai(&server)).await;
    let end = session.send("hello", &Quiet).await;
    assert_eq!(end.reason, StopReason::ModelError, "{:?}", end.detail);
    let detail = end.detail.unwrap_or_default();
    assert!(detail.contains("with the same error twice"), "{detail}");
    assert_eq!(server.requests().len(), 2, "{detail}");

    let events = project.events(session.id());
    assert_eq!(last_stop(&events), "model_error");
    let logged: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "attempt/end")
        .filter_map(|e| e["data"]["error"].as_str())
        .collect();
    assert_eq!(logged.len(), 2);
    assert!(
        logged
            .iter()
            .all(|e| e.contains("ChatCompletionRequestFunctionMessage")),
        "the log keeps the whole message: {logged:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_500_repeated_with_the_same_body_is_shown_once_and_shortened_by_run() {
    let project = Project::warm(&[]);
    let server = refusing_server().await;
    let url = server.openai_base_url();
    let output = project.paddock(&run_args(&url, "hello", &[])).await;
    let said = text(&output);
    assert_eq!(output.status.code(), Some(4), "{said}");
    assert_eq!(server.requests().len(), 2, "{said}");
    assert_eq!(
        said.matches("'typed-dict'").count(),
        1,
        "shown once: {said}"
    );
    assert!(
        !said.contains("ChatCompletionRequestFunctionMessage"),
        "shortened: {said}"
    );
    assert!(said.contains("same error twice"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_never_ends_is_cut_and_recorded_as_a_failed_attempt() {
    let project = Project::warm(&[]);
    let endless = Turn::text(&["Well"]).with_fault(Fault::Endless {
        frames: 2,
        every_ms: 25,
    });
    let server = server(vec![Step::Reply(endless)], Quirks::default()).await;
    let default = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../presets/default.toml"
    ))
    .expect("the default preset");
    let preset = format!(
        "{default}\n[model]\nprovider = \"openai\"\nmodel = \"local\"\nbase_url = \"{}\"\n\
         attempt_timeout_ms = 1500\nidle_timeout_ms = 5000\nmax_retries = 0\n",
        server.openai_base_url()
    );
    let presets = tempfile::tempdir().expect("preset dir");
    let path = presets.path().join("bounded.toml");
    std::fs::write(&path, preset).expect("write preset");
    let session = Session::builder(project.env())
        .preset(path.to_str().unwrap())
        .start()
        .await
        .unwrap();
    let end = session.send("ramble", &Quiet).await;
    assert_eq!(end.reason, StopReason::ModelError, "{:?}", end.detail);
    let said = end.detail.unwrap_or_default();
    assert!(said.contains("attempt_timeout_ms"), "{said}");
    let events = project.events(session.id());
    assert_eq!(last_stop(&events), "model_error");
    let ended = events
        .iter()
        .find(|e| e["type"] == "attempt/end")
        .expect("the attempt is recorded");
    assert_eq!(ended["data"]["status"], "failed");
    let error = ended["data"]["error"].as_str().unwrap_or_default();
    assert!(error.contains("cut after 1.5s"), "{error}");
    let partial = ended["data"]["partial_text"].as_str().unwrap_or_default();
    assert!(partial.starts_with("Welland so on"), "{partial}");
}
