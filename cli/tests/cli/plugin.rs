//! `paddock plugin install|list|inspect|remove` end to end (S8): the store, pins, the
//! compiled-code cache and the SDK walk-through plugin.

use std::path::Path;

use super::common::*;

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
    let fs = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(fs.contains("read-only: true"));
    // The SDK binds the capabilities, but a plugin imports only what it calls (S6).
    assert!(
        !fs.contains("paddock:plugin/exec") && !fs.contains("paddock:plugin/http"),
        "{fs}"
    );
    let shell = s.paddock(&["plugin", "inspect", "builtin:shell"]);
    let shell = String::from_utf8_lossy(&shell.stdout).into_owned();
    assert!(shell.contains("paddock:plugin/exec@0.1.0"), "{shell}");
    assert!(!shell.contains("paddock:plugin/http"), "{shell}");

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
    let cached = || {
        std::fs::read_dir(s.home.path().join("cache"))
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
            .count()
    };
    let (code, _) = s.json(&["tool", "call", "list_dir", "{}", "--json"]);
    assert_eq!(code, 0);
    // S8: the built-ins are registered from their descriptions; a call compiles only the
    // plugin it needs (fs), not search.
    assert_eq!(cached(), 1, "only fs is compiled for list_dir");
    let (code, _) = s.json(&["tool", "call", "glob", r#"{"pattern":"*"}"#, "--json"]);
    assert_eq!(code, 0);
    assert_eq!(cached(), 2, "fs and search are compiled once each");
    let (code, _) = s.json(&["tool", "call", "list_dir", "{}", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(cached(), 2, "a cached plugin is not compiled again");
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
