//! Stream anomalies, one table row each, for both wire formats: what
//! fails the attempt (and whether another attempt may help), and what is recorded and survived.

use super::{AnthropicAssembler, OpenAiAssembler};
use crate::model::error::ModelError;
use crate::model::sse::replay;
use crate::model::types::*;
use bytes::Bytes;

fn anthropic(frames: &[&str]) -> Result<AssistantMessage, ModelError> {
    let assembler = AnthropicAssembler::new(AttemptId("att_test".into()));
    replay(assembler, [Bytes::from(frames.concat())])
}

fn openai(frames: &[&str]) -> Result<AssistantMessage, ModelError> {
    let assembler = OpenAiAssembler::new(AttemptId("att_test".into()));
    replay(assembler, [Bytes::from(frames.concat())])
}

const START_1: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n";
const START_2: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"usage\":{\"input_tokens\":99,\"output_tokens\":1}}}\n\n";
const START_1_AGAIN: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":99,\"output_tokens\":1}}}\n\n";
const TOOL: &str = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"write_file\",\"input\":{}}}\n\n";
const CUT_ARGS: &str = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"a\"}}\n\n";
const TEXT: &str = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"hi\"}}\n\n";
const END: &str = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":5}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
const CHAT: &str = "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// Item 5: another message's start inside this one fails the attempt (retryable); nothing of
/// it, such as a call cut off by the splice, ever reaches the message.
#[test]
fn a_spliced_second_message_is_a_retryable_protocol_error() {
    let result = anthropic(&[START_1, TOOL, CUT_ARGS, START_2, TOOL, END]);
    match result {
        Err(error @ ModelError::Protocol { retry: true, .. }) => {
            let text = error.to_string();
            assert!(text.contains("msg_2") && text.contains("msg_1"), "{text}");
            assert!(error.retry().is_yes());
        }
        other => panic!("{other:?}"),
    }
}

/// Item 5 and 8: the same message started twice is ignored, and its usage is the first's.
#[test]
fn a_repeated_start_of_the_same_message_is_ignored_with_its_usage() {
    let message = anthropic(&[START_1, START_1_AGAIN, TEXT, END]).expect("assembles");
    assert_eq!(message.text, "hi");
    assert!(
        message
            .diagnostics
            .contains(&Diagnostic::RepeatedMessageStart)
    );
    assert_eq!(message.usage.map(|u| u.input_tokens), Some(10));
}

/// Items 6 and 7: bodies with nothing of the wire format in them, and what the error names.
#[test]
fn a_stream_with_no_recognizable_event_names_what_arrived_and_is_not_retried() {
    type Assemble = fn(&[&str]) -> Result<AssistantMessage, ModelError>;
    let cases: [(&str, Assemble, &[&str], &str); 6] = [
        (
            "Responses API on Chat Completions",
            openai,
            &[
                "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{}}\n\n",
                "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n",
            ],
            "`response.created`, `response.output_text.delta`",
        ),
        (
            "Cohere v2 on Chat Completions",
            openai,
            &["event: message-start\ndata: {\"type\":\"message-start\",\"id\":\"x\"}\n\n"],
            "`message-start`",
        ),
        (
            "Cohere v1 on Chat Completions",
            openai,
            &[
                "data: {\"is_finished\":false,\"event_type\":\"text-generation\",\"text\":\"hi\"}\n\n",
            ],
            "`text-generation`",
        ),
        (
            "Chat Completions on Anthropic Messages",
            anthropic,
            &[CHAT],
            "`chat.completion.chunk`",
        ),
        (
            "HTML on Chat Completions",
            openai,
            &["data: <html>\n\n", "data: oops\n\n"],
            "line 1 is not JSON (event 1: expected value at line 1 column 1): \"<html>\"",
        ),
        (
            "garbage on Anthropic Messages",
            anthropic,
            &["event: message_start\ndata: {oops\n\n"],
            "line 2 is not JSON",
        ),
    ];
    for (name, assemble, frames, named) in cases {
        match assemble(frames) {
            Err(error @ ModelError::Protocol { retry: false, .. }) => {
                let text = error.to_string();
                assert!(text.contains(named), "{name}: {text}");
                assert!(!error.retry().is_yes(), "{name}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
}

/// An empty body stays `EmptyStream`: a dropped connection, worth another attempt.
#[test]
fn an_empty_body_is_still_a_retryable_empty_stream() {
    for result in [anthropic(&[]), openai(&[]), openai(&["data: [DONE]\n\n"])] {
        assert!(
            matches!(&result, Err(e @ ModelError::EmptyStream) if e.retry().is_yes()),
            "{result:?}"
        );
    }
}

/// Item 8: noise around a readable stream is survived and recorded for the log.
#[test]
fn noise_around_a_readable_stream_is_recorded_not_fatal() {
    let message = openai(&["data: not json\n\n", CHAT]).expect("assembles");
    assert_eq!(message.text, "hi");
    assert!(matches!(
        message.diagnostics.first(),
        Some(Diagnostic::NonJsonData { sample, line: Some(1) }) if sample == "not json"
    ));
    let message = anthropic(&[
        START_1,
        "event: response.created\ndata: {\"type\":\"response.created\"}\n\n",
        TEXT,
        END,
    ])
    .expect("assembles");
    assert!(message.diagnostics.contains(&Diagnostic::UnknownEvent {
        name: "response.created".into()
    }));
    let shown: Vec<String> = message.diagnostics.iter().map(|d| d.to_string()).collect();
    assert!(
        shown.contains(&"an unknown event `response.created` was ignored".to_string()),
        "{shown:?}"
    );
}

/// Item 8: a second Chat Completions response after the first finished, in the same body, is
/// recorded and ignored, its usage too; a server that gives each chunk its own id still counts
/// its usage chunk.
#[test]
fn a_second_response_in_one_body_is_ignored_and_usage_is_the_kept_ones() {
    let chunk = |id: &str, delta: &str, finish: &str| {
        format!(
            "data: {{\"id\":\"{id}\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
        )
    };
    let usage = |id: &str, input: u64| {
        format!(
            "data: {{\"id\":\"{id}\",\"choices\":[],\"usage\":{{\"prompt_tokens\":{input},\"completion_tokens\":2}}}}\n\n"
        )
    };
    let body = [
        chunk("r1", r#"{"content":"kept"}"#, "null"),
        chunk("r1", "{}", "\"stop\""),
        usage("r1", 10),
        chunk("r2", r#"{"content":"second"}"#, "null"),
        chunk(
            "r2",
            r#"{"tool_calls":[{"index":0,"id":"c","function":{"name":"write_file","arguments":"{}"}}]}"#,
            "\"tool_calls\"",
        ),
        usage("r2", 99),
        "data: [DONE]\n\n".to_owned(),
    ];
    let frames: Vec<&str> = body.iter().map(String::as_str).collect();
    let message = openai(&frames).expect("assembles");
    assert_eq!(message.text, "kept");
    assert!(message.calls.is_empty(), "{:?}", message.calls);
    assert_eq!(message.usage.map(|u| u.input_tokens), Some(10));
    assert!(
        message
            .diagnostics
            .contains(&Diagnostic::SecondResponse { id: "r2".into() }),
        "{:?}",
        message.diagnostics
    );

    let per_chunk_ids = [
        chunk("a", r#"{"content":"hi"}"#, "null"),
        chunk("b", "{}", "\"stop\""),
        usage("c", 7),
        "data: [DONE]\n\n".to_owned(),
    ];
    let frames: Vec<&str> = per_chunk_ids.iter().map(String::as_str).collect();
    let message = openai(&frames).expect("assembles");
    assert_eq!(message.usage.map(|u| u.input_tokens), Some(7));
    assert!(message.diagnostics.is_empty(), "{:?}", message.diagnostics);
}
