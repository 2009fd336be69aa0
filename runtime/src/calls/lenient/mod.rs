//! A lenient reader for one complete JSON object as real models write it (V8): raw control
//! characters in strings, unescaped quotes inside strings where the reading is unambiguous,
//! trailing commas, `//` and `/* */` comments, single-quoted strings and keys, unquoted keys,
//! Python's `True`/`False`/`None`, and a backslash before a character JSON does not escape
//! (`"\d+"`). Each thing it forgives is counted in `Forgiven`, which `repair` turns into typed
//! `Repair`s for the log.
//!
//! What it deliberately does not do: complete anything. Input that ends inside the object (an
//! open string, array, object, comment or a half-written literal) is `Failure::Truncated`,
//! whatever came before it. It never guesses a value: a bare word other than a literal is
//! refused, and a string whose inner quotes read two ways is `Failure::Ambiguous` with both
//! readings. Nesting deeper than `MAX_DEPTH` is refused, so no input can exhaust the stack.

mod strings;

use serde_json::{Map, Value};

/// Deeper nesting than this is refused (arguments are never this deep; the stack is bounded).
const MAX_DEPTH: usize = 128;
/// How far ahead a quote looks for the key that would follow it.
const KEY_LOOKAHEAD: usize = 256;

/// What the reader had to forgive, counted per kind.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Forgiven {
    pub control_characters: usize,
    pub unescaped_quotes: usize,
    pub trailing_commas: usize,
    pub comments: usize,
    pub single_quotes: usize,
    pub unquoted_keys: usize,
    pub python_literals: usize,
    pub lone_backslashes: usize,
}

/// Why the text is not one object, with the byte offset it was noticed at.
#[derive(Debug, Clone, PartialEq, Eq)]
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
}

/// Where a string sits: what may follow its closing quote.
#[derive(Clone, Copy)]
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

    fn truncated(&self) -> Failure {
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
            Some('[') => self.array(),
            Some(quote @ ('"' | '\'')) => self.string(quote, ctx).map(Value::String),
            Some('-' | '0'..='9') => self.number(),
            Some(c) if is_word_start(c) => self.literal(),
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
        self.enter()?;
        let mut map = Map::new();
        let mut after_comma = false;
        loop {
            if self.closed('}', after_comma)? {
                return Ok(Value::Object(map));
            }
            let key = match self.peek() {
                Some(quote @ ('"' | '\'')) => self.string(quote, Ctx::Key)?,
                Some(c) if is_word_start(c) => {
                    self.forgiven.unquoted_keys += 1;
                    self.word().to_owned()
                }
                found => {
                    let found = found.unwrap_or_default();
                    return Err(self.invalid(format!("expected a key, found {found:?}")));
                }
            };
            self.blank()?;
            match self.peek() {
                None => return Err(self.truncated()),
                Some(':') => self.pos += 1,
                Some(c) => {
                    return Err(self.invalid(format!("expected `:` after a key, found {c:?}")));
                }
            }
            let value = self.value(Ctx::InObject)?;
            map.insert(key, value);
            after_comma = self.separator('}')?;
        }
    }

    fn array(&mut self) -> Result<Value, Failure> {
        self.enter()?;
        let mut items = Vec::new();
        let mut after_comma = false;
        loop {
            if self.closed(']', after_comma)? {
                return Ok(Value::Array(items));
            }
            items.push(self.value(Ctx::InArray)?);
            after_comma = self.separator(']')?;
        }
    }

    /// At the top of a member: consumes `close` if it is next (a comma before it was a
    /// trailing one) and says whether it was.
    fn closed(&mut self, close: char, after_comma: bool) -> Result<bool, Failure> {
        self.blank()?;
        match self.peek() {
            None => Err(self.truncated()),
            Some(c) if c == close => {
                self.pos += 1;
                self.forgiven.trailing_commas += usize::from(after_comma);
                self.depth -= 1;
                Ok(true)
            }
            Some(_) => Ok(false),
        }
    }

    /// After a member: a `,` (consumed: true) or `close` (left for `closed`: false).
    fn separator(&mut self, close: char) -> Result<bool, Failure> {
        self.blank()?;
        match self.peek() {
            None => Err(self.truncated()),
            Some(',') => {
                self.pos += 1;
                Ok(true)
            }
            Some(c) if c == close => Ok(false),
            Some(c) => Err(self.invalid(format!("expected `,` or `{close}`, found {c:?}"))),
        }
    }

    /// `[A-Za-z_$][A-Za-z0-9_$-]*` at the current position.
    fn word(&mut self) -> &str {
        let start = self.pos;
        let len = self.text[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '-')))
            .unwrap_or(self.text.len() - start);
        self.pos += len;
        &self.text[start..start + len]
    }

    fn literal(&mut self) -> Result<Value, Failure> {
        let start = self.pos;
        let word = self.word().to_owned();
        if self.pos == self.text.len() {
            // `tr` at the end may be the start of `true`: never completed.
            return Err(self.truncated());
        }
        let value = match word.as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "null" => Value::Null,
            "True" | "False" | "None" => {
                self.forgiven.python_literals += 1;
                match word.as_str() {
                    "True" => Value::Bool(true),
                    "False" => Value::Bool(false),
                    _ => Value::Null,
                }
            }
            _ => {
                return Err(Failure::Invalid {
                    at: start,
                    what: format!("`{word}` is not a value (paddock does not guess one)"),
                });
            }
        };
        Ok(value)
    }

    fn number(&mut self) -> Result<Value, Failure> {
        let start = self.pos;
        let len = self.text[start..]
            .find(|c: char| !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E')))
            .unwrap_or(self.text.len() - start);
        self.pos += len;
        if self.pos == self.text.len() {
            return Err(self.truncated());
        }
        let token = &self.text[start..self.pos];
        serde_json::from_str::<serde_json::Number>(token)
            .map(Value::Number)
            .map_err(|_| Failure::Invalid {
                at: start,
                what: format!("`{token}` is not a JSON number"),
            })
    }
}

fn is_word_start(c: char) -> bool {
    c.is_ascii_alphabetic() || matches!(c, '_' | '$')
}

#[cfg(test)]
mod tests;
