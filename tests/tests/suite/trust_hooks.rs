//! Hooks hold for the whole session, through the real binary (H1, H2, S5): a Ctrl-C interrupts
//! its own turn only, and the hooks of every later turn still decide; a post-hook that cannot
//! inspect a result withholds it; errors and hook output pass the output budget like results.

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::agent_common::{Project, call_step, text};
use paddock_tests::plugins::plugin_dir;
use paddock_tests::scripted::{Fault, Script, ScriptCall, ScriptedServer, Step, Turn};
use serde_json::Value;

const SECRET: &str = "sk-live0123456789abcdefghijklmnop";

fn results(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "tool/result")
        .map(|e| &e["data"])
        .collect()
}

async fn wait_for(project: &Project, what: &str, count: usize) -> String {
    let started = Instant::now();
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the log never showed {count} x {what}"
        );
        if let Some(id) = project.sessions().first().cloned()
            && std::fs::read_to_string(project.log_path(&id))
                .is_ok_and(|t| t.matches(what).count() >= count)
        {
            return id;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The regression: one Ctrl-C used to cancel a session-wide token every hook ran under, so
/// every later hook "failed", and the coding preset's redactor (then `keep` on error) let a
/// key through to the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_ctrl_c_in_chat_every_hook_of_the_next_turn_still_decides() {
    let project = Project::new(&[("secret.txt", &format!("api key: {SECRET}\n"))]);
    let server = ScriptedServer::start(Script {
        steps: vec![
            Step::Reply(
                Turn::text(&["thinking", " slowly"]).with_fault(Fault::StallAfter {
                    frames: 1,
                    ms: 30_000,
                }),
            ),
            Step::Reply(Turn::calls(vec![
                ScriptCall::new("c1", "read_file", r#"{"path": "secret.txt"}"#, &[]),
                ScriptCall::new(
                    "c2",
                    "write_file",
                    r#"{"path": ".env", "content": "X=1"}"#,
                    &[],
                ),
            ])),
            Step::Reply(Turn::text(&["done"])),
        ],
    })
    .await
    .unwrap();
    let url = server.openai_base_url();
    let mut child = project
        .command(&[
            "chat",
            "--preset",
            "coding",
            "--base-url",
            &url,
            "--model",
            "scripted",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn paddock chat");
    let mut stdin = child.stdin.take().expect("piped stdin");
    writeln!(stdin, "first task").unwrap();
    wait_for(&project, "attempt/start", 1).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    paddock_tests::send_signal(child.id(), libc::SIGINT);
    wait_for(&project, "\"interrupted\"", 1).await;

    writeln!(stdin, "second task").unwrap();
    let id = wait_for(&project, "turn/end", 2).await;
    drop(stdin);
    let output = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let events = project.events(&id);
    let results = results(&events);
    assert_eq!(results.len(), 2, "{}", text(&output));
    let read = results.iter().find(|r| r["id"] == "c1").unwrap();
    let content = read["content"].as_str().unwrap();
    assert!(
        content.contains("[REDACTED]") && !content.contains(SECRET),
        "the redactor (post-hook) still decides after the Ctrl-C: {read}"
    );
    let write = results.iter().find(|r| r["id"] == "c2").unwrap();
    assert_eq!(write["is_error"], true, "{write}");
    assert!(
        write["content"]
            .as_str()
            .unwrap()
            .contains("protected glob"),
        "protect-paths (pre-hook) still decides after the Ctrl-C: {write}"
    );
    assert!(!project.dir.path().join(".env").exists());
    for request in server.requests() {
        assert!(
            !request.body.to_string().contains(SECRET),
            "the key never reaches the model"
        );
    }
}

fn attacks_preset(project: &Project, hook_extra: &str) -> String {
    let wasm = plugin_dir().join("hostile_attacks.wasm");
    let preset = format!(
        "[plugins.attacks]\nsource = \"{}\"\noutput_bytes = 16777216\n[tools]\ndisable = [\"attacks:half_write\"]\n\n\
         [[hooks]]\nsource = \"builtin:redact-secrets\"\non = \"post\"\n{hook_extra}\n\n\
         [approval]\nhigh = \"allow\"\n",
        wasm.display()
    );
    let path = project.home.path().join("attacks.toml");
    std::fs::write(&path, preset).unwrap();
    path.display().to_string()
}

/// With the default budget (64 KiB), the 8 MiB error is cut, in the log and in the request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eight_mib_error_is_cut_to_the_default_budget() {
    let project = Project::new(&[]);
    let server = ScriptedServer::start(Script {
        steps: vec![
            call_step("c1", "huge_error", r#"{"mib": 8}"#),
            Step::Reply(Turn::text(&["done"])),
        ],
    })
    .await
    .unwrap();
    let wasm = plugin_dir().join("hostile_attacks.wasm");
    let preset = project.home.path().join("p.toml");
    std::fs::write(
        &preset,
        format!(
            "[plugins.attacks]\nsource = \"{}\"\n[tools]\ndisable = [\"attacks:half_write\"]\n[approval]\nhigh = \"allow\"\n",
            wasm.display()
        ),
    )
    .unwrap();
    let url = server.openai_base_url();
    let output = project
        .paddock(&[
            "run",
            "fail",
            "--preset",
            preset.to_str().unwrap(),
            "--base-url",
            &url,
            "--model",
            "scripted",
        ])
        .await;
    let id = project.only_session();
    let events = project.events(&id);
    let results = results(&events);
    assert_eq!(results.len(), 1, "{}", text(&output));
    let content = results[0]["content"].as_str().unwrap();
    assert!(content.len() <= 70 << 10, "{} bytes", content.len());
    assert!(
        content.contains("of 8388608 bytes"),
        "says how much was cut"
    );
    let log_bytes = std::fs::metadata(project.log_path(&id)).unwrap().len();
    assert!(log_bytes < 1 << 20, "log is {log_bytes} bytes");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].body.to_string();
    assert!(
        second.len() < 1 << 20,
        "next request is {} bytes",
        second.len()
    );
}

/// A redactor that cannot inspect a result (here: out of fuel, as a big result makes it)
/// withholds it instead of passing it on unchecked; a big result it can inspect is redacted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_hook_that_cannot_inspect_a_result_withholds_it() {
    let tail = format!(" {SECRET}");
    let args = serde_json::json!({"mib": 6, "tail": tail}).to_string();
    for hook_extra in ["fuel = 1000", ""] {
        let project = Project::new(&[]);
        let server = ScriptedServer::start(Script {
            steps: vec![
                call_step("c1", "huge_result", &args),
                Step::Reply(Turn::text(&["done"])),
            ],
        })
        .await
        .unwrap();
        let url = server.openai_base_url();
        let preset = attacks_preset(&project, hook_extra);
        let output = project
            .paddock(&[
                "run",
                "big",
                "--preset",
                &preset,
                "--base-url",
                &url,
                "--model",
                "scripted",
            ])
            .await;
        let events = project.events(&project.only_session());
        let results = results(&events);
        assert_eq!(results.len(), 1, "{}", text(&output));
        let content = results[0]["content"].as_str().unwrap();
        assert!(
            !content.contains(SECRET),
            "{hook_extra:?}: the key got through"
        );
        if hook_extra.is_empty() {
            let end = &content[content.len().saturating_sub(300)..];
            assert!(
                content.contains("[REDACTED]") || content.contains("withheld"),
                "{end}"
            );
        } else {
            assert_eq!(results[0]["is_error"], true);
            assert!(content.contains("withheld"), "{content}");
        }
        // The model wrote the key into its own call; what must not come back is the result.
        for request in server.requests() {
            let results: Vec<&Value> = request.body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|m| m["role"] == "tool")
                .collect();
            for message in results {
                assert!(!message.to_string().contains(SECRET), "{hook_extra:?}");
            }
        }
    }
}
