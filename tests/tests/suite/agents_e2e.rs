//! Subagents end to end with the scripted model, through the real binary: a parent delegates
//! two sub-tasks in one message; they run at the same time (each child's model answers only
//! once the other child has asked, so run one after the other they could not finish), one
//! child uses a skill whose script runs in the jail, both answers come back as the calls'
//! results, the children's logs name the parent's session and call, `log --list` shows them
//! under it and `run --json` carries their events tagged; a Ctrl-C of the parent stops both
//! children's running scripts.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::agent_common::{Project, text};
use paddock_tests::scripted::{ScriptCall, ScriptedServer, Step, Turn};
use serde_json::{Value, json};

const PARENT_PRESET: &str = "[limits]\nmax_subagents = 2\nmax_depth = 1\n\n\
[plugins.fs]\nsource = \"builtin:fs\"\nmounts = [{ host = \".\", guest = \"/workspace\", mode = \"ro\" }]\n\n\
[plugins.shell]\nsource = \"builtin:shell\"\nmounts = [{ host = \".\", guest = \"/workspace\", mode = \"ro\" }]\n\
grants.exec = { allow = [\"sh scripts/*\", \"ls\"], env = [\"PATH\"] }\n\n\
[approval]\nhigh = \"allow\"\n";

/// A user skill in `home` whose script prints where it runs, and one that sleeps.
fn skills(home: &std::path::Path) {
    for (name, script) in [
        ("hello", "echo \"hello from the jail in $(pwd)\"\n"),
        ("slow", "sleep 120\n"),
    ] {
        let dir = home.join(".agents/skills").join(name).join("scripts");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("run.sh"), script).unwrap();
        std::fs::write(
            home.join(".agents/skills").join(name).join("SKILL.md"),
            format!(
                "---\nname: {name}\ndescription: the {name} skill\nneeds:\n  exec:\n    - sh scripts/*\n---\nRun `sh scripts/run.sh` with skill_run.\n"
            ),
        )
        .unwrap();
    }
}

/// The first user message of a request, and the tool results it carries.
fn read(body: &Value) -> (String, Vec<String>) {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let first = messages
        .iter()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    let results = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect();
    (first, results)
}

fn reply(text: &str) -> Step {
    Step::Reply(Turn::text(&[text]))
}

fn calls(calls: Vec<(&str, &str, Value)>) -> Step {
    Step::Reply(Turn::calls(
        calls
            .into_iter()
            .map(|(id, name, args)| ScriptCall::new(id, name, &args.to_string(), &[]))
            .collect(),
    ))
}

/// Asked again shortly: the other child has not asked yet.
fn not_yet() -> Step {
    Step::Status {
        status: 503,
        body: "wait for the other child".into(),
        retry_after_secs: None,
        retry_after_ms: Some(100),
    }
}

fn task(id: &str, prompt: &str) -> (String, &'static str, Value) {
    (
        id.to_string(),
        "task",
        json!({"description": id, "prompt": prompt}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_children_run_in_parallel_one_runs_a_skill_in_the_jail_and_both_answer() {
    let project = Project::warm(&[("notes.txt", "notes")]);
    std::fs::write(project.dir.path().join("parent.toml"), PARENT_PRESET).unwrap();
    let home = tempfile::tempdir().unwrap();
    skills(home.path());
    let seen = Arc::new(Mutex::new((false, false)));
    let server = ScriptedServer::start_responder(Arc::new(move |body, _| {
        let (first, results) = read(body);
        let mut seen = seen.lock().unwrap();
        if first.contains("CHILD-A") {
            seen.0 = true;
            match results.len() {
                0 => calls(vec![(
                    "a1",
                    "skill_run",
                    json!({"name": "hello", "argv": ["sh", "scripts/run.sh"]}),
                )]),
                _ if !seen.1 => not_yet(),
                _ => reply(&format!("A ran the skill: {}", results[0])),
            }
        } else if first.contains("CHILD-B") {
            seen.1 = true;
            if seen.0 {
                reply("B answers 42")
            } else {
                not_yet()
            }
        } else if results.is_empty() {
            let (a, b) = (
                task("t1", "CHILD-A: run the hello skill"),
                task("t2", "CHILD-B: answer"),
            );
            calls(vec![(a.0.as_str(), a.1, a.2), (b.0.as_str(), b.1, b.2)])
        } else {
            reply(&format!("parent got: {}", results.join(" | ")))
        }
    }))
    .await
    .unwrap();
    let url = server.openai_base_url();
    let out = project
        .command(&[
            "run",
            "PARENT: delegate",
            "--preset",
            "./parent.toml",
            "--base-url",
            &url,
            "--json",
        ])
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    // The parent's two calls came back with the children's answers.
    let results: Vec<&Value> = lines
        .iter()
        .filter(|e| e["type"] == "tool/result" && e.get("child").is_none())
        .collect();
    assert_eq!(results.len(), 2, "{}", text(&out));
    let both = results.iter().map(|r| r.to_string()).collect::<String>();
    assert!(both.contains("hello from the jail in"), "{both}");
    assert!(both.contains("B answers 42"), "{both}");
    // The children's logs name the parent and its calls; their events came tagged.
    let parent = lines
        .iter()
        .find(|e| e["type"] == "session/start" && e.get("child").is_none())
        .unwrap()["data"]["session"]
        .as_str()
        .unwrap()
        .to_string();
    let mut calls_linked: Vec<String> = Vec::new();
    for id in project.sessions().into_iter().filter(|id| *id != parent) {
        let start = &project.events(&id)[0];
        assert_eq!(start["data"]["parent"]["session"], parent.as_str());
        calls_linked.push(
            start["data"]["parent"]["call"]
                .as_str()
                .unwrap()
                .to_string(),
        );
        assert!(
            lines
                .iter()
                .any(|e| e["child"] == id.as_str() && e["type"] == "turn/end"),
            "no tagged events of {id}"
        );
    }
    calls_linked.sort();
    assert_eq!(calls_linked, ["t1", "t2"]);
    let list = project.command(&["log", "--list"]).output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.contains("└ ") && list.contains("(task t1)") && list.contains("(task t2)"),
        "{list}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ctrl_c_of_the_parent_stops_both_children() {
    let project = Project::warm(&[("notes.txt", "notes")]);
    std::fs::write(project.dir.path().join("parent.toml"), PARENT_PRESET).unwrap();
    let home = tempfile::tempdir().unwrap();
    skills(home.path());
    let server = ScriptedServer::start_responder(Arc::new(move |body, _| {
        let (first, results) = read(body);
        if first.contains("CHILD") {
            calls(vec![(
                "s1",
                "skill_run",
                json!({"name": "slow", "argv": ["sh", "scripts/run.sh"]}),
            )])
        } else if results.is_empty() {
            let (a, b) = (task("t1", "CHILD-A: wait"), task("t2", "CHILD-B: wait"));
            calls(vec![(a.0.as_str(), a.1, a.2), (b.0.as_str(), b.1, b.2)])
        } else {
            reply("parent done")
        }
    }))
    .await
    .unwrap();
    let url = server.openai_base_url();
    let mut run = project
        .command(&[
            "run",
            "PARENT: delegate",
            "--preset",
            "./parent.toml",
            "--base-url",
            &url,
        ])
        .env("HOME", home.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until both children's scripts have started.
    let started = Instant::now();
    let running = |project: &Project| {
        project
            .sessions()
            .iter()
            .filter(|id| {
                std::fs::read_to_string(project.log_path(id))
                    .is_ok_and(|log| log.contains("\"parent\"") && log.contains("tool/start"))
            })
            .count()
    };
    while running(&project) < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "children never ran their scripts: {:?}",
            project
                .sessions()
                .iter()
                .map(|id| std::fs::read_to_string(project.log_path(id)).unwrap_or_default())
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(run.id() as i32, libc::SIGINT) }, 0);
    let status = tokio::task::spawn_blocking(move || run.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(130));
    let children: Vec<String> = project
        .sessions()
        .into_iter()
        .filter(|id| project.events(id)[0]["data"].get("parent").is_some())
        .collect();
    assert_eq!(children.len(), 2);
    for id in children {
        let events = project.events(&id);
        let end = events
            .iter()
            .rev()
            .find(|e| e["type"] == "turn/end")
            .expect("the child's turn ended");
        assert_eq!(end["data"]["reason"], "terminated", "{id}");
        let result = events
            .iter()
            .find(|e| e["type"] == "tool/result")
            .expect("the script's call ended");
        assert_eq!(result["data"]["is_error"], true, "{result}");
        assert_eq!(result["data"]["code"], "CANCELLED", "{result}");
    }
}

/// The tool names a recorded request offered the model.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

/// `resume` offers the host's tools (`task`) as the start did, and a subagent is not resumed
/// on its own: its recorded preset is its parent's, and reopening it alone would give back the
/// tools and budgets its parent's call narrowed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_offers_task_again_and_a_subagent_is_not_resumed_on_its_own() {
    let project = Project::warm(&[("notes.txt", "notes")]);
    std::fs::write(project.dir.path().join("parent.toml"), PARENT_PRESET).unwrap();
    let server = ScriptedServer::start_responder(Arc::new(|body, _| {
        let (first, results) = read(body);
        if first.contains("CHILD") {
            reply("child done")
        } else if first.contains("PARENT") && results.is_empty() {
            let (id, name, args) = task("t1", "CHILD: answer");
            calls(vec![(id.as_str(), name, args)])
        } else {
            reply("parent done")
        }
    }))
    .await
    .unwrap();
    let url = server.openai_base_url();
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--base-url", url.as_str()]);
        project.command(&all).output().unwrap()
    };
    let out = run(&["run", "PARENT: delegate", "--preset", "./parent.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let sessions = project.sessions();
    let (children, parents): (Vec<String>, Vec<String>) = sessions
        .into_iter()
        .partition(|id| project.events(id)[0]["data"].get("parent").is_some());
    let ([child], [parent]) = (children.as_slice(), parents.as_slice()) else {
        panic!("one parent and one child: {children:?} {parents:?}");
    };
    let before = server.requests().len();
    let out = run(&["resume", parent, "and now?"]);
    assert!(out.status.success(), "{}", text(&out));
    let requests = server.requests();
    assert!(
        requests.len() > before,
        "the resumed session asked the model"
    );
    for request in &requests[before..] {
        let tools = offered(&request.body);
        assert!(
            tools.iter().any(|t| t == "task"),
            "resume offers task: {tools:?}"
        );
    }
    let asked = server.requests().len();
    let out = run(&["resume", child, "go on alone"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(2), "{shown}");
    assert!(
        shown.contains("is a subagent of session") && shown.contains(parent.as_str()),
        "{shown}"
    );
    assert_eq!(
        server.requests().len(),
        asked,
        "the refused child asked nothing"
    );
}
