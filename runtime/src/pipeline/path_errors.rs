//! What a path a plugin could not use really ran into, told by the host that knows the
//! grant: a plugin sees only its mounts, so to it an absolute path outside them is "not found"
//! and a protected file is "permission denied, or a read-only mount". The host, which knows
//! the mounts, their modes and the protected paths (K2), says which, so the model (and a
//! person reading the log) is told what is wrong and what to do.

use std::path::Path;

use super::locks::{lexical, path_arguments};

use paddock_sandbox::{Grant, MountMode};
use paddock_types::contract::{ErrorCode, ToolError, ToolSpec};
use serde_json::Value;

/// `error` of a call to `spec` with `args` under `grant`, told exactly when a path argument
/// explains it; otherwise `error` as it was.
pub(super) fn explain(spec: &ToolSpec, grant: &Grant, args: &Value, error: ToolError) -> ToolError {
    let code = match &error.code {
        ErrorCode::Plugin(code) if code == "NOT_FOUND" || code == "PERMISSION_DENIED" => code,
        _ => return error,
    };
    let denied = code == "PERMISSION_DENIED";
    let writes = !spec.meta.is_read_only();
    for path in path_arguments(spec, args) {
        if let Some(why) = why(grant, path, denied, writes) {
            return ToolError {
                message: why,
                ..error
            };
        }
    }
    error
}

/// Why `path` failed, when the grant says: outside every mount, protected, or under a
/// read-only mount.
fn why(grant: &Grant, path: &str, denied: bool, writes: bool) -> Option<String> {
    let mounts = &grant.mounts;
    let base = mounts.first().map_or("/workspace", |m| m.guest.as_str());
    let guest = lexical(&Path::new(base).join(path));
    let mount = mounts
        .iter()
        .filter(|m| guest.starts_with(&m.guest))
        .max_by_key(|m| m.guest.len());
    let Some(mount) = mount else {
        let guests: Vec<&str> = mounts.iter().map(|m| m.guest.as_str()).collect();
        return Some(format!(
            "{path}: outside the mounts this tool was granted ({}); give a path relative to \
             {base}, or an absolute one under a mount",
            guests.join(", ")
        ));
    };
    if !denied || !writes {
        return None;
    }
    let rel = guest.strip_prefix(&mount.guest).unwrap_or(Path::new(""));
    if grant.protect.covers(rel) {
        return Some(format!(
            "{path}: protected: paddock keeps what a program you run later would execute or \
             obey (git's hooks and config, cargo's and npm's config, editors' settings, ...) \
             read-only for tools (docs/security.md, \"Ambient execution\"); leave it as it is, \
             or, if this preset must write it, list it in the plugin's `writable_protected`"
        ));
    }
    (mount.mode == MountMode::Ro).then(|| {
        format!(
            "{path}: its mount {} is read-only for this tool; use a preset that mounts it \
             read-write (e.g. `coding`) to change it",
            mount.guest
        )
    })
}
