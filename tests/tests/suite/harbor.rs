//! paddock as a Harbor agent, end to end: `harbor run` on the Terminal-Bench-style task in
//! `tests/harbor/task-write-file` with `paddock_harbor:PaddockAgent` (integrations/harbor), in
//! the daemon-less `paddock_harbor.chroot:ChrootEnvironment`, the agent uploading the built
//! binary and talking to the scripted model server. Each test reads what Harbor recorded: the
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
use serde_json::Value;

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

/// `harbor run` of the task with paddock against `url`, with `agent_kwargs` (`--ak`).
async fn harbor_run(python: &Path, url: &str, agent_kwargs: &[&str]) -> Job {
    let jobs = tempfile::tempdir().expect("jobs dir");
    let harbor = python.with_file_name("harbor");
    let mut cmd = Command::new(&harbor);
    cmd.arg("run")
        .arg("-p")
        .arg(repo().join("tests/harbor/task-write-file"))
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
    let job = harbor_run(&python, &server.openai_base_url(), &[]).await;

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
    let job = harbor_run(&python, &server.openai_base_url(), &["max_turns=1"]).await;

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
