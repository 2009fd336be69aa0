//! How a call's result is shown live: labelled by its call (id and tool, so
//! parallel results are told apart); a success as the first few lines and "… N more lines"
//! with where to see the rest; an error whole, wrapped to the terminal's width, so the part
//! that says how to fix it is never cut. Text from the tool passes `sanitize` (T3).

use unicode_width::UnicodeWidthStr;

use super::style::{BOLD, DIM, RED, cut_to_width, paint, sanitize};
use paddock::pipeline::CallSummary;

/// Lines of a successful result shown live.
pub const HEAD_LINES: usize = 4;

/// The result of `call`, as lines ready to print. `more` says where the whole result is
/// (`/show c1`, `paddock log SESSION`).
pub fn render(call: &CallSummary, width: usize, color: bool, more: &str) -> String {
    let label = format!("{} {}", sanitize(&call.id), sanitize(&call.name));
    let content = sanitize(&call.content);
    let lines: Vec<&str> = content.lines().collect();
    let mut out = String::new();
    if call.is_error {
        let code = call.code.as_deref().unwrap_or("error");
        out.push_str(&format!(
            "  {} {} {}\n",
            paint(color, RED, "✗"),
            paint(color, BOLD, &label),
            paint(color, DIM, &format!("· {}", sanitize(code)))
        ));
        for line in wrap(&content, width.saturating_sub(4).max(20)) {
            out.push_str(&format!("    {line}\n"));
        }
        return out;
    }
    let size = match lines.len() {
        0 => "no output".to_string(),
        1 => "1 line".to_string(),
        n => format!("{n} lines"),
    };
    out.push_str(&format!(
        "  {} {} {}\n",
        paint(color, BOLD, "✓"),
        paint(color, BOLD, &label),
        paint(color, DIM, &format!("· {size}"))
    ));
    let room = width.saturating_sub(6).max(20);
    for line in lines.iter().take(HEAD_LINES) {
        out.push_str(&format!(
            "    {} {}\n",
            paint(color, DIM, "│"),
            cut_to_width(line, room)
        ));
    }
    if lines.len() > HEAD_LINES {
        out.push_str(&format!(
            "    {}\n",
            paint(
                color,
                DIM,
                &format!("… {} more lines · {more}", lines.len() - HEAD_LINES)
            )
        ));
    }
    out
}

/// `text` wrapped at spaces to `width` columns; a word longer than a line is split.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    for source in text.lines() {
        let mut line = String::new();
        for word in source.split(' ') {
            let mut word = word.to_string();
            let needed = if line.is_empty() { 0 } else { 1 } + word.width();
            if line.width() + needed > width && !line.is_empty() {
                out.push(std::mem::take(&mut line));
            }
            while word.width() > width {
                let head: String = cut_to_width(&word, width + 1)
                    .trim_end_matches('…')
                    .to_string();
                let rest = word[head.len()..].to_string();
                if !line.is_empty() {
                    out.push(std::mem::take(&mut line));
                }
                out.push(head);
                word = rest;
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&word);
        }
        out.push(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(content: &str, is_error: bool) -> CallSummary {
        CallSummary {
            id: "c1".into(),
            name: "read_file".into(),
            content: content.into(),
            is_error,
            code: is_error.then(|| "NOT_FOUND".into()),
            images: Vec::new(),
        }
    }

    #[test]
    fn a_long_result_shows_its_head_and_how_many_more() {
        let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let shown = render(&call(&text, false), 80, false, "/show c1");
        assert_eq!(
            shown,
            "  ✓ c1 read_file · 10 lines\n    │ line 1\n    │ line 2\n    │ line 3\n    │ line 4\n    … 6 more lines · /show c1\n"
        );
    }

    #[test]
    fn an_error_is_shown_whole_and_wrapped() {
        let message = format!(
            "error[NOT_FOUND]: {} fix: use list_dir first",
            "word ".repeat(40)
        );
        let shown = render(&call(&message, true), 60, false, "");
        assert!(
            shown.starts_with("  ✗ c1 read_file · NOT_FOUND\n"),
            "{shown}"
        );
        assert!(shown.contains("fix: use list_dir first"), "{shown}");
        assert!(shown.lines().all(|l| l.width() <= 60), "{shown}");
    }

    #[test]
    fn controls_in_a_result_are_made_visible() {
        let shown = render(&call("a\u{1b}[2Jb", false), 80, false, "");
        assert!(shown.contains("a\\x1b[2Jb"), "{shown}");
    }

    #[test]
    fn wrap_splits_long_words() {
        assert_eq!(wrap("aaaaaaaaaa bb", 4), ["aaaa", "aaaa", "aa", "bb"]);
    }
}
