//! Rewind through the real binary: a session edits its workspace with `write_file` and the
//! confined shell (a binary file, a mode, a symlink, a rename, a nested directory) over two
//! turns, is killed (SIGKILL) in the middle of the second, and `paddock rewind` puts the
//! workspace back as it was when each turn began, byte for byte; a file the user changed
//! outside the session is kept (and named) unless `--force`; the `.git` directory is never
//! touched; `paddock diff` shows what a turn changed. The randomized harness of many rewinds
//! runs against the engine itself (`checkpoint/tests/rewind_random.rs`).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::agent_common::{Project, call_step, text};
use paddock_test_tree::{Entry, copy};
use paddock_tests::scripted::{Fault, Script, ScriptedServer, Step, Turn};

pub(crate) fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewind_puts_every_turns_workspace_back_across_a_kill_and_keeps_outside_changes() {
    let project = Project::warm(&[("a.txt", "one\n"), ("keep.txt", "kept\n")]);
    let root = project.dir.path().to_path_buf();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let shell = "mkdir -p sub/deep && printf 'bin\\000ary\\377' > sub/deep/b.bin && \
                 chmod 755 sub/deep/b.bin && ln -s a.txt link && mv keep.txt moved.txt";
    let server = ScriptedServer::start(Script {
        steps: vec![
            call_step("c1", "write_file", r#"{"path":"a.txt","content":"two\n"}"#),
            call_step(
                "c2",
                "shell",
                &serde_json::json!({ "command": shell }).to_string(),
            ),
            Step::Reply(Turn::text(&["Turn one done."])),
            call_step(
                "c3",
                "write_file",
                r#"{"path":"a.txt","content":"three\n"}"#,
            ),
            Step::Reply(
                Turn::text(&["never ", "finished"]).with_fault(Fault::StallAfter {
                    frames: 1,
                    ms: 120_000,
                }),
            ),
        ],
    })
    .await
    .expect("scripted server");
    let url = server.openai_base_url();
    let at_turn_1 = copy(&root);
    let run = project
        .paddock(&[
            "run",
            "first",
            "--preset",
            "coding",
            "--base-url",
            &url,
            "--model",
            "scripted",
            "--on-ask",
            "allow",
        ])
        .await;
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    let id = project.only_session();
    let at_turn_2 = copy(&root);
    assert!(
        matches!(at_turn_2.get(Path::new("link")), Some(Entry::Link(_))),
        "{at_turn_2:?}"
    );
    assert_eq!(
        at_turn_2.get(Path::new("sub/deep/b.bin")),
        Some(&Entry::File(0o755, b"bin\0ary\xff".to_vec()))
    );

    // Turn two writes, then the process is killed while the model answers.
    let mut child = project.command(&["resume", &id, "second"]).spawn().unwrap();
    wait_for("turn two's write", || {
        std::fs::read_to_string(root.join("a.txt")).is_ok_and(|t| t == "three\n")
    });
    child.kill().unwrap();
    child.wait().unwrap();

    // The first rewind after the kill counts turn two's changes as the session's (it says
    // so), and goes back to where turn two began.
    let after_kill = project
        .paddock(&["rewind", &id, "--to", "2", "--code"])
        .await;
    let said = text(&after_kill);
    assert_eq!(after_kill.status.code(), Some(0), "{said}");
    assert!(said.contains("turn 2 ended without a checkpoint"), "{said}");
    assert_eq!(copy(&root), at_turn_2, "{said}");

    // The user edits a file outside the session.
    std::fs::write(root.join("moved.txt"), "the user's edit\n").unwrap();
    let hook_before = std::fs::read_dir(root.join(".git/hooks")).unwrap().count();

    let back = project
        .paddock(&["rewind", &id, "--to", "1", "--code"])
        .await;
    let said = text(&back);
    assert_eq!(back.status.code(), Some(0), "{said}");
    assert!(
        said.contains("kept moved.txt") && said.contains("--force"),
        "{said}"
    );
    let mut want = at_turn_1.clone();
    want.insert(
        "moved.txt".into(),
        Entry::File(0o644, b"the user's edit\n".to_vec()),
    );
    let got = copy(&root);
    assert_eq!(got.get(Path::new("a.txt")), want.get(Path::new("a.txt")));
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{said}"
    );
    assert_eq!(
        std::fs::read_dir(root.join(".git/hooks")).unwrap().count(),
        hook_before
    );

    let forced = project
        .paddock(&["rewind", &id, "--to", "1", "--force", "--code"])
        .await;
    assert_eq!(forced.status.code(), Some(0), "{}", text(&forced));
    assert_eq!(copy(&root), at_turn_1, "{}", text(&forced));

    let again = project
        .paddock(&["rewind", &id, "--to", "2", "--code"])
        .await;
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert_eq!(copy(&root), at_turn_2, "{}", text(&again));

    let diff = project.paddock(&["diff", &id, "--turn", "1"]).await;
    let shown = text(&diff);
    assert_eq!(diff.status.code(), Some(0), "{shown}");
    assert!(shown.contains("-one") && shown.contains("+two"), "{shown}");
    assert!(
        shown.contains("Binary files /dev/null and b/sub/deep/b.bin differ"),
        "{shown}"
    );

    let none = project
        .paddock(&["rewind", &id, "--to", "9", "--code"])
        .await;
    assert_eq!(none.status.code(), Some(1), "{}", text(&none));
    assert!(
        text(&none).contains("turn 9 has no checkpoint"),
        "{}",
        text(&none)
    );
    let log: Vec<String> = project
        .events(&id)
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(log.iter().filter(|t| *t == "rewind").count(), 4, "{log:?}");
}

/// `[checkpoints] grain = "call"`: a checkpoint before every call that is not idempotent
/// (`edit_file`, the shell; not `write_file`, which may run twice), logged with the call's id,
/// and `paddock rewind --call ID` puts the files back as they were just before that call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_call_grain_checkpoints_before_each_unrepeatable_call_and_rewinds_to_one() {
    let project = Project::warm(&[("a.txt", "one\n")]);
    let root = project.dir.path().to_path_buf();
    let preset = project.home.path().join("per-call.toml");
    std::fs::write(
        &preset,
        "extends = \"coding\"\n[checkpoints]\ngrain = \"call\"\n",
    )
    .unwrap();
    let server = ScriptedServer::start(Script {
        steps: vec![
            call_step(
                "c1",
                "edit_file",
                r#"{"path":"a.txt","old_string":"one","new_string":"two"}"#,
            ),
            call_step(
                "c2",
                "write_file",
                r#"{"path":"a.txt","content":"three\n"}"#,
            ),
            call_step(
                "c3",
                "shell",
                r#"{"command":"printf 'four\\n' > a.txt && mkdir -p new && printf x > new/f"}"#,
            ),
            Step::Reply(Turn::text(&["Done."])),
        ],
    })
    .await
    .expect("scripted server");
    let url = server.openai_base_url();
    let preset = preset.display().to_string();
    let run = project
        .paddock(&[
            "run",
            "go",
            "--preset",
            &preset,
            "--base-url",
            &url,
            "--model",
            "scripted",
        ])
        .await;
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    let id = project.only_session();
    let read = || std::fs::read_to_string(root.join("a.txt")).unwrap();
    assert_eq!(read(), "four\n");
    let before_calls: Vec<String> = project
        .events(&id)
        .iter()
        .filter(|e| e["type"] == "checkpoint")
        .filter_map(|e| e["data"]["call"].as_str().map(str::to_string))
        .collect();
    assert_eq!(before_calls, ["c1", "c3"]);

    let back = project.paddock(&["rewind", &id, "--call", "c3"]).await;
    let said = text(&back);
    assert_eq!(back.status.code(), Some(0), "{said}");
    assert!(said.contains("just before call c3"), "{said}");
    assert_eq!(read(), "three\n");
    assert!(!root.join("new").exists(), "{said}");

    let back = project.paddock(&["rewind", &id, "--call", "c1"]).await;
    assert_eq!(back.status.code(), Some(0), "{}", text(&back));
    assert_eq!(read(), "one\n");

    let none = project.paddock(&["rewind", &id, "--call", "c2"]).await;
    assert_eq!(none.status.code(), Some(1), "{}", text(&none));
    assert!(
        text(&none).contains("only calls that are not idempotent"),
        "{}",
        text(&none)
    );
    let both = project
        .paddock(&["rewind", &id, "--call", "c1", "--to", "1"])
        .await;
    assert_eq!(both.status.code(), Some(2), "{}", text(&both));

    // The turn's own checkpoints are still there: the end of turn 1 is where c3 left it.
    let forward = project
        .paddock(&["rewind", &id, "--to", "1", "--code"])
        .await;
    assert_eq!(forward.status.code(), Some(0), "{}", text(&forward));
    assert_eq!(read(), "one\n");
}

/// A `grants.exec.write` directory outside the writable mounts is checkpointed
/// (`rewind_grants.rs`): `preset check` names only the entries checkpoints cannot record (one
/// that does not exist, a file) and, with `[checkpoints] grants = false`, every one outside
/// the mounts; never one inside the mount.
#[test]
fn preset_check_names_exec_write_grants_a_rewind_does_not_cover() {
    let project = Project::new(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (cache, file, missing) = (
        dir.path().join("cache"),
        dir.path().join("token"),
        dir.path().join("missing"),
    );
    std::fs::create_dir(&cache).unwrap();
    std::fs::write(&file, "t").unwrap();
    let grants = format!(
        "extends = \"coding\"\n[plugins.shell.grants.exec]\nwrite = [{:?}, {:?}, {:?}, \"./target\"]\n",
        cache.display().to_string(),
        file.display().to_string(),
        missing.display().to_string()
    );
    let check = |preset: &str| {
        std::fs::write(project.dir.path().join("grants.toml"), preset).unwrap();
        let checked = project
            .command(&["preset", "check", "grants.toml"])
            .output()
            .unwrap();
        assert_eq!(
            checked.status.code(),
            Some(0),
            "a warning: {}",
            text(&checked)
        );
        text(&checked)
    };
    let said = check(&grants);
    let named =
        |path: &std::path::Path| format!("`{}` is outside the writable mounts", path.display());
    assert!(
        !said.contains(&named(&cache)),
        "a directory is recorded: {said}"
    );
    assert!(
        said.contains(&named(&file)) && said.contains("it is a file"),
        "{said}"
    );
    assert!(
        said.contains(&named(&missing)) && said.contains("it does not exist"),
        "{said}"
    );
    assert!(!said.contains("`./target` is outside"), "{said}");

    let said = check(&format!("{grants}[checkpoints]\ngrants = false\n"));
    assert!(
        said.contains(&named(&cache)) && said.contains("grants = false` leaves it out"),
        "{said}"
    );
    assert!(!said.contains("`./target` is outside"), "{said}");
}
