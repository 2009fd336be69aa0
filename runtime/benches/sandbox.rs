//! `cargo xtask bench sandbox`: what the sandbox costs, as ratios measured in one run.
//!
//! - a trivial call end to end (fresh store, instantiate, call, result) against the same work
//!   as a native function and as a spawned process;
//! - read_file of a 1 MiB file (its first page, as the model gets it) against `std::fs::read`
//!   of the whole file, with the whole file read inside the sandbox printed for reference;
//! - cancel latency over 100 runaway calls;
//! - plugin load from the compiled cache against a cold compile;
//! - the example tool of each authoring language (Rust `word-count`, JavaScript
//!   `js-text-stats`, Python `py-word-freq`): component size; `plugin install` into a fresh
//!   data directory, which compiles it; the first call after that install (`cold`: a new
//!   sandbox on that directory, the verified bytes loaded from the compiled cache, one call);
//!   call p50 over 500 calls, in ten blocks of 50, each in turn with a block of the same
//!   bytes compiled as they are, never snapshotted (`LANG_unsnapshotted_call_p50_us`);
//! - the floor of a JavaScript call (the hostile suite's `carry_state_js`), p50 of 500;
//! - `plugin publish` + `plugin install` of the built-in `fs` through a loopback
//!   `docker-registry` the bench starts, signed and verified, with the compiled-code cache
//!   warm (the compile is excluded: it is measured above), p50 of 5;
//! - the check a session start makes of that installed, signed plugin (blob read and hashed
//!   against its record, its signature verified again against the trusted keys), p50 of 50.
//!
//! Ends with one line: `BENCH call_p50_us=… spawn_over_call=… read1m_over_native=… cancel_p99_ms=… cold_over_cached=…`
//! then per language `LANG_call_p50_us=… LANG_unsnapshotted_call_p50_us=… LANG_cold_ms=…
//! LANG_install_ms=… LANG_size_kb=…` (rust, js, py), then `js_floor_call_p50_us=…
//! install_oci_ms=… verify_ms=…`.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use common::{micros, percentile, plugin_bytes};

use std::path::PathBuf;
use std::time::{Duration, Instant};

use paddock_sandbox::{Grant, Limits, Mount, MountMode, Plugin, Sandbox};
use tokio_util::sync::CancellationToken;

fn grant(mounts: Vec<Mount>) -> Grant {
    Grant {
        mounts,
        capabilities: Vec::new(),
        limits: Limits {
            output_bytes: None,
            ..Limits::default()
        },
        ..Grant::default()
    }
}

async fn timed_calls(
    sandbox: &Sandbox,
    plugin: &Plugin,
    tool: &str,
    args: &str,
    grant: &Grant,
    n: usize,
) -> Vec<Duration> {
    let cancel = CancellationToken::new();
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let report = sandbox.call(plugin, tool, args, grant, &cancel).await;
        samples.push(started.elapsed());
        assert!(report.result.is_ok(), "{tool}: {:?}", report.result);
    }
    samples
}

#[inline(never)]
fn native_echo(args: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(args).expect("json");
    value["text"].as_str().unwrap_or_default().to_string()
}

fn main() {
    common::block_on(run());
}

async fn run() {
    let work = tempfile::tempdir().expect("tempdir");
    let sandbox = Sandbox::new(work.path().join("cache")).expect("sandbox");
    let echo = sandbox
        .load("bench", &plugin_bytes("bench_tools.wasm"), &[])
        .await
        .expect("bench plugin");
    let fs_bytes = plugin_bytes("fs.wasm");
    let fs = sandbox.load("fs", &fs_bytes, &[]).await.expect("fs plugin");
    let args = r#"{"text":"hello"}"#;
    let no_mounts = grant(Vec::new());

    // 1. Trivial call: sandbox vs native vs spawned process. The three are interleaved so
    // that a noisy stretch on this shared machine falls on all of them alike.
    timed_calls(&sandbox, &echo, "echo", args, &no_mounts, 200).await; // warm-up
    let cancel = CancellationToken::new();
    let (mut calls, mut native, mut spawns) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..2000 {
        let started = Instant::now();
        let report = sandbox.call(&echo, "echo", args, &no_mounts, &cancel).await;
        calls.push(started.elapsed());
        assert!(report.result.is_ok(), "echo: {:?}", report.result);
        let started = Instant::now();
        std::hint::black_box(native_echo(std::hint::black_box(args)));
        native.push(started.elapsed());
        if round % 10 == 0 {
            let started = Instant::now();
            let out = std::process::Command::new("echo")
                .arg("hello")
                .output()
                .expect("spawn echo");
            std::hint::black_box(out);
            spawns.push(started.elapsed());
        }
    }
    let call_p50 = percentile(&mut calls, 0.5);
    let call_p99 = percentile(&mut calls, 0.99);
    let native_p50 = percentile(&mut native, 0.5);
    let spawn_p50 = percentile(&mut spawns, 0.5);
    println!(
        "trivial call: sandbox p50 {:.1} us (p99 {:.1}), native p50 {:.2} us, spawn p50 {:.1} us",
        micros(call_p50),
        micros(call_p99),
        micros(native_p50),
        micros(spawn_p50)
    );

    // 2. read_file of 1 MiB against std::fs::read.
    let data = work.path().join("data");
    std::fs::create_dir(&data).expect("mkdir");
    let line = "x".repeat(99) + "\n";
    let file: PathBuf = data.join("one-mib.txt");
    std::fs::write(&file, line.repeat((1 << 20) / line.len())).expect("write");
    let mounted = grant(vec![Mount {
        host: data.clone(),
        guest: "/workspace".into(),
        mode: MountMode::Ro,
        handle: None,
    }]);
    let read_args = r#"{"path":"one-mib.txt","limit":100000}"#;
    // Interleaved, one read_file then one std::fs::read, for the same reason as above.
    timed_calls(&sandbox, &fs, "read_file", read_args, &mounted, 20).await;
    let (mut reads, mut native_reads) = (Vec::new(), Vec::new());
    for _ in 0..500 {
        let started = Instant::now();
        let report = sandbox
            .call(&fs, "read_file", read_args, &mounted, &cancel)
            .await;
        reads.push(started.elapsed());
        assert!(report.result.is_ok(), "read_file: {:?}", report.result);
        let started = Instant::now();
        std::hint::black_box(std::fs::read(&file).expect("read"));
        native_reads.push(started.elapsed());
    }
    let read_p50 = percentile(&mut reads, 0.5);
    let native_read_p50 = percentile(&mut native_reads, 0.5);
    // For reference: the whole file through WASI in one plugin call (read_file reads only the
    // page it returns, about 100 KiB).
    let mut whole = timed_calls(
        &sandbox,
        &echo,
        "read_raw",
        r#"{"path":"one-mib.txt"}"#,
        &mounted,
        100,
    )
    .await;
    let whole_p50 = percentile(&mut whole, 0.5);
    println!(
        "read 1 MiB file: read_file (first page) p50 {:.1} us, whole file in the sandbox p50 {:.1} us, std::fs::read p50 {:.1} us",
        micros(read_p50),
        micros(whole_p50),
        micros(native_read_p50)
    );

    // 3. Cancel latency: 100 runaway calls, each cancelled once it is running.
    let attacks = sandbox
        .load("attacks", &plugin_bytes("hostile_attacks.wasm"), &[])
        .await
        .expect("attacks plugin");
    let mut spin = grant(Vec::new());
    spin.limits.fuel = None;
    spin.limits.timeout = Duration::from_secs(30);
    let mut latencies = Vec::new();
    for _ in 0..100 {
        let cancel = CancellationToken::new();
        let (sandbox, attacks, spin, token) = (
            sandbox.clone(),
            attacks.clone(),
            spin.clone(),
            cancel.clone(),
        );
        let call =
            tokio::spawn(async move { sandbox.call(&attacks, "spin", "{}", &spin, &token).await });
        tokio::time::sleep(Duration::from_millis(5)).await;
        let cancelled_at = Instant::now();
        cancel.cancel();
        let report = call.await.expect("call task");
        latencies.push(cancelled_at.elapsed());
        assert!(report.result.is_err());
    }
    let cancel_p50 = percentile(&mut latencies, 0.5);
    let cancel_p99 = percentile(&mut latencies, 0.99);
    println!(
        "cancel latency: p50 {:.2} ms, p99 {:.2} ms",
        cancel_p50.as_secs_f64() * 1e3,
        cancel_p99.as_secs_f64() * 1e3
    );

    // 4. Load from the compiled cache against a cold compile (fs, 240 KB). `load_now`, not
    // `load`: a built-in is otherwise registered from its build-time description and compiled
    // only at its first call, so `load` alone would time no compile at all.
    let mut cold = Vec::new();
    for i in 0..5 {
        let fresh = Sandbox::new(work.path().join(format!("cold-{i}"))).expect("sandbox");
        let started = Instant::now();
        fresh
            .load_now("fs", &fs_bytes, &[])
            .await
            .expect("cold load");
        cold.push(started.elapsed());
    }
    let mut cached = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        sandbox
            .load_now("fs", &fs_bytes, &[])
            .await
            .expect("cached load");
        cached.push(started.elapsed());
    }
    let cold_p50 = percentile(&mut cold, 0.5);
    let cached_p50 = percentile(&mut cached, 0.5);
    println!(
        "load fs: cold p50 {:.1} ms, cached p50 {:.2} ms",
        cold_p50.as_secs_f64() * 1e3,
        cached_p50.as_secs_f64() * 1e3
    );

    // 5. One example tool per language, each called with about the same small input.
    std::fs::write(work.path().join("words.txt"), "a b a c a b").expect("write words");
    let words = grant(vec![Mount {
        host: work.path().to_path_buf(),
        guest: "/workspace".into(),
        mode: MountMode::Ro,
        handle: None,
    }]);
    let mut languages = String::new();
    for (lang, file, tool, args, grant) in [
        (
            "rust",
            "word_count.wasm",
            "count_words",
            r#"{"path":"words.txt"}"#,
            &words,
        ),
        (
            "js",
            "js_text_stats.wasm",
            "text_stats",
            r#"{"text":"a b a c a b"}"#,
            &no_mounts,
        ),
        (
            "py",
            "py_word_freq.wasm",
            "word_freq",
            r#"{"text":"a b a c a b"}"#,
            &no_mounts,
        ),
    ] {
        let example = language_example(&work.path().join(lang), file, tool, args, grant).await;
        println!(
            "{lang} example {file}: {} KiB, install (compiles) {:.0} ms, first call after \
             install in a fresh data directory {:.0} ms, call p50 {:.1} us (not snapshotted \
             after its warm-up: {:.1} us)",
            example.size / 1024,
            example.install.as_secs_f64() * 1e3,
            example.cold.as_secs_f64() * 1e3,
            micros(example.call_p50),
            micros(example.unsnapshotted_call_p50)
        );
        languages.push_str(&format!(
            " {lang}_call_p50_us={:.1} {lang}_unsnapshotted_call_p50_us={:.1} {lang}_cold_ms={:.0} {lang}_install_ms={:.0} {lang}_size_kb={}",
            micros(example.call_p50),
            micros(example.unsnapshotted_call_p50),
            example.cold.as_secs_f64() * 1e3,
            example.install.as_secs_f64() * 1e3,
            example.size / 1024
        ));
    }

    // 5b. The floor of a JavaScript call: the hostile suite's JavaScript tool, whose call
    // only bumps its counters and formats a line, snapshotted after its warm-up (`list` and
    // its one example) like the example.
    let floor = {
        let sandbox = Sandbox::new(work.path().join("js-floor")).expect("sandbox");
        let plugin = sandbox
            .load_now("floor", &plugin_bytes("hostile_js_carry_state.wasm"), &[])
            .await
            .expect("the JavaScript floor tool loads");
        let tool = "carry_state_js";
        timed_calls(&sandbox, &plugin, tool, "{}", &no_mounts, 20).await; // warm-up
        let mut calls = timed_calls(&sandbox, &plugin, tool, "{}", &no_mounts, 500).await;
        percentile(&mut calls, 0.5)
    };
    println!(
        "js floor (a call that bumps its counters), snapshotted after its warm-up: call p50 {:.1} us",
        micros(floor)
    );
    languages.push_str(&format!(" js_floor_call_p50_us={:.1}", micros(floor)));

    // 6. Publish + install of fs through a loopback registry, and the session-start check.
    let (install_oci, verify) = install_and_verify(&sandbox, work.path(), &fs_bytes).await;
    println!(
        "oci: publish + install fs (signed, compile cache warm) p50 {:.1} ms; session-start \
         verify (digest + signature) p50 {:.3} ms",
        install_oci.as_secs_f64() * 1e3,
        verify.as_secs_f64() * 1e3
    );

    println!(
        "BENCH call_p50_us={:.1} spawn_over_call={:.1} read1m_over_native={:.2} cancel_p99_ms={:.2} cold_over_cached={:.1}{languages} install_oci_ms={:.1} verify_ms={:.3}",
        micros(call_p50),
        spawn_p50.as_secs_f64() / call_p50.as_secs_f64(),
        read_p50.as_secs_f64() / native_read_p50.as_secs_f64(),
        cancel_p99.as_secs_f64() * 1e3,
        cold_p50.as_secs_f64() / cached_p50.as_secs_f64(),
        install_oci.as_secs_f64() * 1e3,
        verify.as_secs_f64() * 1e3
    );
}

/// p50 of publish + install of `fs` through a loopback registry (signed by a key the store
/// trusts; `sandbox`'s cache already holds fs compiled), and p50 of the verified read a
/// session start makes of the installed plugin.
async fn install_and_verify(
    sandbox: &Sandbox,
    work: &std::path::Path,
    fs_bytes: &[u8],
) -> (Duration, Duration) {
    use p256::pkcs8::EncodePublicKey;
    use paddock::plugin_store::{
        AuthChoice, InstallRequest, InstallSource, OciRef, PluginStore, PublishRequest, Widening,
    };
    let registry = common::oci::Registry::start();
    let file = work.join("fs.wasm");
    std::fs::write(&file, fs_bytes).expect("write fs.wasm");
    let key = {
        use sha2::Digest;
        p256::ecdsa::SigningKey::from_slice(&sha2::Sha256::digest(b"paddock bench key"))
            .expect("key")
    };
    let public = work.join("bench.pub");
    let pem = key
        .verifying_key()
        .to_public_key_pem(p256::pkcs8::LineEnding::LF)
        .expect("pem");
    std::fs::write(&public, pem).expect("write key");
    let store = PluginStore::open(work.join("home"));
    store.make_private().expect("data dir");
    store.trust_key("bench", &public, &[]).expect("trust key");
    let auth = AuthChoice::default();
    let target = OciRef::parse(&format!("oci://{}/bench/fs:1.0", registry.addr)).expect("ref");
    let request = InstallRequest {
        auth: &auth,
        allow_unsigned: false,
        widening: Widening::Refuse,
        progress: &|_| {},
    };
    let mut installs = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let publish = PublishRequest {
            file: &file,
            target: &target,
            auth: &auth,
            version: None,
        };
        let published = paddock::plugin_store::publish(sandbox, &publish, &|_| {})
            .await
            .expect("publish");
        let pinned = OciRef::parse(&format!(
            "oci://{}/bench/fs@{}",
            registry.addr, published.manifest_digest
        ))
        .expect("pinned ref");
        paddock::plugin_store::sign(&pinned, &auth, &key, None, &|_| {})
            .await
            .expect("sign");
        let report = store
            .install_from(
                sandbox,
                &InstallSource::Oci(target.clone()),
                Some("fs"),
                &request,
            )
            .await
            .expect("install");
        installs.push(started.elapsed());
        assert!(report.record.origin.is_some());
    }
    let mut verifies = Vec::new();
    for _ in 0..50 {
        let started = Instant::now();
        let bytes = store.verified_bytes("fs").expect("verified read");
        verifies.push(started.elapsed());
        assert_eq!(bytes.len(), fs_bytes.len());
    }
    (
        percentile(&mut installs, 0.5),
        percentile(&mut verifies, 0.5),
    )
}

/// One language's example tool: its size; `paddock plugin install` of it into a fresh data
/// directory (checked, hashed, recorded and compiled into that directory's cache); the cold
/// first call after that install as a new session makes it (a new sandbox on the data
/// directory's cache, the plugin's verified bytes read, loaded, called once); and the call
/// p50 once warm.
async fn language_example(
    home: &std::path::Path,
    file: &str,
    tool: &str,
    args: &str,
    grant: &Grant,
) -> Example {
    use paddock::plugin_store::PluginStore;
    let bytes = plugin_bytes(file);
    let store = PluginStore::open(home);
    store.make_private().expect("data dir");
    let wasm = home.join(file);
    std::fs::write(&wasm, &bytes).expect("write the example");
    let installer = Sandbox::new(store.cache_dir()).expect("sandbox");
    let started = Instant::now();
    store
        .install(&installer, &wasm, Some("example"))
        .await
        .expect("example installs");
    let install = started.elapsed();

    let cancel = CancellationToken::new();
    let started = Instant::now();
    let sandbox = Sandbox::new(store.cache_dir()).expect("sandbox");
    let verified = store.verified_bytes("example").expect("verified read");
    let plugin = sandbox
        .load("example", &verified, &[])
        .await
        .expect("example loads");
    let first = sandbox.call(&plugin, tool, args, grant, &cancel).await;
    let cold = started.elapsed();
    assert!(first.result.is_ok(), "{tool}: {:?}", first.result);
    assert_eq!(
        plugin.cache,
        paddock_sandbox::CacheUse::Hit,
        "compiled at install"
    );

    // The same bytes compiled as they are, never snapshotted (only a component
    // that imports nothing but `log` and `types` is: the JavaScript one), in the same run.
    let plain = Sandbox::new(home.join("cache-without-snapshots"))
        .expect("sandbox")
        .without_snapshots();
    let plain_plugin = plain
        .load_now("example", &bytes, &[])
        .await
        .expect("example loads without a snapshot");
    timed_calls(&sandbox, &plugin, tool, args, grant, 20).await; // warm-up
    timed_calls(&plain, &plain_plugin, tool, args, grant, 20).await; // warm-up
    // Ten blocks of 50 calls of each in turn, so that a noisy stretch of this shared machine
    // falls on both alike and their ratio holds. Blocks, not single calls: alternating two
    // components call by call measures both with cold caches (the Rust example read 80.6 µs
    // that way against 38.9 µs in blocks, in two runs one after the other), which is not what
    // consecutive calls of a tool cost.
    let (mut calls, mut plain_calls) = (Vec::new(), Vec::new());
    for _ in 0..10 {
        calls.extend(timed_calls(&sandbox, &plugin, tool, args, grant, 50).await);
        plain_calls.extend(timed_calls(&plain, &plain_plugin, tool, args, grant, 50).await);
    }
    Example {
        size: bytes.len(),
        install,
        cold,
        call_p50: percentile(&mut calls, 0.5),
        unsnapshotted_call_p50: percentile(&mut plain_calls, 0.5),
    }
}

struct Example {
    size: usize,
    install: Duration,
    cold: Duration,
    call_p50: Duration,
    /// The call p50 of the same component compiled as it is, not snapshotted.
    unsnapshotted_call_p50: Duration,
}
