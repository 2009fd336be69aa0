//! `{{name}}`: a paddock hook. The struct is the hook's configuration (the preset's
//! `[hooks.config]` table); `pre_tool_use` runs before a call, `post_tool_use` after it.
//! See https://docs.rs/paddock-sdk.

use paddock_sdk::hook::{Hook, PostDecision, PostToolUse, PreDecision, PreToolUse};
use serde::Deserialize;

/// The preset's `config` for this hook.
#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// A call whose arguments contain any of these words is denied.
    pub deny_words: Vec<String>,
    /// Text added for the model after every call, if set.
    pub note: Option<String>,
}

impl Hook for Config {
    /// What `config` accepts: paddock checks a preset against it before a session starts, so a
    /// misspelt key is refused with the closest valid one. Keep it equal to `Config`.
    const CONFIG_SCHEMA: Option<&'static str> = Some(
        r#"{
            "type": "object",
            "properties": {
                "deny_words": { "type": "array", "items": { "type": "string" } },
                "note": { "type": "string" }
            },
            "additionalProperties": false
        }"#,
    );

    fn pre_tool_use(&self, event: &PreToolUse) -> PreDecision {
        match self.deny_words.iter().find(|w| event.tool_input.contains(w.as_str())) {
            Some(word) => PreDecision::deny(format!(
                "{{name}}: `{}` was not run because its arguments mention `{word}` \
                 (deny_words of hook {{name}} in preset `{}`)",
                event.tool_name, event.preset
            )),
            None => PreDecision::allow(),
        }
    }

    fn post_tool_use(&self, event: &PostToolUse) -> PostDecision {
        match &self.note {
            Some(note) => PostDecision::keep().context(format!("{note} ({})", event.tool_name)),
            None => PostDecision::keep(),
        }
    }
}

paddock_sdk::export_hook!(Config);
