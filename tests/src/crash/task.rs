//! The crash harness's task: the preset, the model's script (one step per assistant message
//! already in the history), the project's files with every state each may validly be in, and
//! the checks made from the outside once a trial's session is finished.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Value, json};

use super::Report;
use crate::scripted::{Script, ScriptCall, ScriptedServer, Step, Turn};

/// Read-write fs, `sh` allowed, everything approved: the harness is the only user.
pub const PRESET: &str = r#"name = "crash"
description = "crash harness: read-write fs and an allow-listed sh"

[limits]
max_turns = 40
max_tokens = 100_000_000
max_wall_secs = 600
max_cost_usd = 1000.0
max_parallel_tool_calls = 4
wrap_up = false

[plugins.fs]
source = "builtin:fs"
mounts = [{ host = ".", guest = "/workspace", mode = "rw" }]

[plugins.shell]
source = "builtin:shell"
mounts = [{ host = ".", guest = "/workspace", mode = "rw" }]
grants.exec = { allow = ["sh"], env = ["PATH"], timeout_ms = 20_000 }

[approval]
low = "allow"
medium = "allow"
high = "allow"
"#;

/// The user files the task touches.
pub const FILES: &[&str] = &["notes.txt", "big.txt", "small.txt"];

const NOTES: &str = "title\nalpha\nkeep\n";
const NOTES_EDITED: &str = "title\nbeta\nkeep\n";
const SMALL: &str = "small file\n";
/// Lines in big.txt: about 1.3 MiB, large enough that a plain overwrite is caught mid-way.
const BIG_LINES: usize = 60_000;

fn big(version: &str) -> String {
    (0..BIG_LINES)
        .map(|i| format!("{version} line {i:06}\n"))
        .collect()
}

/// big.txt after the edit of step 3: its first line says v2.
fn big_edited() -> String {
    big("v1").replacen("v1 line 000000\n", "v2 line 000000\n", 1)
}

pub fn initial_files() -> Vec<(&'static str, String)> {
    vec![("notes.txt", NOTES.into()), ("big.txt", big("v0"))]
}

/// Every content a file may have after any crash: its old content or a new one, whole.
fn valid_states(name: &str) -> Vec<Option<String>> {
    match name {
        "notes.txt" => vec![Some(NOTES.into()), Some(NOTES_EDITED.into())],
        "big.txt" => vec![Some(big("v0")), Some(big("v1")), Some(big_edited())],
        "small.txt" => vec![None, Some(SMALL.into())],
        _ => Vec::new(),
    }
}

pub fn task(trial: usize) -> String {
    format!("crash trial {trial}: update the notes and the big file, and leave markers")
}

/// A tagged marker line appended by `sh`: run twice, it shows twice.
fn mark(id: &str) -> ScriptCall {
    let args = json!({"program": "sh", "args": ["-c", format!("echo {id} >> markers.log")]});
    ScriptCall::new(id, "run_command", &args.to_string(), &[])
}

fn call(id: &str, name: &str, args: Value) -> ScriptCall {
    ScriptCall::new(id, name, &args.to_string(), &[7, 40])
}

/// Five replies: four batches mixing reads, writes, edits and marker runs, then the answer.
pub fn script() -> Script {
    let steps = vec![
        Turn::calls(vec![
            call("c0_read", "read_file", json!({"path": "notes.txt"})),
            mark("c0_mark"),
        ]),
        Turn::calls(vec![
            call(
                "c1_write",
                "write_file",
                json!({"path": "big.txt", "content": big("v1")}),
            ),
            call(
                "c1_edit",
                "edit_file",
                json!({"path": "notes.txt", "old_string": "alpha", "new_string": "beta"}),
            ),
        ]),
        Turn::calls(vec![
            mark("c2_mark"),
            call(
                "c2_read",
                "read_file",
                json!({"path": "big.txt", "limit": 3}),
            ),
            call(
                "c2_write",
                "write_file",
                json!({"path": "small.txt", "content": SMALL}),
            ),
        ]),
        Turn::calls(vec![
            call(
                "c3_edit",
                "edit_file",
                json!({"path": "big.txt", "old_string": "v1 line 000000\n", "new_string": "v2 line 000000\n"}),
            ),
            mark("c3_mark"),
            call("c3_read", "read_file", json!({"path": "small.txt"})),
        ]),
        Turn::text(&["Done: notes updated, big file rewritten, markers left."]),
    ];
    Script {
        steps: steps.into_iter().map(Step::Reply).collect(),
    }
}

/// The outside checks of one finished trial, added to `found`.
pub fn check(
    project: &Path,
    log: Option<&Path>,
    trial: usize,
    finished: bool,
    server: &ScriptedServer,
    found: &mut Report,
) {
    let work = project.join("work");
    // No program ran twice.
    let markers = std::fs::read_to_string(work.join("markers.log")).unwrap_or_default();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for line in markers.lines() {
        *seen.entry(line.trim()).or_default() += 1;
    }
    if seen.values().any(|n| *n > 1) {
        found.double_exec = 1;
    }
    // Every user file whole: old or new content, never empty, cut or mixed.
    for name in FILES {
        let now = std::fs::read_to_string(work.join(name)).ok();
        if !valid_states(name).contains(&now) {
            eprintln!(
                "trial {trial}: {name} is torn ({} bytes)",
                now.as_ref().map_or(0, String::len)
            );
            found.torn_files = 1;
        }
    }
    found.leftover_temps = std::fs::read_dir(&work)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().contains(".paddock-"))
                .count()
        })
        .unwrap_or(0);
    // The session finished, and its log is whole and settled.
    let Some(log) = log else {
        found.unrecoverable = 1;
        return;
    };
    if !finished {
        found.unrecoverable = 1;
    }
    match paddock::log::read_log(log) {
        Ok(read) => {
            let settled = paddock::log::recover(&read.events).steps.is_empty();
            let completed = read.events.iter().rev().find_map(|e| match &e.body {
                paddock::log::Body::TurnEnd { reason, .. } => Some(*reason),
                _ => None,
            }) == Some(paddock::log::StopReason::Completed);
            if read.torn.is_some() || !settled || (finished && !completed) {
                eprintln!(
                    "trial {trial}: log torn={} settled={settled} completed={completed}",
                    read.torn.is_some()
                );
                found.invalid_histories = 1;
            }
        }
        Err(e) => {
            eprintln!("trial {trial}: {e}");
            found.invalid_histories = 1;
        }
    }
    // What the model was sent: the task in every request, results in their calls' order.
    let marker = format!("crash trial {trial}:");
    for request in server.take_requests() {
        let Some(messages) = request.body["messages"].as_array() else {
            continue;
        };
        let ours = messages.iter().any(|m| {
            m["role"] == "user"
                && m["content"]
                    .as_str()
                    .is_some_and(|t| t.starts_with(&marker))
        });
        let tasked = messages.iter().any(|m| m["role"] == "user");
        if !ours || !tasked {
            found.invalid_histories = 1;
        }
        if ours && !in_model_order(messages) {
            eprintln!("trial {trial}: results out of their calls' order");
            found.out_of_order = 1;
        }
    }
}

/// After each assistant message with calls come exactly its results, in the calls' order.
fn in_model_order(messages: &[Value]) -> bool {
    let mut at = 0;
    while at < messages.len() {
        let message = &messages[at];
        at += 1;
        let Some(calls) = message["tool_calls"].as_array() else {
            continue;
        };
        for call in calls {
            let result = messages.get(at);
            if result.is_none_or(|r| r["role"] != "tool" || r["tool_call_id"] != call["id"]) {
                return false;
            }
            at += 1;
        }
    }
    true
}
