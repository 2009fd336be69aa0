//! `plugin new` writes what the README and the examples say.

use super::*;

fn new_project(name: &str, kind: Kind, lang: Lang) -> (tempfile::TempDir, Created) {
    let parent = tempfile::tempdir().unwrap();
    let created = create(&Request {
        name: name.into(),
        kind,
        lang,
        dir: parent.path().join(name),
        data_dir: parent.path().join("data"),
    })
    .unwrap();
    (parent, created)
}

#[test]
fn the_js_and_python_examples_are_what_plugin_new_writes() {
    for (name, lang, file, example) in [
        ("text-stats", Lang::Js, "src/tool.js", JS_EXAMPLE),
        ("word-freq", Lang::Python, "app.py", PY_EXAMPLE),
    ] {
        let (_parent, created) = new_project(name, Kind::Tool, lang);
        let written = std::fs::read_to_string(created.dir.join(file)).unwrap();
        assert_eq!(
            written, example.1,
            "{name}: {file} differs from the example"
        );
    }
    // Another name is the example with its tool renamed.
    let (_parent, created) = new_project("js-stats", Kind::Tool, Lang::Js);
    let written = std::fs::read_to_string(created.dir.join("src/tool.js")).unwrap();
    assert!(written.contains("const NAME = \"js_stats\";"), "{written}");
    assert!(!written.contains("text_stats"), "{written}");
}

#[test]
fn js_and_python_hooks_build_for_world_configured_hook() {
    let (_parent, created) = new_project("guard", Kind::Hook, Lang::Js);
    let package = std::fs::read_to_string(created.dir.join("package.json")).unwrap();
    assert!(
        package.contains("src/hook.js --wit wit --world-name configured-hook "),
        "{package}"
    );
    assert!(created.dir.join("src/hook.js").is_file());
    let (_parent, created) = new_project("guard", Kind::Hook, Lang::Python);
    assert!(
        created
            .commands
            .iter()
            .any(|c| c.contains("-w configured-hook componentize app")),
        "{:?}",
        created.commands
    );
    let app = std::fs::read_to_string(created.dir.join("app.py")).unwrap();
    assert!(
        app.contains("class Hooks(exports.Hooks)")
            && app.contains("class HookConfig(exports.HookConfig)")
            && !app.contains("{{"),
        "{app}"
    );
}
