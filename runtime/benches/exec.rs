//! `cargo xtask bench exec`: what kernel confinement costs a program started through the
//! `exec` capability (K1), measured in one run.
//!
//! The same call, `run_command {"program":"true"}` through the built-in `shell` plugin and the
//! whole pipeline, once with the program confined (namespaces, Landlock, seccomp, rlimits) and
//! once with `confine = "off"`; samples interleave so that both sides see the same machine.
//!
//! Then the same confined call with a 100,000-file tree mounted read-write instead of an almost
//! empty one, alternating with the small one: before and after every confined run paddock walks
//! the writable mounts for protected paths (K2), and this is what that walk costs.
//!
//! Ends with one line: `BENCH exec_p50_us=… plain_p50_us=… confined_over_plain=…
//! tree100k_p50_us=… tree100k_over_small=…`.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use common::{micros, percentile};

use std::time::{Duration, Instant};

use paddock::calls::{AliasTable, Registry};
use paddock::pipeline::run_call;
use paddock_sandbox::Sandbox;

const ROUNDS: usize = 300;

const TREE_ROUNDS: usize = 30;

/// A project-shaped tree of 100,000 files: 10 top directories of 100 directories of 100 files.
fn big_tree(root: &std::path::Path) {
    for top in 0..10 {
        for sub in 0..100 {
            let dir = root.join(format!("d{top}/s{sub}"));
            std::fs::create_dir_all(&dir).expect("tree dir");
            for file in 0..100 {
                std::fs::write(dir.join(format!("f{file}.rs")), "").expect("tree file");
            }
        }
    }
}

fn preset(confine: &str) -> String {
    preset_at(".", confine)
}

fn preset_at(host: &str, confine: &str) -> String {
    format!(
        "[plugins.shell]\nsource = \"builtin:shell\"\n\
         mounts = [{{ host = {host:?}, guest = \"/workspace\", mode = \"rw\" }}]\n\
         grants.exec = {{ allow = [\"true\"], env = [\"PATH\"], confine = \"{confine}\" }}\n\
         [approval]\nhigh = \"allow\"\n"
    )
}

/// Runs `run_command true` through each registry in turn, `rounds` times after `warm` rounds
/// that warm caches (and probe the kernel once): alternating, so both see the same machine.
async fn alternate<const N: usize>(
    sandbox: &Sandbox,
    registries: [&Registry; N],
    aliases: &AliasTable,
    rounds: usize,
    warm: usize,
) -> [Vec<Duration>; N] {
    let mut samples: [Vec<Duration>; N] = std::array::from_fn(|_| Vec::with_capacity(rounds));
    for round in 0..rounds + warm {
        for (registry, samples) in registries.iter().zip(samples.iter_mut()) {
            let cx = common::open_context(sandbox, registry, aliases);
            let started = Instant::now();
            let done = run_call(&cx, "b", "run_command", r#"{"program":"true"}"#).await;
            let elapsed = started.elapsed();
            let out = done.result.expect("true runs");
            assert!(out.content.starts_with("exit status 0"), "{}", out.content);
            if round >= warm {
                samples.push(elapsed);
            }
        }
    }
    samples
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
    let [mut on, mut off] = alternate(&sandbox, [&confined, &plain], &aliases, ROUNDS, 10).await;
    let on_p50 = percentile(&mut on, 0.5);
    let off_p50 = percentile(&mut off, 0.5);
    println!(
        "confined p50 {:.0} us p90 {:.0} us; plain p50 {:.0} us p90 {:.0} us",
        micros(on_p50),
        micros(percentile(&mut on, 0.9)),
        micros(off_p50),
        micros(percentile(&mut off, 0.9)),
    );
    let tree = tempfile::tempdir().expect("tempdir");
    big_tree(tree.path());
    let home_tree = tempfile::tempdir().expect("tempdir");
    let big = common::registry(
        &sandbox,
        work.path(),
        home_tree.path(),
        &preset_at(&tree.path().display().to_string(), "on"),
    )
    .await;
    let [mut small, mut large] =
        alternate(&sandbox, [&confined, &big], &aliases, TREE_ROUNDS, 2).await;
    let small_p50 = percentile(&mut small, 0.5);
    let large_p50 = percentile(&mut large, 0.5);
    println!(
        "100k-file tree p50 {:.0} us p90 {:.0} us; small tree p50 {:.0} us",
        micros(large_p50),
        micros(percentile(&mut large, 0.9)),
        micros(small_p50),
    );
    println!(
        "BENCH exec_p50_us={:.1} plain_p50_us={:.1} confined_over_plain={:.2} \
         tree100k_p50_us={:.1} tree100k_over_small={:.1}",
        micros(on_p50),
        micros(off_p50),
        on_p50.as_secs_f64() / off_p50.as_secs_f64(),
        micros(large_p50),
        large_p50.as_secs_f64() / small_p50.as_secs_f64()
    );
}
