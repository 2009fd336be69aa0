//! One table per thing the lenient reader forgives (V8), then what it refuses: cut-off input,
//! bare words, ambiguous quotes, deep nesting.

use serde_json::{Value, json};

use super::*;

fn read(text: &str) -> Result<(Value, Forgiven), Failure> {
    read_object(text, 0).map(|(value, _, forgiven)| (value, forgiven))
}

/// Each text is refused as not JSON (never truncated, never guessed).
fn assert_invalid(texts: &[&str]) {
    for text in texts {
        assert!(
            matches!(read(text), Err(Failure::Invalid { .. })),
            "{text:?}: {:?}",
            read(text)
        );
    }
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
    assert_invalid(&[
        r#"{"a": tru}"#,
        r#"{"a": no}"#,
        r#"{"a": NaN}"#,
        r#"{"a": Infinity}"#,
        r#"{"a": undefined}"#,
        r#"{"a": hello world}"#,
        r#"{"a": [nullnull]}"#,
        r#"{"a": Truely}"#,
        r#"{"a": [0x10]}"#,
        r#"{"a": 007}"#,
        r#"{"a" 1}"#,
        r#"{"a": [1,,2]}"#,
        r#"{"a": "\uZZZZ"}"#,
        r#"{"a": "\ud834x"}"#,
    ]);
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

#[test]
fn a_text_ending_with_a_closing_bracket_is_not_called_cut_off() {
    for text in [
        r#"{"a": {"b": 1}"#,
        r#"{"a": [{"b": 1}]"#,
        r#"{"a": "x" oops}"#,
    ] {
        match read(text) {
            Err(Failure::Invalid { .. }) => {}
            other => panic!("{text:?}: {other:?}"),
        }
    }
}

#[test]
fn a_quote_followed_by_a_key_ends_the_string_rather_than_swallowing_the_key() {
    table(
        &[
            (
                r#"{"a": 1, "b": "he said "hi"" "c": 2}"#,
                json!({"a": 1, "b": "he said \"hi\"", "c": 2}),
                1,
            ),
            (r#"{"b": "x" "c": "y"}"#, json!({"b": "x", "c": "y"}), 1),
            ("{\"b\": \"x\"\n  c: 1}", json!({"b": "x", "c": 1}), 1),
        ],
        |f| f.missing_commas,
    );
}

#[test]
fn missing_commas_are_inserted_where_the_next_member_plainly_starts() {
    table(
        &[
            (r#"{"a": 1 "b": 2}"#, json!({"a": 1, "b": 2}), 1),
            (r#"{"a": ["x" "y" "z"]}"#, json!({"a": ["x", "y", "z"]}), 2),
            (r#"{"a": [1 2]}"#, json!({"a": [1, 2]}), 1),
            (
                "{\"a\": [{\"b\": 1}\n{\"b\": 2}]}",
                json!({"a": [{"b": 1}, {"b": 2}]}),
                1,
            ),
        ],
        |f| f.missing_commas,
    );
}

#[test]
fn inner_quotes_that_would_swallow_structure_are_refused_with_both_readings() {
    for text in [
        r#"{"a": ["say "yes, sure" now"]}"#,
        r#"{"a": ["x", "b" c, "d"]}"#,
        r#"{"a": "x "b, c: d" e"}"#,
        r#"{"a": "x "b[0]" y"}"#,
        r#"{"a": "k": "v"}"#,
    ] {
        match read(text) {
            Err(Failure::Ambiguous { first, second, .. }) => {
                assert!(first.contains("every inner quote part of it"), "{first}");
                assert!(second.contains("ended by the"), "{second}");
            }
            Err(Failure::Invalid { .. }) => {}
            other => panic!("{text:?}: {other:?}"),
        }
    }
}

#[test]
fn two_strings_side_by_side_in_one_value_are_refused() {
    for text in [
        r#"{"a": "x" "y"}"#,
        r#"{"a": """"}"#,
        r#"{"a": "" "", "b": 1}"#,
    ] {
        match read(text) {
            Err(Failure::Ambiguous { second, .. }) => {
                assert!(
                    second.contains("two strings side by side"),
                    "{text}: {second}"
                );
            }
            other => panic!("{text:?}: {other:?}"),
        }
    }
}

#[test]
fn a_closing_bracket_of_the_wrong_kind_is_refused_naming_both_brackets() {
    let cases = [
        (r#"{"a": [1, 2}, "b": 1}"#, 6, '}', ']'),
        (r#"{"a": {"b": 1], "c": 2}"#, 6, ']', '}'),
        (r#"{"a": 1]"#, 0, ']', '}'),
    ];
    for (text, at_open, bracket, wanted) in cases {
        match read(text) {
            Err(Failure::Mismatched {
                opened,
                expected,
                found,
                ..
            }) => assert_eq!(
                (opened, expected, found),
                (at_open, wanted, bracket),
                "{text}"
            ),
            other => panic!("{text:?}: {other:?}"),
        }
    }
    // With a string before it, the string is refused: `}` cannot end a string in an array.
    assert!(read(r#"{"a": ["x", "y"}, "b": 1}"#).is_err());
}

#[test]
fn a_key_written_twice_is_refused_with_both_values() {
    let cases = [
        (r#"{"a": 1, 'a': 2}"#, "a", json!(1), json!(2)),
        // A missing `}` that turns two objects' keys into one object's.
        (
            r#"{"x": {"a": 1, "b": {"c": 1}, "b": 3}"#,
            "b",
            json!({"c": 1}),
            json!(3),
        ),
    ];
    for (text, key, first, second) in cases {
        match read(text) {
            Err(Failure::DuplicateKey { duplicate, .. }) => {
                let DuplicateKey {
                    key: k,
                    first: a,
                    second: b,
                } = *duplicate;
                assert_eq!((k.as_str(), a, b), (key, first, second), "{text}")
            }
            other => panic!("{text:?}: {other:?}"),
        }
    }
}

#[test]
fn a_raw_control_character_in_a_key_is_refused_not_kept() {
    for text in ["{\"path\n\": \"a\"}", "{'pa\tth': 1}"] {
        match read(text) {
            Err(Failure::Invalid { what, .. }) => assert!(what.contains("key"), "{what}"),
            other => panic!("{text:?}: {other:?}"),
        }
    }
}

#[test]
fn an_escape_whose_meaning_the_backslash_would_change_is_refused() {
    for text in [
        r#"{"a": "\x41"}"#,
        r#"{"a": "\v"}"#,
        r#"{"a": "\0"}"#,
        r#"{"a": "\U0001F600"}"#,
        "{\"a\": \"x\\\ny\"}",
        r#"{"a": "\é"}"#,
    ] {
        match read(text) {
            Err(Failure::Invalid { what, .. }) => {
                assert!(what.contains("not a JSON escape"), "{what}")
            }
            other => panic!("{text:?}: {other:?}"),
        }
    }
}

#[test]
fn bare_words_are_strings_only_where_a_string_must_stand() {
    table(
        &[
            (r#"{"mode": fast}"#, json!({"mode": "fast"}), 1),
            (
                r#"{"path": src/main.rs, "n": 1}"#,
                json!({"path": "src/main.rs", "n": 1}),
                1,
            ),
            (r#"{"a": [x, y-z]}"#, json!({"a": ["x", "y-z"]}), 2),
            (r#"{"a": nonexistent}"#, json!({"a": "nonexistent"}), 1),
        ],
        |f| f.bare_words,
    );
}

#[test]
fn number_forms_with_one_reading_are_read_as_numbers() {
    table(
        &[
            (r#"{"a": .5}"#, json!({"a": 0.5}), 1),
            (r#"{"a": -.5}"#, json!({"a": -0.5}), 1),
            (r#"{"a": 1.}"#, json!({"a": 1.0}), 1),
            (r#"{"a": +1}"#, json!({"a": 1}), 1),
            (r#"{"a": 1_000_000}"#, json!({"a": 1_000_000}), 1),
            (r#"{"a": 1.e3}"#, json!({"a": 1000.0}), 1),
            (r#"{"a": -2.5e3}"#, json!({"a": -2500.0}), 0),
        ],
        |f| f.number_forms,
    );
    assert_invalid(&[
        r#"{"a": 1__0}"#,
        r#"{"a": 1_}"#,
        r#"{"a": .}"#,
        r#"{"a": +}"#,
        r#"{"a": --1}"#,
        r#"{"a": 1.2.3}"#,
    ]);
}

#[test]
fn python_tuples_are_read_as_arrays_but_a_value_in_parentheses_is_not() {
    table(
        &[
            (r#"{"p": (1, 2)}"#, json!({"p": [1, 2]}), 1),
            (r#"{"p": (1,)}"#, json!({"p": [1]}), 1),
            (r#"{"p": ()}"#, json!({"p": []}), 1),
            (
                r#"{"p": [(1, 'a'), (2, 'b')]}"#,
                json!({"p": [[1, "a"], [2, "b"]]}),
                2,
            ),
        ],
        |f| f.python_tuples,
    );
    let (_, forgiven) = read(r#"{"p": (1,)}"#).unwrap();
    assert_eq!(forgiven.trailing_commas, 0);
    assert!(matches!(
        read(r#"{"p": (1)}"#),
        Err(Failure::Invalid { .. })
    ));
    assert!(matches!(
        read(r#"{"p": (1, 2]}"#),
        Err(Failure::Mismatched { .. })
    ));
}

#[test]
fn stray_words_before_a_key_are_dropped() {
    table(
        &[
            (r#"{"a": 1, please "b": 2}"#, json!({"a": 1, "b": 2}), 1),
            (r#"{and a: 1}"#, json!({"a": 1}), 1),
        ],
        |f| f.stray_words,
    );
    for text in [r#"{"a": 1, please}"#, r#"{"a": 1, 1x "b": 2}"#] {
        assert!(read(text).is_err(), "{text:?}: {:?}", read(text));
    }
}

#[test]
fn a_number_used_as_a_key_is_read_as_that_key() {
    table(
        &[(r#"{1: "a", 20: "b"}"#, json!({"1": "a", "20": "b"}), 2)],
        |f| f.unquoted_keys,
    );
    assert!(matches!(read(r#"{1a: 2}"#), Err(Failure::Invalid { .. })));
}

#[test]
fn hexadecimal_is_read_only_as_a_parameters_own_value_and_recorded() {
    let (value, forgiven) = read(r#"{"limit": 0x1F, "n": 2}"#).unwrap();
    assert_eq!(value, json!({"limit": 31, "n": 2}));
    assert_eq!(forgiven.hex_parameters, ["limit"]);
    assert_invalid(&[
        r#"{"a": [0x10]}"#,
        r#"{"a": {"b": 0x10}}"#,
        r#"{"a": 0xZZ}"#,
        r#"{"a": 0x}"#,
        r#"{"a": -0x10}"#,
    ]);
}
