//! What one wire format (OpenAI Chat Completions, Anthropic Messages) contributes to a
//! provider: its endpoint, its headers, its request body, how it sends each history message,
//! its cache breakpoints, and its stream assembler. `http.rs` runs any of them.

use super::assembler::WireAssembler;
use super::config::ProviderConfig;
use super::messages::{Messages, ModelRequest};
use super::types::{AttemptId, Message};

/// What one wire format contributes: its endpoint, its headers, its body and its assembler.
pub(crate) trait Wire: Send + Sync + 'static {
    type Assembler: WireAssembler + Send;
    /// The streaming endpoint under the base URL.
    const PATH: &'static str;
    /// Headers carrying the API key (when there is one) and the API version.
    fn auth_headers(config: &ProviderConfig, key: Option<&str>) -> Vec<(&'static str, String)>;
    fn body(config: &ProviderConfig, request: &ModelRequest) -> serde_json::Value;
    /// The JSON of history message `i` of `messages` when the format sends its own values per
    /// message (it may then be serialized once and reused, `body::BodyCache`); `None` when it
    /// merges them. Usually one value; more when the format needs a message of its own for
    /// part of it (OpenAI: the images of a run of tool results, after its last result).
    fn message(
        _config: &ProviderConfig,
        _messages: &Messages,
        _i: usize,
    ) -> Option<Vec<serde_json::Value>> {
        None
    }
    /// Whether consecutive messages of one role are merged into one turn (`blocks` gives
    /// each message's part of its turn, `body_turns`).
    const MERGES: bool = false;
    /// The role and content blocks of one message, for a format that `MERGES`.
    fn blocks(
        _config: &ProviderConfig,
        _message: &Message,
    ) -> Option<(&'static str, Vec<serde_json::Value>)> {
        None
    }
    /// The messages whose blocks end with a cache breakpoint, for a format that `MERGES`.
    fn marked(_config: &ProviderConfig, _request: &ModelRequest) -> Vec<usize> {
        Vec::new()
    }
    /// Makes the last of one message's blocks a cache breakpoint.
    fn mark(_config: &ProviderConfig, _blocks: &mut [serde_json::Value]) {}
    fn assembler(attempt: AttemptId) -> Self::Assembler;
}
