//! `paddock plugin install|inspect` with hooks, install naming, and presets that name hooks
//! (S8, H2, P1): the world is detected, a hook is named in a preset like a tool
//! plugin, a relative `source` is relative to the preset file, and unknown names get the
//! closest installed one.

use std::path::{Path, PathBuf};

use super::common::*;

fn release(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/target/wasm32-wasip2/release")
        .join(file)
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn install_names_by_the_file_name_unchanged_and_says_what_it_replaces() {
    let s = Sandbox::new();
    let wasm = release("word_count.wasm");
    let out = s.paddock(&["plugin", "install", wasm.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("installed word_count (tool plugin, "),
        "{}",
        stdout(&out)
    );
    assert!(!stdout(&out).contains("replaces"), "{}", stdout(&out));

    // The same name again: other tools, so a widening that needs a yes, refused without one
    // (stdin is not a terminal) and nothing changed.
    let other = release("hostile_attacks.wasm");
    let out = s.paddock(&[
        "plugin",
        "install",
        other.to_str().unwrap(),
        "--name",
        "word_count",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("rerun with --accept-widening"),
        "{}",
        stderr(&out)
    );
    // Accepted: replaced, and said so.
    let out = s.paddock(&[
        "plugin",
        "install",
        other.to_str().unwrap(),
        "--name",
        "word_count",
        "--accept-widening",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(
        shown.contains("replaces the tool plugin `word_count` installed from"),
        "{shown}"
    );
    assert!(shown.contains("word_count.wasm"), "{shown}");
    // The replaced bytes are gone; only the new blob is kept.
    let blobs = std::fs::read_dir(s.home.path().join("blobs"))
        .unwrap()
        .count();
    assert_eq!(blobs, 1);

    // A typo gets the closest installed name, wherever a plugin is named.
    let out = s.paddock(&["plugin", "inspect", "word_cuont"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("did you mean `word_count`?"),
        "{}",
        stderr(&out)
    );
    let out = s.paddock(&["plugin", "remove", "wordcount"]);
    assert!(
        stderr(&out).contains("did you mean `word_count`?"),
        "{}",
        stderr(&out)
    );
    let preset = s.file("p.toml");
    std::fs::write(&preset, "[plugins.wc]\nsource = \"word_cont\"\n").unwrap();
    let out = s.paddock(&["tool", "list", "--preset", preset.to_str().unwrap()]);
    assert!(
        stderr(&out).contains("did you mean `word_count`?"),
        "{}",
        stderr(&out)
    );
    // Nothing close: no guess.
    let out = s.paddock(&["plugin", "inspect", "zzzzzz"]);
    assert!(!stderr(&out).contains("did you mean"), "{}", stderr(&out));
}

#[test]
fn a_hook_installs_inspects_and_is_named_in_a_preset_like_a_tool() {
    let s = Sandbox::new();
    let wasm = release("protect_paths.wasm");
    let out = s.paddock(&[
        "plugin",
        "install",
        wasm.to_str().unwrap(),
        "--name",
        "guard",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("installed guard (hook, "),
        "{}",
        stdout(&out)
    );
    let out = s.paddock(&["plugin", "list"]);
    assert!(stdout(&out).contains("(hook)"), "{}", stdout(&out));

    let out = s.paddock(&["plugin", "inspect", "guard"]);
    let shown = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(shown.contains("hook  sha256"), "{shown}");
    assert!(
        shown.contains("events: pre-tool-use, post-tool-use"),
        "{shown}"
    );
    assert!(shown.contains("paddock:plugin/hook-types@0.1.0"), "{shown}");
    assert!(!shown.contains("paddock:plugin/exec"), "{shown}");

    // Named by its installed name: the SDK hook parses its typed config and denies.
    let preset = s.file("guarded.toml");
    std::fs::write(
        &preset,
        "[plugins.fs]\nsource = \"builtin:fs\"\nmounts = [{ host = \".\", guest = \"/workspace\", mode = \"rw\" }]\n\
         [approval]\nmedium = \"allow\"\n\
         [[hooks]]\nsource = \"guard\"\non = \"pre\"\nconfig = { globs = [\"notes.*\"] }\n",
    )
    .unwrap();
    let args = r#"{"path":"notes.txt","content":"x"}"#;
    let out = s.paddock(&[
        "tool",
        "call",
        "write_file",
        args,
        "--preset",
        preset.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("matches the protected glob \"notes.*\""),
        "{}",
        stderr(&out)
    );

    // A config the hook's declared schema refuses stops the call before it starts (exit 2),
    // naming the key, the closest valid one and where it is written.
    std::fs::write(
        &preset,
        std::fs::read_to_string(&preset)
            .unwrap()
            .replace("globs = [\"notes.*\"]", "globz = 1"),
    )
    .unwrap();
    let out = s.paddock(&[
        "tool",
        "call",
        "write_file",
        args,
        "--preset",
        preset.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "hooks[0].config.globz: hook `guard` has no config key `globz` (did you mean `globs`?)"
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(s.file("notes.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );
}

#[test]
fn a_relative_hook_source_is_relative_to_the_preset_file_not_the_working_directory() {
    let s = Sandbox::new();
    let presets = s.work.path().join("conf");
    std::fs::create_dir_all(presets.join("hooks")).unwrap();
    std::fs::copy(
        release("protect_paths.wasm"),
        presets.join("hooks/guard.wasm"),
    )
    .unwrap();
    let preset = presets.join("p.toml");
    std::fs::write(
        &preset,
        "[plugins.fs]\nsource = \"builtin:fs\"\nmounts = [{ host = \".\", guest = \"/workspace\", mode = \"rw\" }]\n\
         [approval]\nmedium = \"allow\"\n\
         [[hooks]]\nsource = \"hooks/guard.wasm\"\non = \"pre\"\nconfig = { deny_writes = true }\n",
    )
    .unwrap();
    // From the working directory (where hooks/guard.wasm does not exist) the hook still loads.
    let args = r#"{"path":"new.txt","content":"x"}"#;
    let out = s.paddock(&[
        "tool",
        "call",
        "write_file",
        args,
        "--preset",
        "conf/p.toml",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("allows no writes"),
        "{}",
        stderr(&out)
    );
    assert!(!s.file("new.txt").exists());
}
