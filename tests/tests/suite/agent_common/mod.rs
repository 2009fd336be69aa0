//! Sessions through the real `paddock` binary, or in process through the library's `Session`
//! (`inproc`): a project directory, a private data dir, and the session log read back as JSON.

#![allow(dead_code)]

mod inproc;
mod warm;
// The binaries that share this module outside the suite (`headless`, `terminal`) use only
// the binary's side.
#[allow(unused_imports)]
pub use inproc::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use paddock_tests::scripted::{ScriptCall, Step, Turn};
use serde_json::Value;
use tempfile::TempDir;

/// A scripted reply that makes one call.
pub fn call_step(id: &str, name: &str, arguments: &str) -> Step {
    Step::Reply(Turn::calls(vec![ScriptCall::new(id, name, arguments, &[])]))
}

/// The `paddock` binary that `cargo test --workspace` builds next to this test's executable
/// (target/debug/paddock); `cargo xtask test` builds it.
pub fn paddock_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/debug/deps")
        .join("paddock");
    assert!(
        bin.is_file(),
        "{} is missing: build it with `cargo build -p paddock-cli` (cargo xtask test does)",
        bin.display()
    );
    bin
}

pub struct Project {
    pub dir: TempDir,
    pub home: TempDir,
}

impl Project {
    /// A project holding `files` (a name may have folders, e.g. `.paddock/presets/x.toml`),
    /// with its own data dir.
    pub fn new(files: &[(&str, &str)]) -> Project {
        let dir = tempfile::tempdir().expect("project dir");
        for (name, text) in files {
            let path = dir.path().join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("make the project file's folder");
            }
            std::fs::write(path, text).expect("write project file");
        }
        Project {
            dir,
            home: tempfile::tempdir().expect("data dir"),
        }
    }

    /// `new`, its data dir's compiled-code cache already holding the built-ins (`warm.rs`):
    /// for tests whose subject is not a first start.
    pub fn warm(files: &[(&str, &str)]) -> Project {
        let project = Project::new(files);
        warm::seed_cache(project.home.path());
        project
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(paddock_bin());
        cmd.args(args)
            .current_dir(self.dir.path())
            .env("PADDOCK_HOME", self.home.path())
            .env("NO_COLOR", "1")
            .env_remove("PADDOCK_BASE_URL")
            .env_remove("PADDOCK_MODEL")
            .env_remove("PADDOCK_API_KEY");
        cmd
    }

    /// `paddock tool batch --preset PRESET` of `(name, args)` calls, ids `c0`, `c1`, ...: one
    /// process, one session.
    pub fn batch(&self, preset: &str, calls: &[(&str, Value)]) -> Output {
        let batch: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                serde_json::json!({"id": format!("c{i}"), "name": name, "arguments": args.to_string()})
            })
            .collect();
        let file = self.home.path().join("batch.json");
        std::fs::write(&file, Value::from(batch).to_string()).expect("batch file");
        self.command(&[
            "tool",
            "batch",
            "--preset",
            preset,
            &file.display().to_string(),
        ])
        .output()
        .expect("paddock tool batch")
    }

    /// Runs paddock to the end (on a blocking thread, so a server in this runtime keeps
    /// serving).
    pub async fn paddock(&self, args: &[&str]) -> Output {
        let mut cmd = self.command(args);
        tokio::task::spawn_blocking(move || cmd.output().expect("run paddock"))
            .await
            .expect("join")
    }

    /// Every session id, oldest first.
    pub fn sessions(&self) -> Vec<String> {
        let mut ids: Vec<String> = std::fs::read_dir(self.home.path().join("sessions"))
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        ids.sort();
        ids
    }

    pub fn only_session(&self) -> String {
        let ids = self.sessions();
        assert_eq!(ids.len(), 1, "sessions: {ids:?}");
        ids[0].clone()
    }

    pub fn log_path(&self, session: &str) -> PathBuf {
        self.home
            .path()
            .join("sessions")
            .join(session)
            .join("events.jsonl")
    }

    /// The session's events, one JSON value per line.
    pub fn events(&self, session: &str) -> Vec<Value> {
        std::fs::read_to_string(self.log_path(session))
            .expect("read log")
            .lines()
            .map(|line| serde_json::from_str(line).expect("each line is an event"))
            .collect()
    }
}

/// The `type` of each event.
pub fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// The last turn/end's reason.
pub fn last_stop(events: &[Value]) -> String {
    events
        .iter()
        .rev()
        .find(|e| e["type"] == "turn/end")
        .map(|e| e["data"]["reason"].as_str().unwrap_or("?").to_string())
        .unwrap_or_default()
}

/// The text of the last committed assistant message: the answer `run` prints.
pub fn answer(events: &[Value]) -> String {
    events
        .iter()
        .rev()
        .find(|e| e["type"] == "assistant/message")
        .and_then(|e| e["data"]["text"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// What a preset's `read` must list for an MCP server run by `python` from `tests/mcp/`:
/// the interpreter's prefixes and the scripts' folder, each quoted for TOML.
pub fn python_server_reads(python: &Path) -> Vec<String> {
    let prefixes = Command::new(python)
        .args([
            "-c",
            "import sys; print(sys.prefix); print(sys.base_prefix)",
        ])
        .output()
        .expect("ask python for its prefixes");
    let mut read: Vec<String> = String::from_utf8_lossy(&prefixes.stdout)
        .lines()
        .map(|l| format!("{l:?}"))
        .collect();
    read.push(format!("{:?}", mcp_scripts().display().to_string()));
    read
}

/// `tests/mcp/`, where the test MCP servers are.
pub fn mcp_scripts() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("mcp")
}

pub fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
