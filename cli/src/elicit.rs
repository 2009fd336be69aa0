//! Approval questions put to an MCP client's user (C2, T2): when the preset (or a hook) says
//! `ask`, `paddock mcp serve` asks through MCP elicitation, if the client declared it can;
//! otherwise no one can be asked, and the call is denied with the preset key that would
//! change it (`Approval::confirm` words that).
//!
//! How the question travels depends on the client's protocol revision:
//! - up to 2025-11-25 (a session with a handshake), as a request of paddock's own
//!   (`elicitation/create`) while the call runs;
//! - from 2026-07-28 (stateless, no server-to-client requests), handed to the running call
//!   (`Rounds`): `tools/call` is answered `input_required` with the form, and the client's
//!   retry carries the answer (`mcp_rounds.rs`).
//!
//! The question is the same canonical rendering a terminal sees (`Question`): the whole call,
//! the reason, and the pattern `always` would approve. The answer is one of `once`, `always`,
//! `no`; a decline or a dismissal is a no. Note what this trusts: the client's user interface.
//! A client that answers for its user can approve anything the preset would ask about; `paddock
//! mcp serve --no-elicitation` turns every question into a deny.

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use rmcp::service::{ElicitationMode, Peer, RoleServer};
use serde_json::json;
use tokio::sync::{mpsc, oneshot};

use paddock::ask::{Answer, Approver, Question};

/// Where the running call's questions go.
#[derive(Clone)]
pub enum Asker {
    /// A client with a session: asked with an elicitation request.
    Request(Peer<RoleServer>),
    /// A 2026-07-28 client: the question goes back with the call's `input_required` answer;
    /// `form` is whether the client declared form elicitation in this request.
    Rounds {
        questions: mpsc::Sender<Pending>,
        form: bool,
    },
}

/// A question waiting for the client's retry.
pub struct Pending {
    pub form: ElicitRequestParams,
    pub answer: oneshot::Sender<ElicitResult>,
}

/// Asks through the connected client; `connect` gives it the client once it is there.
#[derive(Clone, Default)]
pub struct ElicitApprover {
    asker: Arc<Mutex<Option<Asker>>>,
    disabled: bool,
}

impl ElicitApprover {
    /// `enabled` false: never ask, deny instead.
    pub fn new(enabled: bool) -> ElicitApprover {
        ElicitApprover {
            asker: Arc::default(),
            disabled: !enabled,
        }
    }

    /// Where the running call's questions go.
    pub fn connect(&self, asker: Asker) {
        *self.asker.lock().unwrap_or_else(PoisonError::into_inner) = Some(asker);
    }

    fn asker(&self) -> Option<Asker> {
        self.asker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Whether client capabilities declare form elicitation (declaring elicitation with neither
/// mode named means form, as before modes existed).
pub fn declares_form(capabilities: Option<&rmcp::model::ClientCapabilities>) -> bool {
    capabilities
        .and_then(|c| c.elicitation.as_ref())
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// The form the client shows: one choice, and an optional reason for a no.
fn request(q: &Question) -> Result<ElicitRequestParams, String> {
    let mut message = format!("paddock: approve this call of {}?\n", q.tool);
    for line in &q.lines {
        message.push_str(&format!("  | {line}\n"));
    }
    message.push_str(&format!(
        "why: {}\nonce = run it once; always = run {} for the rest of this session; no = do not run it",
        q.why, q.pattern
    ));
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                "answer": {
                    "type": "string",
                    "title": "Run it?",
                    "enum": ["once", "always", "no"],
                },
                "reason": {
                    "type": "string",
                    "title": "Why not (told to the caller)",
                },
            },
            "required": ["answer"],
        },
    }))
    .map_err(|e| format!("cannot build the approval form: {e}"))
}

#[async_trait::async_trait]
impl Approver for ElicitApprover {
    async fn ask(&self, q: &Question) -> Result<Answer, String> {
        if self.disabled {
            return Err("`paddock mcp serve --no-elicitation` asks no one".into());
        }
        let cannot = "the MCP client cannot be asked (it declares no elicitation)";
        let result = match self.asker() {
            None => return Err("no MCP client is connected to ask".into()),
            Some(Asker::Request(peer)) => {
                if !peer
                    .supported_elicitation_modes()
                    .contains(&ElicitationMode::Form)
                {
                    return Err(cannot.into());
                }
                peer.create_elicitation(request(q)?).await.map_err(|e| {
                    format!("the MCP client did not answer the approval question: {e}")
                })?
            }
            Some(Asker::Rounds { questions, form }) => {
                if !form {
                    return Err(cannot.into());
                }
                let (answer, answered) = oneshot::channel();
                questions
                    .send(Pending {
                        form: request(q)?,
                        answer,
                    })
                    .await
                    .map_err(|_| "the MCP call that asked has ended".to_string())?;
                answered.await.map_err(|_| {
                    "the MCP client did not retry the call with an answer in time".to_string()
                })?
            }
        };
        let content = result.content.unwrap_or_default();
        Ok(match result.action {
            ElicitationAction::Accept => match content["answer"].as_str() {
                Some("once") => Answer::Once,
                Some("always") => Answer::Always,
                _ => Answer::No(content["reason"].as_str().map(str::to_string)),
            },
            _ => Answer::No(None),
        })
    }
}
