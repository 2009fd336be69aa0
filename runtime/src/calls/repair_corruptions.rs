//! The invariant of repair (V8) as properties, one per class of corruption real models make:
//! an object is written as strict JSON, corrupted one way, and repair must give back exactly
//! that object or refuse; never a third object. Classes that can only be refused (a key sent
//! twice, a JSON value beside the object) must be refused; text around a clean object must be
//! read back.
//!
//! The case count is `PROPTEST_CASES` (256 when unset), so the default suite stays fast; run
//! with `PROPTEST_CASES=100000 cargo test -p paddock --lib calls::repair::corruptions` after a
//! change to the reader.

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Map, Value, json};

use super::*;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        // Cases without what a class corrupts (no string with quotes, no comma) are skipped.
        max_global_rejects: cases.saturating_mul(4).max(1024),
        max_shrink_iters: 2_000,
        ..ProptestConfig::default()
    }
}

fn word() -> impl Strategy<Value = String> {
    "[a-z]{1,7}"
}

/// Prose as models put in values: words, some in quotes, some followed by punctuation.
fn prose(quotes: bool) -> impl Strategy<Value = String> {
    let token = (
        word(),
        any::<bool>(),
        prop::sample::select(vec!["", "", ",", ".", ":", "!"]),
    )
        .prop_map(move |(w, quoted, punct)| {
            if quotes && quoted {
                format!("\"{w}\"{punct}")
            } else {
                format!("{w}{punct}")
            }
        });
    prop::collection::vec(token, 1..6).prop_map(|t| t.join(" "))
}

/// Strings with a backslash before a character JSON does not escape, as in regexes and paths.
fn backslashed() -> impl Strategy<Value = String> {
    let escaped = prop::sample::select(vec![
        'd', 'w', 's', '.', '(', '1', 'x', 'v', '0', 'q', 'U', ' ',
    ]);
    (word(), escaped, word()).prop_map(|(a, c, b)| format!("{a}\\{c}{b}"))
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![4 => "[a-z_][a-z0-9_]{0,7}", 1 => "[0-9]{1,3}"]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-1000i64..1000).prop_map(|n| json!(n)),
        any::<i64>().prop_map(|n| json!(n)),
        prop::sample::select(vec![0.5, 1.0, 2.25, -0.5, 10.0, 1234.5, 0.125])
            .prop_map(|f| json!(f)),
    ]
}

fn value(leaf_string: BoxedStrategy<String>) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        word().prop_map(Value::String),
        leaf_string.prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..4)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn object_with(leaf_string: BoxedStrategy<String>) -> impl Strategy<Value = Value> {
    prop::collection::vec((key(), value(leaf_string)), 1..5)
        .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>()))
}

fn object() -> impl Strategy<Value = Value> {
    object_with(prose(false).boxed())
}

/// The object as strict JSON, compact or pretty.
fn written() -> impl Strategy<Value = (Value, String)> {
    (object(), any::<bool>()).prop_map(|(v, pretty)| {
        let text = if pretty {
            serde_json::to_string_pretty(&v)
        } else {
            serde_json::to_string(&v)
        };
        (v, text.unwrap_or_default())
    })
}

/// One token of strict JSON text: its kind and byte range.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Punct(u8),
    Key,
    Str,
    Number,
    Literal,
}

fn tokens(text: &str) -> Vec<(Kind, usize, usize)> {
    let bytes = text.as_bytes();
    let mut out: Vec<(Kind, usize, usize)> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b' ' | b'\n' | b'\t' | b'\r' => i += 1,
            b'"' => {
                let start = i;
                i += 1;
                while bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push((Kind::Str, start, i));
            }
            b @ (b'{' | b'}' | b'[' | b']' | b',' | b':') => {
                if b == b':'
                    && let Some(last) = out.last_mut()
                {
                    last.0 = Kind::Key;
                }
                out.push((Kind::Punct(b), i, i + 1));
                i += 1;
            }
            b => {
                let start = i;
                while i < bytes.len() && !b" \n\t\r,]}".contains(&bytes[i]) {
                    i += 1;
                }
                let kind = if b.is_ascii_alphabetic() {
                    Kind::Literal
                } else {
                    Kind::Number
                };
                out.push((kind, start, i));
            }
        }
    }
    out
}

/// The tokens of `kind` (compared by discriminant and byte for punctuation).
fn of(text: &str, wanted: impl Fn(Kind) -> bool) -> Vec<(usize, usize)> {
    tokens(text)
        .into_iter()
        .filter(|(k, _, _)| wanted(*k))
        .map(|(_, s, e)| (s, e))
        .collect()
}

fn splice(text: &str, start: usize, end: usize, with: &str) -> String {
    format!("{}{with}{}", &text[..start], &text[end..])
}

/// The property itself: the original object, or a refusal.
fn original_or_refused(text: &str, original: &Value) -> Result<(), TestCaseError> {
    if let Ok(repaired) = repair_args(text, &json!({}), |_| true) {
        prop_assert_eq!(
            &repaired.args,
            original,
            "{:?} was repaired into a third object",
            text
        );
    }
    Ok(())
}

fn refused(text: &str) -> Result<(), TestCaseError> {
    let repaired = repair_args(text, &json!({}), |_| true);
    prop_assert!(repaired.is_err(), "{:?} was run as {:?}", text, repaired);
    Ok(())
}

/// The `[` or `{` that `close` (a byte offset of `]` or `}`) closes.
fn opener_of(text: &str, close: usize) -> usize {
    let mut depth = 0;
    for (kind, start, _) in tokens(text).into_iter().rev() {
        if start > close {
            continue;
        }
        match kind {
            Kind::Punct(b']' | b'}') => depth += 1,
            Kind::Punct(b'[' | b'{') => {
                depth -= 1;
                if depth == 0 {
                    return start;
                }
            }
            _ => {}
        }
    }
    0
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn unescaped_quotes_give_the_original_or_a_refusal(
        v in object_with(prose(true).boxed()),
        pretty in any::<bool>(),
    ) {
        let text = if pretty { serde_json::to_string_pretty(&v) } else { serde_json::to_string(&v) }
            .unwrap_or_default();
        let corrupted = text.replace("\\\"", "\"");
        prop_assume!(corrupted != text);
        original_or_refused(&corrupted, &v)?;
    }

    #[test]
    fn a_missing_comma_gives_the_original_or_a_refusal((v, text) in written(), at in any::<Index>()) {
        let all = tokens(&text);
        let commas: Vec<usize> = (1..all.len()).filter(|&i| all[i].0 == Kind::Punct(b',')).collect();
        prop_assume!(!commas.is_empty());
        let i = commas[at.index(commas.len())];
        let (_, s, e) = all[i];
        // `[1,2]` without its comma is `[12]`, another JSON value: no reader can tell.
        let scalar = |k: Kind| matches!(k, Kind::Number);
        prop_assume!(!(scalar(all[i - 1].0) && scalar(all[i + 1].0) && all[i + 1].1 == e));
        original_or_refused(&splice(&text, s, e, ""), &v)?;
    }

    #[test]
    fn a_wrong_closing_bracket_gives_the_original_or_a_refusal((v, text) in written(), at in any::<Index>()) {
        let closers = of(&text, |k| matches!(k, Kind::Punct(b']' | b'}')));
        let (s, e) = closers[at.index(closers.len())];
        let other = if &text[s..e] == "]" { "}" } else { "]" };
        original_or_refused(&splice(&text, s, e, other), &v)?;
    }

    #[test]
    fn a_missing_bracket_gives_the_original_or_a_refusal((v, text) in written(), at in any::<Index>()) {
        let brackets = of(&text, |k| matches!(k, Kind::Punct(b'[' | b']' | b'{' | b'}')));
        let (s, e) = brackets[at.index(brackets.len())];
        original_or_refused(&splice(&text, s, e, ""), &v)?;
    }

    #[test]
    fn a_key_sent_twice_is_always_refused(
        (v, text) in written(),
        at in any::<Index>(),
        other in value(prose(false).boxed()),
    ) {
        let Value::Object(map) = &v else { unreachable!("objects only") };
        let key = map.keys().nth(at.index(map.len())).cloned().unwrap_or_default();
        let end = text.rfind('}').unwrap_or(0);
        let again = format!(",{}:{}", json!(key), other);
        refused(&splice(&text, end, end, &again))?;
    }

    #[test]
    fn a_bare_word_value_gives_the_original_or_a_refusal((v, text) in written(), at in any::<Index>()) {
        let strings = of(&text, |k| k == Kind::Str);
        prop_assume!(!strings.is_empty());
        let (s, e) = strings[at.index(strings.len())];
        let inside = &text[s + 1..e - 1];
        // Unquoting `"true"` writes a different JSON value, and `"abc,"` unquoted before a
        // closing bracket reads as a word and a trailing comma: no reader can tell.
        prop_assume!(!matches!(inside, "true" | "false" | "null") && !inside.ends_with(','));
        // A bare word is one word: unquoted prose with a comma shows two array items.
        prop_assume!(!inside.contains([' ', ',']));
        original_or_refused(&splice(&text, s, e, inside), &v)?;
    }

    #[test]
    fn a_number_form_gives_the_original_or_a_refusal(
        (v, text) in written(),
        at in any::<Index>(),
        form in 0..4usize,
    ) {
        let numbers = of(&text, |k| k == Kind::Number);
        prop_assume!(!numbers.is_empty());
        let (s, e) = numbers[at.index(numbers.len())];
        let n = &text[s..e];
        let rewritten = match form {
            0 if n.starts_with("0.") || n.starts_with("-0.") => n.replacen("0.", ".", 1),
            1 => n.strip_suffix(".0").map_or_else(|| n.to_string(), |int| format!("{int}.")),
            2 if !n.starts_with('-') => format!("+{n}"),
            3 if n.len() > 3 && n.bytes().all(|b| b.is_ascii_digit()) => {
                format!("{}_{}", &n[..n.len() - 3], &n[n.len() - 3..])
            }
            _ => n.to_string(),
        };
        original_or_refused(&splice(&text, s, e, &rewritten), &v)?;
    }

    #[test]
    fn a_raw_new_line_in_a_key_is_refused((_v, text) in written(), at in any::<Index>()) {
        let keys = of(&text, |k| k == Kind::Key);
        let (_, e) = keys[at.index(keys.len())];
        refused(&splice(&text, e - 1, e - 1, "\n"))?;
    }

    #[test]
    fn an_invalid_escape_gives_the_original_or_a_refusal(v in object_with(backslashed().boxed())) {
        let text = serde_json::to_string(&v).unwrap_or_default();
        let corrupted = text.replace("\\\\", "\\");
        prop_assume!(corrupted != text);
        original_or_refused(&corrupted, &v)?;
    }

    #[test]
    fn a_python_tuple_gives_the_original_or_a_refusal((v, text) in written(), at in any::<Index>()) {
        let closers = of(&text, |k| k == Kind::Punct(b']'));
        prop_assume!(!closers.is_empty());
        let (s, e) = closers[at.index(closers.len())];
        let open = opener_of(&text, s);
        let tupled = format!("{}({}){}", &text[..open], &text[open + 1..s], &text[e..]);
        original_or_refused(&tupled, &v)?;
    }

    #[test]
    fn prose_around_a_clean_object_is_dropped_and_the_object_runs(
        (v, text) in written(),
        before in prop::sample::select(vec!["", "Sure, here are the arguments: ", "I'll read it.\n"]),
        after in prop::sample::select(vec!["", " Hope this helps.", "\n\nLet me know if you need more."]),
        fence in any::<bool>(),
    ) {
        prop_assume!(!before.is_empty() || !after.is_empty());
        let body = if fence { format!("```json\n{text}\n```") } else { text };
        let raw = format!("{before}{body}{after}");
        let repaired = repair_args(&raw, &json!({}), |_| true);
        prop_assert_eq!(repaired.map(|r| r.args), Ok(v), "{}", raw);
    }

    #[test]
    fn a_json_value_beside_the_object_is_never_dropped(
        (_v, text) in written(),
        items in prop::collection::vec(value(prose(false).boxed()), 0..3),
        layout in 0..4usize,
    ) {
        let array = serde_json::to_string(&items).unwrap_or_default();
        let raw = match layout {
            0 => format!("{array}\n{text}"),
            1 => format!("{text}\n{array}"),
            2 => format!("Here:\n```json\n{text}\n```\nand\n```json\n{array}\n```"),
            _ => format!("Here:\n```json\n{array}\n```\nthen\n```json\n{text}\n```"),
        };
        refused(&raw)?;
    }

    #[test]
    fn a_top_level_array_of_objects_never_becomes_one_object(
        objects in prop::collection::vec(object(), 1..4),
        sloppy in any::<bool>(),
    ) {
        let mut raw = serde_json::to_string(&objects).unwrap_or_default();
        if sloppy {
            raw = raw.replace('"', "'");
        }
        let repaired = repair_args(&raw, &json!({}), |_| true);
        prop_assert!(
            !matches!(&repaired, Ok(r) if r.args.is_object()),
            "{:?} -> {:?}", raw, repaired
        );
    }

    #[test]
    fn a_stray_word_gives_the_original_or_a_refusal(
        (v, text) in written(),
        at in any::<Index>(),
        stray in prop::sample::select(vec!["please", "and", "also", "then"]),
    ) {
        let places = of(&text, |k| matches!(k, Kind::Punct(b',' | b'{')));
        let (_, e) = places[at.index(places.len())];
        original_or_refused(&splice(&text, e, e, &format!(" {stray} ")), &v)?;
    }

    #[test]
    fn an_unquoted_key_gives_the_original_or_a_refusal((v, text) in written(), at in any::<Index>()) {
        let keys = of(&text, |k| k == Kind::Key);
        let (s, e) = keys[at.index(keys.len())];
        original_or_refused(&splice(&text, s, e, &text[s + 1..e - 1]), &v)?;
    }

    #[test]
    fn two_strings_side_by_side_give_the_original_or_a_refusal(
        (v, text) in written(),
        at in any::<Index>(),
        cut in any::<Index>(),
        empty in any::<bool>(),
    ) {
        // In an array, two strings side by side are two items with a comma missing (the
        // missing-comma class); in an object's value position they are one value written twice.
        let all = tokens(&text);
        let strings: Vec<(usize, usize)> = all
            .windows(2)
            .filter(|pair| pair[0].0 == Kind::Punct(b':') && pair[1].0 == Kind::Str)
            .map(|pair| (pair[1].1, pair[1].2))
            .collect();
        prop_assume!(!strings.is_empty());
        let (s, e) = strings[at.index(strings.len())];
        let inside = &text[s + 1..e - 1];
        let mut at = cut.index(inside.len() + 1);
        while !inside.is_char_boundary(at) {
            at -= 1;
        }
        let split = if empty {
            "\"\"\"\"".to_string()
        } else {
            format!("\"{}\" \"{}\"", &inside[..at], &inside[at..])
        };
        original_or_refused(&splice(&text, s, e, &split), &v)?;
    }
}
