//! `ModelError`: everything that can go wrong talking to a model, and whether it is worth
//! another attempt.
//!
//! L4 (429, 5xx, connection resets and idle timeouts are retried; validation errors are
//! not: no blind retry of the same failure) and X2 (cancellation is its own variant, never
//! retried). Retryability is a property of the variant (`ModelError::retry`), not of the
//! message text.

use std::time::Duration;

use paddock_types::text::prefix_chars;

/// Whether an error is worth another attempt, and how soon the provider asked us to come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    No,
    Yes { after: Option<Duration> },
}

impl Retry {
    #[cfg(test)]
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

    #[error(
        "the attempt was cut after {after:?} (attempt_timeout_ms in [model]) while the server was \
         still streaming; lower max_output_tokens or raise attempt_timeout_ms"
    )]
    AttemptTimeout { after: Duration },

    #[error("the stream broke off: {0}")]
    StreamBroken(String),

    #[error(
        "the stream ended before any event arrived: the server closed it without sending \
         anything; if that repeats, the server's own log says why (docs/providers.md, known \
         limits per server)"
    )]
    EmptyStream,

    /// The body is not the wire format's stream (another API's events, lines that are not
    /// JSON), or breaks its rules (a second response spliced into the first). `retry` says
    /// whether another attempt can help: garbage and a foreign format come back the same.
    #[error("the stream is not a valid {wire} stream: {detail}")]
    Protocol {
        wire: &'static str,
        detail: String,
        retry: bool,
    },

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
        "gave up after {attempts} attempts: the server answered HTTP {status} with the same error \
         twice, which looks like a request it cannot handle rather than an outage (the full \
         message is in the session log's attempt/end events)"
    )]
    RepeatedError {
        attempts: u32,
        status: u16,
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
            ModelError::Protocol { retry: true, .. } => Retry::Yes { after: None },
            ModelError::Protocol { retry: false, .. } => Retry::No,
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
            | ModelError::AttemptTimeout { .. }
            | ModelError::RepeatedError { .. }
            | ModelError::RetriesExhausted { .. }
            | ModelError::RetryBudgetExhausted { .. } => Retry::No,
        }
    }

    /// For an HTTP status error that, when it comes back with the same body, is taken to be
    /// permanent: a 5xx other than the gateway and overload codes (502, 503, 504, 529), with a
    /// body, and without the server asking to be retried (`retry-after`, `x-should-retry`).
    /// llama-cpp-python answers a request it cannot validate with such a 500.
    pub(crate) fn repeat_key(&self) -> Option<(u16, &str)> {
        match self {
            ModelError::Status {
                status,
                body,
                retry_after: None,
                should_retry: None | Some(false),
                ..
            } if *status >= 500
                && !matches!(status, 502 | 503 | 504 | 529)
                && !body.trim().is_empty() =>
            {
                Some((*status, body.as_str()))
            }
            _ => None,
        }
    }

    /// True for `Cancelled`, the user's abort (X2).
    pub fn is_cancelled(&self) -> bool {
        matches!(self, ModelError::Cancelled)
    }
}

/// `text` cut to `max_chars` characters, saying how much was left out and where it is.
pub fn shorten(text: &str, max_chars: usize) -> String {
    match prefix_chars(text, max_chars) {
        (_, false) => text.to_owned(),
        (head, true) => format!(
            "{head}… ({} more characters in the session log)",
            text[head.len()..].chars().count()
        ),
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
    fn only_a_plain_5xx_with_a_body_can_count_as_repeated() {
        let with = |code: u16, body: &str, retry_after: Option<Duration>| ModelError::Status {
            url: "u".into(),
            status: code,
            body: body.into(),
            retry_after,
            should_retry: None,
        };
        assert_eq!(with(500, "bad", None).repeat_key(), Some((500, "bad")));
        assert_eq!(with(503, "busy", None).repeat_key(), None);
        assert_eq!(with(502, "gateway", None).repeat_key(), None);
        assert_eq!(with(500, " ", None).repeat_key(), None);
        assert_eq!(with(500, "bad", Some(Duration::ZERO)).repeat_key(), None);
        assert_eq!(with(429, "slow", None).repeat_key(), None);
        let timeout = ModelError::AttemptTimeout {
            after: Duration::from_secs(1),
        };
        assert_eq!(timeout.retry(), Retry::No);
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
