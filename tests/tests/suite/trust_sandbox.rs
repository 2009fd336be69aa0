//! What one session leaves where another cannot reach, and where a granted capability cannot
//! go, through the real binary: the http capability never connects to loopback through a name
//! (S6, SSRF); each command spills into its own private directory, and session logs are
//! private (S5).

use std::io::{ErrorKind, Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;

use crate::agent_common::{Project, text};
use paddock_tests::plugins::plugin_dir;
use serde_json::Value;

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn fetch_preset(project: &Project, allow: &str) -> String {
    let path = project.home.path().join("fetch.toml");
    std::fs::write(
        &path,
        format!(
            "[plugins.fetch]\nsource = \"builtin:fetch\"\n\
             grants.http = {{ allow = [\"{allow}\"], timeout_ms = 5_000 }}\n\
             [approval]\nhigh = \"allow\"\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

async fn fetch(project: &Project, preset: &str, url: &str) -> Value {
    let args = serde_json::json!({ "url": url }).to_string();
    let out = project
        .paddock(&[
            "tool",
            "call",
            "fetch_url",
            &args,
            "--preset",
            preset,
            "--json",
        ])
        .await;
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_name_that_resolves_to_loopback_gets_no_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let project = Project::new(&[]);

    // `localhost` is on the allow-list by name, and resolves to 127.0.0.1.
    let preset = fetch_preset(&project, &format!("http://localhost:{port}"));
    let answer = fetch(&project, &preset, &format!("http://localhost:{port}/")).await;
    assert_eq!(answer["ok"], false, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("resolves to") && message.contains("not public"),
        "{message}"
    );
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the loopback listener was reached: {other:?}"),
    }

    // Granted by address, the same listener is reachable: the refusal above was the address.
    // Its redirect elsewhere is not followed: a new request would be checked anew.
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    other.set_nonblocking(true).unwrap();
    let other_port = other.local_addr().unwrap().port();
    let preset = fetch_preset(&project, &format!("http://127.0.0.1:{port}"));
    let server = std::thread::spawn(move || {
        listener.set_nonblocking(false).unwrap();
        let (mut socket, _) = listener.accept().unwrap();
        let mut buf = [0u8; 1024];
        let _ = socket.read(&mut buf);
        let reply = format!(
            "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:{other_port}/\r\n\
             Content-Length: 2\r\nConnection: close\r\n\r\nok"
        );
        socket.write_all(reply.as_bytes()).unwrap();
    });
    let answer = fetch(&project, &preset, &format!("http://127.0.0.1:{port}/")).await;
    assert_eq!(answer["ok"], true, "{answer}");
    assert!(
        answer["content"].as_str().unwrap().starts_with("HTTP 302"),
        "{answer}"
    );
    server.join().unwrap();
    match other.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the redirect was followed: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_command_spills_privately_and_session_logs_are_private() {
    let project = Project::new(&[]);
    let preset = project.home.path().join("spill.toml");
    std::fs::write(
        &preset,
        format!(
            "[plugins.attacks]\nsource = \"{}\"\n[tools]\ndisable = [\"attacks:half_write\"]\n[approval]\nhigh = \"allow\"\n",
            plugin_dir().join("hostile_attacks.wasm").display()
        ),
    )
    .unwrap();
    let preset = preset.display().to_string();
    let mut spilled = Vec::new();
    for _ in 0..2 {
        let out = project
            .paddock(&[
                "tool",
                "call",
                "spill_result",
                r#"{"kib": 64}"#,
                "--preset",
                &preset,
                "--json",
            ])
            .await;
        let answer: Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(answer["truncated"], true, "{answer}");
        let next: Value = serde_json::from_str(answer["continuation"].as_str().unwrap()).unwrap();
        spilled.push(next["path"].as_str().unwrap().to_string());
    }
    let sessions = project.home.path().join("sessions");
    let dirs: Vec<_> = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(dirs.len(), 2, "one spill directory per command: {dirs:?}");
    for dir in &dirs {
        let spill = dir.join("spill");
        assert_eq!(mode(dir), 0o700, "{}", dir.display());
        assert_eq!(mode(&spill), 0o700, "{}", spill.display());
        for file in std::fs::read_dir(&spill).unwrap().flatten() {
            assert_eq!(mode(&file.path()), 0o600, "{}", file.path().display());
        }
    }
    // A later command (whose read_file mounts its own /spill) cannot read an earlier spill.
    let args = serde_json::json!({ "path": spilled[0] }).to_string();
    let out = project
        .paddock(&["tool", "call", "read_file", &args, "--json"])
        .await;
    let answer: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        answer["ok"], false,
        "another command's spill is not visible: {answer}"
    );

    let out = project.paddock(&["run", "--demo"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let id = project
        .sessions()
        .into_iter()
        .find(|s| !s.starts_with("cli-"))
        .unwrap();
    let log = project.log_path(&id);
    assert_eq!(mode(&log), 0o600);
    assert_eq!(mode(log.parent().unwrap()), 0o700);
    assert_eq!(mode(&sessions), 0o700);
}

/// Modes do not depend on the user's umask: under umask 000 the data directory, the session
/// directories, logs, spill directories and spilled files are still the owner's alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_modes_hold_under_an_open_umask() {
    use std::os::unix::process::CommandExt;
    let project = Project::new(&[]);
    let home = project.home.path().join("fresh-home");
    let preset = project.home.path().join("spill.toml");
    std::fs::write(
        &preset,
        format!(
            "[plugins.attacks]\nsource = \"{}\"\n[tools]\ndisable = [\"attacks:half_write\"]\n[approval]\nhigh = \"allow\"\n",
            plugin_dir().join("hostile_attacks.wasm").display()
        ),
    )
    .unwrap();
    let open_umask = |args: &[&str]| {
        let mut cmd = project.command(args);
        cmd.env("PADDOCK_HOME", &home);
        // SAFETY: umask is async-signal-safe and touches no memory.
        unsafe {
            cmd.pre_exec(|| {
                libc::umask(0);
                Ok(())
            });
        }
        cmd.output().unwrap()
    };
    let out = open_umask(&["run", "--demo"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let args = [
        "tool",
        "call",
        "spill_result",
        r#"{"kib": 64}"#,
        "--preset",
        preset.to_str().unwrap(),
    ];
    let out = open_umask(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(mode(&home), 0o700, "the data directory");
    let sessions = home.join("sessions");
    assert_eq!(mode(&sessions), 0o700);
    let mut spilled = 0;
    for dir in std::fs::read_dir(&sessions).unwrap().flatten() {
        let dir = dir.path();
        assert_eq!(mode(&dir), 0o700, "{}", dir.display());
        for file in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = file.path();
            let want = if path.is_dir() { 0o700 } else { 0o600 };
            assert_eq!(mode(&path), want, "{}", path.display());
            if path.ends_with("spill") {
                for f in std::fs::read_dir(&path).unwrap().flatten() {
                    assert_eq!(mode(&f.path()), 0o600, "{}", f.path().display());
                    spilled += 1;
                }
            }
        }
    }
    assert!(spilled > 0, "a result was spilled");
}

/// A plugin granted an address cannot pick another virtual host behind it with `Host`: the
/// request is refused before any connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_set_host_header_is_refused_before_any_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let project = Project::new(&[]);
    let preset = project.home.path().join("raw.toml");
    std::fs::write(
        &preset,
        format!(
            "[plugins.raw]\nsource = \"{}\"\n\
             grants.http = {{ allow = [\"http://127.0.0.1:{port}\"], timeout_ms = 5_000 }}\n\
             [approval]\nhigh = \"allow\"\n",
            plugin_dir().join("hostile_http.wasm").display()
        ),
    )
    .unwrap();
    let args = serde_json::json!({
        "url": format!("http://127.0.0.1:{port}/"),
        "headers": [{"name": "Host", "value": "metadata.google.internal"}],
    })
    .to_string();
    let out = project
        .paddock(&[
            "tool",
            "call",
            "raw_request",
            &args,
            "--preset",
            preset.to_str().unwrap(),
            "--json",
        ])
        .await;
    let answer: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    assert_eq!(answer["ok"], false, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("header `Host` is refused"),
        "{answer}"
    );
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("a connection was made: {other:?}"),
    }
}
