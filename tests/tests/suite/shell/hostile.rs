//! A hostile shell, through the binary: its processes cannot write outside their mounts or
//! into a read-only one, cannot leave a git hook or repository that the user's own git then
//! runs (not even from a job that plants after its call returned), and die with paddock even
//! when paddock is killed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{ALLOW_ALL, Scene};

fn random() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{nanos}", std::process::id())
}

#[test]
fn the_shell_cannot_write_outside_its_mounts() {
    let scene = Scene::new(&[]);
    let tag = random();
    let home = PathBuf::from(std::env::var_os("HOME").expect("HOME"));
    let answers = scene.shell(&[
        &format!("echo x > \"$HOME/pwned-{tag}\"; echo \"home $?\""),
        &format!("echo x > /tmp/outside-{tag}; echo \"tmp $?\""),
        "echo private > \"$TMPDIR/inside\" && cat \"$TMPDIR/inside\"",
        "echo x > /etc/pwned; echo \"etc $?\"",
    ]);
    assert_eq!(
        answers[0].output().lines().last(),
        Some("home 1"),
        "{:?}",
        answers[0]
    );
    assert_eq!(
        answers[1].output().lines().last(),
        Some("tmp 1"),
        "{:?}",
        answers[1]
    );
    assert_eq!(
        answers[2].output(),
        "private\n",
        "the private TMPDIR is writable"
    );
    assert_eq!(
        answers[3].output().lines().last(),
        Some("etc 1"),
        "{:?}",
        answers[3]
    );
    for path in [
        home.join(format!("pwned-{tag}")),
        PathBuf::from(format!("/tmp/outside-{tag}")),
        PathBuf::from("/etc/pwned"),
    ] {
        assert!(!path.exists(), "{} was written", path.display());
    }
}

#[test]
fn a_read_only_mount_stays_read_only_for_the_shell() {
    let scene = Scene::with(&[("README.md", "original\n")], "ro", ALLOW_ALL, "");
    let answers = scene.shell(&[
        "echo changed > README.md",
        "touch new.txt",
        "mkdir made",
        "rm -f README.md",
        "cat README.md",
    ]);
    for answer in &answers[..4] {
        assert_ne!(answer.status(), Some(0), "{answer:?}");
        assert!(
            answer.output().contains("Read-only file system")
                || answer.output().contains("Permission denied"),
            "{answer:?}"
        );
    }
    assert_eq!(answers[4].output(), "original\n");
    let root = scene.root();
    assert_eq!(
        std::fs::read_to_string(root.join("README.md")).unwrap(),
        "original\n"
    );
    assert!(!root.join("new.txt").exists() && !root.join("made").exists());
}

/// `git` as the user runs it, unconfined, with the test's own home.
fn user_git(dir: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_DIR")
        .output()
        .expect("git")
}

fn git_ok(dir: &Path, home: &Path, args: &[&str]) {
    let out = user_git(dir, home, args);
    assert!(
        out.status.success(),
        "git {args:?} in {}: {out:?}",
        dir.display()
    );
}

/// A repository with one commit, as the user has it.
fn repository(dir: &Path, home: &Path) {
    git_ok(dir, home, &["init", "-q", "."]);
    git_ok(dir, home, &["config", "user.name", "user"]);
    git_ok(dir, home, &["config", "user.email", "user@example.com"]);
    git_ok(dir, home, &["add", "-A"]);
    git_ok(dir, home, &["commit", "-qm", "first"]);
}

/// A pre-commit hook that leaves `marker`.
fn hook(marker: &Path) -> String {
    format!("#!/bin/sh\ntouch {}\n", marker.display())
}

#[test]
fn the_shell_cannot_plant_a_hook_the_users_git_commit_runs() {
    let outside = tempfile::tempdir().unwrap();
    let home = outside.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let marker = outside.path().join("hook-ran");
    let planted = hook(&marker).replace('\n', "\\n");

    // Control: the same hook, written by the test, runs on the user's commit.
    let control = outside.path().join("control");
    std::fs::create_dir_all(&control).unwrap();
    std::fs::write(control.join("README.md"), "hello\n").unwrap();
    repository(&control, &home);
    let hook_file = control.join(".git/hooks/pre-commit");
    std::fs::write(&hook_file, hook(&marker)).unwrap();
    let mut perms = std::fs::metadata(&hook_file).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&hook_file, perms).unwrap();
    git_ok(
        &control,
        &home,
        &["commit", "-q", "--allow-empty", "-m", "control"],
    );
    assert!(
        marker.exists(),
        "the control hook did not run: the plant proves nothing"
    );
    std::fs::remove_file(&marker).unwrap();

    let scene = Scene::new(&[("README.md", "hello\n")]);
    let root = scene.root();
    repository(&root, &home);
    let answers = scene.shell(&[
        &format!(
            "mkdir -p .git/hooks; printf '{planted}' > .git/hooks/pre-commit; \
             chmod +x .git/hooks/pre-commit"
        ),
        &format!(
            "mkdir sub && cd sub && git init -q && printf '{planted}' > .git/hooks/pre-commit \
             && chmod +x .git/hooks/pre-commit && echo planted"
        ),
        "cd ..; pwd",
    ]);
    assert_ne!(answers[0].status(), Some(0), "{:?}", answers[0]);
    assert!(
        answers[0].output().contains("Read-only file system"),
        "{:?}",
        answers[0]
    );
    assert!(
        answers[1].output().contains("planted"),
        "inside the call, the new repository was writable: {:?}",
        answers[1]
    );
    assert!(
        answers[1].notes().contains("removed `sub/.git`"),
        "the answer says the repository was removed: {:?}",
        answers[1].content
    );
    assert!(!root.join("sub/.git").exists(), "sub/.git is left");
    assert_eq!(
        std::fs::read_to_string(root.join(".git/hooks/pre-commit")).ok(),
        None,
        "a pre-commit hook is in the user's repository"
    );

    std::fs::write(root.join("sub/change.txt"), "change\n").unwrap();
    git_ok(&root, &home, &["add", "-A"]);
    git_ok(&root, &home, &["commit", "-qm", "user's commit"]);
    git_ok(
        &root.join("sub"),
        &home,
        &["commit", "-q", "--allow-empty", "-m", "from sub"],
    );
    assert!(
        !marker.exists(),
        "a hook the shell planted ran on the user's commit"
    );
}

#[test]
fn a_repository_a_job_plants_after_its_call_returned_is_gone_after_the_session() {
    let scene = Scene::new(&[]);
    let root = scene.root();
    let answers = scene.run(&[
        (
            "shell",
            json!({"command": "(sleep 1; mkdir -p late/.git; \
                   printf '[core]\\n\\tfsmonitor = touch fsmonitor-ran\\n' > late/.git/config) &"}),
        ),
        ("shell", json!({"command": "sleep 6", "background": true})),
        ("write_stdin", json!({"session_id": 2, "yield_ms": 30_000})),
    ]);
    assert_eq!(answers[0].status(), Some(0), "{:?}", answers[0]);
    assert_eq!(answers[2].status(), Some(0), "{:?}", answers[2]);
    assert!(
        root.join("late").is_dir(),
        "the job ran (it made late/): {answers:?}"
    );
    assert!(
        !root.join("late/.git").exists(),
        "the planted late/.git is left after the session: {answers:?}"
    );
}

/// The processes whose command line is `sleep 300`, and whether `ancestor` is among their
/// parents.
fn sleeps(ancestor: Option<u32>) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| alive_sleep(*pid))
        .filter(|pid| ancestor.is_none_or(|a| descends_from(*pid, a)))
        .collect()
}

/// `pid` runs `sleep 300` and is not a zombie.
fn alive_sleep(pid: u32) -> bool {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next());
    cmdline == b"sleep\x00300\x00" && state.is_some_and(|s| s != "Z" && s != "X")
}

fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn descends_from(mut pid: u32, ancestor: u32) -> bool {
    for _ in 0..64 {
        match parent(pid) {
            Some(p) if p == ancestor => return true,
            Some(p) if p > 1 => pid = p,
            _ => return false,
        }
    }
    false
}

#[test]
fn jobs_die_with_paddock_even_when_it_is_killed() {
    let scene = Scene::new(&[]);
    let calls: Vec<Value> = [
        json!({"command": "sleep 300 & echo $!"}),
        json!({"command": "sleep 120"}),
    ]
    .iter()
    .enumerate()
    .map(|(i, args)| json!({"id": format!("c{i}"), "name": "shell", "arguments": args.to_string()}))
    .collect();
    let file = scene.project.home.path().join("kill.json");
    std::fs::write(&file, Value::from(calls).to_string()).unwrap();
    let mut paddock = scene
        .project
        .command(&[
            "tool",
            "batch",
            "--preset",
            &scene.preset(),
            &file.display().to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start paddock");
    let id = paddock.id();

    // Liveness waits, not timing asserts: the job appears, then (after the kill) goes.
    let started = Instant::now();
    let mut jobs = sleeps(Some(id));
    while jobs.is_empty() && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
        jobs = sleeps(Some(id));
    }
    if jobs.is_empty() {
        let _ = paddock.kill();
        let _ = paddock.wait();
        panic!("the shell's `sleep 300` never started under paddock (pid {id})");
    }
    paddock.kill().expect("SIGKILL paddock");
    paddock.wait().expect("reap paddock");

    let killed = Instant::now();
    let mut left: Vec<u32> = jobs.iter().copied().filter(|p| alive_sleep(*p)).collect();
    while !left.is_empty() && killed.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
        left.retain(|p| alive_sleep(*p));
    }
    assert!(
        left.is_empty(),
        "`sleep 300` (pids {left:?}) outlived paddock, killed with SIGKILL"
    );
}
