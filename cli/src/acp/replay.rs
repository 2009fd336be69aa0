//! A recorded session's history as the updates a live one sends (`session/load`): the user's
//! messages, the model's text, each call with its final status and result. Read from the log
//! as it is on disk, event by event; a line that does not read ends the replay (the session
//! was reopened, so recovery has already settled the log).

use std::io::BufRead;
use std::path::Path;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, SessionUpdate, TextContent, ToolCallStatus,
};
use paddock::log::{Body, Event, Source};

use super::tool_calls;
use super::updates::{Updates, agent_text, ended};

/// Sends the history of the log at `log` to the editor, as session `id`'s updates.
pub fn send(cx: &ConnectionTo<Client>, id: &str, log: &Path, cwd: &Path) {
    let updates = Updates::new(cx.clone(), id, cwd);
    let Ok(file) = std::fs::File::open(log) else {
        return;
    };
    for line in std::io::BufReader::new(file).lines() {
        let Some(event) = line
            .ok()
            .and_then(|l| serde_json::from_str::<Event>(&l).ok())
        else {
            return;
        };
        for update in updates_of(event.body, updates.cwd()) {
            updates.send(update);
        }
    }
}

/// The updates one event replays as: none for what the editor does not show.
fn updates_of(body: Body, cwd: &Path) -> Vec<SessionUpdate> {
    match body {
        Body::UserMessage {
            text,
            source: Source::User,
            ..
        } => vec![SessionUpdate::UserMessageChunk(ContentChunk::new(
            ContentBlock::Text(TextContent::new(text)),
        ))],
        Body::AssistantMessage {
            text, tool_calls, ..
        } => {
            let mut updates = Vec::new();
            if !text.is_empty() {
                updates.push(agent_text(&text));
            }
            // Announced as they were; each result's update settles its status.
            updates.extend(tool_calls.iter().map(|call| {
                SessionUpdate::ToolCall(tool_calls::announced(
                    &call.id,
                    &call.name,
                    &call.arguments,
                    cwd,
                    ToolCallStatus::Pending,
                ))
            }));
            updates
        }
        Body::ToolResult {
            id,
            content,
            is_error,
            ..
        } => vec![ended(&id, &content, is_error)],
        _ => Vec::new(),
    }
}
