//! Approval questions put to an MCP client's user (C2, T2): when the preset (or a hook) says
//! `ask`, `paddock mcp serve` asks through MCP elicitation, if the client declared it can;
//! otherwise no one can be asked, and the call is denied with the preset key that would
//! change it (`Approval::confirm` words that).
//!
//! The question is the same canonical rendering a terminal sees (`Question`): the whole call,
//! the reason, and the pattern `always` would approve. The answer is one of `once`, `always`,
//! `no`; a decline or a dismissal is a no. Note what this trusts: the client's user interface.
//! A client that answers for its user can approve anything the preset would ask about; `paddock
//! mcp serve --no-elicitation` turns every question into a deny.

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{ElicitRequestParams, ElicitationAction};
use rmcp::service::{ElicitationMode, Peer, RoleServer};
use serde_json::json;

use paddock::ask::{Answer, Approver, Question};

/// Asks through the connected client; `connect` gives it the client once it is there.
#[derive(Clone, Default)]
pub struct ElicitApprover {
    peer: Arc<Mutex<Option<Peer<RoleServer>>>>,
    disabled: bool,
}

impl ElicitApprover {
    /// `enabled` false: never ask, deny instead.
    pub fn new(enabled: bool) -> ElicitApprover {
        ElicitApprover {
            peer: Arc::default(),
            disabled: !enabled,
        }
    }

    /// The client that questions go to.
    pub fn connect(&self, peer: Peer<RoleServer>) {
        *self.peer.lock().unwrap_or_else(PoisonError::into_inner) = Some(peer);
    }

    fn peer(&self) -> Option<Peer<RoleServer>> {
        self.peer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
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
        let Some(peer) = self.peer() else {
            return Err("no MCP client is connected to ask".into());
        };
        if !peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
        {
            return Err("the MCP client cannot be asked (it declares no elicitation)".into());
        }
        let result = peer
            .create_elicitation(request(q)?)
            .await
            .map_err(|e| format!("the MCP client did not answer the approval question: {e}"))?;
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
