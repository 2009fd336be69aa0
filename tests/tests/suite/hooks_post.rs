//! Hooks after the call and hook loading (H1, H2): post-hooks replace or annotate results and
//! follow on_error, the example hooks, sha256 pins, a tool plugin offered as a hook, and an
//! interrupted call reported as interrupted, whatever post-hook follows it.

use crate::hooks_common::*;

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
    let resolved = resolve_preset(path.to_str().unwrap(), work.path(), home.path());
    let approval = Approval {
        policy: resolved.approval,
        approver: Box::new(ScriptedApprover {
            answer: Ok(true),
            asked: Mutex::new(Vec::new()),
        }),
    };
    let store = PluginStore::open(home.path());
    let err = HookChain::load(sandbox(), &store, &resolved, approval)
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

/// A call interrupted while it runs ends `CANCELLED`, "interrupted while running", whatever
/// post-tool hook follows it: the hook, interrupted too, cannot inspect what the call returned,
/// so that stays withheld, but the call is not reported as the hook's failure.
#[tokio::test]
async fn an_interrupted_call_is_reported_as_interrupted_not_blamed_on_the_post_hook() {
    let hooks = format!(
        "[plugins.bench]\nsource = \"{}\"\nmounts = [{{ host = \".\", guest = \"/workspace\", mode = \"ro\" }}]\n\
         [[hooks]]\nsource = \"builtin:redact-secrets\"\non = \"post\"\n",
        hook_wasm("bench_tools.wasm")
    );
    let s = session(&hooks).await;
    let cancel = CancellationToken::new();
    let cx = CallContext {
        sandbox: sandbox(),
        registry: &s.registry,
        aliases: &AliasTable::default(),
        spill: None,
        gate: &s.chain,
        session_id: "s1",
        preset: "test",
        cancel: cancel.clone(),
        live: None,
        locks: Default::default(),
    };
    let interrupt = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        cancel.cancel();
    };
    let (done, ()) = tokio::join!(run_call(&cx, "c1", "nap", r#"{"ms": 20000}"#), interrupt);
    let error = done.result.unwrap_err();
    assert_eq!(error.code, ErrorCode::Cancelled, "{}", error.message);
    assert!(
        error.message.starts_with("interrupted while running"),
        "the call is reported as interrupted, not as the hook's: {}",
        error.message
    );
    assert!(error.message.contains("withheld"), "{}", error.message);
}
