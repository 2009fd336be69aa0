//! The MCP Inspector's CLI (npm `@modelcontextprotocol/inspector`, `--cli`), a second client
//! implementation beside the Python SDK: it lists paddock's tools with their annotations and
//! calls them, over stdio (it starts `paddock mcp serve` itself) and over streamable HTTP.

use std::process::Command;

use serde_json::Value;

use super::{Listening, TOKEN, installed, served_project};
use crate::agent_common::{Project, paddock_bin};

/// One Inspector CLI run: `target` is the server (a URL, or a command after `--`).
fn inspector(project: &Project, target: &[String], method: &[&str]) -> Option<Value> {
    let script = installed("PADDOCK_MCP_INSPECTOR")?;
    let mut cmd = Command::new("node");
    cmd.arg(script)
        .arg("--cli")
        .args(method)
        .args([
            "-e",
            &format!("PADDOCK_HOME={}", project.home.path().display()),
        ])
        .args(["--cwd", &project.dir.path().display().to_string()])
        .args(target)
        .current_dir(project.dir.path());
    let out = cmd.output().expect("run the MCP Inspector CLI (node)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let failed = || {
        format!(
            "inspector {method:?}: {}\nstdout: {stdout}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let value: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {}", failed()));
    // A tool error is printed and exits 5; anything else must succeed.
    let tool_error = out.status.code() == Some(5) && value["isError"] == true;
    assert!(out.status.success() || tool_error, "{}", failed());
    Some(value)
}

fn check_list(listed: &Value) {
    let tools = listed["tools"].as_array().expect("tools");
    let read = tools
        .iter()
        .find(|t| t["name"] == "read_file")
        .expect("read_file");
    assert_eq!(read["annotations"]["readOnlyHint"], true, "{read}");
    assert_eq!(read["inputSchema"]["required"][0], "path");
    let write = tools
        .iter()
        .find(|t| t["name"] == "write_file")
        .expect("write_file");
    assert_eq!(write["annotations"]["destructiveHint"], true, "{write}");
}

fn check_calls(read: &Value, escape: &Value) {
    assert_eq!(read["isError"], false, "{read}");
    assert!(
        read["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hello from the project")
    );
    // The hostile plugin's escape attempt comes back as a tool error, nothing read.
    assert_eq!(escape["isError"], true, "{escape}");
    assert!(!escape.to_string().contains("root:"), "{escape}");
}

/// The Inspector, told to negotiate (`server/discover` first), settles on 2026-07-28.
fn check_revision(project: &Project, target: &[String]) {
    let shown = inspector(
        project,
        target,
        &["--protocol-era", "auto", "--method", "initialize"],
    )
    .expect("inspector");
    assert_eq!(shown["protocolVersion"], "2026-07-28", "{shown}");
}

/// Calls made on 2026-07-28 (the listing above on the Inspector's default handshake).
const READ: &[&str] = &[
    "--protocol-era",
    "auto",
    "--method",
    "tools/call",
    "--tool-name",
    "read_file",
    "--tool-arg",
    "path=README.md",
];
const ESCAPE: &[&str] = &[
    "--protocol-era",
    "auto",
    "--method",
    "tools/call",
    "--tool-name",
    "read_path",
    "--tool-arg",
    "path=../../../../etc/passwd",
];

#[test]
fn the_inspector_cli_lists_and_calls_over_stdio() {
    let (project, preset) = served_project();
    let target: Vec<String> = vec![
        "--".into(),
        paddock_bin().display().to_string(),
        "mcp".into(),
        "serve".into(),
        "--preset".into(),
        preset.display().to_string(),
    ];
    let Some(listed) = inspector(&project, &target, &["--method", "tools/list"]) else {
        return;
    };
    check_list(&listed);
    check_revision(&project, &target);
    let read = inspector(&project, &target, READ).expect("inspector");
    let escape = inspector(&project, &target, ESCAPE).expect("inspector");
    check_calls(&read, &escape);
    // Each Inspector run was one session, logged like any other.
    assert_eq!(project.sessions().len(), 4);
}

#[test]
fn the_inspector_cli_lists_and_calls_over_http() {
    if installed("PADDOCK_MCP_INSPECTOR").is_none() {
        return;
    }
    let (project, preset) = served_project();
    let server = Listening::start(&project, &preset);
    let target: Vec<String> = vec![
        "--transport".into(),
        "http".into(),
        "--header".into(),
        format!("Authorization: Bearer {TOKEN}"),
        "--".into(),
        server.url(),
    ];
    let listed = inspector(&project, &target, &["--method", "tools/list"]).expect("inspector");
    check_list(&listed);
    check_revision(&project, &target);
    let read = inspector(&project, &target, READ).expect("inspector");
    let escape = inspector(&project, &target, ESCAPE).expect("inspector");
    check_calls(&read, &escape);
    server.stop();
    assert_eq!(project.sessions().len(), 1, "one server, one session");
}
