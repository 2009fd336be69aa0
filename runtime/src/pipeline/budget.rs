//! Output budgets (S5): a result over its budget is cut on a line boundary (a character
//! boundary inside a single over-long line), with a marker that says how much was cut and how
//! to read the rest, or spilled whole to a session file that read_file can read back through
//! the read-only `/spill` mount. Tools are told the budget (`PADDOCK_OUTPUT_BYTES`) and the
//! built-in ones page themselves within it; when the host must still cut a result that carries
//! the tool's own continuation, that continuation would skip what was cut, so the host withholds
//! it and names the first line not shown (docs/output-paging.md). Errors and hook context reach
//! the model too: `bound_result` cuts an error's message and a replaced result to the same
//! budget, so nothing a plugin or hook says reaches the log or the next request unbounded.


use paddock_sandbox::SpillDir;
use paddock_types::contract::{OutputBudget, Overflow, ToolError, ToolOutput, ToolResult};


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
    // An image is bounded by its own limit when the summary reads it (`model::ImagePart`):
    // cut, it would only be refused.
    if total <= max || output.content.starts_with(crate::model::IMAGE_OUTPUT_PREFIX) {
        return output;
    }
    let keep = line_boundary(
        &output.content,
        max.saturating_sub(MARKER_ROOM).max(max / 2),
    );
    let head = &output.content[..keep];
    let lines_kept = head.matches('\n').count();
    if budget.on_overflow == Overflow::Spill
        && let Some(spill) = spill
    {
        match write_spill(spill, call_id, &output.content) {
            Ok(guest_path) => return spilled(head, total, &guest_path),
            Err(e) => tracing::warn!("spill of call {call_id} failed, truncating instead: {e}"),
        }
    }
    let how = match &output.continuation {
        // The tool's continuation resumes after its whole page: following it would lose what
        // was cut here. Say exactly what was lost instead.
        Some(_) => format!(
            "the tool went over its budget of {max} bytes, so its own continuation would skip \
             everything after line {lines_kept} of this result and is withheld; repeat the call \
             asking for fewer results (about {lines_kept}) to see them"
        ),
        None => {
            "ask for less (a narrower path or pattern, a smaller limit) to see the rest".to_string()
        }
    };
    let separator = if head.ends_with('\n') { "" } else { "\n" };
    ToolOutput {
        content: format!(
            "{head}{separator}[output cut after line {lines_kept}: showing {keep} of {total} bytes; {} bytes cut; {how}]",
            total - keep
        ),
        truncated: true,
        continuation: Some(how),
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
    // A cut inside one over-long line resumes at that line, shown again whole.
    let (next_line, byte) = match head.rfind('\n') {
        Some(at) => (head.matches('\n').count() + 1, at + 1),
        None => (1, 0),
    };
    let args =
        serde_json::json!({ "path": guest_path, "offset": next_line, "byte": byte }).to_string();
    let separator = if head.ends_with('\n') { "" } else { "\n" };
    ToolOutput {
        content: format!(
            "{head}{separator}[output cut: showing {} of {total} bytes; the whole result is saved at {guest_path}; \
             read on with read_file {args}]",
            head.len()
        ),
        truncated: true,
        continuation: Some(args),
    }
}

fn write_spill(spill: &SpillDir, call_id: &str, content: &str) -> std::io::Result<String> {
    let name = crate::log::file_safe(call_id);
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

/// Where to cut `s` at or before `at`: just after the last newline there, unless that would
/// keep less than half (one very long line), then at a character boundary.
fn line_boundary(s: &str, at: usize) -> usize {
    let at = floor_char_boundary(s, at);
    match s.as_bytes()[..at].iter().rposition(|&b| b == b'\n') {
        Some(newline) if newline + 1 >= at / 2 => newline + 1,
        _ => at,
    }
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
    use paddock_types::contract::ErrorCode;

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
    fn a_cut_falls_on_a_line_and_withholds_a_continuation_that_would_skip_lines() {
        let content: String = (1..=1000).map(|i| format!("match {i}\n")).collect();
        let tool = ToolOutput {
            content,
            truncated: true,
            continuation: Some(r#"{"pattern":"m","offset":1000}"#.into()),
        };
        let out = apply_budget(tool, budget(4096, Overflow::Truncate), None, "c1");
        let (shown, marker) = out.content.rsplit_once('\n').unwrap();
        let last: usize = shown.lines().last().unwrap()["match ".len()..]
            .parse()
            .unwrap();
        assert_eq!(shown.lines().count(), last, "whole lines only: {shown}");
        assert!(
            marker.contains(&format!("after line {last}")) && !marker.contains("offset"),
            "{marker}"
        );
        assert!(!out.continuation.unwrap().contains("offset\":1000"));
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
        let (line, byte) = (
            next["offset"].as_u64().unwrap(),
            next["byte"].as_u64().unwrap(),
        );
        let resumed = &content[byte as usize..];
        assert!(resumed.starts_with(&format!("line {} \n", line - 1).replace(" \n", "\n")));
    }
}
