//! paddock as a Harbor agent, end to end: `harbor run` on the Terminal-Bench-style tasks in
//! `tests/harbor/` with `paddock_harbor:PaddockAgent` (integrations/harbor), in the daemon-less
//! `paddock_harbor.chroot:ChrootEnvironment` (which carries out the `COPY` lines of a task's
//! Dockerfile), the agent uploading the built binary and talking to the scripted model server:
//! a task solved with `write_file`, one with a background server through `shell` and
//! `write_stdin`, one with an interactive program on a terminal. Each test reads what Harbor recorded: the
//! job's and the trial's `result.json` (`harbor run` exits 0 even when a trial errors), the
//! verifier's reward, the trajectory in the trial's agent logs (checked by Harbor's validator),
//! and the token counts against paddock's own `result` line.
//!
//! Harbor is the one `cargo xtask test` installs for the ATIF tests (`PADDOCK_ATIF_PYTHON`,
//! `harbor` beside it). Outside it, a machine without one skips these tests with a message
//! saying how to install it; in CI (`CI` set) its absence fails them.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::agent_common::{call_step, paddock_bin, text};
use crate::atif::python;
use paddock_tests::scripted::{Script, ScriptedServer, Step, Turn};
use serde_json::{Value, json};

/// The tasks in `tests/harbor/`.
const WRITE_FILE: &str = "task-write-file";
const BACKGROUND_SERVER: &str = "task-background-server";
const INTERACTIVE: &str = "task-interactive";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

/// What one `harbor run` left: the job's result, its only trial's, and that trial's directory.
struct Job {
    result: Value,
    trial: Value,
    trial_dir: PathBuf,
    _jobs: tempfile::TempDir,
}

/// `harbor run` of the task in `tests/harbor/{task}` with paddock against `url`, with
/// `agent_kwargs` (`--ak`).
async fn harbor_run(python: &Path, task: &str, url: &str, agent_kwargs: &[&str]) -> Job {
    let jobs = tempfile::tempdir().expect("jobs dir");
    let harbor = python.with_file_name("harbor");
    let mut cmd = Command::new(&harbor);
    cmd.arg("run")
        .arg("-p")
        .arg(repo().join("tests/harbor").join(task))
        .args(["-a", "paddock_harbor:PaddockAgent"])
        .args(["-e", "paddock_harbor.chroot:ChrootEnvironment"])
        .args(["-m", "scripted", "--job-name", "paddock", "-y", "-q", "-o"])
        .arg(jobs.path());
    for kwarg in agent_kwargs {
        cmd.args(["--ak", kwarg]);
    }
    cmd.env("PYTHONPATH", repo().join("integrations/harbor"))
        .env("PADDOCK_BINARY", paddock_bin())
        .env("PADDOCK_BASE_URL", url)
        .env_remove("PADDOCK_API_KEY")
        .env_remove("PADDOCK_MODEL")
        .env("HARBOR_TELEMETRY", "0")
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .current_dir(jobs.path());
    let output = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("join")
        .unwrap_or_else(|e| panic!("run {}: {e}", harbor.display()));
    assert!(output.status.success(), "harbor run: {}", text(&output));

    let job_dir = jobs.path().join("paddock");
    let result = read_json(&job_dir.join("result.json"));
    let trials: Vec<PathBuf> = std::fs::read_dir(&job_dir)
        .expect("the job's directory")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("result.json").is_file())
        .collect();
    assert_eq!(trials.len(), 1, "one trial: {trials:?}");
    let trial_dir = trials[0].clone();
    Job {
        result,
        trial: read_json(&trial_dir.join("result.json")),
        trial_dir,
        _jobs: jobs,
    }
}

fn read_json(path: &Path) -> Value {
    let body =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `result` line that ends the stream the agent saved.
fn result_line(job: &Job) -> Value {
    let stream = job.trial_dir.join("agent/paddock.jsonl");
    let body = std::fs::read_to_string(&stream).expect("the agent saved paddock's stream");
    let last: Value = serde_json::from_str(body.lines().last().expect("a line")).expect("JSON");
    assert_eq!(last["type"], "result", "{last}");
    last["data"].clone()
}

/// The job finished with no errored trial, the verifier gave reward 1, and the trial's token
/// counts and cost are the ones paddock reported.
fn assert_solved(job: &Job, result: &Value) {
    let stats = &job.result["stats"];
    assert_eq!(stats["n_errored_trials"], 0, "{}", job.trial);
    assert!(job.trial["exception_info"].is_null(), "{}", job.trial);
    // One eval, named for the agent and the model.
    let evals = stats["evals"].as_object().expect("evals");
    assert_eq!(evals.len(), 1, "{evals:?}");
    assert_eq!(evals["paddock__scripted__adhoc"]["metrics"][0]["mean"], 1.0);
    assert_eq!(job.trial["verifier_result"]["rewards"]["reward"], 1.0);
    let context = &job.trial["agent_result"];
    let input = result["input_tokens"].as_u64().unwrap();
    assert!(input > 0, "the script reports usage: {result}");
    assert_eq!(context["n_input_tokens"], input);
    assert_eq!(context["n_cache_tokens"], result["cache_read_tokens"]);
    assert_eq!(
        context["n_output_tokens"],
        result["tokens"].as_u64().unwrap() - input
    );
    assert_eq!(context["cost_usd"], result["cost_usd"]);
    assert_eq!(context["metadata"]["stop_reason"], result["stop_reason"]);
    assert_eq!(job.trial["agent_info"]["name"], "paddock");
    assert_eq!(
        job.trial["agent_info"]["version"],
        env!("CARGO_PKG_VERSION")
    );
}

/// The trajectory in the trial's agent logs passes Harbor's validator and is the session's.
fn assert_trajectory(python: &Path, job: &Job, result: &Value) -> Value {
    let file = job.trial_dir.join("agent/trajectory.json");
    assert!(file.is_file(), "no {}", file.display());
    let validator = Command::new(python)
        .args(["-m", "harbor.utils.trajectory_validator"])
        .arg(&file)
        .env("HARBOR_TELEMETRY", "0")
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .output()
        .expect("run Harbor's validator");
    assert!(validator.status.success(), "{}", text(&validator));
    let trajectory = read_json(&file);
    assert_eq!(trajectory["session_id"], result["session"]);
    assert_eq!(
        trajectory["final_metrics"]["total_prompt_tokens"],
        result["input_tokens"]
    );
    trajectory
}

/// The model writes the file the task asks for, then says it is done.
fn writes_greeting() -> Step {
    call_step(
        "c1",
        "write_file",
        r#"{"path": "greeting.txt", "content": "hello from paddock\n"}"#,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn harbor_runs_paddock_on_a_task_and_the_verifier_rewards_the_file_it_wrote() {
    let Some(python) = python() else { return };
    let server = ScriptedServer::start(Script {
        steps: vec![writes_greeting(), Step::Reply(Turn::text(&["Done."]))],
    })
    .await
    .expect("scripted server");
    let job = harbor_run(&python, WRITE_FILE, &server.openai_base_url(), &[]).await;

    let result = result_line(&job);
    assert_eq!(result["stop_reason"], "completed");
    assert_eq!(result["exit_code"], 0);
    assert_solved(&job, &result);
    assert_eq!(server.requests().len(), 2);
    let trajectory = assert_trajectory(&python, &job, &result);
    let calls: Vec<&Value> = trajectory["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["tool_calls"].as_array())
        .flatten()
        .collect();
    assert_eq!(calls.len(), 1, "{trajectory}");
    assert_eq!(calls[0]["function_name"], "write_file");
    // The session's own log came back too, for `paddock log`.
    let session = result["session"].as_str().unwrap();
    let log = job.trial_dir.join("agent/sessions").join(session);
    assert!(log.join("events.jsonl").is_file(), "no {}", log.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_stop_in_harbor_is_a_finished_run_not_an_agent_error() {
    let Some(python) = python() else { return };
    // The one allowed turn writes the file; the budget stops the session before a second.
    let server = ScriptedServer::start(Script {
        steps: vec![writes_greeting(), Step::Reply(Turn::text(&["never asked"]))],
    })
    .await
    .expect("scripted server");
    let job = harbor_run(
        &python,
        WRITE_FILE,
        &server.openai_base_url(),
        &["max_turns=1"],
    )
    .await;

    let result = result_line(&job);
    assert_eq!(result["stop_reason"], "max_turns");
    assert_eq!(result["exit_code"], 3);
    assert_solved(&job, &result);
    assert_eq!(server.requests().len(), 1);
    assert_trajectory(&python, &job, &result);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paddock_run_that_fails_is_an_errored_trial_saying_why() {
    let Some(python) = python() else { return };
    let server = ScriptedServer::start(Script::default())
        .await
        .expect("scripted server");
    let job = harbor_run(
        &python,
        WRITE_FILE,
        &server.openai_base_url(),
        &["preset=no-such-preset"],
    )
    .await;

    let result = result_line(&job);
    assert_eq!(result["stop_reason"], "setup_error");
    assert_eq!(result["exit_code"], 2);
    assert_eq!(job.result["stats"]["n_errored_trials"], 1);
    let exception = &job.trial["exception_info"];
    assert_eq!(exception["exception_type"], "NonZeroAgentExitCodeError");
    let message = exception["exception_message"].as_str().unwrap();
    assert!(message.contains("paddock exited 2"), "{message}");
    assert!(message.contains("setup_error"), "{message}");
    assert!(server.requests().is_empty());
}

/// What each tool call answered, in order, as the last request sent them back to the model.
fn tool_results(server: &ScriptedServer) -> Vec<String> {
    let requests = server.requests();
    let last = requests.last().expect("a request");
    last.body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().expect("text content").to_string())
        .collect()
}

/// A step calling `name` with `arguments` (JSON).
fn call(id: &str, name: &str, arguments: Value) -> Step {
    call_step(id, name, &arguments.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_harbor_a_background_server_serves_a_later_command_and_an_interrupt_stops_it() {
    let Some(python) = python() else { return };
    // Session ids count the session's commands from 1: the server is the first.
    let fetch = "for _ in $(seq 100); do python3 -c 'import urllib.request as u; \
                 open(\"answer.txt\", \"wb\").write(u.urlopen(\"http://127.0.0.1:8765/message.txt\").read())' \
                 2>/dev/null && break; sleep 0.1; done; cat answer.txt";
    let server = ScriptedServer::start(Script {
        steps: vec![
            call(
                "c1",
                "shell",
                json!({"command": "python3 -m http.server 8765 --bind 127.0.0.1", "background": true}),
            ),
            call("c2", "shell", json!({ "command": fetch })),
            call("c3", "write_stdin", json!({"session_id": 1, "chars": "\u{3}"})),
            Step::Reply(Turn::text(&["Done."])),
        ],
    })
    .await
    .expect("scripted server");
    let job = harbor_run(&python, BACKGROUND_SERVER, &server.openai_base_url(), &[]).await;

    let result = result_line(&job);
    assert_eq!(result["stop_reason"], "completed");
    assert_solved(&job, &result);
    assert_eq!(server.requests().len(), 4);
    let results = tool_results(&server);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(
        results[0].starts_with("still running (session_id 1)"),
        "{results:?}"
    );
    assert!(
        results[1].starts_with("exit status 0\nserved over http by a background server"),
        "{results:?}"
    );
    // The interrupt ended the server, which had logged the fetch.
    assert!(results[2].starts_with("exit status"), "{results:?}");
    assert!(results[2].contains("GET /message.txt"), "{results:?}");
    assert_trajectory(&python, &job, &result);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_harbor_a_program_that_needs_a_terminal_is_answered_through_write_stdin() {
    let Some(python) = python() else { return };
    let server = ScriptedServer::start(Script {
        steps: vec![
            call(
                "c1",
                "shell",
                json!({"command": "python3 quiz.py", "tty": true, "yield_ms": 1500}),
            ),
            call(
                "c2",
                "write_stdin",
                json!({"session_id": 1, "chars": "42\n"}),
            ),
            call(
                "c3",
                "write_stdin",
                json!({"session_id": 1, "chars": "Paris\n"}),
            ),
            Step::Reply(Turn::text(&["Done."])),
        ],
    })
    .await
    .expect("scripted server");
    let job = harbor_run(&python, INTERACTIVE, &server.openai_base_url(), &[]).await;

    let result = result_line(&job);
    assert_eq!(result["stop_reason"], "completed");
    assert_solved(&job, &result);
    let results = tool_results(&server);
    assert_eq!(results.len(), 3, "{results:?}");
    // Each answer shows the prompt the program asked it on, as a terminal would.
    assert!(
        results[0].starts_with("still running (session_id 1)"),
        "{results:?}"
    );
    assert!(results[0].ends_with("What is 6 times 7? "), "{results:?}");
    assert!(
        results[1].ends_with("What is the capital of France? "),
        "{results:?}"
    );
    assert!(results[2].starts_with("exit status 0"), "{results:?}");
    assert!(results[2].contains("Well done."), "{results:?}");
    assert_trajectory(&python, &job, &result);
}
