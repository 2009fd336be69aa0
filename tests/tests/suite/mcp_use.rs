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

use crate::agent_common::{Project, call_step, server, text};
use paddock_tests::scripted::{Step, Turn};
use serde_json::Value;

struct Served {
    project: Project,
    decoy: tempfile::TempDir,
    preset: PathBuf,
}

/// The project (mounted `mode`) and a preset starting the test server on it, or `None` to
/// skip when the SDK is not installed (outside CI).
fn setup(mode: &str, timeout_ms: u64) -> Option<Served> {
    setup_with(mode, timeout_ms, &[])
}

/// As `setup`, the server started with `extra` arguments.
fn setup_with(mode: &str, timeout_ms: u64, extra: &[&str]) -> Option<Served> {
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
    let script_dir = crate::agent_common::mcp_scripts();
    let read = crate::agent_common::python_server_reads(&python);
    let project = Project::new(&[("README.md", "inside the mount\n")]);
    let decoy = tempfile::tempdir().expect("decoy");
    std::fs::write(decoy.path().join("secret.txt"), "DECOY-SECRET-9d41").expect("decoy");
    let mut args = vec![format!(
        "{:?}",
        script_dir.join("confined_server.py").display().to_string()
    )];
    args.extend(extra.iter().map(|a| format!("{a:?}")));
    let text = format!(
        "[mcp.py]\ncommand = {:?}\nargs = [{}]\nread = [{}]\n\
         mounts = [{{ host = {:?}, guest = \"/workspace\", mode = \"{mode}\" }}]\n\
         timeout_ms = {timeout_ms}\n\
         [approval]\nlow = \"allow\"\nmedium = \"allow\"\nhigh = \"allow\"\n",
        python.display().to_string(),
        args.join(", "),
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

/// paddock offers 2026-07-28 first (`server/discover`) and falls back to the 2025-11-25
/// handshake with a server that answers the probe as older servers do, or that never answers
/// it (the wire's `DISCOVER_WAIT`, not rmcp's 10 s): the server reports the revision each call
/// came in on.
#[test]
fn paddock_speaks_2026_07_28_where_the_server_does_and_2025_11_25_where_it_does_not() {
    for (extra, revision) in [
        (&[][..], "2026-07-28"),
        (&["--legacy"][..], "2025-11-25"),
        (&["--silent-legacy"][..], "2025-11-25"),
    ] {
        let Some(s) = setup_with("ro", 20_000, extra) else {
            return;
        };
        let records = s.batch(&[("protocol", serde_json::json!({}))]);
        assert_eq!(records[0]["content"], revision, "{extra:?}: {records:?}");
    }
}

/// A hostile result: an embedded resource reaches the model as text with its URI; a link to
/// a secret outside every mount is shown, never read; an "image" that is a shell script is
/// named, not passed on; a resource far over the budget is cut to it.
#[test]
fn resources_reach_the_model_as_text_with_their_uri_and_a_link_is_never_followed() {
    let Some(s) = setup("ro", 20_000) else {
        return;
    };
    let secret = s.decoy("secret.txt");
    let records = s.batch(&[("rich", serde_json::json!({"path": secret}))]);
    let content = records[0]["content"].as_str().unwrap_or_default();
    assert!(
        content.contains("[resource <notes://one> (text/markdown)]\nEMBEDDED-NOTE-7c1"),
        "{content:.400}"
    );
    assert!(
        content.contains(&format!("<file://{secret}>")) && content.contains("not fetched"),
        "{content:.600}"
    );
    assert!(!content.contains("DECOY-SECRET"));
    assert!(
        content.contains("claimed to be an image (image/png) but its bytes are not"),
        "{content:.800}"
    );
    assert!(content.len() < 70_000, "{} bytes", content.len());
}

/// A command server without mounts starts, sees no project files, and runs in a directory
/// of its own.
#[test]
fn a_server_without_mounts_starts_and_sees_no_project_files() {
    let Some(s) = setup("ro", 20_000) else {
        return;
    };
    let preset = std::fs::read_to_string(&s.preset).unwrap();
    let unmounted: String = preset
        .lines()
        .filter(|l| !l.starts_with("mounts = "))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&s.preset, unmounted).unwrap();
    let records = s.batch(&[
        (
            "read_text",
            serde_json::json!({"path": s.path("README.md")}),
        ),
        ("protocol", serde_json::json!({})),
    ]);
    assert_eq!(code(&records[0]), "MCP_TOOL_ERROR", "{records:?}");
    assert!(!records[0].to_string().contains("inside the mount"));
    assert_eq!(records[1]["ok"], true, "{records:?}");
}

/// `server-everything` (the MCP reference server, npm, on 2025-11-25): its embedded resource
/// and its resource links reach the model's next request as text with their URIs, its image
/// as an image part (the model takes images), and its task-only tool is not offered, with a
/// warning at start that names it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_resources_and_links_reach_the_model_and_its_task_only_tool_is_left_out()
{
    let Some(script) = crate::mcp_http::installed("PADDOCK_MCP_EVERYTHING") else {
        return;
    };
    let modules = script
        .ancestors()
        .find(|p| p.ends_with("node_modules"))
        .expect("the script is under node_modules")
        .to_path_buf();
    let project = Project::new(&[("README.md", "hello\n")]);
    let model = server(vec![
        call_step(
            "c1",
            "get-resource-reference",
            r#"{"resourceType": "Text", "resourceId": 2}"#,
        ),
        call_step("c2", "get-resource-links", r#"{"count": 2}"#),
        call_step("c3", "get-tiny-image", "{}"),
        Step::Reply(Turn::text(&["Done."])),
    ])
    .await;
    let url = model.openai_base_url();
    // A model that takes images, so the server's image goes to it as one.
    let preset = project.home.path().join("everything.toml");
    std::fs::write(
        &preset,
        format!(
            "[model]\nprovider = \"openai\"\nmodel = \"scripted\"\nbase_url = {url:?}\n\
             max_retries = 0\nvision = true\n\n\
             [mcp.everything]\ncommand = \"node\"\nargs = [{:?}]\nenv = [\"PATH\"]\nread = [{:?}]\n\
             [approval]\nlow = \"allow\"\nmedium = \"allow\"\nhigh = \"allow\"\n",
            script.display().to_string(),
            modules.display().to_string(),
        ),
    )
    .unwrap();
    let preset = preset.display().to_string();
    let output = project
        .paddock(&["run", "use them", "--preset", &preset])
        .await;
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("`simulate-research-query`") && shown.contains("only as a task"),
        "{shown}"
    );
    let requests = model.requests();
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"get-resource-links"), "{offered:?}");
    assert!(!offered.contains(&"simulate-research-query"), "{offered:?}");
    let results = |request: usize| -> String {
        requests[request].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_string())
            .collect::<Vec<_>>()
            .join("\n---\n")
    };
    let embedded = results(1);
    assert!(
        embedded.contains("/text/2> (text/plain)]\nResource 2: This is a plaintext resource"),
        "{embedded}"
    );
    let linked = results(2);
    assert!(
        linked.contains("[resource link: Text Resource 2 <") && linked.contains("not fetched"),
        "{linked}"
    );
    assert!(!linked.contains("content not shown"), "{linked}");
    // The image: an image part of the next request (after its result, in a user message, as
    // the OpenAI wire carries a tool's images), the text around it as the result.
    let imaged = results(3);
    assert!(
        imaged.contains("Here's the image you requested:")
            && imaged.contains("The image above is the MCP logo."),
        "{imaged}"
    );
    let body = requests[3].body.to_string();
    assert!(
        body.contains("data:image/png;base64,iVBORw0KGgo"),
        "no image part in the request: {}",
        &body[body.len().saturating_sub(2000)..]
    );
}
