//! Approval questions through the real binary (T2): on a terminal (a pty) the question shows the
//! whole call canonically, `y` runs it once, `a` approves its pattern for the session, `n`
//! with a reason declines and the reason reaches the log; without a terminal a question is a
//! deny at once, never an answer read from a pipe.

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use crate::agent_common::{Project, call_step, last_stop, text};
use paddock_tests::pty::Pty;
use paddock_tests::scripted::{Script, ScriptCall, ScriptedServer, Step, Turn};
use serde_json::Value;

const QUESTION: &str = "allow? [y/a/N]";
const LONG: Duration = Duration::from_secs(60);

/// The shipped default with every tier asking.
fn asking_preset(project: &Project) -> String {
    let preset = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../presets/default.toml"),
    )
    .unwrap()
    .replace("low = \"allow\"", "low = \"ask\"");
    let path = project.home.path().join("ask.toml");
    std::fs::write(&path, preset).unwrap();
    path.display().to_string()
}

fn results(events: &[Value]) -> Vec<(String, Option<String>, String)> {
    events
        .iter()
        .filter(|e| e["type"] == "tool/result")
        .map(|e| {
            let d = &e["data"];
            (
                d["id"].as_str().unwrap().to_string(),
                d["code"].as_str().map(str::to_string),
                d["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_y_runs_once_a_approves_the_pattern_and_n_sends_a_reason() {
    let project = Project::new(&[("a.txt", "alpha\n")]);
    let read = |id: &str| ScriptCall::new(id, "read_file", r#"{"path": "a.txt"}"#, &[]);
    let server = ScriptedServer::start(Script {
        steps: vec![
            Step::Reply(Turn::calls(vec![read("c1")])),
            Step::Reply(Turn::calls(vec![read("c2"), read("c3")])),
            Step::Reply(Turn::calls(vec![ScriptCall::new(
                "c4",
                "list_dir",
                "{}",
                &[],
            )])),
        ],
    })
    .await
    .unwrap();
    let preset = asking_preset(&project);
    let url = server.openai_base_url();
    let args = [
        "run",
        "read",
        "--preset",
        &preset,
        "--base-url",
        &url,
        "--model",
        "scripted",
    ];
    let mut pty = Pty::spawn(project.command(&args)).unwrap();
    pty.expect(QUESTION);
    let screen = pty.text();
    assert!(
        screen.contains("The model asks to run read_file:")
            && screen.contains("| path: \"a.txt\"")
            && screen.contains("the preset asks for low-risk tools (`approval.low = \"ask\"`)")
            && screen.contains("a = always run read_file * in this session"),
        "{screen}"
    );
    pty.type_line("y");
    // c2 asks again; `a` covers c3 too.
    pty.expect_n(QUESTION, 2, LONG);
    pty.type_line("a");
    pty.expect_n(QUESTION, 3, LONG);
    pty.type_line("n: list nothing, read b.txt instead");
    let status = pty.wait(LONG);
    assert_eq!(status.code(), Some(5), "{}", pty.text());
    assert_eq!(
        pty.text().matches(QUESTION).count(),
        3,
        "c3 was not asked about"
    );
    let events = project.events(&project.only_session());
    // Results are logged as each call ends: c2 and c3 (parallel) in either order.
    let mut results = results(&events);
    results.sort();
    let codes: Vec<(&str, Option<&str>)> = results
        .iter()
        .map(|(id, code, _)| (id.as_str(), code.as_deref()))
        .collect();
    assert_eq!(
        codes,
        [
            ("c1", None),
            ("c2", None),
            ("c3", None),
            ("c4", Some("DECLINED"))
        ],
        "{}",
        pty.text()
    );
    assert!(
        results[3].2.contains("list nothing, read b.txt instead"),
        "the reason is in the log and goes to the model: {}",
        results[3].2
    );
    assert_eq!(last_stop(&events), "denied");
    let mut approvals: Vec<(String, Option<String>)> = events
        .iter()
        .filter(|e| e["type"] == "tool/result")
        .map(|e| {
            let d = &e["data"];
            (
                d["id"].as_str().unwrap().to_string(),
                d["approval"].as_str().map(str::to_string),
            )
        })
        .collect();
    approvals.sort();
    let approvals: Vec<Option<String>> = approvals.into_iter().map(|(_, a)| a).collect();
    // c2 and c3 ran in parallel: whichever was asked got the `a`, the other was covered.
    let mut parallel = vec![approvals[1].clone(), approvals[2].clone()];
    parallel.sort();
    assert_eq!(approvals[0].as_deref(), Some("once"), "{approvals:?}");
    assert_eq!(
        parallel,
        [
            Some("always (earlier): read_file *".to_string()),
            Some("always: read_file *".to_string())
        ],
        "every answer is in the log: {approvals:?}"
    );
    assert_eq!(approvals[3], None, "the no is the DECLINED result");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_question_shows_program_and_argv_first_and_elides_long_values() {
    let project = Project::new(&[]);
    // A program the allow-list allows: one it refuses is refused without a question.
    let args = serde_json::json!({
        "stdin": "x".repeat(3000),
        "program": "git",
        "args": ["log", "--oneline", "origin"],
    })
    .to_string();
    let server = ScriptedServer::start(Script {
        steps: vec![call_step("c1", "run_command", &args)],
    })
    .await
    .unwrap();
    let url = server.openai_base_url();
    let mut pty = Pty::spawn(project.command(&[
        "run",
        "push",
        "--preset",
        "coding",
        "--base-url",
        &url,
        "--model",
        "scripted",
    ]))
    .unwrap();
    pty.expect(QUESTION);
    let screen = pty.text();
    let command = screen
        .find("| command: git log --oneline origin")
        .expect(&screen);
    let stdin = screen.find("| stdin: \"xxx").expect(&screen);
    assert!(command < stdin, "argv first: {screen}");
    assert!(screen.contains("bytes elided of 3002 bytes"), "{screen}");
    assert!(
        screen.contains("a = always run run_command git log* in this session"),
        "{screen}"
    );
    pty.type_line("n");
    pty.wait(LONG);
    let events = project.events(&project.only_session());
    assert_eq!(results(&events)[0].1.as_deref(), Some("DECLINED"));
}

/// Chat used to take the answer from a pipe, and hung when input closed before the question.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_terminal_a_question_is_a_deny_at_once() {
    let project = Project::new(&[("a.txt", "alpha\n")]);
    let server = ScriptedServer::start(Script {
        steps: vec![
            call_step("c1", "read_file", r#"{"path": "a.txt"}"#),
            Step::Reply(Turn::text(&["ok"])),
        ],
    })
    .await
    .unwrap();
    let preset = asking_preset(&project);
    let url = server.openai_base_url();
    let mut child = project
        .command(&[
            "chat",
            "--preset",
            &preset,
            "--base-url",
            &url,
            "--model",
            "scripted",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "read a.txt").unwrap();
    writeln!(stdin, "y").unwrap();
    drop(stdin);
    let output = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let events = project.events(&project.only_session());
    let results = results(&events);
    assert_eq!(results.len(), 1, "{}", text(&output));
    assert_eq!(results[0].1.as_deref(), Some("DENIED"), "{}", results[0].2);
    assert!(results[0].2.contains("no terminal"), "{}", results[0].2);
    assert!(
        !text(&output).contains(QUESTION),
        "no question was put to a pipe"
    );
}

/// In chat, standard input belongs to the chat: on a terminal the next typed line answers, and
/// an `a` holds for the later turns of the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_chat_on_a_terminal_the_next_line_answers_and_always_lasts_the_session() {
    let project = Project::new(&[("a.txt", "alpha\n")]);
    let server = ScriptedServer::start(Script {
        steps: vec![
            call_step("c1", "read_file", r#"{"path": "a.txt"}"#),
            Step::Reply(Turn::text(&["first answer"])),
            call_step("c2", "read_file", r#"{"path": "a.txt"}"#),
            Step::Reply(Turn::text(&["second answer"])),
        ],
    })
    .await
    .unwrap();
    let preset = asking_preset(&project);
    let url = server.openai_base_url();
    let args = [
        "chat",
        "--preset",
        &preset,
        "--base-url",
        &url,
        "--model",
        "scripted",
    ];
    let mut pty = Pty::spawn(project.command(&args)).unwrap();
    pty.expect("› ");
    pty.type_line("read a.txt");
    pty.expect(QUESTION);
    pty.type_line("a");
    pty.expect("first answer");
    pty.type_line("read it again");
    pty.expect("second answer");
    pty.end_input();
    pty.wait(LONG);
    // The chat redraws its prompt (`allow? [y/a/N]`) in place; the question is put once.
    assert_eq!(
        pty.text().matches("approve this call?").count(),
        1,
        "{}",
        pty.text()
    );
    let events = project.events(&project.only_session());
    let codes: Vec<Option<String>> = results(&events).into_iter().map(|r| r.1).collect();
    assert_eq!(codes, [None, None], "{}", pty.text());
}
