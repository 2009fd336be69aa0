//! Authoring outside the repository (S1, S8, H2, P1): `paddock plugin new` in a
//! temporary directory, each project built by the commands its README gives (run verbatim
//! through `sh`), installed, called with `paddock tool call`, and called by a scripted model
//! through `paddock run`. Also the JavaScript and Python examples in `plugins/examples/`.
//!
//! Speed without network: a Rust project's `target` is a symlink to `plugins/target` and its
//! `Cargo.lock` a copy of `plugins/Cargo.lock`, so `cargo build --release` (offline) reuses the
//! dependencies `cargo xtask build-plugins` compiled; JavaScript and Python projects get the
//! toolchains `.ci/authoring-tools.sh` installed (`node_modules` and `.venv` symlinked to them)
//! instead of running their `npm install` / `pip install` line.

use crate::agent_common::{Project, text};
use crate::authoring_common::*;
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rust_tool_and_a_rust_hook_from_plugin_new_build_install_and_run() {
    let project = Project::new(&[
        ("notes.txt", "one two\nthree\n"),
        ("secret.txt", "s3cret\n"),
    ]);
    let parent = tempfile::tempdir().unwrap();

    // A tool: the README's commands, then the model calls it.
    let (tool_dir, commands) = scaffold(&project, parent.path(), &["count-it"]);
    assert!(
        std::fs::read_to_string(tool_dir.join("Cargo.toml"))
            .unwrap()
            .contains("[patch.crates-io]")
    );
    assert!(tool_dir.join("wit/worlds.wit").is_file());
    link_shared_target(&tool_dir);
    let out = build_install_try(&project, &tool_dir, &commands);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains(" lines, ") && shown.contains(" words"),
        "{shown}"
    );
    let result = call_through_run(
        &project,
        &tool_dir.join("preset.toml"),
        "count_it",
        r#"{"path": "notes.txt"}"#,
    )
    .await;
    assert_eq!(result["content"], "2 lines, 3 words", "{result}");
    // The README's model script drives the tool through the loop, and its second turn
    // repeats the result the first call got.
    let (shown, result) = drive_through_loop(&project, &tool_dir);
    let counted = result["content"].as_str().unwrap_or_default();
    assert!(counted.ends_with(" words"), "{result}");
    assert!(
        shown.contains(&format!("count_it answered: {counted}")),
        "{shown}"
    );

    // A hook: its try command is denied by the hook's config; a scripted run sees the denial,
    // and an allowed call carries the post-hook's context.
    let (hook_dir, commands) = scaffold(&project, parent.path(), &["guard", "--hook"]);
    link_shared_target(&hook_dir);
    let out = build_install_try(&project, &hook_dir, &commands);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains("DENIED") && shown.contains("mention `secret`"),
        "{shown}"
    );
    let inspect = project
        .command(&["plugin", "inspect", "guard"])
        .output()
        .unwrap();
    let shown = text(&inspect);
    assert!(
        shown.contains("hook") && shown.contains("pre-tool-use"),
        "{shown}"
    );
    assert!(shown.contains("paddock:plugin/hook-types"), "{shown}");
    let preset = hook_dir.join("preset.toml");
    let denied =
        call_through_run(&project, &preset, "read_file", r#"{"path": "secret.txt"}"#).await;
    assert_eq!(denied["code"], "DENIED", "{denied}");
    let allowed =
        call_through_run(&project, &preset, "read_file", r#"{"path": "notes.txt"}"#).await;
    assert!(
        allowed["content"].as_str().unwrap().contains("three"),
        "{allowed}"
    );
    assert!(
        allowed.to_string().contains("checked by guard"),
        "{allowed}"
    );
    a_config_typo_is_refused_before_a_start(&project, &preset, "rust");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_and_python_tools_from_plugin_new_build_with_their_toolchains_and_run() {
    let tools = tools_dir();
    let project = Project::new(&[]);
    let parent = tempfile::tempdir().unwrap();

    let (js_dir, commands) = scaffold(&project, parent.path(), &["js-stats", "--lang", "js"]);
    std::os::unix::fs::symlink(tools.join("js/node_modules"), js_dir.join("node_modules")).unwrap();
    let out = build_install_try(&project, &js_dir, &commands);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("1 lines, 3 words, 11 characters"),
        "{}",
        text(&out)
    );
    let result = call_through_run(
        &project,
        &js_dir.join("preset.toml"),
        "js_stats",
        r#"{"text": "a b\nc"}"#,
    )
    .await;
    assert_eq!(
        result["content"], "2 lines, 3 words, 5 characters",
        "{result}"
    );
    // The model script's call takes its text from the task: "two words two".
    let (shown, result) = drive_through_loop(&project, &js_dir);
    assert_eq!(
        result["content"], "1 lines, 3 words, 13 characters",
        "{result}"
    );
    assert!(
        shown.contains("js_stats answered: 1 lines, 3 words, 13 characters"),
        "{shown}"
    );

    let (py_dir, commands) = scaffold(&project, parent.path(), &["py-freq", "--lang", "python"]);
    std::os::unix::fs::symlink(tools.join("py"), py_dir.join(".venv")).unwrap();
    let out = build_install_try(&project, &py_dir, &commands);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("two 2\none 1"), "{}", text(&out));
    let result = call_through_run(
        &project,
        &py_dir.join("preset.toml"),
        "py_freq",
        r#"{"text": "b a b", "top": 1}"#,
    )
    .await;
    assert_eq!(result["content"], "b 2", "{result}");
}

#[test]
fn the_js_and_python_examples_are_built_and_answer_tool_calls() {
    tools_dir();
    let project = Project::new(&[]);
    for (component, tool, args, expected) in [
        (
            "js_text_stats.wasm",
            "text_stats",
            r#"{"text": "x y"}"#,
            "1 lines, 2 words, 3 characters",
        ),
        (
            "py_word_freq.wasm",
            "word_freq",
            r#"{"text": "y x y"}"#,
            "y 2\nx 1",
        ),
    ] {
        let wasm = release_dir().join(component);
        assert!(
            wasm.is_file(),
            "{} is missing: run `cargo xtask build-plugins`",
            wasm.display()
        );
        let out = project
            .command(&["plugin", "install", wasm.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        // Not a terminal, yet the long first compile of a JS or Python runtime is announced.
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains("compiling and checking the component (")
                && said.contains("takes up to a minute the first time"),
            "{said}"
        );
        let name = component.trim_end_matches(".wasm");
        let preset = project.dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &preset,
            format!("[plugins.{name}]\nsource = \"{name}\"\n[approval]\nlow = \"allow\"\n"),
        )
        .unwrap();
        let out = project
            .command(&[
                "tool",
                "call",
                tool,
                args,
                "--preset",
                preset.to_str().unwrap(),
                "--json",
            ])
            .output()
            .unwrap();
        let json: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
        assert_eq!(json["content"], expected, "{json}");
    }
}
