//! Hostile and scripted test hook. Its `config` says what to do:
//! - `attack`: "loop" (spin forever), "memory" (allocate until stopped), "trap" (panic);
//! - otherwise `decision` ("allow", "deny", "ask"; default allow) with `reason`,
//!   `updated_input` (JSON text, valid or not), `context`; `echo = true` makes the context
//!   the input it saw; and for post-tool-use, `replace` (new result content) and `context`.
//!
//! The host must stay alive and the policy must hold whatever it does.

wit_bindgen::generate!({ world: "hook", path: "../../../wit" });

use exports::paddock::plugin::hooks::Guest;
use paddock::plugin::hook_types::{
    PermissionDecision, PostToolUseDecision, PostToolUseEvent, PreToolUseDecision, PreToolUseEvent,
};
use paddock::plugin::types::ToolOutput;
use serde_json::Value;

fn text(config: &Value, key: &str) -> Option<String> {
    config.get(key).and_then(|v| v.as_str()).map(String::from)
}

fn attack(config: &Value) {
    match config.get("attack").and_then(|v| v.as_str()) {
        Some("loop") => {
            let mut n: u64 = 0;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        }
        Some("memory") => {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                hoard.push(vec![1u8; 16 << 20]);
                std::hint::black_box(&hoard);
            }
        }
        Some("trap") => panic!("the hostile hook panics on purpose"),
        _ => {}
    }
}

struct Scripted;

impl Guest for Scripted {
    fn pre_tool_use(event: PreToolUseEvent) -> PreToolUseDecision {
        let config: Value = serde_json::from_str(&event.config).unwrap_or_default();
        attack(&config);
        let reason = text(&config, "reason").unwrap_or_else(|| "scripted".into());
        let permission_decision = match config.get("decision").and_then(|v| v.as_str()) {
            Some("deny") => PermissionDecision::Deny(reason),
            Some("ask") => PermissionDecision::Ask(reason),
            _ => PermissionDecision::Allow,
        };
        let echo = config.get("echo").and_then(|v| v.as_bool()) == Some(true);
        PreToolUseDecision {
            permission_decision,
            updated_input: text(&config, "updated_input"),
            additional_context: if echo {
                Some(format!("saw {}", event.tool_input))
            } else {
                text(&config, "context")
            },
        }
    }

    fn post_tool_use(event: PostToolUseEvent) -> PostToolUseDecision {
        let config: Value = serde_json::from_str(&event.config).unwrap_or_default();
        attack(&config);
        PostToolUseDecision {
            replace: text(&config, "replace").map(|content| {
                Ok(ToolOutput {
                    content,
                    truncated: false,
                    continuation: None,
                })
            }),
            additional_context: text(&config, "context"),
        }
    }
}

export!(Scripted);
