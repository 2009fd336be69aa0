//! The terminal through the real binary on a pty (T3): what a model says, what a tool returns
//! and what the log holds cannot drive the terminal on any output path (`run`, `log`,
//! `log --json`, `tool call`, errors): no escape sequence and no control character other than
//! newline and tab reaches the screen, while the log keeps the text verbatim.

use std::time::Duration;

use crate::agent_common::{Project, call_step};
use paddock_tests::pty::Pty;
use paddock_tests::scripted::{Script, ScriptedServer, Step, Turn};

/// Clipboard write (OSC 52), window title (OSC 0), clear screen, cursor home, a C1 CSI, a bell.
const HOSTILE: &str = "\x1b]52;c;cHduZWQ=\x07\x1b[2J\x1b[H\x1b]0;owned\x07\u{9b}1A\r";

/// Nothing but printable text, newline, tab and the pty's own carriage returns (ONLCR turns
/// each newline into CR LF) reached the screen.
fn assert_inert(screen: &[u8], path: &str) {
    let text = String::from_utf8_lossy(screen).replace("\r\n", "\n");
    let bad: Vec<char> = text
        .chars()
        .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
        .collect();
    assert!(
        bad.is_empty(),
        "{path}: control characters reached the terminal: {bad:?} in\n{text:?}"
    );
}

fn run_on_pty(project: &Project, args: &[&str]) -> Vec<u8> {
    let mut pty = Pty::spawn(project.command(args)).expect("pty");
    pty.wait(Duration::from_secs(60));
    // The reader thread drains what is left after the exit.
    std::thread::sleep(Duration::from_millis(200));
    pty.screen()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escape_sequences_from_the_model_tools_and_the_log_never_reach_the_terminal() {
    let project = Project::new(&[("evil.txt", &format!("before{HOSTILE}after\n"))]);
    let text = Turn::text(&["look: ", HOSTILE, " done"]);
    let server = ScriptedServer::start(Script {
        steps: vec![
            call_step("c1", "read_file", r#"{"path": "evil.txt"}"#),
            Step::Reply(text),
        ],
    })
    .await
    .unwrap();
    let url = server.openai_base_url();
    let project = std::sync::Arc::new(project);

    let p = std::sync::Arc::clone(&project);
    let screen = tokio::task::spawn_blocking(move || {
        run_on_pty(
            &p,
            &[
                "run",
                "read evil.txt",
                "--base-url",
                &url,
                "--model",
                "scripted",
            ],
        )
    })
    .await
    .unwrap();
    assert_inert(&screen, "run");
    let shown = String::from_utf8_lossy(&screen);
    assert!(
        shown.contains("\\x1b]52;c;cHduZWQ="),
        "made visible, not dropped: {shown}"
    );

    let id = project.only_session();
    let log = std::fs::read_to_string(project.log_path(&id)).unwrap();
    assert!(
        log.contains("\\u001b]52;c;cHduZWQ=\\u0007"),
        "the log keeps the text verbatim"
    );

    let p = std::sync::Arc::clone(&project);
    let id2 = id.clone();
    let (log_view, log_json, tool_call, tool_json) = tokio::task::spawn_blocking(move || {
        (
            run_on_pty(&p, &["log", &id2]),
            run_on_pty(&p, &["log", &id2, "--json"]),
            run_on_pty(&p, &["tool", "call", "read_file", r#"{"path":"evil.txt"}"#]),
            run_on_pty(
                &p,
                &[
                    "tool",
                    "call",
                    "read_file",
                    r#"{"path":"evil.txt"}"#,
                    "--json",
                ],
            ),
        )
    })
    .await
    .unwrap();
    assert_inert(&log_view, "log");
    assert_inert(&log_json, "log --json");
    assert_inert(&tool_call, "tool call");
    assert_inert(&tool_json, "tool call --json");
    assert!(String::from_utf8_lossy(&tool_call).contains("before\\x1b]52"));
    // JSON output stays JSON: the C1 character is a \u escape, the value unchanged.
    let json_text = String::from_utf8_lossy(&tool_json).replace("\r\n", "\n");
    let value: serde_json::Value = serde_json::from_str(json_text.trim()).unwrap();
    assert!(value["content"].as_str().unwrap().contains(HOSTILE));

    // An error message that quotes a hostile name is sanitized too.
    let p = std::sync::Arc::clone(&project);
    let error = tokio::task::spawn_blocking(move || {
        run_on_pty(&p, &["tool", "call", "read_file\x1b[2J", "{}"])
    })
    .await
    .unwrap();
    assert_inert(&error, "error");
}

/// `preset check` and `preset show` of a file from anywhere (a cloned repository's): its keys
/// and values reach the screen only made visible, in errors, in JSON and in TOML.
#[test]
fn preset_errors_and_views_of_a_hostile_file_never_drive_the_terminal() {
    let project = Project::new(&[]);
    let bad = project.dir.path().join("bad.toml");
    std::fs::write(&bad, "name = \"x\"\n\"\\u001b]0;owned\\u0007\" = 1\n").unwrap();
    let bad = bad.display().to_string();
    let screen = run_on_pty(&project, &["preset", "check", &bad]);
    assert_inert(&screen, "preset check");
    assert!(
        String::from_utf8_lossy(&screen).contains("\\x1b]0;owned"),
        "{}",
        String::from_utf8_lossy(&screen)
    );
    let good = project.dir.path().join("good.toml");
    std::fs::write(
        &good,
        "name = \"x\\u009b2J\"\ndescription = \"\\u001b]52;c;cHduZWQ=\\u0007\\u202e\"\n",
    )
    .unwrap();
    let good = good.display().to_string();
    for args in [
        vec!["preset", "show", &good],
        vec!["preset", "show", &good, "--toml"],
        vec!["preset", "check", &good],
    ] {
        let screen = run_on_pty(&project, &args);
        assert_inert(&screen, &args.join(" "));
        let shown = String::from_utf8_lossy(&screen);
        assert!(!shown.contains('\u{202e}'), "{shown}");
    }
}
