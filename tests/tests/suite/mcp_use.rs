//! MCP servers a preset starts (`[mcp.NAME]`), through the real binary: a small server made
//! with the official Python SDK (`tests/mcp/confined_server.py`) runs confined by the kernel.
//! Its tools work inside its mounts and fail outside them; it cannot connect out (a loopback
//! listener sees no connection); a server that dies, hangs or floods fails that call with its
//! code, is restarted once, and the session goes on. Its annotations only tighten metadata.
//!
//! Needs the SDK's Python in `PADDOCK_MCP_PYTHON` (installed and set by `cargo xtask test`); see mcp_serve.rs.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::agent_common::Project;
use serde_json::Value;

struct Served {
    project: Project,
    decoy: tempfile::TempDir,
    preset: PathBuf,
}

/// The project (mounted `mode`) and a preset starting the test server on it, or `None` to
/// skip when the SDK is not installed (outside CI).
fn setup(mode: &str, timeout_ms: u64) -> Option<Served> {
    let python = match std::env::var_os("PADDOCK_MCP_PYTHON") {
        Some(path) => PathBuf::from(path),
        None if std::env::var_os("CI").is_some() => {
            panic!(
                "PADDOCK_MCP_PYTHON is not set in CI: cargo xtask test installs the MCP Python SDK"
            )
        }
        None => {
            eprintln!(
                "SKIPPED: the MCP Python SDK is not installed (see tests/tests/suite/mcp_serve.rs)"
            );
            return None;
        }
    };
    // The interpreter and its packages must be readable inside the jail, nothing else of home.
    let prefixes = Command::new(&python)
        .args([
            "-c",
            "import sys; print(sys.prefix); print(sys.base_prefix)",
        ])
        .output()
        .expect("ask python for its prefixes");
    let script_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("mcp");
    let mut read: Vec<String> = String::from_utf8_lossy(&prefixes.stdout)
        .lines()
        .map(|l| format!("{l:?}"))
        .collect();
    read.push(format!("{:?}", script_dir.display().to_string()));
    let project = Project::new(&[("README.md", "inside the mount\n")]);
    let decoy = tempfile::tempdir().expect("decoy");
    std::fs::write(decoy.path().join("secret.txt"), "DECOY-SECRET-9d41").expect("decoy");
    let text = format!(
        "[mcp.py]\ncommand = {:?}\nargs = [{:?}]\nread = [{}]\n\
         mounts = [{{ host = {:?}, guest = \"/workspace\", mode = \"{mode}\" }}]\n\
         timeout_ms = {timeout_ms}\n\
         [approval]\nlow = \"allow\"\nmedium = \"allow\"\nhigh = \"allow\"\n",
        python.display().to_string(),
        script_dir.join("confined_server.py").display().to_string(),
        read.join(", "),
        project.dir.path().display().to_string(),
    );
    let preset = project.home.path().join("use.toml");
    std::fs::write(&preset, text).expect("preset");
    Some(Served {
        project,
        decoy,
        preset,
    })
}

impl Served {
    fn path(&self, name: &str) -> String {
        self.project.dir.path().join(name).display().to_string()
    }

    fn decoy(&self, name: &str) -> String {
        self.decoy.path().join(name).display().to_string()
    }

    /// `paddock tool batch` of `(name, args)` calls: one process, one server; the records.
    fn batch(&self, calls: &[(&str, Value)]) -> Vec<Value> {
        let out = self
            .project
            .batch(&self.preset.display().to_string(), calls);
        let stdout = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(&stdout).unwrap_or_else(|e| {
            panic!(
                "{e}: {stdout}\nstderr: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }
}

fn code(record: &Value) -> &str {
    record["error"]["code"].as_str().unwrap_or("")
}

#[test]
fn a_confined_server_works_inside_its_mounts_and_fails_outside_them() {
    let Some(s) = setup("rw", 20_000) else {
        return;
    };
    let records = s.batch(&[
        (
            "read_text",
            serde_json::json!({"path": s.path("README.md")}),
        ),
        (
            "read_text",
            serde_json::json!({"path": s.decoy("secret.txt")}),
        ),
        (
            "write_text",
            serde_json::json!({"path": s.path("made.txt"), "text": "in"}),
        ),
        (
            "write_text",
            serde_json::json!({"path": s.decoy("made.txt"), "text": "out"}),
        ),
    ]);
    assert_eq!(records[0]["content"], "inside the mount\n", "{records:?}");
    assert_eq!(code(&records[1]), "MCP_TOOL_ERROR", "{:?}", records[1]);
    assert!(!records[1].to_string().contains("DECOY-SECRET"));
    assert_eq!(records[2]["ok"], true, "{:?}", records[2]);
    assert_eq!(std::fs::read_to_string(s.path("made.txt")).unwrap(), "in");
    assert_eq!(code(&records[3]), "MCP_TOOL_ERROR", "{:?}", records[3]);
    assert!(!s.decoy.path().join("made.txt").exists());
}

#[test]
fn a_server_that_connects_out_is_refused() {
    let Some(s) = setup("ro", 20_000) else {
        return;
    };
    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().unwrap().port();
    let records = s.batch(&[("connect", serde_json::json!({"port": port}))]);
    assert_eq!(code(&records[0]), "MCP_TOOL_ERROR", "{records:?}");
    std::thread::sleep(Duration::from_millis(200));
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the listener saw a connection: {other:?}"),
    }
}

#[test]
fn a_server_that_dies_hangs_or_floods_is_restarted_once_and_the_session_goes_on() {
    let Some(s) = setup("ro", 2_000) else {
        return;
    };
    let read = || {
        (
            "read_text",
            serde_json::json!({"path": s.path("README.md")}),
        )
    };
    let records = s.batch(&[
        read(),
        ("die", serde_json::json!({})),
        read(),
        ("hang", serde_json::json!({})),
        read(),
    ]);
    assert_eq!(records[0]["ok"], true, "{records:?}");
    assert_eq!(code(&records[1]), "MCP_SERVER_FAILED", "{:?}", records[1]);
    assert_eq!(records[2]["ok"], true, "restarted once: {:?}", records[2]);
    assert_eq!(code(&records[3]), "TIMEOUT", "{:?}", records[3]);
    assert_eq!(code(&records[4]), "MCP_SERVER_DOWN", "{:?}", records[4]);
    // Every one of these errors goes back to the model: the session goes on.
    assert!(
        records
            .iter()
            .all(|r| r["disposition"]["disposition"] != "end_turn"),
        "{records:?}"
    );
    let records = s.batch(&[("flood", serde_json::json!({})), read()]);
    assert!(
        ["MCP_SERVER_FAILED", "TIMEOUT"].contains(&code(&records[0])),
        "{:?}",
        records[0]
    );
    assert_eq!(records[1]["ok"], true, "{:?}", records[1]);
}

#[test]
fn annotations_only_tighten_what_paddock_believes_of_a_server() {
    for (mode, read_only, risk) in [("rw", false, "high"), ("ro", true, "medium")] {
        let Some(s) = setup(mode, 20_000) else {
            return;
        };
        let preset = s.preset.display().to_string();
        let out = s
            .project
            .command(&["tool", "list", "--json", "--preset", &preset])
            .output()
            .expect("tool list");
        let tools: Value = serde_json::from_slice(&out.stdout).expect("json");
        let read_text = tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "read_text")
            .expect("read_text listed");
        assert_eq!(read_text["plugin"], "mcp.py");
        assert_eq!(read_text["read_only"], read_only, "{mode}: {read_text}");
        assert_eq!(read_text["risk"], risk, "{mode}: {read_text}");
        // write_text says nothing: high risk whatever the mounts.
        let write = tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "write_text")
            .unwrap();
        assert_eq!(write["risk"], "high");
    }
}

/// A server with a rw mount plants what runs commands on the user's next `cargo` or `git`: a
/// `.cargo/config.toml` with a runner, a `.git` file, and a git directory of its own that a
/// `.git` file points at. At the root nothing can be created while it runs; what it made
/// deeper is gone when the session ends, and the planted command never runs.
#[test]
fn what_a_server_plants_is_impossible_or_gone_when_the_session_ends() {
    let Some(s) = setup("rw", 20_000) else {
        return;
    };
    let w = s.project.dir.path();
    for d in ["sub", "evil/objects", "evil/refs"] {
        std::fs::create_dir_all(w.join(d)).unwrap();
    }
    let marker = s.decoy.path().join("fsmonitor-ran");
    let config = format!("[core]\n\tfsmonitor = touch {}\n", marker.display());
    let runner = "[target.x86_64-unknown-linux-gnu]\nrunner = \"sh\"\n";
    let records = s.batch(&[
        (
            "write_text",
            serde_json::json!({"path": s.path(".cargo/config.toml"), "text": runner}),
        ),
        (
            "write_text",
            serde_json::json!({"path": s.path(".git"), "text": "gitdir: evil\n"}),
        ),
        (
            "write_text",
            serde_json::json!({"path": s.path("evil/config"), "text": config}),
        ),
        (
            "write_text",
            serde_json::json!({"path": s.path("evil/HEAD"), "text": "ref: refs/heads/main\n"}),
        ),
        (
            "write_text",
            serde_json::json!({"path": s.path("sub/.git"), "text": "gitdir: ../evil\n"}),
        ),
    ]);
    assert_eq!(code(&records[0]), "MCP_TOOL_ERROR", "{:?}", records[0]);
    assert_eq!(code(&records[1]), "MCP_TOOL_ERROR", "{:?}", records[1]);
    for (i, record) in records.iter().enumerate().skip(2) {
        assert_eq!(
            record["ok"], true,
            "deeper writes reach the disk ({i}): {record:?}"
        );
    }
    for planted in [".cargo", ".git", "sub/.git", "evil/HEAD", "evil/config"] {
        assert!(
            !w.join(planted).exists(),
            "{planted} is left after the session"
        );
    }
    for dir in [w.to_path_buf(), w.join("sub")] {
        let _ = Command::new("git").arg("status").current_dir(&dir).output();
    }
    assert!(!marker.exists(), "the planted command ran");
}
