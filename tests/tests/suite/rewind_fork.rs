//! Rewinding the conversation and forking, through the real binary: `paddock rewind --to N`
//! (both by default) puts the files and the conversation back as they were when turn N began,
//! the log keeps every line and the model is sent the history without what was taken out; the
//! ATIF export and `paddock log` say so; `paddock fork --at N` starts a session whose log
//! begins with the history before turn N (its parent named), whose files are put back, and
//! leaves the original's log as it was; `log --list` shows the fork under its parent.

use std::path::Path;

use crate::agent_common::{Project, call_step, text};
use paddock_tests::scripted::{RecordedRequest, Script, ScriptedServer, Step, Turn};

/// The user messages the model was sent in `request` (OpenAI's wire), in order.
fn user_texts(request: &RecordedRequest) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter(|m| m["role"] == "user")
                .filter_map(|m| m["content"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn write(id: &str, content: &str) -> Step {
    call_step(
        id,
        "write_file",
        &serde_json::json!({ "path": "a.txt", "content": content }).to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewinding_the_conversation_and_forking_go_on_from_the_turns_start() {
    let project = Project::warm(&[("a.txt", "one\n")]);
    let root = project.dir.path().to_path_buf();
    let server = ScriptedServer::start(Script {
        steps: vec![
            write("c1", "two\n"),
            Step::Reply(Turn::text(&["Turn one done."])),
            write("c2", "three\n"),
            Step::Reply(Turn::text(&["Turn two done."])),
            Step::Reply(Turn::text(&["Turn three done."])),
            write("c4", "four\n"),
            Step::Reply(Turn::text(&["Turn two, again, done."])),
            Step::Reply(Turn::text(&["The fork's turn two done."])),
        ],
    })
    .await
    .expect("scripted server");
    let url = server.openai_base_url();
    let model = ["--base-url", &url, "--model", "scripted"];
    let run = project
        .paddock(&[&["run", "first", "--preset", "coding"][..], &model[..]].concat())
        .await;
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    let id = project.only_session();
    for message in ["second", "third"] {
        let out = project.paddock(&["resume", &id, message]).await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "three\n"
    );

    let back = project.paddock(&["rewind", &id, "--to", "2"]).await;
    let said = text(&back);
    assert_eq!(back.status.code(), Some(0), "{said}");
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "two\n"
    );
    assert!(
        said.contains("the conversation goes on from the start of turn 2")
            && said.contains("its message was: second"),
        "{said}"
    );
    let log_before = std::fs::read(project.log_path(&id)).unwrap();
    let shown = String::from_utf8(log_before.clone()).unwrap();
    assert!(
        shown.contains("\"third\"") && shown.contains("conversation/rewind"),
        "the log keeps every line and records the rewind"
    );

    let again = project.paddock(&["resume", &id, "second, again"]).await;
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    let sent = server.requests();
    let last = sent.last().expect("a request");
    assert_eq!(
        user_texts(last),
        ["first", "second, again"],
        "the model is sent the history as it stood when turn 2 began"
    );
    let turns: Vec<u64> = project
        .events(&id)
        .iter()
        .filter(|e| e["type"] == "turn/start")
        .map(|e| e["data"]["turn"].as_u64().unwrap())
        .collect();
    assert_eq!(
        turns,
        [1, 2, 3, 2],
        "the turn run after the rewind is turn 2 again"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "four\n"
    );

    let log = text(&project.paddock(&["log", &id]).await);
    assert!(log.contains("conversation/rewind"), "{log}");
    let atif = project.paddock(&["log", &id, "--atif"]).await;
    let atif = text(&atif);
    assert!(
        atif.contains("went back to where it stood when turn 2 began"),
        "{atif}"
    );

    // A fork at turn 2: a new session, the original's log left as it was, the files back.
    let parent_log = std::fs::read(project.log_path(&id)).unwrap();
    let fork = project.paddock(&["fork", &id, "--at", "2"]).await;
    let said = text(&fork);
    assert_eq!(fork.status.code(), Some(0), "{said}");
    assert_eq!(std::fs::read(project.log_path(&id)).unwrap(), parent_log);
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "two\n"
    );
    let child = project
        .sessions()
        .into_iter()
        .find(|s| *s != id)
        .expect("the fork's session");
    assert!(said.contains(&format!("as {child}")), "{said}");
    let events = project.events(&child);
    assert_eq!(events[0]["data"]["forked_from"]["session"], id.as_str());
    assert_eq!(events[0]["data"]["forked_from"]["turn"], 2);
    let messages: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "user/message")
        .filter_map(|e| e["data"]["text"].as_str())
        .collect();
    assert_eq!(
        messages,
        ["first"],
        "the fork's log holds the conversation before turn 2, not what a rewind took out"
    );

    let listed = text(&project.paddock(&["log", "--list"]).await);
    let parent_row = listed
        .lines()
        .position(|l| l.contains(&id) && !l.contains('└'));
    let child_row = listed
        .lines()
        .position(|l| l.contains(&format!("└ {child} (fork at turn 2)")));
    assert!(
        matches!((parent_row, child_row), (Some(p), Some(c)) if c == p + 1),
        "{listed}"
    );

    let go_on = project
        .paddock(&["resume", &child, "the fork's second"])
        .await;
    assert_eq!(go_on.status.code(), Some(0), "{}", text(&go_on));
    let last = server.requests().pop().expect("a request");
    assert_eq!(user_texts(&last), ["first", "the fork's second"]);
    assert!(Path::new(&project.log_path(&id)).is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewinding_the_code_alone_leaves_the_conversation_and_the_conversation_alone_the_files() {
    let project = Project::warm(&[("a.txt", "one\n")]);
    let root = project.dir.path().to_path_buf();
    let server = ScriptedServer::start(Script {
        steps: vec![
            write("c1", "two\n"),
            Step::Reply(Turn::text(&["Turn one done."])),
            Step::Reply(Turn::text(&["Turn two done."])),
            Step::Reply(Turn::text(&["Turn two, again, done."])),
        ],
    })
    .await
    .expect("scripted server");
    let url = server.openai_base_url();
    let id = run_first(&project, "coding", &url).await;
    let out = project.paddock(&["resume", &id, "second"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    let code = project
        .paddock(&["rewind", &id, "--to", "1", "--code"])
        .await;
    assert_eq!(code.status.code(), Some(0), "{}", text(&code));
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\n"
    );
    assert!(
        !text(&code).contains("conversation goes on"),
        "{}",
        text(&code)
    );

    let talk = project
        .paddock(&["rewind", &id, "--to", "2", "--conversation"])
        .await;
    assert_eq!(talk.status.code(), Some(0), "{}", text(&talk));
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\n",
        "a conversation rewind leaves the files"
    );
    let both = project
        .paddock(&["rewind", &id, "--to", "1", "--code", "--conversation"])
        .await;
    assert_eq!(
        both.status.code(),
        Some(2),
        "the flags exclude each other: {}",
        text(&both)
    );

    let ahead = project.paddock(&["rewind", &id, "--to", "2"]).await;
    assert_eq!(ahead.status.code(), Some(1), "{}", text(&ahead));
    assert!(
        text(&ahead).contains("turn 2 is not in the conversation: it has 1 turn(s)"),
        "{}",
        text(&ahead)
    );
    let out = project.paddock(&["resume", &id, "second, again"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let last = server.requests().pop().expect("a request");
    assert_eq!(user_texts(&last), ["first", "second, again"]);
}

/// Waits until the log of the project's first session holds `what` `count` times.
async fn log_shows(project: &Project, what: &str, count: usize) {
    let started = std::time::Instant::now();
    loop {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the log never showed {count} x {what}"
        );
        if let Some(id) = project.sessions().first()
            && std::fs::read_to_string(project.log_path(id))
                .is_ok_and(|t| t.matches(what).count() >= count)
        {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_lists_turns_with_what_each_changed_rewinds_and_forks() {
    use std::io::Write;
    let project = Project::warm(&[("a.txt", "one\n")]);
    let root = project.dir.path().to_path_buf();
    let server = ScriptedServer::start(Script {
        steps: vec![
            write("c1", "two\n"),
            Step::Reply(Turn::text(&["Turn one done."])),
            write("c2", "three\n"),
            Step::Reply(Turn::text(&["Turn two done."])),
        ],
    })
    .await
    .expect("scripted server");
    let url = server.openai_base_url();
    let mut child = spawn_chat(&project, "coding", &url);
    let mut type_line = |line: &str| {
        let stdin = child.stdin.as_mut().expect("piped stdin");
        writeln!(stdin, "{line}").expect("type a line");
        stdin.flush().expect("flush");
    };
    type_line("first");
    log_shows(&project, "\"turn/end\"", 1).await;
    type_line("second");
    log_shows(&project, "\"turn/end\"", 2).await;
    type_line("/rewind");
    type_line("/rewind 2");
    log_shows(&project, "\"conversation/rewind\"", 1).await;
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "two\n"
    );
    type_line("/fork 1");
    let started = std::time::Instant::now();
    while project.sessions().len() < 2
        || std::fs::read_to_string(root.join("a.txt")).unwrap() != "one\n"
    {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "no fork"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    drop(child.stdin.take());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let said = text(&out);
    assert!(
        said.lines()
            .any(|l| l.contains("1  1 path(s)") && l.contains("first"))
            && said
                .lines()
                .any(|l| l.contains("2  1 path(s)") && l.contains("second")),
        "{said}"
    );
    assert!(
        said.contains("the conversation goes on from the start of turn 2; its message was: second"),
        "{said}"
    );
    assert!(said.contains("forked at the start of turn 1 as"), "{said}");
}

/// The tool messages the model was sent in `request` (OpenAI's wire): call id and content.
fn tool_results(request: &RecordedRequest) -> Vec<(String, String)> {
    request.body["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| {
                    (
                        m["tool_call_id"].as_str().unwrap_or("").to_string(),
                        m["content"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A preset at the call grain (a checkpoint before every call that is not idempotent).
fn call_grain_preset(project: &Project) -> String {
    let preset = project.home.path().join("per-call.toml");
    std::fs::write(
        &preset,
        "extends = \"coding\"\n[checkpoints]\ngrain = \"call\"\n",
    )
    .unwrap();
    preset.display().to_string()
}

/// `paddock run first --preset PRESET` against the scripted model at `url`, which must
/// complete; the session's id.
async fn run_first(project: &Project, preset: &str, url: &str) -> String {
    let args = [
        "run",
        "first",
        "--preset",
        preset,
        "--base-url",
        url,
        "--model",
        "scripted",
    ];
    let run = project.paddock(&args).await;
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    project.only_session()
}

/// One turn of two calls that change files: `edit_file` (c1), then the shell (c2).
fn two_calls() -> Vec<Step> {
    vec![
        call_step(
            "c1",
            "edit_file",
            r#"{"path":"a.txt","old_string":"one","new_string":"two"}"#,
        ),
        call_step(
            "c2",
            "shell",
            r#"{"command":"printf 'three\\n' > a.txt && mkdir -p new && printf x > new/f"}"#,
        ),
        Step::Reply(Turn::text(&["Done."])),
    ]
}

/// `paddock fork SESSION --call ID`: the fork's files are as they were just before the call,
/// its log holds the history up to it with the call answered as not run (no call is left
/// without its result) and the turn ended, the original's log is left as it was, the model
/// of the fork is sent that history, and `log --list` names the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_at_a_call_restores_the_files_before_it_and_answers_it_as_not_run() {
    let project = Project::warm(&[("a.txt", "one\n")]);
    let root = project.dir.path().to_path_buf();
    let preset = call_grain_preset(&project);
    let mut steps = two_calls();
    steps.push(Step::Reply(Turn::text(&["The fork goes on."])));
    let server = ScriptedServer::start(Script { steps })
        .await
        .expect("scripted server");
    let url = server.openai_base_url();
    let id = run_first(&project, &preset, &url).await;
    let read = || std::fs::read_to_string(root.join("a.txt")).unwrap();
    assert_eq!(read(), "three\n");

    let parent_log = std::fs::read(project.log_path(&id)).unwrap();
    let none = project.paddock(&["fork", &id, "--call", "c9"]).await;
    assert_eq!(none.status.code(), Some(2), "{}", text(&none));
    assert!(text(&none).contains("has no checkpoint"), "{}", text(&none));
    let both = project
        .paddock(&["fork", &id, "--call", "c2", "--at", "1"])
        .await;
    assert_eq!(both.status.code(), Some(2), "{}", text(&both));
    assert_eq!(
        project.sessions().len(),
        1,
        "a refused fork leaves no session"
    );

    let fork = project.paddock(&["fork", &id, "--call", "c2"]).await;
    let said = text(&fork);
    assert_eq!(fork.status.code(), Some(0), "{said}");
    assert!(said.contains("just before call c2"), "{said}");
    assert_eq!(std::fs::read(project.log_path(&id)).unwrap(), parent_log);
    assert_eq!(read(), "two\n", "{said}");
    assert!(!root.join("new").exists(), "{said}");
    let child = project
        .sessions()
        .into_iter()
        .find(|s| *s != id)
        .expect("the fork's session");
    let events = project.events(&child);
    assert_eq!(events[0]["data"]["forked_from"]["call"], "c2");
    assert_eq!(events[0]["data"]["forked_from"]["turn"], 1);
    let c2: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["data"]["id"] == "c2" || e["data"]["call"] == "c2")
        .collect();
    let kinds: Vec<&str> = c2.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        kinds,
        ["tool/call", "tool/result"],
        "the call is in the fork, never started, and answered: {c2:?}"
    );
    assert_eq!(c2[1]["data"]["code"], "FORKED");
    let end = events
        .iter()
        .rfind(|e| e["type"] == "turn/end")
        .expect("the forked turn ended");
    assert_eq!(end["data"]["reason"], "interrupted");

    let listed = text(&project.paddock(&["log", "--list"]).await);
    assert!(
        listed.contains(&format!("└ {child} (fork at call c2 of turn 1)")),
        "{listed}"
    );

    let go_on = project.paddock(&["resume", &child, "go on"]).await;
    assert_eq!(go_on.status.code(), Some(0), "{}", text(&go_on));
    let last = server.requests().pop().expect("a request");
    let results = tool_results(&last);
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].0, "c1");
    assert!(
        results[1].0 == "c2" && results[1].1.contains("was not run"),
        "{results:?}"
    );
    assert_eq!(user_texts(&last), ["first", "go on"]);
    assert_eq!(read(), "two\n", "resuming the fork leaves its files");
}

/// Chat at the call grain: `/rewind` lists each turn's calls with what each changed,
/// `/rewind call ID` puts the files back as they were just before it, and `/fork call ID`
/// forks from there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_lists_calls_and_rewinds_and_forks_at_one() {
    use std::io::{Read, Write};
    use std::sync::{Arc, Mutex};
    let project = Project::warm(&[("a.txt", "one\n")]);
    let root = project.dir.path().to_path_buf();
    let preset = call_grain_preset(&project);
    let server = ScriptedServer::start(Script { steps: two_calls() })
        .await
        .expect("scripted server");
    let url = server.openai_base_url();
    let mut child = spawn_chat(&project, &preset, &url);
    // What the chat printed so far, on both streams.
    let shown = Arc::new(Mutex::new(String::new()));
    let readers: Vec<_> = [
        Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ]
    .into_iter()
    .map(|mut stream| {
        let shown = shown.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = stream.read(&mut buf) {
                shown
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    })
    .collect();
    let count = |what: &str| shown.lock().unwrap().matches(what).count();
    let until = |what: &str, n: usize| {
        let started = std::time::Instant::now();
        while count(what) < n {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(60),
                "the chat never showed {n} x {what}: {}",
                shown.lock().unwrap()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    let mut type_line = |line: &str| {
        let stdin = child.stdin.as_mut().expect("piped stdin");
        writeln!(stdin, "{line}").expect("type a line");
        stdin.flush().expect("flush");
    };
    let read = || std::fs::read_to_string(root.join("a.txt")).unwrap();
    type_line("first");
    until("stopped:", 1);
    let id = project.only_session();
    assert_eq!(read(), "three\n");
    // A command typed while the chat is still finishing the turn is refused ("between
    // turns"): type the list again until it shows; from then on the chat is between turns.
    let listed = "turns of this conversation";
    for tries in 1.. {
        let busy = count("between turns");
        type_line("/rewind");
        let started = std::time::Instant::now();
        while count(listed) == 0 && count("between turns") == busy {
            assert!(started.elapsed() < std::time::Duration::from_secs(60));
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if count(listed) > 0 {
            break;
        }
        assert!(tries < 50, "the chat never went between turns");
    }
    type_line("/rewind call c2");
    until("as just before call c2", 1);
    assert_eq!(read(), "two\n");
    assert!(!root.join("new").exists());
    type_line("/fork call c1");
    until("forked just before call c1 as", 1);
    assert_eq!(read(), "one\n");
    drop(child.stdin.take());
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
    for reader in readers {
        reader.join().unwrap();
    }
    let said = shown.lock().unwrap().clone();
    let lines: Vec<&str> = said.lines().collect();
    let turn = lines
        .iter()
        .position(|l| l.contains("  1  ") && l.contains("path(s)") && l.contains("first"))
        .unwrap_or_else(|| panic!("turn 1 is listed: {said}"));
    assert!(
        lines[turn + 1].contains("1 path(s)") && lines[turn + 1].contains("call c1 (edit_file)"),
        "c1 changed a.txt alone: {said}"
    );
    assert!(
        lines[turn + 2].contains("path(s)")
            && !lines[turn + 2].contains(" 1 path(s)")
            && lines[turn + 2].contains("call c2 (shell)"),
        "c2 changed a.txt and made new/f: {said}"
    );
    assert!(said.contains("/rewind call ID"), "{said}");
    let fork = project
        .sessions()
        .into_iter()
        .find(|s| *s != id)
        .expect("the fork");
    assert_eq!(
        project.events(&fork)[0]["data"]["forked_from"]["call"],
        "c1"
    );
}

/// A provider that gives every call the same id (`call_0`): a rewind or fork at that id
/// cannot tell which call is meant, so it refuses and says why, leaving the files and the
/// sessions as they are, rather than guess.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_id_the_provider_repeated_is_refused_as_a_point_to_go_back_to() {
    let project = Project::warm(&[("a.txt", "one\n")]);
    let root = project.dir.path().to_path_buf();
    let preset = call_grain_preset(&project);
    let server = ScriptedServer::start(Script {
        steps: vec![
            call_step(
                "call_0",
                "edit_file",
                r#"{"path":"a.txt","old_string":"one","new_string":"two"}"#,
            ),
            call_step(
                "call_0",
                "edit_file",
                r#"{"path":"a.txt","old_string":"two","new_string":"three"}"#,
            ),
            Step::Reply(Turn::text(&["Done."])),
        ],
    })
    .await
    .expect("scripted server");
    let url = server.openai_base_url();
    let id = run_first(&project, &preset, &url).await;
    let read = || std::fs::read_to_string(root.join("a.txt")).unwrap();
    assert_eq!(read(), "three\n");
    let back = project.paddock(&["rewind", &id, "--call", "call_0"]).await;
    assert_eq!(back.status.code(), Some(1), "{}", text(&back));
    assert!(text(&back).contains("names 2 calls"), "{}", text(&back));
    let fork = project.paddock(&["fork", &id, "--call", "call_0"]).await;
    assert_eq!(fork.status.code(), Some(2), "{}", text(&fork));
    assert!(text(&fork).contains("names 2 calls"), "{}", text(&fork));
    assert_eq!(read(), "three\n");
    assert_eq!(project.sessions().len(), 1);
}

/// `paddock chat` under `preset` against the scripted model at `url`, every stream piped.
fn spawn_chat(project: &Project, preset: &str, url: &str) -> std::process::Child {
    project
        .command(&[
            "chat",
            "--preset",
            preset,
            "--base-url",
            url,
            "--model",
            "scripted",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn paddock chat")
}
