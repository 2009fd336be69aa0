//! Example hook `redact-secrets` (H1): a post-tool hook that masks API-key-shaped strings in
//! results before the model sees them (OpenAI `sk-…`, Anthropic `sk-ant-…`, AWS `AKIA…`,
//! GitHub `ghp_…`/`github_pat_…`, Slack `xox?-…`, Google `AIza…`, and `api_key = "…"`-style
//! assignments), in results and in error messages alike. It never denies; when it cannot
//! inspect a result it fails (traps), so the host withholds the result (its `on_error`, whose
//! default for post-hooks is `deny`) instead of passing it on unchecked.

use paddock_sdk::hook::{Hook, PostDecision, PostToolUse};
use paddock_sdk::{Output, ToolError};

const PATTERN: &str = r#"(?x)
    sk-(?:ant-)?[A-Za-z0-9_\-]{20,}
  | AKIA[0-9A-Z]{16}
  | gh[pousr]_[A-Za-z0-9]{30,}
  | github_pat_[A-Za-z0-9_]{30,}
  | xox[abprs]-[A-Za-z0-9\-]{10,}
  | AIza[0-9A-Za-z_\-]{35}
  | (?i:(?:api[_-]?key|secret|token|password)["']?\s*[:=]\s*["']?)[A-Za-z0-9_\-/+]{16,}
"#;

/// No configuration.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RedactSecrets {}

impl Hook for RedactSecrets {
    const CONFIG_SCHEMA: Option<&'static str> = Some(include_str!("../config.schema.json"));

    fn post_tool_use(&self, event: &PostToolUse) -> PostDecision {
        // A pattern that does not compile means nothing was checked: fail, never pass.
        let re = regex::Regex::new(PATTERN).expect("the secret pattern compiles");
        let text = match &event.tool_response {
            Ok(output) => &output.content,
            Err(error) => &error.message,
        };
        let found = re.find_iter(text).count();
        if found == 0 {
            return PostDecision::keep();
        }
        let masked = re.replace_all(text, "[REDACTED]").into_owned();
        let replaced = match &event.tool_response {
            Ok(output) => Ok(Output {
                content: masked,
                ..output.clone()
            }),
            Err(error) => Err(ToolError {
                message: masked,
                ..error.clone()
            }),
        };
        PostDecision::replace(replaced).context(format!(
            "redact-secrets masked {found} secret-shaped string(s) in the result of {}",
            event.tool_name
        ))
    }
}

paddock_sdk::export_hook!(RedactSecrets);
