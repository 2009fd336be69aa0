//! One verdict for every command (P1): each preset `paddock preset check` rejects is refused
//! by `run`, `chat` (through a pipe), `resume`, `tool call`, `tool list`, `tool batch` and
//! `mcp serve` alike, with exit 2 and the same `file:line:column` message, before anything
//! runs; a preset's warnings are shown once at a start, and as events under `run --json`; and
//! no tool is lost without a word (a plugin whose tools the `[tools]` lists hide, a tool of an
//! installed plugin the preset does not load).

use std::process::{Output, Stdio};

use crate::agent_common::{Project, text};
use serde_json::Value;

/// A preset `check` rejects, and a line of `check`'s error it must print.
struct Rejected {
    what: &'static str,
    text: String,
    says: &'static str,
}

const FS: &str =
    "[plugins.fs]\nsource = \"builtin:fs\"\nmounts = [{ host = \".\", guest = \"/workspace\" }]\n";

fn rejected(home: &str) -> Vec<Rejected> {
    vec![
        Rejected {
            what: "two mounts on /workspace",
            text: "[plugins.fs]\nsource = \"builtin:fs\"\nmounts = [\n  { host = \".\", guest = \"/workspace\" },\n  \
                   { host = \"empty\", guest = \"/workspace\" },\n]\n"
                .into(),
            says: "bad.toml:5:21: plugins.fs.mounts[1].guest: plugins.fs.mounts[1] and plugins.fs.mounts[0] are both mounted at /workspace",
        },
        Rejected {
            what: "a misspelled tools.enable entry",
            text: format!("{FS}[tools]\nenable = [\"read_file\", \"red_file\"]\n"),
            says: "bad.toml:5:24: tools.enable[1]: no loaded plugin provides a tool `red_file` (did you mean `read_file`?)",
        },
        Rejected {
            what: "no tools",
            text: format!("{FS}[tools]\nenable = []\n"),
            says: "the preset gives the model no tools",
        },
        Rejected {
            what: "an unknown key",
            text: format!("{FS}timeout_sm = 10\n"),
            says: "bad.toml:4:1: unknown field `timeout_sm`",
        },
        Rejected {
            what: "an empty api_key_env",
            text: format!(
                "{FS}[model]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9\"\napi_key_env = \"\"\n"
            ),
            says: "bad.toml:8:1: model.api_key_env: `model.api_key_env` is an empty string",
        },
        Rejected {
            what: "an exec grant that reads the data directory",
            text: format!(
                "{FS}grants.exec = {{ allow = [\"ls\"], read = [{home:?}] }}\n"
            ),
            says: "plugins.fs.grants.exec.read[0]:",
        },
        Rejected {
            what: "a typo in a hook's config",
            text: format!(
                "{FS}\n[[hooks]]\nsource = \"builtin:protect-paths\"\non = \"pre\"\nconfig = {{ glob = [\".env\"] }}\n"
            ),
            says: "bad.toml:8:12: hooks[0].config.glob: hook `builtin:protect-paths` has no config key `glob` (did you mean `globs`?)",
        },
        Rejected {
            what: "hooks_drop without a base",
            text: format!("hooks_drop = [\"protect-paths\"]\n{FS}"),
            says: "bad.toml:1:15: hooks_drop[0]: hooks_drop names hooks of the base preset, but this preset extends none",
        },
    ]
}

/// Runs paddock in the project with nothing on standard input (`input` piped in when given).
fn paddock(project: &Project, args: &[&str], input: Option<&str>) -> Output {
    let mut cmd = project.command(args);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = cmd.spawn().expect("paddock starts");
    if let Some(input) = input {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        let _ = stdin.write_all(input.as_bytes());
    }
    child.wait_with_output().expect("paddock ends")
}

/// The finding lines of an output: `error: FILE:LINE:COL: ...` (and the fix under each); the
/// summary names the preset as the command was given it.
fn finding_lines(output: &str) -> Vec<String> {
    output
        .lines()
        .filter(|line| {
            line.strip_prefix("error: bad.toml:")
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
                || line.starts_with("  fix: ")
        })
        .map(str::to_string)
        .collect()
}

/// What a command said; `tool batch` answers in JSON on standard output, so its error message
/// counts as said too, one `error:` a line as the others print it.
fn with_json_message(out: &Output) -> String {
    let mut said = text(out);
    if let Ok(value) = serde_json::from_slice::<Value>(&out.stdout)
        && let Some(message) = value["error"]["message"].as_str()
    {
        for line in message.lines() {
            said.push_str(&format!("\nerror: {line}"));
        }
    }
    said
}

#[test]
fn every_command_refuses_what_check_rejects_with_the_same_message() {
    let project = Project::new(&[("notes.txt", "one\n")]);
    std::fs::create_dir(project.dir.path().join("empty")).unwrap();
    std::fs::write(project.dir.path().join("good.toml"), FS).unwrap();
    std::fs::write(
        project.dir.path().join("batch.json"),
        r#"[{"id": "1", "name": "read_file", "arguments": "{\"path\": \"notes.txt\"}"}]"#,
    )
    .unwrap();
    // A finished session to resume: its recorded preset is replaced by each rejected one.
    let ran = paddock(
        &project,
        &["run", "--demo", "--preset", "good.toml", "look around"],
        None,
    );
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran));
    let id = project.only_session();
    let log = std::fs::read_to_string(project.log_path(&id)).unwrap();
    let mut events: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let home = project.home.path().display().to_string();
    for case in rejected(&home) {
        std::fs::write(project.dir.path().join("bad.toml"), &case.text).unwrap();
        let checked = paddock(&project, &["preset", "check", "bad.toml"], None);
        let said = text(&checked);
        assert_eq!(checked.status.code(), Some(2), "{}: {said}", case.what);
        assert!(said.contains(case.says), "{}: {said}", case.what);
        let expected = finding_lines(&said);
        assert!(!expected.is_empty(), "{}: {said}", case.what);

        events[0]["data"]["preset_origin"] = "bad.toml".into();
        events[0]["data"]["preset_text"] = case.text.clone().into();
        let rewritten: String = events.iter().map(|e| format!("{e}\n")).collect();
        std::fs::write(project.log_path(&id), &rewritten).unwrap();

        let commands: [(&str, Vec<&str>, Option<&str>); 7] = [
            (
                "run",
                vec!["run", "--demo", "--preset", "bad.toml", "go"],
                None,
            ),
            (
                "chat via a pipe",
                vec!["chat", "--demo", "--preset", "bad.toml"],
                Some("hello\n"),
            ),
            ("resume", vec!["resume", &id, "go on"], None),
            (
                "tool call",
                vec![
                    "tool",
                    "call",
                    "read_file",
                    r#"{"path":"notes.txt"}"#,
                    "--preset",
                    "bad.toml",
                ],
                None,
            ),
            (
                "tool list",
                vec!["tool", "list", "--preset", "bad.toml"],
                None,
            ),
            (
                "tool batch",
                vec!["tool", "batch", "batch.json", "--preset", "bad.toml"],
                None,
            ),
            (
                "mcp serve",
                vec!["mcp", "serve", "--preset", "bad.toml"],
                None,
            ),
        ];
        for (command, args, input) in commands {
            let out = paddock(&project, &args, input);
            let said = with_json_message(&out);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{command} with {}: {said}",
                case.what
            );
            assert_eq!(
                finding_lines(&said),
                expected,
                "{command} with {}: {said}",
                case.what
            );
        }
        assert_eq!(
            std::fs::read_to_string(project.log_path(&id)).unwrap(),
            rewritten,
            "{}: resume appended nothing",
            case.what
        );
        assert_eq!(
            project.sessions().len(),
            1,
            "{}: no session started",
            case.what
        );
    }
}

#[test]
fn a_broad_home_grant_covering_the_data_directory_is_refused_by_check_and_by_start() {
    let project = Project::new(&[("notes.txt", "one\n")]);
    let preset = format!("{FS}grants.exec = {{ allow = [\"ls\"], read = [\"~\"] }}\n");
    std::fs::write(project.dir.path().join("home.toml"), preset).unwrap();
    // The data directory lies inside the home directory, as ~/.local/share/paddock does.
    let with_home = |args: &[&str]| {
        let mut cmd = project.command(args);
        cmd.env("HOME", project.home.path().parent().unwrap());
        cmd.stdin(Stdio::null()).output().expect("paddock runs")
    };
    for args in [
        vec!["preset", "check", "home.toml"],
        vec!["run", "--demo", "--preset", "home.toml", "go"],
        vec!["tool", "list", "--preset", "home.toml"],
    ] {
        let out = with_home(&args);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(
            said.contains("home.toml:4:41: plugins.fs.grants.exec.read[0]:"),
            "{args:?}: {said}"
        );
        assert!(
            said.contains("would give programs paddock's data directory"),
            "{args:?}: {said}"
        );
        assert!(said.contains("fix: change or remove"), "{args:?}: {said}");
    }
    assert!(project.sessions().is_empty());
}

#[test]
fn warnings_are_shown_once_at_a_start_and_as_events_under_json() {
    let project = Project::new(&[("notes.txt", "one\n")]);
    let preset = format!("{FS}grants.protect = [\".envrc\"]\n");
    std::fs::write(project.dir.path().join("warn.toml"), preset).unwrap();
    let out = paddock(
        &project,
        &["run", "--demo", "--json", "--preset", "warn.toml", "go"],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr
            .matches("warning: warn.toml:4:8: plugins.fs.grants.protect:")
            .count(),
        1,
        "{stderr}"
    );
    let warnings: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "preset/warning")
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0]["data"]["key"], "plugins.fs.grants.protect");
    assert_eq!(warnings[0]["data"]["at"], "warn.toml:4:8");
    assert!(
        warnings[0]["data"]["message"]
            .as_str()
            .unwrap()
            .contains("has no writable mount"),
        "{warnings:?}"
    );
}

/// `tool call write_file` of `notes.txt` under `preset`, as the one JSON object it prints.
fn write_notes(project: &Project, preset: &str) -> Value {
    let out = paddock(
        project,
        &[
            "tool",
            "call",
            "write_file",
            r#"{"path": "notes.txt", "content": "two\n"}"#,
            "--preset",
            preset,
            "--json",
        ],
        None,
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn what_a_shipped_hook_declares_for_its_config_is_what_it_takes() {
    let project = Project::new(&[("notes.txt", "one\n")]);
    let preset = "[plugins.fs]\nsource = \"builtin:fs\"\n\
                  mounts = [{ host = \".\", guest = \"/workspace\", mode = \"rw\" }]\n\n\
                  [[hooks]]\nsource = \"builtin:protect-paths\"\non = \"pre\"\n\
                  config = { globs = [\"notes.txt\"], deny_writes = false }\n";
    std::fs::write(project.dir.path().join("hooked.toml"), preset).unwrap();
    let checked = paddock(&project, &["preset", "check", "hooked.toml"], None);
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked));
    let value = write_notes(&project, "hooked.toml");
    assert_eq!(value["error"]["code"], "DENIED", "{value}");
    let message = value["error"]["message"].as_str().unwrap();
    // Denied by the glob it was given, not for a config the hook could not read.
    assert!(!message.contains("does not fit"), "{message}");
    assert!(message.contains("notes.txt"), "{message}");
    assert_eq!(
        std::fs::read_to_string(project.dir.path().join("notes.txt")).unwrap(),
        "one\n"
    );
}

/// `wasm` with a custom section appended: the same code, other bytes, so paddock takes it for
/// a hook from outside (compiled and asked in the sandbox), not for the built-in it was.
fn as_from_outside(mut wasm: Vec<u8>) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            out.push(if n == 0 { byte } else { byte | 0x80 });
            if n == 0 {
                break;
            }
        }
    }
    let (name, data) = (
        b"from-outside".as_slice(),
        b"a third party's build".as_slice(),
    );
    let mut body = Vec::new();
    leb(name.len(), &mut body);
    body.extend_from_slice(name);
    body.extend_from_slice(data);
    wasm.push(0);
    leb(body.len(), &mut wasm);
    wasm.extend_from_slice(&body);
    wasm
}

#[test]
fn a_hook_from_outside_declares_its_config_and_every_start_checks_it() {
    let project = Project::new(&[("notes.txt", "one\n")]);
    let built = std::fs::read(paddock_tests::plugins::plugin_dir().join("protect_paths.wasm"))
        .expect("built hooks: cargo xtask build-plugins");
    std::fs::write(
        project.dir.path().join("guard.wasm"),
        as_from_outside(built),
    )
    .unwrap();
    let preset = |config: &str| {
        format!(
            "[plugins.fs]\nsource = \"builtin:fs\"\n\
             mounts = [{{ host = \".\", guest = \"/workspace\", mode = \"rw\" }}]\n\n\
             [[hooks]]\nsource = \"./guard.wasm\"\non = \"pre\"\nconfig = {config}\n"
        )
    };
    std::fs::write(
        project.dir.path().join("typo.toml"),
        preset("{ glob = [\"notes.txt\"] }"),
    )
    .unwrap();
    for args in [
        &["preset", "check", "typo.toml"][..],
        &["tool", "list", "--preset", "typo.toml"][..],
    ] {
        let out = paddock(&project, args, None);
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {shown}");
        assert!(
            shown.contains(
                "typo.toml:8:12: hooks[0].config.glob: hook `./guard.wasm` has no config key \
                 `glob` (did you mean `globs`?)"
            ) && shown.contains("fix: use one of its keys: globs (array), deny_writes (boolean)"),
            "{args:?}: {shown}"
        );
    }

    // Written as it declares, the hook loads and guards.
    std::fs::write(
        project.dir.path().join("good.toml"),
        preset("{ globs = [\"notes.txt\"] }"),
    )
    .unwrap();
    let value = write_notes(&project, "good.toml");
    assert_eq!(value["error"]["code"], "DENIED", "{value}");
    assert_eq!(
        std::fs::read_to_string(project.dir.path().join("notes.txt")).unwrap(),
        "one\n"
    );
}

/// A user's plugin added to a preset that extends `default` (whose `tools.enable` is kept
/// whole) loads with none of its tools: `preset check` warns, naming the plugin, its tools
/// and the `enable` list that would keep them; `tool call` of the tool says the same instead
/// of "unknown tool"; and under a preset that does not load the installed plugin at all, it
/// names the plugin and how to add it.
#[test]
fn a_plugin_whose_tools_the_preset_hides_is_named_with_the_fix() {
    let project = Project::new(&[("notes.txt", "one two three\n")]);
    let wasm = paddock_tests::plugin_dir().join("word_count.wasm");
    let out = paddock(
        &project,
        &["plugin", "install", wasm.to_str().unwrap(), "--name", "wc"],
        None,
    );
    assert!(out.status.success(), "{}", text(&out));
    let mine = "extends = \"default\"\n\n[plugins.wc]\nsource = \"wc\"\nmounts = [{ host = \".\", guest = \"/workspace\", mode = \"ro\" }]\n";
    std::fs::write(project.dir.path().join("mine.toml"), mine).unwrap();

    let checked = paddock(&project, &["preset", "check", "mine.toml"], None);
    let said = text(&checked);
    assert_eq!(
        checked.status.code(),
        Some(0),
        "a warning, not an error: {said}"
    );
    assert!(
        said.contains("warning:")
            && said.contains("mine.toml:3:")
            && said.contains(
                "plugin `wc` loads, but the `[tools]` lists keep none of its tools (count_words)"
            ),
        "{said}"
    );
    assert!(
        said.contains("\"read_file\"") && said.contains("\"count_words\"]"),
        "the fix is the enable list that keeps them: {said}"
    );

    let args = r#"{"path":"notes.txt"}"#;
    let hidden = paddock(
        &project,
        &[
            "tool",
            "call",
            "count_words",
            args,
            "--preset",
            "mine.toml",
            "--json",
        ],
        None,
    );
    let message = with_json_message(&hidden);
    assert!(
        message.contains(
            "`count_words` is a tool of plugin `wc`, which preset `mine.toml` loads but leaves out"
        ) && message.contains("tools.enable")
            && !message.contains("--preset coding"),
        "{message}"
    );

    let unloaded = paddock(
        &project,
        &["tool", "call", "count_words", args, "--json"],
        None,
    );
    let message = with_json_message(&unloaded);
    assert!(
        message.contains(
            "`count_words` is a tool of installed plugin `wc`, which preset `default` does not load"
        ) && message.contains("[plugins.wc]"),
        "{message}"
    );
}
