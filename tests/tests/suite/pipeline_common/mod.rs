//! Shared by the pipeline tests: a registry of the bench tools (`nap`, `nap_alone`,
//! `write_slowly`), the hostile `sleep` and the built-in fs tools over a temporary workspace,
//! loaded through a preset file like a session would, and a scheduler over it.

#![allow(dead_code)]

use std::time::Duration;

use paddock::calls::{AliasTable, Registry};
use paddock::pipeline::{CallContext, CallEvent, OpenGate, RawCall, Scheduler};
use paddock::plugin_store::PluginStore;
use paddock_tests::{plugin_dir, resolve_preset, sandbox};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub struct Bench {
    pub work: tempfile::TempDir,
    _home: tempfile::TempDir,
    pub registry: Registry,
    pub aliases: AliasTable,
}

impl Bench {
    pub async fn new() -> Bench {
        let work = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join("a.txt"), "alpha\n").unwrap();
        let dir = plugin_dir();
        let toml = format!(
            r#"name = "pipeline"
[plugins.bench]
source = "{bench}"
mounts = [{{ host = ".", guest = "/workspace", mode = "rw" }}]
timeout_ms = 20_000
[plugins.attacks]
source = "{attacks}"
mounts = [{{ host = ".", guest = "/workspace", mode = "ro" }}]
timeout_ms = 120_000
[plugins.fs]
source = "builtin:fs"
mounts = [{{ host = ".", guest = "/workspace", mode = "rw" }}]
"#,
            bench = dir.join("bench_tools.wasm").display(),
            attacks = dir.join("hostile_attacks.wasm").display(),
        );
        let file = home.path().join("pipeline.toml");
        std::fs::write(&file, toml).unwrap();
        let resolved = resolve_preset(file.to_str().unwrap(), work.path(), home.path());
        let store = PluginStore::open(home.path());
        let registry = Registry::load(sandbox(), &store, &resolved).await.unwrap();
        Bench {
            work,
            _home: home,
            registry,
            aliases: AliasTable::default(),
        }
    }

    /// A scheduler over this registry with an open gate, and its event stream.
    pub fn scheduler(
        &self,
        max_parallel: usize,
        cancel: CancellationToken,
    ) -> (Scheduler<'_>, mpsc::UnboundedReceiver<CallEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let scheduler = Scheduler {
            cx: CallContext {
                sandbox: sandbox(),
                registry: &self.registry,
                aliases: &self.aliases,
                spill: None,
                gate: &OpenGate,
                session_id: "test",
                preset: "pipeline",
                cancel,
                live: None,
                locks: Default::default(),
            },
            max_parallel,
            events: Some(tx),
            on_start: None,
            on_end: None,
        };
        (scheduler, rx)
    }
}

pub fn call(id: &str, name: &str, arguments: &str) -> RawCall {
    RawCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

pub fn nap(id: &str, ms: u64) -> RawCall {
    call(id, "nap", &format!(r#"{{"ms": {ms}}}"#))
}

/// Every event sent so far.
pub fn drain(rx: &mut mpsc::UnboundedReceiver<CallEvent>) -> Vec<CallEvent> {
    let mut events = Vec::new();
    while let Ok(event) = rx.try_recv() {
        events.push(event);
    }
    events
}

pub const SHORT: Duration = Duration::from_millis(150);
