//! One table per repair step (V3), then the steps together.

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
fn parse_reads_json_and_reports_truncation_as_end_of_input() {
    assert_eq!(parse(r#"{"path":"a"}"#).unwrap(), json!({"path": "a"}));
    let cases = [
        (r#"{"path":"a""#, true),
        (r#"{"path":"#, true),
        ("{", true),
        (r#"{"path": oops}"#, false),
        (r#"{"a":1}{"b":2}"#, false),
    ];
    for (raw, eof) in cases {
        let error = parse(raw).unwrap_err();
        assert_eq!(error.is_eof(), eof, "{raw:?}: {error}");
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
fn split_concatenated_takes_the_first_object_that_passes_the_schema() {
    let cases = [
        (
            r#"{"path":"a"}{"path":"b"}"#,
            Some((json!({"path": "a"}), 2, 0)),
        ),
        (
            r#"{"nope":1} {"path":"b"}"#,
            Some((json!({"path": "b"}), 2, 1)),
        ),
        // None passes: the first is taken and validation will say why.
        (r#"{"x":1}{"y":2}"#, Some((json!({"x": 1}), 2, 0))),
        (r#"{"path":"a"}"#, None),
        (r#"{"path":"a"} trailing"#, None),
        (r#"{"path":"a"}[1]"#, None),
    ];
    for (raw, expected) in cases {
        assert_eq!(
            split_concatenated(raw, &schema(), passes),
            expected,
            "{raw}"
        );
    }
}

#[test]
fn keep_raw_wraps_the_text_unchanged() {
    for raw in ["not json", "path=a.txt", "{'path': 'a'}"] {
        assert_eq!(keep_raw(raw), json!({"raw": raw}));
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
fn unparsable_text_is_kept_raw_with_the_parse_error() {
    let repaired = repair_args("path=a.txt", &schema(), passes).unwrap();
    assert_eq!(repaired.args, json!({"raw": "path=a.txt"}));
    assert!(matches!(
        &repaired.repairs[..],
        [Repair::KeptRaw { error }] if error.contains("line 1 column 1")
    ));
}

#[test]
fn valid_arguments_pass_through_untouched() {
    let raw = r#"{"path":"a","replace_all":false}"#;
    let repaired = repair_args(raw, &schema(), passes).unwrap();
    assert_eq!(repaired.args, json!({"path": "a", "replace_all": false}));
    assert!(repaired.repairs.is_empty());
}
