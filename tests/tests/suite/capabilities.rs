//! Host capabilities (S6) through the preset, the registry and the real plugins `shell` and
//! `fetch`: each grant allowed and denied, a plugin importing an ungranted capability refused
//! at load, exec's environment, cwd, timeout and cancellation (no process survives its group),
//! and http against a loopback server: allowed host, denied host, oversized response.

use paddock::calls::AliasTable;
use std::io::{Read, Write};
use std::net::TcpListener;

use std::time::{Duration, Instant};

use paddock::calls::{Registry, RegistryError};
use paddock::pipeline::{CallContext, Executed, OpenGate, run_call};
use paddock::plugin_store::PluginStore;
use paddock_tests::{plugin_dir, resolve_preset, sandbox};
use paddock_types::contract::ErrorCode;
use tokio_util::sync::CancellationToken;

struct Session {
    work: tempfile::TempDir,
    _home: tempfile::TempDir,
    registry: Result<Registry, RegistryError>,
}

async fn session(plugin: &str, grants: &str) -> Session {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let text = format!(
        "[plugins.{plugin}]\nsource = \"{}\"\nmounts = [{{ host = \".\", guest = \"/workspace\", mode = \"rw\" }}]\ntimeout_ms = 10_000\n{grants}\n",
        plugin_dir().join(format!("{plugin}.wasm")).display()
    );
    let path = work.path().join("p.toml");
    std::fs::write(&path, text).unwrap();
    let resolved = resolve_preset(path.to_str().unwrap(), work.path(), home.path());
    let store = PluginStore::open(home.path());
    let registry = Registry::load(sandbox(), &store, &resolved).await;
    Session {
        work,
        _home: home,
        registry,
    }
}

async fn call_with(s: &Session, tool: &str, args: &str, cancel: CancellationToken) -> Executed {
    let registry = s.registry.as_ref().expect("the plugin loads");
    let cx = CallContext {
        sandbox: sandbox(),
        registry,
        aliases: &ALIASES,
        spill: None,
        gate: &OpenGate,
        session_id: "s",
        preset: "p",
        cancel,
        live: None,
        locks: Default::default(),
    };
    run_call(&cx, "c1", tool, args).await
}

async fn call(s: &Session, tool: &str, args: &str) -> Executed {
    call_with(s, tool, args, CancellationToken::new()).await
}

const EXEC: &str =
    r#"grants.exec = { allow = ["sh", "echo"], env = ["PATH"], timeout_ms = 5_000 }"#;

#[tokio::test]
async fn an_allowed_program_runs_in_the_workspace_with_a_cleared_environment() {
    let s = session("shell", EXEC).await;
    std::fs::create_dir(s.work.path().join("sub")).unwrap();
    let args = serde_json::json!({
        "program": "sh",
        "args": ["-c", "pwd; echo \"home=[$HOME] path=${PATH:+set}\""],
        "cwd": "sub"
    });
    let out = call(&s, "run_command", &args.to_string())
        .await
        .result
        .unwrap();
    let sub = s.work.path().join("sub").canonicalize().unwrap();
    assert!(out.content.starts_with("exit status 0"), "{}", out.content);
    assert!(
        out.content.contains(&sub.display().to_string()),
        "{}",
        out.content
    );
    assert!(out.content.contains("home=[] path=set"), "{}", out.content);
}

#[tokio::test]
async fn a_program_off_the_allow_list_is_denied_naming_the_preset_key() {
    let s = session("shell", EXEC).await;
    let err = call(&s, "run_command", r#"{"program":"ls"}"#)
        .await
        .result
        .unwrap_err();
    assert!(
        err.message.contains("program `ls` is not allowed")
            && err.message.contains("plugins.shell.grants.exec.allow"),
        "{}",
        err.message
    );
    let err = call(
        &s,
        "run_command",
        r#"{"program":"sh","args":["-c","true"],"cwd":"/etc"}"#,
    )
    .await
    .result
    .unwrap_err();
    assert!(
        err.message.contains("not inside a mount"),
        "{}",
        err.message
    );
    let err = call(
        &s,
        "run_command",
        r#"{"program":"sh","args":["-c","true"],"cwd":"../.."}"#,
    )
    .await
    .result
    .unwrap_err();
    assert!(err.message.contains(".."), "{}", err.message);
}

#[tokio::test]
async fn a_plugin_importing_ungranted_exec_or_http_is_refused_at_load() {
    for (plugin, cap) in [("shell", "exec"), ("fetch", "http")] {
        let s = session(plugin, "").await;
        let err = s.registry.err().expect("refused").to_string();
        assert!(
            err.contains(&format!("the `{cap}` capability"))
                && err.contains(&format!("plugins.{plugin}.grants.{cap}")),
            "{err}"
        );
    }
}

#[tokio::test]
async fn a_program_past_its_timeout_is_killed() {
    let grants = r#"grants.exec = { allow = ["sh"], timeout_ms = 200 }"#;
    let s = session("shell", grants).await;
    let started = Instant::now();
    let out = call(
        &s,
        "run_command",
        r#"{"program":"sh","args":["-c","sleep 20"]}"#,
    )
    .await
    .result
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(out.content.starts_with("timed out"), "{}", out.content);
}

/// Live (not zombie) processes whose command line contains `tag`, from /proc.
fn live_with(tag: &str) -> Vec<i32> {
    let mut live = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .map(|(_, r)| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if !zombie
            && String::from_utf8_lossy(&cmdline)
                .replace('\0', " ")
                .contains(tag)
        {
            live.push(pid);
        }
    }
    live
}

#[tokio::test]
async fn cancelling_a_call_kills_every_process_it_started() {
    let s = session("shell", EXEC).await;
    let pidfile = s.work.path().join("pids");
    // A tag no other process has, so the check below sees only this call's sleeps; one of them
    // leaves the process group with setsid.
    let tag = format!("30.{}", std::process::id());
    let script = format!("sleep {tag} & setsid sleep {tag} & echo started >> pids; wait");
    let args = serde_json::json!({"program": "sh", "args": ["-c", script]}).to_string();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let watch = pidfile.clone();
    tokio::spawn(async move {
        // Cancel once the program and its children are running.
        for _ in 0..200 {
            if std::fs::read_to_string(&watch).is_ok_and(|t| t.contains("started")) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        trigger.cancel();
    });
    let done = call_with(&s, "run_command", &args, cancel).await;
    assert_eq!(done.result.unwrap_err().code, ErrorCode::Cancelled);
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let live = live_with(&tag);
        if live.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "still running: {live:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A loopback HTTP server answering `/small` with "hello" and anything else with 1 MiB.
fn serve() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap_or(0);
            let request = String::from_utf8_lossy(&buf[..n]);
            let body = if request.starts_with("GET /small") {
                b"hello".to_vec()
            } else {
                vec![b'x'; 1 << 20]
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    port
}

fn http_grant(port: u16, max: usize) -> String {
    format!(
        "grants.http = {{ allow = [\"http://127.0.0.1:{port}\"], max_response_bytes = {max}, timeout_ms = 5_000 }}"
    )
}

#[tokio::test]
async fn http_to_an_allowed_host_returns_the_body() {
    let port = serve();
    let s = session("fetch", &http_grant(port, 4096)).await;
    let url = format!("http://127.0.0.1:{port}/small");
    let args = serde_json::json!({ "url": url }).to_string();
    let out = call(&s, "fetch_url", &args).await.result.unwrap();
    assert_eq!(out.content, "HTTP 200\n\nhello");
}

#[tokio::test]
async fn http_to_a_denied_host_names_the_host_and_the_preset_key() {
    let port = serve();
    let s = session("fetch", &http_grant(port, 4096)).await;
    for (url, host) in [
        (format!("http://localhost:{port}/small"), "localhost"),
        (
            format!("http://127.0.0.1:{}/small", port.wrapping_add(1)),
            "127.0.0.1",
        ),
        ("https://example.com/".to_string(), "example.com"),
    ] {
        let args = serde_json::json!({ "url": url }).to_string();
        let err = call(&s, "fetch_url", &args).await.result.unwrap_err();
        assert!(
            err.message.contains(&format!("host `{host}`"))
                && err.message.contains("plugins.fetch.grants.http.allow"),
            "{}",
            err.message
        );
    }
}

#[tokio::test]
async fn an_oversized_response_is_cut_at_the_cap() {
    let port = serve();
    let s = session("fetch", &http_grant(port, 1000)).await;
    let url = format!("http://127.0.0.1:{port}/big");
    let args = serde_json::json!({ "url": url }).to_string();
    let out = call(&s, "fetch_url", &args).await.result.unwrap();
    assert!(out.truncated);
    let body = out.content.strip_prefix("HTTP 200\n\n").unwrap();
    let (kept, note) = body.split_once('\n').unwrap();
    assert_eq!(kept, "x".repeat(1000));
    assert!(note.contains("max_response_bytes"), "{note}");
}

/// The built-in alias table, as a session without preset aliases has it.
static ALIASES: std::sync::LazyLock<AliasTable> = std::sync::LazyLock::new(AliasTable::default);

#[tokio::test]
async fn the_model_saying_bash_reaches_the_shell_and_its_argv_becomes_one_command() {
    let mut s = session("shell", EXEC).await;
    let registry = s.registry.as_ref().expect("the plugin loads");
    let checked = paddock::calls::check_call(
        registry,
        &ALIASES,
        "Bash",
        r#"{"command":"echo hi | wc -c","timeout":5000,"description":"count"}"#,
    );
    assert_eq!(checked.tool.as_deref(), Some("shell"));
    let args = checked.args.expect("Bash's arguments are the shell's");
    assert_eq!(args["timeout_ms"], 5000);
    // codex's older `shell` tool sends an argument vector.
    let argv = paddock::calls::check_call(
        registry,
        &ALIASES,
        "shell",
        r#"{"command":["bash","-lc","ls | head -1"]}"#,
    );
    assert_eq!(argv.args.expect("joined")["command"], "ls | head -1");
    // With no shell tool, Bash still means run_command.
    let without = s.registry.as_mut().expect("the plugin loads");
    without.block(&["shell".to_string()]);
    let checked = paddock::calls::check_call(
        without,
        &ALIASES,
        "Bash",
        r#"{"program":"echo","args":["hi"]}"#,
    );
    assert_eq!(checked.tool.as_deref(), Some("run_command"));
}

/// paddock's data directory (compiled code, its key, session logs) is covered by an empty
/// read-only tmpfs in every confined program's namespace, whatever a `read` grant covers: a
/// grant over its parent shows an empty directory.
#[tokio::test]
async fn the_data_directory_is_hidden_from_programs_whatever_they_may_read() {
    let outer = tempfile::tempdir().unwrap();
    let data = outer.path().join("paddock-data");
    PluginStore::open(&data).make_private().unwrap();
    std::fs::write(data.join("key"), "DATA-DIR-SECRET").unwrap();
    std::fs::write(outer.path().join("beside.txt"), "beside").unwrap();
    let grants = format!(
        r#"grants.exec = {{ allow = ["sh"], env = ["PATH"], timeout_ms = 5_000, read = [{:?}] }}"#,
        outer.path().display().to_string()
    );
    let s = session("shell", &grants).await;
    let script = format!(
        "cat {o}/beside.txt; cat {o}/paddock-data/key; ls -A {o}/paddock-data; echo done",
        o = outer.path().display()
    );
    let args = serde_json::json!({ "program": "sh", "args": ["-c", script] });
    let out = call(&s, "run_command", &args.to_string())
        .await
        .result
        .unwrap();
    assert!(out.content.contains("beside"), "{}", out.content);
    assert!(out.content.contains("done"), "{}", out.content);
    assert!(!out.content.contains("DATA-DIR-SECRET"), "{}", out.content);
}

/// A call the gate admitted as a follow-up of a judged command (it names a `session_id` and no
/// command, so nothing was asked) starts no program, whatever tool of the plugin it is and
/// whatever the allow-list allows: a plugin cannot pass `session_id` to skip the question.
#[tokio::test]
async fn a_follow_up_call_starts_no_program_whatever_its_tool() {
    let s = session("shell", EXEC).await;
    let registry = s.registry.as_ref().expect("the plugin loads");
    for (tool, args) in [
        (
            "run_command",
            r#"{"program":"sh","args":["-c","touch ran"]}"#,
        ),
        ("shell", r#"{"command":"touch ran"}"#),
    ] {
        let entry = registry.get(tool).expect("registered");
        let grant = paddock_sandbox::Grant {
            follow_up: true,
            ..entry.grant.clone()
        };
        let report = sandbox()
            .call(
                entry.plugin().expect("a plugin"),
                tool,
                args,
                &grant,
                &CancellationToken::new(),
            )
            .await;
        let error = report.result.expect_err(tool);
        assert!(
            error.message.contains("start no program"),
            "{tool}: {}",
            error.message
        );
        assert!(!s.work.path().join("ran").exists(), "{tool} ran a program");
    }
    // The same calls, not follow-ups, run.
    let ran = call(
        &s,
        "run_command",
        r#"{"program":"sh","args":["-c","touch ran"]}"#,
    )
    .await;
    assert!(ran.result.is_ok(), "{:?}", ran.result);
    assert!(s.work.path().join("ran").exists());
}
