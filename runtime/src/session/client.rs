//! Sessions whose calls come from a client (`tool call`, `mcp serve`) instead of a model:
//! how the log tells them, and the model they have (none).

use crate::log::SessionStart;
use crate::model::{ProviderConfig, ProviderKind};

/// The model of a session whose calls come from a client: there is none, and a message sent
/// to it says so.
pub(super) struct NoModel(ProviderConfig);

impl NoModel {
    pub(super) fn new(client: &str) -> NoModel {
        NoModel(ProviderConfig::new(ProviderKind::Openai, client, None))
    }
}

#[async_trait::async_trait]
impl crate::model::Provider for NoModel {
    fn config(&self) -> &ProviderConfig {
        &self.0
    }

    async fn complete(
        &self,
        _request: &crate::model::ModelRequest,
        _events: &crate::model::EventSink,
        _cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<crate::model::Completion, crate::model::ModelError> {
        Err(crate::model::ModelError::Config(format!(
            "this session's calls come from a client (`{}`), not a model: it has none to send a \
             message to; start a session with `paddock run` or `paddock chat` instead",
            self.0.model
        )))
    }
}

/// Whether `start` is a session whose calls came from a client (`mcp serve`, `tool call`):
/// it has no model to go on with.
pub(crate) fn is_client_session(start: &SessionStart) -> bool {
    start.model_config.is_none() && CLIENTS.contains(&start.model.as_str())
}

/// The names client sessions record as their model.
const CLIENTS: [&str; 2] = crate::log::CLIENT_MODELS;
