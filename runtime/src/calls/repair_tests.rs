//! One table per repair step (V3, V7, V8), then the steps together and what is refused.

use serde_json::{Value, json};

use super::*;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "old_string": {"type": "string"},
            "edits": {"type": "array", "items": {"type": "object"}},
            "replace_all": {"type": "boolean"}
        },
        "required": ["path"],
        "additionalProperties": false
    })
}

fn passes(v: &Value) -> bool {
    jsonschema::validator_for(&schema())
        .map(|validator| validator.is_valid(v))
        .unwrap_or(false)
}

#[test]
fn empty_to_object_turns_only_blank_text_into_an_empty_object() {
    let cases = [
        ("", Some(json!({}))),
        ("   ", Some(json!({}))),
        ("\n\t ", Some(json!({}))),
        ("{}", None),
        (" x ", None),
    ];
    for (raw, expected) in cases {
        assert_eq!(empty_to_object(raw), expected, "{raw:?}");
    }
}

#[test]
fn unwrap_double_encoded_decodes_a_string_holding_an_object_only() {
    let cases = [
        (json!("{\"path\":\"a\"}"), json!({"path": "a"}), 1),
        (json!("[1,2]"), json!("[1,2]"), 0),
        (json!("plain text"), json!("plain text"), 0),
        (json!({"path": "a"}), json!({"path": "a"}), 0),
    ];
    for (input, expected, repairs_applied) in cases {
        let mut repairs = Vec::new();
        assert_eq!(unwrap_double_encoded(input.clone(), &mut repairs), expected);
        assert_eq!(repairs.len(), repairs_applied, "{input}");
    }
}

#[test]
fn unwrap_double_encoded_fields_decodes_arrays_only_where_the_schema_wants_one() {
    let cases = [
        (
            json!({"path": "a", "edits": "[{\"x\":1}]"}),
            json!({"path": "a", "edits": [{"x": 1}]}),
            vec![Repair::DoubleEncoded {
                field: Some("edits".into()),
            }],
        ),
        // A string property stays a string even when it looks like JSON.
        (json!({"path": "[1]"}), json!({"path": "[1]"}), vec![]),
        // Not an array inside: left for validation to report.
        (
            json!({"path": "a", "edits": "oops"}),
            json!({"path": "a", "edits": "oops"}),
            vec![],
        ),
    ];
    for (input, expected, applied) in cases {
        let mut repairs = Vec::new();
        assert_eq!(
            unwrap_double_encoded_fields(input.clone(), &schema(), &mut repairs),
            expected
        );
        assert_eq!(repairs, applied, "{input}");
    }
}

#[test]
fn remap_params_maps_only_unambiguous_variants_and_aliases() {
    let cases = [
        (json!({"file_path": "a"}), json!({"path": "a"})),
        (json!({"Path": "a"}), json!({"path": "a"})),
        (
            json!({"oldString": "x", "path": "a"}),
            json!({"old_string": "x", "path": "a"}),
        ),
        (
            json!({"replace-all": true, "path": "a"}),
            json!({"replace_all": true, "path": "a"}),
        ),
        (
            json!({"old_str": "x", "path": "a"}),
            json!({"old_string": "x", "path": "a"}),
        ),
        // Both sent: the model's own `path` wins and the alias stays for validation to refuse.
        (
            json!({"file_path": "a", "path": "b"}),
            json!({"file_path": "a", "path": "b"}),
        ),
        (json!({"colour": "red"}), json!({"colour": "red"})),
    ];
    for (input, expected) in cases {
        let mut repairs = Vec::new();
        assert_eq!(
            remap_params(input.clone(), &schema(), &mut repairs),
            expected,
            "{input}"
        );
    }
}

#[test]
fn remap_params_leaves_names_matching_two_properties_alone() {
    let schema = json!({"type": "object", "properties": {"a_b": {}, "ab": {}}});
    let mut repairs = Vec::new();
    assert_eq!(
        remap_params(json!({"A-B": 1}), &schema, &mut repairs),
        json!({"A-B": 1})
    );
    assert!(repairs.is_empty());
}

#[test]
fn every_applied_repair_is_recorded_in_order() {
    let raw = r#""{\"file_path\":\"a\",\"edits\":\"[]\"}""#;
    let repaired = repair_args(raw, &schema(), passes).unwrap();
    assert_eq!(repaired.args, json!({"path": "a", "edits": []}));
    assert_eq!(
        repaired.repairs,
        [
            Repair::DoubleEncoded { field: None },
            Repair::DoubleEncoded {
                field: Some("edits".into())
            },
            Repair::RenamedParam {
                from: "file_path".into(),
                to: "path".into()
            },
        ]
    );
}

#[test]
fn truncated_json_is_refused_not_completed() {
    for raw in [r#"{"path":"a"#, r#"{"path":"a","#, "[", r#""{\"path\""#] {
        assert!(
            matches!(
                repair_args(raw, &schema(), passes),
                Err(Unreadable::Truncated { .. })
            ),
            "{raw}"
        );
    }
}

#[test]
fn unparsable_text_is_refused_with_position_context_and_never_wrapped_as_raw() {
    let cases = [
        ("path=a.txt", "line 1 column 1", "⟨here⟩path=a.txt"),
        (
            "{\"path\": oops now}",
            "line 1 column 10",
            "{\"path\": ⟨here⟩oops now}",
        ),
        ("read the file please", "line 1 column 1", "⟨here⟩read"),
    ];
    for (raw, at, around) in cases {
        match repair_args(raw, &schema(), passes) {
            Err(Unreadable::Unparsable(u)) => {
                assert!(u.error.contains(at), "{raw}: {}", u.error);
                assert!(
                    u.around.starts_with(around) || u.around.contains(around),
                    "{raw}: {}",
                    u.around
                );
                assert!(!u.after_repairs.is_empty());
            }
            other => panic!("{raw}: {other:?}"),
        }
    }
}

/// Issue 11, item 3: each repair step through `repair_args`, with the typed repairs it records.
#[test]
fn each_repair_step_is_applied_and_recorded() {
    let cases: Vec<(&str, Value, Vec<Repair>)> = vec![
        (
            "```json\n{\"path\": \"a\"}\n```",
            json!({"path": "a"}),
            vec![Repair::CodeFence],
        ),
        (
            "Here are the arguments: {\"path\": \"a\"} Hope this helps.",
            json!({"path": "a"}),
            vec![Repair::SurroundingProse {
                before: 23,
                after: 16,
            }],
        ),
        (
            "{\"path\": \"a\nb\"}",
            json!({"path": "a\nb"}),
            vec![Repair::ControlCharacters { count: 1 }],
        ),
        (
            r#"{"path": "say "hi" now"}"#,
            json!({"path": "say \"hi\" now"}),
            vec![Repair::UnescapedQuotes { count: 2 }],
        ),
        (
            r#"{"path": "a",}"#,
            json!({"path": "a"}),
            vec![Repair::TrailingCommas { count: 1 }],
        ),
        (
            "{\"path\": \"a\" // the file\n}",
            json!({"path": "a"}),
            vec![Repair::Comments { count: 1 }],
        ),
        (
            "{'path': 'a'}",
            json!({"path": "a"}),
            vec![Repair::SingleQuotes { count: 2 }],
        ),
        (
            r#"{path: "a"}"#,
            json!({"path": "a"}),
            vec![Repair::UnquotedKeys { count: 1 }],
        ),
        (
            r#"{"path": "a", "replace_all": True}"#,
            json!({"path": "a", "replace_all": true}),
            vec![Repair::PythonLiterals { count: 1 }],
        ),
        (
            r#"{"path": "\d"}"#,
            json!({"path": "\\d"}),
            vec![Repair::LoneBackslashes { count: 1 }],
        ),
        (
            r#"{"path": "a" "old_string": "b"}"#,
            json!({"path": "a", "old_string": "b"}),
            vec![Repair::MissingCommas { count: 1 }],
        ),
        (
            r#"{"path": "a", please "old_string": "b"}"#,
            json!({"path": "a", "old_string": "b"}),
            vec![Repair::StrayWords { count: 1 }],
        ),
        (
            r#"{"path": "a", "edits": ({"n": 1},)}"#,
            json!({"path": "a", "edits": [{"n": 1}]}),
            vec![Repair::PythonTuples { count: 1 }],
        ),
        (
            r#"{"path": src/main.rs}"#,
            json!({"path": "src/main.rs"}),
            vec![Repair::BareWords { count: 1 }],
        ),
        (
            r#"{"path": "a", "edits": [{"n": .5}, {"n": 1_000}]}"#,
            json!({"path": "a", "edits": [{"n": 0.5}, {"n": 1000}]}),
            vec![Repair::NumberForms { count: 2 }],
        ),
        (
            r#"{"path":"a"}{"path":"a"}{"path":"a"}"#,
            json!({"path": "a"}),
            vec![Repair::DuplicateObjects { count: 3 }],
        ),
        (
            r#"{"path":"a"}{"path":"b"} {"path":"a"}"#,
            json!({"path": "a"}),
            vec![Repair::SplitConcatenated {
                found: 3,
                taken: 0,
                not_run: vec![json!({"path": "b"})],
            }],
        ),
        (
            r#"{"nope":1} {"path":"b"}"#,
            json!({"path": "b"}),
            vec![Repair::SplitConcatenated {
                found: 2,
                taken: 1,
                not_run: vec![json!({"nope": 1})],
            }],
        ),
        (
            "{'path': 'a'} {'path': 'a'}\n{'path': 'a'}",
            json!({"path": "a"}),
            vec![
                Repair::DuplicateObjects { count: 3 },
                Repair::SingleQuotes { count: 2 },
            ],
        ),
        (
            "```\n{'path': 'a', file_path: None,}\n```",
            json!({"path": "a", "file_path": null}),
            vec![
                Repair::CodeFence,
                Repair::TrailingCommas { count: 1 },
                Repair::SingleQuotes { count: 2 },
                Repair::UnquotedKeys { count: 1 },
                Repair::PythonLiterals { count: 1 },
            ],
        ),
    ];
    for (raw, expected, repairs) in cases {
        let repaired =
            repair_args(raw, &schema(), passes).unwrap_or_else(|e| panic!("{raw:?}: {e:?}"));
        assert_eq!(repaired.args, expected, "{raw:?}");
        assert_eq!(repaired.repairs, repairs, "{raw:?}");
    }
}

#[test]
fn two_readings_are_refused_with_both_named() {
    let cases = [
        (
            "Use {\"path\": \"a\"} or {\"path\": \"b\"}",
            "{\"path\":\"a\"}",
            "{\"path\":\"b\"}",
        ),
        (
            "{'path': 'a'} {'path': 'a'} {'path': 'b'}",
            "{\"path\":\"a\"}",
            "{\"path\":\"b\"}",
        ),
        (
            r#"{"path": "say "hi", "old_string": "x"}"#,
            "say \\\"hi",
            "say ",
        ),
    ];
    for (raw, first, second) in cases {
        match repair_args(raw, &schema(), passes) {
            Err(Unreadable::Ambiguous {
                first: a,
                second: b,
                ..
            }) => {
                assert!(a.contains(first), "{raw}: {a}");
                assert!(b.contains(second), "{raw}: {b}");
            }
            other => panic!("{raw}: {other:?}"),
        }
    }
}

#[test]
fn cut_off_text_is_refused_whichever_step_sees_it() {
    for raw in [
        "```json\n{\"path\": \"a",
        "Sure: {\"path\": \"a\"",
        "{'path': 'a'",
        "{path: \"a\", // more\n",
        "{\"path\": \"line one\nline",
    ] {
        assert!(
            matches!(
                repair_args(raw, &schema(), passes),
                Err(Unreadable::Truncated { .. })
            ),
            "{raw:?}: {:?}",
            repair_args(raw, &schema(), passes)
        );
    }
}

#[test]
fn structure_after_an_object_is_not_dropped_as_prose() {
    for raw in [r#"{"path": "a"}, "extra": 1}"#, r#"{"path": "a"}]"#] {
        assert!(
            matches!(
                repair_args(raw, &schema(), passes),
                Err(Unreadable::Unparsable(_))
            ),
            "{raw}: {:?}",
            repair_args(raw, &schema(), passes)
        );
    }
}

#[test]
fn valid_arguments_pass_through_untouched() {
    let raw = r#"{"path":"a","replace_all":false}"#;
    let repaired = repair_args(raw, &schema(), passes).unwrap();
    assert_eq!(repaired.args, json!({"path": "a", "replace_all": false}));
    assert!(repaired.repairs.is_empty());
}

#[test]
fn a_key_sent_twice_is_refused_in_strict_and_repaired_json_alike() {
    let cases = [
        (r#"{"path": "a", "path": "b"}"#, "line 1 column 26"),
        (r#"{'path': 'a', 'path': 'b'}"#, "line 1 column 15"),
        (
            "```json\n{\"path\": \"a\",\n \"path\": \"b\"}\n```",
            "line 3 column 2",
        ),
    ];
    for (raw, where_) in cases {
        match repair_args(raw, &schema(), passes) {
            Err(Unreadable::DuplicateKey { at, key, values }) => {
                assert_eq!(
                    (key.as_str(), *values),
                    ("path", [json!("a"), json!("b")]),
                    "{raw}"
                );
                assert_eq!(at, where_, "{raw}");
            }
            other => panic!("{raw}: {other:?}"),
        }
    }
    // Inside a double-encoded string, a repeated key is not decoded: the schema refuses the
    // string, and no value is picked.
    let double = repair_args(r#""{\"path\":\"a\",\"path\":\"b\"}""#, &schema(), passes).unwrap();
    assert!(double.args.is_string(), "{:?}", double.args);
}

#[test]
fn a_json_value_beside_the_object_is_refused_never_dropped_as_prose() {
    for raw in [
        r#"[1, 2] {"path": "a"}"#,
        r#"{"path": "a"} [1]"#,
        r#"[{"path": "b"}] {"path": "a"}"#,
        "Here:\n```json\n{\"path\": \"a\"}\n```\nand\n```json\n[\"b\"]\n```",
        "```json\n[\"b\"]\n```\nthen\n```json\n{\"path\": \"a\"}\n```",
        r#""note" {"path": "a"}"#,
        r#"{"path": "a"} 42"#,
        "[{'path': 'a'}, {'path': 'b'}]",
    ] {
        assert_unparsable_for(raw, &schema(), "line ");
    }
    // A strict top-level array is read as the array it is: the schema refuses it.
    let array = repair_args(r#"[{"path": "a"}, {"path": "b"}]"#, &schema(), passes).unwrap();
    assert!(array.args.is_array());
}

#[test]
fn complete_text_is_refused_for_its_real_defect_not_as_cut_off() {
    let cases = [
        (r#"{"path": {"a": 1}"#, "a `}` or `]` is missing"),
        (r#"{"path": "a" oops}"#, "line 1 column 12"),
        (r#"{"path": ["a", 1}"#, "closed by `}` at line 1 column 17"),
    ];
    for (raw, defect) in cases {
        assert_unparsable_for(raw, &schema(), defect);
    }
}

#[test]
fn hexadecimal_runs_only_where_the_schema_wants_an_integer() {
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"},
        "limit": {"type": "integer"}}});
    let repaired = repair_args(r#"{"path": "a", "limit": 0x10}"#, &schema, |_| true).unwrap();
    assert_eq!(repaired.args, json!({"path": "a", "limit": 16}));
    assert_eq!(repaired.repairs, [Repair::HexIntegers { count: 1 }]);
    for raw in [r#"{"path": 0x10}"#, r#"{"other": 0x10}"#] {
        assert_unparsable_for(raw, &schema, "hexadecimal");
    }
}

/// `raw` is refused as unreadable, and what the repair steps ran into mentions `defect`.
fn assert_unparsable_for(raw: &str, schema: &Value, defect: &str) {
    match repair_args(raw, schema, passes) {
        Err(Unreadable::Unparsable(u)) => {
            assert!(
                u.after_repairs.contains(defect),
                "{raw}: {}",
                u.after_repairs
            )
        }
        other => panic!("{raw}: {other:?}"),
    }
}

#[test]
fn an_argv_command_becomes_one_bash_command() {
    let schema = json!({"type": "object", "properties": {"command": {"type": "string"}}});
    let mut repairs = Vec::new();
    let joined = join_argv(json!({"command": ["bash", "-lc", "ls | wc -l"]}), &schema, &mut repairs);
    assert_eq!(joined, json!({"command": "ls | wc -l"}));
    let quoted = join_argv(json!({"command": ["grep", "-r", "a b", "it's"]}), &schema, &mut repairs);
    assert_eq!(quoted, json!({"command": "grep -r 'a b' 'it'\\''s'"}));
    assert_eq!(repairs.len(), 2);
    let argv_schema = json!({"type": "object", "properties": {"command": {"type": "array"}}});
    let kept = join_argv(json!({"command": ["ls"]}), &argv_schema, &mut repairs);
    assert_eq!(kept, json!({"command": ["ls"]}), "a tool that takes argv keeps it");
}
