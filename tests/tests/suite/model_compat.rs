//! Real OpenAI-compatible servers' quirks, imitated by the scripted server and met through real
//! HTTP (M1, V2, L4): a mirrored legacy `function_call` is one call, the assistant message
//! with calls is accepted by a server that refuses `null` content, a 500 with the same body
//! twice stops the retries, and a stream that never ends is cut by the attempt's wall clock.

use crate::common::{config, drain, provider, run, server};
use paddock::model::{
    AttemptStatus, Diagnostic, EventSink, Message, ModelError, ModelEvent, ModelRequest,
    ProviderKind, ToolDef, ToolResultMessage,
};
use paddock_tests::scripted::{
    Fault, Quirks, Script, ScriptCall, ScriptedServer, Step, Turn, null_content_error,
};
use serde_json::json;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const KIND: ProviderKind = ProviderKind::Openai;

/// What llama-cpp-python 0.3's server with `chatml-function-calling` does.
const LLAMA_CPP_PYTHON: Quirks = Quirks {
    refuse_null_content: true,
    drop_tools_without_tool_choice: true,
    mirror_function_call: true,
};

fn read_request() -> ModelRequest {
    ModelRequest {
        messages: vec![Message::User {
            images: Vec::new(),
            text: "What is in notes.txt?".into(),
        }]
        .into(),
        tools: vec![ToolDef {
            name: "read_file".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
        max_output_tokens: None,
        ..ModelRequest::default()
    }
}

#[tokio::test]
async fn a_llama_cpp_python_tool_loop_runs_each_call_once_and_its_second_request_is_accepted() {
    let read = ScriptCall::new("call_7", "read_file", r#"{"path": "notes.txt"}"#, &[4, 11]);
    let steps = vec![
        Step::Reply(Turn::calls(vec![read])),
        Step::Reply(Turn::text(&["It says hello."])),
    ];
    let server = ScriptedServer::start_with(Script { steps }, LLAMA_CPP_PYTHON)
        .await
        .expect("scripted server");
    let provider = provider(config(KIND, &server));
    let mut request = read_request();
    let (first, _) = run(provider.as_ref(), &request).await;
    let first = first.expect("the first request completes").message;
    assert_eq!(first.calls.len(), 1, "{:#?}", first.calls);
    assert_eq!(first.calls[0].call.id, "call_7");
    assert_eq!(first.calls[0].parsed, Some(json!({"path": "notes.txt"})));
    assert!(
        first
            .diagnostics
            .contains(&Diagnostic::MirroredFunctionCall {
                id: "call_7".into()
            })
    );
    let sent = &server.requests()[0].body;
    assert_eq!(sent["tool_choice"], json!("auto"), "{sent}");
    assert_eq!(sent["max_tokens"], json!(8192), "{sent}");

    request.messages.push(first.to_history());
    request.messages.push(Message::Tool(ToolResultMessage {
        images: Vec::new(),
        call_id: "call_7".into(),
        content: "hello".into(),
        is_error: false,
    }));
    let (second, _) = run(provider.as_ref(), &request).await;
    let second = second.expect("the server accepts the second request");
    assert_eq!(second.message.text, "It says hello.");
    assert_eq!(second.attempts.len(), 1, "accepted at the first try");
    let assistant = &server.requests()[1].body["messages"][1];
    assert_eq!(assistant["content"], json!(""), "{assistant}");
}

#[test]
fn the_quirky_server_really_refuses_null_content_and_drops_tools_without_tool_choice() {
    // The imitation itself: what paddock no longer sends is what broke it.
    let refused = LLAMA_CPP_PYTHON.refusal(&json!({"messages": [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": null, "tool_calls": []}]}));
    assert_eq!(refused, Some((500, null_content_error(1))));
    let dropped = LLAMA_CPP_PYTHON.adapt(
        &json!({"tools": [{"type": "function"}]}),
        Turn::calls(vec![ScriptCall::new("c1", "read_file", "{}", &[])]),
    );
    assert!(dropped.calls.is_empty() && !dropped.text.is_empty());
}

#[tokio::test]
async fn the_same_500_body_twice_stops_the_retries_and_an_outage_is_still_retried() {
    let long = null_content_error(2);
    let refusal = || Step::Status {
        status: 500,
        body: long.clone(),
        retry_after_secs: None,
        retry_after_ms: None,
    };
    let refusing = server(vec![
        refusal(),
        refusal(),
        Step::Reply(Turn::text(&["never"])),
    ])
    .await;
    let (result, events) = run(provider(config(KIND, &refusing)).as_ref(), &read_request()).await;
    match &result {
        Err(ModelError::RepeatedError {
            attempts: 2,
            status: 500,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(refusing.requests().len(), 2);
    assert_eq!(refusing.remaining_steps(), 1);
    let reasons: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::RetryScheduled { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(reasons.len(), 1);
    assert!(reasons[0].len() < long.len(), "shortened: {}", reasons[0]);
    let recorded = events.iter().any(|e| matches!(e,
        ModelEvent::AttemptEnded { error: Some(error), .. } if error.contains("Input should be a valid string', 'input': None}]")));
    assert!(recorded, "the attempt's record keeps the whole message");

    let transient = |code| Step::Status {
        status: code,
        body: "upstream busy".into(),
        retry_after_secs: None,
        retry_after_ms: None,
    };
    let busy = server(vec![
        transient(503),
        transient(503),
        Step::Reply(Turn::text(&["ok"])),
    ])
    .await;
    let (result, _) = run(provider(config(KIND, &busy)).as_ref(), &read_request()).await;
    assert_eq!(result.map(|c| c.attempts.len()).ok(), Some(3));
}

#[tokio::test]
async fn a_stream_that_never_ends_is_cut_by_the_attempt_limit_and_not_retried() {
    let endless = Turn::text(&["Let me think"]).with_fault(Fault::Endless {
        frames: 2,
        every_ms: 20,
    });
    let server = server(vec![Step::Reply(endless), Step::Reply(Turn::text(&["no"]))]).await;
    let mut config = config(KIND, &server);
    config.attempt_timeout_ms = 600;
    // Well past the attempt limit: only the wall clock can end this stream.
    config.idle_timeout_ms = 5_000;
    let provider = provider(config);
    let (sink, mut receiver) = EventSink::channel();
    let started = Instant::now();
    let result = provider
        .complete(&read_request(), &sink, &CancellationToken::new())
        .await;
    let elapsed = started.elapsed();
    let events = drain(&mut receiver);
    assert!(
        matches!(result, Err(ModelError::AttemptTimeout { after }) if after == Duration::from_millis(600)),
        "{result:?}"
    );
    assert!(elapsed >= Duration::from_millis(600), "{elapsed:?}");
    assert_eq!(server.requests().len(), 1, "not retried");
    let ended = events.iter().find_map(|e| match e {
        ModelEvent::AttemptEnded {
            status: AttemptStatus::Failed,
            error: Some(error),
            partial: Some(partial),
            ..
        } => Some((error.clone(), partial.text.clone())),
        _ => None,
    });
    let (error, partial) = ended.expect("a failed attempt");
    assert!(error.contains("attempt_timeout_ms"), "{error}");
    assert!(partial.starts_with("Let me think"), "{partial}");
    assert!(
        partial.contains("and so on"),
        "the deltas kept coming: {partial}"
    );
}
