//! Finding the one object a model meant in its argument text (V7, V8): a markdown fence around
//! it, prose before or after it, and several objects one after another.
//!
//! Concatenated objects (`{..}{..}`) are never merged and never dropped silently: identical
//! copies are one object; of different ones, the first that passes the schema is chosen and the
//! others are returned as not run, so the call's result can name them (V7). Two different
//! objects inside prose are ambiguous and refused with both named. What it deliberately does not
//! do: pick an object out of text that holds anything JSON-like besides it.

use serde::de::IgnoredAny;
use serde_json::Value;

use super::lenient::{Failure, Forgiven, read_object, skip_blank};
use super::strict;

/// The body of a markdown code fence that is the whole text (`` ```json ... ``` ``), and where
/// the body starts. Several fences are not one object: left to the prose step.
pub fn strip_fence(text: &str) -> Option<(&str, usize)> {
    let trimmed_start = text.len() - text.trim_start().len();
    let rest = text.trim().strip_prefix("```")?;
    let newline = rest.find('\n')?;
    let tag = rest[..newline].trim();
    if !tag
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
    {
        return None;
    }
    let body = rest[newline + 1..].trim_end().strip_suffix("```")?;
    if body.contains("```") {
        return None;
    }
    Some((body, trimmed_start + 3 + newline + 1))
}

/// One object found in prose.
#[derive(Debug)]
pub(crate) struct Found {
    pub value: Value,
    pub forgiven: Forgiven,
    /// Bytes of prose dropped before and after the object (and between its copies).
    pub before: usize,
    pub after: usize,
    /// How many times the object was sent (identical copies follow it).
    pub copies: usize,
}

/// The object in `text`: the text itself, or the first `{` after prose that holds no `{`.
/// Text after the object must be prose (not structure); identical copies of the object, any
/// number of them, are that object and counted; a different object is a second reading.
pub(crate) fn find_object(text: &str) -> Result<Found, Failure> {
    let Some(start) = text.find('{') else {
        return Err(Failure::Invalid {
            at: text.len() - text.trim_start().len(),
            what: "there is no JSON object (`{`) in the text".into(),
        });
    };
    if let Some(at) = json_value_in(&text[..start]) {
        return Err(beside(at, "before"));
    }
    let (value, end, forgiven) = read_object(text, start)?;
    let before = text[..start].trim().len();
    let mut copies = 1;
    let mut after = 0;
    let mut pos = end;
    loop {
        let (rest, _) = skip_blank(text, pos).unwrap_or((pos, 0));
        let tail = &text[rest..];
        let prose = tail.find('{').map_or(tail, |next| &tail[..next]);
        let first = tail.chars().next().unwrap_or(' ');
        if !prose.trim().is_empty() && matches!(first, '"' | '\'' | ',' | ':' | '}' | ']' | '[') {
            return Err(Failure::Invalid {
                at: rest,
                what: format!("the object ends, then {first:?} follows"),
            });
        }
        if !prose.trim().is_empty() && forgiven.unescaped_quotes > 0 {
            // With quotes inside strings repaired, text after the object may be the rest of a
            // string that closed too early: not prose we may drop.
            return Err(Failure::Invalid {
                at: rest,
                what: "text follows an object whose strings needed repaired quotes".into(),
            });
        }
        if let Some(at) = json_value_in(prose) {
            return Err(beside(rest + at, "after"));
        }
        after += prose.trim().len();
        let Some(next) = tail.find('{') else {
            break;
        };
        match read_object(text, rest + next) {
            Ok((copy, copy_end, _)) if copy == value => {
                copies += 1;
                pos = copy_end;
            }
            Ok((other, _, _)) => {
                return Err(Failure::Ambiguous {
                    at: rest + next,
                    first: format!("the object {}", shown(&value)),
                    second: format!("the object {}", shown(&other)),
                });
            }
            Err(duplicate @ Failure::DuplicateKey { .. }) => return Err(duplicate),
            Err(_) => {
                return Err(Failure::Invalid {
                    at: rest + next,
                    what: "after the object, more JSON-like text begins".into(),
                });
            }
        }
    }
    Ok(Found {
        value,
        forgiven,
        before,
        after,
        copies,
    })
}

/// Where prose holds a JSON value that is not an object: an array (`[` and then a value or
/// `]`), or the whole prose being a JSON value (`"text"`, `42`, `true`). Such a value is never
/// dropped as prose.
fn json_value_in(prose: &str) -> Option<usize> {
    let trimmed = prose.trim();
    if !trimmed.is_empty() && serde_json::from_str::<IgnoredAny>(trimmed).is_ok() {
        return Some(prose.len() - prose.trim_start().len());
    }
    prose.match_indices('[').map(|(at, _)| at).find(|&at| {
        let next = prose[at + 1..].trim_start().chars().next();
        matches!(
            next,
            Some('[' | ']' | '{' | '"' | '\'' | '-' | '0'..='9') | None
        ) || ["true", "false", "null"]
            .iter()
            .any(|literal| prose[at + 1..].trim_start().starts_with(literal))
    })
}

fn beside(at: usize, side: &str) -> Failure {
    Failure::Invalid {
        at,
        what: format!(
            "the text holds a JSON value {side} the object (an array, or a second value), and \
             paddock runs neither rather than drop one: send each as its own tool call, or the \
             one object alone"
        ),
    }
}

/// Concatenated objects, all strict JSON and nothing else in the text.
#[derive(Debug, Clone, PartialEq)]
pub struct Concatenated {
    /// How many objects were sent.
    pub found: usize,
    /// The different objects, in the order sent.
    pub distinct: Vec<Value>,
}

/// `{..}{..}` (white space between allowed): `None` unless every top-level value is an object
/// and there are at least two.
pub fn split_concatenated(raw: &str) -> Option<Concatenated> {
    let mut found = 0;
    let mut distinct: Vec<Value> = Vec::new();
    // Each value is found by serde_json, then read again with duplicate keys refused: an
    // object that repeats a key is not split here but left to the lenient reader, which
    // refuses it.
    let mut stream = serde_json::Deserializer::from_str(raw).into_iter::<IgnoredAny>();
    let mut start = 0;
    while let Some(next) = stream.next() {
        let end = stream.byte_offset();
        let value = next
            .map_err(|_| ())
            .and_then(|_| strict::parse(&raw[start..end]).map_err(|_| ()));
        start = end;
        match value {
            Ok(value @ Value::Object(_)) => {
                found += 1;
                if !distinct.contains(&value) {
                    distinct.push(value);
                }
            }
            _ => return None,
        }
    }
    (found >= 2).then_some(Concatenated { found, distinct })
}

/// An object as shown in a message: compact JSON, cut at 200 characters.
pub(crate) fn shown(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}
