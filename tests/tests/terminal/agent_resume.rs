//! Crashes, interrupts and resume (L2, L5, X2, M2 `resume`, `log`): logs cut where a
//! crash would cut them, then `paddock resume` through the real binary.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::agent_common::{Project, last_stop, text, types};
use paddock_tests::scripted::{Fault, Script, ScriptedServer, Step, Turn};
use serde_json::Value;

/// Runs the demo to completion and returns the session id and its events.
async fn demo_session(project: &Project) -> (String, Vec<Value>) {
    let output = project.paddock(&["run", "--demo"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let id = project.only_session();
    let events = project.events(&id);
    (id, events)
}

/// Rewrites the log as a crash would have left it: the first `keep` events, then a torn line.
fn crash_after(project: &Project, id: &str, events: &[Value], keep: usize) {
    let mut text: String = events[..keep].iter().map(|e| format!("{e}\n")).collect();
    text.push_str(r#"{"seq":99,"ts_ms":1,"type":"tool/res"#);
    std::fs::write(project.log_path(id), text).expect("rewrite log");
}

fn position(events: &[Value], kind: &str, nth: usize) -> usize {
    events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["type"] == kind)
        .nth(nth)
        .map(|(i, _)| i)
        .unwrap_or_else(|| panic!("no {kind} #{nth}"))
}

fn results_for<'a>(events: &'a [Value], id: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == "tool/result" && e["data"]["id"] == id)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_after_a_crash_follows_l2_and_finishes_the_turn() {
    let project = Project::new(&[("README.md", "# demo project\n")]);
    let (id, events) = demo_session(&project).await;
    // Crash just after the first call started: list_dir started (idempotent), glob queued.
    let first_start = position(&events, "tool/start", 0);
    assert_eq!(events[first_start]["data"]["id"], "demo_1_0");
    crash_after(&project, &id, &events, first_start + 1);

    let output = project.paddock(&["resume", &id]).await;
    let said = text(&output);
    assert_eq!(output.status.code(), Some(0), "{said}");
    assert!(said.contains("dropped a torn last line"), "{said}");

    let after = project.events(&id);
    let seqs: Vec<u64> = after.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (1..=after.len() as u64).collect::<Vec<_>>(),
        "no gaps, torn line gone"
    );
    // The idempotent call that started was run again, once.
    let rerun = results_for(&after, "demo_1_0");
    assert_eq!(rerun.len(), 1);
    assert_eq!(rerun[0]["data"]["is_error"], false);
    assert!(
        rerun[0]["data"]["content"]
            .as_str()
            .unwrap()
            .contains("README.md")
    );
    // The queued call that never started was answered, not run.
    let queued = results_for(&after, "demo_1_1");
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0]["data"]["code"], "NOT_EXECUTED");
    // The open turn got its end, and the loop then went on to the end of the demo.
    let ends: Vec<&str> = after
        .iter()
        .filter(|e| e["type"] == "turn/end")
        .map(|e| e["data"]["reason"].as_str().unwrap())
        .collect();
    assert_eq!(ends, ["interrupted", "completed"]);
    assert_eq!(
        types(&after)
            .iter()
            .filter(|t| *t == "assistant/message")
            .count(),
        4,
        "the demo's four replies, each committed once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_started_call_that_is_not_idempotent_is_never_run_twice() {
    let project = Project::new(&[("README.md", "# demo project\n")]);
    let (id, mut events) = demo_session(&project).await;
    let first_start = position(&events, "tool/start", 0);
    // Make the started call look like a write: not idempotent.
    let queued = position(&events, "tool/call", 0);
    events[queued]["data"]["idempotent"] = Value::Bool(false);
    crash_after(&project, &id, &events, first_start + 1);

    let output = project.paddock(&["resume", &id, "carry on"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let after = project.events(&id);
    let results = results_for(&after, "demo_1_0");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["data"]["code"], "OUTCOME_UNKNOWN");
    assert!(
        results[0]["data"]["content"]
            .as_str()
            .unwrap()
            .contains("not idempotent"),
        "{}",
        results[0]
    );
    // The new message went in after the recovered turn's end.
    let message = position(&after, "user/message", 1);
    assert_eq!(after[message]["data"]["text"], "carry on");
    assert!(message > position(&after, "turn/end", 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_refuses_a_plugin_that_changed_since_the_session_started() {
    let project = Project::new(&[("README.md", "# demo\n")]);
    let (id, mut events) = demo_session(&project).await;
    events[0]["data"]["plugins"][0]["sha256"] = Value::String("0".repeat(64));
    let text_log: String = events.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(project.log_path(&id), text_log).unwrap();
    let output = project.paddock(&["resume", &id, "go on"]).await;
    assert_eq!(output.status.code(), Some(2));
    let said = text(&output);
    assert!(said.contains("changed since the session started"), "{said}");
    assert_eq!(
        project.events(&id).len(),
        events.len(),
        "nothing was appended"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_interrupts_a_streaming_model_and_resume_continues() {
    let project = Project::new(&[]);
    let server = ScriptedServer::start(Script {
        steps: vec![
            Step::Reply(Turn::text(&["I am thinking", " very slowly"]).with_fault(
                Fault::StallAfter {
                    frames: 1,
                    ms: 30_000,
                },
            )),
            Step::Reply(Turn::text(&["Back, and done."])),
        ],
    })
    .await
    .unwrap();
    let url = server.openai_base_url();
    let mut child = project
        .command(&["run", "think", "--base-url", &url, "--model", "scripted"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn paddock");
    // Wait until the attempt is streaming, then interrupt.
    let started = Instant::now();
    let id = loop {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no attempt started"
        );
        if let Some(id) = project.sessions().first().cloned()
            && std::fs::read_to_string(project.log_path(&id))
                .is_ok_and(|t| t.contains("attempt/start"))
        {
            break id;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let interrupted_at = Instant::now();
    paddock_tests::send_signal(child.id(), libc::SIGINT);
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(
        interrupted_at.elapsed() < Duration::from_secs(5),
        "Ctrl-C took {:?}",
        interrupted_at.elapsed()
    );
    assert_eq!(status.code(), Some(130));
    let events = project.events(&id);
    assert_eq!(last_stop(&events), "interrupted");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "attempt/end" && e["data"]["status"] == "interrupted"),
        "the attempt is recorded as interrupted (L3)"
    );

    let output = project.paddock(&["resume", &id]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let events = project.events(&id);
    assert_eq!(last_stop(&events), "completed");
    let committed: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "assistant/message")
        .map(|e| e["data"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        committed,
        ["Back, and done."],
        "the interrupted partial text was never committed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_shows_and_lists_sessions() {
    let project = Project::new(&[("README.md", "# demo\n")]);
    let (id, events) = demo_session(&project).await;
    let listed = project.paddock(&["log", "--list"]).await;
    let listing = text(&listed);
    assert!(
        listing.contains(&id) && listing.contains("completed"),
        "{listing}"
    );
    let shown = text(&project.paddock(&["log", &id]).await);
    assert_eq!(shown.lines().count(), events.len(), "{shown}");
    assert!(
        shown.contains("turn/end") && shown.contains("completed"),
        "{shown}"
    );
    let raw = project.paddock(&["log", &id, "--json"]).await;
    assert_eq!(
        String::from_utf8_lossy(&raw.stdout),
        std::fs::read_to_string(project.log_path(&id)).unwrap()
    );
    // A log damaged before its last line is refused with the line number, not guessed at.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(project.log_path(&id))
        .unwrap();
    file.write_all(b"not an event\n{\"also\":\"bad\"}\n")
        .unwrap();
    let refused = project.paddock(&["resume", &id, "more"]).await;
    assert_eq!(refused.status.code(), Some(2));
    let said = text(&refused);
    assert!(
        said.contains(&format!(":{}: not a paddock event", events.len() + 1)),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_refuses_a_hook_that_changed_too() {
    let project = Project::new(&[("README.md", "# demo\n")]);
    let output = project
        .paddock(&["run", "--demo", "--preset", "review"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let id = project.only_session();
    let mut events = project.events(&id);
    let plugins = events[0]["data"]["plugins"].as_array_mut().unwrap();
    let hook = plugins
        .iter_mut()
        .find(|p| p["name"].as_str().unwrap().starts_with("hook:"))
        .expect("the review preset's hooks are recorded");
    hook["sha256"] = Value::String("f".repeat(64));
    let name = hook["name"].as_str().unwrap().to_string();
    let text_log: String = events.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(project.log_path(&id), text_log).unwrap();
    let output = project.paddock(&["resume", &id, "go on"]).await;
    assert_eq!(output.status.code(), Some(2));
    let said = text(&output);
    assert!(said.contains(&format!("plugin `{name}` changed")), "{said}");
}

/// The temporary files in `dir` (`.NAME.paddock-*.tmp`), by name.
fn temporary_files(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("project dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".paddock-") && name.ends_with(".tmp"))
        .collect()
}

/// paddock SIGKILLed while `write_file` writes its temporary file leaves that file, full of
/// the new content so far; `resume` settles the call and removes exactly that file (tied to
/// the call by its name), not another call's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_killed_mid_way_leaves_no_temporary_file_after_resume() {
    let content = "0123456789abcdef".repeat(1 << 19); // 8 MiB: a write that takes a while
    let args = serde_json::json!({"path": "big.txt", "content": content}).to_string();
    // Another call's temporary file (another tag): not this crash's, so it stays.
    let foreign = ".big.txt.paddock-0123456789abcdef.tmp";
    for attempt in 1..=5 {
        let project = Project::new(&[(foreign, "another call's")]);
        let preset = project.home.path().join("write.toml");
        std::fs::write(
            &preset,
            "[plugins.fs]\nsource = \"builtin:fs\"\nmemory_mb = 512\n\
             mounts = [{ host = \".\", guest = \"/workspace\", mode = \"rw\" }]\n\
             [approval]\nlow = \"allow\"\nmedium = \"allow\"\nhigh = \"allow\"\n",
        )
        .unwrap();
        let preset = preset.display().to_string();
        let server = ScriptedServer::start(Script {
            steps: vec![
                crate::agent_common::call_step("w1", "write_file", &args),
                Step::Reply(Turn::text(&["written"])),
            ],
        })
        .await
        .unwrap();
        let url = server.openai_base_url();
        let mut child = project
            .command(&[
                "run",
                "write it",
                "--preset",
                &preset,
                "--base-url",
                &url,
                "--model",
                "scripted",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn paddock");
        // Kill it the moment the write's temporary file exists.
        let dir = project.dir.path().to_path_buf();
        let started = Instant::now();
        let seen = loop {
            let temps: Vec<String> = temporary_files(&dir)
                .into_iter()
                .filter(|n| n != foreign)
                .collect();
            if !temps.is_empty() {
                child.kill().expect("SIGKILL");
                break temps;
            }
            if child.try_wait().expect("wait").is_some() {
                break Vec::new();
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "the write never started"
            );
            std::thread::sleep(Duration::from_millis(1));
        };
        child.wait().expect("reap");
        // The kill must have landed before the rename, or this attempt proves nothing.
        let left: Vec<String> = temporary_files(&dir)
            .into_iter()
            .filter(|n| n != foreign)
            .collect();
        if seen.is_empty() || left.is_empty() {
            eprintln!("attempt {attempt}: the write finished before the kill; again");
            continue;
        }
        let id = project.only_session();
        let output = project.paddock(&["resume", &id]).await;
        let said = text(&output);
        assert_eq!(output.status.code(), Some(0), "{said}");
        assert_eq!(
            temporary_files(&dir),
            [foreign],
            "the killed write's {left:?} is removed, only the foreign one stays"
        );
        assert!(
            said.contains("removed the temporary file its interrupted write left beside big.txt"),
            "{said}"
        );
        let tag_len = left[0].len() - ".big.txt.paddock-".len() - ".tmp".len();
        assert_eq!(tag_len, 16, "named with the call's tag: {left:?}");
        assert_eq!(
            std::fs::read_to_string(dir.join(foreign)).unwrap(),
            "another call's"
        );
        // The call was settled once: run again (it is idempotent) or reported unknown.
        let events = project.events(&id);
        assert_eq!(results_for(&events, "w1").len(), 1);
        return;
    }
    panic!("in 5 attempts the kill never landed during the write");
}
