//! `paddock chat` through the real binary (SPEC I1, I2, M2): steering typed while the model
//! streams goes in before the next model request; a follow-up runs when the turn would end;
//! `/stop` interrupts.

use std::io::Write;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::agent_common::Project;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_goes_in_before_the_next_request_and_follow_ups_run_after() {
    let project = Project::new(&[("a.txt", "alpha\n"), ("b.txt", "beta\n")]);
    let mut slow = Turn::calls(vec![ScriptCall::new(
        "c1",
        "read_file",
        r#"{"path": "a.txt"}"#,
        &[],
    )]);
    slow.text = vec!["Reading".into(), " a.txt".into(), " now.".into()];
    slow.frame_delay_ms = 250;
    let server = ScriptedServer::start(Script {
        steps: vec![
            Step::Reply(slow),
            Step::Reply(Turn::text(&["a.txt says alpha."])),
            Step::Reply(Turn::text(&["b.txt says beta."])),
        ],
    })
    .await
    .unwrap();
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

    let events = project.events(&id);
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
    let ends: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "turn/end")
        .map(|e| e["data"]["reason"].as_str().unwrap())
        .collect();
    assert_eq!(ends, ["completed", "completed"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_interrupts_the_turn_and_the_chat_goes_on() {
    let project = Project::new(&[]);
    let mut slow = Turn::text(&["one", " two", " three", " four", " five"]);
    slow.frame_delay_ms = 2_000;
    let server = ScriptedServer::start(Script {
        steps: vec![Step::Reply(slow), Step::Reply(Turn::text(&["Fine."]))],
    })
    .await
    .unwrap();
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
    let events = project.events(&id);
    let ends: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "turn/end")
        .map(|e| e["data"]["reason"].as_str().unwrap())
        .collect();
    assert_eq!(ends, ["interrupted", "completed"]);
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "inbox/in" && e["data"]["lane"] == "interrupt"),
        "the interrupt was logged"
    );
}
