//! Stream anomalies over real HTTP against the scripted server: a spliced
//! Anthropic response is a failed attempt that is retried, and nothing of it is committed; a
//! body in another API's format, or lines that are not JSON, fail at once with what arrived
//! named, instead of passing as an empty answer or being retried as a dropped connection.

use crate::common::{KINDS, config, provider, run, server, user};
use paddock::model::{AttemptStatus, ModelError, ProviderKind};
use paddock_tests::scripted::{Step, Turn};

fn raw(frames: &[&str]) -> Step {
    Step::Reply(Turn {
        raw: Some(frames.iter().map(|f| f.to_string()).collect()),
        ..Turn::default()
    })
}

const SPLICED: &[&str] = &[
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_a\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"write_file\",\"input\":{}}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"a\"}}\n\n",
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_b\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"write_file\",\"input\":{}}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"b\\\"}\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
];

#[tokio::test]
async fn a_spliced_anthropic_response_is_a_failed_attempt_and_is_retried() {
    let server = server(vec![raw(SPLICED), Step::Reply(Turn::text(&["ok"]))]).await;
    let kind = ProviderKind::Anthropic;
    let (result, _) = run(provider(config(kind, &server)).as_ref(), &user("hi")).await;
    let completion = result.expect("the retry completes");
    assert_eq!(completion.message.text, "ok");
    assert!(
        completion.message.calls.is_empty(),
        "{:?}",
        completion.message.calls
    );
    assert_eq!(completion.attempts.len(), 2);
    let first = &completion.attempts[0];
    assert_eq!(first.status, AttemptStatus::Failed);
    let error = first.error.as_deref().unwrap_or_default();
    assert!(
        error.contains("msg_b") && error.contains("spliced"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn another_apis_stream_fails_at_once_and_names_what_arrived() {
    let responses = [
        "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\"}}\n\n",
        "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n",
        "event: response.completed\ndata: {\"type\":\"response.completed\"}\n\n",
    ];
    let server = server(vec![raw(&responses), Step::Reply(Turn::text(&["never"]))]).await;
    let (result, _) = run(
        provider(config(ProviderKind::Openai, &server)).as_ref(),
        &user("hi"),
    )
    .await;
    let error = result.expect_err("not an empty answer");
    let text = error.to_string();
    assert!(matches!(error, ModelError::Protocol { .. }), "{text}");
    assert!(text.contains("`response.created`"), "{text}");
    assert_eq!(server.requests().len(), 1, "not retried");
}

#[tokio::test]
async fn lines_that_are_not_json_are_named_and_not_retried() {
    for kind in KINDS {
        // A keep-alive comment first: the garbage is on line 3 of the body.
        let garbage = [
            ": keep-alive\n\n",
            "data: <html><body>Bad gateway</body></html>\n\n",
            "data: oops\n\n",
        ];
        let server = server(vec![raw(&garbage), Step::Reply(Turn::text(&["never"]))]).await;
        let (result, _) = run(provider(config(kind, &server)).as_ref(), &user("hi")).await;
        let text = result.expect_err("garbage is an error").to_string();
        assert!(text.contains("line 3 is not JSON"), "{kind:?}: {text}");
        assert!(text.contains("<html><body>Bad gateway"), "{kind:?}: {text}");
        assert_eq!(server.requests().len(), 1, "{kind:?}: not retried");
    }
}
