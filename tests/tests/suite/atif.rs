//! ATIF-v1.8 trajectories (`paddock log SESSION --atif`) of sessions run through the real binary
//! against the scripted model server: completed with a repaired call and a failed one,
//! interrupted, stopped by `--max-turns`, and crashed mid-call (the crash-points hook). Each is
//! checked by both validators the harnesses use, Harbor's (`python -m
//! harbor.utils.trajectory_validator`) and the `atif` package's models, and against the log:
//! steps in order, every call paired with its result on its own step, the log's token totals,
//! the stop.
//!
//! The validators' Python is found in `PADDOCK_ATIF_PYTHON`, which `cargo xtask test` installs
//! and sets (`xtask/src/tools.rs`). Outside it, a machine without one skips these tests with a
//! message saying how to install it; in CI (`CI` set) its absence fails them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::agent_common::{Project, call_step, last_stop, text};
use paddock_tests::scripted::{Fault, Script, ScriptCall, ScriptedServer, Step, Turn};
use serde_json::{Value, json};

/// The Python with Harbor and `atif`, or `None` (after saying why) to skip; also the Harbor
/// tests' (`harbor.rs`).
pub(crate) fn python() -> Option<PathBuf> {
    match std::env::var_os("PADDOCK_ATIF_PYTHON") {
        Some(path) => Some(PathBuf::from(path)),
        None if std::env::var_os("CI").is_some() => {
            panic!("PADDOCK_ATIF_PYTHON is not set in CI: cargo xtask test installs the validators")
        }
        None => {
            eprintln!(
                "SKIPPED: the ATIF validators are not installed; run `uv venv -p 3.12 V && uv pip \
                 install --python V/bin/python harbor==0.26.0 atif==1.8.0` and set \
                 PADDOCK_ATIF_PYTHON=V/bin/python (cargo xtask test does both)"
            );
            None
        }
    }
}

/// `paddock log ID --atif`, checked by both validators; the trajectory.
pub(crate) fn exported(python: &Path, project: &Project, id: &str) -> Value {
    let output = project
        .command(&["log", id, "--atif"])
        .output()
        .expect("run paddock log");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let file = project.home.path().join(format!("{id}.trajectory.json"));
    std::fs::write(&file, &output.stdout).expect("write the trajectory");

    let harbor = Command::new(python)
        .args(["-m", "harbor.utils.trajectory_validator"])
        .arg(&file)
        .env("HARBOR_TELEMETRY", "0")
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .output()
        .expect("run Harbor's validator");
    assert!(
        harbor.status.success(),
        "Harbor rejects the trajectory: {}\n{}",
        text(&harbor),
        String::from_utf8_lossy(&output.stdout)
    );
    let atif = Command::new(python)
        .args([
            "-c",
            "import sys, atif; atif.Trajectory.model_validate_json(open(sys.argv[1]).read())",
        ])
        .arg(&file)
        .output()
        .expect("run the atif package");
    assert!(
        atif.status.success(),
        "the atif package rejects the trajectory: {}\n{}",
        text(&atif),
        String::from_utf8_lossy(&output.stdout)
    );
    serde_json::from_slice(&output.stdout).expect("one JSON document")
}

/// The model's first answer in most of these sessions: call `c1` reads a.txt.
fn reads_a() -> Step {
    call_step("c1", "read_file", r#"{"path":"a.txt"}"#)
}

fn run_args<'a>(url: &'a str, task: &'a str) -> Vec<&'a str> {
    vec!["run", task, "--base-url", url, "--model", "scripted"]
}

fn sources(trajectory: &Value) -> Vec<&str> {
    steps(trajectory)
        .iter()
        .map(|s| s["source"].as_str().unwrap_or("?"))
        .collect()
}

fn steps(trajectory: &Value) -> &Vec<Value> {
    trajectory["steps"].as_array().expect("steps")
}

/// What both validators need and this checks whole: steps numbered 1.. in time order, each
/// call of a step answered exactly once on that same step, `total_steps` the count.
fn assert_shape(trajectory: &Value) {
    assert_eq!(trajectory["schema_version"], "ATIF-v1.8");
    assert_eq!(trajectory["agent"]["name"], "paddock");
    let steps = steps(trajectory);
    let mut last = String::new();
    for (i, step) in steps.iter().enumerate() {
        assert_eq!(step["step_id"], i + 1);
        let at = step["timestamp"].as_str().expect("a timestamp").to_string();
        assert!(at >= last, "steps in time order: {at} after {last}");
        last = at;
        let mut calls: Vec<&str> = step["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["tool_call_id"].as_str().unwrap())
            .collect();
        let mut answered: Vec<&str> = step["observation"]["results"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| r["source_call_id"].as_str().unwrap())
            .collect();
        calls.sort_unstable();
        answered.sort_unstable();
        assert_eq!(calls, answered, "step {}", i + 1);
    }
    assert_eq!(trajectory["final_metrics"]["total_steps"], steps.len());
}

/// Token totals in the trajectory equal the log's, and each agent step's equal its message's.
fn assert_tokens_match_log(trajectory: &Value, events: &[Value]) {
    let usages: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "assistant/message")
        .map(|e| &e["data"]["usage"])
        .collect();
    let sum = |field: &str| {
        usages
            .iter()
            .map(|u| u[field].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    let totals = &trajectory["final_metrics"];
    assert!(sum("input_tokens") > 0, "the script reports usage");
    assert_eq!(totals["total_prompt_tokens"], sum("input_tokens"));
    assert_eq!(totals["total_completion_tokens"], sum("output_tokens"));
    assert_eq!(totals["total_cached_tokens"], sum("cache_read_tokens"));
    let per_step: Vec<u64> = steps(trajectory)
        .iter()
        .filter(|s| s["source"] == "agent")
        .map(|s| s["metrics"]["prompt_tokens"].as_u64().unwrap())
        .collect();
    let per_message: Vec<u64> = usages
        .iter()
        .map(|u| u["input_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(per_step, per_message);
}

fn result_of<'t>(step: &'t Value, id: &str) -> &'t Value {
    step["observation"]["results"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["source_call_id"] == id))
        .unwrap_or_else(|| panic!("no result for {id} in {step}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_session_with_a_repaired_and_a_failed_call_passes_both_validators() {
    let Some(python) = python() else { return };
    let project = Project::new(&[("a.txt", "alpha\n")]);
    let server = ScriptedServer::start(Script {
        steps: vec![
            Step::Reply(Turn {
                text: vec!["Reading.".into()],
                ..Turn::calls(vec![
                    // Fenced, single-quoted, a trailing comma: repaired, then run.
                    ScriptCall::new("c1", "read_file", "```json\n{'path': 'a.txt',}\n```", &[]),
                    ScriptCall::new("c2", "read_file", r#"{"path":"missing.txt"}"#, &[]),
                ])
            }),
            Step::Reply(Turn::text(&["Done: a.txt says alpha."])),
        ],
    })
    .await
    .expect("scripted server");
    let url = server.openai_base_url();
    let output = project.paddock(&run_args(&url, "read a.txt")).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let id = project.only_session();
    let events = project.events(&id);
    let trajectory = exported(&python, &project, &id);

    assert_shape(&trajectory);
    assert_eq!(sources(&trajectory), ["system", "user", "agent", "agent"]);
    assert_eq!(trajectory["session_id"], id.as_str());
    assert_eq!(trajectory["agent"]["model_name"], "scripted");
    let steps = steps(&trajectory);
    assert_eq!(steps[1]["message"], "read a.txt");
    let calling = &steps[2];
    assert_eq!(calling["message"], "Reading.");
    let calls = calling["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    // The repaired call shows what ran; the model's own text and the repairs are kept beside.
    assert_eq!(calls[0]["function_name"], "read_file");
    assert_eq!(calls[0]["arguments"], json!({"path": "a.txt"}));
    assert_eq!(
        calls[0]["extra"]["raw_arguments"],
        "```json\n{'path': 'a.txt',}\n```"
    );
    let repairs: Vec<&str> = calls[0]["extra"]["repairs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["repair"].as_str())
        .collect();
    assert_eq!(repairs, ["code_fence", "trailing_commas", "single_quotes"]);
    assert_eq!(calls[1]["arguments"], json!({"path": "missing.txt"}));
    assert!(calls[1].get("extra").is_none(), "{}", calls[1]);
    // Results on the calls' own step, as the log has them.
    let ok = result_of(calling, "c1");
    assert!(ok["content"].as_str().unwrap().contains("alpha"), "{ok}");
    assert_eq!(ok["extra"]["is_error"], false);
    let failed = result_of(calling, "c2");
    assert_eq!(failed["extra"]["is_error"], true, "{failed}");
    let logged = events
        .iter()
        .find(|e| e["type"] == "tool/result" && e["data"]["id"] == "c2")
        .unwrap();
    assert_eq!(failed["content"], logged["data"]["content"]);
    assert_eq!(failed["extra"]["code"], logged["data"]["code"]);
    assert_eq!(steps[3]["message"], "Done: a.txt says alpha.");
    assert!(steps[3].get("tool_calls").is_none());

    assert_tokens_match_log(&trajectory, &events);
    assert_eq!(trajectory["extra"]["stop_reason"], "completed");
    assert!(trajectory["extra"].get("log_ends_without_stop").is_none());
    let notes = trajectory["notes"].as_str().unwrap();
    assert!(
        notes.starts_with("The session stopped: completed."),
        "{notes}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_session_gives_a_valid_trajectory_with_its_stop() {
    let Some(python) = python() else { return };
    let project = Project::new(&[("a.txt", "alpha\n")]);
    let server = ScriptedServer::start(Script {
        steps: vec![
            reads_a(),
            // The second answer never finishes: the session is interrupted while it waits.
            Step::Reply(
                Turn::text(&["thinking", " more"]).with_fault(Fault::StallAfter {
                    frames: 1,
                    ms: 60_000,
                }),
            ),
        ],
    })
    .await
    .expect("scripted server");
    let url = server.openai_base_url();
    let mut run = project
        .command(&run_args(&url, "read a.txt"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn paddock");
    let started = Instant::now();
    while server.requests().len() < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no second request"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // What Ctrl-C sends.
    // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(run.id() as i32, libc::SIGINT) }, 0);
    let status = tokio::task::spawn_blocking(move || run.wait())
        .await
        .expect("join")
        .expect("wait");
    assert_eq!(status.code(), Some(130));
    let id = project.only_session();
    let events = project.events(&id);
    assert_eq!(last_stop(&events), "interrupted");

    let trajectory = exported(&python, &project, &id);
    assert_shape(&trajectory);
    assert_eq!(sources(&trajectory), ["system", "user", "agent"]);
    assert!(
        result_of(&steps(&trajectory)[2], "c1")["content"]
            .as_str()
            .unwrap()
            .contains("alpha")
    );
    assert_tokens_match_log(&trajectory, &events);
    assert_eq!(trajectory["extra"]["stop_reason"], "interrupted");
    let notes = trajectory["notes"].as_str().unwrap();
    assert!(notes.contains("interrupted"), "{notes}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_stopped_by_max_turns_gives_a_valid_trajectory_with_its_stop() {
    let Some(python) = python() else { return };
    let project = Project::new(&[("a.txt", "alpha\n")]);
    let server = ScriptedServer::start(Script {
        steps: vec![reads_a(), Step::Reply(Turn::text(&["never asked for"]))],
    })
    .await
    .expect("scripted server");
    let url = server.openai_base_url();
    let mut args = run_args(&url, "read a.txt");
    // `run --atif FILE` writes the same trajectory when the session ends.
    let written = project.home.path().join("run.trajectory.json");
    let written_arg = written.to_str().unwrap().to_string();
    args.extend(["--max-turns", "1", "--atif", &written_arg]);
    let output = project.paddock(&args).await;
    assert_eq!(output.status.code(), Some(3), "{}", text(&output));
    assert_eq!(server.requests().len(), 1);
    let id = project.only_session();
    let events = project.events(&id);
    assert_eq!(last_stop(&events), "max_turns");

    let trajectory = exported(&python, &project, &id);
    let from_run: Value =
        serde_json::from_str(&std::fs::read_to_string(&written).expect("run --atif wrote it"))
            .expect("one JSON document");
    assert_eq!(
        from_run, trajectory,
        "run --atif writes what log --atif prints"
    );
    assert_shape(&trajectory);
    let agent_steps: Vec<&Value> = steps(&trajectory)
        .iter()
        .filter(|s| s["source"] == "agent")
        .collect();
    assert_eq!(agent_steps.len(), 1);
    assert!(
        result_of(agent_steps[0], "c1")["content"]
            .as_str()
            .unwrap()
            .contains("alpha")
    );
    assert_tokens_match_log(&trajectory, &events);
    assert_eq!(trajectory["extra"]["stop_reason"], "max_turns");
    let detail = trajectory["extra"]["stop_detail"].as_str().unwrap();
    assert!(detail.contains("limits.max_turns"), "{detail}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_crashed_mid_call_gives_a_valid_trajectory_that_says_the_call_has_no_result() {
    let Some(python) = python() else { return };
    let script = || Script {
        steps: vec![reads_a(), Step::Reply(Turn::text(&["Done."]))],
    };
    // A run to the end says at which append the call's result is written; the crash comes
    // just before it (appends count from the event after session/start).
    let reference = Project::new(&[("a.txt", "alpha\n")]);
    let server = ScriptedServer::start(script()).await.expect("server");
    let output = reference
        .paddock(&run_args(&server.openai_base_url(), "read a.txt"))
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let result_seq = reference
        .events(&reference.only_session())
        .iter()
        .find(|e| e["type"] == "tool/result")
        .and_then(|e| e["seq"].as_u64())
        .expect("a tool/result");

    let project = Project::new(&[("a.txt", "alpha\n")]);
    let server = ScriptedServer::start(script()).await.expect("server");
    let mut crash = project.command(&run_args(&server.openai_base_url(), "read a.txt"));
    crash.env(
        "PADDOCK_CRASH_AT_APPEND",
        format!("{}:before", result_seq - 1),
    );
    let output = tokio::task::spawn_blocking(move || crash.output().expect("run paddock"))
        .await
        .expect("join");
    assert_eq!(
        output.status.code(),
        None,
        "paddock aborts at the crash point (a build with the crash-points feature): {}",
        text(&output)
    );
    let id = project.only_session();
    let events = project.events(&id);
    assert_eq!(events.len() as u64, result_seq - 1);
    assert!(events.iter().all(|e| e["type"] != "tool/result"));
    let started = events
        .iter()
        .any(|e| e["type"] == "tool/start" && e["data"]["id"] == "c1");

    let trajectory = exported(&python, &project, &id);
    assert_shape(&trajectory);
    assert_eq!(sources(&trajectory), ["system", "user", "agent"]);
    let missing = result_of(&steps(&trajectory)[2], "c1");
    assert_eq!(
        missing["extra"]["status"],
        if started {
            "outcome_unknown"
        } else {
            "not_run"
        }
    );
    assert!(
        missing["content"]
            .as_str()
            .unwrap()
            .starts_with("No result")
    );
    assert_tokens_match_log(&trajectory, &events);
    assert_eq!(trajectory["extra"]["stop_reason"], Value::Null);
    assert_eq!(trajectory["extra"]["log_ends_without_stop"], true);
    let notes = trajectory["notes"].as_str().unwrap();
    assert!(notes.contains("The log ends without a stop"), "{notes}");
    assert!(notes.contains(&format!("paddock resume {id}")), "{notes}");
}
