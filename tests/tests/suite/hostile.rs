//! The hostile-plugin suite (S2-S7): every attack in `plugins/hostile/` is contained with its
//! own clear error, and the host keeps serving calls afterwards.

use std::time::{Duration, Instant};

use paddock_sandbox::{CacheUse, CallReport, Grant, LoadError, MountMode, Plugin, Sandbox};
use paddock_tests::{grant, load, plugin_bytes, sandbox};
use paddock_types::contract::ErrorCode;
use tokio_util::sync::CancellationToken;

struct Arena {
    /// Holds `secret.txt` next to the mounted `ws/`.
    root: tempfile::TempDir,
    plugin: Plugin,
}

impl Arena {
    async fn new() -> Arena {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("ws")).unwrap();
        std::fs::write(root.path().join("secret.txt"), "TOP SECRET").unwrap();
        std::fs::write(root.path().join("ws/hello.txt"), "hello").unwrap();
        Arena {
            root,
            plugin: load("hostile_attacks.wasm", "attacks").await,
        }
    }

    fn ws(&self) -> std::path::PathBuf {
        self.root.path().join("ws")
    }

    fn grant(&self, mode: MountMode) -> Grant {
        grant(&self.ws(), mode)
    }

    async fn call_with(&self, tool: &str, args: &str, grant: &Grant) -> CallReport {
        sandbox()
            .call(&self.plugin, tool, args, grant, &CancellationToken::new())
            .await
    }

    async fn call(&self, tool: &str, args: &str) -> CallReport {
        self.call_with(tool, args, &self.grant(MountMode::Rw)).await
    }

    /// After an attack, an honest call on the same plugin still works.
    async fn assert_host_alive(&self) {
        let report = self.call("read_path", r#"{"path":"hello.txt"}"#).await;
        assert_eq!(
            report.result.expect("host still serves calls").content,
            "hello"
        );
    }
}

fn error_of(report: &CallReport) -> (&ErrorCode, &str) {
    match &report.result {
        Err(e) => (&e.code, e.message.as_str()),
        Ok(out) => panic!("the attack succeeded: {:?}", out.content),
    }
}

fn plugin_code(code: &str) -> ErrorCode {
    ErrorCode::Plugin(code.to_string())
}

#[tokio::test]
async fn dot_dot_traversal_cannot_leave_the_mount() {
    let arena = Arena::new().await;
    let report = arena.call("read_path", r#"{"path":"../secret.txt"}"#).await;
    let (code, message) = error_of(&report);
    assert_eq!(*code, plugin_code("PERMISSION_DENIED"), "{message}");
    assert!(!message.contains("TOP SECRET"));
    arena.assert_host_alive().await;
}

#[tokio::test]
async fn an_absolute_host_path_is_not_visible() {
    let arena = Arena::new().await;
    let secret = arena.root.path().join("secret.txt");
    let args = serde_json::json!({ "path": secret }).to_string();
    let report = arena.call("read_path", &args).await;
    let (code, _) = error_of(&report);
    assert!(
        matches!(code, ErrorCode::Plugin(c) if c == "NOT_FOUND" || c == "PERMISSION_DENIED"),
        "{code}"
    );
    arena.assert_host_alive().await;
}

#[tokio::test]
async fn a_symlink_pointing_outside_the_mount_is_refused() {
    let arena = Arena::new().await;
    std::os::unix::fs::symlink(
        arena.root.path().join("secret.txt"),
        arena.ws().join("link"),
    )
    .unwrap();
    std::os::unix::fs::symlink("../", arena.ws().join("up")).unwrap();
    for path in ["link", "up/secret.txt"] {
        let report = arena
            .call("read_path", &format!(r#"{{"path":"{path}"}}"#))
            .await;
        let (code, message) = error_of(&report);
        assert_eq!(*code, plugin_code("PERMISSION_DENIED"), "{path}: {message}");
    }
    arena.assert_host_alive().await;
}

#[tokio::test]
async fn a_read_only_mount_cannot_be_written() {
    let arena = Arena::new().await;
    let ro = arena.grant(MountMode::Ro);
    let report = arena
        .call_with(
            "write_path",
            r#"{"path":"hello.txt","content":"pwned"}"#,
            &ro,
        )
        .await;
    let (code, _) = error_of(&report);
    assert_eq!(*code, plugin_code("PERMISSION_DENIED"));
    let report = arena
        .call_with("write_path", r#"{"path":"new.txt","content":"pwned"}"#, &ro)
        .await;
    error_of(&report);
    assert_eq!(
        std::fs::read_to_string(arena.ws().join("hello.txt")).unwrap(),
        "hello"
    );
    assert!(!arena.ws().join("new.txt").exists());
    // The same tool with a read-write grant does write: the refusal above was the mount.
    let rw = arena
        .call("write_path", r#"{"path":"new.txt","content":"fine"}"#)
        .await;
    assert!(rw.result.is_ok(), "{:?}", rw.result);
}

#[tokio::test]
async fn a_tool_declared_read_only_gets_read_only_mounts_even_with_a_rw_grant() {
    let arena = Arena::new().await;
    let report = arena
        .call("sneaky_write", r#"{"path":"hello.txt","content":"pwned"}"#)
        .await;
    let (code, _) = error_of(&report);
    assert_eq!(*code, plugin_code("PERMISSION_DENIED"));
    assert_eq!(
        std::fs::read_to_string(arena.ws().join("hello.txt")).unwrap(),
        "hello"
    );
}

#[tokio::test]
async fn no_environment_variables_or_arguments_reach_the_plugin() {
    let arena = Arena::new().await;
    assert!(
        std::env::var_os("PATH").is_some(),
        "the host has an environment to leak"
    );
    let report = arena.call("env", "{}").await;
    let content = report.result.expect("env tool runs").content;
    // Only the call's own limits, as docs/output-paging.md documents: never the host's.
    let fuel = arena.grant(MountMode::Ro).limits.fuel.expect("fuel on");
    let expected = format!("vars=[\"PADDOCK_FUEL={fuel}\"] args=[] home=None");
    assert_eq!(content, expected);
}

#[tokio::test]
async fn sockets_are_refused_and_nothing_connects() {
    let arena = Arena::new().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let report = arena
        .call("connect", &format!(r#"{{"addr":"{addr}"}}"#))
        .await;
    let (code, _) = error_of(&report);
    assert_eq!(*code, plugin_code("SOCKET_REFUSED"));
    assert!(
        listener.accept().is_err(),
        "no connection reached the listener"
    );
}

#[tokio::test]
async fn an_infinite_loop_runs_out_of_fuel() {
    let arena = Arena::new().await;
    let mut g = arena.grant(MountMode::Rw);
    g.limits.fuel = Some(50_000_000);
    let report = arena.call_with("spin", "{}", &g).await;
    let (code, message) = error_of(&report);
    assert_eq!(*code, ErrorCode::OutOfFuel, "{message}");
    assert!(message.contains("raise fuel"));
    arena.assert_host_alive().await;
}

#[tokio::test]
async fn an_infinite_loop_with_fuel_off_hits_the_deadline() {
    let arena = Arena::new().await;
    let mut g = arena.grant(MountMode::Rw);
    g.limits.fuel = None;
    g.limits.timeout = Duration::from_millis(200);
    let report = arena.call_with("spin", "{}", &g).await;
    let (code, message) = error_of(&report);
    assert_eq!(*code, ErrorCode::Timeout, "{message}");
    assert!(message.contains("200 ms"));
    assert!(report.result.as_ref().unwrap_err().retryable);
    arena.assert_host_alive().await;
}

#[tokio::test]
async fn a_plugin_blocked_in_a_host_call_hits_the_deadline() {
    let arena = Arena::new().await;
    let mut g = arena.grant(MountMode::Rw);
    g.limits.timeout = Duration::from_millis(200);
    let report = arena.call_with("sleep", "{}", &g).await;
    assert_eq!(*error_of(&report).0, ErrorCode::Timeout);
    arena.assert_host_alive().await;
}

#[tokio::test]
async fn cancelling_stops_a_runaway_loop() {
    let arena = Arena::new().await;
    let mut g = arena.grant(MountMode::Rw);
    g.limits.fuel = None;
    g.limits.timeout = Duration::from_secs(60);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let report = sandbox()
        .call(&arena.plugin, "spin", "{}", &g, &cancel)
        .await;
    let (code, message) = error_of(&report);
    assert_eq!(*code, ErrorCode::Cancelled);
    assert!(message.contains("interrupted while running"));
    // Liveness, not speed (the bench measures latency): the call did end, long before 60 s.
    assert!(started.elapsed() < Duration::from_secs(30));
    arena.assert_host_alive().await;
}

#[tokio::test]
async fn a_memory_bomb_hits_the_memory_cap() {
    let arena = Arena::new().await;
    let report = arena.call("memory_bomb", "{}").await;
    let (code, message) = error_of(&report);
    assert_eq!(*code, ErrorCode::MemoryLimit, "{message}");
    assert!(message.contains("cap is 64 MiB"), "{message}");
    arena.assert_host_alive().await;
}

#[tokio::test]
async fn deep_recursion_is_a_stack_overflow_trap() {
    let arena = Arena::new().await;
    let report = arena.call("recurse", "{}").await;
    let (code, message) = error_of(&report);
    assert_eq!(*code, ErrorCode::Trap);
    assert!(
        message.contains("stack overflow (recursion too deep)"),
        "{message}"
    );
    // Deep recursion with big frames overflows Rust's stack in linear memory instead.
    let report = arena.call("recurse", r#"{"shadow":true}"#).await;
    let (code, message) = error_of(&report);
    assert_eq!(*code, ErrorCode::Trap);
    assert!(
        message.contains("out-of-bounds memory access") && message.contains("recursion"),
        "{message}"
    );
    arena.assert_host_alive().await;
}

#[tokio::test]
async fn a_gigabyte_of_stdout_is_capped_and_the_plugin_keeps_running() {
    let arena = Arena::new().await;
    let mut g = arena.grant(MountMode::Rw);
    // Scanning a gigabyte for newlines costs more fuel than an honest call needs.
    g.limits.fuel = None;
    g.limits.timeout = Duration::from_secs(120);
    let report = arena.call_with("flood_stdout", "{}", &g).await;
    assert_eq!(
        report
            .result
            .as_ref()
            .expect("the plugin survives a full pipe")
            .content,
        "survived the flood"
    );
    assert_eq!(report.stdout.bytes.len(), 4096);
    assert_eq!(report.stdout.dropped, (1u64 << 30) - 4096);
}

#[tokio::test]
async fn a_gigabyte_result_is_stopped_by_the_memory_cap() {
    let arena = Arena::new().await;
    let report = arena.call("huge_result", r#"{"mib":1024}"#).await;
    assert_eq!(*error_of(&report).0, ErrorCode::MemoryLimit);
    arena.assert_host_alive().await;
}

#[tokio::test]
async fn a_panic_becomes_a_trap_that_keeps_its_message() {
    let arena = Arena::new().await;
    let report = arena.call("panic", "{}").await;
    let (code, message) = error_of(&report);
    assert_eq!(*code, ErrorCode::Trap);
    assert!(
        message.contains("panicked") && message.contains("hostile plugin gave up on purpose"),
        "{message}"
    );
    arena.assert_host_alive().await;
}

#[tokio::test]
async fn unreachable_becomes_a_trap() {
    let arena = Arena::new().await;
    let report = arena.call("unreachable", "{}").await;
    let (code, message) = error_of(&report);
    assert_eq!(*code, ErrorCode::Trap);
    assert!(message.contains("unreachable"), "{message}");
    arena.assert_host_alive().await;
}

#[tokio::test]
async fn a_plugin_cannot_pose_as_a_runtime_condition() {
    let arena = Arena::new().await;
    let report = arena.call("fake_cancel", "{}").await;
    assert_eq!(*error_of(&report).0, plugin_code("CANCELLED"));
    assert_ne!(*error_of(&report).0, ErrorCode::Cancelled);
}

#[tokio::test]
async fn importing_an_ungranted_capability_is_refused_at_load() {
    let err = sandbox()
        .load("sneaky", &plugin_bytes("hostile_ungranted_exec.wasm"), &[])
        .await
        .unwrap_err();
    assert!(
        matches!(err, LoadError::Ungranted { ref capability, .. } if capability == "exec"),
        "{err}"
    );
    assert!(
        err.to_string().contains("plugins.sneaky.grants.exec"),
        "{err}"
    );
}

#[tokio::test]
async fn a_component_of_another_world_is_refused() {
    let err = sandbox()
        .load("cmd", &plugin_bytes("hostile-other-world.wasm"), &[])
        .await
        .unwrap_err();
    assert!(matches!(err, LoadError::WrongWorld { .. }), "{err}");
    assert!(err.to_string().contains("paddock:plugin/tools"), "{err}");
}

#[tokio::test]
async fn random_bytes_and_core_modules_are_not_plugins() {
    let noise: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let err = sandbox().load("noise", &noise, &[]).await.unwrap_err();
    assert!(matches!(err, LoadError::NotAComponent { .. }), "{err}");
    let core_module = b"\0asm\x01\0\0\0".to_vec();
    let err = sandbox().load("core", &core_module, &[]).await.unwrap_err();
    assert!(err.to_string().contains("core wasm module"), "{err}");
    // A component header over garbage fails to compile, with the compiler's reason.
    let mut broken = b"\0asm\x0d\0\x01\0".to_vec();
    broken.extend_from_slice(&noise[..64]);
    let err = sandbox().load("broken", &broken, &[]).await.unwrap_err();
    assert!(matches!(err, LoadError::Compile { .. }), "{err}");
}

#[tokio::test]
async fn a_schema_that_does_not_compile_is_refused() {
    let err = sandbox()
        .load("bad", &plugin_bytes("hostile_bad_schema.wasm"), &[])
        .await
        .unwrap_err();
    assert!(matches!(err, LoadError::BadSpec { .. }), "{err}");
    assert!(err.to_string().contains("tool `broken`"), "{err}");
}

#[tokio::test]
async fn duplicate_tool_names_are_refused() {
    let err = sandbox()
        .load("twins", &plugin_bytes("hostile_duplicate_names.wasm"), &[])
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("two tools are named `twin`"),
        "{err}"
    );
}

#[tokio::test]
async fn nothing_carries_from_one_call_to_the_next_through_the_pool() {
    let arena = Arena::new().await;
    // More calls than one: each gets a pooled slot that an earlier call of the same plugin used
    // and left traces in, reset to the plugin's copy-on-write image.
    for call in 0..4 {
        let report = arena.call("carry_state", "{}").await;
        let content = report.result.expect("carry_state runs").content;
        assert!(
            content.starts_with("found nothing;"),
            "call {call} found state an earlier call left: {content}"
        );
        // No temporary directory is mounted, so there is no file to carry state in either.
        assert!(
            content.ends_with("temp file refused (NotFound)"),
            "{content}"
        );
    }
}

/// The grant a JavaScript tool's call gets in these tests: no mounts, no capability, the
/// default limits but no cap on its output.
fn no_mounts_default_limits() -> Grant {
    Grant {
        limits: paddock_sandbox::Limits {
            output_bytes: None,
            ..paddock_sandbox::Limits::default()
        },
        ..Grant::default()
    }
}

/// A JavaScript tool keeps what its build-time call left in the snapshot componentize-js makes
/// (the example warms itself up that way), and paddock snapshots it again after its warm-up
/// when it compiles it (it imports only `log` and `types`): one `list` call and one call of its
/// correct example. Each call starts from that snapshot: it sees the build-time call, the
/// snapshot's `list` and example, and itself; never an earlier call nor the `list` each load
/// makes, whether it kept its count in a module variable, on the global object or on
/// `Object.prototype`; the same from the snapshot compiled a moment ago and from the one a new
/// process reads from the cache. Compiled as it is, the tool sees no `list` and no example:
/// that is the one thing the snapshot adds.
#[tokio::test]
async fn a_javascript_tool_carries_nothing_from_one_call_to_the_next_through_its_snapshot() {
    let file = "hostile_js_carry_state.wasm";
    let bytes = plugin_bytes(file);
    let cache = tempfile::tempdir().unwrap();
    let grant = no_mounts_default_limits();
    let snapshotted = "module 3 (examples 1), global 3, prototype 3, lists 1 (prototype 1)";
    let plain = "module 2 (examples 0), global 2, prototype 2, lists 0 (prototype 0)";
    for (sandbox, cache_use, expected) in [
        (
            Sandbox::new(cache.path()).unwrap(),
            CacheUse::Compiled,
            snapshotted,
        ),
        (
            Sandbox::new(cache.path()).unwrap(),
            CacheUse::Hit,
            snapshotted,
        ),
        (
            Sandbox::new(cache.path()).unwrap().without_snapshots(),
            CacheUse::Compiled,
            plain,
        ),
    ] {
        let plugin = sandbox.load_now("carry_js", &bytes, &[]).await.unwrap();
        assert_eq!(plugin.cache, cache_use, "{expected}");
        for call in 0..4 {
            let report = sandbox
                .call(
                    &plugin,
                    "carry_state_js",
                    "{}",
                    &grant,
                    &CancellationToken::new(),
                )
                .await;
            let content = report.result.expect("carry_state_js runs").content;
            assert_eq!(
                content, expected,
                "call {call} saw a call other than its own, the build-time one and the snapshot's \
                 list and example"
            );
        }
        // The snapshot is kept beside the component's own compiled code, never in its place.
        let sha256 = &plugin.sha256;
        assert!(sandbox.snapshot_entry_path(sha256).is_file());
        assert_eq!(
            sandbox.cache_entry_path(sha256).is_file(),
            expected == plain
        );
    }
}

/// A JavaScript tool whose correct example never ends: the snapshot's warm-up runs it, its
/// fuel runs out half-way, and the state it left (marks on the module, the global object and
/// `Object.prototype`) is thrown away with its store. The snapshot is taken after `list` alone
/// in a fresh store, so every call sees that `list` and no trace of the example, whether the
/// snapshot was compiled a moment ago or is read from the cache.
#[tokio::test]
async fn a_javascript_example_stopped_half_way_leaves_nothing_in_the_snapshot() {
    let bytes = plugin_bytes("hostile_js_bad_example.wasm");
    let cache = tempfile::tempdir().unwrap();
    let grant = no_mounts_default_limits();
    for cache_use in [CacheUse::Compiled, CacheUse::Hit] {
        let sandbox = Sandbox::new(cache.path()).unwrap();
        let plugin = sandbox.load_now("bad_example", &bytes, &[]).await.unwrap();
        assert_eq!(plugin.cache, cache_use);
        assert!(sandbox.snapshot_entry_path(&plugin.sha256).is_file());
        for call in 0..3 {
            let report = sandbox
                .call(
                    &plugin,
                    "bad_example_js",
                    r#"{"spin": false}"#,
                    &grant,
                    &CancellationToken::new(),
                )
                .await;
            let content = report.result.expect("bad_example_js runs").content;
            assert_eq!(
                content, "calls 1, lists 1, started 0 (global false, prototype false)",
                "call {call} ({cache_use:?}) started from the state the stopped example left"
            );
        }
    }
}
