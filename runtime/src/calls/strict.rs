//! Strict JSON as serde_json reads it, with one difference: an object that holds the same key
//! twice is refused, naming the key and both values (V8). serde_json keeps the last value of a
//! repeated key without a word, so a model that wrote `{"path": "a", "path": "b"}` would run
//! with a value it may not have meant; paddock sends the call back instead.
//!
//! What it deliberately does not do: read anything serde_json does not (the lenient reader in
//! `lenient` does that, with the same duplicate rule).

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// A key an object holds twice, and its two values in the order written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DuplicateKey {
    pub key: String,
    pub first: Value,
    pub second: Value,
}

/// Why the text is not strict JSON with unique keys.
#[derive(Debug)]
pub(crate) enum StrictError {
    /// serde_json's own error (its line and column, and whether the input ended early).
    Json(serde_json::Error),
    /// An object repeats a key; `line` and `column` are where the second value ends.
    Duplicate {
        duplicate: Box<DuplicateKey>,
        line: usize,
        column: usize,
    },
}

/// Parses `text` as one strict JSON value whose objects never repeat a key.
pub(crate) fn parse(text: &str) -> Result<Value, StrictError> {
    let found = RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let result = Unique { found: &found }
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value));
    match (result, found.into_inner()) {
        (Err(error), Some(duplicate)) => Err(StrictError::Duplicate {
            duplicate: Box::new(duplicate),
            line: error.line(),
            column: error.column(),
        }),
        (Err(error), None) => Err(StrictError::Json(error)),
        (Ok(value), _) => Ok(value),
    }
}

/// Reads a value like serde_json's `Value`, and stops at the first repeated key, recording it.
#[derive(Clone, Copy)]
struct Unique<'a> {
    found: &'a RefCell<Option<DuplicateKey>>,
}

impl<'de> DeserializeSeed<'de> for Unique<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Unique<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            let value = access.next_value_seed(self)?;
            if let Some(first) = map.get(&key) {
                *self.found.borrow_mut() = Some(DuplicateKey {
                    key: key.clone(),
                    first: first.clone(),
                    second: value,
                });
                return Err(A::Error::custom(format!("the key {key:?} appears twice")));
            }
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn strict_json_with_unique_keys_reads_as_serde_json_reads_it() {
        let text =
            r#"{"a": [1, -2.5e3, "x\"y", {"b": null}], "c": false, "d": 18446744073709551615}"#;
        assert_eq!(
            parse(text).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
    }

    #[test]
    fn a_repeated_key_is_refused_with_the_key_both_values_and_where() {
        let cases = [
            (
                r#"{"path": "a", "path": "b"}"#,
                "path",
                json!("a"),
                json!("b"),
                1,
            ),
            (
                "{\"x\": {\"n\": 1,\n \"n\": [2]}}",
                "n",
                json!(1),
                json!([2]),
                2,
            ),
        ];
        for (text, key, first, second, at_line) in cases {
            match parse(text) {
                Err(StrictError::Duplicate {
                    duplicate, line, ..
                }) => {
                    assert_eq!(
                        *duplicate,
                        DuplicateKey {
                            key: key.into(),
                            first,
                            second
                        },
                        "{text}"
                    );
                    assert_eq!(line, at_line, "{text}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn other_errors_are_serde_json_errors() {
        assert!(matches!(parse(r#"{"a": 1"#), Err(StrictError::Json(e)) if e.is_eof()));
        assert!(matches!(parse(r#"{"a": 1} x"#), Err(StrictError::Json(e)) if !e.is_eof()));
    }
}
