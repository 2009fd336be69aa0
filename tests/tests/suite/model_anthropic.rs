//! Anthropic Messages end to end, through real HTTP against the scripted server (M1, V1,
//! V2, L4).

use crate::common::{config, provider, run, server, user};
use paddock::model::{
    Finish, Message, ModelRequest, Outcome, ProviderKind, TRUNCATED_CALL_ERROR, ToolDef,
    ToolResultMessage,
};
use paddock_tests::scripted::{ScriptCall, ScriptFinish, Step, Turn};
use serde_json::json;

const KIND: ProviderKind = ProviderKind::Anthropic;

#[tokio::test]
async fn text_and_split_tool_use_arrive_whole_and_the_next_request_carries_the_exact_history() {
    let ls = ScriptCall::new("toolu_1", "list_dir", r#"{"path": "src"}"#, &[1, 5, 9]);
    let first_turn = Turn {
        text: vec!["Listing.".into()],
        ..Turn::calls(vec![ls])
    };
    let server = server(vec![
        Step::Reply(first_turn),
        Step::Reply(Turn::text(&["Two files."])),
    ])
    .await;
    let provider = provider(config(KIND, &server));
    let mut request = ModelRequest {
        messages: vec![
            Message::System {
                text: "Be brief.".into(),
            },
            Message::User {
                images: Vec::new(),
                text: "What is in src?".into(),
            },
        ]
        .into(),
        tools: vec![ToolDef {
            name: "list_dir".into(),
            description: "List a directory".into(),
            parameters: json!({"type": "object"}),
        }],
        max_output_tokens: None,
        ..ModelRequest::default()
    };
    let (first, _) = run(provider.as_ref(), &request).await;
    let first = first.expect("first turn completes").message;
    assert_eq!(first.text, "Listing.");
    assert_eq!(
        (first.finish.clone(), first.outcome),
        (Finish::ToolCalls, Outcome::ToolCalls)
    );
    assert_eq!(first.calls[0].parsed, Some(json!({"path": "src"})));
    assert!(first.cost_usd.is_some());

    request.messages.push(first.to_history());
    request.messages.push(Message::Tool(ToolResultMessage {
        images: Vec::new(),
        call_id: "toolu_1".into(),
        content: "a.rs\nb.rs".into(),
        is_error: false,
    }));
    let (second, _) = run(provider.as_ref(), &request).await;
    assert_eq!(
        second.expect("second turn completes").message.text,
        "Two files."
    );

    let sent = &server.requests()[1];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(
        sent.headers.get("anthropic-version").map(String::as_str),
        Some("2023-06-01")
    );
    // Breakpoints by default: the tool list, the system prompt, the end of the last message.
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(
        sent.body["system"],
        json!([{"type": "text", "text": "Be brief.", "cache_control": ephemeral}])
    );
    assert_eq!(sent.body["tools"][0]["cache_control"], ephemeral);
    assert_eq!(sent.body["stream"], json!(true));
    assert_eq!(sent.body["max_tokens"], json!(8192));
    assert_eq!(
        sent.body["tools"][0]["input_schema"],
        json!({"type": "object"})
    );
    assert_eq!(
        sent.body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "What is in src?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Listing."},
                {"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {"path": "src"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.rs\nb.rs",
                 "cache_control": ephemeral}]},
        ])
    );
}

#[tokio::test]
async fn max_tokens_cut_blocks_the_calls() {
    let cut = ScriptCall::new(
        "toolu_1",
        "write_file",
        r#"{"path": "a", "content": "abc"#,
        &[5],
    );
    let turn = Turn {
        finish: Some(ScriptFinish::Length),
        ..Turn::calls(vec![cut])
    };
    let server = server(vec![Step::Reply(turn)]).await;
    let (result, _) = run(provider(config(KIND, &server)).as_ref(), &user("write")).await;
    let message = result.expect("completes").message;
    assert_eq!(
        (message.finish.clone(), message.outcome),
        (Finish::Length, Outcome::Truncated)
    );
    assert_eq!(
        message.calls[0].not_executable.as_deref(),
        Some(TRUNCATED_CALL_ERROR)
    );
}

#[tokio::test]
async fn an_overloaded_error_event_mid_stream_is_retried() {
    let overloaded = vec![
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5}}}\n\n".to_owned(),
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".to_owned(),
    ];
    let server = server(vec![
        Step::Reply(Turn {
            raw: Some(overloaded),
            ..Turn::default()
        }),
        Step::Reply(Turn::text(&["ok"])),
    ])
    .await;
    let (result, _) = run(provider(config(KIND, &server)).as_ref(), &user("hi")).await;
    let completion = result.expect("the retry completes");
    assert_eq!(completion.message.text, "ok");
    assert_eq!(completion.attempts.len(), 2);
    assert!(
        completion.attempts[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("overloaded_error"))
    );
}

#[tokio::test]
async fn a_refusal_is_its_own_outcome() {
    let turn = Turn {
        finish: Some(ScriptFinish::Refusal),
        ..Turn::text(&["I can't help with that."])
    };
    let server = server(vec![Step::Reply(turn)]).await;
    let (result, _) = run(provider(config(KIND, &server)).as_ref(), &user("hi")).await;
    assert_eq!(result.expect("completes").message.outcome, Outcome::Refused);
}
