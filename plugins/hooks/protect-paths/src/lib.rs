//! Example hook `protect-paths` (H1): a pre-tool hook that denies writes to protected paths.
//!
//! Config (the hook's `config` table in the preset):
//! - `globs`: paths, relative to /workspace, no tool may write; default `.git/**`,
//!   `**/.git/**`, `.env`, `**/.env`, `.env.*`;
//! - `deny_writes = true`: deny every tool that is not read-only, whatever its arguments.
//!
//! A tool that declares itself read-only is always allowed (the host enforces read-only
//! mounts for it). Paths are normalised (`.`, `..`, `/workspace/`) before matching, so
//! `src/../.git/config` is caught.

wit_bindgen::generate!({ world: "hook", path: "../../../wit" });

use exports::paddock::plugin::hooks::Guest;
use paddock::plugin::hook_types::{
    PermissionDecision, PostToolUseDecision, PostToolUseEvent, PreToolUseDecision, PreToolUseEvent,
};

const DEFAULT_GLOBS: &[&str] = &[".git/**", "**/.git/**", ".env", "**/.env", ".env.*"];

#[derive(serde::Deserialize, Default)]
struct Config {
    globs: Option<Vec<String>>,
    #[serde(default)]
    deny_writes: bool,
}

struct ProtectPaths;

fn decide(permission_decision: PermissionDecision) -> PreToolUseDecision {
    PreToolUseDecision {
        permission_decision,
        updated_input: None,
        additional_context: None,
    }
}

impl Guest for ProtectPaths {
    fn pre_tool_use(event: PreToolUseEvent) -> PreToolUseDecision {
        if event.read_only {
            return decide(PermissionDecision::Allow);
        }
        let config: Config = match serde_json::from_str(&event.config) {
            Ok(config) => config,
            Err(e) => {
                return decide(PermissionDecision::Deny(format!(
                    "protect-paths is misconfigured ({e}); fix its `config` in preset `{}`",
                    event.preset
                )));
            }
        };
        if config.deny_writes {
            return decide(PermissionDecision::Deny(format!(
                "preset `{}` allows no writes, and `{}` is not a read-only tool",
                event.preset, event.tool_name
            )));
        }
        let globs: Vec<String> = config
            .globs
            .unwrap_or_else(|| DEFAULT_GLOBS.iter().map(|g| g.to_string()).collect());
        let mut builder = globset::GlobSetBuilder::new();
        for glob in &globs {
            match globset::Glob::new(glob) {
                Ok(g) => {
                    builder.add(g);
                }
                Err(e) => {
                    return decide(PermissionDecision::Deny(format!(
                        "protect-paths glob {glob:?} is invalid: {e}"
                    )));
                }
            }
        }
        let Ok(set) = builder.build() else {
            return decide(PermissionDecision::Deny(
                "protect-paths globs do not compile".into(),
            ));
        };
        let input: serde_json::Value = serde_json::from_str(&event.tool_input).unwrap_or_default();
        let fields: Vec<String> = if event.path_params.is_empty() {
            vec!["path".into()]
        } else {
            event.path_params.clone()
        };
        for field in &fields {
            let Some(path) = input.get(field).and_then(|v| v.as_str()) else {
                continue;
            };
            let normal = normalise(path);
            if let Some(i) = set.matches(&normal).first() {
                return decide(PermissionDecision::Deny(format!(
                    "writing `{path}` is blocked: it matches the protected glob {:?} \
                     (protect-paths hook in preset `{}`)",
                    globs[*i], event.preset
                )));
            }
        }
        decide(PermissionDecision::Allow)
    }

    fn post_tool_use(_event: PostToolUseEvent) -> PostToolUseDecision {
        PostToolUseDecision {
            replace: None,
            additional_context: None,
        }
    }
}

/// `/workspace/a/./b/../c` => `a/c`, as a path relative to the workspace.
fn normalise(path: &str) -> String {
    let rel = path.strip_prefix("/workspace").unwrap_or(path);
    let mut parts: Vec<&str> = Vec::new();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.join("/")
}

export!(ProtectPaths);
