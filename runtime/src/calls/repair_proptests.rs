//! Properties of repair (V8): any object, written the sloppy ways real models write it (single
//! quotes, raw new lines in values, trailing commas, comments, bare keys, Python literals, a
//! fence, prose before it), reads back as exactly that object; and no prefix of such text that stops before
//! the object's closing brace is ever repaired into a value: a repaired value only ever comes
//! from complete input.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::*;

#[derive(Debug, Clone, Copy)]
struct Style {
    single: bool,
    raw_controls: bool,
    trailing: bool,
    comments: bool,
    bare_keys: bool,
    python: bool,
    fence: bool,
    prose: bool,
}

fn style() -> impl Strategy<Value = Style> {
    prop::array::uniform8(any::<bool>()).prop_map(|b| Style {
        single: b[0],
        raw_controls: b[1],
        trailing: b[2],
        comments: b[3],
        bare_keys: b[4],
        python: b[5],
        fence: b[6],
        prose: b[7],
    })
}

fn text() -> impl Strategy<Value = String> {
    let pieces = vec![
        "a", "path", " ", "\"", "'", "\\", "\n", "\t", "é", "𝄞", "//", "/*", "*/", "{", "}", ",",
        ":", "[", "]", "True", "\u{1}",
    ];
    prop::collection::vec(prop::sample::select(pieces), 0..8).prop_map(|p| p.concat())
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_][a-z0-9_]{0,7}",
        text().prop_filter("non-empty", |k| !k.is_empty())
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..4)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn object() -> impl Strategy<Value = Value> {
    prop::collection::vec((key(), value()), 0..5)
        .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>()))
}

fn is_bare(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn render_str(text: &str, s: Style, out: &mut String) {
    let quote = if s.single { '\'' } else { '"' };
    out.push(quote);
    for c in text.chars() {
        match c {
            c if c == quote || c == '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\t' if s.raw_controls => out.push(c),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
}

fn render(value: &Value, s: Style, out: &mut String) {
    match value {
        Value::Null => out.push_str(if s.python { "None" } else { "null" }),
        Value::Bool(b) => out.push_str(match (s.python, b) {
            (true, true) => "True",
            (true, false) => "False",
            (false, true) => "true",
            (false, false) => "false",
        }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(text) => render_str(text, s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                render(item, s, out);
            }
            if s.trailing && !items.is_empty() {
                out.push(',');
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                if s.comments {
                    out.push_str("/* note */ ");
                }
                if s.bare_keys && is_bare(k) {
                    out.push_str(k);
                } else {
                    // A raw control character in a key is refused: keys are written escaped.
                    let key_style = Style {
                        raw_controls: false,
                        ..s
                    };
                    render_str(k, key_style, out);
                }
                out.push_str(": ");
                render(v, s, out);
            }
            if s.trailing && !map.is_empty() {
                out.push(',');
            }
            if s.comments {
                out.push_str(" // end\n");
            }
            out.push('}');
        }
    }
}

/// The sloppy text, and the byte offset of the object's closing brace.
fn sloppy(value: &Value, s: Style) -> (String, usize) {
    let mut out = String::new();
    if s.prose {
        out.push_str("Here are the arguments: ");
    }
    if s.fence {
        out.push_str("```json\n");
    }
    render(value, s, &mut out);
    let close = out.len() - 1;
    if s.fence {
        out.push_str("\n```");
    }
    (out, close)
}

fn any_schema(_: &Value) -> bool {
    true
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn sloppy_text_reads_back_as_the_object_it_was_written_from(v in object(), s in style()) {
        let (text, _) = sloppy(&v, s);
        let repaired = repair_args(&text, &json!({}), any_schema);
        prop_assert_eq!(repaired.map(|r| r.args), Ok(v), "{}", text);
    }

    #[test]
    fn no_prefix_cut_before_the_closing_brace_is_ever_repaired(v in object(), s in style()) {
        let (text, close) = sloppy(&v, s);
        let open = text.find('{').unwrap_or(0);
        for cut in (open + 1..=close).filter(|c| text.is_char_boundary(*c)) {
            let prefix = &text[..cut];
            let repaired = repair_args(prefix, &json!({}), any_schema);
            prop_assert!(repaired.is_err(), "{:?} -> {:?}", prefix, repaired);
        }
    }
}
