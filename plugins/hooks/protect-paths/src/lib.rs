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

use paddock_sdk::hook::{Hook, PreDecision, PreToolUse};

const DEFAULT_GLOBS: &[&str] = &[".git/**", "**/.git/**", ".env", "**/.env", ".env.*"];

#[derive(serde::Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct ProtectPaths {
    globs: Option<Vec<String>>,
    deny_writes: bool,
}

impl Hook for ProtectPaths {
    const CONFIG_SCHEMA: Option<&'static str> = Some(include_str!("../config.schema.json"));

    fn pre_tool_use(&self, event: &PreToolUse) -> PreDecision {
        if event.read_only {
            return PreDecision::allow();
        }
        if self.deny_writes {
            return PreDecision::deny(format!(
                "preset `{}` allows no writes, and `{}` is not a read-only tool",
                event.preset, event.tool_name
            ));
        }
        let globs: Vec<String> = self
            .globs
            .clone()
            .unwrap_or_else(|| DEFAULT_GLOBS.iter().map(|g| g.to_string()).collect());
        let mut builder = globset::GlobSetBuilder::new();
        for glob in &globs {
            match globset::Glob::new(glob) {
                Ok(g) => {
                    builder.add(g);
                }
                Err(e) => {
                    return PreDecision::deny(format!(
                        "protect-paths glob {glob:?} is invalid: {e}; fix its `config` in preset `{}`",
                        event.preset
                    ));
                }
            }
        }
        let Ok(set) = builder.build() else {
            return PreDecision::deny("protect-paths globs do not compile");
        };
        let input = event.input();
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
                return PreDecision::deny(format!(
                    "writing `{path}` is blocked: it matches the protected glob {:?} \
                     (protect-paths hook in preset `{}`)",
                    globs[*i], event.preset
                ));
            }
        }
        PreDecision::allow()
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

paddock_sdk::export_hook!(ProtectPaths);
