//! Messages that arrive while a session works (I1, I2, M2): steering goes in before the
//! next model request; a follow-up runs when the turn would end; an interrupt ends the turn
//! and the session goes on. In process through `Session::accept` and `Session::interrupt`,
//! and through `paddock chat` (the real binary), where a typed line steers, `/next` follows up
//! and `/stop` interrupts.

use std::io::Write;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::agent_common::{Project, openai};
use paddock::agent::{Entry, Observer, Quiet};
use paddock::log::{Lane, Source, StopReason};
use paddock::model::ModelEvent;
use paddock::session::Session;
use paddock_tests::scripted::{Script, ScriptCall, ScriptedServer, Step, Turn};
use serde_json::Value;

async fn wait_for(project: &Project, what: &str, count: usize) -> String {
    let started = Instant::now();
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the log never showed {count} x {what}"
        );
        if let Some(id) = project.sessions().first().cloned()
            && std::fs::read_to_string(project.log_path(&id))
                .is_ok_and(|t| t.matches(what).count() >= count)
        {
            return id;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `paddock chat` against the scripted server at `url`, with piped standard input.
fn spawn_chat(project: &Project, url: &str, extra: &[&str]) -> Child {
    let mut args = vec!["chat", "--base-url", url, "--model", "scripted"];
    args.extend_from_slice(extra);
    project
        .command(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn paddock chat")
}

fn type_line(child: &mut Child, line: &str) {
    let stdin = child.stdin.as_mut().expect("piped stdin");
    writeln!(stdin, "{line}").expect("type a line");
    stdin.flush().expect("flush");
}

fn user_texts(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}

/// A model that streams a call to read a.txt slowly (so there is time to steer), then answers
/// twice.
async fn slow_reader() -> ScriptedServer {
    let mut slow = Turn::calls(vec![ScriptCall::new(
        "c1",
        "read_file",
        r#"{"path": "a.txt"}"#,
        &[],
    )]);
    slow.text = vec!["Reading".into(), " a.txt".into(), " now.".into()];
    slow.frame_delay_ms = 250;
    ScriptedServer::start(Script {
        steps: vec![
            Step::Reply(slow),
            Step::Reply(Turn::text(&["a.txt says alpha."])),
            Step::Reply(Turn::text(&["b.txt says beta."])),
        ],
    })
    .await
    .unwrap()
}

/// "and mention the file size" steered and "now read b.txt" followed up while the first
/// request of "read a.txt" streamed: what the requests and the log show.
fn assert_steered_and_followed_up(server: &ScriptedServer, events: &[Value]) {
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // Steering: after the tool result, before the second request.
    let second = requests[1].body["messages"].as_array().unwrap();
    let roles: Vec<&str> = second.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"]);
    assert_eq!(
        user_texts(second),
        ["read a.txt", "and mention the file size"]
    );
    // The follow-up waited for the turn to end, then started the next one.
    let third = requests[2].body["messages"].as_array().unwrap();
    assert_eq!(user_texts(third).last().unwrap(), "now read b.txt");
    assert_eq!(third[third.len() - 2]["content"], "a.txt says alpha.");

    let inbox: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["type"] == "inbox/in")
        .map(|e| {
            (
                e["data"]["lane"].as_str().unwrap(),
                e["data"]["text"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        inbox,
        [
            ("next-step", "and mention the file size"),
            ("next-turn", "now read b.txt")
        ]
    );
    assert_eq!(turn_ends(events), ["completed", "completed"]);
}

fn turn_ends(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .filter(|e| e["type"] == "turn/end")
        .map(|e| e["data"]["reason"].as_str().unwrap())
        .collect()
}

/// The first turn was interrupted, with the interrupt logged, and the second completed.
fn interrupted_then_completed(events: &[Value]) {
    assert_eq!(turn_ends(events), ["interrupted", "completed"]);
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "inbox/in" && e["data"]["lane"] == "interrupt"),
        "the interrupt was logged"
    );
}

/// Once the first attempt starts streaming: accepts each of `entries` into the session's
/// inbox, then interrupts the turn if `interrupt`.
struct WhileStreaming<'a> {
    session: &'a Session,
    entries: Vec<Entry>,
    interrupt: bool,
    done: AtomicBool,
}

impl Observer for WhileStreaming<'_> {
    fn model_event(&self, event: &ModelEvent) {
        if !matches!(event, ModelEvent::Delta { .. }) || self.done.swap(true, Ordering::SeqCst) {
            return;
        }
        for entry in &self.entries {
            assert!(self.session.accept(entry.clone()).expect("logged"));
        }
        if self.interrupt {
            self.session.interrupt();
        }
    }
}

fn entry(id: &str, lane: Lane, text: &str) -> Entry {
    Entry {
        id: id.into(),
        source: Source::User,
        lane,
        text: text.into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_goes_in_before_the_next_request_and_follow_ups_run_after() {
    let project = Project::warm(&[("a.txt", "alpha\n"), ("b.txt", "beta\n")]);
    let server = slow_reader().await;
    let session = project.start(openai(&server)).await;
    let watching = WhileStreaming {
        session: &session,
        entries: vec![
            entry("s1", Lane::NextStep, "and mention the file size"),
            entry("f1", Lane::NextTurn, "now read b.txt"),
        ],
        interrupt: false,
        done: AtomicBool::new(false),
    };
    let end = session.send("read a.txt", &watching).await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);
    // An id already accepted is not accepted (nor logged) again.
    assert!(
        !session
            .accept(entry("s1", Lane::NextStep, "again"))
            .unwrap()
    );
    assert_steered_and_followed_up(&server, &project.events(session.id()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_steers_with_a_typed_line_and_follows_up_with_next() {
    let project = Project::warm(&[("a.txt", "alpha\n"), ("b.txt", "beta\n")]);
    let server = slow_reader().await;
    let url = server.openai_base_url();
    let mut child = spawn_chat(&project, &url, &[]);
    type_line(&mut child, "read a.txt");
    wait_for(&project, "attempt/start", 1).await;
    type_line(&mut child, "and mention the file size");
    type_line(&mut child, "/next now read b.txt");
    let id = wait_for(&project, "\"turn/end\"", 2).await;
    drop(child.stdin.take());
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert_eq!(status.code(), Some(0));
    assert_steered_and_followed_up(&server, &project.events(&id));
}

/// A model that counts slowly (two seconds a word), then answers.
async fn slow_counter() -> ScriptedServer {
    let mut slow = Turn::text(&["one", " two", " three", " four", " five"]);
    slow.frame_delay_ms = 2_000;
    ScriptedServer::start(Script {
        steps: vec![Step::Reply(slow), Step::Reply(Turn::text(&["Fine."]))],
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_ends_the_turn_and_the_session_goes_on() {
    let project = Project::warm(&[]);
    let server = slow_counter().await;
    let session = project.start(openai(&server)).await;
    let watching = WhileStreaming {
        session: &session,
        entries: vec![entry("i1", Lane::Interrupt, "/stop")],
        interrupt: true,
        done: AtomicBool::new(false),
    };
    let started = Instant::now();
    let end = session.send("count slowly", &watching).await;
    assert_eq!(end.reason, StopReason::Interrupted, "{:?}", end.detail);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the interrupt took {:?}",
        started.elapsed()
    );
    let end = session.send("are you there?", &Quiet).await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);
    interrupted_then_completed(&project.events(session.id()));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_interrupts_the_turn_and_the_chat_goes_on() {
    let project = Project::warm(&[]);
    let server = slow_counter().await;
    let url = server.openai_base_url();
    let mut child = spawn_chat(&project, &url, &[]);
    type_line(&mut child, "count slowly");
    wait_for(&project, "attempt/start", 1).await;
    let stopped_at = Instant::now();
    type_line(&mut child, "/stop");
    let id = wait_for(&project, "\"turn/end\"", 1).await;
    assert!(
        stopped_at.elapsed() < Duration::from_secs(5),
        "/stop took {:?}",
        stopped_at.elapsed()
    );
    type_line(&mut child, "are you there?");
    wait_for(&project, "\"turn/end\"", 2).await;
    type_line(&mut child, "/quit");
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert_eq!(status.code(), Some(0), "the last turn completed");
    interrupted_then_completed(&project.events(&id));
}
