//! The `paddock` binary end to end (S8, C4, M2, P1): tool list/call with their exit codes and
//! JSON shapes, default and explicit mounts, the plugin store's install/list/inspect/remove,
//! and `preset list|show|check`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

struct Sandbox {
    home: tempfile::TempDir,
    work: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let sandbox = Sandbox {
            home: tempfile::tempdir().unwrap(),
            work: tempfile::tempdir().unwrap(),
        };
        std::fs::write(sandbox.work.path().join("notes.txt"), "one\ntwo\nthree\n").unwrap();
        sandbox
    }

    fn paddock(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_paddock"))
            .args(args)
            .current_dir(self.work.path())
            .env("PADDOCK_HOME", self.home.path())
            .env("NO_COLOR", "1")
            // Presets in the user's own config directory must not leak into the tests.
            .env("XDG_CONFIG_HOME", self.home.path().join("config"))
            .output()
            .expect("paddock runs")
    }

    fn json(&self, args: &[&str]) -> (i32, Value) {
        let out = self.paddock(args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
            panic!(
                "not one JSON object ({e}): {stdout:?} {:?}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.status.code().unwrap_or(-1), value)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.work.path().join(name)
    }
}

fn attacks_wasm() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/target/wasm32-wasip2/release/hostile_attacks.wasm")
}

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
            "run_command"
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
    assert_eq!(out["continuation"], r#"{"offset":3,"path":"notes.txt"}"#);
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
    assert_eq!(names, ["read_file", "list_dir", "grep", "glob"]);
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
fn plugins_install_list_inspect_and_remove() {
    let s = Sandbox::new();
    let wasm = attacks_wasm();
    let out = s.paddock(&[
        "plugin",
        "install",
        wasm.to_str().unwrap(),
        "--name",
        "attacks",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("installed attacks") && stdout.contains("read_path"),
        "{stdout}"
    );
    let blobs: Vec<_> = std::fs::read_dir(s.home.path().join("blobs"))
        .unwrap()
        .collect();
    assert_eq!(blobs.len(), 1);

    let out = s.paddock(&["plugin", "list"]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("attacks"));

    let out = s.paddock(&["plugin", "inspect", "attacks"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("sha256")
            && stdout.contains("wasi:filesystem/preopens")
            && stdout.contains("sneaky_write"),
        "{stdout}"
    );
    let out = s.paddock(&["plugin", "inspect", "builtin:fs"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("read-only: true"));

    // An installed plugin is usable from a preset by name.
    let preset = s.file("p.toml");
    std::fs::write(&preset, "[plugins.attacks]\nsource = \"attacks\"\nmounts = [{ host = \".\", guest = \"/workspace\" }]\n").unwrap();
    let (code, out) = s.json(&[
        "tool",
        "call",
        "read_path",
        r#"{"path":"notes.txt"}"#,
        "--preset",
        preset.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{out}");

    let out = s.paddock(&["plugin", "remove", "attacks"]);
    assert!(out.status.success());
    assert_eq!(
        std::fs::read_dir(s.home.path().join("blobs"))
            .unwrap()
            .count(),
        0
    );
    let out = s.paddock(&["plugin", "remove", "attacks"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no installed plugin is named `attacks`")
    );
}

#[test]
fn an_invalid_plugin_is_refused_and_nothing_is_stored() {
    let s = Sandbox::new();
    let junk = s.file("junk.wasm");
    std::fs::write(&junk, b"definitely not wasm").unwrap();
    let out = s.paddock(&["plugin", "install", junk.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not a WebAssembly component") && stderr.contains("nothing was installed"),
        "{stderr}"
    );
    assert!(!s.home.path().join("blobs").exists());
    assert!(!s.home.path().join("installed").exists());
}

#[test]
fn a_sha256_pin_that_does_not_match_refuses_the_plugin() {
    let s = Sandbox::new();
    let preset = s.file("pinned.toml");
    std::fs::write(
        &preset,
        format!(
            "[plugins.fs]\nsource = \"builtin:fs\"\nsha256 = \"{}\"\n",
            "0".repeat(64)
        ),
    )
    .unwrap();
    let (code, out) = s.json(&[
        "tool",
        "call",
        "list_dir",
        "{}",
        "--preset",
        preset.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 2);
    let message = out["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&"0".repeat(64)) && message.contains("has SHA-256"),
        "{message}"
    );
}

#[test]
fn compiled_plugins_are_cached_outside_every_mount() {
    let s = Sandbox::new();
    let (code, _) = s.json(&["tool", "call", "list_dir", "{}", "--json"]);
    assert_eq!(code, 0);
    let cached: Vec<_> = std::fs::read_dir(s.home.path().join("cache"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
        .collect();
    assert_eq!(cached.len(), 2, "fs and search are compiled once each");
}

#[test]
fn the_sdk_walkthrough_plugin_installs_and_runs() {
    let s = Sandbox::new();
    let wasm = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/target/wasm32-wasip2/release/word_count.wasm");
    let out = s.paddock(&[
        "plugin",
        "install",
        wasm.to_str().unwrap(),
        "--name",
        "word-count",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let preset = s.file("wc.toml");
    std::fs::write(&preset, "[plugins.word-count]\nsource = \"word-count\"\nmounts = [{ host = \".\", guest = \"/workspace\" }]\n").unwrap();
    let (code, out) = s.json(&[
        "tool",
        "call",
        "count_words",
        r#"{"path":"notes.txt"}"#,
        "--preset",
        preset.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["content"], "3 words");
}

#[test]
fn preset_list_shows_project_presets_before_the_shipped_ones() {
    let s = Sandbox::new();
    let dir = s.file(".paddock/presets");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("mine.toml"),
        "description = \"my own\"\n[plugins.fs]\nsource = \"builtin:fs\"\n",
    )
    .unwrap();
    let out = s.paddock(&["preset", "list"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("mine") && lines[0].contains("my own"),
        "{text}"
    );
    for name in ["default", "coding", "review", "untrusted"] {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(name) && l.contains("[embedded]")),
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
            .contains(&"git".into())
    );
    let hooks = shown["hooks"].as_array().unwrap();
    assert_eq!(hooks[0]["name"], "protect-paths");
    assert_eq!(hooks[0]["on_error"], "deny");
    assert_eq!(hooks[1]["on_error"], "keep");
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
fn the_review_preset_denies_every_write_through_its_hook() {
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
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("hook `protect-paths`"),
        "{out}"
    );
    assert!(!s.file("x.txt").exists());
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
