//! The gate around each call (H1, C3): a denied call never runs, rewritten arguments are
//! validated again, and the tool runs with, and reports, the arguments it was given; a path a
//! tool could not use is explained by the host, which knows the mounts and protected paths.

use paddock::calls::AliasTable;
use std::sync::Mutex;

use paddock::calls::Registry;
use paddock::pipeline::{
    Admission, AfterCall, CallContext, CallGate, GateCall, OpenGate, run_call,
};
use paddock::plugin_store::PluginStore;
use paddock_tests::{resolve_preset, sandbox};
use paddock_types::contract::{ErrorCode, ToolOutput, ToolResult};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A gate scripted by the test: its decision before, and a note it adds after.
struct ScriptedGate {
    before: Admission,
    seen_after: Mutex<Vec<Value>>,
}

#[async_trait::async_trait]
impl CallGate for ScriptedGate {
    async fn before(&self, _call: GateCall<'_>) -> Admission {
        self.before.clone()
    }

    async fn after(&self, call: GateCall<'_>, result: ToolResult) -> AfterCall {
        self.seen_after.lock().unwrap().push(call.args.clone());
        AfterCall {
            result,
            context: vec!["checked by the test gate".into()],
        }
    }
}

struct Session {
    work: tempfile::TempDir,
    _home: tempfile::TempDir,
    registry: Registry,
}

async fn session() -> Session {
    session_with("default").await
}

/// A session under `preset` (the registry holds only the tools the preset selects).
async fn session_with(preset: &str) -> Session {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(work.path().join("b.txt"), "beta\n").unwrap();
    let store = PluginStore::open(home.path());
    let resolved = resolve_preset(preset, work.path(), home.path());
    let registry = Registry::load(sandbox(), &store, &resolved).await.unwrap();
    Session {
        work,
        _home: home,
        registry,
    }
}

fn context<'a>(s: &'a Session, gate: &'a dyn CallGate) -> CallContext<'a> {
    CallContext {
        sandbox: sandbox(),
        registry: &s.registry,
        aliases: &ALIASES,
        spill: None,
        gate,
        session_id: "test",
        preset: "default",
        cancel: CancellationToken::new(),
        live: None,
        locks: Default::default(),
    }
}

fn gate(before: Admission) -> ScriptedGate {
    ScriptedGate {
        before,
        seen_after: Mutex::new(Vec::new()),
    }
}

#[tokio::test]
async fn an_open_gate_runs_the_call_as_validated() {
    let s = session().await;
    let done = run_call(
        &context(&s, &OpenGate),
        "c1",
        "read_file",
        r#"{"path":"a.txt"}"#,
    )
    .await;
    assert_eq!(done.result.unwrap().content, "     1\talpha\n");
    assert_eq!(done.args, Some(json!({"path": "a.txt"})));
}

#[tokio::test]
async fn a_denied_call_never_runs() {
    // `coding` has write_file; the gate, not the tool selection, must stop it.
    let s = session_with("coding").await;
    let g = gate(Admission::Deny {
        reason: "no writes today".into(),
        context: vec!["policy".into()],
    });
    let done = run_call(
        &context(&s, &g),
        "c1",
        "write_file",
        r#"{"path":"new.txt","content":"x"}"#,
    )
    .await;
    let err = done.result.unwrap_err();
    assert_eq!(err.code, ErrorCode::Denied);
    assert!(err.message.contains("no writes today"));
    assert_eq!(done.context, ["policy"]);
    assert!(done.report.is_none());
    assert!(!s.work.path().join("new.txt").exists());
    assert!(
        g.seen_after.lock().unwrap().is_empty(),
        "post-hooks see only calls that ran"
    );
}

#[tokio::test]
async fn rewritten_arguments_are_validated_again() {
    let s = session().await;
    let g = gate(Admission::Allow {
        args: json!({"path": 42}),
        context: vec![],
    });
    let done = run_call(&context(&s, &g), "c1", "read_file", r#"{"path":"a.txt"}"#).await;
    let err = done.result.unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgs);
    assert!(
        err.message
            .contains("a pre-tool hook rewrote the arguments"),
        "{}",
        err.message
    );
    assert!(done.report.is_none());
}

#[tokio::test]
async fn the_tool_runs_with_and_reports_the_rewritten_arguments() {
    let s = session().await;
    let g = gate(Admission::Allow {
        args: json!({"path": "b.txt"}),
        context: vec![],
    });
    let done = run_call(&context(&s, &g), "c1", "read_file", r#"{"path":"a.txt"}"#).await;
    assert_eq!(
        done.result,
        Ok(ToolOutput {
            content: "     1\tbeta\n".into(),
            truncated: false,
            continuation: None
        })
    );
    assert_eq!(done.args, Some(json!({"path": "b.txt"})));
    assert_eq!(*g.seen_after.lock().unwrap(), [json!({"path": "b.txt"})]);
    assert_eq!(done.context, ["checked by the test gate"]);
}

/// The built-in alias table, as a session without preset aliases has it.
static ALIASES: std::sync::LazyLock<AliasTable> = std::sync::LazyLock::new(AliasTable::default);

/// A plugin sees only its mounts, so to it an absolute path outside them is "not found", and a
/// protected file or a read-only mount "permission denied". The host says which, with the way
/// out: outside the mounts (naming them), protected (naming the rule and `writable_protected`),
/// a read-only mount.
#[tokio::test]
async fn a_path_a_tool_could_not_use_is_explained_by_what_stopped_it() {
    let s = session_with("coding").await;
    std::fs::create_dir(s.work.path().join(".git")).unwrap();
    std::fs::write(s.work.path().join(".git/config"), "[core]\n").unwrap();
    let call = |tool: &'static str, args: &'static str| {
        let s = &s;
        async move {
            run_call(&context(s, &OpenGate), "c1", tool, args)
                .await
                .result
                .unwrap_err()
        }
    };
    let outside = call("read_file", r#"{"path":"/etc/hostname"}"#).await;
    assert!(
        outside
            .message
            .contains("/etc/hostname: outside the mounts this tool was granted (/workspace")
            && outside.code.as_str() == "NOT_FOUND",
        "{outside:?}"
    );
    let protected = call("write_file", r#"{"path":".git/config","content":"x"}"#).await;
    assert!(
        protected.message.contains(".git/config: protected")
            && protected.message.contains("writable_protected"),
        "{protected:?}"
    );
    assert_eq!(
        std::fs::read_to_string(s.work.path().join(".git/config")).unwrap(),
        "[core]\n"
    );
    // A missing file inside the mount is still just not found.
    let missing = call("read_file", r#"{"path":"nope.txt"}"#).await;
    assert!(
        !missing.message.contains("outside the mounts"),
        "{missing:?}"
    );

    let s = session_with("default").await;
    let done = run_call(
        &context(&s, &OpenGate),
        "c1",
        "read_file",
        r#"{"path":"/workspace/../etc/passwd"}"#,
    )
    .await;
    let error = done.result.unwrap_err();
    assert!(error.message.contains("outside the mounts"), "{error:?}");
}
