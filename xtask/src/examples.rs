//! The example tools in JavaScript and Python (`plugins/examples/js-*`, `py-*`, and the hostile
//! suite's `plugins/hostile/js-*`), built with the
//! Bytecode Alliance toolchains that `.ci/authoring-tools.sh` installs (pinned, cached) into
//! `$PADDOCK_AUTHORING_TOOLS` (default `~/.cache/paddock/authoring-tools`). Their components
//! go next to the Rust plugins, in `plugins/target/wasm32-wasip2/release/`. A component newer
//! than its source is not rebuilt. Without the toolchains nothing is built and a note says how
//! to install them; the tests that call these examples then fail naming the same command.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use super::{WASM_TARGET, root, run_in};

/// Where `.ci/authoring-tools.sh` installs the toolchains.
pub fn tools_dir() -> PathBuf {
    match std::env::var_os("PADDOCK_AUTHORING_TOOLS").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/paddock/authoring-tools"),
    }
}

/// (example directory, source file, component name, how to build it)
struct Example {
    dir: &'static str,
    source: &'static str,
    component: &'static str,
    build: fn(tools: &Path, out: &Path) -> Command,
}

const EXAMPLES: &[Example] = &[
    Example {
        dir: "plugins/examples/js-text-stats",
        source: "tool.js",
        component: "js_text_stats.wasm",
        build: js_tool,
    },
    // Not an example for authors: the hostile suite's JavaScript tool that tries to carry
    // state from one call to the next through its snapshot.
    Example {
        dir: "plugins/hostile/js-carry-state",
        source: "tool.js",
        component: "hostile_js_carry_state.wasm",
        build: js_tool,
    },
    // Nor this: a JavaScript tool whose correct example never ends, for the snapshot's
    // warm-up to stop and leave no trace of.
    Example {
        dir: "plugins/hostile/js-bad-example",
        source: "tool.js",
        component: "hostile_js_bad_example.wasm",
        build: js_tool,
    },
    Example {
        dir: "plugins/examples/py-word-freq",
        source: "app.py",
        component: "py_word_freq.wasm",
        build: |tools, out| {
            let mut cmd = Command::new(tools.join("py/bin/componentize-py"));
            cmd.args([
                "-d",
                "../../../wit",
                "-w",
                "tool-plugin",
                "componentize",
                "app",
                "-o",
            ])
            .arg(out);
            cmd
        },
    },
];

/// A JavaScript tool (`tool.js`, world `tool-plugin`) as `plugin new`'s template builds one,
/// with the JavaScript runtime's WASI features disabled.
fn js_tool(tools: &Path, out: &Path) -> Command {
    let mut cmd = Command::new(tools.join("js/node_modules/.bin/componentize-js"));
    cmd.args([
        "tool.js",
        "--wit",
        "../../../wit",
        "--world-name",
        "tool-plugin",
    ])
    .args([
        "--disable",
        "stdio",
        "random",
        "clocks",
        "http",
        "fetch-event",
    ])
    .arg("-o")
    .arg(out);
    cmd
}

/// Builds each example whose component is missing or older than its source or the WIT.
pub fn build() -> Result<(), String> {
    let tools = tools_dir();
    let out_dir = root()
        .join("plugins/target")
        .join(WASM_TARGET)
        .join("release");
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("cannot create {out_dir:?}: {e}"))?;
    for example in EXAMPLES {
        let dir = root().join(example.dir);
        let out = out_dir.join(example.component);
        if is_fresh(&out, &[&dir.join(example.source), &root().join("wit")]) {
            continue;
        }
        let cmd = (example.build)(&tools, &out);
        if !Path::new(cmd.get_program()).exists() {
            eprintln!(
                "xtask: not building {}: its toolchain is not installed; run `bash .ci/authoring-tools.sh`",
                example.dir
            );
            continue;
        }
        let started = Instant::now();
        run_in(cmd, &dir)?;
        let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
        eprintln!(
            "xtask: built {} ({size} bytes) in {:.1} s",
            example.component,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

fn modified(path: &Path) -> Option<std::time::SystemTime> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.is_dir() {
        return std::fs::read_dir(path)
            .ok()?
            .filter_map(Result::ok)
            .filter_map(|e| e.metadata().ok()?.modified().ok())
            .max();
    }
    meta.modified().ok()
}

fn is_fresh(out: &Path, inputs: &[&Path]) -> bool {
    let Some(built) = modified(out) else {
        return false;
    };
    inputs
        .iter()
        .all(|input| modified(input).is_some_and(|m| m <= built))
}
