//! Attacks on rewind and fork through the real binary: a directory of the mount swapped for a
//! symlink to a directory outside it before a forced rewind or fork (nothing outside may be
//! written or removed); git directories and hooks planted in the project (never restored,
//! even after the user deleted them); a session log edited by hand (a fork of it fails, says
//! why, and leaves no half-made session).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::agent_common::{Project, call_step, text};
use paddock_test_tree::{Entry, copy};
use paddock_tests::scripted::{Script, ScriptedServer, Step, Turn};

fn write(id: &str, path: &str, content: &str) -> Step {
    call_step(
        id,
        "write_file",
        &serde_json::json!({ "path": path, "content": content }).to_string(),
    )
}

/// One turn of `steps` in a `coding` session of `project`; returns its id.
async fn one_turn(project: &Project, steps: Vec<Step>) -> String {
    let mut steps = steps;
    steps.push(Step::Reply(Turn::text(&["Done."])));
    let server = ScriptedServer::start(Script { steps })
        .await
        .expect("scripted server");
    let url = server.openai_base_url();
    let run = project
        .paddock(&[
            "run",
            "go",
            "--preset",
            "coding",
            "--base-url",
            &url,
            "--model",
            "scripted",
        ])
        .await;
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    project.only_session()
}

fn outside_dir() -> (tempfile::TempDir, BTreeMap<PathBuf, Entry>) {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.txt"), "outside\n").unwrap();
    std::fs::write(outside.path().join("keep.txt"), "outside too\n").unwrap();
    let before = copy(outside.path());
    (outside, before)
}

fn swap_for_link(root: &Path, outside: &Path) {
    let sub = root.join("sub");
    if sub.is_symlink() {
        std::fs::remove_file(&sub).unwrap();
    } else if sub.exists() {
        std::fs::remove_dir_all(&sub).unwrap();
    }
    std::os::unix::fs::symlink(outside, &sub).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_rewind_or_fork_never_writes_through_a_directory_swapped_for_a_link_out() {
    let project = Project::warm(&[("a.txt", "a\n")]);
    let root = project.dir.path().to_path_buf();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/x.txt"), "orig\n").unwrap();
    let id = one_turn(
        &project,
        vec![
            write("c1", "sub/x.txt", "changed\n"),
            write("c2", "sub/y.txt", "created\n"),
        ],
    )
    .await;
    let (outside, before) = outside_dir();

    swap_for_link(&root, outside.path());
    let rewind = project
        .paddock(&["rewind", &id, "--to", "1", "--code", "--force"])
        .await;
    assert_eq!(copy(outside.path()), before, "{}", text(&rewind));
    if !root.join("sub").is_symlink() {
        assert_eq!(
            std::fs::read_to_string(root.join("sub/x.txt")).unwrap(),
            "orig\n",
            "{}",
            text(&rewind)
        );
    }

    swap_for_link(&root, outside.path());
    let fork = project
        .paddock(&["fork", &id, "--at", "1", "--force"])
        .await;
    assert_eq!(copy(outside.path()), before, "{}", text(&fork));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_git_directories_and_hooks_are_never_restored_by_a_rewind_or_a_fork() {
    let project = Project::warm(&[("a.txt", "a\n")]);
    let root = project.dir.path().to_path_buf();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(root.join(".git/hooks/pre-commit"), "#!/bin/sh\ncurl evil\n").unwrap();
    // A directory git would take for a repository, under another name, with a hook.
    for dir in ["vendor/lib/objects", "vendor/lib/refs", "vendor/lib/hooks"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    std::fs::write(root.join("vendor/lib/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        root.join("vendor/lib/hooks/post-checkout"),
        "#!/bin/sh\nevil\n",
    )
    .unwrap();
    let id = one_turn(&project, vec![write("c1", "a.txt", "b\n")]).await;

    // The user deletes what was planted; no rewind or fork may bring it back.
    std::fs::remove_file(root.join(".git/hooks/pre-commit")).unwrap();
    std::fs::remove_dir_all(root.join("vendor/lib")).unwrap();
    let rewind = project
        .paddock(&["rewind", &id, "--to", "1", "--code", "--force"])
        .await;
    assert_eq!(rewind.status.code(), Some(0), "{}", text(&rewind));
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "a\n");
    let fork = project
        .paddock(&["fork", &id, "--at", "1", "--force"])
        .await;
    assert_eq!(fork.status.code(), Some(0), "{}", text(&fork));
    for (what, out) in [("rewind", &rewind), ("fork", &fork)] {
        assert!(
            !root.join(".git/hooks/pre-commit").exists(),
            "the {what} restored a hook: {}",
            text(out)
        );
        assert!(
            !root.join("vendor/lib").exists(),
            "the {what} restored a git directory: {}",
            text(out)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_of_a_log_edited_by_hand_fails_clearly_and_leaves_nothing() {
    let project = Project::warm(&[("a.txt", "a\n")]);
    let id = one_turn(&project, vec![write("c1", "a.txt", "b\n")]).await;
    let log = project.log_path(&id);
    let original = std::fs::read_to_string(&log).unwrap();
    let files_before = copy(project.dir.path());

    // A result for a call the model never made.
    let edited = original.replacen("\"id\":\"c1\",\"content\"", "\"id\":\"c9\",\"content\"", 1);
    assert_ne!(edited, original, "the edit applies");
    std::fs::write(&log, &edited).unwrap();
    let fork = project.paddock(&["fork", &id, "--at", "1"]).await;
    let said = text(&fork);
    assert_ne!(fork.status.code(), Some(0), "{said}");
    assert!(
        said.contains("does not read as paddock wrote it") && said.contains("nothing was forked"),
        "{said}"
    );
    assert_eq!(project.sessions(), [id.as_str()], "no session was made");

    // A checkpoint id that names nothing in the store.
    let checkpoint = project
        .events(&id)
        .iter()
        .find(|e| e["type"] == "checkpoint")
        .and_then(|e| e["data"]["id"].as_str().map(str::to_string))
        .expect("a checkpoint");
    let forged = original.replace(&checkpoint, &"0".repeat(64));
    std::fs::write(&log, &forged).unwrap();
    let fork = project.paddock(&["fork", &id, "--at", "1"]).await;
    let said = text(&fork);
    assert_ne!(fork.status.code(), Some(0), "{said}");
    assert_eq!(
        project.sessions(),
        [id.as_str()],
        "no half-made fork stays: {said}"
    );
    assert_eq!(
        copy(project.dir.path()),
        files_before,
        "nothing was restored: {said}"
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        forged,
        "the log is only read"
    );
}
