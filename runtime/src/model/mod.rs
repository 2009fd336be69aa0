//! Talking to models: the `Provider` trait, its configuration, and the two wire formats
//! (OpenAI Chat Completions, Anthropic Messages), streamed over SSE.
//!
//! M1 (both providers, streaming, tested through real HTTP on loopback), V1 and V2 (the
//! assemblers turn raw streams into clean messages), L3 and L4 (attempts and retries), and the
//! request half of X2 (one cancellation token aborts the request and any retry wait).
//!
//! Map: `types` (values), `config` (`[model]` in a preset), `context` (the context window:
//! built-in table, compaction and ageing settings), `assembler` (pure stream state
//! machines), `sse` (bytes to events), `image` (images checked and bounded), `http` (one attempt over reqwest), `messages` (a
//! request's conversation, shared with the history), `body` (the request body, reusing what
//! the last one serialized; `body_turns` where messages merge into turns), `openai` and
//! `anthropic` (request bodies), `attempt` (retries), `price` (cost), `error` (`ModelError`).
//! This module does not decide what the loop does with a message; it reports `Outcome`.

mod anomaly;
mod anthropic;
pub mod assembler;
mod attempt;
mod body;
mod body_turns;
mod config;
pub mod context;
mod error;
mod http;
mod image;
mod messages;
mod openai;
pub mod price;
mod sse;
mod sse_lines;
mod types;
mod wire;

pub use attempt::RetryPolicy;
pub use config::{CacheTtl, MaxTokensField, ProviderConfig, ProviderKind, ToolChoice};
pub use error::{ModelError, shorten};
pub use image::{
    IMAGE_OUTPUT_PREFIX, ImageError, ImageKind, ImagePart, ImageRef, MAX_IMAGE_BYTES, sniff,
};
pub use messages::{Keyed, Messages, ModelRequest};
pub use sse::replay;
pub use types::*;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

/// A real 2x3 PNG, for tests elsewhere in the crate.
#[cfg(test)]
pub(crate) fn image_tests_png() -> &'static [u8] {
    &image::tests::PNG_2X3
}

/// A model behind some wire format. One call of `complete` is one model request: one or more
/// attempts, ending in one committed message or an error.
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    fn config(&self) -> &ProviderConfig;

    /// Streams a response to `request`. Every event (deltas, attempt starts and ends, retries)
    /// goes to `events` as it happens; the message is returned only once its attempt completed.
    /// `cancel` aborts the request in flight and any wait between attempts.
    async fn complete(
        &self,
        request: &ModelRequest,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<Completion, ModelError>;
}

/// Builds the provider a configuration describes. Fails if its API key variable is unset or a
/// header is invalid; it does not contact the server.
pub fn connect(config: ProviderConfig) -> Result<Box<dyn Provider>, ModelError> {
    Ok(match config.kind {
        ProviderKind::Openai => Box::new(http::HttpProvider::<openai::OpenAi>::new(config)?),
        ProviderKind::Anthropic => {
            Box::new(http::HttpProvider::<anthropic::Anthropic>::new(config)?)
        }
    })
}

/// Where a provider sends its events; dropping the receiver just discards them.
#[derive(Debug, Clone, Default)]
pub struct EventSink(Option<UnboundedSender<ModelEvent>>);

impl EventSink {
#[cfg(any(test, feature = "internals"))]
    /// A sink that discards every event.
    pub fn none() -> EventSink {
        EventSink(None)
    }

    pub fn channel() -> (EventSink, UnboundedReceiver<ModelEvent>) {
        let (sender, receiver) = unbounded_channel();
        (EventSink(Some(sender)), receiver)
    }

    pub fn emit(&self, event: ModelEvent) {
        if let Some(sender) = &self.0 {
            // A closed receiver means nobody is watching; the attempt goes on regardless.
            let _ = sender.send(event);
        }
    }
}
