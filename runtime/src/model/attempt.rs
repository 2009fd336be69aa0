//! Attempts and retries: every model request is an attempt with its own id and status; failed
//! attempts are retried with exponential backoff and jitter, within a budget, and a cancellation
//! token stops both the attempt and any wait at once.
//!
//! SPEC L3 (attempt ids and statuses; a failed attempt's partial output is reported for display
//! and never committed), L4 (backoff with jitter, `retry-after` honoured, only retryable errors
//! retried, a retry budget), X2 and X3 (the abort signal reaches the request and retry timers;
//! it is checked before each request).

use super::EventSink;
use super::error::{ModelError, Retry};
use super::types::{
    AssistantMessage, AttemptId, AttemptRecord, AttemptStatus, Completion, ModelEvent,
    PartialOutput,
};
use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;

/// How failed attempts are retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The wait before the first retry, doubled for each further one.
    pub base: Duration,
    /// The longest computed wait (a provider's `retry-after` may ask for longer).
    pub max: Duration,
    /// The total time one request may spend waiting between attempts.
    pub budget: Duration,
}

impl RetryPolicy {
    /// The wait before retry number `retry` (1 for the first). `jitter` in [0, 1) shortens it by
    /// up to a quarter, so clients that failed together do not return together.
    pub fn backoff(&self, retry: u32, jitter: f64) -> Duration {
        let doubled = self
            .base
            .saturating_mul(1u32 << retry.saturating_sub(1).min(20));
        doubled
            .min(self.max)
            .mul_f64(1.0 - 0.25 * jitter.clamp(0.0, 1.0))
    }
}

/// A random number from the standard library's per-process hasher keys: enough for jitter and
/// ids, without a random-number crate.
fn random_u64() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    hasher.finish()
}

impl AttemptId {
    /// A fresh id: `att_` and 16 hex digits (valid as an OpenAI or Anthropic call id prefix).
    pub fn new_random() -> AttemptId {
        AttemptId(format!("att_{:016x}", random_u64()))
    }
}

/// What one attempt produced: a message, or an error and what had arrived before it.
pub(crate) type AttemptResult = Result<AssistantMessage, (ModelError, PartialOutput)>;

/// Runs attempts until one completes, an error is not worth retrying, the retries or the
/// budget run out, or `cancel` fires.
pub(crate) async fn run_attempts<F, Fut>(
    policy: &RetryPolicy,
    sink: &EventSink,
    cancel: &CancellationToken,
    mut attempt: F,
) -> Result<Completion, ModelError>
where
    F: FnMut(AttemptId) -> Fut,
    Fut: Future<Output = AttemptResult>,
{
    let mut records = Vec::new();
    let mut waited = Duration::ZERO;
    let mut number = 0;
    loop {
        number += 1;
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let id = AttemptId::new_random();
        sink.emit(ModelEvent::AttemptStarted {
            attempt: id.clone(),
            number,
        });
        let (error, partial) = match attempt(id.clone()).await {
            Ok(message) => {
                sink.emit(ModelEvent::AttemptEnded {
                    attempt: id.clone(),
                    status: AttemptStatus::Completed,
                    error: None,
                    partial: None,
                    usage: message.usage,
                });
                records.push(AttemptRecord {
                    id,
                    number,
                    status: AttemptStatus::Completed,
                    error: None,
                    partial: None,
                });
                return Ok(Completion {
                    message,
                    attempts: records,
                });
            }
            Err(failure) => failure,
        };
        let status = if error.is_cancelled() {
            AttemptStatus::Interrupted
        } else {
            AttemptStatus::Failed
        };
        sink.emit(ModelEvent::AttemptEnded {
            attempt: id.clone(),
            status,
            error: Some(error.to_string()),
            partial: Some(partial.clone()),
            usage: None,
        });
        records.push(AttemptRecord {
            id: id.clone(),
            number,
            status,
            error: Some(error.to_string()),
            partial: Some(partial),
        });
        let Retry::Yes { after } = error.retry() else {
            return Err(error);
        };
        if number > policy.max_retries {
            return Err(ModelError::RetriesExhausted {
                attempts: number,
                last: Box::new(error),
            });
        }
        let jitter = (random_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let delay = after.unwrap_or_else(|| policy.backoff(number, jitter));
        if waited + delay > policy.budget {
            return Err(ModelError::RetryBudgetExhausted {
                attempts: number,
                wanted: delay,
                last: Box::new(error),
            });
        }
        waited += delay;
        sink.emit(ModelEvent::RetryScheduled {
            attempt: id,
            delay,
            reason: error.to_string(),
        });
        tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(ModelError::Cancelled),
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

#[cfg(test)]
mod tests {
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
        AssistantMessage {
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
}
