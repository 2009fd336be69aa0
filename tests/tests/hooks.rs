//! The hook chain and approval (H1, H2, C2) through the real pipeline: preset order, deny wins
//! over ask over allow, rewrites validated again, timeouts and on_error, post-hooks, the
//! example hooks, and hostile hooks that loop, bomb memory, deny everything or return invalid
//! arguments. The host stays alive and the policy holds.

use paddock::calls::AliasTable;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use paddock::calls::Registry;
use paddock::contract::{ErrorCode, Risk};
use paddock::exec::{CallContext, Executed, run_call};
use paddock::hooks::{Approval, Approver, HookChain, HookError, Question};
use paddock::plugin_store::PluginStore;
use paddock::preset::{self, ApprovalMode, ApprovalPolicy, ResolveContext};
use paddock_tests::{plugin_dir, sandbox};
use tokio_util::sync::CancellationToken;

/// Answers every question the same way and remembers what it was asked.
struct ScriptedApprover {
    answer: Result<bool, String>,
    asked: Mutex<Vec<Question>>,
}

#[async_trait::async_trait]
impl Approver for ScriptedApprover {
    async fn ask(&self, question: &Question) -> Result<bool, String> {
        self.asked.lock().unwrap().push(question.clone());
        self.answer.clone()
    }
}

struct Session {
    work: tempfile::TempDir,
    _home: tempfile::TempDir,
    registry: Registry,
    chain: HookChain,
}

fn hook_wasm(file: &str) -> String {
    plugin_dir().join(file).display().to_string()
}

/// A session on the fs plugin (read-write) with `hooks` (TOML `[[hooks]]` tables) and
/// `approval`, answered by `answer`.
async fn session_with(hooks: &str, approval: &str, answer: Result<bool, String>) -> Session {
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
    let file = preset::load_in(path.to_str().unwrap(), work.path()).unwrap();
    let cx = ResolveContext {
        cwd: work.path(),
        data_dir: home.path(),
        spill: None,
        mount_override: None,
    };
    let resolved = file.resolve("test", &cx).unwrap();
    let registry = Registry::load(sandbox(), &store, &resolved).await.unwrap();
    let approval = Approval {
        policy: resolved.approval,
        approver: Box::new(ScriptedApprover {
            answer,
            asked: Mutex::new(Vec::new()),
        }),
    };
    let chain = HookChain::load(
        sandbox(),
        &store,
        &resolved,
        approval,
        CancellationToken::new(),
    )
    .await
    .unwrap();
    Session {
        work,
        _home: home,
        registry,
        chain,
    }
}

async fn session(hooks: &str) -> Session {
    session_with(hooks, "", Ok(true)).await
}

/// A `[[hooks]]` table for the scripted hostile hook.
fn scripted(on: &str, extra: &str, config: &str) -> String {
    format!(
        "[[hooks]]\nsource = \"{}\"\non = \"{on}\"\n{extra}\nconfig = {config}\n",
        hook_wasm("hostile_hook.wasm")
    )
}

async fn call(s: &Session, tool: &str, args: &str) -> Executed {
    let cx = CallContext {
        sandbox: sandbox(),
        registry: &s.registry,
        aliases: &ALIASES,
        spill: None,
        gate: &s.chain,
        session_id: "s1",
        preset: "test",
        cancel: CancellationToken::new(),
    };
    run_call(&cx, "c1", tool, args).await
}

async fn assert_host_alive(s: &Session) {
    let done = call(s, "read_file", r#"{"path":"a.txt"}"#).await;
    assert_eq!(done.result.unwrap().content, "     1\talpha\n");
}

#[tokio::test]
async fn hooks_run_in_preset_order_and_each_sees_the_previous_rewrite() {
    let hooks = scripted(
        "pre",
        "",
        r#"{ updated_input = '{"path":"b.txt"}', context = "first" }"#,
    ) + &scripted("pre", "", "{ echo = true }");
    let s = session(&hooks).await;
    let done = call(&s, "read_file", r#"{"path":"a.txt"}"#).await;
    assert_eq!(done.context, ["first", r#"saw {"path":"b.txt"}"#]);
    assert_eq!(done.args, Some(serde_json::json!({"path": "b.txt"})));
    assert!(done.result.unwrap().content.contains("beta"));
}

#[tokio::test]
async fn deny_wins_over_ask_and_allow_and_the_user_is_never_asked() {
    let hooks = scripted("pre", "", r#"{ decision = "ask", reason = "unsure" }"#)
        + &scripted("pre", "", r#"{ decision = "allow" }"#)
        + &scripted("pre", "", r#"{ decision = "deny", reason = "not today" }"#);
    let s = session(&hooks).await;
    let done = call(&s, "write_file", r#"{"path":"n.txt","content":"x"}"#).await;
    let err = done.result.unwrap_err();
    assert_eq!(err.code, ErrorCode::Denied);
    assert!(err.message.contains("not today"), "{}", err.message);
    assert!(!s.work.path().join("n.txt").exists());
}

#[tokio::test]
async fn ask_goes_to_the_approver_and_without_one_is_a_deny_naming_the_key() {
    let hooks = scripted("pre", "", r#"{ decision = "ask", reason = "big change" }"#);
    let s = session_with(&hooks, "", Ok(true)).await;
    let done = call(&s, "write_file", r#"{"path":"n.txt","content":"x"}"#).await;
    assert!(done.result.is_ok(), "{:?}", done.result);

    let s = session_with(&hooks, "", Err("there is no terminal to ask on".into())).await;
    let err = call(&s, "write_file", r#"{"path":"n.txt","content":"x"}"#)
        .await
        .result
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Denied);
    assert!(
        err.message.contains("no terminal") && err.message.contains("`hooks[0]`"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn approval_maps_risk_tiers_and_unknown_risk_counts_as_high() {
    let s = session_with("", "medium = \"deny\"", Ok(true)).await;
    let err = call(&s, "write_file", r#"{"path":"n.txt","content":"x"}"#)
        .await
        .result
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Denied);
    assert!(err.message.contains("approval.medium"), "{}", err.message);
    assert_host_alive(&s).await;

    let approval = Approval {
        policy: ApprovalPolicy {
            low: ApprovalMode::Allow,
            medium: ApprovalMode::Ask,
            high: ApprovalMode::Deny,
        },
        approver: Box::new(ScriptedApprover {
            answer: Ok(true),
            asked: Mutex::new(Vec::new()),
        }),
    };
    assert_eq!(approval.mode(None), (ApprovalMode::Deny, "high"));
    assert_eq!(approval.mode(Some(Risk::Low)), (ApprovalMode::Allow, "low"));
}

#[tokio::test]
async fn a_rewrite_into_invalid_arguments_is_refused_by_the_schema() {
    let s = session(&scripted(
        "pre",
        "",
        r#"{ updated_input = '{"path": 42}' }"#,
    ))
    .await;
    let err = call(&s, "read_file", r#"{"path":"a.txt"}"#)
        .await
        .result
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgs);
    assert!(
        err.message.contains("a pre-tool hook rewrote"),
        "{}",
        err.message
    );

    // Input that is not even a JSON object is the hook failing: on_error decides (deny).
    let s = session(&scripted("pre", "", r#"{ updated_input = "rm -rf /" }"#)).await;
    let err = call(&s, "read_file", r#"{"path":"a.txt"}"#)
        .await
        .result
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Denied);
    assert!(err.message.contains("not a JSON object"), "{}", err.message);
}

#[tokio::test]
async fn an_endless_hook_is_stopped_by_its_timeout_and_on_error_decides() {
    let hooks = scripted(
        "pre",
        "timeout_ms = 100\nfuel = \"off\"",
        r#"{ attack = "loop" }"#,
    );
    let s = session(&hooks).await;
    let started = Instant::now();
    let err = call(&s, "read_file", r#"{"path":"a.txt"}"#)
        .await
        .result
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(err.code, ErrorCode::Denied);
    assert!(
        err.message.contains("deadline") && err.message.contains("on_error"),
        "{}",
        err.message
    );

    let hooks = scripted(
        "pre",
        "timeout_ms = 100\non_error = \"allow\"",
        r#"{ attack = "loop" }"#,
    );
    let s = session(&hooks).await;
    assert_host_alive(&s).await;
}

#[tokio::test]
async fn a_memory_bomb_hook_fails_its_call_only() {
    let hooks = scripted("pre", "memory_mb = 32", r#"{ attack = "memory" }"#);
    let s = session(&hooks).await;
    let err = call(&s, "read_file", r#"{"path":"a.txt"}"#)
        .await
        .result
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Denied);
    assert!(err.message.contains("memory"), "{}", err.message);
    // A post-hook that bombs keeps the result (its default on_error).
    let s = session(&scripted(
        "post",
        "memory_mb = 32",
        r#"{ attack = "memory" }"#,
    ))
    .await;
    assert_host_alive(&s).await;
}

#[tokio::test]
async fn a_hook_that_denies_everything_holds_for_every_tool() {
    let s = session(&scripted(
        "pre",
        "",
        r#"{ decision = "deny", reason = "no" }"#,
    ))
    .await;
    for (tool, args) in [
        ("read_file", r#"{"path":"a.txt"}"#),
        ("write_file", r#"{"path":"n.txt","content":"x"}"#),
        ("list_dir", "{}"),
    ] {
        let done = call(&s, tool, args).await;
        assert_eq!(done.result.unwrap_err().code, ErrorCode::Denied, "{tool}");
        assert!(done.report.is_none(), "{tool} must not run");
    }
    assert!(!s.work.path().join("n.txt").exists());
}

#[tokio::test]
async fn post_hooks_replace_results_add_context_and_follow_on_error() {
    let hooks = scripted(
        "post",
        "match = \"read_.*\"",
        r#"{ replace = "swapped", context = "note" }"#,
    );
    let s = session(&hooks).await;
    let done = call(&s, "read_file", r#"{"path":"a.txt"}"#).await;
    assert_eq!(done.result.unwrap().content, "swapped");
    assert_eq!(done.context, ["note"]);
    // The matcher is anchored: list_dir is not read_*.
    let done = call(&s, "list_dir", "{}").await;
    assert!(done.context.is_empty());

    let s = session(&scripted(
        "post",
        "on_error = \"deny\"",
        r#"{ attack = "trap" }"#,
    ))
    .await;
    let err = call(&s, "read_file", r#"{"path":"a.txt"}"#)
        .await
        .result
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Denied);
    assert!(err.message.contains("withheld"), "{}", err.message);
}

#[tokio::test]
async fn the_example_hooks_protect_paths_redact_secrets_and_audit() {
    let hooks = "[[hooks]]\nsource = \"builtin:protect-paths\"\non = \"pre\"\nmatch = \"write_file|edit_file\"\n\
                 [[hooks]]\nsource = \"builtin:redact-secrets\"\non = \"post\"\n\
                 [[hooks]]\nsource = \"builtin:audit\"\non = \"post\"\n";
    let s = session(hooks).await;
    for path in [".git/config", "src/../.env", "/workspace/.git/HEAD"] {
        std::fs::create_dir_all(s.work.path().join(".git")).unwrap();
        let args = serde_json::json!({"path": path, "content": "x"}).to_string();
        let err = call(&s, "write_file", &args).await.result.unwrap_err();
        assert_eq!(err.code, ErrorCode::Denied, "{path}");
        assert!(err.message.contains("protected glob"), "{}", err.message);
    }
    let done = call(&s, "write_file", r#"{"path":"src/ok.rs","content":"x"}"#).await;
    assert!(done.result.is_ok(), "{:?}", done.result);

    let done = call(&s, "read_file", r#"{"path":"b.txt"}"#).await;
    let content = done.result.unwrap().content;
    assert!(
        content.contains("[REDACTED]") && !content.contains("sk-abc"),
        "{content}"
    );
    assert!(done.context[0].starts_with("redact-secrets masked 1"));
    assert!(done.context[1].starts_with("audit: read_file call c1 succeeded"));
}

#[tokio::test]
async fn a_hook_pin_that_does_not_match_is_refused_with_both_hashes() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let pin = "0".repeat(64);
    let path = work.path().join("p.toml");
    std::fs::write(
        &path,
        format!("[[hooks]]\nsource = \"builtin:audit\"\non = \"post\"\nsha256 = \"{pin}\"\n"),
    )
    .unwrap();
    let file = preset::load_in(path.to_str().unwrap(), work.path()).unwrap();
    let cx = ResolveContext {
        cwd: work.path(),
        data_dir: home.path(),
        spill: None,
        mount_override: None,
    };
    let resolved = file.resolve("p", &cx).unwrap();
    let approval = Approval {
        policy: resolved.approval,
        approver: Box::new(ScriptedApprover {
            answer: Ok(true),
            asked: Mutex::new(Vec::new()),
        }),
    };
    let store = PluginStore::open(home.path());
    let err = HookChain::load(
        sandbox(),
        &store,
        &resolved,
        approval,
        CancellationToken::new(),
    )
    .await
    .err()
    .unwrap();
    assert!(matches!(err, HookError::PinMismatch { .. }));
    let message = err.to_string();
    assert!(
        message.contains(&pin) && message.contains("hooks[0].sha256"),
        "{message}"
    );
}

#[tokio::test]
async fn a_tool_plugin_is_not_a_hook() {
    let bytes = std::fs::read(plugin_dir().join("fs.wasm")).unwrap();
    let err = sandbox().load_hook("fs", &bytes, &[]).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("does not implement the paddock hook world"),
        "{err}"
    );
}

/// The built-in alias table, as a session without preset aliases has it.
static ALIASES: std::sync::LazyLock<AliasTable> = std::sync::LazyLock::new(AliasTable::default);
