//! Exec `write` grants outside the mounts (`grants.exec.write`) through the real binary: the
//! directory a session's programs may write beside the project is recorded as a root of its
//! own, so `paddock rewind --code` puts it back byte for byte and `paddock diff` shows its
//! changes (by full path); and the attacks: a directory of the grant swapped for a symlink out
//! of it, a symlink planted there, the grant's own directory swapped, a hook planted and then
//! deleted: a forced rewind writes nothing outside and restores no hook.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::agent_common::{Project, call_step, text};
use paddock_test_tree::{Entry, copy};
use paddock_tests::scripted::{Script, ScriptedServer, Step, Turn};

/// A `coding` preset whose shell may also write `grant` (and asks nothing: `rm` runs as the
/// model says), in the project's data directory.
fn preset(project: &Project, grant: &Path) -> String {
    let preset = project.home.path().join("grant.toml");
    std::fs::write(
        &preset,
        format!(
            "extends = \"coding\"\n[plugins.shell.grants.exec]\nwrite = [{:?}]\n\
             allow = [\"*\"]\nask = [\"git push *\"]\n[approval]\nhigh = \"allow\"\n",
            grant.display().to_string()
        ),
    )
    .unwrap();
    preset.display().to_string()
}

fn shell(id: &str, command: &str) -> Step {
    call_step(
        id,
        "shell",
        &serde_json::json!({ "command": command }).to_string(),
    )
}

fn run_command(id: &str, program: &str, args: &[&str]) -> Step {
    call_step(
        id,
        "run_command",
        &serde_json::json!({ "program": program, "args": args }).to_string(),
    )
}

/// Runs one turn per entry of `turns` (the first `run`, the others `resume`), each its calls
/// then a reply, and returns the session's id with a copy of `grant` and of the project taken
/// as each turn began, and as the last ended.
async fn turns(
    project: &Project,
    preset: &str,
    grant: &Path,
    turns: Vec<Vec<Step>>,
) -> (
    String,
    Vec<(BTreeMap<PathBuf, Entry>, BTreeMap<PathBuf, Entry>)>,
) {
    let count = turns.len();
    let mut steps = Vec::new();
    for (i, calls) in turns.into_iter().enumerate() {
        steps.extend(calls);
        steps.push(Step::Reply(Turn::text(&[&format!("turn {} done", i + 1)])));
    }
    let server = ScriptedServer::start(Script { steps })
        .await
        .expect("scripted server");
    let url = server.openai_base_url();
    let mut copies = Vec::new();
    let mut id = String::new();
    for turn in 0..count {
        copies.push((copy(grant), copy(project.dir.path())));
        let message = format!("turn {}", turn + 1);
        let args = if turn == 0 {
            vec![
                "run",
                &message,
                "--preset",
                preset,
                "--base-url",
                &url,
                "--model",
                "scripted",
            ]
        } else {
            vec!["resume", &id, &message]
        };
        let out = project.paddock(&args).await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        id = project.only_session();
    }
    copies.push((copy(grant), copy(project.dir.path())));
    (id, copies)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_programs_write_in_an_exec_write_grant_is_rewound_and_diffed() {
    let project = Project::warm(&[("a.txt", "a\n")]);
    let cache = tempfile::tempdir().unwrap();
    let grant = cache.path().canonicalize().unwrap();
    std::fs::write(grant.join("kept.txt"), "there before\n").unwrap();
    let g = grant.display().to_string();
    let preset = preset(&project, &grant);
    let (id, copies) = turns(
        &project,
        &preset,
        &grant,
        vec![
            vec![
                shell(
                    "c1",
                    &format!(
                        "printf 'one\\n' > {g}/f.txt && mkdir -p {g}/d/e && printf 'bin\\000\\377' > {g}/d/e/b.bin && printf 'x\\n' > a.txt"
                    ),
                ),
                run_command("c2", "cp", &[&format!("{g}/f.txt"), &format!("{g}/d/copy.txt")]),
            ],
            vec![shell(
                "c3",
                &format!(
                    "printf 'two\\n' > {g}/f.txt && chmod 600 {g}/f.txt && ln -s f.txt {g}/link && mv {g}/kept.txt {g}/d/moved.txt && rm {g}/d/e/b.bin"
                ),
            )],
            vec![shell(
                "c4",
                &format!("rm -rf {g}/d && printf 'three\\n' > {g}/new.txt && chmod 755 {g}/new.txt"),
            )],
        ],
    )
    .await;
    let events = project.events(&id);
    let results: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "tool/result")
        .collect();
    assert_ne!(
        copies[1].0, copies[0].0,
        "the shell wrote in the grant: {results:?}"
    );
    assert_eq!(
        copies[2].0.get(Path::new("f.txt")),
        Some(&Entry::File(0o600, b"two\n".to_vec())),
        "{results:?}"
    );

    let roots = events
        .iter()
        .find(|e| e["type"] == "checkpoint")
        .map(|e| e["data"]["roots"].clone())
        .expect("a checkpoint event");
    assert!(
        roots
            .as_array()
            .is_some_and(|r| r.iter().any(|r| r == g.as_str())),
        "the checkpoint names the grant: {roots}"
    );

    let diff = project.paddock(&["diff", &id]).await;
    let said = String::from_utf8_lossy(&diff.stdout).into_owned();
    assert_eq!(diff.status.code(), Some(0), "{}", text(&diff));
    assert!(
        said.contains(&format!("+++ {g}/new.txt")) && said.contains("+three"),
        "{said}"
    );
    assert!(said.contains(&format!("--- {g}/kept.txt")), "{said}");
    assert!(
        said.contains("+++ b/a.txt"),
        "the project's paths stay relative: {said}"
    );
    let turn_two = project.paddock(&["diff", &id, "--turn", "2"]).await;
    let said = String::from_utf8_lossy(&turn_two.stdout).into_owned();
    assert!(said.contains("-one") && said.contains("+two"), "{said}");
    assert!(
        !said.contains("three"),
        "turn 3's change is not turn 2's: {said}"
    );

    for to in [2usize, 1, 3, 1] {
        let back = project
            .paddock(&["rewind", &id, "--to", &to.to_string(), "--code"])
            .await;
        let said = text(&back);
        assert_eq!(back.status.code(), Some(0), "{said}");
        assert_eq!(copy(&grant), copies[to - 1].0, "grant at turn {to}: {said}");
        assert_eq!(
            copy(project.dir.path()),
            copies[to - 1].1,
            "project at turn {to}: {said}"
        );
    }

    let log = project.paddock(&["log", &id]).await;
    let shown = text(&log);
    assert!(
        shown
            .lines()
            .any(|l| l.contains("checkpoint") && l.contains("records ") && l.contains(&g)),
        "{shown}"
    );
}

fn outside_dir() -> (tempfile::TempDir, BTreeMap<PathBuf, Entry>) {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.txt"), "outside\n").unwrap();
    std::fs::write(outside.path().join("g"), "outside g\n").unwrap();
    let before = copy(outside.path());
    (outside, before)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_rewind_of_a_grant_never_writes_outside_it_nor_restores_a_hook() {
    let project = Project::warm(&[("a.txt", "a\n")]);
    let cache = tempfile::tempdir().unwrap();
    let grant = cache.path().join("grant");
    std::fs::create_dir_all(grant.join("d")).unwrap();
    std::fs::write(grant.join("d/g"), "orig\n").unwrap();
    std::fs::create_dir_all(grant.join("repo/.git/hooks")).unwrap();
    std::fs::write(grant.join("repo/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        grant.join("repo/.git/hooks/pre-commit"),
        "#!/bin/sh\nevil\n",
    )
    .unwrap();
    let (outside, before) = outside_dir();
    // Planted before the session: a symlink out of the grant, recorded as a link.
    std::os::unix::fs::symlink(outside.path(), grant.join("esc")).unwrap();
    let g = grant.canonicalize().unwrap().display().to_string();
    let preset = preset(&project, &grant);
    let (id, _) = turns(
        &project,
        &preset,
        &grant,
        vec![
            vec![shell(
                "c1",
                &format!("printf 'changed\\n' > {g}/d/g && printf 'h\\n' > {g}/d/h && rm {g}/esc && mkdir {g}/esc"),
            )],
            vec![shell("c2", &format!("printf 'later\\n' > {g}/d/g"))],
        ],
    )
    .await;
    assert_eq!(
        copy(outside.path()),
        before,
        "the jail kept the shell inside"
    );

    // Between checkpoint and restore: `d` becomes a symlink out of the grant, a link to a
    // file outside is planted where the checkpoint has none, and the hook is deleted.
    std::fs::remove_dir_all(grant.join("d")).unwrap();
    std::os::unix::fs::symlink(outside.path(), grant.join("d")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("x.txt"), grant.join("planted")).unwrap();
    std::fs::remove_file(grant.join("repo/.git/hooks/pre-commit")).unwrap();
    let back = project
        .paddock(&["rewind", &id, "--to", "1", "--code", "--force"])
        .await;
    let said = text(&back);
    assert_eq!(back.status.code(), Some(0), "{said}");
    assert_eq!(copy(outside.path()), before, "{said}");
    assert!(!grant.join("repo/.git/hooks/pre-commit").exists(), "{said}");
    assert!(
        grant.join("esc").is_symlink(),
        "the planted link is put back as a link: {said}"
    );
    assert!(
        !grant.join("planted").exists() && !grant.join("planted").is_symlink(),
        "forced: a link the session did not have is removed (unlinked, never followed): {said}"
    );
    assert_eq!(
        std::fs::read_to_string(grant.join("d/g")).unwrap(),
        "orig\n",
        "the directory is made again in the grant: {said}"
    );

    // The grant's own directory swapped for a symlink out: nothing is written outside.
    let moved = cache.path().join("moved");
    std::fs::rename(&grant, &moved).unwrap();
    std::os::unix::fs::symlink(outside.path(), &grant).unwrap();
    let back = project
        .paddock(&["rewind", &id, "--to", "2", "--code", "--force"])
        .await;
    assert_eq!(copy(outside.path()), before, "{}", text(&back));
    // The session resolves the grant again as it starts: the path names another directory
    // now, so what the checkpoints recorded of the grant is not restored anywhere.
    let said = text(&back);
    assert_eq!(back.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!(
            "{g} was recorded by that checkpoint but this session does not hold it"
        )),
        "{said}"
    );
    let fork = project
        .paddock(&["fork", &id, "--at", "1", "--force"])
        .await;
    assert_eq!(copy(outside.path()), before, "{}", text(&fork));
}
