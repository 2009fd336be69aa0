//! `paddock tool list|call` end to end (C4, M2): exit codes and JSON shapes, default and
//! explicit mounts, refused mounts.

use super::common::*;

#[test]
fn tool_list_json_shows_every_builtin_with_its_contract() {
    let s = Sandbox::new();
    let (code, tools) = s.json(&["tool", "list", "--preset", "coding", "--json"]);
    assert_eq!(code, 0);
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "read_file",
            "write_file",
            "edit_file",
            "list_dir",
            "grep",
            "glob",
            "run_command",
            "shell",
            "write_stdin"
        ]
    );
    let read = &tools[0];
    assert_eq!(read["plugin"], "fs");
    assert_eq!(read["read_only"], true);
    assert_eq!(read["concurrency_safe"], true);
    assert_eq!(read["idempotent"], true);
    assert_eq!(read["parameters"]["required"], serde_json::json!(["path"]));
    let edit = &tools[2];
    assert_eq!(edit["idempotent"], false);
    assert_eq!(edit["read_only"], false);
    assert!(
        tools[5]["description"]
            .as_str()
            .unwrap()
            .contains("does not search file contents")
    );
}

#[test]
fn a_successful_call_prints_one_object_and_exits_0() {
    let s = Sandbox::new();
    let (code, out) = s.json(&[
        "tool",
        "call",
        "read_file",
        r#"{"path":"notes.txt","limit":2}"#,
        "--json",
    ]);
    assert_eq!(code, 0);
    assert_eq!(out["ok"], true);
    assert!(
        out["content"]
            .as_str()
            .unwrap()
            .starts_with("     1\tone\n     2\ttwo\n")
    );
    assert_eq!(out["truncated"], true);
    assert_eq!(
        out["continuation"],
        r#"{"byte":8,"offset":3,"path":"notes.txt"}"#
    );
}

#[test]
fn a_tool_error_prints_code_message_retryable_and_exits_1() {
    let s = Sandbox::new();
    let (code, out) = s.json(&[
        "tool",
        "call",
        "read_file",
        r#"{"path":"missing.txt"}"#,
        "--json",
    ]);
    assert_eq!(code, 1);
    assert_eq!(out["ok"], false);
    assert_eq!(out["error"]["code"], "NOT_FOUND");
    assert_eq!(out["error"]["retryable"], false);
    let (code, out) = s.json(&["tool", "call", "read_file", r#"{"offset":"x"}"#, "--json"]);
    assert_eq!(code, 1);
    assert_eq!(out["error"]["code"], "INVALID_ARGS");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("path (string, required)")
    );
    let (code, out) = s.json(&["tool", "call", "raed_file", "{}", "--json"]);
    assert_eq!(code, 1);
    assert_eq!(out["error"]["code"], "UNKNOWN_TOOL");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("closest first: read_file")
    );
}

#[test]
fn usage_errors_exit_2() {
    let s = Sandbox::new();
    let out = s.paddock(&["tool", "call", "read_file", "{}", "--mount", "no-colon"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("HOST:GUEST"));
    let out = s.paddock(&["tool", "frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    let (code, out) = s.json(&[
        "tool",
        "call",
        "read_file",
        "{}",
        "--preset",
        "nope",
        "--json",
    ]);
    assert_eq!(code, 2);
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no preset named `nope`")
    );
}

#[test]
fn the_default_preset_reads_the_working_directory_and_loads_no_write_tools() {
    let s = Sandbox::new();
    let (code, tools) = s.json(&["tool", "list", "--json"]);
    assert_eq!(code, 0);
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    // The shell is there too, over the read-only workspace.
    assert_eq!(
        names,
        [
            "read_file",
            "list_dir",
            "grep",
            "glob",
            "shell",
            "write_stdin"
        ]
    );
    let (code, out) = s.json(&[
        "tool",
        "call",
        "write_file",
        r#"{"path":"x.txt","content":"no"}"#,
        "--json",
    ]);
    assert_eq!(code, 1);
    assert_eq!(out["error"]["code"], "UNKNOWN_TOOL");
    assert!(!s.file("x.txt").exists());
}

#[test]
fn with_the_coding_preset_the_working_directory_is_the_writable_workspace() {
    let s = Sandbox::new();
    let (code, out) = s.json(&[
        "tool",
        "call",
        "write_file",
        r#"{"path":"made/here.txt","content":"hi"}"#,
        "--preset",
        "coding",
        "--json",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        std::fs::read_to_string(s.file("made/here.txt")).unwrap(),
        "hi"
    );
    let (code, out) = s.json(&[
        "tool",
        "call",
        "edit_file",
        r#"{"path":"notes.txt","old_string":"two","new_string":"2"}"#,
        "--preset",
        "coding",
        "--json",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        std::fs::read_to_string(s.file("notes.txt")).unwrap(),
        "one\n2\nthree\n"
    );
}

#[test]
fn an_explicit_read_only_mount_refuses_writes() {
    let s = Sandbox::new();
    let mount = format!("{}:/workspace:ro", s.work.path().display());
    let (code, out) = s.json(&[
        "tool",
        "call",
        "write_file",
        r#"{"path":"x.txt","content":"no"}"#,
        "--preset",
        "coding",
        "--mount",
        &mount,
        "--json",
    ]);
    assert_eq!(code, 1);
    assert_eq!(out["error"]["code"], "PERMISSION_DENIED");
    assert!(!s.file("x.txt").exists());
}

#[test]
fn a_mount_exposing_the_data_directory_is_refused() {
    let s = Sandbox::new();
    let mount = format!("{}:/data", s.home.path().display());
    let (code, out) = s.json(&[
        "tool", "call", "list_dir", "{}", "--mount", &mount, "--json",
    ]);
    assert_eq!(code, 2);
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("compiled-code cache"),
        "{out}"
    );
}

#[test]
fn grep_and_glob_skip_what_gitignore_excludes_unless_asked() {
    let s = Sandbox::new();
    std::fs::write(s.file(".gitignore"), "target/\n*.log\n").unwrap();
    for dir in ["src", "target/debug", ".github"] {
        std::fs::create_dir_all(s.file(dir)).unwrap();
    }
    for file in [
        "src/a.rs",
        "target/debug/b.rs",
        "build.log",
        ".github/ci.rs",
    ] {
        std::fs::write(s.file(file), "let needle = 1;\n").unwrap();
    }
    let (code, out) = s.json(&["tool", "call", "grep", r#"{"pattern": "needle"}"#, "--json"]);
    assert_eq!(code, 0, "{out}");
    let found = out["content"].as_str().unwrap();
    assert!(
        found.contains("src/a.rs") && found.contains(".github/ci.rs"),
        "{found}"
    );
    assert!(
        !found.contains("target/") && !found.contains("build.log"),
        "{found}"
    );
    let (_, out) = s.json(&[
        "tool",
        "call",
        "grep",
        r#"{"pattern": "needle", "include_ignored": true}"#,
        "--json",
    ]);
    let found = out["content"].as_str().unwrap();
    assert!(
        found.contains("target/debug/b.rs") && found.contains("build.log"),
        "{found}"
    );
    let (_, out) = s.json(&["tool", "call", "glob", r#"{"pattern": "*.rs"}"#, "--json"]);
    let found = out["content"].as_str().unwrap();
    assert_eq!(
        found.lines().filter(|l| l.ends_with(".rs")).count(),
        2,
        "{found}"
    );
    assert!(!found.contains("target/"), "{found}");
}

/// L7: write_file and edit_file replace a file by renaming a temporary file over it; WASI has
/// no modes, so the host carries the replaced file's permission bits (never set-id ones).
#[test]
fn a_replaced_file_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let s = Sandbox::new();
    let script = s.file("build.sh");
    std::fs::write(&script, "#!/bin/sh\necho old\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o4751)).unwrap();
    let mode = || std::fs::metadata(&script).unwrap().permissions().mode() & 0o7777;
    let edit = r#"{"path":"build.sh","old_string":"old","new_string":"new"}"#;
    let (code, out) = s.json(&[
        "tool",
        "call",
        "edit_file",
        edit,
        "--preset",
        "coding",
        "--json",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        std::fs::read_to_string(&script).unwrap(),
        "#!/bin/sh\necho new\n"
    );
    assert_eq!(
        mode(),
        0o751,
        "the executable bits stay, the set-id bit does not travel"
    );
    let write = r##"{"path":"build.sh","content":"#!/bin/sh\necho third\n"}"##;
    let (code, out) = s.json(&[
        "tool",
        "call",
        "write_file",
        write,
        "--preset",
        "coding",
        "--json",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(mode(), 0o751);
    // A new file gets the default mode, not a neighbour's.
    let fresh = r#"{"path":"fresh.txt","content":"x"}"#;
    let (code, out) = s.json(&[
        "tool",
        "call",
        "write_file",
        fresh,
        "--preset",
        "coding",
        "--json",
    ]);
    assert_eq!(code, 0, "{out}");
    let fresh_mode = std::fs::metadata(s.file("fresh.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(fresh_mode & 0o111, 0, "a new file is not executable");
}

/// K4: an altered compiled-code entry is discarded and compiled again, and the user is told
/// so on stderr without asking for logs.
#[test]
fn an_altered_cache_entry_is_recompiled_with_a_warning_by_default() {
    let s = Sandbox::new();
    let args = ["tool", "call", "list_dir", r#"{"path":"."}"#, "--json"];
    let first = s.paddock(&args);
    assert_eq!(first.status.code(), Some(0));
    let entries: Vec<_> = std::fs::read_dir(s.home.path().join("cache"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .collect();
    assert!(!entries.is_empty(), "the first call cached compiled code");
    for entry in &entries {
        let mut bytes = std::fs::read(entry).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0xff;
        std::fs::write(entry, &bytes).unwrap();
    }
    let again = s.paddock(&args);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("discarding compiled-code cache entry"),
        "{stderr}"
    );
    let quiet = s.paddock(&args);
    assert!(
        quiet.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&quiet.stderr)
    );
}

/// The sessions of the scratch data directory, each as its events.
fn sessions(s: &Sandbox) -> Vec<(String, Vec<serde_json::Value>)> {
    let dir = s.home.path().join("sessions");
    let mut found: Vec<_> = std::fs::read_dir(&dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    found.sort();
    found
        .into_iter()
        .filter(|p| p.join("events.jsonl").is_file())
        .map(|p| {
            let text = std::fs::read_to_string(p.join("events.jsonl")).unwrap();
            let events = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                events,
            )
        })
        .collect()
}

fn kinds(events: &[serde_json::Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

#[test]
fn a_call_is_logged_like_a_models_in_a_session_that_resume_refuses() {
    let s = Sandbox::new();
    let (code, out) = s.json(&["tool", "call", "cat", r#"{"path":"notes.txt"}"#, "--json"]);
    assert_eq!(code, 0, "{out}");
    let logged = sessions(&s);
    assert_eq!(logged.len(), 1, "one session for the command");
    let (id, events) = &logged[0];
    assert_eq!(
        kinds(events),
        [
            "session/start",
            "assistant/message",
            "tool/call",
            "tool/start",
            "tool/result"
        ]
    );
    assert_eq!(events[0]["data"]["model"], "tool-call");
    // Checked once: the alias repair, the tool it resolved to and what it touches are all in
    // the log, from the same check that ran it.
    let call = &events[2]["data"];
    assert_eq!(call["name"], "cat");
    assert_eq!(call["tool"], "read_file");
    let touched = call["touches"]["paths"][0].as_str().unwrap();
    assert_eq!(
        std::path::Path::new(touched),
        s.file("notes.txt").canonicalize().unwrap()
    );
    assert_eq!(call["touches"]["writes"], false);
    let result = &events[4]["data"];
    assert_eq!(result["repairs"][0]["repair"], "tool_alias", "{result}");
    assert_eq!(result["args"]["path"], "notes.txt");
    // The log reads back and checks (L8).
    let shown = s.paddock(&["log", id]);
    assert!(shown.status.success(), "{shown:?}");
    // It is not a conversation: resume refuses it and says what to do.
    let resumed = s.paddock(&["resume", id]);
    assert_eq!(resumed.status.code(), Some(2), "{resumed:?}");
    let said = String::from_utf8_lossy(&resumed.stderr);
    assert!(
        said.contains("calls came from a client (`tool-call`)") && said.contains("paddock log"),
        "{said}"
    );
}

#[test]
fn a_batch_is_one_logged_message_and_duplicate_ids_are_refused_before_anything_runs() {
    let s = Sandbox::new();
    let batch = s.file("batch.json");
    std::fs::write(
        &batch,
        r#"[{"id":"a","name":"read_file","arguments":"{\"path\":\"notes.txt\"}"},
            {"id":"b","name":"list_dir","arguments":"{}"}]"#,
    )
    .unwrap();
    let (code, out) = s.json(&["tool", "batch", batch.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let logged = sessions(&s);
    let (_, events) = &logged[0];
    let messages: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "assistant/message")
        .collect();
    assert_eq!(messages.len(), 1);
    assert_eq!(
        messages[0]["data"]["tool_calls"].as_array().unwrap().len(),
        2
    );
    let results: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "tool/result")
        .map(|e| e["data"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");

    std::fs::write(
        &batch,
        r#"[{"id":"a","name":"read_file","arguments":"{}"},{"id":"a","name":"list_dir"}]"#,
    )
    .unwrap();
    let (code, out) = s.json(&["tool", "batch", batch.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["code"], "USAGE_ERROR");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("calls 0 and 1 both have the id `a`"),
        "{out}"
    );
    assert_eq!(
        sessions(&s).len(),
        1,
        "the refused batch started no session"
    );
}
