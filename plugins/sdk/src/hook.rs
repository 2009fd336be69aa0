//! Hooks (H1, H2) with the tool SDK's shape: the struct is the hook's typed `config` (parsed
//! from the preset's `config` table for every event), the trait's two functions are its work,
//! and `export_hook!` exports it.
//!
//! ```ignore
//! use paddock_sdk::hook::{Hook, PostDecision, PostToolUse, PreDecision, PreToolUse};
//!
//! #[derive(serde::Deserialize, Default)]
//! #[serde(default, deny_unknown_fields)]
//! struct NoRm { /// Words that make a command refused.
//!     words: Vec<String> }
//!
//! impl Hook for NoRm {
//!     // What `config` accepts: a typo in a preset is refused before the session starts.
//!     const CONFIG_SCHEMA: Option<&'static str> = Some(
//!         r#"{"type": "object", "properties": {"words": {"type": "array"}},
//!             "additionalProperties": false}"#,
//!     );
//!
//!     fn pre_tool_use(&self, event: &PreToolUse) -> PreDecision {
//!         match self.words.iter().find(|w| event.tool_input.contains(w.as_str())) {
//!             Some(w) => PreDecision::deny(format!("`{w}` is not allowed here")),
//!             None => PreDecision::allow(),
//!         }
//!     }
//! }
//!
//! paddock_sdk::export_hook!(NoRm);
//! ```
//!
//! A hook that cannot read its config never lets a call through unchecked: the pre-hook
//! denies, the post-hook replaces the result with a `HOOK_MISCONFIGURED` error, each naming the
//! preset to fix.

use crate::spec::{Output, ToolError};

#[doc(hidden)]
pub mod bindings {
    // The world of a hook that declares its `config` (it includes `hook`), sharing the tool
    // bindings' `types` and `log` so that results convert with the same `Output`/`ToolError`
    // as tools use.
    wit_bindgen::generate!({
        world: "configured-hook",
        path: "wit",
        pub_export_macro: true,
        export_macro_name: "__export_hook",
        default_bindings_module: "paddock_sdk::hook::bindings",
        with: {
            "paddock:plugin/types@0.1.0": crate::bindings::paddock::plugin::types,
            "paddock:plugin/log@0.1.0": crate::bindings::paddock::plugin::log,
        },
    });
}

use bindings::paddock::plugin::hook_types as wit;

/// A validated call about to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreToolUse {
    /// The tool's name, as registered.
    pub tool_name: String,
    /// The validated arguments, as JSON text; `input()` parses them.
    pub tool_input: String,
    /// The tool declares that it never writes (undeclared reads as false).
    pub read_only: bool,
    /// Argument fields that hold paths.
    pub path_params: Vec<String>,
    pub call_id: String,
    pub session_id: String,
    /// Name of the session's preset.
    pub preset: String,
}

/// A call that ran, with its result (after the output budget).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostToolUse {
    pub tool_name: String,
    pub tool_input: String,
    pub call_id: String,
    pub session_id: String,
    pub preset: String,
    pub tool_response: Result<Output, ToolError>,
}

impl PreToolUse {
    /// The arguments as JSON (`Null` if the host ever sent text that does not parse).
    pub fn input(&self) -> serde_json::Value {
        serde_json::from_str(&self.tool_input).unwrap_or_default()
    }
}

impl PostToolUse {
    /// The arguments as JSON (`Null` if the host ever sent text that does not parse).
    pub fn input(&self) -> serde_json::Value {
        serde_json::from_str(&self.tool_input).unwrap_or_default()
    }
}

/// Whether a call may run; the host applies deny > ask > allow across hooks, and approval by
/// risk after them (a hook's allow never overrides the preset).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Permission {
    Allow,
    /// Not run; the reason goes to the model.
    Deny(String),
    /// Ask the user; without a terminal this is a deny.
    Ask(String),
}

/// A pre-tool hook's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreDecision {
    pub permission: Permission,
    /// New arguments (JSON text), validated again against the tool's schema.
    pub updated_input: Option<String>,
    /// Text added for the model beside the result.
    pub additional_context: Option<String>,
}

impl PreDecision {
    pub fn allow() -> PreDecision {
        PreDecision::with(Permission::Allow)
    }

    pub fn deny(reason: impl Into<String>) -> PreDecision {
        PreDecision::with(Permission::Deny(reason.into()))
    }

    pub fn ask(reason: impl Into<String>) -> PreDecision {
        PreDecision::with(Permission::Ask(reason.into()))
    }

    /// Runs the call with these arguments instead (checked against the schema again).
    pub fn rewrite(mut self, input: &serde_json::Value) -> PreDecision {
        self.updated_input = Some(input.to_string());
        self
    }

    pub fn context(mut self, text: impl Into<String>) -> PreDecision {
        self.additional_context = Some(text.into());
        self
    }

    fn with(permission: Permission) -> PreDecision {
        PreDecision {
            permission,
            updated_input: None,
            additional_context: None,
        }
    }
}

/// A post-tool hook's answer: keep the result or replace it, and maybe add context.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PostDecision {
    pub replace: Option<Result<Output, ToolError>>,
    pub additional_context: Option<String>,
}

impl PostDecision {
    pub fn keep() -> PostDecision {
        PostDecision::default()
    }

    pub fn replace(result: Result<Output, ToolError>) -> PostDecision {
        PostDecision {
            replace: Some(result),
            additional_context: None,
        }
    }

    pub fn context(mut self, text: impl Into<String>) -> PostDecision {
        self.additional_context = Some(text.into());
        self
    }
}

/// One hook. `Self` is its configuration: the preset's `[hooks.config]` table, deserialized
/// for every event (`{}` when the preset gives none, so derive `Default` with
/// `#[serde(default)]`). Both functions have defaults that let everything through unchanged.
pub trait Hook: serde::de::DeserializeOwned {
    /// What the `config` table accepts, as a JSON Schema (e.g.
    /// `Some(include_str!("../config.schema.json"))`). paddock checks a preset's table against
    /// it before a session starts, so a typo is refused with the closest valid key rather than
    /// found at the first call. `None` declares nothing.
    const CONFIG_SCHEMA: Option<&'static str> = None;

    /// Before a validated call runs.
    fn pre_tool_use(&self, event: &PreToolUse) -> PreDecision {
        let _ = event;
        PreDecision::allow()
    }

    /// After a call ran, with its result.
    fn post_tool_use(&self, event: &PostToolUse) -> PostDecision {
        let _ = event;
        PostDecision::keep()
    }
}

fn config<H: Hook>(text: &str, preset: &str) -> Result<H, String> {
    let text = if text.trim().is_empty() { "{}" } else { text };
    serde_json::from_str(text).map_err(|e| {
        format!("this hook's `config` in preset `{preset}` does not fit ({e}); fix the preset")
    })
}

#[doc(hidden)]
pub fn pre<H: Hook>(event: wit::PreToolUseEvent) -> wit::PreToolUseDecision {
    let decision = match config::<H>(&event.config, &event.preset) {
        Ok(hook) => hook.pre_tool_use(&PreToolUse {
            tool_name: event.tool_name,
            tool_input: event.tool_input,
            read_only: event.read_only,
            path_params: event.path_params,
            call_id: event.call_id,
            session_id: event.session_id,
            preset: event.preset,
        }),
        Err(message) => PreDecision::deny(message),
    };
    wit::PreToolUseDecision {
        permission_decision: match decision.permission {
            Permission::Allow => wit::PermissionDecision::Allow,
            Permission::Deny(reason) => wit::PermissionDecision::Deny(reason),
            Permission::Ask(reason) => wit::PermissionDecision::Ask(reason),
        },
        updated_input: decision.updated_input,
        additional_context: decision.additional_context,
    }
}

#[doc(hidden)]
pub fn post<H: Hook>(event: wit::PostToolUseEvent) -> wit::PostToolUseDecision {
    let decision = match config::<H>(&event.config, &event.preset) {
        Ok(hook) => hook.post_tool_use(&PostToolUse {
            tool_name: event.tool_name,
            tool_input: event.tool_input,
            call_id: event.call_id,
            session_id: event.session_id,
            preset: event.preset,
            tool_response: match event.tool_response {
                Ok(out) => Ok(Output {
                    content: out.content,
                    truncated: out.truncated,
                    continuation: out.continuation,
                }),
                Err(err) => Err(ToolError {
                    code: err.code,
                    message: err.message,
                    retryable: err.retryable,
                }),
            },
        }),
        // The result was not inspected: withhold it rather than pass it on.
        Err(message) => PostDecision::replace(Err(ToolError::new("HOOK_MISCONFIGURED", message))),
    };
    wit::PostToolUseDecision {
        replace: decision
            .replace
            .map(|r| r.map(Output::into_wit).map_err(ToolError::into_wit)),
        additional_context: decision.additional_context,
    }
}

/// Exports the hook type as this component's `hooks` interface and its `CONFIG_SCHEMA` as
/// `hook-config` (world `configured-hook`).
#[macro_export]
macro_rules! export_hook {
    ($hook:ty) => {
        struct __PaddockHook;

        impl $crate::hook::bindings::exports::paddock::plugin::hook_config::Guest for __PaddockHook {
            fn config_schema() -> Option<String> {
                <$hook as $crate::hook::Hook>::CONFIG_SCHEMA.map(String::from)
            }
        }

        impl $crate::hook::bindings::exports::paddock::plugin::hooks::Guest for __PaddockHook {
            fn pre_tool_use(
                event: $crate::hook::bindings::paddock::plugin::hook_types::PreToolUseEvent,
            ) -> $crate::hook::bindings::paddock::plugin::hook_types::PreToolUseDecision {
                $crate::hook::pre::<$hook>(event)
            }

            fn post_tool_use(
                event: $crate::hook::bindings::paddock::plugin::hook_types::PostToolUseEvent,
            ) -> $crate::hook::bindings::paddock::plugin::hook_types::PostToolUseDecision {
                $crate::hook::post::<$hook>(event)
            }
        }

        $crate::hook::bindings::__export_hook!(__PaddockHook with_types_in $crate::hook::bindings);
    };
}
