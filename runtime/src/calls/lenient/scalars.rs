//! Numbers and bare words for the lenient reader (V8): JSON literals, Python's, number forms
//! with one reading, and bare words that can only be a string where they stand.
//!
//! What it deliberately does not do: read a word that could mean something else. `tru`, `nul`,
//! `NaN`, `Infinity`, `undefined`, any word that is a prefix of a literal and any that starts
//! with one (`nullnull`, `True1`) are refused, a bare
//! word followed by anything but the delimiter that ends a value is refused (`hello world`), a
//! number with a leading zero (`007`, octal in some languages) is refused, and hexadecimal
//! (`0x1F`) is read only as a parameter's own value, recorded so that `repair` keeps it only
//! where the schema wants an integer (the reader does not know the schema).

use serde_json::Value;

use super::{Ctx, Failure, Reader, skip_blank};

/// Words that are, or start, a literal in some language: never read as strings.
const NOT_STRINGS: &[&str] = &[
    "true",
    "false",
    "null",
    "none",
    "nan",
    "infinity",
    "undefined",
];

impl Reader<'_> {
    /// A bare word in value position: a literal, a Python literal, or a string.
    pub(super) fn word_value(&mut self, ctx: Ctx) -> Result<Value, Failure> {
        let start = self.pos;
        let len = self.text[start..]
            .find(|c: char| !is_bare_char(c))
            .unwrap_or(self.text.len() - start);
        // A `//` or `/*` inside starts a comment.
        let len = ["//", "/*"]
            .iter()
            .filter_map(|c| self.text[start..start + len].find(c))
            .min()
            .unwrap_or(len);
        self.pos += len;
        if self.pos == self.text.len() {
            // `tr` at the end may be the start of `true`: never completed.
            return Err(self.truncated());
        }
        let word = &self.text[start..self.pos];
        let value = match word {
            "true" => return Ok(Value::Bool(true)),
            "false" => return Ok(Value::Bool(false)),
            "null" => return Ok(Value::Null),
            "True" => Value::Bool(true),
            "False" => Value::Bool(false),
            "None" => Value::Null,
            _ => return self.bare_word(start, ctx),
        };
        self.forgiven.python_literals += 1;
        Ok(value)
    }

    /// A word that is not a literal reads as a string only when it ends the value here, and no
    /// literal starts like it.
    fn bare_word(&mut self, start: usize, ctx: Ctx) -> Result<Value, Failure> {
        let word = self.text[start..self.pos].to_owned();
        let lower = word.to_ascii_lowercase();
        // `nullnull` is two literals with a comma missing as much as it is a word.
        let starts_with_literal = ["true", "false", "null"]
            .iter()
            .any(|literal| lower.starts_with(literal))
            || ["True", "False", "None"]
                .iter()
                .any(|literal| word.starts_with(literal));
        if starts_with_literal
            || NOT_STRINGS
                .iter()
                .any(|literal| literal.starts_with(&lower))
            || lower == "inf"
        {
            return Err(Failure::Invalid {
                at: start,
                what: format!("`{word}` is not a value (paddock does not guess one)"),
            });
        }
        let (next, _) = skip_blank(self.text, self.pos).ok_or_else(|| self.truncated())?;
        let ends = match (ctx, self.text.as_bytes().get(next)) {
            (_, None) => return Err(self.truncated()),
            (Ctx::InObject, Some(b',' | b'}')) | (Ctx::InArray, Some(b',' | b']' | b')')) => true,
            _ => false,
        };
        if !ends {
            return Err(Failure::Invalid {
                at: start,
                what: format!(
                    "`{word}` is not a value, and what follows it is not where a value ends, \
                     so it is not read as a string"
                ),
            });
        }
        self.forgiven.bare_words += 1;
        Ok(Value::String(word))
    }

    /// A number, in JSON's form or one of the forms with a single reading: `.5`, `1.`, `+1`,
    /// `1_000`.
    pub(super) fn number(&mut self) -> Result<Value, Failure> {
        let start = self.pos;
        let len = self.text[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.' | '_')))
            .unwrap_or(self.text.len() - start);
        self.pos += len;
        if self.pos == self.text.len() {
            return Err(self.truncated());
        }
        let token = &self.text[start..self.pos];
        let not_a_number = || Failure::Invalid {
            at: start,
            what: format!("`{token}` is not a number (paddock does not guess one)"),
        };
        if let Ok(number) = serde_json::from_str::<serde_json::Number>(token) {
            return Ok(Value::Number(number));
        }
        if let Some(hex) = token
            .strip_prefix("0x")
            .or_else(|| token.strip_prefix("0X"))
        {
            // Only a parameter's own value: `repair` checks the schema wants an integer there.
            let value = u64::from_str_radix(hex, 16)
                .ok()
                .filter(|_| self.depth == 1 && !hex.starts_with('+'))
                .ok_or_else(|| Failure::Invalid {
                    at: start,
                    what: format!(
                        "`{token}` is hexadecimal, which paddock reads only as the value of a \
                         parameter whose schema wants an integer"
                    ),
                })?;
            self.read_hex = true;
            return Ok(Value::Number(value.into()));
        }
        let normal = normal_number(token).ok_or_else(not_a_number)?;
        let number =
            serde_json::from_str::<serde_json::Number>(&normal).map_err(|_| not_a_number())?;
        self.forgiven.number_forms += 1;
        Ok(Value::Number(number))
    }
}

/// `token` in JSON's number form, when it is one of the forms with a single reading.
fn normal_number(token: &str) -> Option<String> {
    let (sign, rest) = match token.as_bytes().first()? {
        b'+' => ("", &token[1..]),
        b'-' => ("-", &token[1..]),
        _ => ("", token),
    };
    // `1_000`: underscores only between digits.
    let bytes = rest.as_bytes();
    let underscores_between_digits = bytes.iter().enumerate().all(|(i, b)| {
        *b != b'_'
            || (i > 0
                && bytes[i - 1].is_ascii_digit()
                && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
    });
    if !underscores_between_digits {
        return None;
    }
    let rest = rest.replace('_', "");
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(at) => rest.split_at(at),
        None => (rest.as_str(), ""),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((int, frac)) => (int, Some(frac)),
        None => (mantissa, None),
    };
    if !int.bytes().all(|b| b.is_ascii_digit()) || (int.len() > 1 && int.starts_with('0')) {
        return None;
    }
    let frac = match frac {
        // `1.` and `.5`, never `.` alone.
        Some("") if !int.is_empty() => "0",
        Some(frac) if frac.bytes().all(|b| b.is_ascii_digit()) && !frac.is_empty() => frac,
        Some(_) => return None,
        None if !int.is_empty() => "",
        None => return None,
    };
    let int = if int.is_empty() { "0" } else { int };
    let dot = if frac.is_empty() { "" } else { "." };
    Some(format!("{sign}{int}{dot}{frac}{exponent}"))
}

/// Characters of a bare word in value position: `src/main.rs`, `utf-8`, `a_b`.
fn is_bare_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '-' | '.' | '/' | '@' | '~' | '+')
}
