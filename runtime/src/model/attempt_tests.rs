//! Attempts and retries (L3, L4, X2): what is retried, how often, and what is shown.

use super::*;
use crate::model::types::{Finish, Outcome};
use std::cell::Cell;

fn policy(max_retries: u32, budget_ms: u64) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        base: Duration::from_millis(1),
        max: Duration::from_millis(4),
        budget: Duration::from_millis(budget_ms),
    }
}

fn message(attempt: AttemptId) -> AssistantMessage {
    AssistantMessage { reasoning: Vec::new(),
        attempt,
        text: "ok".into(),
        calls: vec![],
        finish: Finish::Stop,
        finish_inferred: false,
        outcome: Outcome::Completed,
        usage: None,
        cost_usd: None,
        diagnostics: vec![],
    }
}

fn failed(text: &str, error: ModelError) -> AttemptResult {
    Err((
        error,
        PartialOutput {
            text: text.into(),
            calls: vec![],
        },
    ))
}

#[test]
fn backoff_doubles_up_to_the_cap_and_jitter_only_shortens() {
    let p = RetryPolicy {
        max_retries: 5,
        base: Duration::from_millis(100),
        max: Duration::from_millis(1000),
        budget: Duration::from_secs(10),
    };
    assert_eq!(p.backoff(1, 0.0), Duration::from_millis(100));
    assert_eq!(p.backoff(2, 0.0), Duration::from_millis(200));
    assert_eq!(p.backoff(5, 0.0), Duration::from_millis(1000));
    assert_eq!(p.backoff(60, 0.0), Duration::from_millis(1000));
    assert!(p.backoff(1, 0.999_999) >= Duration::from_millis(75));
    assert!(p.backoff(1, 0.5) < p.backoff(1, 0.0));
}

#[tokio::test]
async fn a_stall_is_retried_and_only_the_completed_attempt_is_committed() {
    let (sink, mut events) = EventSink::channel();
    let calls = Cell::new(0);
    let result = run_attempts(&policy(3, 1000), &sink, &CancellationToken::new(), |id| {
        calls.set(calls.get() + 1);
        let n = calls.get();
        async move {
            if n == 1 {
                failed(
                    "partial",
                    ModelError::IdleTimeout {
                        after: Duration::from_millis(1),
                    },
                )
            } else {
                Ok(message(id))
            }
        }
    })
    .await;
    let completion = result.expect("second attempt succeeds");
    assert_eq!(completion.message.text, "ok");
    assert_eq!(completion.attempts.len(), 2);
    assert_eq!(completion.attempts[0].status, AttemptStatus::Failed);
    assert_eq!(
        completion.attempts[0]
            .partial
            .as_ref()
            .map(|p| p.text.as_str()),
        Some("partial")
    );
    assert_eq!(completion.attempts[1].id, completion.message.attempt);
    let mut kinds = vec![];
    while let Ok(event) = events.try_recv() {
        kinds.push(match event {
            ModelEvent::AttemptStarted { .. } => "start",
            ModelEvent::AttemptEnded {
                status: AttemptStatus::Failed,
                ..
            } => "failed",
            ModelEvent::AttemptEnded {
                status: AttemptStatus::Completed,
                ..
            } => "completed",
            ModelEvent::RetryScheduled { .. } => "retry",
            _ => "other",
        });
    }
    assert_eq!(kinds, ["start", "failed", "retry", "start", "completed"]);
}

#[tokio::test]
async fn validation_errors_are_not_retried() {
    let calls = Cell::new(0);
    let result = run_attempts(
        &policy(3, 1000),
        &EventSink::none(),
        &CancellationToken::new(),
        |_| {
            calls.set(calls.get() + 1);
            async {
                failed(
                    "",
                    ModelError::Status {
                        url: "u".into(),
                        status: 400,
                        body: "bad".into(),
                        retry_after: None,
                        should_retry: None,
                    },
                )
            }
        },
    )
    .await;
    assert!(matches!(
        result,
        Err(ModelError::Status { status: 400, .. })
    ));
    assert_eq!(calls.get(), 1);
}

#[tokio::test]
async fn retries_stop_at_the_limit_and_at_the_budget() {
    let broken = || async { failed("", ModelError::StreamBroken("reset".into())) };
    let result = run_attempts(
        &policy(2, 1000),
        &EventSink::none(),
        &CancellationToken::new(),
        |_| broken(),
    )
    .await;
    assert!(
        matches!(
            result,
            Err(ModelError::RetriesExhausted { attempts: 3, .. })
        ),
        "{result:?}"
    );

    let slow = || async {
        failed(
            "",
            ModelError::Status {
                url: "u".into(),
                status: 429,
                body: String::new(),
                retry_after: Some(Duration::from_secs(30)),
                should_retry: None,
            },
        )
    };
    let result = run_attempts(
        &policy(5, 1000),
        &EventSink::none(),
        &CancellationToken::new(),
        |_| slow(),
    )
    .await;
    assert!(
        matches!(
            result,
            Err(ModelError::RetryBudgetExhausted { attempts: 1, .. })
        ),
        "{result:?}"
    );
}

fn server_error(status: u16, body: &str) -> ModelError {
    ModelError::Status {
        url: "u".into(),
        status,
        body: body.into(),
        retry_after: None,
        should_retry: None,
    }
}

#[tokio::test]
async fn the_same_500_body_twice_stops_but_an_outage_is_retried_to_the_limit() {
    let long = "validation error: ".to_owned() + &"x".repeat(2_000);
    let (sink, mut events) = EventSink::channel();
    let calls = Cell::new(0);
    let result = run_attempts(&policy(4, 1000), &sink, &CancellationToken::new(), |_| {
        calls.set(calls.get() + 1);
        let body = long.clone();
        async move { failed("", server_error(500, &body)) }
    })
    .await;
    assert!(
        matches!(
            &result,
            Err(ModelError::RepeatedError { attempts: 2, status: 500, last })
                if last.to_string().contains(&long)
        ),
        "{result:?}"
    );
    assert_eq!(calls.get(), 2);
    let mut reasons = vec![];
    let mut logged = vec![];
    while let Ok(event) = events.try_recv() {
        match event {
            ModelEvent::RetryScheduled { reason, .. } => reasons.push(reason),
            ModelEvent::AttemptEnded { error, .. } => logged.extend(error),
            _ => {}
        }
    }
    assert_eq!(reasons.len(), 1);
    assert!(reasons[0].chars().count() < 400, "{}", reasons[0]);
    assert!(reasons[0].contains("more characters in the session log"));
    assert!(
        logged.iter().all(|e| e.contains(&long)),
        "the record keeps it all"
    );

    for outage in [server_error(503, "busy"), server_error(500, "")] {
        let calls = Cell::new(0);
        let result = run_attempts(
            &policy(3, 1000),
            &EventSink::none(),
            &CancellationToken::new(),
            |_| {
                calls.set(calls.get() + 1);
                let error = match &outage {
                    ModelError::Status { status, body, .. } => server_error(*status, body),
                    _ => ModelError::EmptyStream,
                };
                async move { failed("", error) }
            },
        )
        .await;
        assert!(matches!(
            result,
            Err(ModelError::RetriesExhausted { attempts: 4, .. })
        ));
        assert_eq!(calls.get(), 4);
    }
}

#[tokio::test]
async fn a_repeated_transient_error_is_shown_once() {
    let (sink, mut events) = EventSink::channel();
    let _ = run_attempts(
        &policy(2, 1000),
        &sink,
        &CancellationToken::new(),
        |_| async { failed("", ModelError::StreamBroken("reset by peer".into())) },
    )
    .await;
    let mut reasons = vec![];
    while let Ok(event) = events.try_recv() {
        if let ModelEvent::RetryScheduled { reason, .. } = event {
            reasons.push(reason);
        }
    }
    assert_eq!(
        reasons,
        [
            "the stream broke off: reset by peer",
            "the same error again"
        ]
    );
}

#[tokio::test]
async fn cancellation_during_backoff_returns_at_once() {
    let cancel = CancellationToken::new();
    let mut p = policy(3, 60_000);
    p.base = Duration::from_secs(30);
    p.max = Duration::from_secs(30);
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        trigger.cancel();
    });
    let started = std::time::Instant::now();
    let result = run_attempts(&p, &EventSink::none(), &cancel, |_| async {
        failed("", ModelError::EmptyStream)
    })
    .await;
    assert!(matches!(result, Err(ModelError::Cancelled)));
    assert!(started.elapsed() < Duration::from_millis(500));
}
