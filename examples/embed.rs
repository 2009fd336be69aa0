//! paddock embedded in a program, through its public library API only: a session started
//! against a model server (here the scripted one the tests use), a message sent, the turn
//! steered while it works, its `TurnEnd` read, and the session reopened and continued with a
//! follow-up queued.
//!
//! Run it with `cargo run -p paddock --example embed`; the suite runs it too.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use paddock::{
    Env, ModelChoice, NoOneToAsk, Observer, Quiet, ReopenOptions, Session, StopReason, TurnEnd,
};
use paddock_scripted::{Script, ScriptCall, ScriptedServer, Step, Turn};

/// Steers the turn the moment its first tool call starts: the steering goes in before the
/// next model request.
struct SteerOnFirstCall<'a> {
    session: &'a Session,
}

impl Observer for SteerOnFirstCall<'_> {
    fn tool_started(&self, _id: &str) {
        self.session
            .steer("also say how many lines it has")
            .expect("the steering is logged");
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workspace = tempfile::tempdir()?;
    std::fs::write(workspace.path().join("notes.txt"), "one\ntwo\n")?;
    let data = tempfile::tempdir()?;
    let read = ScriptCall::new("c1", "read_file", r#"{"path": "notes.txt"}"#, &[]);
    let server = ScriptedServer::start(Script {
        steps: vec![
            Step::Reply(Turn::calls(vec![read])),
            Step::Reply(Turn::text(&["notes.txt says one, two: 2 lines."])),
            Step::Reply(Turn::text(&["You are welcome."])),
            Step::Reply(Turn::text(&["Goodbye."])),
        ],
    })
    .await?;
    let model = ModelChoice {
        base_url: Some(server.openai_base_url()),
        model: Some("scripted".into()),
        ..ModelChoice::default()
    };

    // A new session on the read-only `default` preset, its model the server above.
    let env = Env::at(data.path().to_path_buf(), workspace.path().to_path_buf())?;
    let session = Session::builder(env)
        .preset("default")
        .model(model)
        .start()
        .await?;
    let id = session.id().to_string();
    let end: TurnEnd = session
        .send(
            "what is in notes.txt?",
            &SteerOnFirstCall { session: &session },
        )
        .await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);
    let steered = server.requests()[1].body.to_string();
    assert!(
        steered.contains("also say how many lines it has"),
        "{steered}"
    );
    assert!(
        steered.contains("\\tone\\n"),
        "the tool's result reached the model: {steered}"
    );
    println!(
        "turn 1 of {id}: {:?}, {} model requests",
        end.reason, end.spent.model_requests
    );
    drop(session);

    // The same session reopened from its log, recovery settled, and continued.
    let env = Env::at(data.path().to_path_buf(), workspace.path().to_path_buf())?;
    let options = ReopenOptions {
        wait: false,
        max_output_tokens: None,
        moved: Default::default(),
        approver: Box::new(NoOneToAsk),
        max_turns: None,
        without_message: false,
    };
    let session = Session::reopen(env, &id, options)
        .await?
        .settle(&Quiet)
        .await?;
    // A follow-up queued before the turn runs as a turn of its own when that one ends.
    session.follow_up("that is all, goodbye")?;
    let end = session.send("thanks", &Quiet).await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);
    let requests = server.requests();
    let thanks = requests[2].body.to_string();
    assert!(
        thanks.contains("what is in notes.txt?") && thanks.contains("thanks"),
        "{thanks}"
    );
    assert!(
        !thanks.contains("goodbye"),
        "a follow-up waits for the turn to end: {thanks}"
    );
    let last = requests[3].body.to_string();
    assert!(
        last.contains("You are welcome.") && last.contains("that is all, goodbye"),
        "{last}"
    );
    println!(
        "turn 2 of {id}: {:?}; log at {}",
        end.reason,
        session.log_path().display()
    );
    Ok(())
}
