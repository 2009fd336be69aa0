//! Example hook `redact-secrets` (H1): a post-tool hook that masks API-key-shaped strings in
//! results before the model sees them (OpenAI `sk-…`, Anthropic `sk-ant-…`, AWS `AKIA…`,
//! GitHub `ghp_…`/`github_pat_…`, Slack `xox?-…`, Google `AIza…`, and `api_key = "…"`-style
//! assignments). It never denies.

wit_bindgen::generate!({ world: "hook", path: "../../../wit" });

use exports::paddock::plugin::hooks::Guest;
use paddock::plugin::hook_types::{
    PermissionDecision, PostToolUseDecision, PostToolUseEvent, PreToolUseDecision, PreToolUseEvent,
};
use paddock::plugin::types::ToolOutput;

const PATTERN: &str = r#"(?x)
    sk-(?:ant-)?[A-Za-z0-9_\-]{20,}
  | AKIA[0-9A-Z]{16}
  | gh[pousr]_[A-Za-z0-9]{30,}
  | github_pat_[A-Za-z0-9_]{30,}
  | xox[abprs]-[A-Za-z0-9\-]{10,}
  | AIza[0-9A-Za-z_\-]{35}
  | (?i:(?:api[_-]?key|secret|token|password)["']?\s*[:=]\s*["']?)[A-Za-z0-9_\-/+]{16,}
"#;

struct RedactSecrets;

impl Guest for RedactSecrets {
    fn pre_tool_use(_event: PreToolUseEvent) -> PreToolUseDecision {
        PreToolUseDecision {
            permission_decision: PermissionDecision::Allow,
            updated_input: None,
            additional_context: None,
        }
    }

    fn post_tool_use(event: PostToolUseEvent) -> PostToolUseDecision {
        let keep = PostToolUseDecision {
            replace: None,
            additional_context: None,
        };
        let Ok(output) = &event.tool_response else {
            return keep;
        };
        let Ok(re) = regex::Regex::new(PATTERN) else {
            return keep;
        };
        let found = re.find_iter(&output.content).count();
        if found == 0 {
            return keep;
        }
        let content = re.replace_all(&output.content, "[REDACTED]").into_owned();
        PostToolUseDecision {
            replace: Some(Ok(ToolOutput {
                content,
                truncated: output.truncated,
                continuation: output.continuation.clone(),
            })),
            additional_context: Some(format!(
                "redact-secrets masked {found} secret-shaped string(s) in the result of {}",
                event.tool_name
            )),
        }
    }
}

export!(RedactSecrets);
