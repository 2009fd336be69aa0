//! `cargo xtask bench shell`: what the session's persistent shell costs, measured in one run
//! as ratios, since the machine is noisy.
//!
//! - A `shell {"command":"echo x"}` call through the whole pipeline (judged, run in the
//!   session's confined bash, its output reported), against `bash -c 'echo x'` spawned directly,
//!   and against `run_command echo x` (a fresh confined process per call); samples interleave
//!   so that all three see the same machine.
//! - A `write_stdin {"session_id":N,"yield_ms":0}` poll of a background command that prints
//!   nothing: what the model pays to ask whether a server is still running.
//! - 100 MB of output through the call's budget: the wall time of the call, and how much the
//!   bench process's peak resident memory grows (the report keeps head and tail, the rest goes
//!   to a file); the answer must fit the tool's budget.
//!
//! Ends with one line: `BENCH shell_p50_us=… bash_c_p50_us=… run_command_p50_us=…
//! shell_over_bash_c=… shell_over_run_command=… poll_p50_us=… out100mb_ms=…
//! out100mb_rss_growth_mb=…`.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use common::{micros, percentile};

use std::time::{Duration, Instant};

use paddock::calls::{AliasTable, Registry};
use paddock::pipeline::{CallContext, run_call};
use paddock_sandbox::Sandbox;

const ROUNDS: usize = 200;
const WARM: usize = 10;
const POLLS: usize = 300;
const OUT_BYTES: u64 = 100_000_000;

/// Every command for `shell`; `run_command` looks programs up by name in the list, which does
/// not take `*` for every program, so `echo` is named too.
const PRESET: &str = "[plugins.shell]\nsource = \"builtin:shell\"\n\
    mounts = [{ host = \".\", guest = \"/workspace\", mode = \"rw\" }]\n\
    grants.exec = { allow = [\"*\", \"echo\"], env = [\"PATH\"], timeout_ms = 120_000 }\n\
    [approval]\nhigh = \"allow\"\n";

/// The answer of one call, which must have succeeded.
async fn call(cx: &CallContext<'_>, name: &str, arguments: &str) -> String {
    let done = run_call(cx, "b", name, arguments).await;
    match done.result {
        Ok(out) => out.content,
        Err(e) => panic!("{name} {arguments}: {e:?}"),
    }
}

/// The process's peak resident memory so far, in bytes (`VmHWM`).
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status");
    kb * 1024
}

/// `shell echo x`, `bash -c 'echo x'` and `run_command echo x`, in turn, `ROUNDS` times after
/// `WARM` rounds that start the session's shell and warm the caches.
async fn echo_rounds(cx: &CallContext<'_>, work: &std::path::Path) -> [Vec<Duration>; 3] {
    let mut samples: [Vec<Duration>; 3] = std::array::from_fn(|_| Vec::with_capacity(ROUNDS));
    for round in 0..ROUNDS + WARM {
        let started = Instant::now();
        let out = call(cx, "shell", r#"{"command":"echo x"}"#).await;
        let shell = started.elapsed();
        assert_eq!(out, "exit status 0\nx\n", "shell echo x");

        let started = Instant::now();
        let plain = std::process::Command::new("bash")
            .args(["-c", "echo x"])
            .current_dir(work)
            .output()
            .expect("bash runs");
        let bash_c = started.elapsed();
        assert_eq!(plain.stdout, b"x\n");

        let started = Instant::now();
        let out = call(cx, "run_command", r#"{"program":"echo","args":["x"]}"#).await;
        let run_command = started.elapsed();
        assert!(
            out.starts_with("exit status 0"),
            "run_command echo x: {out}"
        );

        if round >= WARM {
            for (samples, took) in samples.iter_mut().zip([shell, bash_c, run_command]) {
                samples.push(took);
            }
        }
    }
    samples
}

/// The p50 of a `write_stdin` poll (no characters, no wait) of a background command that
/// prints nothing.
async fn poll_p50(cx: &CallContext<'_>) -> Duration {
    let out = call(cx, "shell", r#"{"command":"sleep 600","background":true}"#).await;
    let id: u32 = out
        .strip_prefix("still running (session_id ")
        .and_then(|rest| rest.split(')').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a background command answers its session id: {out}"));
    let poll = format!(r#"{{"session_id":{id},"yield_ms":0}}"#);
    let mut samples = Vec::with_capacity(POLLS);
    for round in 0..POLLS + WARM {
        let started = Instant::now();
        let out = call(cx, "write_stdin", &poll).await;
        let took = started.elapsed();
        assert!(out.starts_with("still running"), "poll: {out}");
        if round >= WARM {
            samples.push(took);
        }
    }
    let interrupt = format!(r#"{{"session_id":{id},"chars":"\u0003"}}"#);
    let mut out = call(cx, "write_stdin", &interrupt).await;
    // On a busy machine the interrupted copy may take longer than one answer's wait to end:
    // wait for it (this measures polls, not how fast an interrupt lands).
    let wait = format!(r#"{{"session_id":{id},"yield_ms":5000}}"#);
    for _ in 0..6 {
        if !out.starts_with("still running") {
            break;
        }
        out = call(cx, "write_stdin", &wait).await;
    }
    assert!(out.starts_with("exit status"), "interrupt: {out}");
    percentile(&mut samples, 0.5)
}

fn main() {
    common::block_on(run());
}

async fn run() {
    let work = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("tempdir");
    let sandbox = Sandbox::new(work.path().join("cache")).expect("sandbox");
    let registry: Registry = common::registry(&sandbox, work.path(), home.path(), PRESET).await;
    let aliases = AliasTable::default();
    // One context for the whole run: the registry holds the session's shell.
    let cx = common::open_context(&sandbox, &registry, &aliases);

    let [mut shell, mut bash_c, mut run_command] = echo_rounds(&cx, work.path()).await;
    let shell_p50 = percentile(&mut shell, 0.5);
    let bash_c_p50 = percentile(&mut bash_c, 0.5);
    let run_command_p50 = percentile(&mut run_command, 0.5);
    println!(
        "shell p50 {:.0} us p90 {:.0} us; bash -c p50 {:.0} us p90 {:.0} us; \
         run_command p50 {:.0} us p90 {:.0} us",
        micros(shell_p50),
        micros(percentile(&mut shell, 0.9)),
        micros(bash_c_p50),
        micros(percentile(&mut bash_c, 0.9)),
        micros(run_command_p50),
        micros(percentile(&mut run_command, 0.9)),
    );

    let poll = poll_p50(&cx).await;
    println!("write_stdin poll p50 {:.0} us", micros(poll));

    let budget = registry
        .get("shell")
        .expect("the shell tool")
        .budget
        .max_bytes;
    let before = peak_rss();
    let started = Instant::now();
    let out = call(
        &cx,
        "shell",
        &format!(r#"{{"command":"head -c {OUT_BYTES} /dev/zero | tr '\\0' a","yield_ms":100000}}"#),
    )
    .await;
    let out_time = started.elapsed();
    let growth = peak_rss().saturating_sub(before);
    assert!(
        out.starts_with("exit status 0"),
        "100 MB: {}",
        out.chars().take(300).collect::<String>()
    );
    assert!(
        out.contains(&OUT_BYTES.to_string()),
        "the answer says how much the command printed: {}",
        out.lines().last().unwrap_or_default()
    );
    assert!(
        out.len() as u64 <= budget,
        "100 MB of output answered {} bytes, past the budget of {budget}",
        out.len()
    );
    println!(
        "100 MB of output: {:.0} ms, answer {} bytes (budget {budget}), peak RSS +{:.1} MB",
        out_time.as_secs_f64() * 1e3,
        out.len(),
        growth as f64 / 1e6
    );

    println!(
        "BENCH shell_p50_us={:.1} bash_c_p50_us={:.1} run_command_p50_us={:.1} \
         shell_over_bash_c={:.2} shell_over_run_command={:.2} poll_p50_us={:.1} \
         out100mb_ms={:.0} out100mb_rss_growth_mb={:.1}",
        micros(shell_p50),
        micros(bash_c_p50),
        micros(run_command_p50),
        shell_p50.as_secs_f64() / bash_c_p50.as_secs_f64(),
        shell_p50.as_secs_f64() / run_command_p50.as_secs_f64(),
        micros(poll),
        out_time.as_secs_f64() * 1e3,
        growth as f64 / 1e6,
    );
}
