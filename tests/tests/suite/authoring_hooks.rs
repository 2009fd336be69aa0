//! Hooks in JavaScript and Python from `paddock plugin new NAME --hook --lang js|python`
//! (H2, S1, S8): scaffolded outside the repository, built by the README's commands
//! with componentize-js / componentize-py (the toolchains `.ci/authoring-tools.sh` installs,
//! symlinked in), installed with `plugin install`, inspected, and run as pre- and post-hooks
//! in a scripted `paddock run`: a call whose arguments mention a `deny_words` word is denied
//! by the hook, another runs and carries the post-hook's context; the `config` schema each
//! declares refuses a misspelt key before a start.

use crate::agent_common::{Project, text};
use crate::authoring_common::*;

async fn hook_in(lang: &str, name: &str, toolchain: &str, link: &str) {
    let tools = tools_dir();
    let project = Project::new(&[
        ("notes.txt", "one two\nthree\n"),
        ("secret.txt", "s3cret\n"),
    ]);
    let parent = tempfile::tempdir().unwrap();
    let (dir, commands) = scaffold(&project, parent.path(), &[name, "--hook", "--lang", lang]);
    std::os::unix::fs::symlink(tools.join(toolchain), dir.join(link)).unwrap();

    // The README's try command: reading secret.txt is denied by the hook's deny_words.
    let out = build_install_try(&project, &dir, &commands);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{lang}: {shown}");
    assert!(
        shown.contains("DENIED") && shown.contains("mention `secret`"),
        "{lang}: {shown}"
    );
    let file = name.replace('-', "_");
    let inspect = project
        .command(&["plugin", "inspect", &file])
        .output()
        .unwrap();
    let shown = text(&inspect);
    assert!(
        shown.contains("hook") && shown.contains("pre-tool-use"),
        "{lang}: {shown}"
    );

    // What the model meets in a session.
    let preset = dir.join("preset.toml");
    let denied =
        call_through_run(&project, &preset, "read_file", r#"{"path": "secret.txt"}"#).await;
    assert_eq!(denied["code"], "DENIED", "{lang}: {denied}");
    assert!(
        denied
            .to_string()
            .contains(&format!("deny_words of hook {name}")),
        "{lang}: {denied}"
    );
    let allowed =
        call_through_run(&project, &preset, "read_file", r#"{"path": "notes.txt"}"#).await;
    assert!(
        allowed["content"].as_str().unwrap_or("").contains("three"),
        "{lang}: {allowed}"
    );
    assert!(
        allowed
            .to_string()
            .contains(&format!("checked by {name} (read_file)")),
        "{lang}: {allowed}"
    );

    // A config key the hook does not know is refused before a start, from its own schema.
    a_config_typo_is_refused_before_a_start(&project, &preset, lang);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_js_hook_from_plugin_new_builds_installs_and_guards_a_session() {
    hook_in("js", "js-guard", "js/node_modules", "node_modules").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_hook_from_plugin_new_builds_installs_and_guards_a_session() {
    hook_in("python", "py-guard", "py", ".venv").await;
}
