//! Text safe for a terminal (T3): what a model, a tool, a hook, a plugin or a log says is
//! printed through `sanitize` (or `json_for_terminal` for JSON output) on every output path,
//! so it cannot drive the terminal. The session log keeps the text verbatim.
//!
//! And text cut to a size, spelt once: `prefix_bytes` and `prefix_chars` (where to cut),
//! `clip` (a cut marked `…`), `one_line` (text from the other side of a connection, for one
//! line of a message), `elide_middle` (the middle left out, with a marker that says how much).

/// Text paddock did not write itself (tool output, model text, hook reasons, log contents,
/// error messages), made safe for a terminal (T3). Every C0 control but newline and tab, DEL,
/// every C1 control (U+0080..U+009F, which includes the one-byte CSI and OSC) and the Unicode
/// direction overrides become visible escapes such as `\x1b`, so an escape sequence loses its
/// ESC and prints as plain text: nothing can move the cursor, clear the screen, set the window
/// title, write the clipboard (OSC 52) or redraw a question. Carriage return is shown too: it
/// would let a line overwrite itself. The one function every output path uses; the log keeps
/// the text verbatim.
pub fn sanitize(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(unsafe_for_terminal) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_for_terminal(c) {
            let code = u32::from(c);
            if code <= 0xff {
                out.push_str(&format!("\\x{code:02x}"));
            } else {
                out.push_str(&format!("\\u{{{code:04x}}}"));
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// JSON text (one value, or JSONL) made safe for a terminal with the same rule: serde escapes
/// C0 controls already; DEL, C1 and direction overrides, which can only occur inside strings,
/// become `\u` escapes, so the JSON means exactly the same.
pub fn json_for_terminal(json: &str) -> std::borrow::Cow<'_, str> {
    if !json.chars().any(unsafe_for_terminal) {
        return std::borrow::Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if unsafe_for_terminal(c) && c != '\n' {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `path` as one shell word a user can paste (a repository's directory name is the cloner's
/// choice, or the repository's): sanitized, and single-quoted unless plainly safe.
pub fn shell_word(path: &std::path::Path) -> String {
    let text = sanitize(&path.display().to_string()).into_owned();
    if text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
    {
        text
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
pub fn prefix_bytes(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The first `max` characters of `text`, and whether anything was left out.
pub fn prefix_chars(text: &str, max: usize) -> (&str, bool) {
    match text.char_indices().nth(max) {
        None => (text, false),
        Some((end, _)) => (&text[..end], true),
    }
}

/// `text` cut to `max` characters, with `…` where it was cut.
pub fn clip(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match prefix_chars(text, max) {
        (_, false) => std::borrow::Cow::Borrowed(text),
        (head, true) => std::borrow::Cow::Owned(format!("{head}…")),
    }
}

/// Text from the other side of a connection (a registry, a server, a key file) for one line of
/// a message: every control character a space, at most `max` characters, `…` where cut.
pub fn one_line(text: &str, max: usize) -> String {
    clip(text, max)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// `text` of at most about `max` characters: when longer, its first two thirds of `max` and
/// its last quarter, with `marker(left_out)` between them (`left_out` in bytes), so both ends
/// stay visible.
pub fn elide_middle(text: &str, max: usize, marker: impl Fn(usize) -> String) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let (head, _) = prefix_chars(text, max * 2 / 3);
    let tail_at = text
        .char_indices()
        .nth(count - max / 4)
        .map_or(text.len(), |(at, _)| at);
    let tail = &text[tail_at.max(head.len())..];
    let left_out = text.len() - head.len() - tail.len();
    format!("{head}{}{tail}", marker(left_out))
}

fn unsafe_for_terminal(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_fall_on_character_boundaries_and_say_so() {
        assert_eq!(prefix_bytes("héllo", 2), "h");
        assert_eq!(prefix_bytes("héllo", 3), "hé");
        assert_eq!(prefix_bytes("hi", 10), "hi");
        assert_eq!(prefix_chars("héllo", 2), ("hé", true));
        assert_eq!(prefix_chars("hé", 2), ("hé", false));
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("hé", 2), "hé");
        assert_eq!(one_line("a\nb\x1bcdef", 4), "a b …");
        let long = format!("{}{}", "a".repeat(100), "z".repeat(100));
        let short = elide_middle(&long, 30, |n| format!("[{n} cut]"));
        assert_eq!(
            short,
            format!("{}[{} cut]{}", "a".repeat(20), 200 - 20 - 7, "z".repeat(7))
        );
        assert_eq!(elide_middle("short", 30, |_| unreachable!()), "short");
    }

    #[test]
    fn escape_sequences_and_controls_become_visible_text() {
        let hostile =
            "ok\x1b]52;c;ZWNobyBwd25lZA==\x07 \x1b[2J\x1b[H\x1b]0;title\x07\r\u{9b}31m\u{202e}";
        let safe = sanitize(hostile);
        assert!(!safe.chars().any(|c| c.is_control()), "{safe}");
        assert_eq!(
            safe,
            "ok\\x1b]52;c;ZWNobyBwd25lZA==\\x07 \\x1b[2J\\x1b[H\\x1b]0;title\\x07\\x0d\\x9b31m\\u{202e}"
        );
        assert_eq!(sanitize("line\n\ttab é"), "line\n\ttab é");
    }

    #[test]
    fn json_stays_the_same_value_without_raw_controls() {
        let value = serde_json::json!({"t": "a\u{1b}]0;x\u{7}\u{9b}2J\u{202e}"});
        let text = format!("{value}\n");
        let safe = super::json_for_terminal(&text);
        assert!(
            !safe
                .trim_end()
                .chars()
                .any(|c| c.is_control() || c == '\u{202e}')
        );
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
    }
}
