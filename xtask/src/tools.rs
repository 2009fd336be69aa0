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
//!   handed to the tests as `PADDOCK_MCP_INSPECTOR` (the script `node` runs) unless set;
//! - the MCP reference server `server-everything` for `tests/tests/suite/mcp_use.rs` (npm,
//!   pinned by `.ci/mcp-everything/package-lock.json`, into `~/.cache/paddock/mcp-everything`),
//!   handed to the tests as `PADDOCK_MCP_EVERYTHING` (the script `node` runs) unless set;
//! - the two ATIF validators for `tests/tests/suite/atif.rs`, Harbor's and the `atif` package's
//!   (pinned in `.ci/atif-requirements.txt`; Harbor needs Python 3.12, found in pyenv's versions
//!   or on `PATH`), installed with `uv` (itself pinned, from PyPI into a bootstrap environment,
//!   `~/.cache/paddock/uv-bootstrap`) into `~/.cache/paddock/harbor-venv`, handed to the tests as
//!   `PADDOCK_ATIF_PYTHON` unless set;
//! - an OCI registry and an OCI client for `tests/tests/suite/plugin_oci.rs`: Debian's
//!   `docker-registry` (the CNCF distribution registry) and `skopeo`, installed with apt-get
//!   when missing, handed to the tests as `PADDOCK_OCI_REGISTRY` and `PADDOCK_SKOPEO` unless set;
//!   and `openssl` (on `PATH`), which makes the keys and checks the signatures of
//!   `tests/tests/suite/plugin_oci_signing.rs`.
//!
//! A second run finds them in place and installs nothing.

use std::path::{Path, PathBuf};
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
        env.push((
            "PADDOCK_MCP_INSPECTOR",
            npm_pinned(
                "mcp-inspector",
                "@modelcontextprotocol/inspector/clients/launcher/build/index.js",
            )?,
        ));
    }
    if !is_set("PADDOCK_MCP_EVERYTHING") {
        env.push((
            "PADDOCK_MCP_EVERYTHING",
            npm_pinned(
                "mcp-everything",
                "@modelcontextprotocol/server-everything/dist/index.js",
            )?,
        ));
    }
    if !is_set("PADDOCK_ATIF_PYTHON") {
        env.push(("PADDOCK_ATIF_PYTHON", atif_python()?));
    }
    let openssl = PathBuf::from("/usr/bin/openssl");
    if !is_set("PADDOCK_OCI_REGISTRY") || !is_set("PADDOCK_SKOPEO") || !openssl.is_file() {
        let (registry, skopeo) = oci_tools()?;
        if !is_set("PADDOCK_OCI_REGISTRY") {
            env.push(("PADDOCK_OCI_REGISTRY", registry));
        }
        if !is_set("PADDOCK_SKOPEO") {
            env.push(("PADDOCK_SKOPEO", skopeo));
        }
    }
    Ok(env)
}

/// The registry binary and skopeo from Debian's packages, installed when either is missing.
fn oci_tools() -> Result<(PathBuf, PathBuf), String> {
    let registry = PathBuf::from("/usr/bin/docker-registry");
    let skopeo = PathBuf::from("/usr/bin/skopeo");
    let openssl = PathBuf::from("/usr/bin/openssl");
    if registry.is_file() && skopeo.is_file() && openssl.is_file() {
        return Ok((registry, skopeo));
    }
    apt_install(
        &["docker-registry", "skopeo", "openssl"],
        &[&registry, &skopeo, &openssl],
    )?;
    Ok((registry, skopeo))
}

/// Installs Debian `packages` with apt-get (through sudo when not root) and checks that each of
/// `wanted` is there afterwards.
pub fn apt_install(packages: &[&str], wanted: &[&Path]) -> Result<(), String> {
    let started = std::time::Instant::now();
    let sudo = !is_root();
    let apt = |args: &[&str]| {
        let mut cmd = Command::new(if sudo { "sudo" } else { "apt-get" });
        if sudo {
            cmd.arg("apt-get");
        }
        cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        cmd
    };
    eprintln!("xtask: installing {} with apt-get", packages.join(", "));
    run(apt(&["update", "-q"]))?;
    let mut install = vec!["install", "-y", "-q"];
    install.extend_from_slice(packages);
    run(apt(&install))?;
    for tool in wanted {
        if !tool.is_file() {
            return Err(format!(
                "{} is still missing after apt-get install {}",
                tool.display(),
                packages.join(" ")
            ));
        }
    }
    eprintln!(
        "xtask: {} installed in {:.0} s",
        packages.join(", "),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
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

/// The script `entry` (under `node_modules`) of the npm packages pinned in `.ci/NAME`: the
/// cached install when its lock matches, else `npm ci` (no install scripts run).
fn npm_pinned(name: &str, entry: &str) -> Result<PathBuf, String> {
    let pinned_dir = root().join(".ci").join(name);
    let dir = cache().join(name);
    let script = dir.join("node_modules").join(entry);
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
    super::run_in(npm, &dir).map_err(|e| format!("{e} (.ci/{name} needs node and npm)"))?;
    if !script.exists() {
        return Err(format!(
            ".ci/{name} installed, but {} is missing",
            script.display()
        ));
    }
    std::fs::write(&recorded, &lock).map_err(|e| format!("{}: {e}", recorded.display()))?;
    eprintln!(
        "xtask: .ci/{name} installed in {} in {:.0} s",
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(script)
}

/// `uv`, which installs Harbor's ~120 packages in seconds where pip takes a minute.
const UV_PIN: &str = "uv==0.13.9";

/// A Python 3.12 with Harbor and the `atif` package at the pinned versions: the cached
/// environment when it has exactly those, else a new one made with `uv`.
fn atif_python() -> Result<PathBuf, String> {
    let wanted = root().join(".ci/atif-requirements.txt");
    let pins =
        std::fs::read_to_string(&wanted).map_err(|e| format!("{}: {e}", wanted.display()))?;
    let venv = cache().join("harbor-venv");
    let python = venv.join("bin/python");
    if has_pins(&python, &pins) {
        return Ok(python);
    }
    let started = std::time::Instant::now();
    let base = python312(&pins)?;
    let uv = bootstrap_uv(&base)?;
    let _ = std::fs::remove_dir_all(&venv);
    let mut create = Command::new(&uv);
    create
        .arg("venv")
        .arg("--quiet")
        .arg("--python")
        .arg(&base)
        .arg(&venv);
    run(create)?;
    let mut install = Command::new(&uv);
    // Compiled now: Harbor imports LiteLLM (~2,900 modules) at each start, which takes ~10 s
    // more from source where PYTHONDONTWRITEBYTECODE keeps Python from caching it.
    install
        .args([
            "pip",
            "install",
            "--quiet",
            "--compile-bytecode",
            "--python",
        ])
        .arg(&python)
        .arg("-r")
        .arg(&wanted);
    run(install)?;
    if !has_pins(&python, &pins) {
        return Err(format!(
            "{} was installed, but does not report the versions {} pins",
            venv.display(),
            wanted.display()
        ));
    }
    eprintln!(
        "xtask: Harbor and atif installed in {} in {:.0} s",
        venv.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(python)
}

/// Whether `python` has every `name==version` of `pins` installed.
fn has_pins(python: &std::path::Path, pins: &str) -> bool {
    if !python.exists() {
        return false;
    }
    let pinned: Vec<(&str, &str)> = pins
        .lines()
        .filter_map(|line| line.split_once("=="))
        .map(|(name, version)| (name.trim(), version.trim()))
        .collect();
    let names: Vec<&str> = pinned.iter().map(|(name, _)| *name).collect();
    let Ok(out) = Command::new(python)
        .args([
            "-c",
            "import sys, importlib.metadata as m\nfor n in sys.argv[1:]: print(m.version(n))",
        ])
        .args(&names)
        .output()
    else {
        return false;
    };
    let found = String::from_utf8_lossy(&out.stdout);
    out.status.success()
        && found
            .lines()
            .map(str::trim)
            .eq(pinned.iter().map(|(_, version)| *version))
}

/// Python 3.12: the newest of pyenv's `versions/3.12.*`, else `python3.12` on `PATH`.
fn python312(pins: &str) -> Result<PathBuf, String> {
    let pyenv = std::env::var_os("PYENV_ROOT").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".pyenv"),
        PathBuf::from,
    );
    let patch = |name: &str| name.strip_prefix("3.12.")?.parse::<u32>().ok();
    let newest = std::fs::read_dir(pyenv.join("versions"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let python = entry.path().join("bin/python");
            Some((patch(&name)?, python)).filter(|(_, python)| python.exists())
        })
        .max_by_key(|(patch, _)| *patch)
        .map(|(_, python)| python);
    if let Some(python) = newest {
        return Ok(python);
    }
    let on_path = Command::new("python3.12")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    on_path.ok_or_else(|| {
        format!(
            "Harbor needs Python 3.12: found none in {}/versions/3.12.* nor python3.12 on PATH \
             (install one with `pyenv install 3.12`), or set PADDOCK_ATIF_PYTHON to a Python \
             that has {}",
            pyenv.display(),
            pins.split_whitespace().collect::<Vec<_>>().join(" and ")
        )
    })
}

/// `uv` at the pinned version, installed from PyPI into its own environment made by `base`.
fn bootstrap_uv(base: &std::path::Path) -> Result<PathBuf, String> {
    let venv = cache().join("uv-bootstrap");
    let uv = venv.join("bin/uv");
    let version = UV_PIN.trim_start_matches("uv==");
    let current = Command::new(&uv)
        .arg("--version")
        .output()
        .is_ok_and(|out| {
            String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .nth(1)
                == Some(version)
        });
    if current {
        return Ok(uv);
    }
    let _ = std::fs::remove_dir_all(&venv);
    let mut create = Command::new(base);
    create.args(["-m", "venv"]).arg(&venv);
    run(create)?;
    let mut pip = Command::new(venv.join("bin/pip"));
    pip.args(["install", "--quiet", "--disable-pip-version-check", UV_PIN]);
    run(pip)?;
    Ok(uv)
}
