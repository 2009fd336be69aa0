//! `ModelError`: everything that can go wrong talking to a model, and whether it is worth
//! another attempt.
//!
//! SPEC L4 (429, 5xx, connection resets and idle timeouts are retried; validation errors are
//! not: no blind retry of the same failure) and X2 (cancellation is its own variant, never
//! retried). Retryability is a property of the variant (`ModelError::retry`), not of the
//! message text.

use std::time::Duration;

/// Whether an error is worth another attempt, and how soon the provider asked us to come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    No,
    Yes { after: Option<Duration> },
}

impl Retry {
    pub fn is_yes(self) -> bool {
        matches!(self, Retry::Yes { .. })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("the environment variable {env} (api_key_env in the preset) is not set")]
    MissingApiKey { env: String },

    #[error("invalid provider configuration: {0}")]
    Config(String),

    #[error("could not reach {url}: {message}")]
    Connect { url: String, message: String },

    #[error("no response from {url} within {after:?} (request_timeout_ms)")]
    RequestTimeout { url: String, after: Duration },

    #[error("HTTP {status} from {url}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
        retry_after: Option<Duration>,
        /// The provider's `x-should-retry` header, when it sent one.
        should_retry: Option<bool>,
    },

    #[error("the stream stalled: no bytes for {after:?} (idle_timeout_ms)")]
    IdleTimeout { after: Duration },

    #[error("the stream broke off: {0}")]
    StreamBroken(String),

    #[error("the stream ended before any event arrived")]
    EmptyStream,

    #[error("the provider reported an error mid-stream: {kind}: {message}")]
    Provider {
        kind: String,
        message: String,
        retryable: bool,
    },

    #[error("cancelled")]
    Cancelled,

    #[error("gave up after {attempts} attempts; last error: {last}")]
    RetriesExhausted {
        attempts: u32,
        last: Box<ModelError>,
    },

    #[error(
        "gave up after {attempts} attempts: the next wait ({wanted:?}) exceeds the retry budget \
         (retry_budget_ms); last error: {last}"
    )]
    RetryBudgetExhausted {
        attempts: u32,
        wanted: Duration,
        last: Box<ModelError>,
    },
}

impl ModelError {
    /// The retry classification (L4).
    pub fn retry(&self) -> Retry {
        match self {
            ModelError::Connect { .. }
            | ModelError::RequestTimeout { .. }
            | ModelError::IdleTimeout { .. }
            | ModelError::StreamBroken(_)
            | ModelError::EmptyStream => Retry::Yes { after: None },
            ModelError::Status {
                status,
                retry_after,
                should_retry,
                ..
            } => {
                let by_status = matches!(status, 408 | 409 | 429) || *status >= 500;
                if should_retry.unwrap_or(by_status) {
                    Retry::Yes {
                        after: *retry_after,
                    }
                } else {
                    Retry::No
                }
            }
            ModelError::Provider { retryable, .. } => {
                if *retryable {
                    Retry::Yes { after: None }
                } else {
                    Retry::No
                }
            }
            ModelError::MissingApiKey { .. }
            | ModelError::Config(_)
            | ModelError::Cancelled
            | ModelError::RetriesExhausted { .. }
            | ModelError::RetryBudgetExhausted { .. } => Retry::No,
        }
    }

    /// True for `Cancelled`, the user's abort (X2).
    pub fn is_cancelled(&self) -> bool {
        matches!(self, ModelError::Cancelled)
    }
}

/// Whether an error object sent inside a stream (OpenAI `error.type`/`code`, Anthropic
/// `error.type`) names a transient condition.
pub(crate) fn transient_error_kind(kind: &str) -> bool {
    matches!(
        kind,
        "server_error"
            | "api_error"
            | "overloaded_error"
            | "rate_limit_error"
            | "rate_limit_exceeded"
            | "timeout_error"
            | "internal_error"
            | "service_unavailable"
            | "429"
            | "500"
            | "502"
            | "503"
            | "504"
            | "529"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, should_retry: Option<bool>) -> ModelError {
        ModelError::Status {
            url: "http://127.0.0.1/x".into(),
            status: code,
            body: String::new(),
            retry_after: Some(Duration::from_millis(5)),
            should_retry,
        }
    }

    #[test]
    fn rate_limits_and_server_errors_are_retried_with_their_retry_after() {
        for code in [408, 409, 429, 500, 502, 503, 529] {
            assert_eq!(
                status(code, None).retry(),
                Retry::Yes {
                    after: Some(Duration::from_millis(5))
                },
                "{code}"
            );
        }
    }

    #[test]
    fn validation_errors_are_not_retried() {
        for code in [400, 401, 403, 404, 413, 422] {
            assert_eq!(status(code, None).retry(), Retry::No, "{code}");
        }
    }

    #[test]
    fn should_retry_header_overrides_the_status() {
        assert!(status(400, Some(true)).retry().is_yes());
        assert_eq!(status(503, Some(false)).retry(), Retry::No);
    }

    #[test]
    fn stalls_resets_and_transient_stream_errors_are_retried_but_cancellation_is_not() {
        let idle = ModelError::IdleTimeout {
            after: Duration::from_millis(1),
        };
        assert!(idle.retry().is_yes());
        assert!(ModelError::StreamBroken("reset".into()).retry().is_yes());
        assert_eq!(ModelError::Cancelled.retry(), Retry::No);
        assert!(transient_error_kind("overloaded_error"));
        assert!(!transient_error_kind("invalid_request_error"));
    }
}
