//! One provider over HTTP: builds the client, sends each attempt, turns HTTP failures into
//! classified errors, and streams the body through the wire format's assembler.
//!
//! M1 (reqwest, streaming, base URL, key from the environment, extra headers, timeouts),
//! L3/L4 (each request is an attempt run by `attempt::run_attempts`, bounded by a wall-clock
//! limit besides the idle timeout; `retry-after` and `retry-after-ms` are read here), X2 (the cancellation token drops the request mid-stream).
//! What differs between OpenAI and Anthropic is behind the `Wire` trait.

use super::assembler::WireAssembler;
use super::attempt::{AttemptResult, run_attempts};
use super::body::BodyCache;
use super::config::ProviderConfig;
use super::error::ModelError;
use super::messages::ModelRequest;
use super::types::{AttemptId, Completion, ModelEvent};
use super::wire::Wire;
use super::{EventSink, Provider, price, sse};
use bytes::Bytes;
use futures::TryStreamExt;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use std::marker::PhantomData;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub(crate) struct HttpProvider<W> {
    config: ProviderConfig,
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    /// The preset's price, else the table's (cache writes priced for the TTL asked).
    price: Option<price::Price>,
    cache: BodyCache,
    wire: PhantomData<W>,
}

impl<W: Wire> HttpProvider<W> {
    pub fn new(config: ProviderConfig) -> Result<HttpProvider<W>, ModelError> {
        let key = match &config.api_key_env {
            Some(env) => Some(
                std::env::var(env)
                    .ok()
                    .filter(|k| !k.trim().is_empty())
                    .ok_or_else(|| ModelError::MissingApiKey { env: env.clone() })?,
            ),
            None => None,
        };
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert("accept", HeaderValue::from_static("text/event-stream"));
        let pairs = W::auth_headers(&config, key.as_deref())
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .chain(config.extra_headers.clone());
        for (name, value) in pairs {
            let name = HeaderName::try_from(name.as_str())
                .map_err(|e| ModelError::Config(format!("header name {name:?}: {e}")))?;
            let mut value = HeaderValue::try_from(value)
                .map_err(|e| ModelError::Config(format!("header {name}: {e}")))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout())
            .build()
            .map_err(|e| ModelError::Config(format!("HTTP client: {}", chain(&e))))?;
        let url = format!("{}{}", config.base_url(), W::PATH);
        let price = config.price_in_force();
        Ok(HttpProvider {
            price,
            config,
            client,
            url,
            headers,
            cache: BodyCache::default(),
            wire: PhantomData,
        })
    }

    async fn attempt(
        &self,
        body: Bytes,
        attempt: AttemptId,
        sink: &EventSink,
        cancel: &CancellationToken,
    ) -> AttemptResult {
        let mut assembler = W::assembler(attempt.clone());
        let on_delta = |delta| {
            sink.emit(ModelEvent::Delta {
                attempt: attempt.clone(),
                delta,
            })
        };
        // The idle timeout catches a silent stream; this catches one that never ends.
        let limit = self.config.attempt_timeout();
        let streamed = tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(ModelError::Cancelled),
            streamed = tokio::time::timeout(limit, self.stream(body, &mut assembler, on_delta)) => {
                streamed.unwrap_or(Err(ModelError::AttemptTimeout { after: limit }))
            }
        };
        match streamed {
            Ok(()) => {
                let partial = assembler.partial();
                assembler.finish().map_err(|e| (e, partial))
            }
            Err(e) => Err((e, assembler.partial())),
        }
    }

    async fn stream(
        &self,
        body: Bytes,
        assembler: &mut W::Assembler,
        on_delta: impl FnMut(super::types::Delta),
    ) -> Result<(), ModelError> {
        let request = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .body(body)
            .send();
        let response = tokio::time::timeout(self.config.request_timeout(), request)
            .await
            .map_err(|_| ModelError::RequestTimeout {
                url: self.url.clone(),
                after: self.config.request_timeout(),
            })?
            .map_err(|e| ModelError::Connect {
                url: self.url.clone(),
                message: chain(&e),
            })?;
        if !response.status().is_success() {
            return Err(self.status_error(response).await);
        }
        let bytes = response
            .bytes_stream()
            .map_err(|e| ModelError::StreamBroken(chain(&e)));
        sse::drive(
            Box::pin(bytes),
            Some(self.config.idle_timeout()),
            assembler,
            on_delta,
        )
        .await
    }

    async fn status_error(&self, response: reqwest::Response) -> ModelError {
        let status = response.status().as_u16();
        let headers = response.headers();
        let retry_after = retry_after(headers);
        let should_retry = headers
            .get("x-should-retry")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<bool>().ok());
        let body = tokio::time::timeout(self.config.idle_timeout(), response.bytes())
            .await
            .ok()
            .and_then(Result::ok)
            .map(|b| error_body(&b))
            .unwrap_or_default();
        ModelError::Status {
            url: self.url.clone(),
            status,
            body,
            retry_after,
            should_retry,
        }
    }
}

#[async_trait::async_trait]
impl<W: Wire> Provider for HttpProvider<W> {
    fn config(&self) -> &ProviderConfig {
        &self.config
    }

    async fn complete(
        &self,
        request: &ModelRequest,
        sink: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<Completion, ModelError> {
        let body = self
            .cache
            .body::<W>(&self.config, request)
            .map_err(|e| ModelError::Config(format!("request body: {e}")))?;
        let policy = self.config.retry_policy();
        let mut completion = run_attempts(&policy, sink, cancel, |attempt| {
            self.attempt(body.clone(), attempt, sink, cancel)
        })
        .await?;
        let message = &mut completion.message;
        message.cost_usd = message
            .usage
            .and_then(|u| price::cost(&self.config.model, self.price.as_ref(), &u));
        Ok(completion)
    }
}

/// `retry-after-ms` (milliseconds, OpenAI and Anthropic) or `retry-after` (seconds; the
/// HTTP-date form is not read and falls back to backoff).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
    };
    number("retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .or_else(|| number(RETRY_AFTER.as_str()).map(Duration::from_secs_f64))
}

/// The longest error body kept (for the log; displays shorten it further).
const MAX_ERROR_BODY: usize = 16_000;

/// The provider's error message when the body is its usual JSON, else the start of the body.
fn error_body(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let message = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| {
            let error = v.get("error").unwrap_or(&v);
            error.get("message")?.as_str().map(str::to_owned)
        });
    let mut text = message.unwrap_or_else(|| text.trim().to_owned());
    if text.len() > MAX_ERROR_BODY {
        let mut end = MAX_ERROR_BODY;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// An error with its causes, which is where reqwest keeps the useful part.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_ms_wins_over_retry_after_seconds() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        headers.insert("retry-after-ms", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
    }

    #[test]
    fn error_bodies_show_the_providers_message() {
        let body =
            br#"{"error":{"message":"max_tokens is too large","type":"invalid_request_error"}}"#;
        assert_eq!(error_body(body), "max_tokens is too large");
        assert_eq!(error_body(b"  upstream timed out \n"), "upstream timed out");
    }
}
