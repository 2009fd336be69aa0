//! Long and background work: a command past its call's yield keeps running under a
//! session_id that `write_stdin` waits on, interrupts, or (on a terminal) types into; a
//! background server serves later calls; `write_stdin`'s answer lists what the session still
//! runs.

use serde_json::json;

use super::{ALLOW_ALL, Scene};

/// `seq 1 N` as it prints.
fn seq(n: u32) -> String {
    (1..=n).map(|i| format!("{i}\n")).collect()
}

#[test]
fn a_command_past_its_yield_keeps_running_and_write_stdin_returns_the_rest() {
    let scene = Scene::new(&[]);
    let answers = scene.run(&[
        (
            "shell",
            json!({"command": "seq 1 300; sleep 4; echo finished", "yield_ms": 1500}),
        ),
        ("write_stdin", json!({"session_id": 1, "yield_ms": 30_000})),
    ]);
    let first = &answers[0];
    assert_eq!(first.running_id(), Some(1), "{:?}", first.content);
    assert!(
        first.output().starts_with("1\n2\n3\n"),
        "what it printed so far comes with the answer: {:?}",
        first.content
    );
    let rest = &answers[1];
    assert_eq!(rest.status(), Some(0), "{:?}", rest.content);
    assert_eq!(
        format!("{}{}", first.output(), rest.output()),
        format!("{}finished\n", seq(300)),
        "the two answers hold all of the output, once"
    );
}

#[test]
fn a_short_line_printed_before_the_yield_is_in_the_still_running_answer() {
    let scene = Scene::new(&[]);
    let answers = scene.run(&[
        (
            "shell",
            json!({"command": "echo started; sleep 4; echo finished", "yield_ms": 2000}),
        ),
        ("write_stdin", json!({"session_id": 1, "yield_ms": 30_000})),
    ]);
    assert_eq!(answers[0].running_id(), Some(1), "{:?}", answers[0].content);
    assert_eq!(answers[0].output(), "started\n", "{:?}", answers[0].content);
    assert_eq!(
        answers[1].output(),
        "finished\n",
        "{:?}",
        answers[1].content
    );
}

#[test]
fn ctrl_c_interrupts_a_command_and_the_shell_keeps_its_state() {
    let scene = Scene::new(&[]);
    let answers = scene.run(&[
        (
            "shell",
            json!({"command": "KEEP=kept; mkdir -p sub; cd sub"}),
        ),
        ("shell", json!({"command": "sleep 30", "yield_ms": 500})),
        ("write_stdin", json!({"session_id": 2, "chars": "\u{3}"})),
        ("shell", json!({"command": "echo $KEEP; pwd"})),
    ]);
    assert_eq!(answers[1].running_id(), Some(2), "{:?}", answers[1].content);
    assert_eq!(answers[2].status(), Some(130), "{:?}", answers[2].content);
    assert_eq!(answers[3].status(), Some(0), "{:?}", answers[3].content);
    assert_eq!(
        answers[3].output(),
        format!("kept\n{}/sub\n", scene.root().display()),
        "the same shell, with its variables and directory"
    );
}

#[test]
fn a_background_server_serves_later_calls_until_interrupted() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let scene = Scene::with(
        &[("hello.txt", "served by the background server\n")],
        "rw",
        &format!("{ALLOW_ALL}, network = true"),
        "",
    );
    // The server takes a moment to listen: the client tries for a while (a liveness wait).
    let client = format!(
        "/usr/bin/python3 -c '\nimport time, urllib.request\nfor _ in range(100):\n    \
         try:\n        print(urllib.request.urlopen(\"http://127.0.0.1:{port}/hello.txt\").read().decode(), end=\"\")\n        \
         break\n    except OSError:\n        time.sleep(0.2)\n'"
    );
    let answers = scene.run(&[
        (
            "shell",
            json!({
                "command": format!("/usr/bin/python3 -m http.server {port} --bind 127.0.0.1"),
                "background": true,
            }),
        ),
        ("shell", json!({ "command": client })),
        (
            "write_stdin",
            json!({"session_id": 1, "chars": "\u{3}", "yield_ms": 5000}),
        ),
        ("write_stdin", json!({"session_id": 2})),
    ]);
    assert_eq!(answers[0].running_id(), Some(1), "{:?}", answers[0].content);
    assert_eq!(answers[1].status(), Some(0), "{:?}", answers[1].content);
    assert_eq!(
        answers[1].output(),
        "served by the background server\n",
        "{:?}",
        answers[1].content
    );
    let stopped = &answers[2];
    assert!(
        stopped.status().is_some() || stopped.state().starts_with("ended"),
        "Ctrl-C ended the server: {:?}",
        stopped.content
    );
    assert!(
        stopped.output().contains("GET /hello.txt"),
        "the server's own log saw the request: {:?}",
        stopped.content
    );
    assert!(
        !answers[3].content.contains("http.server"),
        "the server is no longer listed as running: {}",
        answers[3].content
    );
}

#[test]
fn a_tty_command_is_typed_into_with_write_stdin() {
    let scene = Scene::new(&[]);
    let answers = scene.run(&[
        (
            "shell",
            json!({"command": "/usr/bin/python3 -q", "tty": true, "yield_ms": 3000}),
        ),
        (
            "write_stdin",
            json!({"session_id": 1, "chars": "print(6*7)\n", "yield_ms": 3000}),
        ),
        (
            "write_stdin",
            json!({"session_id": 1, "chars": "\u{4}", "yield_ms": 10_000}),
        ),
    ]);
    assert_eq!(answers[0].running_id(), Some(1), "{:?}", answers[0].content);
    assert!(
        answers[1].output().lines().any(|l| l.trim_end() == "42"),
        "python printed the answer on its terminal: {:?}",
        answers[1].content
    );
    assert_eq!(
        answers[2].status(),
        Some(0),
        "Ctrl-D ends python: {:?}",
        answers[2].content
    );
}

#[test]
fn write_stdin_lists_a_process_started_with_an_ampersand() {
    let scene = Scene::new(&[]);
    let answers = scene.run(&[
        ("shell", json!({"command": "sleep 100 &"})),
        ("write_stdin", json!({"session_id": 1})),
    ]);
    assert_eq!(answers[0].status(), Some(0), "{:?}", answers[0].content);
    assert!(
        answers[1]
            .content
            .lines()
            .any(|l| l.starts_with("pid ") && l.trim_end_matches(']').ends_with(": sleep 100")),
        "{}",
        answers[1].content
    );
    assert!(
        answers[1]
            .content
            .contains("still running in this session:"),
        "{}",
        answers[1].content
    );
}

#[test]
fn typing_into_a_command_without_a_terminal_is_an_error_that_names_tty() {
    let scene = Scene::new(&[]);
    let answers = scene.run(&[
        ("shell", json!({"command": "sleep 20", "yield_ms": 500})),
        ("write_stdin", json!({"session_id": 1, "chars": "hello\n"})),
        ("write_stdin", json!({"session_id": 1, "chars": "\u{3}"})),
    ]);
    assert_eq!(answers[0].running_id(), Some(1), "{:?}", answers[0].content);
    assert!(!answers[1].ok, "{:?}", answers[1]);
    assert!(
        answers[1].error.contains("\"tty\": true"),
        "the error says how to type into a program: {}",
        answers[1].error
    );
    assert_eq!(answers[2].status(), Some(130), "{:?}", answers[2].content);
}

/// A command that does not stop on Ctrl-C is killed 2 s after it, as at its time limit: one
/// that ignores SIGINT, and one bash runs in its own place as PID 1 of the namespace (a lone
/// `sleep`), where the kernel drops a signal it has no handler for. Neither keeps running
/// until the session's time limit.
#[test]
fn a_command_that_ignores_ctrl_c_is_killed_soon_after() {
    for command in ["trap '' INT; sleep 600; echo survived", "sleep 600"] {
        let scene = Scene::new(&[]);
        let answers = scene.run(&[
            ("shell", json!({ "command": command, "background": true })),
            (
                "write_stdin",
                json!({"session_id": 1, "chars": "\u{3}", "yield_ms": 20_000}),
            ),
        ]);
        assert_eq!(answers[0].running_id(), Some(1), "{:?}", answers[0].content);
        let stopped = &answers[1];
        assert!(
            stopped.running_id().is_none(),
            "{command}: still running 20 s after Ctrl-C: {:?}",
            stopped.content
        );
        assert!(
            !stopped.output().contains("survived"),
            "{command}: {:?}",
            stopped.content
        );
    }
}
