//! `paddock mcp serve` driven by the official MCP Python SDK client (PyPI `mcp`, pinned in
//! `.ci/mcp-requirements.txt`): tools listed with their annotations, calls through the whole pipeline, a long
//! call cancelled with progress seen while it ran, a hostile plugin contained, approval `ask`
//! through elicitation or denied naming the preset key, and every call in the session log.
//!
//! The SDK's Python is found in `PADDOCK_MCP_PYTHON`, which `cargo xtask test` installs and
//! sets (`xtask/src/tools.rs`). Outside `cargo xtask test`, a machine without it skips these tests with a message saying how to install it; in CI
//! (`CI` set) its absence fails them.

use std::path::PathBuf;
use std::process::Command;

use crate::agent_common::{Project, paddock_bin, types};
use serde_json::Value;

/// The Python that has the MCP SDK, or `None` (after saying why) to skip.
fn python() -> Option<PathBuf> {
    match std::env::var_os("PADDOCK_MCP_PYTHON") {
        Some(path) => Some(PathBuf::from(path)),
        None if std::env::var_os("CI").is_some() => {
            panic!(
                "PADDOCK_MCP_PYTHON is not set in CI: cargo xtask test installs the MCP Python SDK"
            )
        }
        None => {
            eprintln!(
                "SKIPPED: the MCP Python SDK is not installed; run `python3 -m venv V && \
                 V/bin/pip install mcp==2.3.0` and set PADDOCK_MCP_PYTHON=V/bin/python"
            );
            None
        }
    }
}

/// A project with a README, a decoy outside it, and a preset serving fs and the hostile
/// attacks plugin; `approval_high` for undeclared and high-risk tools.
fn setup(approval_high: &str) -> (Project, tempfile::TempDir, PathBuf) {
    let project = Project::new(&[("README.md", "hello from the project\n")]);
    let decoy = tempfile::tempdir().expect("decoy");
    std::fs::write(decoy.path().join("secret.txt"), "DECOY-SECRET-51c2").expect("decoy file");
    let attacks = paddock_tests::plugin_dir().join("hostile_attacks.wasm");
    let host = project.dir.path().display();
    let text = format!(
        "[plugins.fs]\nsource = \"builtin:fs\"\n\
         mounts = [{{ host = \"{host}\", guest = \"/workspace\", mode = \"rw\" }}]\n\
         [plugins.attacks]\nsource = \"{}\"\nrisk = \"high\"\ntimeout_ms = 30_000\n\
         mounts = [{{ host = \"{host}\", guest = \"/workspace\", mode = \"rw\" }}]\n\
         [plugins.shell]\nsource = \"builtin:shell\"\ntimeout_ms = 60_000\n\
         mounts = [{{ host = \"{host}\", guest = \"/workspace\", mode = \"rw\" }}]\n\
         grants.exec = {{ allow = [\"sh\"], env = [\"PATH\"], timeout_ms = 60_000 }}\n\
         [approval]\nlow = \"allow\"\nmedium = \"allow\"\nhigh = \"{approval_high}\"\n",
        attacks.display()
    );
    let preset = project.home.path().join("served.toml");
    std::fs::write(&preset, text).expect("preset");
    (project, decoy, preset)
}

/// Runs the SDK client's `scenario` against `paddock mcp serve --preset PRESET`, connecting
/// with the `initialize` handshake.
fn client(project: &Project, preset: &PathBuf, scenario: &str, elicit: &str) -> Option<Value> {
    client_in(project, preset, scenario, elicit, "legacy")
}

/// As `client`, connecting as `mode` says: `legacy` (the handshake) or `auto` (the SDK's
/// default: `server/discover`, then 2026-07-28 where the server speaks it).
fn client_in(
    project: &Project,
    preset: &PathBuf,
    scenario: &str,
    elicit: &str,
    mode: &str,
) -> Option<Value> {
    let python = python()?;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("mcp/serve_client.py");
    let output = Command::new(python)
        .arg(script)
        .arg(paddock_bin())
        .arg(preset)
        .args([scenario, elicit])
        .current_dir(project.dir.path())
        .env("PADDOCK_HOME", project.home.path())
        .env("NO_COLOR", "1")
        .env("PADDOCK_MCP_MODE", mode)
        .output()
        .expect("run the MCP SDK client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "client failed: {}\nstdout: {stdout}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    Some(serde_json::from_str(stdout.trim()).expect("the client prints one JSON object"))
}

#[test]
fn tools_list_gives_the_presets_tools_with_annotations_from_runtime_metadata() {
    let (project, _decoy, preset) = setup("allow");
    let Some(out) = client(&project, &preset, "list", "none") else {
        return;
    };
    assert_eq!(out["server"], "paddock");
    let tools = &out["tools"];
    let read = &tools["read_file"];
    assert_eq!(read["schema"]["required"][0], "path", "{read}");
    assert_eq!(read["annotations"]["readOnlyHint"], true);
    assert_eq!(read["annotations"]["destructiveHint"], false);
    let write = &tools["write_file"]["annotations"];
    assert_eq!(write["readOnlyHint"], false);
    assert_eq!(write["destructiveHint"], true);
    assert!(tools.get("spin").is_some() && tools.get("grep").is_none());
}

#[test]
fn calls_run_through_the_pipeline_and_are_logged_in_a_session() {
    let (project, _decoy, preset) = setup("allow");
    let Some(out) = client(&project, &preset, "call", "none") else {
        return;
    };
    assert_eq!(out["read"]["is_error"], false);
    assert!(
        out["read"]["text"]
            .as_str()
            .unwrap()
            .contains("hello from the project")
    );
    assert!(
        out["unknown"]["text"]
            .as_str()
            .unwrap()
            .starts_with("error[UNKNOWN_TOOL]")
    );
    assert!(
        out["invalid"]["text"]
            .as_str()
            .unwrap()
            .starts_with("error[INVALID_ARGS]")
    );
    let events = project.events(&project.only_session());
    let kinds = types(&events);
    assert_eq!(kinds[0], "session/start");
    assert_eq!(events[0]["data"]["model"], "mcp-client");
    assert_eq!(
        kinds.iter().filter(|k| *k == "tool/result").count(),
        3,
        "{kinds:?}"
    );
    // The log checks itself (L8): `paddock log` reads it back.
    let shown = project
        .command(&["log", &project.only_session()])
        .output()
        .expect("paddock log");
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    assert!(String::from_utf8_lossy(&shown.stdout).contains("UNKNOWN_TOOL"));
}

#[test]
fn a_cancelled_long_call_stops_with_progress_seen_and_the_session_goes_on() {
    let (project, _decoy, preset) = setup("allow");
    let Some(out) = client(&project, &preset, "cancel", "none") else {
        return;
    };
    let progress = out["progress"].as_array().expect("progress list");
    assert!(progress.len() >= 2, "progress while the call ran: {out}");
    assert!(
        progress[0]["message"]
            .as_str()
            .unwrap()
            .contains("sleep running")
    );
    assert_eq!(out["after"]["is_error"], false, "{out}");
    assert!(out["after_s"].as_f64().unwrap() < 5.0, "{out}");
    let events = project.events(&project.only_session());
    let cancelled = events
        .iter()
        .find(|e| e["type"] == "tool/result" && e["data"]["id"] == "mcp-1")
        .expect("the cancelled call has a result");
    assert_eq!(cancelled["data"]["code"], "CANCELLED", "{cancelled}");
}

/// An MCP client cancels a call whose program planted protected paths below the root: they
/// are gone before the next call runs.
#[test]
fn a_cancelled_planting_call_leaves_nothing_planted() {
    let (project, _decoy, preset) = setup("allow");
    let Some(out) = client(&project, &preset, "plant", "none") else {
        return;
    };
    assert_eq!(out["started"]["is_error"], false, "the program ran: {out}");
    assert_eq!(
        out["config"]["is_error"], true,
        "the planted config is gone: {out}"
    );
    let w = project.dir.path();
    assert!(!w.join("sub/.cargo/config.toml").exists(), "{out}");
    assert!(!w.join("sub/x/.git").exists(), "{out}");
}

#[test]
fn a_hostile_plugin_served_over_mcp_stays_contained() {
    let (project, decoy, preset) = setup("allow");
    let Some(out) = client(&project, &preset, "hostile", "none") else {
        return;
    };
    let text = out.to_string();
    assert!(!text.contains("DECOY-SECRET-51c2"), "{text}");
    let _ = decoy;
    for (key, code) in [
        ("outside", "error[NOT_FOUND]"),
        ("escape", "error[PERMISSION_DENIED]"),
        ("spin", "error[OUT_OF_FUEL]"),
        ("memory", "error[MEMORY_LIMIT]"),
    ] {
        assert_eq!(out[key]["is_error"], true, "{key}: {text}");
        assert!(
            out[key]["text"].as_str().unwrap().starts_with(code),
            "{key}: {text}"
        );
    }
    assert_eq!(out["after"]["is_error"], false, "{text}");
}

/// Both ways of asking: a client on 2025-11-25 gets an elicitation request; one on
/// 2026-07-28 (no server-to-client requests) gets the question as an `input_required`
/// answer and retries with its user's answer.
#[test]
fn approval_ask_goes_to_the_client_as_elicitation_or_is_denied_naming_the_key() {
    for (mode, protocol) in [("legacy", "2025-11-25"), ("auto", "2026-07-28")] {
        approval_ask_through(mode, protocol);
    }
}

fn approval_ask_through(mode: &str, protocol: &str) {
    let (project, _decoy, preset) = setup("ask");
    let written = project.dir.path().join("asked.txt");
    // A client that declares no elicitation: denied, naming the preset key.
    let Some(out) = client_in(&project, &preset, "ask", "none", mode) else {
        return;
    };
    assert_eq!(out["protocol"], protocol, "{mode}: {out}");
    let text = out["write"]["text"].as_str().unwrap();
    assert!(
        text.starts_with("error[DENIED]") && text.contains("`approval.high`"),
        "{mode}: {text}"
    );
    assert!(!written.exists());
    // Its user says no, with a reason: declined, nothing written.
    let out = client_in(&project, &preset, "ask", "no", mode).unwrap();
    assert_eq!(out["protocol"], protocol, "{mode}: {out}");
    let text = out["write"]["text"].as_str().unwrap();
    assert!(
        text.starts_with("error[DECLINED]") && text.contains("not today"),
        "{mode}: {text}"
    );
    assert!(
        out["asked"][0]
            .as_str()
            .unwrap()
            .contains("path: \"/workspace/asked.txt\""),
        "{mode}: {out}"
    );
    assert!(!written.exists());
    // Once: it runs, and the log says how it was approved.
    let out = client_in(&project, &preset, "ask", "once", mode).unwrap();
    assert_eq!(out["write"]["is_error"], false, "{mode}: {out}");
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "yes");
    // Three sessions, one per connection; the one that wrote says how it was approved.
    let sessions = project.sessions();
    assert_eq!(sessions.len(), 3, "{mode}: {sessions:?}");
    let approvals: Vec<Value> = sessions
        .iter()
        .flat_map(|id| project.events(id))
        .filter(|e| e["type"] == "tool/result" && e["data"]["is_error"] == false)
        .map(|e| e["data"]["approval"].clone())
        .collect();
    assert_eq!(approvals, vec![Value::from("once")], "{mode}");
}

/// The SDK's default client (`server/discover` first) settles on 2026-07-28, statelessly,
/// and calls run through the pipeline as before.
#[test]
fn a_2026_07_28_client_negotiates_it_and_calls_tools() {
    let (project, _decoy, preset) = setup("allow");
    let Some(out) = client_in(&project, &preset, "call", "none", "auto") else {
        return;
    };
    assert_eq!(out["protocol"], "2026-07-28", "{out}");
    assert_eq!(out["read"]["is_error"], false, "{out}");
    assert!(
        out["read"]["text"]
            .as_str()
            .unwrap()
            .contains("hello from the project")
    );
    assert!(
        out["unknown"]["text"]
            .as_str()
            .unwrap()
            .starts_with("error[UNKNOWN_TOOL]"),
        "{out}"
    );
    assert_eq!(project.sessions().len(), 1);
}

/// `read_file` on a PNG answers an MCP `image` item after the text, the file's bytes exactly,
/// on 2026-07-28 and on the handshake's revision alike; a text file's answer stays text only.
#[test]
fn an_image_a_tool_returns_reaches_the_client_as_an_mcp_image_item() {
    let (project, _decoy, preset) = setup("allow");
    std::fs::write(
        project.dir.path().join("pic.png"),
        crate::model_images::png(),
    )
    .unwrap();
    for (mode, protocol) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        let Some(out) = client_in(&project, &preset, "image", "none", mode) else {
            return;
        };
        assert_eq!(out["protocol"], protocol, "{out}");
        assert_eq!(out["png"]["is_error"], false, "{out}");
        let content = out["png"]["content"].as_array().unwrap();
        assert_eq!(content.len(), 2, "{out}");
        assert_eq!(content[0]["type"], "text", "{out}");
        assert!(
            content[0]["text"]
                .as_str()
                .unwrap()
                .contains("[image attached: image/png, 2x3"),
            "{out}"
        );
        assert_eq!(content[1]["type"], "image", "{out}");
        assert_eq!(content[1]["mime_type"], "image/png", "{out}");
        assert_eq!(content[1]["hex"], crate::model_images::PNG_HEX, "{mode}");
        let text = out["text"]["content"].as_array().unwrap();
        assert_eq!(text.len(), 1, "{out}");
        assert_eq!(text[0]["type"], "text", "{out}");
        assert!(
            text[0]["text"]
                .as_str()
                .unwrap()
                .contains("hello from the project")
        );
    }
}
