//! One writer per session, a log that survives a full disk, and what reopening a session
//! settles (L2, L5, L6, L8, against the scripted model server). Through the real binary:
//! a `resume` while the session's `run` is alive, and two resumes at once, are refused with the
//! holder's pid (or wait with `--wait`); an append that hits ENOSPC leaves only whole lines,
//! and the session resumes once there is room; `resume` of a completed turn says so. In process
//! through the library's `Session`: a filtered response's calls get results so the log can be
//! reopened; a turn that lost only its end is ended without asking the model; a log without a
//! task is refused unchanged.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::agent_common::{Project, last_stop, openai, reopen_options, text};
use paddock::agent::Quiet;
use paddock::log::StopReason;
use paddock::session::{ModelChoice, ReopenOptions, Session};
use paddock_tests::scripted::{Fault, Script, ScriptedServer, Step, Turn};

fn stalled(text: &str) -> Step {
    Step::Reply(
        Turn::text(&[text, " and more"]).with_fault(Fault::StallAfter {
            frames: 1,
            ms: 60_000,
        }),
    )
}

fn spawn(project: &Project, args: &[&str]) -> Child {
    project
        .command(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn paddock")
}

/// Waits until the log of the only session holds `n` attempt starts.
async fn attempts(project: &Project, n: usize) -> String {
    let started = Instant::now();
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no attempt {n}"
        );
        if let Some(id) = project.sessions().first().cloned()
            && std::fs::read_to_string(project.log_path(&id))
                .is_ok_and(|t| t.matches("attempt/start").count() >= n)
        {
            return id;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the server has received `n` requests (an attempt is logged before its request
/// arrives).
async fn requests(server: &ScriptedServer, n: usize) {
    let started = Instant::now();
    while server.requests().len() < n {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no request {n}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn kill(mut child: Child) {
    child.kill().expect("kill");
    tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join")
        .expect("wait");
}

fn seqs_are_whole(project: &Project, id: &str) {
    let events = project.events(id);
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_while_the_run_is_alive_is_refused_with_its_pid() {
    let project = Project::warm(&[]);
    let server = ScriptedServer::start(Script {
        steps: vec![stalled("thinking"), Step::Reply(Turn::text(&["Done."]))],
    })
    .await
    .unwrap();
    let url = server.openai_base_url();
    let run = spawn(
        &project,
        &["run", "think", "--base-url", &url, "--model", "m"],
    );
    let id = attempts(&project, 1).await;
    requests(&server, 1).await;
    let before = project.events(&id).len();

    let refused = project.paddock(&["resume", &id]).await;
    let said = text(&refused);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains(&format!("pid {}", run.id())), "{said}");
    // The refusal names the holder: its command and since when.
    assert!(
        said.contains("`paddock run think --base-url") && said.contains(", since 20"),
        "{said}"
    );
    assert!(said.contains("--wait"), "{said}");
    assert_eq!(
        project.events(&id).len(),
        before,
        "the refused resume wrote nothing"
    );
    assert_eq!(server.requests().len(), 1, "and asked the model nothing");

    // Once the run is gone (killed: the kernel drops its lock), resume recovers and finishes.
    kill(run).await;
    let resumed = project.paddock(&["resume", &id]).await;
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed));
    assert_eq!(last_stop(&project.events(&id)), "completed");
    seqs_are_whole(&project, &id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_resumes_at_once_one_is_refused_and_one_waits_with_wait() {
    let project = Project::warm(&[]);
    let server = ScriptedServer::start(Script {
        steps: vec![
            stalled("first"),
            stalled("second"),
            Step::Reply(Turn::text(&["Done."])),
        ],
    })
    .await
    .unwrap();
    let url = server.openai_base_url();
    let run = spawn(
        &project,
        &["run", "think", "--base-url", &url, "--model", "m"],
    );
    let id = attempts(&project, 1).await;
    // The attempt is logged before its request is sent: kill only once the server has it, so
    // the resume's request is the second one (and gets the second stalled step).
    requests(&server, 1).await;
    kill(run).await;

    let first = spawn(&project, &["resume", &id]);
    attempts(&project, 2).await;
    requests(&server, 2).await;
    let refused = project.paddock(&["resume", &id]).await;
    let said = text(&refused);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains(&format!("pid {}", first.id())), "{said}");

    let mut waiting = spawn(&project, &["resume", &id, "--wait"]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        waiting.try_wait().unwrap().is_none(),
        "--wait waits while the session is held"
    );
    assert_eq!(
        server.requests().len(),
        2,
        "the waiting resume asked nothing yet"
    );
    kill(first).await;
    let status = tokio::task::spawn_blocking(move || waiting.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let events = project.events(&id);
    assert_eq!(last_stop(&events), "completed");
    let ends: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "turn/end")
        .map(|e| e["data"]["reason"].as_str().unwrap())
        .collect();
    assert_eq!(ends, ["interrupted", "interrupted", "completed"]);
    seqs_are_whole(&project, &id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_leaves_whole_lines_and_the_session_resumes_when_there_is_room() {
    if !std::process::Command::new("unshare")
        .args(["-Urm", "true"])
        .status()
        .is_ok_and(|s| s.success())
    {
        eprintln!("skipped: cannot make a mount namespace here (unshare -Urm), so no small tmpfs");
        return;
    }
    let project = Project::warm(&[]);
    // 60 KB of text: the assistant message cannot fit in a 32 KiB file system.
    let long = "x".repeat(60_000);
    let server = ScriptedServer::start(Script {
        steps: vec![
            Step::Reply(Turn::text(&["A long answer: ", &long])),
            Step::Reply(Turn::text(&["Short this time."])),
        ],
    })
    .await
    .unwrap();
    let sessions = project.home.path().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let out = project.dir.path().join("out");
    let script = r#"
set -u
mount -t tmpfs -o size=32k,mode=0700 tmpfs "$SESSIONS" || exit 90
"$PADDOCK" run "write a lot" --base-url "$URL" --model m > "$OUT.run.txt" 2>&1
echo $? > "$OUT.run.code"
id=$(ls "$SESSIONS" | head -n 1)
cp "$SESSIONS/$id/events.jsonl" "$OUT.full.jsonl"
mount -o remount,size=16m "$SESSIONS" || exit 91
"$PADDOCK" resume "$id" "shorter, please" > "$OUT.resume.txt" 2>&1
echo $? > "$OUT.resume.code"
cp "$SESSIONS/$id/events.jsonl" "$OUT.after.jsonl"
"#;
    let mut shell = std::process::Command::new("unshare");
    shell
        .args(["-Urm", "sh", "-c", script])
        .current_dir(project.dir.path())
        .env("PADDOCK_HOME", project.home.path())
        .env("NO_COLOR", "1")
        .env_remove("PADDOCK_BASE_URL")
        .env_remove("PADDOCK_MODEL")
        .env_remove("PADDOCK_API_KEY")
        .env("SESSIONS", &sessions)
        .env("PADDOCK", crate::agent_common::paddock_bin())
        .env("URL", server.openai_base_url())
        .env("OUT", &out);
    let status = tokio::task::spawn_blocking(move || shell.status())
        .await
        .unwrap()
        .unwrap();
    if status.code() == Some(90) {
        eprintln!("skipped: mounting a tmpfs is not allowed here");
        return;
    }
    let read = |ext: &str| std::fs::read_to_string(format!("{}.{ext}", out.display())).unwrap();
    assert_eq!(read("run.code").trim(), "1", "{}", read("run.txt"));
    let full = read("full.jsonl");
    assert!(
        full.ends_with('\n'),
        "the failed append was cut back: {full}"
    );
    let events: Vec<serde_json::Value> = full
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line whole"))
        .collect();
    assert_eq!(last_stop(&events), "host_error");
    let end = events.last().unwrap();
    assert!(
        end["data"]["detail"]
            .as_str()
            .unwrap()
            .contains("No space left"),
        "{end}"
    );
    assert_eq!(read("resume.code").trim(), "0", "{}", read("resume.txt"));
    let after: Vec<serde_json::Value> = read("after.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line whole"))
        .collect();
    assert_eq!(last_stop(&after), "completed");
    let seqs: Vec<u64> = after.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=after.len() as u64).collect::<Vec<_>>());
    assert!(
        !read("after.jsonl").contains("A long answer"),
        "the message that did not fit was never committed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_in_a_filtered_response_get_results_so_the_log_stays_resumable() {
    let project = Project::warm(&[("a.txt", "a\n")]);
    let mut filtered = Turn::calls(vec![paddock_tests::scripted::ScriptCall::new(
        "c1",
        "read_file",
        r#"{"path":"a.txt"}"#,
        &[],
    )]);
    filtered.finish = Some(paddock_tests::scripted::ScriptFinish::ContentFilter);
    let server = ScriptedServer::start(Script {
        steps: vec![Step::Reply(filtered), Step::Reply(Turn::text(&["Done."]))],
    })
    .await
    .unwrap();
    let session = project.start(openai(&server)).await;
    let id = session.id().to_string();
    let end = session.send("go", &Quiet).await;
    assert_eq!(end.reason, StopReason::ModelError, "{:?}", end.detail);
    drop(session);
    let events = project.events(&id);
    assert_eq!(last_stop(&events), "model_error");
    let result = events
        .iter()
        .find(|e| e["type"] == "tool/result")
        .expect("the blocked call got a result");
    assert_eq!(result["data"]["code"], "NOT_EXECUTED");
    let session = project.resume(&id).await;
    let end = session.send("try again", &Quiet).await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);
    assert_eq!(last_stop(&project.events(&id)), "completed");
}

/// A session that completed one turn against a server with nothing more to say, its log then
/// cut before the `turn/end` (a kill just before it: the final answer is committed, the end
/// is not).
async fn lost_its_end(project: &Project) -> (ScriptedServer, String) {
    let server = ScriptedServer::start(Script {
        steps: vec![Step::Reply(Turn::text(&["Done."]))],
    })
    .await
    .unwrap();
    let session = project.start(openai(&server)).await;
    let id = session.id().to_string();
    let end = session.send("go", &Quiet).await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);
    drop(session);
    let events = project.events(&id);
    assert_eq!(events.last().unwrap()["type"], "turn/end");
    let cut: String = events[..events.len() - 1]
        .iter()
        .map(|e| format!("{e}\n"))
        .collect();
    std::fs::write(project.log_path(&id), cut).unwrap();
    (server, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_lost_only_its_end_is_completed_without_asking_again() {
    let project = Project::warm(&[]);
    let (server, id) = lost_its_end(&project).await;
    let reopened = Session::reopen(project.env(), &id, reopen_options())
        .await
        .unwrap();
    assert_eq!(reopened.last_turn(), Some(StopReason::Completed));
    assert_eq!(reopened.torn(), None);
    let session = reopened.settle(&Quiet).await.unwrap();
    assert_eq!(server.requests().len(), 1, "the model was not asked again");
    assert_eq!(last_stop(&project.events(&id)), "completed");
    seqs_are_whole(&project, &id);
    drop(session);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_of_a_completed_turn_says_so_and_asks_nothing() {
    let project = Project::warm(&[]);
    let (server, id) = lost_its_end(&project).await;
    let resumed = project.paddock(&["resume", &id]).await;
    let said = text(&resumed);
    assert_eq!(resumed.status.code(), Some(0), "{said}");
    assert!(said.contains("last turn completed"), "{said}");
    assert_eq!(server.requests().len(), 1, "the model was not asked again");
    assert_eq!(last_stop(&project.events(&id)), "completed");
    seqs_are_whole(&project, &id);
}

/// A session whose task never reached the log (a crash tore the user's message) cannot go on
/// without a message; refusing says so and changes nothing in the log, not even the torn line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_refused_for_want_of_a_task_changes_nothing_in_the_log() {
    let project = Project::warm(&[]);
    let demo = ModelChoice {
        demo: true,
        ..ModelChoice::default()
    };
    let session = project.start(demo).await;
    let id = session.id().to_string();
    drop(session);
    // The first append was the user's message: half of it was written, then paddock died.
    let message = serde_json::json!({
        "seq": 2, "ts_ms": 1, "type": "user/message",
        "data": {"text": "hello", "source": "user"}
    })
    .to_string();
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .open(project.log_path(&id))
        .unwrap();
    std::io::Write::write_all(&mut log, &message.as_bytes()[..message.len() / 2]).unwrap();
    drop(log);
    let before = std::fs::read(project.log_path(&id)).unwrap();
    assert!(!before.ends_with(b"\n"), "the log ends in a torn line");

    let options = ReopenOptions {
        without_message: true,
        ..reopen_options()
    };
    let Err(refused) = Session::reopen(project.env(), &id, options).await else {
        panic!("a session without a task reopened without a message");
    };
    assert_eq!(refused.code, paddock::SetupCode::Usage, "{refused}");
    assert!(
        refused.to_string().contains("no message from the user"),
        "{refused}"
    );
    assert_eq!(
        std::fs::read(project.log_path(&id)).unwrap(),
        before,
        "the refused resume changed the log"
    );
}
