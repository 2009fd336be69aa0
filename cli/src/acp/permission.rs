//! Approval questions put to the editor's user (T2): when the preset (or a hook) says `ask`,
//! the question goes out as `session/request_permission` on the call it is about, with the
//! three answers a terminal has: allow once, always allow the shown pattern for this session,
//! reject. A cancelled prompt's question (outcome `cancelled`) is a no.
//!
//! What this trusts: the editor's user interface, as `mcp serve` trusts an MCP client's. An
//! editor that answers for its user can approve anything the preset would ask about; the
//! sandbox, mounts, protected paths and hooks hold whatever it answers.

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionId, ToolCallUpdate, ToolCallUpdateFields,
};

use paddock::ask::{Answer, Approver, Question};

const ONCE: &str = "once";
const ALWAYS: &str = "always";
const NO: &str = "no";

/// Asks the editor that opened the session.
pub struct EditorApprover {
    cx: ConnectionTo<Client>,
    session: SessionId,
}

impl EditorApprover {
    pub fn new(cx: ConnectionTo<Client>, session: &str) -> EditorApprover {
        EditorApprover {
            cx,
            session: SessionId::new(session.to_string()),
        }
    }
}

/// The question as ACP's request: the call (its id, and the whole call and the reason as
/// its title) and the three answers.
fn request(session: &SessionId, q: &Question) -> RequestPermissionRequest {
    let safe = |t: &str| paddock_types::text::sanitize(t).into_owned();
    let mut title = format!("{}: ", safe(&q.tool));
    title.push_str(
        &q.lines
            .iter()
            .map(|l| safe(l))
            .collect::<Vec<_>>()
            .join(" | "),
    );
    title.push_str(&format!(" (why: {})", safe(&q.why)));
    let call = ToolCallUpdate::new(q.call.clone(), ToolCallUpdateFields::new().title(title));
    let options = vec![
        PermissionOption::new(ONCE, "Allow once", PermissionOptionKind::AllowOnce),
        PermissionOption::new(
            ALWAYS,
            format!("Always allow {} in this session", safe(&q.pattern)),
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new(NO, "Reject", PermissionOptionKind::RejectOnce),
    ];
    RequestPermissionRequest::new(session.clone(), call, options)
}

#[async_trait::async_trait]
impl Approver for EditorApprover {
    async fn ask(&self, q: &Question) -> Result<Answer, String> {
        let response = self
            .cx
            .send_request(request(&self.session, q))
            .block_task()
            .await
            .map_err(|e| format!("the editor did not answer the approval question: {e}"))?;
        Ok(match response.outcome {
            RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
                ONCE => Answer::Once,
                ALWAYS => Answer::Always,
                _ => Answer::No(None),
            },
            RequestPermissionOutcome::Cancelled => {
                Answer::No(Some("the prompt was cancelled".into()))
            }
            _ => Answer::No(None),
        })
    }
}
