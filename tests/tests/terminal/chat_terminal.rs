//! `paddock chat` on a real pseudo-terminal (M2, I1, I2, L5, T2, T3): the
//! terminal is emulated (`vt100`), so the tests read the screen a person would see. Editing
//! with the arrow keys reaches the model as typed; text typed while the reply streams never
//! lands inside it; a spinner with the elapsed time shows while the server stalls; results
//! show their head and `/show ID` shows all; `--continue` reopens the last session here with
//! its end shown; `a` stops the questions for its pattern; Ctrl-C while idle leaves with 130.

use std::time::Duration;

use crate::agent_common::{Project, call_step};
use paddock_tests::pty::Pty;
use paddock_tests::scripted::{Fault, Script, ScriptedServer, Step, Turn};
use serde_json::Value;

const LONG: Duration = Duration::from_secs(60);
const LEFT: &str = "\x1b[D";
const HOME: &str = "\x1b[H";
const RIGHT: &str = "\x1b[C";
const UP: &str = "\x1b[A";

async fn server(steps: Vec<Step>) -> ScriptedServer {
    ScriptedServer::start(Script { steps })
        .await
        .expect("scripted server")
}

fn chat(project: &Project, url: &str, extra: &[&str]) -> Pty {
    let mut args = vec!["chat", "--base-url", url, "--model", "scripted"];
    args.extend_from_slice(extra);
    let pty = Pty::spawn(project.command(&args)).expect("spawn paddock chat on a pty");
    pty.expect_on_screen("› ", LONG);
    pty
}

/// The user messages of a request, in order.
fn user_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arrow_key_edits_reach_the_model_as_typed_and_history_is_kept_private() {
    let project = Project::new(&[]);
    let server = server(vec![
        Step::Reply(Turn::text(&["hi there"])),
        Step::Reply(Turn::text(&["again"])),
    ])
    .await;
    let url = server.openai_base_url();
    let mut pty = chat(&project, &url, &[]);
    // "helo wrld", fix "world" with ←, then "hello" from the start of the line.
    pty.type_keys("helo wrld");
    pty.type_keys(&LEFT.repeat(3));
    pty.type_keys("o");
    pty.type_keys(HOME);
    pty.type_keys(&RIGHT.repeat(3));
    pty.type_keys("l\r");
    pty.expect_on_screen("agent: hi there", LONG);
    // ↑ recalls it from the history.
    pty.type_keys(UP);
    pty.expect_on_screen("› hello world", LONG);
    pty.type_keys("\r");
    pty.expect_on_screen("agent: again", LONG);
    pty.type_line("/quit");
    let status = pty.wait(LONG);
    assert_eq!(status.code(), Some(0), "{}", pty.screen_text());
    let requests = server.requests();
    assert_eq!(user_texts(&requests[0].body), ["hello world"]);
    assert_eq!(
        user_texts(&requests[1].body),
        ["hello world", "hello world"]
    );
    let history = project.home.path().join("chat-history");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&history).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the input history is private");
    assert!(
        std::fs::read_to_string(&history)
            .unwrap()
            .contains("hello world")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typing_while_the_reply_streams_stays_on_the_input_line() {
    let project = Project::new(&[]);
    let mut slow = Turn::text(&["The quick ", "brown fox ", "jumps over ", "the lazy dog."]);
    slow.frame_delay_ms = 300;
    let server = server(vec![Step::Reply(slow), Step::Reply(Turn::text(&["noted"]))]).await;
    let url = server.openai_base_url();
    let mut pty = chat(&project, &url, &[]);
    pty.type_line("tell me");
    pty.expect_on_screen("The quick", LONG);
    pty.type_keys("xyz");
    pty.expect_on_screen("stopped: completed", LONG);
    // The line editor prints the turn's end above itself, then redraws the prompt with what
    // was typed: two writes, so the screen is whole once the input line is back.
    pty.expect_on_screen("› xyz", LONG);
    let screen = pty.screen_text();
    assert!(
        screen.contains("agent: The quick brown fox jumps over the lazy dog.\n"),
        "the reply is whole: {screen}"
    );
    assert_eq!(screen.matches("xyz").count(), 1, "{screen}");
    pty.type_keys("\r");
    pty.expect_on_screen("agent: noted", LONG);
    pty.type_line("/quit");
    pty.wait(LONG);
    assert_eq!(user_texts(&server.requests()[1].body)[1], "xyz");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spinner_with_the_elapsed_time_shows_while_the_server_stalls() {
    let project = Project::new(&[]);
    let mut stalled = Turn::text(&["finally"]);
    stalled.fault = Some(Fault::StallAfter {
        frames: 0,
        ms: 2500,
    });
    let server = server(vec![Step::Reply(stalled)]).await;
    let url = server.openai_base_url();
    let mut pty = chat(&project, &url, &[]);
    pty.type_line("wait for it");
    pty.expect_on_screen("waiting for the model 1.", LONG);
    let screen = pty.screen_text();
    assert!(screen.contains("· turn 1."), "{screen}");
    assert!(
        ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']
            .iter()
            .any(|c| screen.contains(*c)),
        "{screen}"
    );
    pty.expect_on_screen("agent: finally", LONG);
    pty.expect_on_screen("stopped: completed", LONG);
    assert!(
        !pty.screen_text().contains("waiting for the model"),
        "the progress line goes when the turn ends: {}",
        pty.screen_text()
    );
    pty.type_line("/quit");
    pty.wait(LONG);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_show_a_head_and_show_id_shows_all_and_controls_never_drive_the_terminal() {
    let lines: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    let project = Project::new(&[
        ("long.txt", &lines),
        ("evil.txt", "ok\x1b[2J\x1b]0;pwned\x07\n"),
    ]);
    let server = server(vec![
        Step::Reply(Turn::calls(vec![
            paddock_tests::scripted::ScriptCall::new(
                "c1",
                "read_file",
                r#"{"path": "long.txt"}"#,
                &[],
            ),
            paddock_tests::scripted::ScriptCall::new(
                "c2",
                "read_file",
                r#"{"path": "evil.txt"}"#,
                &[],
            ),
            paddock_tests::scripted::ScriptCall::new(
                "c3",
                "read_file",
                r#"{"path": "nope.txt"}"#,
                &[],
            ),
        ])),
        Step::Reply(Turn::text(&["read them"])),
    ])
    .await;
    let url = server.openai_base_url();
    let mut pty = chat(&project, &url, &[]);
    pty.type_line("read the files");
    pty.expect_on_screen("stopped: completed", LONG);
    let screen = pty.screen_text();
    assert!(screen.contains("✓ c1 read_file · 12 lines"), "{screen}");
    assert!(screen.contains("… 8 more lines · /show c1"), "{screen}");
    assert!(!screen.contains("line 12"), "{screen}");
    assert!(
        screen.contains("✗ c3 read_file"),
        "errors are labelled: {screen}"
    );
    assert!(
        screen.contains("ok\\x1b[2J\\x1b]0;pwned\\x07"),
        "controls are shown, not obeyed: {screen}"
    );
    assert!(
        !pty.text().contains("\x1b]0;pwned"),
        "no title change reached the terminal"
    );
    pty.type_line("/show c1");
    pty.expect_on_screen("line 12", LONG);
    pty.type_line("/quit");
    pty.wait(LONG);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_reopens_the_last_session_here_with_its_end_shown() {
    let project = Project::new(&[]);
    let server = server(vec![
        Step::Reply(Turn::text(&["the first reply"])),
        Step::Reply(Turn::text(&["the second reply"])),
    ])
    .await;
    let url = server.openai_base_url();
    let mut pty = chat(&project, &url, &[]);
    pty.type_line("first message");
    pty.expect_on_screen("stopped: completed", LONG);
    pty.type_line("/quit");
    assert_eq!(pty.wait(LONG).code(), Some(0));
    let id = project.only_session();

    let mut pty = chat(&project, &url, &["--continue"]);
    let screen = pty.screen_text();
    assert!(
        screen.contains(&format!("paddock session {id}")),
        "{screen}"
    );
    assert!(screen.contains("you: first message"), "{screen}");
    assert!(screen.contains("agent: the first reply"), "{screen}");
    pty.type_line("second message");
    pty.expect_on_screen("agent: the second reply", LONG);
    pty.type_line("/quit");
    assert_eq!(pty.wait(LONG).code(), Some(0));
    assert_eq!(project.sessions(), [id], "the same session went on");
    let second = &server.requests()[1].body;
    assert_eq!(user_texts(second), ["first message", "second message"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_stops_the_questions_for_its_pattern_and_ctrl_c_when_idle_exits_130() {
    let project = Project::new(&[("a.txt", "alpha\n")]);
    let preset = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../presets/default.toml"),
    )
    .unwrap()
    .replace("low = \"allow\"", "low = \"ask\"");
    let path = project.home.path().join("ask.toml");
    std::fs::write(&path, preset).unwrap();
    let server = server(vec![
        call_step("c1", "read_file", r#"{"path": "a.txt"}"#),
        call_step("c2", "read_file", r#"{"path": "a.txt", "offset": 1}"#),
        Step::Reply(Turn::text(&["both read"])),
        call_step("c3", "list_dir", r#"{"path": "."}"#),
        Step::Reply(Turn::text(&["listed"])),
    ])
    .await;
    let url = server.openai_base_url();
    let mut pty = chat(&project, &url, &["--preset", &path.display().to_string()]);
    pty.type_line("read a.txt twice");
    pty.expect_on_screen("allow? [y/a/N]", LONG);
    let screen = pty.screen_text();
    assert!(
        screen.contains("| path: \"a.txt\""),
        "the whole call: {screen}"
    );
    assert!(
        screen.contains("a = always run read_file * in this session"),
        "{screen}"
    );
    pty.type_line("a");
    pty.expect_on_screen("agent: both read", LONG);
    // Another tool is asked about again.
    pty.type_line("list");
    pty.expect_on_screen("run list_dir", LONG);
    pty.type_line("y");
    pty.expect_on_screen("agent: listed", LONG);
    assert_eq!(
        pty.text().matches("approve this call?").count(),
        2,
        "{}",
        pty.text()
    );
    pty.type_keys("\x03");
    assert_eq!(pty.wait(LONG).code(), Some(130), "{}", pty.screen_text());
}

/// The status line quotes what the server said (a retry's reason) and the model's call ids:
/// drawn into the prompt, it is sanitized like every other line (T3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_line_never_carries_a_servers_escape_sequences() {
    let project = Project::new(&[]);
    let server = server(vec![
        Step::Status {
            status: 503,
            body: "busy\x1b]0;pwned\x07\x1b]52;c;cHduZWQ=\x07".into(),
            retry_after_secs: Some(2),
            retry_after_ms: None,
        },
        Step::Reply(Turn::text(&["fine now"])),
    ])
    .await;
    let url = server.openai_base_url();
    let mut pty = chat(&project, &url, &[]);
    pty.type_line("hi");
    pty.expect_on_screen("fine now", LONG);
    let raw = pty.text();
    assert!(raw.contains("retrying in"), "{raw}");
    assert!(
        !raw.contains("\x1b]0;pwned") && !raw.contains("\x1b]52;"),
        "the server's sequences reached the terminal: {raw:?}"
    );
    assert!(
        raw.contains("busy\\x1b]0;pwned"),
        "shown, not obeyed: {raw:?}"
    );
    pty.type_line("/quit");
    pty.wait(LONG);
}
