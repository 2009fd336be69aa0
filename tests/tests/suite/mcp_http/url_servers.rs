//! `[mcp.NAME] url = ...`: an MCP server reached over streamable HTTP (the SDK's
//! `tests/mcp/http_server.py`, started here on a loopback port). Reached only inside its http
//! grant, and by address (a name that resolves to loopback is refused, as for the `http`
//! capability); a server that hangs, floods or dies fails that call, is reconnected once, and
//! the session goes on. Servers made with the TypeScript SDK (`tests/mcp/task_http_server.cjs`,
//! and `server-everything` over HTTP) show that task-only tools are left out and that a server
//! silent on `server/discover` gets the handshake.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::installed;
use crate::agent_common::{self, Project};

/// The SDK's HTTP server on a free loopback port; killed when dropped. `harbor.rs` gives it
/// to a Harbor task too.
pub(crate) struct UrlServer {
    pub(crate) child: Child,
    pub(crate) port: u16,
}

impl UrlServer {
    pub(crate) fn start() -> Option<UrlServer> {
        let python = installed("PADDOCK_MCP_PYTHON")?;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("mcp/http_server.py");
        let mut command = Command::new(python);
        command.arg(script).arg(port.to_string());
        let child = listening(command, port);
        Some(UrlServer { child, port })
    }
}

impl Drop for UrlServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A preset using `url` with `allow` as its grant.
fn preset(project: &Project, url: &str, allow: &str, timeout_ms: u64) -> String {
    let text = format!(
        "[mcp.remote]\nurl = \"{url}\"\nhttp = {{ allow = [\"{allow}\"] }}\n\
         timeout_ms = {timeout_ms}\n\
         [approval]\nlow = \"allow\"\nmedium = \"allow\"\nhigh = \"allow\"\n"
    );
    let file = project.home.path().join("url.toml");
    std::fs::write(&file, text).expect("preset");
    file.display().to_string()
}

/// `paddock tool batch` of tool names (no arguments): the records, or the failure's stderr.
fn batch(project: &Project, preset: &str, tools: &[&str]) -> Result<Vec<Value>, String> {
    let calls: Vec<(&str, Value)> = tools
        .iter()
        .map(|name| (*name, serde_json::json!({})))
        .collect();
    let out = project.batch(preset, &calls);
    // Records (calls that failed make a non-zero exit), or the setup failed (the preset, or
    // the server could not be reached): one error object.
    match serde_json::from_slice(&out.stdout) {
        Ok(Value::Array(records)) => Ok(records),
        _ => Err(agent_common::text(&out)),
    }
}

fn code(record: &Value) -> &str {
    record["error"]["code"].as_str().unwrap_or("")
}

#[test]
fn a_url_server_is_used_inside_its_http_grant_and_refused_outside_it() {
    let Some(server) = UrlServer::start() else {
        return;
    };
    let project = Project::new(&[]);
    let port = server.port;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let granted = preset(&project, &url, &format!("http://127.0.0.1:{port}"), 10_000);
    let records = batch(&project, &granted, &["pid"]).expect("granted");
    assert_eq!(records[0]["ok"], true, "{records:?}");
    assert_eq!(
        records[0]["content"],
        server.child.id().to_string(),
        "the call reached the server"
    );
    // Listed like any tool, and never read-only: it is someone else's program.
    let listed = project
        .command(&["tool", "list", "--json", "--preset", &granted])
        .output()
        .expect("tool list");
    let tools: Value = serde_json::from_slice(&listed.stdout).expect("json");
    let pid = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "pid")
        .expect("pid");
    assert_eq!(
        (pid["plugin"].as_str(), pid["risk"].as_str()),
        (Some("mcp.remote"), Some("high"))
    );
    assert_eq!(pid["read_only"], false);

    // Another port on the same host is not covered by the grant.
    let other = preset(
        &project,
        &url,
        &format!("http://127.0.0.1:{}", port + 1),
        10_000,
    );
    let err = batch(&project, &other, &["pid"]).expect_err("outside the grant");
    assert!(
        err.contains("mcp.remote.url") && err.contains("is not granted"),
        "{err}"
    );
    // A name that leads to loopback, though granted by name, is not reached (S6).
    let by_name = format!("http://localhost:{port}/mcp");
    let named = preset(
        &project,
        &by_name,
        &format!("http://localhost:{port}"),
        10_000,
    );
    let err = batch(&project, &named, &["pid"]).expect_err("a name to loopback");
    assert!(
        err.contains("not public") && err.contains("mcp.remote"),
        "{err}"
    );
    // https is refused with the reason, not tried.
    let tls = preset(
        &project,
        "https://127.0.0.1/mcp",
        "https://127.0.0.1",
        10_000,
    );
    let err = batch(&project, &tls, &["pid"]).expect_err("https");
    assert!(err.contains("http:// only"), "{err}");
}

#[test]
fn a_url_server_that_hangs_floods_or_dies_fails_that_call_and_the_session_goes_on() {
    let Some(server) = UrlServer::start() else {
        return;
    };
    let project = Project::new(&[]);
    let port = server.port;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let p = preset(&project, &url, &format!("http://127.0.0.1:{port}"), 2_000);
    let records = batch(&project, &p, &["pid", "hang", "pid"]).expect("batch");
    assert_eq!(records[0]["ok"], true, "{records:?}");
    assert_eq!(code(&records[1]), "TIMEOUT", "{:?}", records[1]);
    assert_eq!(records[2]["ok"], true, "reconnected once: {:?}", records[2]);

    // 24 MiB in one result, past the 16 MiB message cap: refused, not buffered.
    let records = batch(&project, &p, &["flood", "pid"]).expect("batch");
    assert_eq!(code(&records[0]), "MCP_SERVER_FAILED", "{:?}", records[0]);
    assert!(
        records[0].to_string().len() < 64 << 10,
        "the flood is not passed on"
    );
    assert_eq!(records[1]["ok"], true, "{:?}", records[1]);

    // A server that dies: that call fails, the reconnection finds no one, its tools are down,
    // and every one of these goes back to the model (the session goes on).
    let records = batch(&project, &p, &["die", "pid", "pid"]).expect("batch");
    assert_eq!(code(&records[0]), "MCP_SERVER_FAILED", "{:?}", records[0]);
    assert_eq!(code(&records[1]), "MCP_SERVER_DOWN", "{:?}", records[1]);
    assert_eq!(code(&records[2]), "MCP_SERVER_DOWN", "{:?}", records[2]);
    assert!(
        records
            .iter()
            .all(|r| r["disposition"]["disposition"] != "end_turn"),
        "{records:?}"
    );
}

/// Starts `command` (its output dropped) and waits until something listens on `port`.
fn listening(mut command: Command, port: u16) -> Child {
    let child = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start {command:?}: {e}"));
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "server did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

/// A server from the TypeScript SDK on a free loopback port: `tests/mcp/task_http_server.cjs`
/// with `flags`, or `server-everything`'s own HTTP transport (`everything`), found beside the
/// SDK `server-everything` installs; killed when dropped.
struct NodeServer {
    child: Child,
    port: u16,
}

impl NodeServer {
    fn start(flags: &[&str]) -> Option<NodeServer> {
        Self::spawn(false, flags)
    }

    fn everything() -> Option<NodeServer> {
        Self::spawn(true, &[])
    }

    fn spawn(everything: bool, flags: &[&str]) -> Option<NodeServer> {
        let script = installed("PADDOCK_MCP_EVERYTHING")?;
        let modules = script
            .ancestors()
            .find(|p| p.ends_with("node_modules"))
            .expect("the script is under node_modules")
            .to_path_buf();
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let mut command = Command::new("node");
        if everything {
            command
                .arg(&script)
                .arg("streamableHttp")
                .env("PORT", port.to_string());
        } else {
            command
                .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("mcp/task_http_server.cjs"))
                .arg(port.to_string())
                .args(flags)
                .env("NODE_PATH", &modules);
        }
        let child = listening(command, port);
        Some(NodeServer { child, port })
    }

    fn preset(&self, project: &Project) -> String {
        let port = self.port;
        preset(
            project,
            &format!("http://127.0.0.1:{port}/mcp"),
            &format!("http://127.0.0.1:{port}"),
            20_000,
        )
    }
}

impl Drop for NodeServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The names `paddock tool list --json` offers from `mcp.remote`, and what it printed.
fn offered(project: &Project, preset: &str) -> (Vec<String>, String) {
    let listed = project
        .command(&["tool", "list", "--json", "--preset", preset])
        .output()
        .expect("tool list");
    let shown = agent_common::text(&listed);
    let tools: Value =
        serde_json::from_slice(&listed.stdout).unwrap_or_else(|e| panic!("{e}: {shown}"));
    let names = tools
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["plugin"] == "mcp.remote")
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    (names, shown)
}

/// A `url` server's task-only tool (`execution.taskSupport: "required"`) is left out, with
/// the warning that names it, as for a started server: whether the server answers the tool
/// list as an event stream (`server-everything`, the TypeScript SDK's default) or as one JSON
/// body (which rmcp parses before paddock sees it).
#[test]
fn a_url_servers_task_only_tools_are_left_out_with_a_warning_from_a_stream_or_a_json_body() {
    let Some(everything) = NodeServer::everything() else {
        return;
    };
    let project = Project::new(&[]);
    let p = everything.preset(&project);
    let (names, shown) = offered(&project, &p);
    assert!(names.iter().any(|n| n == "get-resource-links"), "{names:?}");
    assert!(
        !names.iter().any(|n| n == "simulate-research-query"),
        "{names:?}"
    );
    assert!(
        shown.contains("`simulate-research-query`") && shown.contains("only as a task"),
        "{shown}"
    );

    // Another project: the first one's lock pins `mcp.remote`'s tools as the first server
    // listed them.
    let project = Project::new(&[]);
    let json = NodeServer::start(&["--json"]).expect("installed");
    let p = json.preset(&project);
    let (names, shown) = offered(&project, &p);
    assert_eq!(names, ["plain"], "{shown}");
    assert!(
        shown.contains("`research`") && shown.contains("only as a task"),
        "{shown}"
    );
    // The plain tool still works, through the same server.
    let records = batch(&project, &p, &["plain"]).expect("batch");
    assert_eq!(records[0]["content"], "called plain", "{records:?}");
}

/// A `url` server that reads `server/discover` and never answers it is taken for a server
/// before 2026-07-28 and gets the `initialize` handshake (paddock answers the probe for it
/// after a few seconds, as for a started server).
#[test]
fn a_url_server_silent_on_discover_gets_the_handshake() {
    let Some(silent) = NodeServer::start(&["--silent-discover"]) else {
        return;
    };
    let project = Project::new(&[]);
    let p = silent.preset(&project);
    let records = batch(&project, &p, &["plain"]).expect("batch");
    assert_eq!(records[0]["ok"], true, "{records:?}");
    assert_eq!(records[0]["content"], "called plain", "{records:?}");
}

/// A hostile `url` server that answers the tool list honestly, then, asked again for the raw
/// body (a JSON answer), floods it: the second answer is refused past the message cap, not
/// buffered, and the server is not used (its tools might be task-only).
#[test]
fn a_url_server_that_floods_the_tool_list_asked_again_is_refused() {
    let Some(hostile) = NodeServer::start(&["--json", "--flood-relist"]) else {
        return;
    };
    let project = Project::new(&[]);
    let p = hostile.preset(&project);
    let err = batch(&project, &p, &["plain"]).expect_err("refused");
    assert!(
        err.contains("asked again") && err.contains("over 16777216 bytes"),
        "{err}"
    );
    assert!(err.len() < 64 << 10, "the flood is not passed on");
}
