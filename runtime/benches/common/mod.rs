//! What every benchmark measures with: percentiles, microseconds, and the built plugins.

#![allow(dead_code)]

pub mod oci;

use std::path::Path;
use std::time::Duration;

/// Runs a benchmark's async body on a two-worker runtime, as every bench does.
pub fn block_on(body: impl std::future::Future<Output = ()>) {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(body);
}

/// The `p` quantile (0.0..=1.0) of `samples`, which it sorts.
pub fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let index = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[index]
}

pub fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// The bytes of a plugin built by `cargo xtask build-plugins`.
pub fn plugin_bytes(file: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/target/wasm32-wasip2/release")
        .join(file);
    std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run `cargo xtask build-plugins`", path.display()))
}

/// A call context with no hooks, no spill and a fresh cancellation token, for benches that
/// measure the pipeline itself.
pub fn open_context<'a>(
    sandbox: &'a paddock_sandbox::Sandbox,
    registry: &'a paddock::calls::Registry,
    aliases: &'a paddock::calls::AliasTable,
) -> paddock::pipeline::CallContext<'a> {
    paddock::pipeline::CallContext {
        sandbox,
        registry,
        aliases,
        spill: None,
        gate: &paddock::pipeline::OpenGate,
        session_id: "bench",
        preset: "bench",
        cancel: tokio_util::sync::CancellationToken::new(),
        live: None,
        locks: Default::default(),
    }
}

/// A registry from a preset whose `[plugins.*]` tables are `plugins`, where `{bench}` stands
/// for the path of the built bench plugin. Relative mounts resolve against `work`.
pub async fn registry(
    sandbox: &paddock_sandbox::Sandbox,
    work: &Path,
    home: &Path,
    plugins: &str,
) -> paddock::calls::Registry {
    let wasm = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/target/wasm32-wasip2/release/bench_tools.wasm");
    assert!(
        wasm.exists(),
        "{}: run `cargo xtask build-plugins`",
        wasm.display()
    );
    let toml = format!(
        "name = \"bench\"\n{}",
        plugins.replace("{bench}", &wasm.display().to_string())
    );
    let file = home.join("bench.toml");
    std::fs::write(&file, toml).expect("preset");
    let file = file.to_str().expect("utf-8 temp path").to_string();
    let cx = paddock::preset::ResolveContext {
        cwd: work,
        data_dir: home,
        spill: None,
        mount_override: None,
    };
    let resolved = paddock::preset::load(&file)
        .expect("preset loads")
        .resolve(&file, &cx)
        .expect("preset resolves");
    paddock::calls::Registry::load(
        sandbox,
        &paddock::plugin_store::PluginStore::open(home),
        &resolved,
    )
    .await
    .expect("registry")
}
