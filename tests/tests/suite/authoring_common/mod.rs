//! What the authoring tests share: scaffolding with `paddock plugin new` outside the
//! repository, running the README's commands verbatim, and one call through a scripted
//! `paddock run` (see `authoring.rs` for how builds stay fast without network).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::agent_common::{Project, call_step, paddock_bin, text};
use paddock_tests::scripted::{Script, ScriptedServer, Step, Turn};
use serde_json::Value;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn release_dir() -> PathBuf {
    repo().join("plugins/target/wasm32-wasip2/release")
}

/// Where `.ci/authoring-tools.sh` puts componentize-js and componentize-py.
pub fn tools_dir() -> PathBuf {
    let dir = match std::env::var_os("PADDOCK_AUTHORING_TOOLS").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/paddock/authoring-tools"),
    };
    for tool in [
        "js/node_modules/.bin/componentize-js",
        "py/bin/componentize-py",
    ] {
        assert!(
            dir.join(tool).exists(),
            "{} is missing: install the JavaScript and Python toolchains with `bash .ci/authoring-tools.sh`",
            dir.join(tool).display()
        );
    }
    dir
}

/// `paddock plugin new ARGS` in `parent`; returns the project directory and the commands it
/// printed (setup, build, install, try).
pub fn scaffold(project: &Project, parent: &Path, args: &[&str]) -> (PathBuf, Vec<String>) {
    let dir = parent.join(args[0]);
    let dir_arg = dir.to_str().unwrap().to_string();
    let mut all = vec!["plugin", "new"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--dir", &dir_arg]);
    let out = project.command(&all).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    let commands: Vec<String> = printed
        .split_once("next, in ")
        .expect("plugin new prints the next commands")
        .1
        .lines()
        .skip(1)
        .map(|l| l.trim().to_string())
        .collect();
    assert!(!dir.starts_with(repo().canonicalize().unwrap()));
    (dir, commands)
}

/// Runs one README command in the project directory with paddock on PATH.
pub fn sh(project: &Project, dir: &Path, command: &str) -> std::process::Output {
    let bin_dir = paddock_bin().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("sh")
        .args(["-c", command])
        .current_dir(dir)
        .env("PATH", path)
        .env("PADDOCK_HOME", project.home.path())
        .env("NO_COLOR", "1")
        // Offline: the crates are in the local registry cache already.
        .env("CARGO_NET_OFFLINE", "true")
        // The flags plugins/.cargo/config.toml gives the shared target's dependencies.
        .env(
            "CARGO_TARGET_WASM32_WASIP2_RUSTFLAGS",
            "-C target-feature=+simd128",
        )
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR")
        .output()
        .expect("sh runs")
}

/// Runs the README's build, install and try commands (not its setup, see the module doc).
pub fn build_install_try(
    project: &Project,
    dir: &Path,
    commands: &[String],
) -> std::process::Output {
    let (setup, rest) = match commands.len() {
        4 => (Some(&commands[0]), &commands[1..]),
        _ => (None, commands),
    };
    if let Some(setup) = setup {
        assert!(
            setup.contains("npm install") || setup.contains("pip install"),
            "{setup}"
        );
    }
    let [build, install, try_it] = rest else {
        panic!("expected build, install and try commands: {commands:?}");
    };
    for command in [build, install] {
        let out = sh(project, dir, command);
        assert!(out.status.success(), "`{command}` failed:\n{}", text(&out));
    }
    sh(project, dir, try_it)
}

/// Runs the `paddock run --model-script` line of the README's "Drive it through the loop"
/// section verbatim; returns what it printed and the new session's `tool/result` data.
pub fn drive_through_loop(project: &Project, dir: &Path) -> (String, Value) {
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let section = readme
        .split_once("## Drive it through the loop")
        .expect("a tool project's README drives the tool through the loop")
        .1;
    let command = section
        .lines()
        .find(|l| l.starts_with("paddock run --model-script"))
        .expect("the section gives the paddock run line");
    let before = project.sessions();
    let out = sh(project, dir, command);
    let shown = text(&out);
    assert!(out.status.success(), "`{command}` failed:\n{shown}");
    let session = project
        .sessions()
        .into_iter()
        .find(|s| !before.contains(s))
        .unwrap_or_else(|| panic!("no session: {shown}"));
    let events = project.events(&session);
    let start = &events[0]["data"];
    assert!(
        start["model_script"]
            .as_str()
            .is_some_and(|s| s.contains("[[turn]]")),
        "the start records the script's text: {start}"
    );
    let result = events
        .into_iter()
        .find(|e| e["type"] == "tool/result")
        .unwrap_or_else(|| panic!("no tool/result: {shown}"))["data"]
        .clone();
    (shown, result)
}

/// A scripted model makes one call through `paddock run` with `preset`; returns the
/// `tool/result` event's data.
pub async fn call_through_run(project: &Project, preset: &Path, tool: &str, args: &str) -> Value {
    let server = ScriptedServer::start(Script {
        steps: vec![
            call_step("c1", tool, args),
            Step::Reply(Turn::text(&["done"])),
        ],
    })
    .await
    .expect("scripted server");
    let url = server.openai_base_url();
    let before = project.sessions();
    let out = project
        .paddock(&[
            "run",
            "use the tool",
            "--base-url",
            &url,
            "--model",
            "scripted",
            "--preset",
            preset.to_str().unwrap(),
        ])
        .await;
    let session = project
        .sessions()
        .into_iter()
        .find(|s| !before.contains(s))
        .unwrap_or_else(|| panic!("no session: {}", text(&out)));
    project
        .events(&session)
        .into_iter()
        .find(|e| e["type"] == "tool/result")
        .unwrap_or_else(|| panic!("no tool/result: {}", text(&out)))["data"]
        .clone()
}

pub fn link_shared_target(dir: &Path) {
    std::os::unix::fs::symlink(repo().join("plugins/target"), dir.join("target")).unwrap();
    std::fs::copy(repo().join("plugins/Cargo.lock"), dir.join("Cargo.lock")).unwrap();
}

/// The hook's own `config` schema at work: a misspelt key in the scaffolded preset is refused
/// before anything runs, by `preset check` and by a start alike (exit 2), with the line, the
/// key and the closest valid one, as the hook declares them (`config-schema`).
pub fn a_config_typo_is_refused_before_a_start(project: &Project, preset: &Path, label: &str) {
    let typo = std::fs::read_to_string(preset)
        .unwrap()
        .replace("deny_words = [", "deny_wrods = [");
    std::fs::write(preset, typo).unwrap();
    let preset = preset.to_str().unwrap();
    for args in [
        &["preset", "check", preset][..],
        &["tool", "list", "--preset", preset][..],
    ] {
        let out = project.command(args).output().unwrap();
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(2), "{label} {args:?}: {shown}");
        assert!(
            shown.contains("preset.toml:19:12: hooks[0].config.deny_wrods: hook `")
                && shown.contains("has no config key `deny_wrods` (did you mean `deny_words`?)")
                && shown.contains("fix: use one of its keys: deny_words (array), note (string)"),
            "{label} {args:?}: {shown}"
        );
    }
}
