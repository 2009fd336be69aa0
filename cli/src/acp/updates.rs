//! A running turn as ACP `session/update`s: the model's text as agent message chunks while it
//! streams, each call announced (`tool_call`, pending) when the message that makes it is
//! committed, `in_progress` when it starts, and `completed` or `failed` with what the model
//! reads back. Updates are notifications: one the editor cannot take is dropped, never waited
//! for.

use std::path::{Path, PathBuf};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    Content, ContentBlock, ContentChunk, SessionId, SessionNotification, SessionUpdate,
    TextContent, ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use paddock::agent::Observer;
use paddock::model::{AssistantMessage, Delta, ModelEvent};
use paddock::pipeline::CallSummary;

use super::tool_calls;

/// How much of a call's result the editor is shown (the model reads it all, within the
/// output budget; `paddock log` shows it all).
const RESULT_SHOWN: usize = 16_000;

/// Sends one session's updates to the editor.
pub struct Updates {
    cx: ConnectionTo<Client>,
    session: SessionId,
    cwd: PathBuf,
}

impl Updates {
    pub fn new(cx: ConnectionTo<Client>, session: &str, cwd: &Path) -> Updates {
        Updates {
            cx,
            session: SessionId::new(session.to_string()),
            cwd: cwd.to_path_buf(),
        }
    }

    pub fn send(&self, update: SessionUpdate) {
        let _ = self
            .cx
            .send_notification(SessionNotification::new(self.session.clone(), update));
    }

    /// Text from paddock itself, shown as the agent's.
    pub fn say(&self, text: &str) {
        self.send(agent_text(text));
    }

    pub fn cwd(&self) -> &Path {
        &self.cwd
    }
}

/// `text` as an agent message chunk.
pub fn agent_text(text: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
        text.to_string(),
    ))))
}

/// A call's end: its status and what the model reads back, clipped.
pub fn ended(id: &str, content: &str, is_error: bool) -> SessionUpdate {
    let status = if is_error {
        ToolCallStatus::Failed
    } else {
        ToolCallStatus::Completed
    };
    let shown = paddock_types::text::clip(content, RESULT_SHOWN).into_owned();
    let block = ToolCallContent::Content(Content::new(ContentBlock::Text(TextContent::new(shown))));
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        id.to_string(),
        ToolCallUpdateFields::new()
            .status(status)
            .content(vec![block]),
    ))
}

impl Observer for Updates {
    fn model_event(&self, event: &ModelEvent) {
        if let ModelEvent::Delta {
            delta: Delta::Text { text },
            ..
        } = event
        {
            self.say(text);
        }
    }

    fn assistant(&self, message: &AssistantMessage) {
        for assembled in &message.calls {
            let call = &assembled.call;
            self.send(SessionUpdate::ToolCall(tool_calls::announced(
                &call.id,
                &call.name,
                &call.arguments,
                &self.cwd,
                ToolCallStatus::Pending,
            )));
        }
    }

    fn tool_started(&self, id: &str) {
        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            id.to_string(),
            ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
        )));
    }

    fn result(&self, call: &CallSummary) {
        self.send(ended(&call.id, &call.content, call.is_error));
    }

    fn notice(&self, text: &str) {
        self.say(&format!(
            "\n[paddock: {}]\n",
            paddock_types::text::sanitize(text)
        ));
    }
}
