//! `first_request_ms`: the first run after an install or upgrade, through the real binary:
//! `paddock run` with the default preset's plugins (fs and search) and an empty code cache,
//! from starting the process to its first request reaching a loopback model server.
//! `first_request_warm_ms`: the same run again, the cache filled (for comparison).

use std::path::Path;
use std::time::{Duration, Instant};

use super::loopback::{Loopback, Reply};

/// (empty cache, filled cache), in milliseconds.
pub fn first_request() -> (f64, f64) {
    let server = Loopback::start(|_, _| Reply::Text("done".into()));
    let work = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("tempdir");
    let preset = format!(
        "[model]\nprovider = \"openai\"\nmodel = \"bench\"\nbase_url = \"{}\"\n\n\
         [plugins.fs]\nsource = \"builtin:fs\"\n\
         mounts = [{{ host = \".\", guest = \"/workspace\", mode = \"ro\" }}]\n\n\
         [plugins.search]\nsource = \"builtin:search\"\n\
         mounts = [{{ host = \".\", guest = \"/workspace\", mode = \"ro\" }}]\n\n\
         [tools]\nenable = [\"read_file\", \"list_dir\", \"grep\", \"glob\"]\n",
        server.base_url()
    );
    std::fs::write(work.path().join("first.toml"), preset).expect("preset");
    let cold = run_once(&server, home.path(), work.path());
    let cached = std::fs::read_dir(home.path().join("cache"))
        .map(|dir| dir.filter_map(Result::ok).count())
        .unwrap_or(0);
    assert!(cached >= 2, "the run compiled and cached fs and search");
    let warm = run_once(&server, home.path(), work.path());
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "first request through the binary: {:.0} ms on an empty cache, {:.0} ms cached",
        ms(cold),
        ms(warm)
    );
    (ms(cold), ms(warm))
}

fn run_once(server: &Loopback, home: &Path, cwd: &Path) -> Duration {
    let before = server.timings().len();
    let started = Instant::now();
    let status = super::paddock(home, cwd, &["run", "--preset", "first.toml", "hello"])
        .status()
        .expect("run paddock");
    assert!(status.success(), "the first-run session failed: {status}");
    let timings = server.timings();
    assert_eq!(timings.len(), before + 1, "one request");
    timings[before].first_byte - started
}
