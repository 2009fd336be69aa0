//! `cargo xtask bench exec`: what kernel confinement costs a program started through the
//! `exec` capability (K1), measured in one run.
//!
//! The same call, `run_command {"program":"true"}` through the built-in `shell` plugin and the
//! whole pipeline, once with the program confined (namespaces, Landlock, seccomp, rlimits) and
//! once with `confine = "off"`; samples interleave so that both sides see the same machine.
//!
//! Ends with one line: `BENCH exec_p50_us=… plain_p50_us=… confined_over_plain=…`.

mod common;

use common::{micros, percentile};

use std::time::Instant;

use paddock::calls::AliasTable;
use paddock::pipeline::run_call;
use paddock::sandbox::Sandbox;

const ROUNDS: usize = 300;

fn preset(confine: &str) -> String {
    format!(
        "[plugins.shell]\nsource = \"builtin:shell\"\n\
         mounts = [{{ host = \".\", guest = \"/workspace\", mode = \"rw\" }}]\n\
         grants.exec = {{ allow = [\"true\"], env = [\"PATH\"], confine = \"{confine}\" }}\n\
         [approval]\nhigh = \"allow\"\n"
    )
}

fn main() {
    common::block_on(run());
}

async fn run() {
    let work = tempfile::tempdir().expect("tempdir");
    let home_on = tempfile::tempdir().expect("tempdir");
    let home_off = tempfile::tempdir().expect("tempdir");
    let sandbox = Sandbox::new(work.path().join("cache")).expect("sandbox");
    let confined = common::registry(&sandbox, work.path(), home_on.path(), &preset("on")).await;
    let plain = common::registry(&sandbox, work.path(), home_off.path(), &preset("off")).await;
    let aliases = AliasTable::default();
    let args = r#"{"program":"true"}"#;
    let mut on = Vec::with_capacity(ROUNDS);
    let mut off = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS + 10 {
        for (registry, samples) in [(&confined, &mut on), (&plain, &mut off)] {
            let cx = common::open_context(&sandbox, registry, &aliases);
            let started = Instant::now();
            let done = run_call(&cx, "b", "run_command", args).await;
            let elapsed = started.elapsed();
            let out = done.result.expect("true runs");
            assert!(out.content.starts_with("exit status 0"), "{}", out.content);
            // The first rounds warm caches (and probe the kernel once).
            if round >= 10 {
                samples.push(elapsed);
            }
        }
    }
    let on_p50 = percentile(&mut on, 0.5);
    let off_p50 = percentile(&mut off, 0.5);
    println!(
        "confined p50 {:.0} us p90 {:.0} us; plain p50 {:.0} us p90 {:.0} us",
        micros(on_p50),
        micros(percentile(&mut on, 0.9)),
        micros(off_p50),
        micros(percentile(&mut off, 0.9)),
    );
    println!(
        "BENCH exec_p50_us={:.1} plain_p50_us={:.1} confined_over_plain={:.2}",
        micros(on_p50),
        micros(off_p50),
        on_p50.as_secs_f64() / off_p50.as_secs_f64()
    );
}
