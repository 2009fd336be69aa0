//! Terminal styling: colour only on a terminal, and never when NO_COLOR is set; text cut to
//! the columns it may take.

use std::io::IsTerminal;

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

pub fn color_enabled_stdout() -> bool {
    !no_color() && std::io::stdout().is_terminal()
}

pub fn color_enabled_stderr() -> bool {
    !no_color() && std::io::stderr().is_terminal()
}

/// Wraps `text` in an ANSI style when `on`.
pub fn paint(on: bool, code: &str, text: &str) -> String {
    if on {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

pub const BOLD: &str = "1";
pub const DIM: &str = "2";
pub const RED: &str = "31";
pub const YELLOW: &str = "33";
pub const GREEN: &str = "32";

/// `text` cut to at most `columns` terminal columns (a wide character takes two), with `…`
/// when cut.
pub fn cut_to_width(text: &str, columns: usize) -> String {
    if text.width() <= columns {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > columns {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// T3: the one rule for text paddock did not write itself (`paddock_types::text`).
pub use paddock_types::text::{json_for_terminal, sanitize};
