//! paddock as a Harbor agent, end to end: `harbor run` on the Terminal-Bench-style tasks in
//! `tests/harbor/` with `paddock_harbor:PaddockAgent` (integrations/harbor), in the daemon-less
//! `paddock_harbor.chroot:ChrootEnvironment` (which carries out the `COPY` lines of a task's
//! Dockerfile), the agent uploading the built binary and talking to the scripted model server:
//! a task solved with `write_file` and the tool of an MCP server the task declares, one with a
//! background server through `shell` and `write_stdin`, one with an interactive program on a
//! terminal; a model streaming reasoning, kept in the validated trajectory's steps; a budget
//! stop with `skip_install` (the image's paddock); a 429 reported as
//! Harbor's `ApiRateLimitError`, the server given by `--base-url`; a misspelt option refused
//! before any trial; a trial refused before its environment started. Each test reads what
//! Harbor recorded: the job's and the trial's `result.json` (`harbor run` exits 0 even when a
//! trial errors), the verifier's reward, the trajectory in the trial's agent logs (checked by
//! Harbor's validator, its `tool_definitions` the session's tools), and the token counts
//! against paddock's own `result` line.
//!
//! Harbor is the one `cargo xtask test` installs for the ATIF tests (`PADDOCK_ATIF_PYTHON`,
//! `harbor` beside it), and the MCP server the SDK's (`PADDOCK_MCP_PYTHON`). Outside it, a
//! machine without them skips these tests with a message saying how to install them; in CI
//! (`CI` set) their absence fails them.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::agent_common::{call_step, paddock_bin, text};
use crate::atif::python;
use crate::mcp_http::url_servers::UrlServer;
use paddock_tests::scripted::{Script, ScriptCall, ScriptedServer, Step, Turn};
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

/// The task in `tests/harbor/{name}`.
fn task(name: &str) -> PathBuf {
    repo().join("tests/harbor").join(name)
}

/// A copy of the task `name` whose `task.toml` ends with `more` (MCP servers it declares).
fn task_with(name: &str, more: &str) -> (tempfile::TempDir, PathBuf) {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("mkdir");
        for entry in std::fs::read_dir(from).expect("read the task").flatten() {
            let target = to.join(entry.file_name());
            if entry.path().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), &target).expect("copy");
            }
        }
    }
    let dir = tempfile::tempdir().expect("task dir");
    let copied = dir.path().join(name);
    copy(&task(name), &copied);
    let toml = copied.join("task.toml");
    let text = std::fs::read_to_string(&toml).expect("task.toml") + more;
    std::fs::write(&toml, text).expect("task.toml");
    (dir, copied)
}

/// How the agent is told where the model server is.
enum Server<'a> {
    /// `PADDOCK_BASE_URL` in the environment `harbor` runs in.
    Env(&'a str),
    /// `harbor run --base-url URL`, with no `PADDOCK_BASE_URL`.
    Flag(&'a str),
}

/// `harbor run` of `task` with paddock against `server`, with `agent_kwargs` (`--ak`) and
/// `agent_env` (`--ae`, the environment of the agent's commands): its output, and the
/// directory of its jobs.
async fn harbor(
    python: &Path,
    task: &Path,
    server: Server<'_>,
    agent_kwargs: &[&str],
    agent_env: &[&str],
) -> (std::process::Output, tempfile::TempDir) {
    let jobs = tempfile::tempdir().expect("jobs dir");
    let harbor = python.with_file_name("harbor");
    let mut cmd = Command::new(&harbor);
    cmd.arg("run")
        .arg("-p")
        .arg(task)
        .args(["-a", "paddock_harbor:PaddockAgent"])
        .args(["-e", "paddock_harbor.chroot:ChrootEnvironment"])
        .args(["-m", "scripted", "--job-name", "paddock", "-y", "-q", "-o"])
        .arg(jobs.path());
    for kwarg in agent_kwargs {
        cmd.args(["--ak", kwarg]);
    }
    for var in agent_env {
        cmd.args(["--ae", var]);
    }
    match server {
        Server::Env(url) => cmd.env("PADDOCK_BASE_URL", url),
        Server::Flag(url) => cmd.args(["--base-url", url]).env_remove("PADDOCK_BASE_URL"),
    };
    cmd.env("PYTHONPATH", repo().join("integrations/harbor"))
        .env("PADDOCK_BINARY", paddock_bin())
        .env_remove("PADDOCK_API_KEY")
        .env_remove("PADDOCK_MODEL")
        .env("HARBOR_TELEMETRY", "0")
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        // What a task's MCP server headers may name (Harbor wants each variable set).
        .env("PADDOCK_TEST_MCP_TOKEN", "not-a-secret")
        .current_dir(jobs.path());
    let output = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("join")
        .unwrap_or_else(|e| panic!("run {}: {e}", harbor.display()));
    (output, jobs)
}

/// `harbor` on `task` with `agent_kwargs`, for a trial that stops before paddock asks its
/// model anything: the scripted model it is given must have had no request.
async fn harbor_unasked(
    python: &Path,
    task: &Path,
    agent_kwargs: &[&str],
) -> (std::process::Output, tempfile::TempDir) {
    let server = ScriptedServer::start(Script::default())
        .await
        .expect("scripted server");
    let ran = harbor(
        python,
        task,
        Server::Env(&server.openai_base_url()),
        agent_kwargs,
        &[],
    )
    .await;
    assert!(
        server.requests().is_empty(),
        "the model was asked: {}",
        text(&ran.0)
    );
    ran
}

/// `harbor run` (as `harbor` does it) that ran its one trial: the job's and trial's results.
async fn harbor_run(python: &Path, task: &Path, server: Server<'_>, agent_kwargs: &[&str]) -> Job {
    harbor_run_env(python, task, server, agent_kwargs, &[]).await
}

/// `harbor_run` with `agent_env` (`--ae`) too.
async fn harbor_run_env(
    python: &Path,
    task: &Path,
    server: Server<'_>,
    agent_kwargs: &[&str],
    agent_env: &[&str],
) -> Job {
    let (output, jobs) = harbor(python, task, server, agent_kwargs, agent_env).await;
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
async fn harbor_runs_paddock_on_a_task_with_its_mcp_server_and_the_verifier_rewards_the_file_it_wrote()
 {
    let Some(python) = python() else { return };
    let Some(mcp) = UrlServer::start() else {
        return;
    };
    // The task declares an MCP server by a host name (resolved in the environment: paddock
    // reaches a private address only as an address); the model calls its tool, then writes.
    let (_task, task) = task_with(
        WRITE_FILE,
        &format!(
            "\n[[environment.mcp_servers]]\nname = \"remote\"\ntransport = \"streamable-http\"\n\
             url = \"http://localhost:{}/mcp\"\n",
            mcp.port
        ),
    );
    let server = ScriptedServer::start(Script {
        steps: vec![
            call_step("m1", "pid", "{}"),
            writes_greeting(),
            Step::Reply(Turn::text(&["Done."])),
        ],
    })
    .await
    .expect("scripted server");
    let job = harbor_run(&python, &task, Server::Env(&server.openai_base_url()), &[]).await;

    let result = result_line(&job);
    assert_eq!(result["stop_reason"], "completed");
    assert_eq!(result["exit_code"], 0);
    assert_solved(&job, &result);
    assert_eq!(server.requests().len(), 3);
    // The task's server answered the call: its own process id.
    assert_eq!(tool_results(&server)[0], mcp.child.id().to_string());
    let trajectory = assert_trajectory(&python, &job, &result);
    let calls: Vec<&Value> = trajectory["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["tool_calls"].as_array())
        .flatten()
        .collect();
    let names: Vec<&Value> = calls.iter().map(|c| &c["function_name"]).collect();
    assert_eq!(names, ["pid", "write_file"], "{trajectory}");
    // The tools the session offered, the task's server's among them, in OpenAI's shape.
    let definitions = trajectory["agent"]["tool_definitions"]
        .as_array()
        .unwrap_or_else(|| panic!("no tool_definitions: {}", trajectory["agent"]));
    let offered: Vec<&str> = definitions
        .iter()
        .map(|d| {
            assert_eq!(d["type"], "function", "{d}");
            assert_eq!(d["function"]["parameters"]["type"], "object", "{d}");
            d["function"]["name"].as_str().expect("a name")
        })
        .collect();
    for tool in ["pid", "write_file", "read_file", "shell"] {
        assert!(offered.contains(&tool), "{tool} not in {offered:?}");
    }
    // The session's own log came back too, for `paddock log`.
    let session = result["session"].as_str().unwrap();
    let log = job.trial_dir.join("agent/sessions").join(session);
    assert!(log.join("events.jsonl").is_file(), "no {}", log.display());
}

/// What the agent's set-up installs in `plugins_compile_in_the_agents_install_*`: the Python
/// example (an 18 MB component, seconds to compile), named by the preset as installed.
const PY_PLUGIN: &str = "py_word_freq";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugins_compile_in_the_agents_install_and_the_trials_session_loads_them_compiled() {
    let Some(python) = python() else { return };
    let wasm = paddock_tests::plugin_dir().join(format!("{PY_PLUGIN}.wasm"));
    assert!(
        wasm.is_file(),
        "{} is missing: run `cargo xtask build-plugins` (with `bash .ci/authoring-tools.sh`)",
        wasm.display()
    );
    // The adapter's own container preset, with the plugin by its installed name (a preset
    // file is uploaded alone: it cannot name a path on this machine).
    let presets = tempfile::tempdir().expect("preset dir");
    let preset = presets.path().join("with-plugin.toml");
    let container =
        std::fs::read_to_string(repo().join("integrations/harbor/paddock_harbor/container.toml"))
            .expect("container.toml");
    std::fs::write(
        &preset,
        format!("{container}\n[plugins.{PY_PLUGIN}]\nsource = \"{PY_PLUGIN}\"\n"),
    )
    .expect("write the preset");
    let server = ScriptedServer::start(Script {
        steps: vec![
            call("w1", "word_freq", json!({"text": "b a b"})),
            writes_greeting(),
            Step::Reply(Turn::text(&["Done."])),
        ],
    })
    .await
    .expect("scripted server");
    let job = harbor_run_env(
        &python,
        &task(WRITE_FILE),
        Server::Env(&server.openai_base_url()),
        &[
            &format!("plugins={}", wasm.display()),
            &format!("preset={}", preset.display()),
        ],
        // The sandbox says, for each plugin a process loads, whether it compiled it.
        &["PADDOCK_LOG=paddock_sandbox=debug"],
    )
    .await;

    let result = result_line(&job);
    assert_eq!(result["stop_reason"], "completed", "{}", job.trial);
    assert_solved(&job, &result);
    assert_eq!(tool_results(&server)[0], "b 2\na 1");
    // The trial's session took the plugin's code from the cache the install filled, in the
    // same data directory; it compiled nothing of it.
    let stderr = std::fs::read_to_string(job.trial_dir.join("agent/paddock.stderr"))
        .expect("the agent saved paddock's stderr");
    assert!(
        stderr.contains(&format!(
            "plugin {PY_PLUGIN}: compiled code loaded from the cache"
        )),
        "the session did not load {PY_PLUGIN} from the cache:\n{stderr}"
    );
    assert!(
        !stderr.contains(&format!(
            "plugin {PY_PLUGIN}: no compiled code in the cache"
        )),
        "the session compiled {PY_PLUGIN}:\n{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_option_naming_no_wasm_file_fails_the_agents_setup_saying_so() {
    let Some(python) = python() else { return };
    let (output, jobs) = harbor_unasked(
        &python,
        &task(WRITE_FILE),
        &["plugins=/nonexistent/tool.wasm"],
    )
    .await;
    assert!(output.status.success(), "harbor run: {}", text(&output));
    let job_dir = jobs.path().join("paddock");
    let trial = std::fs::read_dir(&job_dir)
        .expect("the job's directory")
        .flatten()
        .map(|e| e.path().join("result.json"))
        .find(|p| p.is_file())
        .expect("a trial result");
    let trial = read_json(&trial);
    let message = trial["exception_info"]["exception_message"].to_string();
    assert!(
        message.contains("/nonexistent/tool.wasm") && message.contains("not a .wasm file"),
        "{trial}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trial_whose_model_streams_reasoning_keeps_it_in_the_trajectory_harbor_validates() {
    let Some(python) = python() else { return };
    // `reasoning_content` deltas (the OpenAI-compatible wire's reasoning) before the call and
    // before the final text.
    let mut writes = Turn::calls(vec![ScriptCall::new(
        "c1",
        "write_file",
        r#"{"path": "greeting.txt", "content": "hello from paddock\n"}"#,
        &[],
    )]);
    writes.reasoning = vec![
        "The task wants greeting.txt; ".into(),
        "write_file makes it.".into(),
    ];
    let mut done = Turn::text(&["Done."]);
    done.reasoning = vec!["The file is written.".into()];
    let server = ScriptedServer::start(Script {
        steps: vec![Step::Reply(writes), Step::Reply(done)],
    })
    .await
    .expect("scripted server");
    let job = harbor_run(
        &python,
        &task(WRITE_FILE),
        Server::Env(&server.openai_base_url()),
        &[],
    )
    .await;

    let result = result_line(&job);
    assert_eq!(result["stop_reason"], "completed");
    assert_solved(&job, &result);
    // Harbor's validator passed the file whose agent steps carry the reasoning, each with the
    // step it came before.
    let trajectory = assert_trajectory(&python, &job, &result);
    let reasoned: Vec<(&Value, &Value)> = trajectory["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["source"] == "agent")
        .map(|s| (&s["reasoning_content"], &s["message"]))
        .collect();
    assert_eq!(
        reasoned,
        [
            (
                &json!("The task wants greeting.txt; write_file makes it."),
                &json!("")
            ),
            (&json!("The file is written."), &json!("Done."))
        ],
        "{trajectory}"
    );
    let definitions = trajectory["agent"]["tool_definitions"]
        .as_array()
        .unwrap_or_else(|| panic!("no tool_definitions: {}", trajectory["agent"]));
    let offered: Vec<&Value> = definitions.iter().map(|d| &d["function"]["name"]).collect();
    assert!(offered.contains(&&json!("write_file")), "{offered:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_stop_in_harbor_is_a_finished_run_and_skip_install_runs_the_images_paddock() {
    let Some(python) = python() else { return };
    // The image has paddock (the chroot carries out the Dockerfile's COPY); with
    // skip_install the agent uploads nothing (the binary it names does not exist) and still
    // sets up its trial.
    let (_task, task) = task_with(WRITE_FILE, "");
    std::fs::copy(paddock_bin(), task.join("environment/paddock")).expect("copy paddock");
    let dockerfile = task.join("environment/Dockerfile");
    let text = std::fs::read_to_string(&dockerfile).expect("Dockerfile")
        + "COPY paddock /installed-agent/paddock\n";
    std::fs::write(&dockerfile, text).expect("Dockerfile");
    // The one allowed turn writes the file; the budget stops the session before a second.
    // The script is docs/harbor.md's (tests/harbor/write-file.script.json).
    let script = std::fs::read_to_string(repo().join("tests/harbor/write-file.script.json"))
        .expect("the script");
    let script: Script = serde_json::from_str(&script).expect("a script");
    let server = ScriptedServer::start(script)
        .await
        .expect("scripted server");
    let job = harbor_run(
        &python,
        &task,
        Server::Env(&server.openai_base_url()),
        &[
            "max_turns=1",
            "skip_install=true",
            "binary=/nonexistent/paddock",
        ],
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
        &task(WRITE_FILE),
        Server::Env(&server.openai_base_url()),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_model_is_harbors_rate_limit_error_and_base_url_reaches_paddock() {
    let Some(python) = python() else { return };
    // A 429 asking for a wait past paddock's retry budget: paddock gives up at once.
    let server = ScriptedServer::start(Script {
        steps: vec![Step::Status {
            status: 429,
            body: r#"{"error": {"type": "rate_limit_error", "message": "slow down"}}"#.into(),
            retry_after_secs: Some(3600),
            retry_after_ms: None,
        }],
    })
    .await
    .expect("scripted server");
    // The server only through `--base-url` (no PADDOCK_BASE_URL): the request reached it.
    let job = harbor_run(
        &python,
        &task(WRITE_FILE),
        Server::Flag(&server.openai_base_url()),
        &[],
    )
    .await;

    assert_eq!(server.requests().len(), 1);
    let result = result_line(&job);
    assert_eq!(result["stop_reason"], "model_error");
    assert_eq!(result["exit_code"], 4);
    assert_eq!(job.result["stats"]["n_errored_trials"], 1);
    let exception = &job.trial["exception_info"];
    assert_eq!(
        exception["exception_type"], "ApiRateLimitError",
        "{exception}"
    );
    let message = exception["exception_message"].as_str().unwrap();
    assert!(message.contains("paddock exited 4"), "{message}");
    assert!(message.contains("HTTP 429"), "{message}");
}

#[test]
fn each_result_line_of_a_failed_run_is_the_error_class_harbors_own_agents_raise() {
    let Some(python) = python() else { return };
    // (stop_reason, detail as paddock words it, Harbor's class)
    let cases = json!([
        [
            "model_error",
            "gave up after 5 attempts; last error: HTTP 429 from http://m/v1/chat/completions: slow down",
            "ApiRateLimitError"
        ],
        [
            "model_error",
            "HTTP 400 from http://m/v1/chat/completions: {\"error\": {\"code\": \"context_length_exceeded\"}}",
            "ContextWindowExceededError"
        ],
        [
            "model_error",
            "HTTP 413 from http://m/v1/messages: prompt is too long: 210000 tokens > 200000 maximum",
            "ContextWindowExceededError"
        ],
        [
            "model_error",
            "HTTP 400 from http://m/v1/chat/completions: unknown field",
            "UnknownApiError"
        ],
        [
            "model_error",
            "HTTP 401 from http://m/v1/chat/completions: bad key",
            "AgentAuthenticationError"
        ],
        [
            "model_error",
            "HTTP 404 from http://m/v1/chat/completions: no such model",
            "ModelNotFoundError"
        ],
        [
            "model_error",
            "gave up after 2 attempts: the server answered HTTP 500 with the same error twice",
            "ApiInternalServerError"
        ],
        [
            "model_error",
            "gave up after 5 attempts; last error: HTTP 529 from http://m/v1/messages: overloaded",
            "ApiOverloadedError"
        ],
        [
            "model_error",
            "gave up after 5 attempts; last error: could not reach http://m/v1: refused",
            "NetworkConnectionError"
        ],
        [
            "model_error",
            "the provider's content filter stopped the response",
            "AgentSafetyRefusalError"
        ],
        [
            "model_error",
            "HTTP 418 from http://m/v1: a body that says HTTP 429 from elsewhere",
            "UnknownApiError"
        ],
        [
            "protocol_error",
            "the stream is not a valid openai stream: garbage",
            "UnknownApiError"
        ],
        [
            "setup_error",
            "HTTP 429 from http://m: a preset that mentions it",
            "NonZeroAgentExitCodeError"
        ],
        ["host_error", null, "NonZeroAgentExitCodeError"],
    ]);
    let script = "import json, sys\nfrom paddock_harbor.errors import error_class\n\
                  for stop, detail, _ in json.loads(sys.argv[1]):\n\
                  \x20   print(error_class({'stop_reason': stop, 'detail': detail}).__name__)\n";
    let output = Command::new(&python)
        .args(["-c", script, &cases.to_string()])
        .env("PYTHONPATH", repo().join("integrations/harbor"))
        .env("HARBOR_TELEMETRY", "0")
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .output()
        .expect("run Python");
    assert!(output.status.success(), "{}", text(&output));
    let got: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    let wanted: Vec<&str> = cases
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c[2].as_str().unwrap())
        .collect();
    assert_eq!(got, wanted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_misspelt_agent_option_stops_harbor_run_naming_it_and_the_valid_ones() {
    let Some(python) = python() else { return };
    let (output, jobs) = harbor_unasked(&python, &task(WRITE_FILE), &["max_turn=1"]).await;

    // Harbor checks an agent's options before it starts a trial.
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let said = text(&output);
    assert!(said.contains("Unknown option 'max_turn'"), "{said}");
    assert!(said.contains("did you mean 'max_turns'?"), "{said}");
    assert!(
        said.contains(
            "Valid options: base_url, binary, disable_web_search, max_turns, plugins, preset,"
        ),
        "{said}"
    );
    assert!(!jobs.path().join("paddock/result.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trial_refused_before_its_environment_started_fails_for_that_reason_alone() {
    let Some(python) = python() else { return };
    // Harbor refuses an MCP server with headers for an agent that cannot forward them, before
    // the environment starts; it still asks the environment for the trial's logs.
    let (_task, task) = task_with(
        WRITE_FILE,
        "\n[[environment.mcp_servers]]\nname = \"remote\"\ntransport = \"streamable-http\"\n\
         url = \"http://127.0.0.1:9/mcp\"\nheaders = { Authorization = \"Bearer ${PADDOCK_TEST_MCP_TOKEN}\" }\n",
    );
    let (output, jobs) = harbor_unasked(&python, &task, &[]).await;
    assert!(output.status.success(), "harbor run: {}", text(&output));
    let job_dir = jobs.path().join("paddock");
    let trial_dir = std::fs::read_dir(&job_dir)
        .expect("the job's directory")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("result.json").is_file())
        .expect("a trial");
    let trial = read_json(&trial_dir.join("result.json"));
    let exception = &trial["exception_info"];
    assert_eq!(exception["exception_type"], "ValueError", "{exception}");
    let message = exception["exception_message"].as_str().unwrap();
    assert!(
        message.contains("cannot forward HTTP MCP headers"),
        "{message}"
    );
    // Fetching the logs of the environment that never started raised nothing.
    let log = std::fs::read_to_string(trial_dir.join("trial.log")).expect("trial.log");
    assert!(!log.contains("Traceback"), "{log}");
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
    let job = harbor_run(
        &python,
        &task(BACKGROUND_SERVER),
        Server::Env(&server.openai_base_url()),
        &[],
    )
    .await;

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
    let job = harbor_run(
        &python,
        &task(INTERACTIVE),
        Server::Env(&server.openai_base_url()),
        &[],
    )
    .await;

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
