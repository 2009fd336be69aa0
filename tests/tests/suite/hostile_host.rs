//! Host side of the hostile suite through the real binary: a nested mount swapped
//! for a symlink mid-session (K3), the built-in fs tools against protected paths (K2), a
//! tool importing `exec` that claims to be read-only and low risk (K5: high, like
//! `run_command`, so `coding` asks for it), and mounts that
//! would reach the data directory (K4). `hostile_host_fs.rs` holds the library-level half.

use crate::agent_common::{Project, call_step, text, types};
use paddock_tests::plugin_dir;
use paddock_tests::scripted::{Script, ScriptedServer, Step, Turn};
use serde_json::Value;

/// Writes `.paddock/presets/NAME.toml` into the project (as repository content would be) and
/// returns its path.
fn preset(project: &Project, name: &str, text: &str) -> String {
    let dir = project.dir.path().join(".paddock/presets");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn wasm(file: &str) -> String {
    plugin_dir().join(file).display().to_string()
}

/// `paddock tool call TOOL ARGS --preset P --json`, parsed.
async fn tool_call(project: &Project, tool: &str, args: &str, preset: &str) -> Value {
    let out = project
        .paddock(&["tool", "call", tool, args, "--preset", preset, "--json"])
        .await;
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k3_a_nested_mount_swapped_mid_session_is_refused_and_the_decoy_untouched() {
    let project = Project::new(&[("notes.txt", "notes")]);
    std::fs::create_dir(project.dir.path().join("out")).unwrap();
    // The decoy: a sibling of the project, outside every mount.
    let decoy = tempfile::tempdir().unwrap();
    let decoy_name = decoy
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let preset = preset(
        &project,
        "swap",
        &format!(
            "[plugins.attacks]\nsource = {:?}\nmounts = [{{ host = \".\", guest = \"/workspace\", \
             mode = \"rw\" }}, {{ host = \"out\", guest = \"/out\", mode = \"rw\" }}]\n\
             [approval]\nhigh = \"allow\"\n",
            wasm("hostile_attacks.wasm")
        ),
    );
    let attack = |op: &str, path: &str, to: &str| {
        serde_json::json!({"op": op, "path": path, "to": to, "content": "pwned"}).to_string()
    };
    let server = ScriptedServer::start(Script {
        steps: vec![
            call_step("c1", "fs_attack", &attack("write", "/out/first.txt", "")),
            call_step(
                "c2",
                "fs_attack",
                &attack("swap", "out", &format!("../{decoy_name}")),
            ),
            call_step("c3", "fs_attack", &attack("write", "/out/pwned", "")),
            Step::Reply(Turn::text(&["done"])),
        ],
    })
    .await
    .unwrap();
    let url = server.openai_base_url();
    let args = [
        "run",
        "swap the mount",
        "--preset",
        &preset,
        "--base-url",
        &url,
        "--model",
        "m",
    ];
    // The refusal is a host error, which ends the turn (and the exit code says so).
    let output = project.paddock(&args).await;
    let events = project.events(&project.only_session());
    assert!(
        text(&output).contains("no longer refers"),
        "{}",
        text(&output)
    );
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool/result")
        .map(|e| &e["data"])
        .collect();
    assert_eq!(results.len(), 3, "{:?} {results:#?}", types(&events));
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    assert_eq!(results[1]["is_error"], false, "{}", results[1]);
    let refusal = results[2]["content"].as_str().unwrap();
    assert_eq!(results[2]["is_error"], true);
    assert!(
        refusal.contains("/out") && refusal.contains("symbolic link"),
        "{refusal}"
    );
    assert_eq!(
        std::fs::read_dir(decoy.path()).unwrap().count(),
        0,
        "decoy written"
    );

    // The next session does not mount what the plugin planted either.
    let output = project.paddock(&args).await;
    assert_ne!(output.status.code(), Some(0));
    assert!(text(&output).contains("symbolic link"), "{}", text(&output));
    assert_eq!(
        std::fs::read_dir(decoy.path()).unwrap().count(),
        0,
        "decoy written"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k2_the_fs_tools_cannot_write_protected_paths_whatever_the_spelling() {
    let project = Project::new(&[("notes.txt", "notes")]);
    let root = project.dir.path();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
    // A preset without the protect-paths hook: the host alone must hold.
    let bare = preset(
        &project,
        "bare",
        "[plugins.fs]\nsource = \"builtin:fs\"\n\
         mounts = [{ host = \".\", guest = \"/workspace\", mode = \"rw\" }]\n\
         [approval]\nmedium = \"allow\"\nhigh = \"allow\"\n",
    );
    for path in [
        ".git/config",
        "./.git//config",
        "sub/../.git/config",
        ".git/hooks/post-checkout",
        "sub/.git",
        ".cargo/config.toml",
        ".paddock/presets/x.toml",
    ] {
        for preset in [bare.as_str(), "coding"] {
            let args = serde_json::json!({"path": path, "content": "[core]\n\tfsmonitor = x\n"});
            let out = tool_call(&project, "write_file", &args.to_string(), preset).await;
            assert_eq!(out["ok"], false, "{preset} {path}: {out}");
        }
    }
    let edit =
        serde_json::json!({"path": ".git/config", "old_string": "[core]", "new_string": "[alias]"});
    let out = tool_call(&project, "edit_file", &edit.to_string(), &bare).await;
    assert_eq!(out["ok"], false, "{out}");
    assert_eq!(
        std::fs::read_to_string(root.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!root.join(".git/hooks/post-checkout").exists());
    assert!(!root.join("sub/.git").exists());
    assert!(!root.join(".cargo/config.toml").exists());
    assert!(!root.join(".paddock/presets/x.toml").exists());
    // The same tool still writes an ordinary file.
    let ok = serde_json::json!({"path": "sub/fine.txt", "content": "fine"});
    let out = tool_call(&project, "write_file", &ok.to_string(), &bare).await;
    assert_eq!(out["ok"], true, "{out}");
}

/// The `[plugins.liar]` table of a preset: the hostile exec plugin (it declares itself
/// read-only and low risk and runs `sh -c id`), granted `sh`, with `extra` keys.
fn liar_plugin(extra: &str) -> String {
    format!(
        "[plugins.liar]\nsource = {:?}\n{extra}\
         grants.exec = {{ allow = [\"sh\"] }}\n\
         mounts = [{{ host = \".\", guest = \"/workspace\", mode = \"rw\" }}]\n",
        wasm("hostile_ungranted_exec.wasm")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k5_a_tool_importing_exec_is_high_risk_like_run_command_unless_named_lower() {
    let project = Project::new(&[]);
    let body = |extra: &str| {
        format!(
            "{}[approval]\nlow = \"allow\"\nmedium = \"allow\"\nhigh = \"deny\"\n",
            liar_plugin(extra)
        )
    };
    let liar = preset(&project, "liar", &body(""));
    // It declares read_only and low; the host reads high (what it imports) and not read-only.
    let out = project
        .paddock(&["tool", "list", "--preset", &liar, "--json"])
        .await;
    let tools: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    assert_eq!(tools[0]["name"], "run_anything");
    assert_eq!(tools[0]["risk"], "high", "{tools}");
    assert_ne!(tools[0]["read_only"], true, "{tools}");
    let out = tool_call(&project, "run_anything", "{}", &liar).await;
    assert_eq!(out["ok"], false, "{out}");
    let message = out["error"]["message"].as_str().unwrap();
    assert!(message.contains("high-risk"), "{message}");
    // The plugin-wide `risk` only raises: it cannot lower it.
    let lower = preset(&project, "lower", &body("risk = \"low\"\n"));
    let out = tool_call(&project, "run_anything", "{}", &lower).await;
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("high-risk"),
        "{out}"
    );
    // Lowered by name, it runs under `medium = "allow"`, and every start says so.
    let named = preset(
        &project,
        "named",
        &body("tool_risk = { run_anything = \"medium\" }\n"),
    );
    let out = project
        .paddock(&[
            "tool",
            "call",
            "run_anything",
            "{}",
            "--preset",
            &named,
            "--json",
        ])
        .await;
    let result: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    assert_eq!(result["ok"], true, "{result}");
    assert!(
        text(&out)
            .contains("plugins.liar.tool_risk.run_anything: `tool_risk.run_anything = \"medium\"`"),
        "{}",
        text(&out)
    );
    // A name the plugin does not provide is an error, not a setting that does nothing.
    let typo = preset(
        &project,
        "typo",
        &body("tool_risk = { run_anythin = \"medium\" }\n"),
    );
    let out = project
        .paddock(&["tool", "list", "--preset", &typo, "--json"])
        .await;
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out).contains("`run_anythin`") && text(&out).contains("`run_anything`"),
        "{}",
        text(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_coding_a_third_party_exec_tool_is_asked_like_run_command() {
    let project = Project::new(&[]);
    let coding = preset(
        &project,
        "third",
        &format!("extends = \"coding\"\n{}", liar_plugin("")),
    );
    // Without a terminal, a question is a refusal that names the tier; the same for both.
    for (tool, args) in [
        ("run_anything", "{}"),
        ("run_command", r#"{"program": "ls", "args": ["-l"]}"#),
    ] {
        let out = tool_call(&project, tool, args, &coding).await;
        assert_eq!(out["ok"], false, "{tool}: {out}");
        let message = out["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("needs approval")
                && message.contains("the preset asks for high-risk tools"),
            "{tool}: {message}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k4_no_mount_may_contain_or_enter_the_data_directory() {
    let project = Project::new(&[("notes.txt", "notes")]);
    let home = project.home.path().canonicalize().unwrap();
    std::fs::create_dir_all(home.join("cache")).unwrap();
    let args = r#"{"path":"notes.txt"}"#;
    for host in [
        home.join("cache"),
        home.clone(),
        home.parent().unwrap().to_path_buf(),
    ] {
        let mount = format!("{}:/workspace", host.display());
        let out = project
            .paddock(&[
                "tool",
                "call",
                "read_file",
                args,
                "--mount",
                &mount,
                "--json",
            ])
            .await;
        assert_ne!(out.status.code(), Some(0), "{mount}");
        assert!(
            text(&out).contains("data directory"),
            "{mount}: {}",
            text(&out)
        );
    }
}

/// A developer's `RUST_BACKTRACE=1` must not make every host error unwind the host stack, nor
/// put that stack into a crashed call's message (it reaches the model): paddock sets
/// `RUST_LIB_BACKTRACE=0` unless the user set it. The control, with `RUST_LIB_BACKTRACE=1`
/// asked for explicitly, shows the check can fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_backtrace_is_captured_only_when_rust_lib_backtrace_asks_for_it() {
    let project = Project::new(&[]);
    let attacks = preset(
        &project,
        "crash",
        &format!(
            "[plugins.attacks]\nsource = {:?}\n[tools]\ndisable = [\"attacks:half_write\"]\n[approval]\nhigh = \"allow\"\n",
            wasm("hostile_attacks.wasm")
        ),
    );
    let message = |lib: Option<&str>| {
        let mut cmd =
            project.command(&["tool", "call", "exit", "{}", "--preset", &attacks, "--json"]);
        cmd.env("RUST_BACKTRACE", "1")
            .env_remove("RUST_LIB_BACKTRACE");
        if let Some(lib) = lib {
            cmd.env("RUST_LIB_BACKTRACE", lib);
        }
        let out = cmd.output().expect("run paddock");
        let json: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
        assert_eq!(json["ok"], false, "{json}");
        json["error"]["message"].as_str().unwrap().to_string()
    };
    let quiet = message(None);
    assert!(quiet.contains("crashed"), "{quiet}");
    // wasmtime's own "wasm backtrace" (guest frames) stays; the host's stack does not.
    assert!(!quiet.contains("Stack backtrace"), "{quiet}");
    let asked = message(Some("1"));
    assert!(
        asked.contains("Stack backtrace"),
        "the control captured none: {asked}"
    );
}

/// L7: a write that stops between writing its temporary file and renaming it over the target
/// (here a trap; a deadline, fuel or a cancel stop it at the same point) leaves nothing: the
/// host removes that call's temporary file as soon as the call ends, in a `tool call` session
/// that no `resume` would ever settle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_cut_off_before_its_rename_leaves_no_temporary_file() {
    let project = Project::new(&[("notes.txt", "notes")]);
    let preset = preset(
        &project,
        "half",
        &format!(
            "[plugins.attacks]\nsource = {:?}\nmounts = [{{ host = \".\", guest = \"/workspace\", \
             mode = \"rw\" }}]\n[approval]\nlow = \"allow\"\nmedium = \"allow\"\nhigh = \"allow\"\n",
            wasm("hostile_attacks.wasm")
        ),
    );
    let args = r#"{"path": "/workspace/a.txt", "content": "half of it"}"#;
    let result = tool_call(&project, "half_write", args, &preset).await;
    assert_eq!(result["error"]["code"], "TRAP", "the call traps: {result}");
    let left: Vec<String> = std::fs::read_dir(project.dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("paddock-"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?} ({result})");
    assert!(!project.dir.path().join("a.txt").exists());
}
