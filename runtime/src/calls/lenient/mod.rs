//! A lenient reader for one complete JSON object as real models write it (V8): raw control
//! characters in strings, unescaped quotes inside strings, missing commas, trailing commas,
//! `//` and `/* */` comments, single-quoted strings and keys, unquoted keys (a number too),
//! stray words before a key, Python's `True`/`False`/`None` and tuples, bare words where only a
//! string can stand, number forms with one reading (`.5`, `1.`, `+1`, `1_000`, hexadecimal for
//! a parameter whose schema wants an integer), and a backslash
//! before a character whose meaning it does not change (`"\d+"`). Each thing it forgives is
//! counted in `Forgiven`, which `repair` turns into typed `Repair`s for the log.
//!
//! The invariant: **a repair never changes the structure the text shows.** Every key the text
//! shows as a key (a quoted or bare word followed by `:`) is a key of the result, and every
//! array item it shows (a value between delimiters) is an item. So a forgiveness is applied only
//! where it yields the one reading under which that holds:
//! - a quote inside a string is text only if the string cannot end there (what follows is not
//!   the structure that may follow the string), and the text between an inner pair of quotes
//!   holds no delimiter the strict reading would see: no `:` after a string, no bracket, no `,`
//!   in an array, no `, word:` in an object, and never nothing (two strings side by side, runs
//!   of empty quotes). Otherwise the call is refused with both readings named;
//! - a missing delimiter is inserted, rather than a string widened: a quote followed by a key
//!   and its `:` ends the string and a comma is read before the key; a string followed by a
//!   string in an array is two items;
//! - an object holding a key twice is refused with both values, never resolved by overwriting;
//! - a raw control character in a key, or an escape whose meaning the backslash would change
//!   (`\x41`, `\v`, `\0`), is refused rather than kept.
//!
//! What it deliberately does not do: complete anything. Input that ends inside the object (an
//! open string, array, object, comment or a half-written literal) is `Failure::Truncated`,
//! whatever came before it; a closing bracket of the wrong kind (`}` where `]` belongs) is
//! refused with both brackets' positions. It never guesses a value: a bare word that could be
//! meant as something else (`tru`, `NaN`, two words) is refused. Nesting deeper than
//! `MAX_DEPTH` is refused, so no input can exhaust the stack.

mod scalars;
mod strings;

use serde_json::{Map, Value};

use super::strict::DuplicateKey;

/// Deeper nesting than this is refused (arguments are never this deep; the stack is bounded).
const MAX_DEPTH: usize = 128;
/// How far ahead a quote looks for the key that would follow it.
const KEY_LOOKAHEAD: usize = 256;

/// What the reader had to forgive, counted per kind.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Forgiven {
    pub control_characters: usize,
    pub unescaped_quotes: usize,
    pub missing_commas: usize,
    pub trailing_commas: usize,
    pub comments: usize,
    pub single_quotes: usize,
    pub unquoted_keys: usize,
    pub stray_words: usize,
    pub python_literals: usize,
    pub python_tuples: usize,
    pub bare_words: usize,
    pub number_forms: usize,
    pub lone_backslashes: usize,
    /// The parameters (top-level keys) whose values were written in hexadecimal (`0x1F`): the
    /// reader cannot tell an integer from a string, so `repair` keeps them only where the
    /// schema wants an integer.
    pub hex_parameters: Vec<String>,
}

/// Why the text is not one object, with the byte offset it was noticed at.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Failure {
    /// The input ended inside the object: cut off.
    Truncated { at: usize },
    /// Not JSON, even forgiving what real models get wrong.
    Invalid { at: usize, what: String },
    /// A string reads two ways; both are named.
    Ambiguous {
        at: usize,
        first: String,
        second: String,
    },
    /// An object holds a key twice (the second at `at`).
    DuplicateKey {
        at: usize,
        duplicate: Box<DuplicateKey>,
    },
    /// The array or object opened at `opened` is closed at `at` by the other kind of bracket.
    Mismatched {
        at: usize,
        opened: usize,
        expected: char,
        found: char,
    },
}

/// Where a string sits: what may follow its closing quote.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ctx {
    Key,
    InObject,
    InArray,
}

/// Reads the object that starts at byte `start` (a `{`). Returns it, the offset just after its
/// closing brace, and what was forgiven.
pub(crate) fn read_object(text: &str, start: usize) -> Result<(Value, usize, Forgiven), Failure> {
    let mut reader = Reader {
        text,
        pos: start,
        depth: 0,
        forgiven: Forgiven::default(),
        read_hex: false,
    };
    if reader.peek() != Some('{') {
        return Err(reader.invalid("expected `{` to start the object"));
    }
    let value = reader.object()?;
    Ok((value, reader.pos, reader.forgiven))
}

/// Skips white space and comments from `pos`; returns the new offset and how many comments it
/// passed, or `None` when a block comment never ends.
pub(crate) fn skip_blank(text: &str, mut pos: usize) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut comments = 0;
    loop {
        match (bytes.get(pos), bytes.get(pos + 1)) {
            (Some(b' ' | b'\t' | b'\n' | b'\r'), _) => pos += 1,
            (Some(b'/'), Some(b'/')) => {
                comments += 1;
                pos = text[pos..].find('\n').map_or(text.len(), |n| pos + n);
            }
            (Some(b'/'), Some(b'*')) => {
                comments += 1;
                pos = pos + 2 + text[pos + 2..].find("*/")? + 2;
            }
            _ => return Some((pos, comments)),
        }
    }
}

struct Reader<'a> {
    text: &'a str,
    pos: usize,
    depth: usize,
    forgiven: Forgiven,
    /// Set when the value just read was a hexadecimal number.
    read_hex: bool,
}

impl Reader<'_> {
    fn peek(&self) -> Option<char> {
        self.text.get(self.pos..)?.chars().next()
    }

    fn invalid(&self, what: impl Into<String>) -> Failure {
        Failure::Invalid {
            at: self.pos,
            what: what.into(),
        }
    }

    /// The input ended where more was needed. When the text ends with a closing bracket it
    /// looks complete, so it is not called cut off: a bracket is missing.
    fn truncated(&self) -> Failure {
        if self.text.trim_end().ends_with(['}', ']']) {
            return Failure::Invalid {
                at: self.text.trim_end().len(),
                what: "the text ends with a closing bracket but an array or object is still \
                       open: a `}` or `]` is missing"
                    .into(),
            };
        }
        Failure::Truncated {
            at: self.text.len(),
        }
    }

    /// Skips white space and comments, counting the comments.
    fn blank(&mut self) -> Result<(), Failure> {
        let (pos, comments) = skip_blank(self.text, self.pos).ok_or_else(|| self.truncated())?;
        self.pos = pos;
        self.forgiven.comments += comments;
        Ok(())
    }

    fn value(&mut self, ctx: Ctx) -> Result<Value, Failure> {
        self.blank()?;
        match self.peek() {
            None => Err(self.truncated()),
            Some('{') => self.object(),
            Some('[') => self.array(']'),
            Some('(') => self.array(')'),
            Some(quote @ ('"' | '\'')) => self.string(quote, ctx).map(Value::String),
            Some('-' | '+' | '.' | '0'..='9') => self.number(),
            Some(c) if is_word_start(c) => self.word_value(ctx),
            Some(c) => Err(self.invalid(format!("expected a value, found {c:?}"))),
        }
    }

    fn enter(&mut self) -> Result<(), Failure> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.invalid(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        self.pos += 1;
        Ok(())
    }

    fn object(&mut self) -> Result<Value, Failure> {
        let opened = self.pos;
        self.enter()?;
        let mut map = Map::new();
        let mut after_comma = false;
        loop {
            if self.closed('}', opened, after_comma)? {
                return Ok(Value::Object(map));
            }
            let key_at = self.pos;
            let key = self.key()?;
            self.blank()?;
            match self.peek() {
                None => return Err(self.truncated()),
                Some(':') => self.pos += 1,
                Some(c) => {
                    return Err(self.invalid(format!("expected `:` after a key, found {c:?}")));
                }
            }
            self.read_hex = false;
            let value = self.value(Ctx::InObject)?;
            if std::mem::take(&mut self.read_hex) {
                self.forgiven.hex_parameters.push(key.clone());
            }
            if let Some(first) = map.get(&key) {
                return Err(Failure::DuplicateKey {
                    at: key_at,
                    duplicate: Box::new(DuplicateKey {
                        key,
                        first: first.clone(),
                        second: value,
                    }),
                });
            }
            map.insert(key, value);
            after_comma = self.separator('}', opened)?;
        }
    }

    /// A key: quoted, a bare word, or digits; a bare word that is followed by a key rather than
    /// by `:` is a stray word (`please "path": ...`) and is dropped.
    fn key(&mut self) -> Result<String, Failure> {
        loop {
            match self.peek() {
                Some(quote @ ('"' | '\'')) => return self.string(quote, Ctx::Key),
                Some(c) if is_word_start(c) || c.is_ascii_digit() => {
                    let start = self.pos;
                    let word = self.word().to_owned();
                    let (next, _) =
                        skip_blank(self.text, self.pos).ok_or_else(|| self.truncated())?;
                    let bytes = self.text.as_bytes();
                    if next == self.text.len() {
                        return Err(self.truncated());
                    }
                    if bytes.get(next) == Some(&b':') {
                        if word.starts_with(|c: char| c.is_ascii_digit())
                            && !word.chars().all(|c| c.is_ascii_digit())
                        {
                            return Err(Failure::Invalid {
                                at: start,
                                what: format!("`{word}` is not a key"),
                            });
                        }
                        self.forgiven.unquoted_keys += 1;
                        return Ok(word);
                    }
                    if word.chars().all(|c| c.is_ascii_alphabetic())
                        && strings::key_after_stray_words(self.text, next)
                    {
                        self.forgiven.stray_words += 1;
                        self.pos = next;
                        continue;
                    }
                    self.pos = start;
                    return Err(self.invalid(format!(
                        "`{word}` is neither a key (no `:` follows it) nor a value"
                    )));
                }
                found => {
                    let found = found.unwrap_or_default();
                    return Err(self.invalid(format!("expected a key, found {found:?}")));
                }
            }
        }
    }

    /// An array, or a Python tuple when `close` is `)`. `(x)` is not a tuple in Python (it is
    /// `x`), so one item without a trailing comma is refused.
    fn array(&mut self, close: char) -> Result<Value, Failure> {
        let opened = self.pos;
        self.enter()?;
        let mut items = Vec::new();
        let mut after_comma = false;
        loop {
            if self.closed(close, opened, after_comma)? {
                if close == ')' {
                    if items.len() == 1 && !after_comma {
                        return Err(Failure::Invalid {
                            at: opened,
                            what: "`(x)` is a value in parentheses, not a tuple or an array".into(),
                        });
                    }
                    self.forgiven.python_tuples += 1;
                    // A one-item tuple's comma is Python syntax, not a trailing comma.
                    self.forgiven.trailing_commas -= usize::from(items.len() == 1);
                }
                return Ok(Value::Array(items));
            }
            items.push(self.value(Ctx::InArray)?);
            after_comma = self.separator(close, opened)?;
        }
    }

    /// At the top of a member: consumes `close` if it is next (a comma before it was a
    /// trailing one) and says whether it was.
    fn closed(&mut self, close: char, opened: usize, after_comma: bool) -> Result<bool, Failure> {
        self.blank()?;
        match self.peek() {
            None => Err(self.truncated()),
            Some(c) if c == close => {
                self.pos += 1;
                self.forgiven.trailing_commas += usize::from(after_comma);
                self.depth -= 1;
                Ok(true)
            }
            Some(c @ ('}' | ']' | ')')) => Err(self.mismatched(opened, close, c)),
            Some(_) => Ok(false),
        }
    }

    fn mismatched(&self, opened: usize, expected: char, found: char) -> Failure {
        Failure::Mismatched {
            at: self.pos,
            opened,
            expected,
            found,
        }
    }

    /// After a member: a `,` (consumed: true), `close` (left for `closed`: false), or a missing
    /// comma, read as one when the next member plainly starts here (a key and its `:` in an
    /// object; a value in an array).
    fn separator(&mut self, close: char, opened: usize) -> Result<bool, Failure> {
        self.blank()?;
        let in_object = close == '}';
        match self.peek() {
            None => Err(self.truncated()),
            Some(',') => {
                self.pos += 1;
                Ok(true)
            }
            Some(c) if c == close => Ok(false),
            Some(c @ ('}' | ']' | ')')) => Err(self.mismatched(opened, close, c)),
            Some(_) if in_object && strings::key_at(self.text, self.pos) => {
                self.forgiven.missing_commas += 1;
                Ok(true)
            }
            Some('"' | '\'' | '{' | '[' | '0'..='9' | '-') if !in_object => {
                self.forgiven.missing_commas += 1;
                Ok(true)
            }
            Some(c) => Err(self.invalid(format!("expected `,` or `{close}`, found {c:?}"))),
        }
    }

    /// `[A-Za-z0-9_$][A-Za-z0-9_$-]*` at the current position.
    fn word(&mut self) -> &str {
        let start = self.pos;
        let len = self.text[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '-')))
            .unwrap_or(self.text.len() - start);
        self.pos += len;
        &self.text[start..start + len]
    }
}

fn is_word_start(c: char) -> bool {
    c.is_ascii_alphabetic() || matches!(c, '_' | '$')
}

#[cfg(test)]
mod tests;
