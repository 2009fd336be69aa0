//! Attempts and retries: every model request is an attempt with its own id and status; failed
//! attempts are retried with exponential backoff and jitter, within a budget, and a cancellation
//! token stops both the attempt and any wait at once.
//!
//! L3 (attempt ids and statuses; a failed attempt's partial output is reported for display
//! and never committed), L4 (backoff with jitter, `retry-after` honoured, only retryable errors
//! retried, a retry budget), X2 and X3 (the abort signal reaches the request and retry timers;
//! it is checked before each request). A plain 5xx that comes back with the same body twice is
//! taken as permanent and not retried further; a retry line shows a long error once, shortened
//! (`shorten`), while the attempt's record keeps the full text for the log.

use super::EventSink;
use super::error::{ModelError, Retry, shorten};
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

/// How much of an error a retry line shows; the attempt's record keeps all of it.
const RETRY_REASON_CHARS: usize = 240;

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
    let mut last_failure = LastFailure::default();
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
            Ok(message) => return Ok(completed(sink, records, id, number, message)),
            Err(failure) => failure,
        };
        record_failure(sink, &mut records, &id, number, &error, partial);
        let Retry::Yes { after } = error.retry() else {
            return Err(error);
        };
        let reason = match last_failure.note(&error) {
            Ok(reason) => reason,
            Err(status) => {
                return Err(ModelError::RepeatedError {
                    attempts: number,
                    status,
                    last: Box::new(error),
                });
            }
        };
        let delay = wait_before_retry(policy, number, after, waited, error)?;
        waited += delay;
        sink.emit(ModelEvent::RetryScheduled {
            attempt: id,
            delay,
            reason,
        });
        tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(ModelError::Cancelled),
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

/// Reports and records the attempt that completed, and closes the request with it.
fn completed(
    sink: &EventSink,
    mut records: Vec<AttemptRecord>,
    id: AttemptId,
    number: u32,
    message: AssistantMessage,
) -> Completion {
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
    Completion {
        message,
        attempts: records,
    }
}

/// Reports and records a failed attempt (interrupted when the failure is the cancellation),
/// with what had arrived before it.
fn record_failure(
    sink: &EventSink,
    records: &mut Vec<AttemptRecord>,
    id: &AttemptId,
    number: u32,
    error: &ModelError,
    partial: PartialOutput,
) {
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
}

/// The last failure's text, and its status and body when it may count as repeated.
#[derive(Default)]
struct LastFailure(Option<(String, Option<(u16, String)>)>);

impl LastFailure {
    /// Takes `error` as the last failure. Gives the retry line's reason for it, or, when it
    /// repeats the last one's status and body (then taken as permanent), that status.
    fn note(&mut self, error: &ModelError) -> Result<String, u16> {
        let text = error.to_string();
        let key = error
            .repeat_key()
            .map(|(status, body)| (status, body.to_owned()));
        let last = self.0.replace((text.clone(), key.clone()));
        if let (Some((status, _)), Some((_, Some(before)))) = (&key, &last)
            && key.as_ref() == Some(before)
        {
            return Err(*status);
        }
        Ok(match last {
            Some((before, _)) if before == text => "the same error again".to_owned(),
            _ => shorten(&text, RETRY_REASON_CHARS),
        })
    }
}

/// The wait before the next attempt: the provider's `retry-after`, else the policy's backoff.
/// `error` (the last failure) is returned inside the refusal when the retries or the budget
/// (`waited` so far) have run out.
fn wait_before_retry(
    policy: &RetryPolicy,
    number: u32,
    after: Option<Duration>,
    waited: Duration,
    error: ModelError,
) -> Result<Duration, ModelError> {
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
    Ok(delay)
}

#[cfg(test)]
#[path = "attempt_tests.rs"]
mod tests;
