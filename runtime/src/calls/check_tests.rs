//! The checker end to end over a small fake index: names, repairs, feedback (V3, V4), and the
//! property that no input can make it panic.

use proptest::prelude::*;
use serde_json::json;

use super::*;
use paddock_types::contract::{Example, RuntimeMeta};

struct Fake {
    tools: Vec<(ToolSpec, jsonschema::Validator)>,
}

impl ToolIndex for Fake {
    fn lookup(&self, name: &str) -> Option<(&ToolSpec, &jsonschema::Validator)> {
        self.tools
            .iter()
            .find(|(s, _)| s.name == name)
            .map(|(s, v)| (s, v))
    }
    fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|(s, _)| s.name.as_str()).collect()
    }
}

fn tool(name: &str, parameters: Value) -> (ToolSpec, jsonschema::Validator) {
    let validator = jsonschema::validator_for(&parameters).expect("schema");
    let spec = ToolSpec {
        name: name.into(),
        description: format!("{name} does things"),
        parameters,
        examples: vec![Example {
            args: r#"{"path": "src/main.rs"}"#.into(),
            correct: true,
            note: String::new(),
        }],
        meta: RuntimeMeta::default(),
    };
    (spec, validator)
}

fn fake() -> Fake {
    let path_schema = json!({"type": "object", "properties": {"path": {"type": "string"},
        "limit": {"type": "integer"}}, "required": ["path"], "additionalProperties": false});
    Fake {
        tools: vec![
            tool("read_file", path_schema.clone()),
            tool("write_file", path_schema),
            tool(
                "list_dir",
                json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            ),
        ],
    }
}

fn check(name: &str, raw: &str) -> CheckedCall {
    check_call(&fake(), &AliasTable::default(), name, raw)
}

#[test]
fn an_alias_resolves_and_is_recorded() {
    let checked = check("Read", r#"{"file_path": "a.txt"}"#);
    assert_eq!(checked.tool.as_deref(), Some("read_file"));
    assert_eq!(checked.args.unwrap(), json!({"path": "a.txt"}));
    assert_eq!(
        checked.repairs,
        [
            Repair::ToolAlias {
                from: "Read".into(),
                to: "read_file".into()
            },
            Repair::RenamedParam {
                from: "file_path".into(),
                to: "path".into()
            }
        ]
    );
}

#[test]
fn an_unknown_name_lists_the_tools_closest_first() {
    let error = check("write_fil", "{}").args.unwrap_err();
    assert_eq!(error.code, ErrorCode::UnknownTool);
    assert!(error.retryable);
    assert!(error.message.contains("\"write_fil\""), "{}", error.message);
    assert!(
        error.message.contains("did you mean `write_file`?"),
        "{}",
        error.message
    );
    let far = check("frobnicate", "{}").args.unwrap_err();
    assert!(!far.message.contains("did you mean"), "{}", far.message);
    assert!(
        error
            .message
            .contains("closest first: write_file, read_file, list_dir"),
        "{}",
        error.message
    );
}

#[test]
fn truncated_arguments_are_refused_with_position_quote_and_fields() {
    let error = check("read_file", r#"{"path": "a.t"#).args.unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidJson);
    assert!(error.message.contains("cut off"), "{}", error.message);
    assert!(
        error.message.contains("line 1 column 13"),
        "{}",
        error.message
    );
    assert!(
        error.message.contains(r#"Received: "{\"path\": \"a.t""#),
        "{}",
        error.message
    );
    assert!(
        error.message.contains("path (string, required)"),
        "{}",
        error.message
    );
}

#[test]
fn unparsable_text_reports_the_parse_error_the_steps_tried_and_the_fields() {
    let error = check("read_file", "path=a.txt").args.unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidJson);
    for part in [
        "line 1 column 1",
        "⟨here⟩path=a.txt",
        "tried: concatenated objects, markdown fence",
        "unquoted keys, stray words, Python literals",
        "the call was not run",
        "path (string, required)",
        "for example: {\"path\":\"src/main.rs\"}",
    ] {
        assert!(error.message.contains(part), "{part}: {}", error.message);
    }
    // V6: the model is never told about a field it did not send.
    assert!(!error.message.contains("'raw'"), "{}", error.message);
    assert!(!error.message.contains("\"raw\""), "{}", error.message);
}

/// V6: a tool whose schema takes any properties still never runs on text that is not JSON.
#[test]
fn unparsable_text_never_runs_even_when_the_schema_takes_anything() {
    for raw in [
        "just some words",
        "path: a.txt",
        "{\"path\": oops now}",
        "{path = 'a'}",
    ] {
        let checked = check("list_dir", raw);
        let error = checked.args.expect_err(raw);
        assert_eq!(error.code, ErrorCode::InvalidJson, "{raw}");
        assert!(error.message.contains("was not run"), "{}", error.message);
    }
}

#[test]
fn ambiguous_text_names_both_readings_and_runs_neither() {
    let error = check("list_dir", r#"I'd use {"path": "a"} or {"path": "b"}"#)
        .args
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidJson);
    assert!(
        error
            .message
            .contains(r#"either the object {"path":"a"}, or the object {"path":"b"}"#),
        "{}",
        error.message
    );
    assert!(error.message.contains("runs neither"), "{}", error.message);
}

#[test]
fn repaired_arguments_run_and_a_refusal_names_the_repairs_applied() {
    let checked = check("read_file", "```json\n{'path': 'a.txt', limit: 5,}\n```");
    assert_eq!(checked.args.unwrap(), json!({"path": "a.txt", "limit": 5}));
    let error = check("read_file", "{'path': 'a.txt', limit: 'five',}")
        .args
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidArgs);
    assert!(
        error.message.contains("paddock repaired the arguments before checking them: trailing commas (1), single-quoted strings (3), unquoted keys (1)"),
        "{}",
        error.message
    );
}

/// Issue 11, item 4: every refusal for bad arguments says which repairs were tried, whatever
/// stopped the call: cut off, unreadable, two readings, or the schema (with or without repairs
/// applied first).
#[test]
fn every_refusal_for_bad_arguments_names_the_repairs_tried() {
    let cases = [
        (
            "cut off",
            r#"{"path": "a"#,
            ErrorCode::InvalidJson,
            "paddock tried: concatenated objects",
        ),
        (
            "unreadable",
            "path=a.txt",
            ErrorCode::InvalidJson,
            "tried: concatenated objects",
        ),
        (
            "two readings",
            r#"{"path": "a"} or {"path": "b"}"#,
            ErrorCode::InvalidJson,
            "tried: concatenated objects",
        ),
        (
            "schema, nothing repaired",
            r#"{"path": 5}"#,
            ErrorCode::InvalidArgs,
            "no repair applied; paddock tried: parameter names",
        ),
        (
            "schema, repaired first",
            r#"{"file_path": 5}"#,
            ErrorCode::InvalidArgs,
            "paddock repaired the arguments before checking them: `file_path` renamed to `path`",
        ),
    ];
    for (name, raw, code, tried) in cases {
        let error = check("read_file", raw).args.expect_err(name);
        assert_eq!(error.code, code, "{name}: {}", error.message);
        assert!(error.message.contains(tried), "{name}: {}", error.message);
    }
}

#[test]
fn a_key_sent_twice_is_refused_naming_the_key_both_values_and_the_fix() {
    let error = check(
        "read_file",
        r#"{"path": "a.txt", "limit": 1, "path": "b.txt"}"#,
    )
    .args
    .unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidJson);
    for part in [
        "hold the key \"path\" twice",
        "first \"a.txt\", then \"b.txt\"",
        "runs neither",
        "with \"path\" once",
    ] {
        assert!(error.message.contains(part), "{part}: {}", error.message);
    }
}

#[test]
fn schema_violations_carry_the_path_keyword_and_an_example() {
    let error = check("read_file", r#"{"path": "a", "limit": "ten"}"#)
        .args
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidArgs);
    assert!(error.message.contains("`/limit`"), "{}", error.message);
    assert!(
        error.message.contains("keyword `type`"),
        "{}",
        error.message
    );
    assert!(error.message.contains("for example:"), "{}", error.message);
}

#[test]
fn concatenated_objects_take_the_first_valid_one_with_a_warning() {
    let checked = check("read_file", r#"{"limit": 3}{"path": "b"}"#);
    assert_eq!(checked.args.unwrap(), json!({"path": "b"}));
    assert_eq!(
        checked.repairs,
        [Repair::SplitConcatenated {
            found: 2,
            taken: 1,
            not_run: vec![json!({"limit": 3})]
        }]
    );
}

fn raw_text() -> impl Strategy<Value = String> {
    let tokens = vec![
        "{",
        "}",
        "[",
        "]",
        "\"",
        ":",
        ",",
        "path",
        "\"path\"",
        "1",
        "null",
        "\\",
        " ",
        "é",
        "{}",
        "\"{\\\"path\\\":1}\"",
        "file_path",
        "𝄞",
    ];
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..256)
            .prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
        prop::collection::vec(prop::sample::select(tokens), 0..24).prop_map(|t| t.concat()),
    ]
}

fn any_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "read_file",
            "Read",
            "read-file",
            "list_dir",
            "Bash",
            ""
        ])
        .prop_map(String::from),
        prop::collection::vec(any::<u8>(), 0..80)
            .prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
    ]
}

proptest! {
    #[test]
    fn any_name_and_any_bytes_get_a_checked_call_and_never_panic(name in any_name(), raw in raw_text()) {
        let checked = check(&name, &raw);
        match (&checked.tool, &checked.args) {
            (None, Err(e)) => prop_assert_eq!(&e.code, &ErrorCode::UnknownTool),
            (None, Ok(_)) => prop_assert!(false, "arguments without a tool"),
            (Some(_), Err(e)) => prop_assert!(e.retryable && !e.message.is_empty()),
            (Some(tool), Ok(args)) => {
                let (_, validator) = fake().lookup(tool).map(|(s, _)| s.name.clone())
                    .and_then(|n| fake().tools.into_iter().find(|(s, _)| s.name == n))
                    .expect("resolved tool exists");
                prop_assert!(validator.is_valid(args));
            }
        }
    }
}
