//! docs/json-events.md against the binary: every event `run --json` prints has its `type` in
//! the document's table, with every field of its `data` named in that row, and the `result`
//! line's fields are the document's example's. A field added to the binary and not the
//! document (or named differently, as `usage {input, output}` once was) fails here.

use std::collections::{BTreeMap, BTreeSet};

use paddock_tests::scripted::{Script, ScriptedServer, Step, Turn};
use serde_json::Value;

use crate::agent_common::{Project, call_step};

/// The table's rows: type → the backticked words of its `data` column.
fn documented() -> (BTreeMap<String, BTreeSet<String>>, BTreeSet<String>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/json-events.md");
    let text = std::fs::read_to_string(path).unwrap();
    let mut rows = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split(" | ").collect();
        if cells.len() < 2 {
            continue;
        }
        let words = |cell: &str| -> BTreeSet<String> {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .flat_map(|w| w.split(|c: char| !(c.is_alphanumeric() || c == '_')))
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect()
        };
        for kind in words(cells[0].trim_start_matches("| ")) {
            rows.entry(kind.clone())
                .or_insert_with(BTreeSet::new)
                .extend(words(cells[1]));
        }
        // A row may name several types (`inbox/in`, `inbox/take`): keep the whole names too.
        for kind in cells[0].split('`').skip(1).step_by(2).map(str::to_string) {
            rows.entry(kind).or_default().extend(words(cells[1]));
        }
    }
    let example = text
        .split("**Result** (always the last line):")
        .nth(1)
        .and_then(|rest| rest.split("```json").nth(1))
        .and_then(|rest| rest.split("```").next())
        .expect("the result example");
    let example: Value = serde_json::from_str(example).expect("the example is JSON");
    let result = example["data"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    (rows, result)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_and_field_run_json_prints_is_documented() {
    let project = Project::new(&[("notes.txt", "hello\n")]);
    let server = ScriptedServer::start(Script {
        steps: vec![
            call_step("c1", "read_file", r#"{"path":"notes.txt"}"#),
            Step::Reply(Turn::text(&["It says", " hello."])),
        ],
    })
    .await
    .unwrap();
    let url = server.openai_base_url();
    let out = project
        .paddock(&[
            "run",
            "--json=deltas",
            "read notes.txt",
            "--base-url",
            &url,
            "--model",
            "scripted",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let (rows, result_fields) = documented();
    let mut seen = BTreeSet::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let event: Value = serde_json::from_str(line).unwrap();
        let kind = event["type"].as_str().unwrap().to_string();
        let data = event["data"].as_object().unwrap();
        if kind == "result" {
            let keys: BTreeSet<String> = data.keys().cloned().collect();
            let missing: Vec<_> = keys.difference(&result_fields).collect();
            assert!(
                missing.is_empty(),
                "result fields not in the example: {missing:?}"
            );
            continue;
        }
        if kind == "message/delta" {
            continue; // documented in prose: `attempt`, `text`
        }
        let row = rows
            .get(&kind)
            .unwrap_or_else(|| panic!("event type `{kind}` is not in the table"));
        for key in data.keys() {
            assert!(
                row.contains(key),
                "`{kind}` field `{key}` is not documented"
            );
        }
        // Nested objects the table spells out (usage, touches, tool_calls).
        for (key, value) in data {
            if let Some(inner) = value.as_object().or_else(|| {
                value
                    .as_array()
                    .and_then(|a| a.first())
                    .and_then(Value::as_object)
            }) && matches!(key.as_str(), "usage" | "touches" | "tool_calls")
            {
                for nested in inner.keys() {
                    assert!(
                        row.contains(nested),
                        "`{kind}.{key}.{nested}` is not documented"
                    );
                }
            }
        }
        seen.insert(kind);
    }
    for kind in [
        "session/start",
        "user/message",
        "turn/start",
        "attempt/start",
        "attempt/end",
        "assistant/message",
        "tool/call",
        "tool/start",
        "tool/result",
        "turn/end",
    ] {
        assert!(seen.contains(kind), "the run printed no `{kind}`: {seen:?}");
    }
}
