//! `paddock acp` driven by the Agent Client Protocol's official Rust SDK (the
//! `agent-client-protocol` crate's client side) over the real binary's standard input and
//! output, against the scripted model: a session whose calls ask for permission (allowed: the
//! file is written; rejected: the file is untouched), a running program cancelled with
//! `session/cancel`, the session loaded again by a second `paddock acp` with its history
//! replayed; and what the agent answers to a method it does not serve, a prompt for a session
//! it does not have and a line that is not JSON, each an error that says what to do, after
//! which it still serves.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, FileSystemCapabilities,
    InitializeRequest, LoadSessionRequest, NewSessionRequest, PromptRequest, ReadTextFileRequest,
    ReadTextFileResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionId, SessionNotification,
    SessionUpdate, StopReason, TextContent, ToolCallStatus, WriteTextFileRequest,
    WriteTextFileResponse,
};
use agent_client_protocol::{Agent, Client, Lines, on_receive_notification, on_receive_request};
use futures::StreamExt;
use paddock_tests::scripted::{Script, ScriptCall, ScriptedServer, Step, Turn};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use crate::agent_common::{Project, call_step};

/// Asks for medium-risk tools (`write_file`) as well as high (`run_command`).
pub(crate) const PRESET: &str =
    "name = \"acp-test\"\nextends = \"coding\"\n\n[approval]\nmedium = \"ask\"\n";

/// What the editor saw: every update, and every permission question with its answer.
#[derive(Default)]
pub(crate) struct Seen {
    pub(crate) updates: Mutex<Vec<SessionNotification>>,
    pub(crate) asked: Mutex<Vec<(String, String)>>,
    pub(crate) answers: Mutex<VecDeque<&'static str>>,
    /// Paths the agent asked the editor to read or write (`fs/*`).
    pub(crate) editor_fs: Mutex<Vec<String>>,
}

impl Seen {
    pub(crate) fn updates(&self) -> Vec<SessionUpdate> {
        self.updates
            .lock()
            .unwrap()
            .iter()
            .map(|n| n.update.clone())
            .collect()
    }

    /// The text the agent streamed to the thread, all of it.
    pub(crate) fn said(&self) -> String {
        self.updates()
            .iter()
            .filter_map(|u| match u {
                SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                    ContentBlock::Text(t) => Some(t.text.clone()),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    /// The last status each update gave call `id`.
    pub(crate) fn status_of(&self, id: &str) -> Option<ToolCallStatus> {
        let mut status = None;
        for update in self.updates() {
            match update {
                SessionUpdate::ToolCall(call) if &*call.tool_call_id.0 == id => {
                    status = Some(call.status)
                }
                SessionUpdate::ToolCallUpdate(u) if &*u.tool_call_id.0 == id => {
                    if let Some(s) = u.fields.status {
                        status = Some(s);
                    }
                }
                _ => {}
            }
        }
        status
    }
}

/// `paddock acp` in `project` against `server`, with the test preset.
pub(crate) fn spawn_acp(project: &Project, server: &ScriptedServer) -> tokio::process::Child {
    let preset = project.home.path().join("acp-test.toml");
    std::fs::write(&preset, PRESET).unwrap();
    let url = server.openai_base_url();
    spawn_acp_with(
        project,
        &[
            "acp",
            "--base-url",
            &url,
            "--model",
            "scripted",
            "--preset",
            &preset.display().to_string(),
        ],
    )
}

/// `paddock ARGS` in `project`, its standard input and output the protocol's.
pub(crate) fn spawn_acp_with(project: &Project, args: &[&str]) -> tokio::process::Child {
    let mut cmd = project.command(args);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    tokio::process::Command::from(cmd)
        .kill_on_drop(true)
        .spawn()
        .expect("spawn paddock acp")
}

/// Runs `body` as an ACP client of `child`, answering permission questions from `seen`.
pub(crate) async fn as_client<F>(child: &mut tokio::process::Child, seen: Arc<Seen>, body: F)
where
    F: AsyncFnOnce(ConnectionTo<Agent>) -> Result<(), agent_client_protocol::Error> + Send,
{
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let outgoing = futures::sink::unfold(stdin, async |mut w, line: String| {
        w.write_all(line.as_bytes()).await?;
        w.write_all(b"\n").await?;
        w.flush().await?;
        Ok::<_, std::io::Error>(w)
    });
    let lines = tokio::io::BufReader::new(stdout).lines();
    let incoming = futures::stream::unfold(lines, |mut lines| async move {
        let line = lines.next_line().await.transpose()?;
        Some((line, lines))
    });
    let asked = Arc::clone(&seen);
    let updated = Arc::clone(&seen);
    let wrote = Arc::clone(&seen);
    let read = Arc::clone(&seen);
    let run = Client
        .v1()
        .name("paddock-acp-test")
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                let answer = asked.answers.lock().unwrap().pop_front().unwrap_or("no");
                asked
                    .asked
                    .lock()
                    .unwrap()
                    .push((request.tool_call.tool_call_id.0.to_string(), answer.into()));
                let offered: Vec<&str> = request.options.iter().map(|o| &*o.option_id.0).collect();
                assert_eq!(offered, ["once", "always", "no"]);
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(answer)),
                ))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: WriteTextFileRequest, responder, _cx| {
                let path = request.path.display().to_string();
                wrote
                    .editor_fs
                    .lock()
                    .unwrap()
                    .push(format!("write {path}"));
                responder.respond(WriteTextFileResponse::new())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ReadTextFileRequest, responder, _cx| {
                let path = request.path.display().to_string();
                read.editor_fs.lock().unwrap().push(format!("read {path}"));
                responder.respond(ReadTextFileResponse::new(String::new()))
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                updated.updates.lock().unwrap().push(notification);
                Ok(())
            },
            on_receive_notification!(),
        )
        .connect_with(Lines::new(Box::pin(outgoing), incoming.boxed()), body);
    tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the ACP session finished within two minutes")
        .expect("the ACP client ran");
}

/// Sends `prompt` to session `id` and checks that its turn ended as a turn does when nothing
/// stops it.
pub(crate) async fn prompt_to_the_end(
    cx: &ConnectionTo<Agent>,
    id: impl Into<SessionId>,
    prompt: Vec<ContentBlock>,
) -> Result<(), agent_client_protocol::Error> {
    let response = cx
        .send_request(PromptRequest::new(id, prompt))
        .block_task()
        .await?;
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    Ok(())
}

pub(crate) fn text(s: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(TextContent::new(s))]
}

/// `initialize`, as an editor that offers its file system.
pub(crate) fn initialize() -> InitializeRequest {
    InitializeRequest::new(ProtocolVersion::V1).client_capabilities(
        ClientCapabilities::new().fs(FileSystemCapabilities::new()
            .read_text_file(true)
            .write_text_file(true)),
    )
}

/// Waits until call `id` is reported in progress.
pub(crate) async fn wait_in_progress(seen: &Seen, id: &str) {
    for _ in 0..1500 {
        if seen.status_of(id) == Some(ToolCallStatus::InProgress) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("call {id} was never reported in progress");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_allows_rejects_and_cancels_calls_and_loads_the_session_again() {
    let project = Project::warm(&[("keep.txt", "original\n")]);
    let sleep = waiting_a_minute();
    let server = ScriptedServer::start(Script {
        steps: vec![
            call_step(
                "w1",
                "write_file",
                r#"{"path": "a.txt", "content": "allowed\n"}"#,
            ),
            Step::Reply(Turn::text(&["Wrote a.txt."])),
            call_step(
                "w2",
                "write_file",
                r#"{"path": "keep.txt", "content": "overwritten\n"}"#,
            ),
            Step::Reply(sleep),
        ],
    })
    .await
    .unwrap();
    let seen = Arc::new(Seen::default());
    seen.answers.lock().unwrap().extend(["once", "no", "once"]);
    let mut child = spawn_acp(&project, &server);
    let cwd = project.dir.path().to_path_buf();
    let watch = Arc::clone(&seen);
    let session_id = Arc::new(Mutex::new(String::new()));
    let id_out = Arc::clone(&session_id);
    as_client(&mut child, Arc::clone(&seen), async move |cx| {
        let init = cx.send_request(initialize()).block_task().await?;
        assert!(init.agent_capabilities.load_session);
        let new = cx
            .send_request(NewSessionRequest::new(cwd.clone()))
            .block_task()
            .await?;
        let modes = new.modes.expect("modes are offered");
        let ids: Vec<&str> = modes.available_modes.iter().map(|m| &*m.id.0).collect();
        assert!(
            ids.contains(&"coding") && ids.contains(&"default"),
            "{ids:?}"
        );
        assert!(modes.current_mode_id.0.ends_with("acp-test.toml"));
        let id = new.session_id.clone();
        *id_out.lock().unwrap() = id.0.to_string();

        // Allowed: the write runs and the model answers.
        prompt_to_the_end(&cx, id.clone(), text("write a.txt")).await?;

        // Rejected: the user's no ends the turn, the file is untouched.
        prompt_to_the_end(&cx, id.clone(), text("overwrite keep.txt")).await?;

        // Cancelled while `sleep 60` runs.
        let third = cx.send_request(PromptRequest::new(id.clone(), text("wait a minute")));
        wait_in_progress(&watch, "s1").await;
        cx.send_notification(CancelNotification::new(id.clone()))?;
        let third = third.block_task().await?;
        assert_eq!(third.stop_reason, StopReason::Cancelled);
        Ok(())
    })
    .await;
    // The client closed the agent's input: it ends, and so does its hold on the session.
    let ended = child.wait().await.unwrap();
    assert!(ended.success(), "paddock acp ended with {ended}");

    assert_eq!(
        std::fs::read_to_string(project.dir.path().join("a.txt")).unwrap(),
        "allowed\n"
    );
    assert_eq!(
        std::fs::read_to_string(project.dir.path().join("keep.txt")).unwrap(),
        "original\n",
        "a rejected write leaves the file as it was"
    );
    let asked = seen.asked.lock().unwrap().clone();
    assert_eq!(
        asked,
        [
            ("w1".to_string(), "once".to_string()),
            ("w2".to_string(), "no".to_string()),
            ("s1".to_string(), "once".to_string()),
        ]
    );
    assert_eq!(seen.status_of("w1"), Some(ToolCallStatus::Completed));
    assert_eq!(seen.status_of("w2"), Some(ToolCallStatus::Failed));
    assert_eq!(seen.status_of("s1"), Some(ToolCallStatus::Failed));
    assert!(seen.editor_fs.lock().unwrap().is_empty());
    let streamed = seen.said();
    assert!(streamed.contains("Wrote a.txt."), "{streamed}");
    let edit = seen.updates().into_iter().find_map(|u| match u {
        SessionUpdate::ToolCall(call) if &*call.tool_call_id.0 == "w1" => Some(call),
        _ => None,
    });
    let edit = edit.expect("w1 announced");
    assert_eq!(
        edit.locations[0].path,
        project.dir.path().join("a.txt"),
        "the editor is shown the host path it can open"
    );
    // The log says how each call ended: the cancelled program did not run its minute.
    let id = session_id.lock().unwrap().clone();
    let events = project.events(&id);
    let result = |call: &str| {
        events
            .iter()
            .find(|e| e["type"] == "tool/result" && e["data"]["id"] == call)
            .map(|e| e["data"].clone())
            .unwrap_or_else(|| panic!("no result for {call}"))
    };
    assert_eq!(result("w2")["code"], "DECLINED");
    assert_eq!(result("s1")["code"], "CANCELLED");

    // A second `paddock acp` loads the session: its history comes back as updates.
    let loaded = Arc::new(Seen::default());
    let mut child = spawn_acp(&project, &server);
    let cwd = project.dir.path().to_path_buf();
    as_client(&mut child, Arc::clone(&loaded), async move |cx| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        cx.send_request(LoadSessionRequest::new(id.clone(), cwd))
            .block_task()
            .await?;
        Ok(())
    })
    .await;
    let replayed = loaded.updates();
    assert!(replayed.iter().any(|u| matches!(u,
        SessionUpdate::UserMessageChunk(c) if matches!(&c.content, ContentBlock::Text(t) if t.text == "write a.txt"))));
    assert_eq!(loaded.status_of("w1"), Some(ToolCallStatus::Completed));
    assert_eq!(loaded.status_of("w2"), Some(ToolCallStatus::Failed));
}

/// A model that writes what runs on the user's next `git commit` and `cargo build`, in an
/// editor that offers its own file system and approves both writes: the editor's route is never
/// taken, and paddock's refuses the protected paths as `write_file` always does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approving_editor_cannot_get_ambient_code_written() {
    let project = Project::warm(&[("README.md", "hello\n")]);
    std::fs::create_dir_all(project.dir.path().join(".git/hooks")).unwrap();
    std::fs::create_dir_all(project.dir.path().join(".cargo")).unwrap();
    let server = ScriptedServer::start(Script {
        steps: vec![
            Step::Reply(Turn::calls(vec![
                ScriptCall::new(
                    "h1",
                    "write_file",
                    r##"{"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ntouch /tmp/owned\n"}"##,
                    &[],
                ),
                ScriptCall::new(
                    "h2",
                    "write_file",
                    r#"{"path": "/workspace/.cargo/config.toml", "content": "[build]\nrustc-wrapper = \"/tmp/evil\"\n"}"#,
                    &[],
                ),
            ])),
            Step::Reply(Turn::text(&["Done."])),
        ],
    })
    .await
    .unwrap();
    let seen = Arc::new(Seen::default());
    seen.answers.lock().unwrap().extend(["once", "once"]);
    let mut child = spawn_acp(&project, &server);
    let cwd = project.dir.path().to_path_buf();
    as_client(&mut child, Arc::clone(&seen), async move |cx| {
        cx.send_request(initialize()).block_task().await?;
        let new = cx
            .send_request(NewSessionRequest::new(cwd))
            .block_task()
            .await?;
        cx.send_request(PromptRequest::new(new.session_id, text("set up hooks")))
            .block_task()
            .await?;
        Ok(())
    })
    .await;
    assert!(child.wait().await.unwrap().success());
    assert!(!project.dir.path().join(".git/hooks/pre-commit").exists());
    assert!(!project.dir.path().join(".cargo/config.toml").exists());
    assert!(
        seen.editor_fs.lock().unwrap().is_empty(),
        "the editor's fs was used"
    );
    // The write under .git is refused before anyone is asked; the one to .cargo/config.toml
    // is asked and approved, and still refused: by the sandbox, not by the user.
    let asked: Vec<String> = seen
        .asked
        .lock()
        .unwrap()
        .iter()
        .map(|(id, _)| id.clone())
        .collect();
    assert_eq!(asked, ["h2"]);
    assert_eq!(seen.status_of("h1"), Some(ToolCallStatus::Failed));
    assert_eq!(seen.status_of("h2"), Some(ToolCallStatus::Failed));
    let events = project.events(&project.only_session());
    for call in ["h1", "h2"] {
        let result = events
            .iter()
            .find(|e| e["type"] == "tool/result" && e["data"]["id"] == call)
            .unwrap_or_else(|| panic!("no result for {call}"));
        let content = result["data"]["content"].as_str().unwrap();
        assert!(content.contains("protected"), "{call}: {content}");
    }
}

/// One JSON-RPC line to the agent, and its answer.
fn exchange(
    stdin: &mut std::process::ChildStdin,
    stdout: &mut BufReader<std::process::ChildStdout>,
    line: &str,
) -> Value {
    writeln!(stdin, "{line}").unwrap();
    stdin.flush().unwrap();
    let mut answer = String::new();
    stdout.read_line(&mut answer).unwrap();
    serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer}"))
}

#[test]
fn bad_input_gets_an_error_that_says_what_to_do_and_the_agent_keeps_serving() {
    let project = Project::new(&[]);
    let mut child = project
        .command(&["acp", "--demo"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let init = exchange(
        &mut stdin,
        &mut stdout,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#,
    );
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");

    let unknown = exchange(
        &mut stdin,
        &mut stdout,
        r#"{"jsonrpc":"2.0","id":2,"method":"session/teleport","params":{}}"#,
    );
    assert_eq!(unknown["id"], 2);
    assert_eq!(unknown["error"]["code"], -32601);
    let message = unknown["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("session/teleport") && message.contains("session/prompt"),
        "{message}"
    );

    let stranger = exchange(
        &mut stdin,
        &mut stdout,
        &json!({"jsonrpc":"2.0","id":3,"method":"session/prompt",
            "params":{"sessionId":"nobody","prompt":[{"type":"text","text":"hi"}]}})
        .to_string(),
    );
    assert_eq!(stranger["id"], 3);
    assert_eq!(stranger["error"]["code"], -32602);
    let message = stranger["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("nobody") && message.contains("session/new"),
        "{message}"
    );

    let garbled = exchange(
        &mut stdin,
        &mut stdout,
        r#"{"jsonrpc":"2.0","id":4,"method":"#,
    );
    assert_eq!(garbled["error"]["code"], -32700);
    let message = garbled["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("not JSON") && message.contains("one JSON-RPC 2.0 message per line"),
        "{message}"
    );

    // A line past the cap (an editor, or what pretends to be one, that never ends its line)
    // is skipped with an error instead of being held in memory whole.
    let endless = "x".repeat((64 << 20) + 1);
    let too_long = exchange(&mut stdin, &mut stdout, &endless);
    assert_eq!(too_long["error"]["code"], -32700, "{too_long}");
    let message = too_long["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("longer than 64 MiB") && message.contains("one JSON-RPC message per line"),
        "{message}"
    );

    // Still serving.
    let cwd = project.dir.path().display().to_string();
    let new = exchange(
        &mut stdin,
        &mut stdout,
        &json!({"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":cwd,"mcpServers":[]}})
            .to_string(),
    );
    assert!(new["result"]["sessionId"].is_string(), "{new}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// A reply whose call (`s1`) runs `sleep 60`, for a cancel or a refusal to land on.
pub(crate) fn waiting_a_minute() -> Turn {
    let mut sleep = Turn::calls(vec![ScriptCall::new(
        "s1",
        "run_command",
        r#"{"program": "sleep", "args": ["60"]}"#,
        &[],
    )]);
    sleep.text = vec!["Waiting a minute.".into()];
    sleep
}
