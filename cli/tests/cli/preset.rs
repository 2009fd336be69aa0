//! `paddock preset list|show|check` and presets at work (P1, H1, C2, V3, X1): approval,
//! hooks, aliases and `tool batch`.

use serde_json::Value;

use super::common::*;

#[test]
fn preset_list_shows_trusted_project_presets_before_the_shipped_ones() {
    let s = Sandbox::new();
    let dir = s.file(".paddock/presets");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("mine.toml"),
        "description = \"my own\"\n[plugins.fs]\nsource = \"builtin:fs\"\n",
    )
    .unwrap();
    // T1: not trusted yet, so not listed, and one line says so.
    let out = s.paddock(&["preset", "list"]);
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("mine"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("paddock trust"));
    assert!(s.paddock(&["trust"]).status.success());
    let out = s.paddock(&["preset", "list"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("mine")
            && lines[0].contains("my own")
            && lines[0].contains("[project "),
        "{text}"
    );
    for name in ["default", "coding", "review", "untrusted"] {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(name) && l.contains("[shipped]")),
            "{text}"
        );
    }
}

#[test]
fn preset_show_prints_the_resolved_preset_with_defaults_filled_in() {
    let s = Sandbox::new();
    let out = s.paddock(&["preset", "show", "coding"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["name"], "coding");
    assert_eq!(shown["model"]["provider"], "openai");
    // What goes on the wire, defaults included: a limit, its field, tool_choice.
    assert_eq!(shown["model"]["max_output_tokens"], 8192);
    assert_eq!(shown["model"]["max_tokens_field"], "max_completion_tokens");
    assert_eq!(shown["model"]["tool_choice"], "auto");
    assert_eq!(shown["limits"]["max_parallel_tool_calls"], 8);
    assert_eq!(shown["approval"]["high"], "ask");
    let shell = shown["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "shell")
        .unwrap();
    assert_eq!(shell["grant"]["capabilities"], serde_json::json!(["exec"]));
    assert!(
        shell["grant"]["exec"]["allow"]
            .as_array()
            .unwrap()
            .contains(&"git status *".into())
    );
    // Programs run confined unless the preset says otherwise (K1).
    assert_eq!(shell["grant"]["exec"]["confine"], true);
    assert_eq!(shell["grant"]["exec"]["network"], false);
    let hooks = shown["hooks"].as_array().unwrap();
    assert_eq!(hooks[0]["name"], "protect-paths");
    assert_eq!(hooks[0]["on_error"], "deny");
    assert_eq!(hooks[1]["on_error"], "deny");
    // The fs plugin takes the default limits the file leaves out.
    assert_eq!(
        shown["plugins"][0]["grant"]["limits"]["memory_bytes"],
        256 << 20
    );
}

#[test]
fn preset_check_names_file_line_column_and_the_nearest_key() {
    let s = Sandbox::new();
    let bad = s.file("bad.toml");
    std::fs::write(
        &bad,
        "[plugins.fs]\nsource = \"builtin:fs\"\ntimeout_sm = 10\n",
    )
    .unwrap();
    let out = s.paddock(&["preset", "check", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml:3:1: unknown field `timeout_sm`")
            && err.contains("did you mean `timeout_ms`?"),
        "{err}"
    );
    let out = s.paddock(&["preset", "check", "coding"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("is valid (3 plugins, 2 hooks)"));
}

#[test]
fn ask_without_a_terminal_is_a_deny_that_names_the_preset_key() {
    let s = Sandbox::new();
    let (code, out) = s.json(&[
        "tool",
        "call",
        "run_command",
        r#"{"program":"ls"}"#,
        "--preset",
        "coding",
        "--json",
    ]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["error"]["code"], "DENIED");
    let message = out["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("no terminal") && message.contains("`approval.high`"),
        "{message}"
    );
}

#[test]
fn the_review_preset_denies_every_write_and_its_shell_only_reads() {
    let s = Sandbox::new();
    let (code, out) = s.json(&[
        "tool",
        "call",
        "write_file",
        r#"{"path":"x.txt","content":"no"}"#,
        "--preset",
        "review",
        "--json",
    ]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["error"]["code"], "DENIED");
    // The fs plugin's mounts are read-only, so the host holds write_file read-only and the
    // hook lets the tier decide: medium is denied here.
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`approval.medium = \"deny\"`"),
        "{out}"
    );
    assert!(!s.file("x.txt").exists());
    // The shell runs unasked over the read-only workspace, and cannot write it.
    let (code, out) = s.json(&[
        "tool",
        "call",
        "shell",
        r#"{"command":"echo hi; echo no > y.txt"}"#,
        "--preset",
        "review",
        "--json",
    ]);
    assert_eq!(code, 0, "{out}");
    let text = out["content"].as_str().unwrap_or_default();
    assert!(text.starts_with("exit status 1\nhi\n"), "{out}");
    assert!(text.contains("y.txt: Permission denied"), "{out}");
    assert!(!s.file("y.txt").exists());
    // A read goes through, and the audit hook adds its context.
    let (code, out) = s.json(&[
        "tool",
        "call",
        "read_file",
        r#"{"path":"notes.txt"}"#,
        "--preset",
        "review",
        "--json",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out["context"][0]
            .as_str()
            .unwrap()
            .starts_with("audit: read_file")
    );
}

#[test]
fn preset_aliases_and_batches_go_through_the_whole_pipeline() {
    let s = Sandbox::new();
    let preset = s.file("aliased.toml");
    std::fs::write(
        &preset,
        "[plugins.fs]\nsource = \"builtin:fs\"\nmounts = [{ host = \".\", guest = \"/workspace\" }]\n\n\
         [tools]\naliases = { Peek = \"read_file\" }\n",
    )
    .unwrap();
    let preset = preset.to_str().unwrap();
    // A preset alias resolves in a single call, and a misspelt argument name is remapped.
    let (code, out) = s.json(&[
        "tool",
        "call",
        "Peek",
        r#"{"file_path":"notes.txt","limit":1}"#,
        "--preset",
        preset,
        "--json",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out["content"]
            .as_str()
            .unwrap()
            .starts_with("     1\tone\n"),
        "{out}"
    );
    // And in a batch: one result per id, in order, each call repaired or refused on its own.
    let batch = s.file("batch.json");
    std::fs::write(
        &batch,
        r#"[{"id":"a","name":"Peek","arguments":"{\"path\":\"notes.txt\"}"},
            {"id":"b","name":"nope","arguments":""},
            {"id":"c","name":"read_file","arguments":"{\"path\": \"notes.t"}]"#,
    )
    .unwrap();
    let out = s.paddock(&["tool", "batch", batch.to_str().unwrap(), "--preset", preset]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed call makes the batch exit 1"
    );
    let records: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = records
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert_eq!(records[0]["ok"], true, "{records}");
    assert_eq!(records[1]["error"]["code"], "UNKNOWN_TOOL", "{records}");
    assert_eq!(records[2]["error"]["code"], "INVALID_JSON", "{records}");
}
