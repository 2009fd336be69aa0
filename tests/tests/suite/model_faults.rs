//! Every injected fault ends in the right outcome, for both wire formats: retried and then
//! succeeded, or failed with a clear error; no partial attempt ever shows in the committed
//! message (L3, L4).

use crate::common::{KINDS, config, provider, run, server, user};
use paddock::model::{AttemptStatus, ModelError, ModelEvent};
use paddock_tests::scripted::{Fault, ScriptCall, Step, Turn};
use std::time::{Duration, Instant};

fn status(code: u16) -> Step {
    Step::Status {
        status: code,
        body: format!("scripted {code}"),
        retry_after_secs: None,
        retry_after_ms: None,
    }
}

#[tokio::test]
async fn rate_limit_with_retry_after_is_honoured_then_succeeds() {
    for kind in KINDS {
        let limited = Step::Status {
            status: 429,
            body: "slow down".into(),
            retry_after_secs: None,
            retry_after_ms: Some(80),
        };
        let server = server(vec![limited, Step::Reply(Turn::text(&["ok"]))]).await;
        let (result, events) = run(provider(config(kind, &server)).as_ref(), &user("hi")).await;
        let completion = result.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(completion.message.text, "ok");
        assert_eq!(completion.attempts.len(), 2);
        let requests = server.requests();
        let gap = requests[1].received - requests[0].received;
        assert!(
            gap >= Duration::from_millis(80),
            "{kind:?} waited only {gap:?}"
        );
        let scheduled = events.iter().find_map(|e| match e {
            ModelEvent::RetryScheduled { delay, .. } => Some(*delay),
            _ => None,
        });
        assert_eq!(scheduled, Some(Duration::from_millis(80)), "{kind:?}");
    }
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed() {
    for kind in KINDS {
        let server = server(vec![
            status(500),
            status(503),
            Step::Reply(Turn::text(&["ok"])),
        ])
        .await;
        let (result, _) = run(provider(config(kind, &server)).as_ref(), &user("hi")).await;
        assert_eq!(result.map(|c| c.attempts.len()).ok(), Some(3), "{kind:?}");
    }
}

#[tokio::test]
async fn validation_errors_fail_at_once_with_the_providers_message() {
    for kind in KINDS {
        let bad = Step::Status {
            status: 400,
            body:
                r#"{"error":{"type":"invalid_request_error","message":"tools.0: name too long"}}"#
                    .into(),
            retry_after_secs: None,
            retry_after_ms: None,
        };
        let server = server(vec![bad, Step::Reply(Turn::text(&["never"]))]).await;
        let (result, _) = run(provider(config(kind, &server)).as_ref(), &user("hi")).await;
        let error = result.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            error.contains("HTTP 400") && error.contains("tools.0: name too long"),
            "{kind:?}: {error}"
        );
        assert_eq!(server.requests().len(), 1, "{kind:?}");
    }
}

#[tokio::test]
async fn a_stream_dropped_midway_is_retried_and_its_partial_text_never_commits() {
    for kind in KINDS {
        // Both formats open with one frame before the text (role chunk / message_start); the
        // Anthropic text block adds its start and a ping.
        let frames = match kind {
            paddock::model::ProviderKind::Openai => 2,
            paddock::model::ProviderKind::Anthropic => 4,
        };
        let broken =
            Turn::text(&["PARTIAL ", "never sent"]).with_fault(Fault::DropAfter { frames });
        let server = server(vec![
            Step::Reply(broken),
            Step::Reply(Turn::text(&["clean"])),
        ])
        .await;
        let (result, events) = run(provider(config(kind, &server)).as_ref(), &user("hi")).await;
        let completion = result.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(completion.message.text, "clean", "{kind:?}");
        let first = &completion.attempts[0];
        assert_eq!(first.status, AttemptStatus::Failed, "{kind:?}");
        assert_eq!(
            first.partial.as_ref().map(|p| p.text.as_str()),
            Some("PARTIAL "),
            "{kind:?}"
        );
        assert!(
            first
                .error
                .as_deref()
                .is_some_and(|e| e.contains("broke off")),
            "{kind:?}: {:?}",
            first.error
        );
        let failed_event = events.iter().any(|e| matches!(e,
            ModelEvent::AttemptEnded { status: AttemptStatus::Failed, partial: Some(p), .. } if p.text == "PARTIAL "));
        assert!(failed_event, "{kind:?}");
    }
}

#[tokio::test]
async fn a_call_cut_by_a_dropped_stream_is_shown_as_partial_and_never_commits() {
    for kind in KINDS {
        let write = ScriptCall::new(
            "call_w",
            "write_file",
            r#"{"path": "a", "content": "xyz"}"#,
            &[8, 16],
        );
        // OpenAI: role chunk, two argument pieces; Anthropic: message_start, block start, two pieces.
        let frames = match kind {
            paddock::model::ProviderKind::Openai => 3,
            paddock::model::ProviderKind::Anthropic => 4,
        };
        let broken = Turn::calls(vec![write]).with_fault(Fault::DropAfter { frames });
        let retry = Turn::calls(vec![ScriptCall::new("call_l", "list_dir", "{}", &[])]);
        let server = server(vec![Step::Reply(broken), Step::Reply(retry)]).await;
        let (result, _) = run(provider(config(kind, &server)).as_ref(), &user("hi")).await;
        let completion = result.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        let committed: Vec<_> = completion
            .message
            .calls
            .iter()
            .map(|c| c.call.name.as_str())
            .collect();
        assert_eq!(committed, ["list_dir"], "{kind:?}");
        let partial = completion.attempts[0]
            .partial
            .as_ref()
            .map(|p| p.calls.clone())
            .unwrap_or_default();
        assert_eq!(partial.len(), 1, "{kind:?}");
        assert_eq!(partial[0].name, "write_file", "{kind:?}");
        assert_eq!(partial[0].arguments, r#"{"path": "a", "c"#, "{kind:?}");
    }
}

#[tokio::test]
async fn a_stalled_stream_times_out_and_is_retried() {
    for kind in KINDS {
        let stalled = Turn::text(&["slow"]).with_fault(Fault::StallAfter {
            frames: 1,
            ms: 5_000,
        });
        let server = server(vec![
            Step::Reply(stalled),
            Step::Reply(Turn::text(&["fast"])),
        ])
        .await;
        let started = Instant::now();
        let (result, _) = run(provider(config(kind, &server)).as_ref(), &user("hi")).await;
        let completion = result.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(completion.message.text, "fast");
        assert!(
            completion.attempts[0]
                .error
                .as_deref()
                .is_some_and(|e| e.contains("stalled")),
            "{kind:?}"
        );
        assert!(
            started.elapsed() < Duration::from_millis(2_000),
            "{kind:?}: {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn persistent_server_errors_exhaust_the_retries_with_a_clear_error() {
    for kind in KINDS {
        // 503s: an outage, retried to the limit (a 500 with the same body twice is not).
        let server = server(vec![status(503), status(503), status(503), status(503)]).await;
        let (result, events) = run(provider(config(kind, &server)).as_ref(), &user("hi")).await;
        match result {
            Err(error @ ModelError::RetriesExhausted { attempts: 4, .. }) => {
                let text = error.to_string();
                assert!(
                    text.contains("4 attempts") && text.contains("HTTP 503"),
                    "{text}"
                );
            }
            other => panic!("{kind:?}: {other:?}"),
        }
        let failed = events
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    ModelEvent::AttemptEnded {
                        status: AttemptStatus::Failed,
                        ..
                    }
                )
            })
            .count();
        assert_eq!(failed, 4, "{kind:?}");
    }
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_reported() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let server = server(vec![]).await;
    let mut config = config(paddock::model::ProviderKind::Openai, &server);
    config.base_url = Some(format!("http://127.0.0.1:{port}/v1"));
    config.max_retries = 1;
    let (result, _) = run(provider(config).as_ref(), &user("hi")).await;
    match result {
        Err(ModelError::RetriesExhausted { attempts: 2, last }) => {
            assert!(matches!(*last, ModelError::Connect { .. }), "{last}");
        }
        other => panic!("{other:?}"),
    }
}
