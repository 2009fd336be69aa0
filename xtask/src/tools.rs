//! What the test suite needs beyond cargo, installed before `cargo xtask test` so that the
//! README's one test command works on a fresh machine (CI runs the same command):
//!
//! - the JavaScript and Python component toolchains for the example tools and scaffold tests
//!   (`.ci/authoring-tools.sh`: pinned, cached under `~/.cache/paddock/authoring-tools`);
//! - the official MCP Python SDK for `tests/tests/suite/mcp_*.rs` (pinned in
//!   `.ci/mcp-requirements.txt`, in a virtual environment under `~/.cache/paddock/mcp-venv`),
//!   handed to the tests as `PADDOCK_MCP_PYTHON` unless that is already set;
//! - the MCP Inspector CLI for `tests/tests/suite/mcp_http.rs` (npm, pinned by
//!   `.ci/mcp-inspector/package-lock.json`, `npm ci` into `~/.cache/paddock/mcp-inspector`),
//!   handed to the tests as `PADDOCK_MCP_INSPECTOR` (the script `node` runs) unless set.
//!
//! A second run finds them in place and installs nothing.

use std::path::PathBuf;
use std::process::Command;

use super::{root, run};

/// Installs what is missing; returns the environment the tests need.
pub fn install() -> Result<Vec<(&'static str, PathBuf)>, String> {
    let mut authoring = Command::new("bash");
    authoring.arg(root().join(".ci/authoring-tools.sh"));
    run(authoring)?;
    let mut env = Vec::new();
    if !is_set("PADDOCK_MCP_PYTHON") {
        env.push(("PADDOCK_MCP_PYTHON", mcp_python()?));
    }
    if !is_set("PADDOCK_MCP_INSPECTOR") {
        env.push(("PADDOCK_MCP_INSPECTOR", mcp_inspector()?));
    }
    Ok(env)
}

fn is_set(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|p| !p.is_empty())
}

fn cache() -> PathBuf {
    PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/paddock")
}

/// A Python with the pinned MCP SDK: the cached environment when its requirements match,
/// else a new one.
fn mcp_python() -> Result<PathBuf, String> {
    let wanted = root().join(".ci/mcp-requirements.txt");
    let venv = cache().join("mcp-venv");
    let python = venv.join("bin/python");
    let recorded = venv.join("requirements.txt");
    let pinned = std::fs::read(&wanted).map_err(|e| format!("{}: {e}", wanted.display()))?;
    if python.exists() && std::fs::read(&recorded).is_ok_and(|r| r == pinned) {
        return Ok(python);
    }
    let started = std::time::Instant::now();
    let _ = std::fs::remove_dir_all(&venv);
    let mut create = Command::new("python3");
    create.args(["-m", "venv"]).arg(&venv);
    run(create)?;
    let mut pip = Command::new(venv.join("bin/pip"));
    pip.args(["install", "--quiet", "--disable-pip-version-check", "-r"])
        .arg(&wanted);
    run(pip)?;
    std::fs::write(&recorded, &pinned).map_err(|e| format!("{}: {e}", recorded.display()))?;
    eprintln!(
        "xtask: MCP Python SDK installed in {} in {:.0} s",
        venv.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(python)
}

/// The MCP Inspector's launcher script, from the pinned lock file: the cached install when
/// its lock matches, else `npm ci` (no install scripts run).
fn mcp_inspector() -> Result<PathBuf, String> {
    let pinned_dir = root().join(".ci/mcp-inspector");
    let dir = cache().join("mcp-inspector");
    let script =
        dir.join("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    let lock = std::fs::read(pinned_dir.join("package-lock.json"))
        .map_err(|e| format!("{}: {e}", pinned_dir.display()))?;
    let recorded = dir.join("installed-lock.json");
    if script.exists() && std::fs::read(&recorded).is_ok_and(|r| r == lock) {
        return Ok(script);
    }
    let started = std::time::Instant::now();
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for file in ["package.json", "package-lock.json"] {
        std::fs::copy(pinned_dir.join(file), dir.join(file))
            .map_err(|e| format!("cannot copy {file} to {}: {e}", dir.display()))?;
    }
    let mut npm = Command::new("npm");
    npm.args([
        "ci",
        "--ignore-scripts",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
    ])
    .current_dir(&dir);
    super::run_in(npm, &dir).map_err(|e| format!("{e} (the MCP Inspector needs node and npm)"))?;
    if !script.exists() {
        return Err(format!(
            "the MCP Inspector installed, but {} is missing",
            script.display()
        ));
    }
    std::fs::write(&recorded, &lock).map_err(|e| format!("{}: {e}", recorded.display()))?;
    eprintln!(
        "xtask: MCP Inspector installed in {} in {:.0} s",
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(script)
}
