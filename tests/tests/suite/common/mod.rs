//! Shared by the model end-to-end tests: provider configurations with millisecond timeouts
//! pointed at a scripted server, and event collection.

#![allow(dead_code)]

use paddock::model::{
    self, Completion, EventSink, ModelError, ModelEvent, ModelRequest, Provider, ProviderConfig,
    ProviderKind,
};
use paddock_tests::scripted::{Script, ScriptedServer, Step};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

pub const KINDS: [ProviderKind; 2] = [ProviderKind::Openai, ProviderKind::Anthropic];

/// A configuration for `server` with short timeouts and quick retries, so faults resolve in
/// milliseconds.
pub fn config(kind: ProviderKind, server: &ScriptedServer) -> ProviderConfig {
    let base = match kind {
        ProviderKind::Openai => server.openai_base_url(),
        ProviderKind::Anthropic => server.anthropic_base_url(),
    };
    let model = match kind {
        ProviderKind::Openai => "gpt-4.1-mini",
        ProviderKind::Anthropic => "claude-sonnet-4-5",
    };
    let mut config = ProviderConfig::new(kind, model, Some(&base));
    config.connect_timeout_ms = 1_000;
    config.request_timeout_ms = 2_000;
    config.idle_timeout_ms = 300;
    config.max_retries = 3;
    config.retry_base_ms = 5;
    config.retry_max_ms = 20;
    config.retry_budget_ms = 2_000;
    config
}

pub async fn server(steps: Vec<Step>) -> ScriptedServer {
    ScriptedServer::start(Script { steps })
        .await
        .expect("the scripted server binds 127.0.0.1")
}

pub fn provider(config: ProviderConfig) -> Box<dyn Provider> {
    model::connect(config).expect("the provider builds")
}

pub fn user(text: &str) -> ModelRequest {
    ModelRequest {
        messages: vec![model::Message::User {
            images: Vec::new(),
            text: text.into(),
        }]
        .into(),
        ..ModelRequest::default()
    }
}

/// Runs one request and returns its result with every event it emitted.
pub async fn run(
    provider: &dyn Provider,
    request: &ModelRequest,
) -> (Result<Completion, ModelError>, Vec<ModelEvent>) {
    let (sink, mut receiver) = EventSink::channel();
    let result = provider
        .complete(request, &sink, &CancellationToken::new())
        .await;
    (result, drain(&mut receiver))
}

pub fn drain(receiver: &mut UnboundedReceiver<ModelEvent>) -> Vec<ModelEvent> {
    let mut events = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        events.push(event);
    }
    events
}
