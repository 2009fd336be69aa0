//! `cargo xtask bench agents`: what a subagent and the skills listing cost.
//!
//! - `spawn_p50_ms`: a `task` call through a session's pipeline, from the call to its result:
//!   the containment proof, the child's preset loaded and its log started, one model turn
//!   answered at once by a scripted server on this machine, the final answer read back;
//! - `proof_p50_us`: the containment proof alone (`grants::within` of two presets' grants);
//! - `skills100_tokens`: the estimated prompt tokens the listing of 100 installed skills adds
//!   to every request (names and descriptions only; each description about 150 characters,
//!   a typical length among published skills).
//!
//! Ends with one line: `BENCH spawn_p50_ms=… proof_p50_us=… skills100_tokens=…`.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use std::sync::Arc;
use std::time::Instant;

use common::{micros, percentile};
use paddock::grants::{effective, within};
use paddock::pipeline::RawCall;
use paddock::preset::ResolveContext;
use paddock::session::{Env, Session};
use paddock_scripted::{ScriptedServer, Step, Turn};
use tokio_util::sync::CancellationToken;

const ROUNDS: usize = 60;
const WARMUP: usize = 5;

fn main() {
    common::block_on(run());
}

async fn run() {
    let server =
        ScriptedServer::start_responder(Arc::new(|_, _| Step::Reply(Turn::text(&["done"]))))
            .await
            .expect("scripted server");
    let work = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("tempdir");
    let preset = work.path().join("parent.toml");
    std::fs::write(
        &preset,
        format!(
            "[model]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"{}\"\n\n\
             [limits]\nmax_turns = 100000\nmax_tokens = 100000000\n\n\
             [plugins.fs]\nsource = \"builtin:fs\"\nmounts = [{{ host = \".\", guest = \"/workspace\", mode = \"ro\" }}]\n",
            server.openai_base_url()
        ),
    )
    .expect("preset");
    let env = Env::at(home.path().to_path_buf(), work.path().to_path_buf()).expect("env");
    let session = Session::builder(env)
        .preset(&preset.display().to_string())
        .client("tool-call")
        .start()
        .await
        .expect("session");
    let mut spawns = Vec::new();
    for round in 0..ROUNDS + WARMUP {
        let call = RawCall {
            id: format!("t{round}"),
            name: "task".into(),
            arguments: r#"{"description":"bench","prompt":"say done"}"#.into(),
        };
        let started = Instant::now();
        let record = session
            .call(call, CancellationToken::new())
            .await
            .expect("call");
        let elapsed = started.elapsed();
        match &record.result {
            Ok(out) => assert!(out.content.contains("done"), "{}", out.content),
            Err(e) => panic!("the task call failed: {}", e.message),
        }
        if round >= WARMUP {
            spawns.push(elapsed);
        }
    }

    let file = paddock::preset::load(&preset.display().to_string()).expect("preset");
    let cx = ResolveContext {
        cwd: work.path(),
        data_dir: home.path(),
        spill: None,
        mount_override: None,
    };
    let resolved = file.resolve("parent", &cx).expect("resolves");
    let mut proofs = Vec::new();
    for _ in 0..1000 {
        let started = Instant::now();
        let parent = effective(&resolved, 0, home.path());
        let child = effective(&resolved, 1, home.path());
        within(&parent, &child).expect("the same preset is within itself");
        proofs.push(started.elapsed());
    }

    let skills = tempfile::tempdir().expect("tempdir");
    for i in 0..100 {
        let dir = skills.path().join(format!("skill-{i:03}"));
        std::fs::create_dir_all(&dir).expect("skill dir");
        std::fs::write(
            dir.join("SKILL.md"),
            format!(
                "---\nname: skill-{i:03}\ndescription: Extract text and tables from PDF files, \
                 fill forms and merge documents. Use when the task mentions PDFs, forms or \
                 scanned documents (set {i}).\n---\nInstructions.\n"
            ),
        )
        .expect("SKILL.md");
    }
    let found = paddock::skills::discover(&[(
        paddock::skills::SkillOrigin::User,
        skills.path().to_path_buf(),
    )]);
    assert_eq!(found.skills.len(), 100);
    let tokens = paddock::skills::listing_tokens(&paddock::skills::listing(&found.skills));

    let spawn_p50 = percentile(&mut spawns, 0.5);
    let proof_p50 = percentile(&mut proofs, 0.5);
    println!(
        "task call (child spawned, one scripted turn) p50 {:.1} ms p90 {:.1} ms ({ROUNDS} calls); \
         proof p50 {:.1} us; 100 skills listed: ~{tokens} tokens per request",
        micros(spawn_p50) / 1000.0,
        micros(percentile(&mut spawns, 0.9)) / 1000.0,
        micros(proof_p50),
    );
    println!(
        "BENCH spawn_p50_ms={:.2} proof_p50_us={:.1} skills100_tokens={tokens}",
        micros(spawn_p50) / 1000.0,
        micros(proof_p50),
    );
}
