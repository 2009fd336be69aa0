//! The search and paging half of the scale bench: grep and glob over a generated tree of
//! 100+ MB against `rg -j1`, a 100 MB file read page by page against `cat`, and the first run
//! of the default preset on an empty cache. Every call goes through the real pipeline
//! (`exec::run_call`) with the shipped `default` preset, so its fuel and output budget apply.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use paddock::calls::{AliasTable, Registry};
use paddock_sandbox::Sandbox;

use crate::common;
use crate::data;

const TREE_BYTES: u64 = 100 << 20;
const BIG_FILE_BYTES: u64 = 100 << 20;
const ROUNDS: usize = 5;

pub fn measure() -> Vec<(String, String)> {
    let mut keys = Vec::new();
    common::block_on(async { keys = run().await });
    keys
}

async fn run() -> Vec<(String, String)> {
    let work = tempfile::tempdir().expect("tempdir");
    let tree = work.path().join("tree");
    let started = Instant::now();
    let (files, bytes) = data::source_tree(&tree, TREE_BYTES);
    let big = tree.join("big.txt");
    let big_lines = data::big_file(&big, BIG_FILE_BYTES);
    println!(
        "data: {files} files, {:.0} MB, and a {:.0} MB file of {big_lines} lines, in {:.1} s",
        bytes as f64 / 1e6,
        BIG_FILE_BYTES as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    // .ignore keeps the big file out of grep and glob (rg reads .ignore too).
    std::fs::write(tree.join(".ignore"), "big.txt\n").expect(".ignore");
    let home = work.path().join("home");
    let (first_run, first_call) = first_run(&tree, &home.join("first")).await;
    let sandbox = Sandbox::new(home.join("cache")).expect("sandbox");
    let registry = default_registry(&sandbox, &tree, &home).await;
    let aliases = AliasTable::default();
    let cx = common::open_context(&sandbox, &registry, &aliases);
    let rg = rg_version();
    let mut keys = Vec::new();

    let grep = format!(r#"{{"pattern": "{}"}}"#, data::NEEDLE);
    let grep_time = best(ROUNDS, || async {
        let out = call(&cx, "grep", &grep).await;
        assert!(
            out.contains(data::NEEDLE) && !out.contains("[more"),
            "{out}"
        );
    })
    .await;
    println!("grep {:?} over the tree: {}", data::NEEDLE, ms(grep_time));
    let glob_time = best(ROUNDS, || async {
        let out = call(&cx, "glob", r#"{"pattern": "*.rs"}"#).await;
        assert!(out.contains("more paths matched"), "{out}");
    })
    .await;
    println!("glob *.rs over the tree: {}", ms(glob_time));
    let pages = paged_grep(&cx).await;
    println!("{pages}");
    fuel_per_byte(&cx, bytes).await;

    let (read_time, calls) = read_whole(&cx, big_lines).await;
    println!(
        "read_file of the 100 MB file, page by page: {} in {calls} calls, every line once",
        ms(read_time)
    );
    let cat_time = best(ROUNDS, || async {
        run_quiet(Command::new("cat").arg(&big))
    })
    .await;
    println!("cat of the same file: {}", ms(cat_time));
    keys.push(ratio("read100m_over_cat", read_time, cat_time));

    match rg {
        Some(version) => {
            let rg_grep = best(ROUNDS, || async {
                run_quiet(
                    Command::new("rg")
                        .args(["-j1", "-n", data::NEEDLE])
                        .current_dir(&tree),
                )
            })
            .await;
            let rg_files = best(ROUNDS, || async {
                run_quiet(
                    Command::new("rg")
                        .args(["-j1", "--files"])
                        .current_dir(&tree),
                )
            })
            .await;
            println!(
                "{version}: rg -j1 -n {} {}, rg -j1 --files {}",
                data::NEEDLE,
                ms(rg_grep),
                ms(rg_files)
            );
            keys.insert(0, ratio("grep_over_rg", grep_time, rg_grep));
            keys.insert(1, ratio("glob_over_rg", glob_time, rg_files));
        }
        None => println!("rg is not installed: grep_over_rg and glob_over_rg are skipped"),
    }
    keys.push((
        "first_run_ms".into(),
        format!("{:.0}", first_run.as_secs_f64() * 1e3),
    ));
    keys.push((
        "first_call_ready_ms".into(),
        format!("{:.0}", first_call.as_secs_f64() * 1e3),
    ));
    keys
}

/// The shipped `default` preset, resolved in `cwd`, its plugins from `home`.
async fn default_registry(sandbox: &Sandbox, cwd: &Path, home: &Path) -> Registry {
    std::fs::create_dir_all(home).expect("home");
    let cx = paddock::preset::ResolveContext {
        cwd,
        data_dir: home,
        spill: None,
        mount_override: None,
    };
    let resolved = paddock::preset::load_in("default", cwd)
        .expect("default preset")
        .resolve("default", &cx)
        .expect("default preset resolves");
    Registry::load(
        sandbox,
        &paddock::plugin_store::PluginStore::open(home),
        &resolved,
    )
    .await
    .expect("registry")
}

/// From nothing compiled to a registry that can serve the first request: the default preset
/// on an empty cache, as after an install or upgrade (`first_run_ms`, the bar). Then, as a
/// session does, its built-ins compile in the background; `first_call_ready_ms` is when the
/// first tool call could start (no bar: a model's first answer takes about as long).
async fn first_run(cwd: &Path, home: &Path) -> (Duration, Duration) {
    let started = Instant::now();
    let sandbox = Sandbox::new(home.join("cache")).expect("sandbox");
    let registry = default_registry(&sandbox, cwd, home).await;
    let elapsed = started.elapsed();
    registry.start_compiling();
    for plugin in registry.plugins() {
        plugin.ready().await.expect("a built-in compiles");
    }
    let ready = started.elapsed();
    assert!(registry.get("grep").is_some());
    println!(
        "first run (default preset, empty cache): registry {}, every plugin compiled {}",
        ms(elapsed),
        ms(ready)
    );
    (elapsed, ready)
}

/// Fuel per byte searched for a few kinds of pattern (what the presets' fuel is sized by,
/// docs/scale.md), each over the whole tree with no match to stop early.
async fn fuel_per_byte(cx: &paddock::pipeline::CallContext<'_>, bytes: u64) {
    for (what, args) in [
        ("literal", r#"{"pattern": "zz_no_such_q9"}"#),
        (
            "case-insensitive",
            r#"{"pattern": "zz_no_such_q9", "case_insensitive": true}"#,
        ),
        ("class", r#"{"pattern": "[a-z]+_no_such_[0-9]+"}"#),
        ("word", r#"{"pattern": "\\bvalue\\d+\\s+zz\\b"}"#),
    ] {
        let started = Instant::now();
        let executed = paddock::pipeline::run_call(cx, "bench", "grep", args).await;
        let elapsed = started.elapsed();
        let fuel = executed.report.and_then(|r| r.fuel_used).unwrap_or(0);
        match executed.result {
            Ok(_) => println!(
                "grep {what}: {:.2} fuel per byte of the tree, {}",
                fuel as f64 / bytes as f64,
                ms(elapsed)
            ),
            Err(e) => println!("grep {what}: {:?} ({})", e.code, ms(elapsed)),
        }
    }
}

/// A tool's content, or a panic naming its error.
async fn call(cx: &paddock::pipeline::CallContext<'_>, tool: &str, args: &str) -> String {
    paddock::pipeline::run_call(cx, "bench", tool, args)
        .await
        .result
        .unwrap_or_else(|e| panic!("{tool} {args}: {e:?}"))
        .content
}

/// Pages through every `let` in the tree's first crate and checks each page costs about what
/// the first did (no rescan from the top).
async fn paged_grep(cx: &paddock::pipeline::CallContext<'_>) -> String {
    let mut args = r#"{"pattern": "let", "path": "crate000", "max_results": 1000}"#.to_string();
    let (mut pages, mut lines, mut times) = (0, 0usize, Vec::new());
    loop {
        let started = Instant::now();
        let result = paddock::pipeline::run_call(cx, "bench", "grep", &args)
            .await
            .result;
        times.push(started.elapsed());
        let out = result.expect("grep page");
        pages += 1;
        lines += out.content.lines().filter(|l| !l.starts_with('[')).count();
        match out.continuation {
            Some(next) if pages < 200 => args = next,
            _ => break,
        }
    }
    let last = times[times.len().saturating_sub(5)..]
        .iter()
        .sum::<Duration>()
        / 5;
    let first = times[..5.min(times.len())].iter().sum::<Duration>() / 5;
    format!(
        "paged grep: {pages} pages, {lines} lines; first five pages {} each, last five {} each",
        ms(first),
        ms(last)
    )
}

/// Reads the big file through read_file page by page, following each continuation, and checks
/// every line comes back once, in order.
async fn read_whole(cx: &paddock::pipeline::CallContext<'_>, lines: u64) -> (Duration, usize) {
    let mut args = r#"{"path": "big.txt"}"#.to_string();
    let (mut calls, mut next_line) = (0usize, 1u64);
    let started = Instant::now();
    loop {
        let out = paddock::pipeline::run_call(cx, "bench", "read_file", &args)
            .await
            .result
            .expect("read_file page");
        calls += 1;
        for l in out.content.lines().filter(|l| !l.starts_with('[')) {
            let number: u64 = l
                .split('\t')
                .next()
                .unwrap()
                .trim()
                .parse()
                .expect("number");
            assert_eq!(number, next_line, "line {next_line} expected");
            next_line += 1;
        }
        match out.continuation {
            Some(next) => args = next,
            None => break,
        }
    }
    assert_eq!(next_line - 1, lines, "every line once");
    (started.elapsed(), calls)
}

async fn best<F: std::future::Future<Output = ()>>(
    rounds: usize,
    mut f: impl FnMut() -> F,
) -> Duration {
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        f().await;
        times.push(started.elapsed());
    }
    times.into_iter().min().expect("rounds > 0")
}

/// Runs a program, reading (not discarding) its output: rg quits early when it writes to
/// /dev/null.
fn run_quiet(cmd: &mut Command) {
    let out = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .output()
        .expect("spawn");
    std::hint::black_box(out.stdout.len());
}

fn rg_version() -> Option<String> {
    let out = Command::new("rg").arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().next().map(str::to_string)
}

fn ratio(key: &str, ours: Duration, theirs: Duration) -> (String, String) {
    (
        key.to_string(),
        format!("{:.2}", ours.as_secs_f64() / theirs.as_secs_f64()),
    )
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}
