//! Built-ins are registered from descriptions recorded when they were built, and compiled in
//! the background (S8). The descriptions must say
//! exactly what the code lists, and a description that says anything else must never decide
//! what runs: the compiled code's imports are checked against the grant again, and every
//! call of a plugin whose code differs from its description fails with nothing run.
//!
//! `PADDOCK_BLESS=1 cargo test -p paddock-tests --test suite builtin_described` writes the
//! descriptions (`plugins/described/NAME.json`) from the built plugins; rebuild paddock after.

use std::path::PathBuf;

use bytes::Bytes;
use paddock_sandbox::builtin::{builtin, builtin_description, builtin_names};
use paddock_sandbox::{Capability, Description, MountMode, PreToolUse};
use paddock_tests::{grant, plugin_bytes, sandbox};
use paddock_types::contract::ErrorCode;
use tokio_util::sync::CancellationToken;

fn described_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../plugins/described")
}

/// Every built-in's description, file and embedded copy, is what its compiled code says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_builtin_is_described_exactly_as_its_code_lists_it() {
    let bless = std::env::var_os("PADDOCK_BLESS").is_some();
    let names = builtin_names();
    assert!(names.len() >= 7, "built-ins missing: {names:?}");
    let mut stale = Vec::new();
    for name in names {
        let wasm = builtin(name).unwrap();
        let described = sandbox().describe(name, wasm).await.unwrap();
        let text = serde_json::to_string_pretty(&described).unwrap() + "\n";
        let file = described_dir().join(format!("{name}.json"));
        if bless {
            std::fs::create_dir_all(described_dir()).unwrap();
            std::fs::write(&file, &text).unwrap();
            continue;
        }
        if std::fs::read_to_string(&file).ok().as_deref() != Some(text.as_str()) {
            stale.push(format!("{} differs from the built plugin", file.display()));
        } else if builtin_description(name) != Some(text.as_str()) {
            stale.push(format!("{name}: this binary embeds another description"));
        }
    }
    assert!(
        stale.is_empty(),
        "{}; after `cargo xtask build-plugins`, run `PADDOCK_BLESS=1 cargo test -p \
         paddock-tests --test suite builtin_described` and rebuild",
        stale.join("; ")
    );
}

/// A built-in loaded by its bytes is registered from its description without compiling, and
/// its first call compiles it and runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_described_builtin_is_listed_at_once_and_compiled_by_its_first_call() {
    let dir = tempfile::tempdir().unwrap();
    let fresh = paddock_sandbox::Sandbox::new(dir.path().join("cache")).unwrap();
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
    let fs = fresh.load("fs", builtin("fs").unwrap(), &[]).await.unwrap();
    assert_eq!(fs.cache, paddock_sandbox::CacheUse::Deferred);
    assert!(fs.tool("read_file").is_some());
    assert!(
        !dir.path().join("cache").exists(),
        "nothing is compiled before a call"
    );
    let report = fresh
        .call(
            &fs,
            "read_file",
            r#"{"path":"a.txt"}"#,
            &grant(dir.path(), MountMode::Ro),
            &CancellationToken::new(),
        )
        .await;
    let content = report.result.expect("read_file runs").content;
    assert!(content.contains("two"), "{content}");
    assert!(dir.path().join("cache").exists(), "the compile was cached");
}

fn description_of(name: &str) -> Description {
    serde_json::from_str(builtin_description(name).expect("built with a description")).unwrap()
}

/// A description that misstates a tool (here: `write_file` claimed read-only) fails every
/// call of the plugin, and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_description_that_misstates_a_tool_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut lie = description_of("fs");
    let write = lie
        .tools
        .iter_mut()
        .find(|t| t.name == "write_file")
        .unwrap();
    write.meta.read_only = Some(true);
    let fs = sandbox()
        .load_described("fs", Bytes::from_static(builtin("fs").unwrap()), &[], lie)
        .unwrap();
    for (tool, args) in [
        ("write_file", r#"{"path":"new.txt","content":"x"}"#),
        ("read_file", r#"{"path":"new.txt"}"#),
    ] {
        let report = sandbox()
            .call(
                &fs,
                tool,
                args,
                &grant(dir.path(), MountMode::Rw),
                &CancellationToken::new(),
            )
            .await;
        let error = report.result.expect_err("a misdescribed plugin never runs");
        assert_eq!(error.code, ErrorCode::BadPlugin, "{}", error.message);
        assert!(
            error
                .message
                .contains("tool `write_file` is not as described"),
            "{}",
            error.message
        );
        assert!(error.message.contains("nothing ran"), "{}", error.message);
    }
    assert!(!dir.path().join("new.txt").exists());
}

/// A description that leaves out a capability import cannot get the plugin loaded without
/// the grant: the compiled code's imports are checked again, and the call is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_description_cannot_widen_what_a_plugin_may_import() {
    let wasm = plugin_bytes("hostile_ungranted_exec.wasm");
    let mut lie = sandbox()
        .describe("sneaky", &wasm)
        .await
        .expect("loads when granted everything");
    let exec = Capability::Exec.interface();
    assert!(lie.imports.iter().any(|i| i == exec), "{:?}", lie.imports);
    lie.imports.retain(|i| i != exec);
    let plugin = sandbox()
        .load_described("sneaky", Bytes::from(wasm), &[], lie)
        .expect("the description alone passes the grant check");
    let dir = tempfile::tempdir().unwrap();
    let report = sandbox()
        .call(
            &plugin,
            "run_anything",
            r#"{"program":"/bin/sh","args":["-c","touch pwned"]}"#,
            &grant(dir.path(), MountMode::Rw),
            &CancellationToken::new(),
        )
        .await;
    let error = report.result.expect_err("refused");
    assert_eq!(error.code, ErrorCode::BadPlugin, "{}", error.message);
    assert!(
        error
            .message
            .contains("`exec` capability, which its preset does not grant"),
        "{}",
        error.message
    );
    assert!(!dir.path().join("pwned").exists());
}

/// A hook description over code that is not that hook (here: the `fs` tool plugin) gets it
/// registered, and it never decides anything: every event fails, so the chain denies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_misdescribed_hook_fails_every_event() {
    let hook = sandbox()
        .load_hook_described(
            "protect-paths",
            Bytes::from_static(builtin("fs").unwrap()),
            &[],
            description_of("protect-paths"),
        )
        .unwrap();
    let event = PreToolUse {
        tool_name: "write_file".into(),
        tool_input: r#"{"path":".git/config","content":"x"}"#.into(),
        read_only: false,
        path_params: vec!["path".into()],
        call_id: "call_1".into(),
        session_id: "s".into(),
        preset: "p".into(),
        config: "{}".into(),
    };
    let dir = tempfile::tempdir().unwrap();
    let error = sandbox()
        .pre_tool_use(
            &hook,
            &event,
            &grant(dir.path(), MountMode::Ro),
            &CancellationToken::new(),
        )
        .await
        .expect_err("a hook that does not match its description never answers");
    assert_eq!(error.code, ErrorCode::BadPlugin, "{}", error.message);
    assert!(
        error
            .message
            .contains("does not implement the paddock hook world"),
        "{}",
        error.message
    );
    assert!(hook.ready().await.is_err());
}
