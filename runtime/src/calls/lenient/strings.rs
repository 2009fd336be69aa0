//! Strings for the lenient reader (V8): escapes, raw control characters, and which quotes end
//! a string and which are part of its text.

use super::{Ctx, Failure, KEY_LOOKAHEAD, Reader, is_word_start, skip_blank};

impl Reader<'_> {
    /// A string opened by `quote` (`"` or `'`).
    pub(super) fn string(&mut self, quote: char, ctx: Ctx) -> Result<String, Failure> {
        let opened = self.pos;
        self.pos += 1;
        if quote == '\'' {
            self.forgiven.single_quotes += 1;
        }
        let mut out = String::new();
        let mut inner = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.truncated());
            };
            match c {
                '\\' => {
                    self.pos += 1;
                    self.escape(&mut out)?;
                }
                c if c == quote => {
                    // Keys hold no quotes: in a key, a quote always ends it.
                    if matches!(ctx, Ctx::Key) || closes(self.text, self.pos + 1, ctx) {
                        self.pos += 1;
                        break;
                    }
                    // `'it's'`: an apostrophe between letters is part of the word.
                    let in_word = quote == '\''
                        && out.chars().next_back().is_some_and(char::is_alphanumeric)
                        && self.text[self.pos + 1..]
                            .chars()
                            .next()
                            .is_some_and(char::is_alphanumeric);
                    if !in_word {
                        inner.push(self.pos);
                    }
                    self.forgiven.unescaped_quotes += usize::from(in_word);
                    out.push(c);
                    self.pos += 1;
                }
                c => {
                    if (c as u32) < 0x20 {
                        self.forgiven.control_characters += 1;
                    }
                    out.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
        self.forgiven.unescaped_quotes += inner.len();
        if inner.len() % 2 == 1 {
            // An odd number of quotes inside: one of them may have been meant to end the
            // string earlier, or the one that ended it to be inside. Both readings are named.
            let last = inner[inner.len() - 1];
            let before: String = self.text[opened + 1..last].chars().take(80).collect();
            return Err(Failure::Ambiguous {
                at: last,
                first: format!("the string {out:?}, with every inner quote part of it"),
                second: format!("the string {before:?}, ended by the last inner quote"),
            });
        }
        Ok(out)
    }

    /// After a backslash inside a string.
    fn escape(&mut self, out: &mut String) -> Result<(), Failure> {
        let Some(c) = self.peek() else {
            return Err(self.truncated());
        };
        self.pos += c.len_utf8();
        let plain = match c {
            '"' => '"',
            '\\' => '\\',
            '/' => '/',
            '\'' => '\'',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'u' => return self.unicode(out),
            other => {
                // `\d` in a regex: the backslash is part of the text.
                self.forgiven.lone_backslashes += 1;
                out.push('\\');
                other
            }
        };
        out.push(plain);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, Failure> {
        let rest = self.text.get(self.pos..).unwrap_or_default();
        let hex: String = rest.chars().take(4).collect();
        if !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(self.invalid(format!("`\\u{hex}` is not a unicode escape")));
        }
        if hex.len() < 4 {
            return Err(self.truncated());
        }
        let code = u32::from_str_radix(&hex, 16)
            .map_err(|_| self.invalid(format!("`\\u{hex}` is not a unicode escape")))?;
        self.pos += 4;
        Ok(code)
    }

    fn unicode(&mut self, out: &mut String) -> Result<(), Failure> {
        let high = self.hex4()?;
        let code = if (0xD800..0xDC00).contains(&high) {
            let rest = self.text.get(self.pos..).unwrap_or_default();
            if rest.len() < 2 && "\\u".starts_with(rest) {
                return Err(self.truncated());
            }
            if !rest.starts_with("\\u") {
                return Err(self.invalid("a lone leading surrogate in a \\u escape"));
            }
            self.pos += 2;
            let low = self.hex4()?;
            if !(0xDC00..0xE000).contains(&low) {
                return Err(self.invalid("a leading surrogate without its trailing one"));
            }
            0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
        } else {
            high
        };
        let c = char::from_u32(code)
            .ok_or_else(|| self.invalid(format!("\\u escape {code:#x} is not a character")))?;
        out.push(c);
        Ok(())
    }
}

/// Whether a quote whose next byte is `pos` ends a string in `ctx`: only if what follows is
/// the structure that may follow such a string. In an object, a `,` must be followed by a key
/// and its `:` (or by `}`), so `"say "a", "b" now"` stays one string.
fn closes(text: &str, pos: usize, ctx: Ctx) -> bool {
    let Some((at, _)) = skip_blank(text, pos) else {
        return true;
    };
    let bytes = text.as_bytes();
    match (ctx, bytes.get(at)) {
        (_, None) => true,
        (Ctx::Key, Some(b':')) => true,
        (Ctx::InArray, Some(b',' | b']')) => true,
        (Ctx::InObject, Some(b'}')) => true,
        (Ctx::InObject, Some(b',')) => match skip_blank(text, at + 1) {
            None => true,
            Some((next, _)) => bytes.get(next).is_none_or(|b| *b == b'}') || key_at(text, next),
        },
        _ => false,
    }
}

/// A key (quoted, or a bare word) followed by `:` at `pos`.
fn key_at(text: &str, pos: usize) -> bool {
    let bytes = text.as_bytes();
    let end = match bytes.get(pos) {
        Some(&q @ (b'"' | b'\'')) => {
            let window = &bytes[pos + 1..bytes.len().min(pos + 1 + KEY_LOOKAHEAD)];
            let mut escaped = false;
            let close = window.iter().position(|b| {
                let ends = *b == q && !escaped;
                escaped = *b == b'\\' && !escaped;
                ends
            });
            match close {
                Some(n) => pos + 1 + n + 1,
                None => return false,
            }
        }
        Some(b) if is_word_start(char::from(*b)) => {
            pos + bytes[pos..]
                .iter()
                .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'-')))
                .unwrap_or(bytes.len() - pos)
        }
        _ => return false,
    };
    skip_blank(text, end).is_some_and(|(at, _)| bytes.get(at) == Some(&b':'))
}
