//! Strings for the lenient reader (V8): escapes, raw control characters, and which quotes end
//! a string and which are part of its text (the structure rules in the module above).

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
                return Err(self.ran_off(opened, &inner, ctx));
            };
            match c {
                '\\' => {
                    self.pos += 1;
                    self.escape(&mut out)?;
                }
                c if c == quote => {
                    // Keys hold no quotes: in a key, a quote always ends it. Elsewhere a quote
                    // ends the string where structure follows, or where the next member
                    // plainly starts (a comma is missing: a delimiter is inserted rather than
                    // the string widened).
                    let after = self.pos + 1;
                    if ctx == Ctx::Key
                        || closes(self.text, after, ctx)
                        || next_member_starts(self.text, after, ctx)
                    {
                        self.pos += 1;
                        break;
                    }
                    // `'it's'`: an apostrophe between letters is part of the word.
                    let in_word = quote == '\''
                        && out.chars().next_back().is_some_and(char::is_alphanumeric)
                        && self.text[after..]
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
                c if (c as u32) < 0x20 && ctx == Ctx::Key => {
                    return Err(self.invalid(format!(
                        "a raw control character ({c:?}) inside a key: keys hold none, and \
                         dropping it would be a guess"
                    )));
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
        self.check_inner_quotes(opened, &inner, &out, ctx)?;
        Ok(out)
    }

    /// The string's inner quotes, paired as the strict reading pairs them (the first would end
    /// the string, the second open another), must hide no structure between a pair: else the
    /// string would swallow keys or items the text shows, and both readings are named.
    fn check_inner_quotes(
        &self,
        opened: usize,
        inner: &[usize],
        out: &str,
        ctx: Ctx,
    ) -> Result<(), Failure> {
        let before =
            |end: usize| -> String { self.text[opened + 1..end].chars().take(80).collect() };
        if inner.len() % 2 == 1 {
            // An odd number of quotes inside: one of them may have been meant to end the
            // string earlier, or the one that ended it to be inside. Both readings are named.
            let last = inner[inner.len() - 1];
            return Err(Failure::Ambiguous {
                at: last,
                first: format!("the string {out:?}, with every inner quote part of it"),
                second: format!(
                    "the string {:?}, ended by the last inner quote",
                    before(last)
                ),
            });
        }
        for pair in inner.chunks(2) {
            let (end, reopen) = (pair[0], pair[1]);
            let between = &self.text[end + 1..reopen];
            let shows = if between.trim().is_empty() {
                Some("two strings side by side")
            } else {
                structure_in(between, ctx)
            };
            if let Some(shows) = shows {
                return Err(Failure::Ambiguous {
                    at: end,
                    first: format!("the string {out:?}, with every inner quote part of it"),
                    second: format!(
                        "the string {:?} ended by the quote here, then {shows} ({:?})",
                        before(end),
                        between.chars().take(40).collect::<String>()
                    ),
                });
            }
        }
        Ok(())
    }

    /// The input ended inside a string. When the text ends with a closing bracket it is not
    /// cut off: the string's closing quote is missing, or (with quotes inside it that did not
    /// end it) the first of those is followed by something that cannot follow a string.
    fn ran_off(&self, opened: usize, inner: &[usize], ctx: Ctx) -> Failure {
        if !self.text.trim_end().ends_with(['}', ']']) {
            return Failure::Truncated {
                at: self.text.len(),
            };
        }
        let Some(&first) = inner.first() else {
            return Failure::Invalid {
                at: opened,
                what: "the string that opens here never ends: its closing quote is missing".into(),
            };
        };
        let follows: String = self.text[first + 1..].chars().take(20).collect();
        let wanted = match ctx {
            Ctx::InArray => "`,` or `]`",
            _ => "`,` or `}`",
        };
        Failure::Invalid {
            at: first,
            what: format!(
                "no quote ends the string: the quote here is followed by {follows:?}, where \
                 {wanted} belongs, and no later quote can end it either"
            ),
        }
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
            // `\d` in a regex, `\.` or `\(` escaped punctuation, `\1` a back-reference: the
            // backslash means the same kept as text. Before other characters an escape means
            // something else in the languages models learned from (`\x41`, `\v`, `\0`, `\U`, a
            // backslash before a new line), so keeping it could change the meaning: refused.
            other if keeps_backslash(other) => {
                self.forgiven.lone_backslashes += 1;
                out.push('\\');
                other
            }
            other => {
                self.pos -= other.len_utf8() + 1;
                return Err(self.invalid(format!(
                    "`\\{}` is not a JSON escape, and it may mean something other than a \
                     backslash and {other:?} (send `\\\\` for a backslash)",
                    other.escape_debug()
                )));
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
        (Ctx::InArray, Some(b',' | b']' | b')')) => true,
        (Ctx::InObject, Some(b'}')) => true,
        (Ctx::InObject, Some(b',')) => match skip_blank(text, at + 1) {
            None => true,
            Some((next, _)) => {
                bytes.get(next).is_none_or(|b| *b == b'}') || key_after_stray_words(text, next)
            }
        },
        _ => false,
    }
}

/// Whether the next member plainly starts after a quote at `pos`, a comma missing before it:
/// a key and its `:` in an object, a whole string in an array.
fn next_member_starts(text: &str, pos: usize, ctx: Ctx) -> bool {
    let Some((at, _)) = skip_blank(text, pos) else {
        return false;
    };
    match ctx {
        Ctx::Key => false,
        Ctx::InObject => key_at(text, at),
        Ctx::InArray => string_at(text, at).is_some_and(|end| {
            skip_blank(text, end).is_some_and(|(next, _)| {
                matches!(text.as_bytes().get(next), Some(b',' | b']' | b'"' | b'\''))
            })
        }),
    }
}

/// What the text between an inner pair of quotes shows the strict reading, if it is
/// structure: a bracket, a `:` after the string before it (a key), a `,` between array items,
/// or a bare key after a comma.
fn structure_in(between: &str, ctx: Ctx) -> Option<&'static str> {
    if between.contains(['{', '}', '[', ']']) {
        return Some("a bracket");
    }
    if between.trim_start().starts_with(':') {
        return Some("a `:` that makes that string a key");
    }
    match ctx {
        Ctx::InArray if between.contains(',') => Some("a `,` between array items"),
        Ctx::InObject if bare_key_after_comma(between) => Some("a comma and a key"),
        _ => None,
    }
}

/// `, word:` somewhere in `text`.
fn bare_key_after_comma(text: &str) -> bool {
    text.match_indices(',').any(|(at, _)| {
        let rest = text[at + 1..].trim_start();
        let word = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        word > 0 && rest[word..].trim_start().starts_with(':')
    })
}

/// Whether a backslash before `c`, which JSON does not escape, keeps its meaning as text.
fn keeps_backslash(c: char) -> bool {
    matches!(c, 'd' | 'D' | 'w' | 'W' | 's' | 'S' | 'B' | '1'..='9')
        || (c.is_ascii_punctuation() && c != '\\')
}

/// The offset just after the string that opens with a quote at `pos`, if one does and closes
/// within the look-ahead on the same line.
fn string_at(text: &str, pos: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let q = *bytes.get(pos).filter(|b| matches!(b, b'"' | b'\''))?;
    let window = &bytes[pos + 1..bytes.len().min(pos + 1 + KEY_LOOKAHEAD)];
    let mut escaped = false;
    let close = window.iter().position(|b| {
        let ends = (*b == q || *b == b'\n') && !escaped;
        escaped = *b == b'\\' && !escaped;
        ends
    })?;
    (window[close] == q).then_some(pos + 1 + close + 1)
}

/// A key at `pos`, after at most a few stray words (`please "path": ...`).
pub(super) fn key_after_stray_words(text: &str, mut pos: usize) -> bool {
    for _ in 0..4 {
        if key_at(text, pos) {
            return true;
        }
        let bytes = text.as_bytes();
        let word = bytes[pos..]
            .iter()
            .position(|b| !b.is_ascii_alphabetic())
            .unwrap_or(bytes.len() - pos);
        if word == 0 {
            return false;
        }
        match skip_blank(text, pos + word) {
            Some((next, _)) if next > pos + word => pos = next,
            _ => return false,
        }
    }
    false
}

/// A key (quoted, a bare word, or digits) followed by `:` at `pos`.
pub(super) fn key_at(text: &str, pos: usize) -> bool {
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
        Some(b) if is_word_start(char::from(*b)) || b.is_ascii_digit() => {
            pos + bytes[pos..]
                .iter()
                .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'-')))
                .unwrap_or(bytes.len() - pos)
        }
        _ => return false,
    };
    skip_blank(text, end).is_some_and(|(at, _)| bytes.get(at) == Some(&b':'))
}
