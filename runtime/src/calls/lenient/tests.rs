//! One table per thing the lenient reader forgives (V8), then what it refuses: cut-off input,
//! bare words, ambiguous quotes, deep nesting.

use serde_json::{Value, json};

use super::*;

fn read(text: &str) -> Result<(Value, Forgiven), Failure> {
    read_object(text, 0).map(|(value, _, forgiven)| (value, forgiven))
}

/// Each case: input, the value it reads as, and the one counter it must raise (by how much).
fn table(cases: &[(&str, Value, usize)], counter: fn(&Forgiven) -> usize) {
    for (text, expected, count) in cases {
        let (value, forgiven) = read(text).unwrap_or_else(|e| panic!("{text:?}: {e:?}"));
        assert_eq!(&value, expected, "{text:?}");
        assert_eq!(counter(&forgiven), *count, "{text:?}: {forgiven:?}");
    }
}

#[test]
fn raw_control_characters_in_strings_are_read_as_characters() {
    table(
        &[
            (
                "{\"message\": \"fix: parser\n\nLonger body\"}",
                json!({"message": "fix: parser\n\nLonger body"}),
                2,
            ),
            ("{\"a\": \"x\ty\"}", json!({"a": "x\ty"}), 1),
            ("{\"a\": \"x\r\ny\"}", json!({"a": "x\r\ny"}), 2),
        ],
        |f| f.control_characters,
    );
}

#[test]
fn quotes_inside_strings_are_text_when_only_that_reading_parses() {
    table(
        &[
            (
                r#"{"command": "git commit -m "fix it"", "path": "."}"#,
                json!({"command": "git commit -m \"fix it\"", "path": "."}),
                2,
            ),
            (
                r#"{"text": "say "a", "b" now", "path": "x"}"#,
                json!({"text": "say \"a\", \"b\" now", "path": "x"}),
                4,
            ),
            (
                r#"{"old": "x = "1"", "new": "x = "2""}"#,
                json!({"old": "x = \"1\"", "new": "x = \"2\""}),
                4,
            ),
            // An apostrophe inside a single-quoted word.
            ("{'a': 'it's fine'}", json!({"a": "it's fine"}), 1),
        ],
        |f| f.unescaped_quotes,
    );
}

#[test]
fn trailing_commas_are_dropped() {
    table(
        &[
            (r#"{"a": 1,}"#, json!({"a": 1}), 1),
            (r#"{"a": [1, 2,],}"#, json!({"a": [1, 2]}), 2),
            ("{\"a\": 1 ,\n}", json!({"a": 1}), 1),
        ],
        |f| f.trailing_commas,
    );
}

#[test]
fn comments_are_dropped() {
    table(
        &[
            (
                "{\"a\": 1, // the first\n\"b\": 2}",
                json!({"a": 1, "b": 2}),
                1,
            ),
            ("{/* x */\"a\": /* y */ 1}", json!({"a": 1}), 2),
            (
                "{\"a\": \"x\", // why\n \"b\": \"y\"}",
                json!({"a": "x", "b": "y"}),
                1,
            ),
            // Slashes inside strings are text.
            (
                r#"{"url": "http://x/*y*/"}"#,
                json!({"url": "http://x/*y*/"}),
                0,
            ),
        ],
        |f| f.comments,
    );
}

#[test]
fn single_quoted_strings_and_keys_are_read_as_strings() {
    table(
        &[
            ("{'path': 'a.txt'}", json!({"path": "a.txt"}), 2),
            (
                r#"{'say': 'he said "hi"'}"#,
                json!({"say": "he said \"hi\""}),
                2,
            ),
            (r"{'a': 'don\'t'}", json!({"a": "don't"}), 2),
        ],
        |f| f.single_quotes,
    );
}

#[test]
fn unquoted_keys_are_read_as_strings() {
    table(
        &[
            (r#"{path: "a"}"#, json!({"path": "a"}), 1),
            (
                r#"{old_string: "a", $ref: 1}"#,
                json!({"old_string": "a", "$ref": 1}),
                2,
            ),
        ],
        |f| f.unquoted_keys,
    );
}

#[test]
fn python_literals_are_read_as_json_literals() {
    table(
        &[
            (
                r#"{"a": True, "b": False, "c": None}"#,
                json!({"a": true, "b": false, "c": null}),
                3,
            ),
            (r#"{"a": [True]}"#, json!({"a": [true]}), 1),
            (r#"{"a": true}"#, json!({"a": true}), 0),
        ],
        |f| f.python_literals,
    );
}

#[test]
fn a_backslash_before_a_plain_character_stays_a_backslash() {
    table(
        &[
            (
                r#"{"pattern": "\d+\.rs"}"#,
                json!({"pattern": "\\d+\\.rs"}),
                2,
            ),
            (r#"{"a": "tab\there"}"#, json!({"a": "tab\there"}), 0),
            (r#"{"a": "\u00e9\ud834\udd1e"}"#, json!({"a": "é𝄞"}), 0),
        ],
        |f| f.lone_backslashes,
    );
}

#[test]
fn input_that_ends_inside_the_object_is_truncated_never_completed() {
    for text in [
        "{",
        r#"{"a""#,
        r#"{"a": "#,
        r#"{"a": "x"#,
        r#"{"a": "x\"#,
        r#"{"a": "\u00"#,
        r#"{"a": 1"#,
        r#"{"a": tr"#,
        r#"{"a": [1, 2"#,
        r#"{"a": {"b": 1}"#,
        "{\"a\": 1, /* open",
        "{'a': 'x",
        "{a",
        r#"{"a": "x", "#,
    ] {
        assert!(
            matches!(read(text), Err(Failure::Truncated { .. })),
            "{text:?}: {:?}",
            read(text)
        );
    }
}

#[test]
fn values_are_never_guessed() {
    for text in [
        r#"{"a": tru}"#,
        r#"{"a": yes}"#,
        r#"{"a": NaN}"#,
        r#"{"a": .5}"#,
        r#"{"a": 1.}"#,
        r#"{"a": 0x10}"#,
        r#"{"a" 1}"#,
        r#"{"a": 1 "b": 2}"#,
        r#"{"a": [1,,2]}"#,
        r#"{"a": "\uZZZZ"}"#,
        r#"{"a": "\ud834x"}"#,
    ] {
        assert!(
            matches!(read(text), Err(Failure::Invalid { .. })),
            "{text:?}: {:?}",
            read(text)
        );
    }
}

#[test]
fn an_odd_number_of_inner_quotes_is_ambiguous_and_names_both_readings() {
    for text in [
        r#"{"a": "say "hi", "b": "c"}"#,
        r#"{"size": "27" monitor"}"#,
    ] {
        match read(text) {
            Err(Failure::Ambiguous { first, second, .. }) => {
                assert!(first.contains("the string"), "{first}");
                assert!(second.contains("the string"), "{second}");
                assert_ne!(first, second);
            }
            other => panic!("{text:?}: {other:?}"),
        }
    }
}

#[test]
fn nesting_is_bounded() {
    let deep = format!("{}{}", "{\"a\":[".repeat(200), "1");
    assert!(matches!(read(&deep), Err(Failure::Invalid { what, .. }) if what.contains("nested")));
}

#[test]
fn strict_json_reads_the_same_and_forgives_nothing() {
    let text = r#"{"a": [1, -2.5e3, "x\"y\n", {"b": null}], "c": false}"#;
    let (value, forgiven) = read(text).unwrap();
    assert_eq!(value, serde_json::from_str::<Value>(text).unwrap());
    assert_eq!(forgiven, Forgiven::default());
}
