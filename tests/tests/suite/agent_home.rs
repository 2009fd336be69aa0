//! Where sessions go and which one goes on: `--home DIR` on any command (before or after it)
//! chooses the data directory, as a harness needs; `resume --last` takes the newest session
//! started in this directory.

use paddock_tests::scripted::{Script, ScriptedServer, Step, Turn};

use crate::agent_common::{Project, call_step, last_stop};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn home_chooses_the_data_directory_and_resume_last_goes_on_with_the_newest_session() {
    let project = Project::warm(&[("notes.txt", "hello\n")]);
    let server = ScriptedServer::start(Script {
        steps: vec![
            call_step("c1", "read_file", r#"{"path":"notes.txt"}"#),
            Step::Reply(Turn::text(&["It says hello."])),
        ],
    })
    .await
    .unwrap();
    let url = server.openai_base_url();
    // Outside the workspace: a data directory inside a mount is refused.
    let harness = tempfile::tempdir().unwrap();
    let home = harness.path().join("harness-home");
    let home_arg = home.to_str().unwrap().to_string();
    // `--home` before the command; the budget stops the run after the first request.
    let first = project
        .paddock(&[
            "--home",
            &home_arg,
            "run",
            "read notes.txt",
            "--base-url",
            &url,
            "--model",
            "scripted",
            "--max-turns",
            "1",
        ])
        .await;
    assert_eq!(first.status.code(), Some(3), "{first:?}");
    let sessions: Vec<_> = std::fs::read_dir(home.join("sessions"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(sessions.len(), 1, "the session went to --home");
    assert!(
        project.sessions().is_empty(),
        "nothing went to PADDOCK_HOME's directory"
    );
    // `--home` after the command; `--last` finds the session without its id.
    let resumed = project
        .paddock(&["resume", "--last", "--home", &home_arg])
        .await;
    assert_eq!(resumed.status.code(), Some(0), "{resumed:?}");
    let id = sessions[0].file_name().to_string_lossy().into_owned();
    let log =
        std::fs::read_to_string(home.join("sessions").join(&id).join("events.jsonl")).unwrap();
    let events: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(last_stop(&events), "completed");
    assert_eq!(server.remaining_steps(), 0);

    // Nothing to take: --last says where it looked.
    let elsewhere = tempfile::tempdir().unwrap();
    let none = project
        .command(&["resume", "--last", "--home", &home_arg])
        .current_dir(elsewhere.path())
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("no session was started in"),
        "{none:?}"
    );
}
