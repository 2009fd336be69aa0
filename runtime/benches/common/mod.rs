//! What every benchmark measures with: percentiles, microseconds, and the built plugins.

#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

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
