//! The library `Session` in process, against the scripted model server: no binary, no
//! terminal. What a program embedding paddock relies on: a turn's calls logged through the one
//! path (checked once, queued, started, resulted); `terminate` ending a turn `terminated` and
//! keeping later turns from starting; a client session's calls logged like a model's, and a
//! model session refusing them.

use crate::agent_common::{Project, openai};
use paddock::agent::Quiet;
use paddock::log::StopReason;
use paddock::pipeline::RawCall;
use paddock::session::Session;
use paddock_tests::scripted::{Fault, Script, ScriptCall, ScriptedServer, Step, Turn};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A project holding notes.txt ("one", "two").
fn fixture() -> Project {
    Project::warm(&[("notes.txt", "one\ntwo\n")])
}

fn events(session: &Session) -> Vec<Value> {
    std::fs::read_to_string(session.log_path())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turns_calls_are_checked_once_and_logged_in_order() {
    let fixture = fixture();
    let server = ScriptedServer::start(Script {
        steps: vec![
            // An alias and a repairable argument text: the one check resolves and repairs both.
            Step::Reply(Turn::calls(vec![ScriptCall::new(
                "c1",
                "cat",
                "{'path': 'notes.txt'}",
                &[],
            )])),
            Step::Reply(Turn::text(&["two lines."])),
        ],
    })
    .await
    .unwrap();
    let session = fixture.builder(openai(&server)).start().await.unwrap();
    let end = session.send("what is in notes.txt?", &Quiet).await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);
    let events = events(&session);
    let calls: Vec<&str> = kinds(&events)
        .into_iter()
        .filter(|k| k.starts_with("tool/"))
        .collect();
    assert_eq!(calls, ["tool/call", "tool/start", "tool/result"]);
    let call = &events.iter().find(|e| e["type"] == "tool/call").unwrap()["data"];
    assert_eq!(call["tool"], "read_file");
    assert!(
        call["touches"]["paths"][0]
            .as_str()
            .unwrap()
            .ends_with("notes.txt")
    );
    let result = &events.iter().find(|e| e["type"] == "tool/result").unwrap()["data"];
    assert_eq!(result["args"]["path"], "notes.txt");
    let repairs: Vec<&str> = result["repairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["repair"].as_str().unwrap())
        .collect();
    assert!(
        repairs.contains(&"tool_alias") && repairs.contains(&"single_quotes"),
        "{repairs:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_ends_the_turn_terminated_and_no_later_turn_starts() {
    let fixture = fixture();
    let server = ScriptedServer::start(Script {
        steps: vec![Step::Reply(
            Turn::text(&["thinking", " slowly"]).with_fault(Fault::StallAfter {
                frames: 1,
                ms: 30_000,
            }),
        )],
    })
    .await
    .unwrap();
    let session = fixture.builder(openai(&server)).start().await.unwrap();
    let interrupter = session.interrupter();
    let stopper = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        interrupter.terminate();
    });
    let started = std::time::Instant::now();
    let end = session.send("think", &Quiet).await;
    stopper.await.unwrap();
    assert_eq!(end.reason, StopReason::Terminated);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    // The session is over: a later message ends at once, without asking the model.
    let asked = server.requests().len();
    let again = session.send("and now?", &Quiet).await;
    assert_eq!(again.reason, StopReason::Terminated);
    assert_eq!(server.requests().len(), asked);
    let logged = events(&session);
    let ends: Vec<&str> = logged
        .iter()
        .filter(|e| e["type"] == "turn/end")
        .map(|e| e["data"]["reason"].as_str().unwrap())
        .collect();
    assert_eq!(ends, ["terminated", "terminated"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_sessions_calls_are_logged_like_a_models_and_a_model_session_refuses_them() {
    let fixture = fixture();
    let client = Session::builder(fixture.env())
        .client("tool-call")
        .start()
        .await
        .unwrap();
    let record = client
        .call(
            RawCall {
                id: "k1".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"notes.txt"}"#.into(),
            },
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(record.result.as_ref().unwrap().content.contains("two"));
    assert_eq!(
        kinds(&events(&client)),
        [
            "session/start",
            "assistant/message",
            "tool/call",
            "tool/start",
            "tool/result"
        ]
    );
    // It has no model: a message says so instead of reaching one.
    let end = client.send("hello?", &Quiet).await;
    assert_eq!(end.reason, StopReason::ModelError);
    assert!(end.detail.unwrap().contains("not a model"));

    let server = ScriptedServer::start(Script { steps: vec![] })
        .await
        .unwrap();
    let modelled = fixture.builder(openai(&server)).start().await.unwrap();
    let refused = modelled
        .call(
            RawCall {
                id: "k1".into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            },
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("come from its model"),
        "{refused}"
    );
}
