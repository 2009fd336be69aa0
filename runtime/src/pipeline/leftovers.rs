//! The temporary files a write call leaves when it ends before its rename (L7): the shipped
//! tools replace a file through `.NAME.paddock-TAG.tmp` beside it (`sandbox::leftovers`). A
//! call that traps, runs out of fuel or time, or is cancelled stops between the two, and its
//! temporary file would stay in the project for good. The pipeline removes it as soon as such
//! a call ends; `resume` does the same for the calls a crash cut off. Each removal is of that
//! one exact name, by descriptor under the mount (`sandbox::remove_temp`).

use crate::calls::ToolEntry;

/// What removing the temporary files of call `call_id` (with `args`) did: one line per file
/// removed (`Ok`) or that could not be (`Err`, with how to remove it by hand). Nothing for a
/// read-only tool or one that is not a plugin.
pub fn remove_call_temps(
    entry: &ToolEntry,
    args: &serde_json::Value,
    session_id: &str,
    call_id: &str,
) -> Vec<Result<String, String>> {
    if entry.plugin().is_none() || entry.spec.meta.is_read_only() {
        return Vec::new();
    }
    let tag = paddock_sandbox::call_tag(session_id, call_id);
    entry
        .spec
        .meta
        .path_params
        .iter()
        .filter_map(|param| args.get(param))
        .filter_map(serde_json::Value::as_str)
        .filter_map(
            |path| match paddock_sandbox::remove_temp(path, &entry.grant.mounts, &tag) {
                Ok(true) => Some(Ok(format!(
                    "call {call_id}: removed the temporary file its interrupted write left beside {path}"
                ))),
                Ok(false) => None,
                Err(e) => Some(Err(format!(
                    "call {call_id}: cannot remove the temporary file its interrupted write \
                     left beside {path} (named `.*.paddock-{tag}.tmp`): {e}; remove it by hand"
                ))),
            },
        )
        .collect()
}
