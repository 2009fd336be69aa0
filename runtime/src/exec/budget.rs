//! Output budgets (S5): a result over its budget is cut at a character boundary, with a marker
//! that says how much was cut and how to read the rest, or spilled whole to a session file that
//! read_file can read back through the read-only `/spill` mount. Errors and hook context reach
//! the model too: `bound_result` cuts an error's message and a replaced result to the same
//! budget, so nothing a plugin or hook says reaches the log or the next request unbounded.

use std::path::PathBuf;

use crate::contract::{OutputBudget, Overflow, ToolError, ToolOutput, ToolResult};

/// A session's spill directory: where it is on the host, and where plugins granted it see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpillDir {
    pub host: PathBuf,
    pub guest: String,
}

impl SpillDir {
    pub const GUEST: &'static str = "/spill";
}

/// Bytes kept free under the budget for the marker itself.
const MARKER_ROOM: usize = 400;

/// Applies `budget` to `output`. `call_id` names the spill file. Spilling falls back to
/// truncating when there is no spill directory or it cannot be written.
pub fn apply_budget(
    output: ToolOutput,
    budget: OutputBudget,
    spill: Option<&SpillDir>,
    call_id: &str,
) -> ToolOutput {
    let max = usize::try_from(budget.max_bytes).unwrap_or(usize::MAX);
    let total = output.content.len();
    if total <= max {
        return output;
    }
    let keep = floor_char_boundary(
        &output.content,
        max.saturating_sub(MARKER_ROOM).max(max / 2),
    );
    let head = &output.content[..keep];
    if budget.on_overflow == Overflow::Spill
        && let Some(spill) = spill
    {
        match write_spill(spill, call_id, &output.content) {
            Ok(guest_path) => return spilled(head, total, &guest_path),
            Err(e) => tracing::warn!("spill of call {call_id} failed, truncating instead: {e}"),
        }
    }
    let how = match &output.continuation {
        Some(next) => format!("the tool says how to continue: {next}"),
        None => {
            "ask for less (a narrower path or pattern, a smaller limit) to see the rest".to_string()
        }
    };
    ToolOutput {
        content: format!(
            "{head}\n[output cut: showing {keep} of {total} bytes; {} bytes cut; {how}]",
            total - keep
        ),
        truncated: true,
        continuation: output.continuation.or(Some(how)),
    }
}

/// The last pass before a result reaches the model: a success over `budget` is truncated (a
/// spill happened earlier, before the post-hooks saw it), an error's message is cut to the
/// budget with a marker saying how much was cut.
pub fn bound_result(result: ToolResult, budget: OutputBudget) -> ToolResult {
    match result {
        Ok(out) => {
            let truncate = OutputBudget {
                on_overflow: Overflow::Truncate,
                ..budget
            };
            Ok(apply_budget(out, truncate, None, ""))
        }
        Err(error) => Err(bound_error(error, budget)),
    }
}

/// `error` with its message cut to `budget` (errors are never spilled: the model gets the
/// start of what went wrong, and the size of the rest).
pub fn bound_error(mut error: ToolError, budget: OutputBudget) -> ToolError {
    let max = usize::try_from(budget.max_bytes).unwrap_or(usize::MAX);
    error.message = bound_text(error.message, max);
    error
}

/// `text` cut to about `max` bytes at a character boundary, with a marker naming its size.
pub fn bound_text(text: String, max: usize) -> String {
    let total = text.len();
    if total <= max {
        return text;
    }
    let keep = floor_char_boundary(&text, max.saturating_sub(MARKER_ROOM).max(max / 2));
    format!(
        "{}\n[message cut: showing {keep} of {total} bytes]",
        &text[..keep]
    )
}

fn spilled(head: &str, total: usize, guest_path: &str) -> ToolOutput {
    let next_line = head.matches('\n').count() + 1;
    let args = serde_json::json!({ "path": guest_path, "offset": next_line }).to_string();
    ToolOutput {
        content: format!(
            "{head}\n[output cut: showing {} of {total} bytes; the whole result is saved at {guest_path}; \
             read on with read_file {args}]",
            head.len()
        ),
        truncated: true,
        continuation: Some(args),
    }
}

fn write_spill(spill: &SpillDir, call_id: &str, content: &str) -> std::io::Result<String> {
    let name: String = call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    // The spill holds whole results: private to the user (0700, files 0600), like the log.
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&spill.host)?;
    std::fs::set_permissions(&spill.host, std::fs::Permissions::from_mode(0o700))?;
    let path = spill.host.join(format!("{name}.txt"));
    let _ = std::fs::remove_file(&path);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?
        .write_all(content.as_bytes())?;
    Ok(format!("{}/{name}.txt", spill.guest.trim_end_matches('/')))
}

fn floor_char_boundary(s: &str, mut at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::ErrorCode;

    fn budget(max_bytes: u64, on_overflow: Overflow) -> OutputBudget {
        OutputBudget {
            max_bytes,
            on_overflow,
        }
    }

    #[test]
    fn error_messages_and_replaced_results_are_bound_too() {
        let error = ToolError::new(ErrorCode::Plugin("BIG".into()), "e".repeat(8 << 20));
        let bound = bound_result(Err(error), budget(4096, Overflow::Spill)).unwrap_err();
        assert!(bound.message.len() <= 4096, "{}", bound.message.len());
        assert!(bound.message.ends_with("of 8388608 bytes]"));
        let out = bound_result(
            Ok(ToolOutput::complete("r".repeat(10_000))),
            budget(4096, Overflow::Spill),
        )
        .unwrap();
        assert!(out.truncated && out.content.len() <= 4096 + 200);
    }

    #[test]
    fn results_within_budget_pass_unchanged() {
        let out = ToolOutput::complete("short");
        assert_eq!(
            apply_budget(out.clone(), budget(10, Overflow::Truncate), None, "c1"),
            out
        );
    }

    #[test]
    fn truncation_says_how_much_was_cut_and_stays_within_budget() {
        let content = "é".repeat(1000); // 2000 bytes of two-byte characters
        let out = apply_budget(
            ToolOutput::complete(content),
            budget(1001, Overflow::Truncate),
            None,
            "c1",
        );
        assert!(out.truncated);
        assert!(out.content.contains("of 2000 bytes"), "{}", out.content);
        assert!(
            out.content.len() <= 1001 + 200,
            "marker keeps the result near the budget"
        );
        assert!(out.continuation.is_some());
    }

    #[test]
    fn spilled_results_are_saved_whole_and_point_at_read_file() {
        let dir = tempfile::tempdir().unwrap();
        let spill = SpillDir {
            host: dir.path().to_path_buf(),
            guest: SpillDir::GUEST.into(),
        };
        let content: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let out = apply_budget(
            ToolOutput::complete(content.clone()),
            budget(1000, Overflow::Spill),
            Some(&spill),
            "call/7",
        );
        assert!(out.truncated);
        assert!(out.content.contains("/spill/call_7.txt"), "{}", out.content);
        let saved = std::fs::read_to_string(dir.path().join("call_7.txt")).unwrap();
        assert_eq!(saved, content);
        let next: serde_json::Value =
            serde_json::from_str(out.continuation.as_deref().unwrap()).unwrap();
        assert_eq!(next["path"], "/spill/call_7.txt");
        assert!(next["offset"].as_u64().unwrap() > 1);
    }
}
