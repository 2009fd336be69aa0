//! OpenAI Chat Completions end to end, through real HTTP against the scripted server (M1,
//! V1, V2, L3).

use crate::common::{config, provider, run, server, user};
use paddock::model::{
    AttemptStatus, Delta, Diagnostic, EventSink, Finish, Message, ModelError, ModelEvent,
    ModelRequest, Outcome, ProviderKind, TRUNCATED_CALL_ERROR, ToolDef, ToolResultMessage,
};
use paddock_tests::scripted::{ScriptCall, ScriptFinish, Step, Turn};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const KIND: ProviderKind = ProviderKind::Openai;

#[tokio::test]
async fn text_reply_streams_deltas_tagged_with_the_attempt_then_commits() {
    let server = server(vec![Step::Reply(Turn::text(&["Hello", ", world."]))]).await;
    let provider = provider(config(KIND, &server));
    let (result, events) = run(provider.as_ref(), &user("hi")).await;
    let completion = result.expect("completes");
    let message = &completion.message;
    assert_eq!(message.text, "Hello, world.");
    assert_eq!(
        (message.finish.clone(), message.outcome),
        (Finish::Stop, Outcome::Completed)
    );
    assert_eq!(
        message.usage.map(|u| (u.input_tokens, u.output_tokens)),
        Some((10, 5))
    );
    assert!(
        message.cost_usd.is_some_and(|c| c > 0.0),
        "gpt-4.1-mini has a price"
    );
    let texts: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::Delta {
                attempt,
                delta: Delta::Text { text },
            } => {
                assert_eq!(attempt, &message.attempt);
                Some(text.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["Hello", ", world."]);
    assert!(matches!(
        events.last(),
        Some(ModelEvent::AttemptEnded {
            status: AttemptStatus::Completed,
            ..
        })
    ));
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.body["stream"], json!(true));
    assert_eq!(sent.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        sent.headers.get("accept").map(String::as_str),
        Some("text/event-stream")
    );
}

#[tokio::test]
async fn split_tool_call_arrives_whole_and_the_next_request_carries_the_exact_history() {
    let read = ScriptCall::new(
        "call_1",
        "read_file",
        r#"{"path": "src/main.rs"}"#,
        &[3, 9, 15],
    );
    let server = server(vec![
        Step::Reply(Turn::calls(vec![read])),
        Step::Reply(Turn::text(&["It prints hello."])),
    ])
    .await;
    let provider = provider(config(KIND, &server));
    let tool = ToolDef {
        name: "read_file".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    };
    let mut request = ModelRequest {
        messages: vec![
            Message::System {
                text: "Be brief.".into(),
            },
            Message::User {
                images: Vec::new(),
                text: "What does main do?".into(),
            },
        ]
        .into(),
        tools: vec![tool],
        max_output_tokens: Some(256),
        ..ModelRequest::default()
    };
    let (first, _) = run(provider.as_ref(), &request).await;
    let first = first.expect("first turn completes").message;
    assert_eq!(first.outcome, Outcome::ToolCalls);
    assert_eq!(first.calls[0].parsed, Some(json!({"path": "src/main.rs"})));

    request.messages.push(first.to_history());
    request.messages.push(Message::Tool(ToolResultMessage {
        images: Vec::new(),
        call_id: "call_1".into(),
        content: "fn main() { println!(\"hello\") }".into(),
        is_error: false,
    }));
    let (second, _) = run(provider.as_ref(), &request).await;
    assert_eq!(
        second.expect("second turn completes").message.text,
        "It prints hello."
    );

    let sent = &server.requests()[1].body;
    assert_eq!(
        sent["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What does main do?"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "read_file", "arguments": "{\"path\": \"src/main.rs\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "fn main() { println!(\"hello\") }"},
        ])
    );
    assert_eq!(sent["tools"][0]["function"]["name"], json!("read_file"));
    // Not OpenAI's own URL: the field every compatible server knows.
    assert_eq!(sent["max_tokens"], json!(256));
    assert_eq!(sent["tool_choice"], json!("auto"));
    assert_eq!(sent["model"], json!("gpt-4.1-mini"));
}

#[tokio::test]
async fn length_cut_blocks_the_calls_and_is_not_retried() {
    let cut = ScriptCall::new(
        "call_1",
        "write_file",
        r#"{"path": "a.txt", "content": "long te"#,
        &[10],
    );
    let turn = Turn {
        finish: Some(ScriptFinish::Length),
        ..Turn::calls(vec![cut])
    };
    let server = server(vec![Step::Reply(turn)]).await;
    let (result, _) = run(provider(config(KIND, &server)).as_ref(), &user("write")).await;
    let message = result.expect("a cut response still completes").message;
    assert_eq!(message.outcome, Outcome::Truncated);
    assert_eq!(
        message.calls[0].not_executable.as_deref(),
        Some(TRUNCATED_CALL_ERROR)
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn garbage_lines_and_a_missing_done_are_survived_and_recorded() {
    let turn = Turn {
        garbage: vec![
            "data: {not json".into(),
            ": a comment".into(),
            "data: <html>".into(),
        ],
        omit_end: true,
        ..Turn::text(&["fine"])
    };
    let server = server(vec![Step::Reply(turn)]).await;
    let (result, _) = run(provider(config(KIND, &server)).as_ref(), &user("hi")).await;
    let message = result.expect("completes").message;
    assert_eq!(message.text, "fine");
    assert!(message.diagnostics.contains(&Diagnostic::MissingEndMarker));
    let skipped = message
        .diagnostics
        .iter()
        .filter(|d| matches!(d, Diagnostic::NonJsonData { .. }))
        .count();
    assert_eq!(skipped, 2);
}

#[tokio::test]
async fn quirky_chunks_from_a_real_socket_assemble() {
    let frames = [
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":null},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c1","function":{"name":"grep","arguments":null}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"","function":{"name":"","arguments":"{\"pattern\":"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"fn main\"}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#,
        "[DONE]",
    ];
    let raw = frames.iter().map(|f| format!("data: {f}\n\n")).collect();
    let server = server(vec![Step::Reply(Turn {
        raw: Some(raw),
        ..Turn::default()
    })])
    .await;
    let (result, _) = run(provider(config(KIND, &server)).as_ref(), &user("find main")).await;
    let message = result.expect("completes").message;
    assert_eq!(message.calls.len(), 1);
    assert_eq!(
        (
            message.calls[0].call.id.as_str(),
            message.calls[0].call.name.as_str()
        ),
        ("c1", "grep")
    );
    assert_eq!(message.calls[0].parsed, Some(json!({"pattern": "fn main"})));
    assert_eq!(message.usage.map(|u| u.output_tokens), Some(4));
}

#[tokio::test]
async fn a_missing_api_key_is_a_clear_error_before_any_request() {
    let server = server(vec![]).await;
    let mut config = config(KIND, &server);
    config.api_key_env = Some("PADDOCK_TEST_SURELY_UNSET_KEY".into());
    let error = paddock::model::connect(config)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("PADDOCK_TEST_SURELY_UNSET_KEY"), "{error}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn extra_headers_are_sent() {
    let server = server(vec![Step::Reply(Turn::text(&["ok"]))]).await;
    let mut config = config(KIND, &server);
    config
        .extra_headers
        .insert("x-title".into(), "paddock-tests".into());
    let provider = provider(config);
    let result = provider
        .complete(&user("hi"), &EventSink::none(), &CancellationToken::new())
        .await;
    assert!(
        result.is_ok(),
        "{:?}",
        result.err().map(|e: ModelError| e.to_string())
    );
    assert_eq!(
        server.requests()[0]
            .headers
            .get("x-title")
            .map(String::as_str),
        Some("paddock-tests")
    );
}
