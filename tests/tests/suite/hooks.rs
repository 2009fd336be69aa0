//! The hook chain and approval (H1, H2, C2) through the real pipeline, before the call: preset
//! order, deny wins over ask over allow, rewrites validated again, timeouts and on_error, and
//! hostile hooks that loop, bomb memory, deny everything or return invalid arguments. The host
//! stays alive and the policy holds. After the call: `hooks_post.rs`.

use crate::hooks_common::*;

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

    // The user saying no is DECLINED (the turn ends), not a policy DENIED.
    let s = session_with(&hooks, "", Ok(false)).await;
    let err = call(&s, "write_file", r#"{"path":"n.txt","content":"x"}"#)
        .await
        .result
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Declined);
    assert!(!s.work.path().join("n.txt").exists());

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
    // A post-hook that bombs withholds the result (its default on_error, H2), and keeps it
    // only when the preset says so.
    let s = session(&scripted(
        "post",
        "memory_mb = 32",
        r#"{ attack = "memory" }"#,
    ))
    .await;
    let err = call(&s, "read_file", r#"{"path":"a.txt"}"#)
        .await
        .result
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Denied);
    assert!(err.message.contains("withheld"), "{}", err.message);
    let s = session(&scripted(
        "post",
        "memory_mb = 32\non_error = \"keep\"",
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
