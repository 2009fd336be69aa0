//! What a preset inherits through `extends` (P1, H1), through the real binary: a base's hooks
//! are kept when the preset adds its own (dropping one is said by name and warned about),
//! `preset show` names the file that set each hook, grant and tool selection, `KEY = false`
//! clears an inherited value (a keyless local server under `extends = "coding"`), a user's
//! own `default.toml` replaces the shipped default, and a mistake under `extends` is shown at
//! the line of the user's file that has it.

use std::process::{Output, Stdio};

use crate::agent_common::{Project, text};
use paddock_tests::scripted::{Script, ScriptedServer, Step, Turn};
use serde_json::Value;

fn run(project: &Project, args: &[&str]) -> Output {
    let mut cmd = project.command(args);
    cmd.env("XDG_CONFIG_HOME", project.home.path().join("config"))
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null());
    cmd.output().expect("paddock runs")
}

const MINE: &str = "extends = \"coding\"\n\n[[hooks]]\nsource = \"builtin:audit\"\non = \"post\"\n";

fn write_env(project: &Project, preset: &str) -> Value {
    let out = run(
        project,
        &[
            "tool",
            "call",
            "write_file",
            r#"{"path": ".env", "content": "TOKEN=x\n"}"#,
            "--preset",
            preset,
            "--json",
        ],
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
}

#[test]
fn a_preset_adding_a_hook_keeps_the_base_guards() {
    let project = Project::new(&[("notes.txt", "one\n")]);
    std::fs::write(project.dir.path().join("mine.toml"), MINE).unwrap();
    let checked = run(&project, &["preset", "check", "mine.toml"]);
    let said = text(&checked);
    assert_eq!(checked.status.code(), Some(0), "{said}");
    assert!(
        said.contains("3 hooks") && !said.contains("warning"),
        "{said}"
    );

    let denied = write_env(&project, "mine.toml");
    assert_eq!(denied["ok"], false, "{denied}");
    assert_eq!(denied["error"]["code"], "DENIED", "{denied}");
    assert!(!project.dir.path().join(".env").exists());

    // Each effective hook names the file that set it.
    let shown = run(&project, &["preset", "show", "mine.toml"]);
    let value: Value = serde_json::from_slice(&shown.stdout).expect("show prints JSON");
    let hooks: Vec<(String, String)> = value["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["name"].as_str().unwrap().to_string(),
                h["set_by"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect();
    assert_eq!(hooks.len(), 3, "{hooks:?}");
    assert_eq!(hooks[0].0, "protect-paths");
    assert!(
        hooks[0].1.starts_with("<embedded preset coding>:"),
        "{hooks:?}"
    );
    assert_eq!(hooks[1].0, "redact-secrets");
    assert_eq!(hooks[2], ("audit".to_string(), "mine.toml:3:1".to_string()));
    let shell = value["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "shell")
        .unwrap();
    assert!(
        shell["set_by"]["grants.exec"]
            .as_str()
            .unwrap()
            .starts_with("<embedded preset coding>:"),
        "{shell}"
    );
    assert!(
        value["tools"]["set_by"]["aliases.Read"]
            .as_str()
            .unwrap()
            .starts_with("<embedded preset coding>:"),
        "{value}"
    );
}

#[test]
fn dropping_a_base_hook_is_named_and_warned_about() {
    let project = Project::new(&[("notes.txt", "one\n")]);
    let preset = MINE.replacen("\n\n", "\nhooks_drop = [\"protect-paths\"]\n\n", 1);
    std::fs::write(project.dir.path().join("drop.toml"), &preset).unwrap();
    let checked = run(&project, &["preset", "check", "drop.toml"]);
    let said = text(&checked);
    assert_eq!(checked.status.code(), Some(0), "{said}");
    assert!(
        said.contains("warning: drop.toml:2:15: hooks_drop[0]: drops the base's hook `protect-paths` (builtin:protect-paths (pre)"),
        "{said}"
    );
    assert!(said.contains("2 hooks, 1 warning(s)"), "{said}");
    let written = write_env(&project, "drop.toml");
    assert_eq!(written["ok"], true, "{written}");

    // A name the base has no hook of is an error, with the closest.
    std::fs::write(
        project.dir.path().join("typo.toml"),
        "extends = \"coding\"\nhooks_drop = [\"protect-path\"]\n",
    )
    .unwrap();
    let checked = run(&project, &["preset", "check", "typo.toml"]);
    let said = text(&checked);
    assert_eq!(checked.status.code(), Some(2), "{said}");
    assert!(
        said.contains("typo.toml:2:15: hooks_drop[0]: hooks_drop names `protect-path`, but the base preset has no hook of that name (did you mean `protect-paths`?)"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn false_clears_an_inherited_key_so_a_keyless_local_server_starts() {
    let project = Project::new(&[("notes.txt", "one\n")]);
    let server = ScriptedServer::start(Script {
        steps: vec![
            Step::Reply(Turn::text(&["hello"])),
            Step::Reply(Turn::text(&["hello"])),
        ],
    })
    .await
    .expect("scripted server");
    let url = server.openai_base_url();
    let local = |key: &str| {
        format!(
            "extends = \"coding\"\n\n[model]\nmodel = \"scripted\"\nbase_url = \"{url}\"\n{key}\n"
        )
    };
    let run_with = |name: &str, key: &str| {
        std::fs::write(project.dir.path().join(name), local(key)).unwrap();
        let mut cmd = project.command(&["run", "--preset", name, "hi"]);
        cmd.env("XDG_CONFIG_HOME", project.home.path().join("config"))
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null());
        async move {
            tokio::task::spawn_blocking(move || cmd.output().expect("paddock runs"))
                .await
                .unwrap()
        }
    };
    // Inherited: coding's OPENAI_API_KEY, unset here.
    let out = run_with("inherits.toml", "").await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("OPENAI_API_KEY"), "{}", text(&out));
    // An empty string is refused where it is written, with the spelling that clears.
    let out = run_with("empty.toml", "api_key_env = \"\"").await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out)
            .contains("empty.toml:6:1: model.api_key_env: `model.api_key_env` is an empty string")
            && text(&out).contains("`model.api_key_env = false`"),
        "{}",
        text(&out)
    );
    // Cleared: no key, and the local server answers.
    let out = run_with("keyless.toml", "api_key_env = false").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("hello"), "{}", text(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        !format!("{:?}", requests[0])
            .to_lowercase()
            .contains("bearer"),
        "no key sent: {:?}",
        requests[0]
    );
}

#[test]
fn a_user_default_preset_replaces_the_shipped_default() {
    let project = Project::new(&[("notes.txt", "one\n")]);
    let dir = project.home.path().join("config/paddock/presets");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("default.toml"),
        "name = \"my-default\"\n[plugins.fs]\nsource = \"builtin:fs\"\n\
         mounts = [{ host = \".\", guest = \"/workspace\" }]\n[tools]\nenable = [\"read_file\"]\n",
    )
    .unwrap();
    let listed = run(&project, &["tool", "list"]);
    let said = String::from_utf8_lossy(&listed.stdout).to_string();
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed));
    assert!(
        said.contains("read_file") && !said.contains("grep"),
        "{said}"
    );
    let presets = text(&run(&project, &["preset", "list"]));
    assert!(
        presets.contains(&format!("[user {}", dir.join("default.toml").display())),
        "{presets}"
    );
    // The session names the preset it uses and where it came from.
    let out = run(&project, &["run", "--demo", "look"]);
    assert!(
        text(&out).contains(&format!(
            "preset my-default (user {}",
            dir.join("default.toml").display()
        )),
        "{}",
        text(&out)
    );
}

/// Mistakes in a preset that extends `coding` are shown in the user's own file at the lines
/// that have them (not the merged preset's lines, which exist in no file), by `preset check`
/// and by a run alike.
#[test]
fn a_typo_under_extends_is_shown_at_its_own_line() {
    let project = Project::new(&[("notes.txt", "one\n")]);
    let rules = "# my rules\nextends = \"coding\"\n\n[plugins.fs]\ntimeout_sm = 10_000\nfuel = \"lots\"\n\n[approval]\nhigh = \"ask\"\n";
    std::fs::write(project.dir.path().join("rules.toml"), rules).unwrap();
    let path = project.dir.path().join("rules.toml");
    let path = path.to_str().unwrap();
    for args in [
        vec!["preset", "check", path],
        vec![
            "tool",
            "call",
            "read_file",
            r#"{"path":"notes.txt"}"#,
            "--preset",
            path,
        ],
    ] {
        let out = run(&project, &args);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(
            said.contains(&format!("{path}:5:1")) && said.contains("timeout_sm"),
            "{args:?}: the unknown key at rules.toml line 5: {said}"
        );
        assert!(said.contains("did you mean `timeout_ms`"), "{said}");
        assert!(
            said.contains(&format!("{path}:6:1")) && said.contains("fuel"),
            "{args:?}: the bad value at line 6: {said}"
        );
        // No line past the file's nine.
        for line in 10..200 {
            assert!(
                !said.contains(&format!("{path}:{line}:")),
                "{args:?}: line {line}: {said}"
            );
        }
    }
}
