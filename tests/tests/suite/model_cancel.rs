//! One cancellation token aborts the model request mid-stream and any retry wait, within
//! 50 ms, and marks the attempt interrupted (X2, L3).

use crate::common::{KINDS, config, provider, server, user};
use paddock::model::{AttemptStatus, Delta, EventSink, ModelError, ModelEvent};
use paddock_tests::scripted::{Fault, Step, Turn};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_millis(50);

/// Starts a request, cancels it when `trigger` matches an event, and returns how long the
/// request took to return after the cancel, its result, and every event.
async fn cancel_when(
    provider: Box<dyn paddock::model::Provider>,
    trigger: fn(&ModelEvent) -> bool,
) -> (Duration, Result<(), ModelError>, Vec<ModelEvent>) {
    let (sink, mut receiver) = EventSink::channel();
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    let task = tokio::spawn(async move {
        provider
            .complete(&user("hi"), &sink, &token)
            .await
            .map(|_| ())
    });
    let mut events = Vec::new();
    while let Some(event) = receiver.recv().await {
        let fire = trigger(&event);
        events.push(event);
        if fire {
            break;
        }
    }
    let cancelled_at = Instant::now();
    cancel.cancel();
    let result = task.await.expect("the request task does not panic");
    let elapsed = cancelled_at.elapsed();
    events.extend(crate::common::drain(&mut receiver));
    (elapsed, result, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_mid_stream_returns_within_50ms_and_marks_the_attempt_interrupted() {
    for kind in KINDS {
        // Stall right after the first text frame (OpenAI: role chunk, text; Anthropic:
        // message_start, block start, ping, text).
        let frames = match kind {
            paddock::model::ProviderKind::Openai => 2,
            paddock::model::ProviderKind::Anthropic => 4,
        };
        let stalls = Turn::text(&["first words", "never"])
            .with_fault(Fault::StallAfter { frames, ms: 10_000 });
        let server = server(vec![Step::Reply(stalls)]).await;
        let mut config = config(kind, &server);
        config.idle_timeout_ms = 30_000;
        let is_text = |e: &ModelEvent| {
            matches!(
                e,
                ModelEvent::Delta {
                    delta: Delta::Text { .. },
                    ..
                }
            )
        };
        let (elapsed, result, events) = cancel_when(provider(config), is_text).await;
        assert!(
            matches!(result, Err(ModelError::Cancelled)),
            "{kind:?}: {result:?}"
        );
        assert!(
            elapsed < LIMIT,
            "{kind:?}: returned {elapsed:?} after the cancel"
        );
        let interrupted = events.iter().find_map(|e| match e {
            ModelEvent::AttemptEnded {
                status: AttemptStatus::Interrupted,
                partial,
                ..
            } => Some(partial.clone()),
            _ => None,
        });
        let partial = interrupted.flatten().map(|p| p.text);
        assert_eq!(partial.as_deref(), Some("first words"), "{kind:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_during_a_retry_wait_returns_within_50ms() {
    for kind in KINDS {
        let limited = Step::Status {
            status: 429,
            body: String::new(),
            retry_after_secs: None,
            retry_after_ms: Some(20_000),
        };
        let server = server(vec![limited]).await;
        let mut config = config(kind, &server);
        config.retry_budget_ms = 60_000;
        let is_retry = |e: &ModelEvent| matches!(e, ModelEvent::RetryScheduled { .. });
        let (elapsed, result, _) = cancel_when(provider(config), is_retry).await;
        assert!(
            matches!(result, Err(ModelError::Cancelled)),
            "{kind:?}: {result:?}"
        );
        assert!(
            elapsed < LIMIT,
            "{kind:?}: returned {elapsed:?} after the cancel"
        );
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn a_cancelled_token_sends_no_request() {
    let server = server(vec![Step::Reply(Turn::text(&["ok"]))]).await;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let result = provider(config(KINDS[0], &server))
        .complete(&user("hi"), &EventSink::none(), &cancel)
        .await;
    assert!(matches!(result, Err(ModelError::Cancelled)));
    assert!(server.requests().is_empty());
}
