//! MCP over streamable HTTP, both ways, through the real binary:
//!
//! - `paddock mcp serve --listen`: the official Python SDK client lists and calls over HTTP
//!   (two clients, one valid session log); a request without the token, with a foreign `Host`
//!   (DNS rebinding) or with an `Origin` (a web page) is refused; non-loopback addresses only
//!   with the flag, the unspecified address never;
//! - `[mcp.NAME] url = ...` (`mcp_http/url_servers.rs`): a server made with the SDK, reached
//!   only inside its http grant, contained when it hangs, floods or dies; servers made with
//!   the TypeScript SDK, whose task-only tools are left out (`PADDOCK_MCP_EVERYTHING`);
//! - the MCP Inspector CLI (`mcp_http/inspector.rs`) lists and calls over stdio and HTTP.
//!
//! Needs the SDK's Python in `PADDOCK_MCP_PYTHON` and the Inspector in
//! `PADDOCK_MCP_INSPECTOR` (both installed and set by `cargo xtask test`, `xtask/src/tools.rs`);
//! without them these tests print SKIPPED, except in CI, where they fail.

#[path = "mcp_http/inspector.rs"]
mod inspector;
#[path = "mcp_http/load.rs"]
mod load;
#[path = "mcp_http/url_servers.rs"]
pub(crate) mod url_servers;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::agent_common::{Project, paddock_bin, types};
use serde_json::Value;

const TOKEN: &str = "test-token-5f1c8a9e2b7d4360";

/// A tool from `var` (a path), or `None` (after saying why) to skip outside CI.
pub fn installed(var: &str) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(path) if !path.is_empty() => Some(PathBuf::from(path)),
        _ if std::env::var_os("CI").is_some() => {
            panic!("{var} is not set in CI: cargo xtask test installs it (xtask/src/tools.rs)")
        }
        _ => {
            eprintln!("SKIPPED: {var} is not set; `cargo xtask test` installs and sets it");
            None
        }
    }
}

/// A project with a README and a preset serving fs (read-write) and the hostile plugin.
pub fn served_project() -> (Project, PathBuf) {
    let project = Project::new(&[("README.md", "hello from the project\n")]);
    let attacks = paddock_tests::plugin_dir().join("hostile_attacks.wasm");
    let host = project.dir.path().display();
    let text = format!(
        "[plugins.fs]\nsource = \"builtin:fs\"\n\
         mounts = [{{ host = \"{host}\", guest = \"/workspace\", mode = \"rw\" }}]\n\
         [plugins.attacks]\nsource = \"{}\"\nrisk = \"high\"\ntimeout_ms = 30_000\n\
         mounts = [{{ host = \"{host}\", guest = \"/workspace\", mode = \"rw\" }}]\n\
         [approval]\nlow = \"allow\"\nmedium = \"allow\"\nhigh = \"allow\"\n",
        attacks.display()
    );
    let preset = project.home.path().join("served.toml");
    std::fs::write(&preset, text).expect("preset");
    (project, preset)
}

/// `paddock mcp serve --listen 127.0.0.1:0`, running; killed when dropped.
pub struct Listening {
    pub child: Child,
    pub addr: String,
    /// What it wrote on stderr after the line naming its address.
    pub log: Arc<Mutex<Stderr>>,
}

/// A server's stderr: how many lines, and the first [`Stderr::KEPT`] of them (a flood is
/// counted, not kept).
#[derive(Default)]
pub struct Stderr {
    pub lines: usize,
    pub first: Vec<String>,
}

impl Stderr {
    const KEPT: usize = 200;
}

impl Listening {
    pub fn start(project: &Project, preset: &Path) -> Listening {
        Listening::start_with(project, preset, |_| {})
    }

    /// Started with the command adjusted by `adjust` first (limits, environment).
    pub fn start_with(
        project: &Project,
        preset: &Path,
        adjust: impl FnOnce(&mut Command),
    ) -> Listening {
        let mut command = project.command(&[
            "mcp",
            "serve",
            "--preset",
            &preset.display().to_string(),
            "--listen",
            "127.0.0.1:0",
        ]);
        adjust(&mut command);
        let mut child = command
            .env("PADDOCK_MCP_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("paddock mcp serve --listen");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        let addr = loop {
            line.clear();
            if stderr.read_line(&mut line).expect("stderr line") == 0 {
                panic!("paddock mcp serve ended before listening: {line}");
            }
            if let Some(rest) = line.split("http://").nth(1) {
                break rest.split("/mcp").next().expect("address").to_string();
            }
        };
        assert!(
            line.contains("$PADDOCK_MCP_TOKEN") && !line.contains(TOKEN),
            "{line}"
        );
        // Keep draining its stderr so it never blocks on a full pipe; the lines are kept.
        let log = Arc::new(Mutex::new(Stderr::default()));
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                let mut kept = kept.lock().expect("log");
                kept.lines += 1;
                if kept.first.len() < Stderr::KEPT {
                    kept.first.push(line);
                }
            }
        });
        Listening { child, addr, log }
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Ends it as a service manager would (SIGTERM) and waits: the log is complete.
    pub fn stop(mut self) {
        paddock_tests::send_signal(self.child.id(), libc::SIGTERM);
        let status = self.child.wait().expect("wait");
        assert!(status.success(), "serve after SIGTERM: {status}");
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The status of one raw HTTP POST of an `initialize` to `addr`, with `headers`.
fn post_status(addr: &str, headers: &[(&str, &str)]) -> u16 {
    exchange(addr, "POST", headers).0
}

/// One raw request (an `initialize` body for a POST) on a connection of its own: the status,
/// the response head (lower-cased) and its body.
fn exchange(addr: &str, method: &str, headers: &[(&str, &str)]) -> (u16, String, String) {
    let body = if method == "POST" {
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#
    } else {
        ""
    };
    let mut request = format!("{method} /mcp HTTP/1.1\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = Vec::new();
    // An SSE answer stays open; what arrived before the timeout is enough.
    let _ = stream.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response).to_string();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .expect("status code");
    (status, head.to_ascii_lowercase(), body.to_string())
}

/// The Python SDK client's `scenario` against a running HTTP server, with the handshake.
fn sdk_client(project: &Project, preset: &Path, url: &str, scenario: &str) -> Option<Value> {
    sdk_client_in(project, preset, url, scenario, "legacy")
}

/// As `sdk_client`, connecting as `mode` says (`legacy`, or `auto`: 2026-07-28 when spoken).
/// Whatever the SDK logs on closing is checked too: a session's end is no failure.
fn sdk_client_in(
    project: &Project,
    preset: &Path,
    url: &str,
    scenario: &str,
    mode: &str,
) -> Option<Value> {
    let python = installed("PADDOCK_MCP_PYTHON")?;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("mcp/serve_client.py");
    let output = Command::new(python)
        .arg(script)
        .arg(paddock_bin())
        .arg(preset)
        .args([scenario, "none"])
        .current_dir(project.dir.path())
        .env("PADDOCK_MCP_URL", url)
        .env("PADDOCK_MCP_TOKEN", TOKEN)
        .env("PADDOCK_MCP_MODE", mode)
        .output()
        .expect("run the MCP SDK client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "client failed: {}\nstdout: {stdout}\nstderr: {stderr}",
        output.status,
    );
    assert!(
        !stderr.contains("Session termination failed"),
        "the SDK saw its DELETE fail: {stderr}"
    );
    Some(serde_json::from_str(stdout.trim()).expect("one JSON object"))
}

#[test]
fn over_http_two_sdk_clients_list_and_call_through_the_pipeline_into_one_valid_log() {
    let (project, preset) = served_project();
    let server = Listening::start(&project, &preset);
    let Some(list) = sdk_client(&project, &preset, &server.url(), "list") else {
        return;
    };
    assert_eq!(list["server"], "paddock");
    assert_eq!(
        list["tools"]["read_file"]["annotations"]["readOnlyHint"],
        true
    );
    let call = sdk_client(&project, &preset, &server.url(), "call").expect("sdk");
    assert!(
        call["read"]["text"]
            .as_str()
            .unwrap()
            .contains("hello from the project"),
        "{call}"
    );
    assert!(
        call["unknown"]["text"]
            .as_str()
            .unwrap()
            .starts_with("error[UNKNOWN_TOOL]")
    );
    let hostile = sdk_client(&project, &preset, &server.url(), "hostile").expect("sdk");
    for key in ["outside", "escape", "spin", "memory"] {
        assert_eq!(hostile[key]["is_error"], true, "{key}: {hostile}");
    }
    assert!(
        hostile["spin"]["text"]
            .as_str()
            .unwrap()
            .contains("OUT_OF_FUEL")
    );
    assert_eq!(hostile["after"]["is_error"], false, "{hostile}");
    // The SDK's default client: 2026-07-28, no session, the same pipeline.
    let modern = sdk_client_in(&project, &preset, &server.url(), "call", "auto").expect("sdk");
    assert_eq!(modern["protocol"], "2026-07-28", "{modern}");
    assert!(
        modern["read"]["text"]
            .as_str()
            .unwrap()
            .contains("hello from the project"),
        "{modern}"
    );
    server.stop();
    // Four clients, one session: every call logged, and the log checks itself (L8).
    let session = project.only_session();
    let kinds = types(&project.events(&session));
    assert_eq!(
        kinds.iter().filter(|k| *k == "tool/result").count(),
        3 + 5 + 3,
        "{kinds:?}"
    );
    let shown = project.command(&["log", &session]).output().expect("log");
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
}

#[test]
fn over_http_no_token_a_foreign_host_or_an_origin_is_refused() {
    let (project, preset) = served_project();
    let server = Listening::start(&project, &preset);
    let port = server.addr.rsplit(':').next().unwrap().to_string();
    let auth = format!("Bearer {TOKEN}");
    let host = server.addr.clone();
    // The control: token, the bound Host, no Origin.
    assert_eq!(
        post_status(&server.addr, &[("Host", &host), ("Authorization", &auth)]),
        200
    );
    // No token, or a wrong one: 401 with a Bearer challenge that names what is wrong (and no
    // authorization server, so a client does not start OAuth).
    let wrong = "Bearer test-token-00000000000000";
    for (headers, says) in [
        (vec![("Host", host.as_str())], "missing bearer token"),
        (
            vec![("Host", host.as_str()), ("Authorization", wrong)],
            "wrong bearer token",
        ),
    ] {
        let (status, head, body) = exchange(&server.addr, "POST", &headers);
        assert_eq!(status, 401, "{head}");
        let challenge = head
            .lines()
            .find_map(|l| l.strip_prefix("www-authenticate: "))
            .unwrap_or_else(|| panic!("no WWW-Authenticate: {head}"));
        assert!(challenge.starts_with("bearer "), "{challenge}");
        assert!(challenge.contains(says) && !challenge.contains("resource_metadata"));
        assert!(
            body.contains(says) && body.contains("PADDOCK_MCP_TOKEN"),
            "{body}"
        );
    }
    // DNS rebinding: a page at evil.example whose name now resolves to 127.0.0.1.
    let evil = format!("evil.example:{port}");
    assert_eq!(
        post_status(&server.addr, &[("Host", &evil), ("Authorization", &auth)]),
        403
    );
    // The right port on another name, and the right name on another port.
    assert_eq!(
        post_status(
            &server.addr,
            &[("Host", "127.0.0.1:1"), ("Authorization", &auth)]
        ),
        403
    );
    // A browser's request carries its page's Origin, even a loopback one.
    for origin in [
        "http://evil.example",
        &format!("http://127.0.0.1:{port}"),
        "null",
    ] {
        let headers = [
            ("Host", host.as_str()),
            ("Authorization", &auth),
            ("Origin", origin),
        ];
        assert_eq!(post_status(&server.addr, &headers), 403, "Origin {origin}");
    }
}

/// A client ending its session gets 204 (what the Python SDK counts as success; rmcp's own
/// answer is 202).
#[test]
fn over_http_deleting_a_session_is_answered_204() {
    let (project, preset) = served_project();
    let server = Listening::start(&project, &preset);
    let auth = format!("Bearer {TOKEN}");
    let host = server.addr.clone();
    let (status, head, _) = exchange(
        &server.addr,
        "POST",
        &[("Host", &host), ("Authorization", &auth)],
    );
    assert_eq!(status, 200, "{head}");
    let id = head
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id: "))
        .unwrap_or_else(|| panic!("no session id: {head}"))
        .trim()
        .to_string();
    let close = [
        ("Host", host.as_str()),
        ("Authorization", auth.as_str()),
        ("Mcp-Session-Id", id.as_str()),
    ];
    let (status, head, body) = exchange(&server.addr, "DELETE", &close);
    assert_eq!(status, 204, "{head}{body}");
    // Without the token, nothing is deleted.
    assert_eq!(exchange(&server.addr, "DELETE", &close[..1]).0, 401);
}

#[test]
fn listen_takes_loopback_only_unless_told_and_never_the_unspecified_address() {
    let (project, preset) = served_project();
    let preset = preset.display().to_string();
    for (args, says) in [
        (
            vec!["--listen", "10.254.254.254:0"],
            "not a loopback address",
        ),
        (
            vec!["--listen", "0.0.0.0:0", "--allow-non-loopback"],
            "name one address",
        ),
        (vec!["--listen", "[::]:0"], "name one address"),
    ] {
        let mut all = vec!["mcp", "serve", "--preset", &preset];
        all.extend(args.iter().copied());
        let out = project.command(&all).output().expect("serve");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(says),
            "{args:?}: {err}"
        );
    }
    // Nothing was logged: the address is refused before a session starts.
    assert!(project.sessions().is_empty());
}
