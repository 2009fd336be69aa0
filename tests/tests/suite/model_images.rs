//! Images and reasoning end to end: `read_file` on a PNG and `run --image` reach the scripted
//! server in each wire's own format (OpenAI `image_url` data URLs, Anthropic base64 `image`
//! blocks), a text-only model gets a placeholder, the log names each image by hash with its
//! bytes in the session's `blobs/`; hostile images (over the bound, PNG magic on garbage, a
//! symlink out of the mounts) are refused. Streamed reasoning lands in the log and the ATIF
//! trajectory, and Anthropic's signed thinking goes back in the next request (M1, L1).

use crate::agent_common::{Project, call_step, server, text};
use paddock::ModelChoice;
use paddock::agent::Quiet;
use paddock::log::StopReason;
use paddock_tests::scripted::{ScriptedServer, Step, Turn};
use serde_json::Value;

/// A real 2x3 RGB PNG, in hex.
pub(crate) const PNG_HEX: &str = "89504e470d0a1a0a0000000d49484452000000020000000308020000003688\
49d60000001149444154789c63f8cfc0004460024e03003ed605fb5882cf4600000000\
49454e44ae426082";

/// The PNG's bytes (also what `mcp_serve` and `acp` attach).
pub(crate) fn png() -> Vec<u8> {
    (0..PNG_HEX.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&PNG_HEX[i..i + 2], 16).expect("hex"))
        .collect()
}

fn png_base64() -> String {
    paddock::model::ImagePart::from_bytes(png())
        .expect("a valid PNG")
        .base64()
}

fn png_sha() -> String {
    paddock_types::stamp::sha256_hex(&png())
}

/// A preset whose `[model]` is `server` on `provider`'s wire, `vision` as given, with
/// read_file on the project (read-only).
fn preset(server: &ScriptedServer, provider: &str, vision: Option<bool>) -> String {
    let url = match provider {
        "anthropic" => server.anthropic_base_url(),
        _ => server.openai_base_url(),
    };
    let vision = vision.map_or(String::new(), |v| format!("vision = {v}\n"));
    format!(
        "[model]\nprovider = \"{provider}\"\nmodel = \"scripted\"\nbase_url = \"{url}\"\n\
         max_retries = 0\n{vision}\n\
         [plugins.fs]\nsource = \"builtin:fs\"\n\
         mounts = [{{ host = \".\", guest = \"/workspace\", mode = \"ro\" }}]\n\n\
         [tools]\nenable = [\"read_file\"]\n"
    )
}

/// A project holding `pic.png` (and whatever else), its preset `vision.toml` written.
fn project(server: &ScriptedServer, provider: &str, vision: Option<bool>) -> Project {
    let project = Project::warm(&[]);
    std::fs::write(project.dir.path().join("pic.png"), png()).unwrap();
    std::fs::write(
        project.dir.path().join("vision.toml"),
        preset(server, provider, vision),
    )
    .unwrap();
    project
}

async fn start(project: &Project) -> paddock::Session {
    let path = project.dir.path().join("vision.toml");
    project
        .builder(ModelChoice::default())
        .preset(path.to_str().unwrap())
        .start()
        .await
        .expect("the session starts")
}

/// The raw log line of each event of `kind`.
fn lines_of(project: &Project, session: &str, kind: &str) -> Vec<String> {
    let log = std::fs::read_to_string(project.log_path(session)).unwrap();
    log.lines()
        .filter(|l| l.contains(&format!("\"type\":\"{kind}\"")))
        .map(str::to_string)
        .collect()
}

/// Asserts the log names the PNG by hash on a `kind` line, holds no base64 of it, and its
/// blob is in the session's `blobs/`.
fn assert_stored_by_hash(project: &Project, session: &str, kind: &str) {
    let lines = lines_of(project, session, kind);
    let line = lines
        .iter()
        .find(|l| l.contains("\"images\""))
        .unwrap_or_else(|| panic!("a {kind} line with images: {lines:?}"));
    assert!(line.contains(&png_sha()), "{line}");
    let whole = std::fs::read_to_string(project.log_path(session)).unwrap();
    assert!(!whole.contains(&png_base64()[..40]), "no base64 in the log");
    let blob = project
        .home
        .path()
        .join("sessions")
        .join(session)
        .join("blobs")
        .join(png_sha());
    assert_eq!(std::fs::read(&blob).unwrap(), png(), "{}", blob.display());
}

fn read_pic() -> Step {
    call_step("c1", "read_file", r#"{"path": "pic.png"}"#)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_file_on_a_png_reaches_the_openai_wire_as_an_image_url_and_is_logged_by_hash() {
    let server = server(vec![
        read_pic(),
        Step::Reply(Turn::text(&["Red, green, blue."])),
    ])
    .await;
    let project = project(&server, "openai", Some(true));
    let session = start(&project).await;
    let end = session.send("what colours are in pic.png?", &Quiet).await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);

    let sent = &server.requests()[1].body;
    let messages = sent["messages"].as_array().unwrap();
    let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert!(
        tool["content"].as_str().unwrap().contains("image/png, 2x3"),
        "{tool}"
    );
    // A tool message takes text only: the image follows the step's results as a user message.
    let after = &messages[messages.iter().position(|m| m["role"] == "tool").unwrap() + 1];
    assert_eq!(after["role"], "user", "{sent}");
    let url = format!("data:image/png;base64,{}", png_base64());
    assert_eq!(
        after["content"][1]["image_url"]["url"],
        url.as_str(),
        "{after}"
    );
    assert_stored_by_hash(&project, session.id(), "tool/result");

    // Resumed, the history reads the image back from the blob store.
    let trajectory = paddock::log::trajectory_of_log(session.log_path()).unwrap();
    let json = serde_json::to_value(&trajectory).unwrap();
    let parts = json["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|s| {
            s["observation"]["results"][0]["content"]
                .as_array()
                .cloned()
        })
        .expect("an observation with parts");
    assert_eq!(parts[1]["type"], "image");
    assert!(
        parts[1]["source"]["path"]
            .as_str()
            .unwrap()
            .ends_with(&png_sha())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_file_on_a_png_reaches_the_anthropic_wire_as_a_base64_image_block() {
    let server = server(vec![
        read_pic(),
        Step::Reply(Turn::text(&["Three colours."])),
    ])
    .await;
    let project = project(&server, "anthropic", None);
    let session = start(&project).await;
    let end = session.send("what colours are in pic.png?", &Quiet).await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);
    let sent = &server.requests()[1].body;
    let turn = sent["messages"].as_array().unwrap().last().unwrap().clone();
    let result = &turn["content"][0];
    assert_eq!(result["type"], "tool_result", "{turn}");
    let image = &result["content"][1];
    assert_eq!(image["type"], "image", "{result}");
    assert_eq!(image["source"]["type"], "base64");
    assert_eq!(image["source"]["media_type"], "image/png");
    assert_eq!(image["source"]["data"], png_base64().as_str());
    assert_stored_by_hash(&project, session.id(), "tool/result");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_image_attaches_to_the_task_on_both_wires_and_a_text_only_model_gets_a_placeholder() {
    // OpenAI wire, the preset says the model takes images.
    let server_a = server(vec![Step::Reply(Turn::text(&["A tiny picture."]))]).await;
    let project = project(&server_a, "openai", Some(true));
    let preset = project.dir.path().join("vision.toml");
    let output = project
        .paddock(&[
            "run",
            "--preset",
            preset.to_str().unwrap(),
            "--image",
            "pic.png",
            "describe it",
        ])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let sent = &server_a.requests()[0].body;
    let user = sent["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(user["content"][0]["text"], "describe it", "{user}");
    assert_eq!(user["content"][1]["type"], "image_url");
    let url = format!("data:image/png;base64,{}", png_base64());
    assert_eq!(user["content"][1]["image_url"]["url"], url.as_str());
    assert_stored_by_hash(&project, &project.only_session(), "user/message");

    // Anthropic wire, by --base-url: images by default.
    let server_b = server(vec![Step::Reply(Turn::text(&["Seen."]))]).await;
    let url = server_b.anthropic_base_url();
    let output = project
        .paddock(&[
            "run",
            "describe it",
            "--base-url",
            &url,
            "--model",
            "scripted",
            "--provider",
            "anthropic",
            "--image",
            "pic.png",
            "--image",
            "pic.png",
        ])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let sent = &server_b.requests()[0].body;
    let content = &sent["messages"][0]["content"];
    assert_eq!(content[1]["type"], "image", "{content}");
    assert_eq!(content[2]["source"]["data"], png_base64().as_str());

    // An OpenAI-compatible server by --base-url is text-only unless told: a placeholder.
    let server_c = server(vec![Step::Reply(Turn::text(&["I cannot see it."]))]).await;
    let url = server_c.openai_base_url();
    let output = project
        .paddock(&[
            "run",
            "describe it",
            "--base-url",
            &url,
            "--model",
            "scripted",
            "--image",
            "pic.png",
        ])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let sent = &server_c.requests()[0].body;
    let said = sent["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .expect("text only")
        .to_string();
    assert!(
        said.starts_with("describe it\n[image not shown (image/png, 2x3"),
        "{said}"
    );
    assert!(said.contains("vision = true"), "{said}");
    assert!(!sent.to_string().contains(&png_base64()[..40]));

    // Not an image: refused before anything starts, naming the file.
    let output = project
        .paddock(&["run", "x", "--base-url", &url, "--image", "vision.toml"])
        .await;
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("vision.toml"), "{}", text(&output));
}

/// The first agent step of the session's ATIF trajectory.
fn first_agent_step(session: &paddock::Session) -> Value {
    let trajectory = paddock::log::trajectory_of_log(session.log_path()).unwrap();
    let json = serde_json::to_value(&trajectory).unwrap();
    let steps = json["steps"].as_array().unwrap();
    steps
        .iter()
        .find(|s| s["source"] == "agent")
        .unwrap()
        .clone()
}

/// The first event of `kind` in the session's log.
fn first_event(project: &Project, session: &paddock::Session, kind: &str) -> Value {
    let events = project.events(session.id());
    events.into_iter().find(|e| e["type"] == kind).unwrap()
}

/// The request after a read_file of `path`, and the tool result's logged event.
async fn after_reading(project: &Project, server: &ScriptedServer) -> (Value, Value) {
    let session = start(project).await;
    let end = session.send("look", &Quiet).await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);
    let requests = server.requests();
    let sent = requests.last().unwrap().body.clone();
    (sent, first_event(project, &session, "tool/result"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_images_are_refused_with_a_reason_and_nothing_is_sent() {
    let cases: [(&str, &str); 3] = [
        ("big.png", "IMAGE_TOO_LARGE"),
        ("garbage.png", "IHDR"),
        ("escape.png", "error"),
    ];
    for (name, said) in cases {
        let reply = call_step("c1", "read_file", &format!(r#"{{"path": "{name}"}}"#));
        let server = server(vec![reply, Step::Reply(Turn::text(&["ok"]))]).await;
        let project = project(&server, "openai", Some(true));
        let dir = project.dir.path();
        // Over the bound: a PNG with 4 MB of trailing data.
        let mut big = png();
        big.resize(4_000_000, 0);
        std::fs::write(dir.join("big.png"), big).unwrap();
        // PNG magic on garbage.
        let mut garbage = png()[..8].to_vec();
        garbage.extend(b"not a png at all, just its signature");
        std::fs::write(dir.join("garbage.png"), garbage).unwrap();
        // A symlink to an image outside the mounts.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.png"), png()).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.png"), dir.join("escape.png"))
            .unwrap();

        let (sent, result) = after_reading(&project, &server).await;
        assert_eq!(result["data"]["is_error"], true, "{name}: {result}");
        let content = result["data"]["content"].as_str().unwrap();
        assert!(content.contains(said), "{name}: {content}");
        assert!(result["data"].get("images").is_none(), "{name}: {result}");
        assert!(!sent.to_string().contains("image_url"), "{name}: {sent}");
        let blobs = project
            .home
            .path()
            .join("sessions")
            .join(project.only_session())
            .join("blobs");
        assert!(!blobs.exists(), "{name}: nothing stored");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_reasoning_is_logged_and_becomes_the_atif_steps_reasoning_content() {
    let thinking = Turn {
        reasoning: vec!["The user wants ".into(), "a greeting.".into()],
        ..Turn::text(&["Hello."])
    };
    let server = server(vec![Step::Reply(thinking)]).await;
    let project = project(&server, "openai", None);
    let session = start(&project).await;
    let end = session.send("greet me", &Quiet).await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);
    let message = first_event(&project, &session, "assistant/message");
    assert_eq!(message["data"]["text"], "Hello.");
    assert_eq!(
        message["data"]["reasoning"][0]["text"],
        "The user wants a greeting."
    );
    let agent = first_agent_step(&session);
    assert_eq!(agent["reasoning_content"], "The user wants a greeting.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_signed_thinking_goes_back_before_the_tool_results_and_reaches_the_trajectory() {
    let thinking = Turn {
        reasoning: vec!["I should read ".into(), "the file.".into()],
        signature: Some("sig-abc123".into()),
        redacted: Some("opaque-bytes".into()),
        ..Turn::calls(vec![paddock_tests::scripted::ScriptCall::new(
            "toolu_1",
            "read_file",
            r#"{"path": "notes.txt"}"#,
            &[],
        )])
    };
    let server = server(vec![
        Step::Reply(thinking),
        Step::Reply(Turn::text(&["Done."])),
    ])
    .await;
    let project = project(&server, "anthropic", None);
    std::fs::write(project.dir.path().join("notes.txt"), "hello\n").unwrap();
    let session = start(&project).await;
    let end = session.send("read notes.txt", &Quiet).await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);

    let sent = &server.requests()[1].body;
    let assistant = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    let content = &assistant["content"];
    assert_eq!(content[0]["type"], "thinking", "{assistant}");
    assert_eq!(content[0]["thinking"], "I should read the file.");
    assert_eq!(content[0]["signature"], "sig-abc123");
    assert_eq!(content[1]["type"], "redacted_thinking");
    assert_eq!(content[1]["data"], "opaque-bytes");
    assert_eq!(content[2]["type"], "tool_use");

    let message = first_event(&project, &session, "assistant/message");
    assert_eq!(message["data"]["reasoning"][0]["signature"], "sig-abc123");
    assert_eq!(message["data"]["reasoning"][1]["kind"], "redacted");
    let agent = first_agent_step(&session);
    assert_eq!(
        agent["reasoning_content"],
        "I should read the file.\n\n[redacted thinking]"
    );
}

/// After a compaction, an image in the part it covered is not sent again: the summary request
/// (the session's next request, the instruction last) still carries it, so the summary can
/// say what it showed, and the requests after it carry the summary, not the image. Images in
/// the messages a compaction keeps are sent as before (docs/sessions.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_a_compaction_covered_is_summarized_with_it_and_not_sent_again() {
    let server = server(vec![
        read_pic(),
        Step::Reply(Turn::text(&["Red, green, blue."])),
        Step::Reply(Turn::text(&["Noted."])),
        Step::Reply(Turn::text(&[
            "SUMMARY: a 2x3 picture of three colours was read.",
        ])),
        Step::Reply(Turn::text(&["Fine."])),
    ])
    .await;
    let project = project(&server, "openai", Some(true));
    let path = project.dir.path().join("vision.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("max_retries = 0\n", "max_retries = 0\ncompact_keep = 1\n");
    std::fs::write(&path, text).unwrap();
    let session = start(&project).await;
    let url = format!("data:image/png;base64,{}", png_base64());
    for task in ["what colours are in pic.png?", "remember them"] {
        let end = session.send(task, &Quiet).await;
        assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);
    }
    assert!(server.requests()[2].body.to_string().contains(&url));
    let compaction = session.compact(None, &Quiet).await.expect("compacted");
    assert!(compaction.is_some(), "there was something to compact");
    let end = session.send("and now?", &Quiet).await;
    assert_eq!(end.reason, StopReason::Completed, "{:?}", end.detail);

    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let summary = requests[3].body.to_string();
    assert!(
        summary.contains("answer this message with a summary"),
        "{summary}"
    );
    assert!(
        summary.contains(&url),
        "the summary is written seeing the image"
    );
    let after = requests[4].body.to_string();
    assert!(after.contains("SUMMARY: a 2x3 picture"), "{after}");
    assert!(!after.contains(&png_base64()[..40]), "{after}");
}
