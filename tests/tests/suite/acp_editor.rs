//! What an editor sends `paddock acp` beyond text, driven by the protocol's Rust SDK client as
//! `acp.rs` drives it: images in a prompt (offered only when the model has vision, decoded and
//! checked as `run --image` checks a file, the hostile ones refused with the reason) and the
//! MCP servers an editor passes with `session/new`, each refused in the thread with the way to
//! give the session one (the preset's `[mcp.NAME]`), nothing of theirs started. Modes (in
//! `acp_modes.rs`).

use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    ContentBlock, EnvVariable, ImageContent, McpServer, McpServerHttp, McpServerStdio,
    NewSessionRequest, PromptRequest, TextContent,
};
use paddock_tests::scripted::{Script, ScriptedServer, Step, Turn};

use crate::acp::{Seen, as_client, initialize, prompt_to_the_end, spawn_acp, spawn_acp_with, text};
use crate::agent_common::Project;
use crate::model_images::{PNG_HEX, png};

fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A prompt of `words` and one image block.
fn with_image(words: &str, data: String, mime: &str) -> Vec<ContentBlock> {
    vec![
        ContentBlock::Text(TextContent::new(words)),
        ContentBlock::Image(ImageContent::new(data, mime)),
    ]
}

/// The preset `vision.toml` in the project's data directory: `read_file`, its model the
/// scripted server's (no key) with `vision` as given.
fn vision_preset(project: &Project, server: &ScriptedServer, vision: bool) -> String {
    let preset = project.home.path().join("vision.toml");
    std::fs::write(
        &preset,
        format!(
            "name = \"vision\"\n\n[model]\nprovider = \"openai\"\nmodel = \"scripted\"\n\
             base_url = \"{}\"\nmax_retries = 0\nvision = {vision}\n\n\
             [plugins.fs]\nsource = \"builtin:fs\"\n\
             mounts = [{{ host = \".\", guest = \"/workspace\", mode = \"ro\" }}]\n",
            server.openai_base_url()
        ),
    )
    .unwrap();
    preset.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_in_a_prompt_reaches_a_vision_model_and_hostile_ones_are_refused() {
    let project = Project::warm(&[]);
    let server = ScriptedServer::start(Script {
        steps: vec![Step::Reply(Turn::text(&["A tiny picture."]))],
    })
    .await
    .unwrap();
    let preset = vision_preset(&project, &server, true);
    let mut child = spawn_acp_with(&project, &["acp", "--preset", &preset]);
    let cwd = project.dir.path().to_path_buf();
    let refusals = Arc::new(Mutex::new(Vec::new()));
    let refused = Arc::clone(&refusals);
    as_client(&mut child, Arc::new(Seen::default()), async move |cx| {
        let init = cx.send_request(initialize()).block_task().await?;
        assert!(init.agent_capabilities.prompt_capabilities.image);
        let id = cx
            .send_request(NewSessionRequest::new(cwd))
            .block_task()
            .await?
            .session_id;
        // Hostile images first: none reaches the model, each refusal says why.
        let mut garbage = b"\x89PNG\r\n\x1a\n".to_vec();
        garbage.extend_from_slice(&[0x41; 64]);
        let oversized = "A".repeat(6 << 20);
        let hostile = [
            with_image("garbage", base64(&garbage), "image/png"),
            with_image("lying", base64(&png()), "image/jpeg"),
            with_image("huge", oversized, "image/png"),
            with_image("not base64", "!!!".into(), "image/png"),
        ];
        for prompt in hostile {
            let answer = cx
                .send_request(PromptRequest::new(id.clone(), prompt))
                .block_task()
                .await;
            let error = answer.expect_err("a hostile image is refused");
            refused.lock().unwrap().push(error.message);
        }
        let nine: Vec<ContentBlock> = with_image("nine", base64(&png()), "image/png")
            .into_iter()
            .chain(
                (0..8).map(|_| ContentBlock::Image(ImageContent::new(base64(&png()), "image/png"))),
            )
            .collect();
        let error = cx
            .send_request(PromptRequest::new(id.clone(), nine))
            .block_task()
            .await
            .expect_err("nine images are refused");
        refused.lock().unwrap().push(error.message);

        let image = with_image("what is this?", base64(&png()), "image/png");
        prompt_to_the_end(&cx, id, image).await?;
        Ok(())
    })
    .await;
    assert!(child.wait().await.unwrap().success());

    let refusals = refusals.lock().unwrap().clone();
    let wanted = [
        "image 1 of the prompt was refused: it starts like a PNG image but is not one",
        "image 1 of the prompt says mimeType `image/jpeg` but its bytes are image/png",
        "image 1 of the prompt was refused: the image is",
        "image 1 of the prompt was refused: its image data is not valid base64",
        "the prompt has more than 8 images",
    ];
    assert_eq!(refusals.len(), wanted.len(), "{refusals:?}");
    for (got, want) in refusals.iter().zip(wanted) {
        assert!(
            got.starts_with(want),
            "{got:?} does not start with {want:?}"
        );
    }
    // Only the good prompt reached the model: its user message carries the PNG as OpenAI's
    // data URL, after the text.
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let user = requests[0].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "user")
        .cloned()
        .expect("a user message");
    let parts = user["content"].as_array().expect("parts");
    assert_eq!(parts[0]["type"], "text", "{user}");
    assert_eq!(parts[0]["text"], "what is this?", "{user}");
    assert_eq!(parts[1]["type"], "image_url", "{user}");
    assert_eq!(
        parts[1]["image_url"]["url"],
        format!("data:image/png;base64,{}", base64(&png())),
        "{user}"
    );
    // The log names the image by hash, its bytes in the session's blobs.
    let session = project.only_session();
    let sha = paddock_types::stamp::sha256_hex(&png());
    let blob = project
        .home
        .path()
        .join("sessions")
        .join(&session)
        .join("blobs")
        .join(&sha);
    let stored: String = std::fs::read(&blob)
        .unwrap()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(stored, PNG_HEX);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_without_vision_is_offered_no_images_and_an_image_prompt_is_refused() {
    let project = Project::warm(&[]);
    let server = ScriptedServer::start(Script::default()).await.unwrap();
    // `--base-url` to a server that is not OpenAI's: not known to see images.
    let mut child = spawn_acp(&project, &server);
    let cwd = project.dir.path().to_path_buf();
    let said = Arc::new(Mutex::new(String::new()));
    let out = Arc::clone(&said);
    as_client(&mut child, Arc::new(Seen::default()), async move |cx| {
        let init = cx.send_request(initialize()).block_task().await?;
        assert!(!init.agent_capabilities.prompt_capabilities.image);
        let id = cx
            .send_request(NewSessionRequest::new(cwd))
            .block_task()
            .await?
            .session_id;
        let error = cx
            .send_request(PromptRequest::new(
                id,
                with_image("what is this?", base64(&png()), "image/png"),
            ))
            .block_task()
            .await
            .expect_err("refused");
        *out.lock().unwrap() = error.message;
        Ok(())
    })
    .await;
    assert!(child.wait().await.unwrap().success());
    let said = said.lock().unwrap().clone();
    assert!(
        said.contains("no image: the model new sessions start with takes no images"),
        "{said}"
    );
    assert!(server.requests().is_empty());
}

/// The editor's MCP servers (Zed sends every context server the user configured) are not
/// started: a stdio one would run the editor's command and an http one reach the editor's
/// host, neither checked by the preset's verdict nor pinned by `paddock.lock`. Each is named in
/// the thread with the way to have it (a preset's `[mcp.NAME]`, picked as the mode), and the
/// session works on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_servers_the_editor_passes_are_refused_in_the_thread_and_none_is_started() {
    let project = Project::warm(&[]);
    let server = ScriptedServer::start(Script {
        steps: vec![Step::Reply(Turn::text(&["Hello."]))],
    })
    .await
    .unwrap();
    let planted = project.dir.path().join("planted-by-editor-server");
    let seen = Arc::new(Seen::default());
    let mut child = spawn_acp(&project, &server);
    let cwd = project.dir.path().to_path_buf();
    let command = format!("touch {}", planted.display());
    as_client(&mut child, Arc::clone(&seen), async move |cx| {
        cx.send_request(initialize()).block_task().await?;
        let servers = vec![
            McpServer::Stdio(
                McpServerStdio::new("planter", "/bin/sh")
                    .args(vec!["-c".into(), command])
                    .env(vec![EnvVariable::new("SECRET", "s3cret")]),
            ),
            McpServer::Http(McpServerHttp::new(
                "remote\nforged line",
                "http://127.0.0.1:9/mcp",
            )),
        ];
        let id = cx
            .send_request(NewSessionRequest::new(cwd).mcp_servers(servers))
            .block_task()
            .await?
            .session_id;
        prompt_to_the_end(&cx, id, text("hi")).await?;
        Ok(())
    })
    .await;
    assert!(child.wait().await.unwrap().success());
    assert!(!planted.exists(), "the editor's stdio server ran");
    let said = seen.said();
    assert!(
        said.contains("[paddock: MCP server `planter` from the editor was not connected"),
        "{said}"
    );
    assert!(said.contains("`remote forged line`"), "{said}");
    assert!(said.contains("[mcp.NAME]"), "{said}");
    assert!(!said.contains("s3cret"), "{said}");
    assert!(said.contains("Hello."), "{said}");
    // The tools offered to the model are the preset's alone.
    let requests = server.requests();
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"read_file"), "{tools:?}");
    assert!(
        !tools
            .iter()
            .any(|t| t.contains("planter") || t.contains("remote")),
        "{tools:?}"
    );
}
