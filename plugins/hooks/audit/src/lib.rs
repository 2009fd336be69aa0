//! Example hook `audit` (H1): adds a line of context for every call it sees and denies
//! nothing. As a pre-hook it notes the call about to run; as a post-hook, how it ended.
//! It also logs the same line, so the session log keeps an audit trail.

use paddock_sdk::hook::{Hook, PostDecision, PostToolUse, PreDecision, PreToolUse};

/// No configuration.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Audit {}

impl Hook for Audit {
    const CONFIG_SCHEMA: Option<&'static str> = Some(include_str!("../config.schema.json"));

    fn pre_tool_use(&self, event: &PreToolUse) -> PreDecision {
        let line = format!(
            "audit: {} call {} in session {} about to run",
            event.tool_name, event.call_id, event.session_id
        );
        paddock_sdk::log(&line);
        PreDecision::allow().context(line)
    }

    fn post_tool_use(&self, event: &PostToolUse) -> PostDecision {
        let how = match &event.tool_response {
            Ok(out) => format!("succeeded with {} bytes", out.content.len()),
            Err(err) => format!("failed with {}", err.code),
        };
        let line = format!("audit: {} call {} {how}", event.tool_name, event.call_id);
        paddock_sdk::log(&line);
        PostDecision::keep().context(line)
    }
}

paddock_sdk::export_hook!(Audit);
