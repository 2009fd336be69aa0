//! What the test suite needs beyond cargo, installed before `cargo xtask test` so that the
//! README's one test command works on a fresh machine (CI runs the same command):
//!
//! - the JavaScript and Python component toolchains for the example tools and scaffold tests
//!   (`.ci/authoring-tools.sh`: pinned, cached under `~/.cache/paddock/authoring-tools`);
//! - the official MCP Python SDK for `tests/tests/mcp_*.rs` (pinned in
//!   `.ci/mcp-requirements.txt`, in a virtual environment under `~/.cache/paddock/mcp-venv`),
//!   handed to the tests as `PADDOCK_MCP_PYTHON` unless that is already set.
//!
//! A second run finds both in place and installs nothing.

use std::path::PathBuf;
use std::process::Command;

use super::{root, run};

/// Installs what is missing; returns the environment the tests need.
pub fn install() -> Result<Vec<(&'static str, PathBuf)>, String> {
    let mut authoring = Command::new("bash");
    authoring.arg(root().join(".ci/authoring-tools.sh"));
    run(authoring)?;
    if std::env::var_os("PADDOCK_MCP_PYTHON").is_some_and(|p| !p.is_empty()) {
        return Ok(Vec::new());
    }
    Ok(vec![("PADDOCK_MCP_PYTHON", mcp_python()?)])
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
