//! Example hook `audit` (H1): adds a line of context for every call it sees and denies
//! nothing. As a pre-hook it notes the call about to run; as a post-hook, how it ended.
//! It also logs the same line, so the session log keeps an audit trail.

wit_bindgen::generate!({ world: "hook", path: "../../../wit" });

use exports::paddock::plugin::hooks::Guest;
use paddock::plugin::hook_types::{
    PermissionDecision, PostToolUseDecision, PostToolUseEvent, PreToolUseDecision, PreToolUseEvent,
};
use paddock::plugin::log::{Level, log};

struct Audit;

impl Guest for Audit {
    fn pre_tool_use(event: PreToolUseEvent) -> PreToolUseDecision {
        let line = format!(
            "audit: {} call {} in session {} about to run",
            event.tool_name, event.call_id, event.session_id
        );
        log(Level::Info, &line);
        PreToolUseDecision {
            permission_decision: PermissionDecision::Allow,
            updated_input: None,
            additional_context: Some(line),
        }
    }

    fn post_tool_use(event: PostToolUseEvent) -> PostToolUseDecision {
        let how = match &event.tool_response {
            Ok(out) => format!("succeeded with {} bytes", out.content.len()),
            Err(err) => format!("failed with {}", err.code),
        };
        let line = format!("audit: {} call {} {how}", event.tool_name, event.call_id);
        log(Level::Info, &line);
        PostToolUseDecision {
            replace: None,
            additional_context: Some(line),
        }
    }
}

export!(Audit);
