//! What the hook tests share: a session on the fs plugin with hooks and approval from a
//! preset, a scripted approver, and a call through the real pipeline.

#![allow(dead_code, unused_imports)]

pub use paddock::calls::AliasTable;
pub use std::sync::Mutex;
pub use std::time::{Duration, Instant};

pub use paddock::ask::{Answer, Approver, Question};
pub use paddock::calls::Registry;
pub use paddock::hooks::{Approval, HookChain, HookError};
pub use paddock::pipeline::{CallContext, Executed, run_call};
pub use paddock::plugin_store::PluginStore;
pub use paddock::preset::{ApprovalMode, ApprovalPolicy};
pub use paddock_tests::{plugin_dir, resolve_preset, sandbox};
pub use paddock_types::contract::{ErrorCode, Risk};
pub use tokio_util::sync::CancellationToken;

/// Answers every question the same way and remembers what it was asked.
pub struct ScriptedApprover {
    pub answer: Result<bool, String>,
    pub asked: Mutex<Vec<Question>>,
}

#[async_trait::async_trait]
impl Approver for ScriptedApprover {
    async fn ask(&self, question: &Question) -> Result<Answer, String> {
        self.asked.lock().unwrap().push(question.clone());
        self.answer.clone().map(Answer::from)
    }
}

pub struct Session {
    pub work: tempfile::TempDir,
    pub _home: tempfile::TempDir,
    pub registry: Registry,
    pub chain: HookChain,
}

pub fn hook_wasm(file: &str) -> String {
    plugin_dir().join(file).display().to_string()
}

/// A session on the fs plugin (read-write) with `hooks` (TOML `[[hooks]]` tables) and
/// `approval`, answered by `answer`.
pub async fn session_with(hooks: &str, approval: &str, answer: Result<bool, String>) -> Session {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(
        work.path().join("b.txt"),
        "beta sk-abcdefghijklmnopqrstuvwx1234\n",
    )
    .unwrap();
    let text = format!(
        "[plugins.fs]\nsource = \"builtin:fs\"\nmounts = [{{ host = \".\", guest = \"/workspace\", mode = \"rw\" }}]\n{hooks}\n[approval]\n{approval}\n"
    );
    let path = work.path().join("p.toml");
    std::fs::write(&path, text).unwrap();
    let store = PluginStore::open(home.path());
    let resolved = resolve_preset(path.to_str().unwrap(), work.path(), home.path());
    let registry = Registry::load(sandbox(), &store, &resolved).await.unwrap();
    let approval = Approval {
        policy: resolved.approval,
        approver: Box::new(ScriptedApprover {
            answer,
            asked: Mutex::new(Vec::new()),
        }),
    };
    let chain = HookChain::load(sandbox(), &store, &resolved, approval)
        .await
        .unwrap();
    Session {
        work,
        _home: home,
        registry,
        chain,
    }
}

pub async fn session(hooks: &str) -> Session {
    session_with(hooks, "", Ok(true)).await
}

/// A `[[hooks]]` table for the scripted hostile hook.
pub fn scripted(on: &str, extra: &str, config: &str) -> String {
    format!(
        "[[hooks]]\nsource = \"{}\"\non = \"{on}\"\n{extra}\nconfig = {config}\n",
        hook_wasm("hostile_hook.wasm")
    )
}

pub async fn call(s: &Session, tool: &str, args: &str) -> Executed {
    let cx = CallContext {
        sandbox: sandbox(),
        registry: &s.registry,
        aliases: &ALIASES,
        spill: None,
        gate: &s.chain,
        session_id: "s1",
        preset: "test",
        cancel: CancellationToken::new(),
        live: None,
        locks: Default::default(),
    };
    run_call(&cx, "c1", tool, args).await
}

pub async fn assert_host_alive(s: &Session) {
    let done = call(s, "read_file", r#"{"path":"a.txt"}"#).await;
    assert_eq!(done.result.unwrap().content, "     1\talpha\n");
}

/// The built-in alias table, as a session without preset aliases has it.
static ALIASES: std::sync::LazyLock<AliasTable> = std::sync::LazyLock::new(AliasTable::default);
