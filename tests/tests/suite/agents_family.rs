//! What a parent and its subagents share, through the real binary with the scripted model:
//! the parent's budgets (a child's spending is charged to its parent when it returns, and
//! children started together are given shares of what is left, never more than all of it),
//! the per-file locks (two children writing one file at the same time take turns), and the
//! trajectory (the parent's ATIF embeds its children's, which both validators accept).

use std::sync::{Arc, Mutex};

use crate::agent_common::{Project, text};
use paddock_tests::scripted::{Responder, ScriptCall, ScriptUsage, ScriptedServer, Step, Turn};
use serde_json::{Value, json};

/// The first user message of a request, and how many tool results it carries.
fn read(body: &Value) -> (String, usize) {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let first = messages
        .iter()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    let results = messages.iter().filter(|m| m["role"] == "tool").count();
    (first, results)
}

/// A reply with `calls` (none: text) that says it used `tokens` input tokens.
fn costing(tokens: u64, calls: Vec<(&str, &str, Value)>) -> Step {
    let mut turn = if calls.is_empty() {
        Turn::text(&["done"])
    } else {
        Turn::calls(
            calls
                .into_iter()
                .map(|(id, name, args)| ScriptCall::new(id, name, &args.to_string(), &[]))
                .collect(),
        )
    };
    turn.usage = Some(ScriptUsage {
        input: tokens,
        output: 0,
    });
    Step::Reply(turn)
}

fn two_tasks() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "t1",
            "task",
            json!({"description": "a", "prompt": "CHILD-A: work"}),
        ),
        (
            "t2",
            "task",
            json!({"description": "b", "prompt": "CHILD-B: work"}),
        ),
    ]
}

/// The sessions of `project` split into (children, parents).
fn family(project: &Project) -> (Vec<String>, Vec<String>) {
    project
        .sessions()
        .into_iter()
        .partition(|id| project.events(id)[0]["data"].get("parent").is_some())
}

const BUDGET_PRESET: &str = "[limits]\nmax_subagents = 2\nmax_depth = 1\nmax_tokens = 10000\n\n\
[plugins.fs]\nsource = \"builtin:fs\"\nmounts = [{ host = \".\", guest = \"/workspace\", mode = \"ro\" }]\n";

/// What `delegate`'s run did: its output, how many requests the parent made, and the reply
/// limit (`max_tokens`) of each child request, in the order they came.
struct Delegated {
    out: std::process::Output,
    parent_requests: usize,
    child_limits: Vec<u64>,
}

/// `paddock run` of a parent under `BUDGET_PRESET` in `project`, against a model that has the
/// parent spend 1000 tokens starting the first `tasks` of `two_tasks()` in one message, then 10
/// to finish, and each child spend 2000 per request, reading a file each time.
async fn delegate(project: &Project, tasks: usize) -> Delegated {
    let parent_requests = Arc::new(Mutex::new(0));
    let child_limits = Arc::new(Mutex::new(Vec::new()));
    let (counted, limits) = (parent_requests.clone(), child_limits.clone());
    let responder: Responder = Arc::new(move |body, _| {
        let (first, results) = read(body);
        if first.contains("CHILD") {
            limits
                .lock()
                .unwrap()
                .push(body["max_tokens"].as_u64().unwrap_or(u64::MAX));
            let id = format!("r{results}");
            costing(
                2000,
                vec![(id.as_str(), "read_file", json!({"path": "notes.txt"}))],
            )
        } else {
            *counted.lock().unwrap() += 1;
            if results == 0 {
                costing(1000, two_tasks().into_iter().take(tasks).collect())
            } else {
                costing(10, Vec::new())
            }
        }
    });
    let out = run_parent(project, BUDGET_PRESET, responder).await;
    let parent_requests = *parent_requests.lock().unwrap();
    let child_limits = child_limits.lock().unwrap().clone();
    Delegated {
        out,
        parent_requests,
        child_limits,
    }
}

/// `paddock run "PARENT: delegate"` in `project` under `preset` (written as `parent.toml`),
/// against a scripted model answering with `responder`.
async fn run_parent(project: &Project, preset: &str, responder: Responder) -> std::process::Output {
    std::fs::write(project.dir.path().join("parent.toml"), preset).unwrap();
    let server = ScriptedServer::start_responder(responder).await.unwrap();
    let url = server.openai_base_url();
    let args = [
        "run",
        "PARENT: delegate",
        "--preset",
        "./parent.toml",
        "--base-url",
        &url,
    ];
    project.paddock(&args).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_spending_is_charged_to_its_parent_and_parallel_children_share_what_is_left() {
    let project = Project::warm(&[("notes.txt", "notes")]);
    let run = delegate(&project, 2).await;
    let shown = text(&run.out);
    let (children, parents) = family(&project);
    let [parent] = parents.as_slice() else {
        panic!("one parent: {parents:?} {shown}");
    };
    assert_eq!(children.len(), 2, "{shown}");
    for child in &children {
        let events = project.events(child);
        let end = events
            .iter()
            .rev()
            .find(|e| e["type"] == "turn/end")
            .unwrap();
        assert_eq!(end["data"]["reason"], "token_budget", "{child}: {end}");
        let detail = end["data"]["detail"].as_str().unwrap_or_default();
        // Each is given half of the 9000 the parent has left; after two requests (4000) the
        // next would send about 2000 more than the 500 left, so it is not sent.
        assert!(
            detail.contains("4000 tokens used; the next request would send about")
                && detail.contains("the budget is 4500"),
            "each child is given half of what the parent has left and stops before a request \
             would pass it: {detail}"
        );
    }
    // Each child's second request (2000 spent, about 2000 sent, 4500 given) had its reply
    // capped to the ~500 left, not the provider's 8192.
    let mut limits = run.child_limits.clone();
    limits.sort_unstable();
    assert_eq!(limits.len(), 4, "{limits:?}");
    assert!(
        limits[..2].iter().all(|&l| (64..=500).contains(&l)),
        "the last request's reply is capped to what the budget leaves: {limits:?}"
    );
    let events = project.events(parent);
    let charged: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "subagent/end")
        .collect();
    assert_eq!(charged.len(), 2, "{events:?}");
    for end in &charged {
        assert_eq!(end["data"]["spent"]["tokens"], 4000, "{end}");
        assert_eq!(end["data"]["spent"]["model_requests"], 2, "{end}");
        assert_eq!(end["data"]["reason"], "token_budget", "{end}");
        assert!(
            children
                .iter()
                .any(|c| end["data"]["session"] == c.as_str())
        );
    }
    // The call's result line says what was charged.
    let results: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "tool/result")
        .map(|e| {
            e["data"]["content"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert!(
        results
            .iter()
            .all(|r| r.contains("2 model requests, 4000 tokens")
                && r.contains("charged to this session")),
        "{results:?}"
    );
    // The parent stops on its budget, the children's spending counted, and asks no more: its
    // next request would send more than the 1000 left.
    let end = events
        .iter()
        .rev()
        .find(|e| e["type"] == "turn/end")
        .unwrap();
    assert_eq!(end["data"]["reason"], "token_budget", "{end}");
    assert!(
        end["data"]["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("9000 tokens used (8000 by subagents)"),
        "{end}"
    );
    assert_eq!(run.parent_requests, 1, "{shown}");
    // `log` shows the charge.
    let log = project.command(&["log", parent]).output().unwrap();
    assert!(
        text(&log).contains("subagent/end")
            && text(&log).contains("charged 2 requests, 4000 tokens"),
        "{}",
        text(&log)
    );
}

/// With room for two children, a `task` call made alone is given all that the parent has left
/// (9000 of 10000 tokens), not half of it: the split is among the calls of one message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_started_alone_is_given_all_that_its_parent_has_left() {
    let project = Project::warm(&[("notes.txt", "notes")]);
    let run = delegate(&project, 1).await;
    let (children, _) = family(&project);
    let [child] = children.as_slice() else {
        panic!("one child: {children:?} {}", text(&run.out));
    };
    let events = project.events(child);
    let end = events
        .iter()
        .rev()
        .find(|e| e["type"] == "turn/end")
        .unwrap();
    let detail = end["data"]["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("8000 tokens used") && detail.contains("the budget is 9000"),
        "the child alone is given the 9000 left and stops before a request would pass it: {end}"
    );
}

/// A preset whose bench plugin appends to files in the project after a pause.
fn writing_preset() -> String {
    format!(
        "[limits]\nmax_subagents = 2\nmax_depth = 1\n\n\
         [plugins.bench]\nsource = {:?}\nmounts = [{{ host = \".\", guest = \"/workspace\", mode = \"rw\" }}]\n\n\
         [approval]\nmedium = \"allow\"\nhigh = \"allow\"\n",
        paddock_tests::plugins::plugin_dir()
            .join("bench_tools.wasm")
            .display()
            .to_string()
    )
}

/// Milliseconds since the epoch of call `id`'s event `kind` in `events`.
fn at(events: &[Value], kind: &str, id: &str) -> u64 {
    events
        .iter()
        .find(|e| e["type"] == kind && e["data"]["id"] == id)
        .and_then(|e| e["ts_ms"].as_u64())
        .unwrap_or_else(|| panic!("no {kind} of {id}: {events:?}"))
}

/// Both children are made to send their write at the same moment (each child's model answers
/// only once the other child has asked), each write pausing 1.5 s inside the tool: run side by
/// side they would overlap; with the per-file locks the parent lends them, one write runs
/// from its start to its result while the other waits, and both land.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_parallel_children_writing_one_file_take_turns() {
    let project = Project::warm(&[("shared.txt", "")]);
    let asked = Arc::new(Mutex::new((false, false)));
    let responder: Responder = Arc::new(move |body, _| {
        let (first, results) = read(body);
        let mut asked = asked.lock().unwrap();
        let (me, text) = if first.contains("CHILD-A") {
            asked.0 = true;
            ("A", "A")
        } else if first.contains("CHILD-B") {
            asked.1 = true;
            ("B", "B")
        } else if results == 0 {
            return costing(10, two_tasks());
        } else {
            return costing(10, Vec::new());
        };
        if results > 0 {
            return costing(10, Vec::new());
        }
        if !(asked.0 && asked.1) {
            return Step::Status {
                status: 503,
                body: "wait for the other child".into(),
                retry_after_secs: None,
                retry_after_ms: Some(50),
            };
        }
        let id = format!("w{me}");
        costing(
            10,
            vec![(
                id.as_str(),
                "write_slowly",
                json!({"path": "shared.txt", "text": text, "ms": 1500}),
            )],
        )
    });
    let out = run_parent(&project, &writing_preset(), responder).await;
    assert!(out.status.success(), "{}", text(&out));
    let (children, _) = family(&project);
    assert_eq!(children.len(), 2, "{}", text(&out));
    let mut spans: Vec<(u64, u64)> = Vec::new();
    for child in &children {
        let events = project.events(child);
        let id = events
            .iter()
            .find(|e| e["type"] == "tool/start")
            .and_then(|e| e["data"]["id"].as_str())
            .unwrap_or_else(|| panic!("{child} wrote nothing: {events:?}"))
            .to_string();
        let result = events
            .iter()
            .find(|e| e["type"] == "tool/result" && e["data"]["id"] == id.as_str())
            .unwrap();
        assert_eq!(result["data"]["is_error"], false, "{result}");
        spans.push((
            at(&events, "tool/start", &id),
            at(&events, "tool/result", &id),
        ));
    }
    spans.sort();
    assert!(
        spans[0].1 <= spans[1].0,
        "the two writes overlapped: {spans:?}"
    );
    let written = std::fs::read_to_string(project.dir.path().join("shared.txt")).unwrap();
    let mut letters: Vec<char> = written.chars().collect();
    letters.sort();
    assert_eq!(letters, ['A', 'B'], "{written:?}");
}

/// `log --atif` of a parent embeds each child's trajectory (its session id as
/// `trajectory_id`), the `task` call's result refers to it, and Harbor's validator and the
/// `atif` package accept the document.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_parents_trajectory_embeds_its_children_and_the_validators_accept_it() {
    let Some(python) = crate::atif::python() else {
        return;
    };
    let project = Project::warm(&[("notes.txt", "notes")]);
    let responder: Responder = Arc::new(|body, _| {
        let (first, results) = read(body);
        match (first.contains("CHILD"), results) {
            (true, 0) => costing(20, vec![("r1", "read_file", json!({"path": "notes.txt"}))]),
            (true, _) => costing(20, Vec::new()),
            (false, 0) => costing(10, two_tasks()),
            (false, _) => costing(10, Vec::new()),
        }
    });
    let out = run_parent(&project, BUDGET_PRESET, responder).await;
    assert!(out.status.success(), "{}", text(&out));
    let (children, parents) = family(&project);
    let trajectory = crate::atif::exported(&python, &project, &parents[0]);
    let embedded: Vec<&str> = trajectory["subagent_trajectories"]
        .as_array()
        .unwrap_or_else(|| panic!("no subagent_trajectories: {trajectory}"))
        .iter()
        .map(|t| t["trajectory_id"].as_str().unwrap())
        .collect();
    let mut expected: Vec<&str> = children.iter().map(String::as_str).collect();
    expected.sort();
    let mut got = embedded.clone();
    got.sort();
    assert_eq!(got, expected);
    for sub in trajectory["subagent_trajectories"].as_array().unwrap() {
        assert!(
            sub["steps"].as_array().is_some_and(|s| !s.is_empty()),
            "{sub}"
        );
    }
    let refs: Vec<&str> = trajectory["steps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["observation"]["results"].as_array().into_iter().flatten())
        .filter_map(|r| r["subagent_trajectory_ref"][0]["trajectory_id"].as_str())
        .collect();
    let mut refs_sorted = refs.clone();
    refs_sorted.sort();
    assert_eq!(refs_sorted, expected, "{trajectory}");
    // The total cost and tokens of the children are in the parent's metrics extra.
    assert_eq!(
        trajectory["final_metrics"]["extra"]["subagents_spent"]["tokens"], 80,
        "{trajectory}"
    );
}
