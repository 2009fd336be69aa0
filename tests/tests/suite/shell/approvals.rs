//! What the grant's `ask` and `deny` rules stop, through the binary: every approval tier
//! allows, so the grant alone decides; `tool batch` has no terminal, so a command the rules
//! ask about is denied saying it needs approval. However the asked command is spelled,
//! wrapped or hidden it is stopped before anything runs (the file it would remove is still
//! there); text that only mentions it runs unasked.

use super::Scene;

const GRANT: &str = r#"allow = ["ls *", "cat *", "echo *", "grep *", "wc *", "cd *", "pwd", "true", "false", "printf *", "head *", "sort *", "test *", "[ *", "export *", "git status *", "git log *"], ask = ["git push *", "rm *"], env = ["PATH", "HOME", "LANG"]"#;

/// Commands that run `rm x` or `git push`, or might.
const ASKED: &[&str] = &[
    "rm x",
    "/bin/rm x",
    "\\rm x",
    "'r'm x",
    "r\\m x",
    "$'\\x72m' x",
    "ls; rm x",
    "ls && rm x",
    "ls | xargs rm",
    "find . -exec rm {} \\;",
    "sudo rm x",
    "env rm x",
    "timeout 5 rm x",
    "nice rm x",
    "nohup rm x &",
    "command rm x",
    "(rm x)",
    "{ rm x; }",
    "if true; then rm x; fi",
    "for f in x; do rm \"$f\"; done",
    "echo $(rm x)",
    "echo \"`rm x`\"",
    "cat <(rm x)",
    "bash -c 'rm x'",
    "sh -c \"ls; rm x\"",
    "$cmd x",
    "eval 'rm x'",
    "f() { rm x; }; f",
    "git push",
    "git -C . push origin main",
    "git --no-pager push",
    "cat <<EOF\n$(rm x)\nEOF",
    "echo > \"$(rm x)\"",
];

/// Commands that only mention `rm` or `git push`, or do harmless things.
const UNASKED: &[(&str, &str)] = &[
    ("ls -la | grep notes | wc -l", "1\n"),
    ("echo \"rm -rf /\" > /dev/null", ""),
    (
        "grep -r 'git push' notes.txt",
        "never git push on a friday\n",
    ),
    ("for f in *.txt; do wc -l \"$f\"; done", "1 notes.txt\n"),
    ("cat <<'EOF'\n$(rm x)\nEOF", "$(rm x)\n"),
    ("git log --format=%s -1 # rm x", "first\n"),
    ("echo 'rm x' | wc -c", "5\n"),
    ("printf '%s\\n' 'git push' b a | sort", "a\nb\ngit push\n"),
    ("test -f x && echo present", "present\n"),
    ("[ -f x ] && echo present", "present\n"),
    ("cd . && pwd > /dev/null", ""),
    ("export MODE=rm; echo $MODE", "rm\n"),
    ("head -n 1 notes.txt | sort", "never git push on a friday\n"),
    ("echo \"$(cat x)\"", "keep me\n"),
    ("true && false || echo recovered", "recovered\n"),
    ("ls x # then rm x", "x\n"),
    ("git status --short x", ""),
];

/// A project with `x`, `notes.txt`, and a git repository with one commit, made by the test.
fn scene(grant: &str) -> Scene {
    let scene = Scene::with(
        &[
            ("x", "keep me\n"),
            ("notes.txt", "never git push on a friday\n"),
        ],
        "rw",
        grant,
        "",
    );
    let root = scene.root();
    for args in [
        &["init", "-q", "."][..],
        &["add", "x", "notes.txt"],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "first",
        ],
    ] {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&root)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", scene.project.home.path())
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }
    scene
}

#[test]
fn asked_commands_are_denied_without_a_terminal_however_they_are_spelled() {
    let scene = scene(GRANT);
    let answers = scene.shell(ASKED);
    let mut ran = Vec::new();
    for (command, answer) in ASKED.iter().zip(&answers) {
        if answer.ok || !answer.error.contains("needs approval") {
            ran.push(format!("`{command}`: {answer:?}"));
        }
    }
    assert!(
        ran.is_empty(),
        "not denied as needing approval:\n{}",
        ran.join("\n")
    );
    assert_eq!(
        std::fs::read_to_string(scene.root().join("x"))
            .ok()
            .as_deref(),
        Some("keep me\n"),
        "nothing ran: x is still there"
    );
}

#[test]
fn commands_that_only_mention_an_asked_one_run_unasked() {
    let scene = scene(GRANT);
    let commands: Vec<&str> = UNASKED.iter().map(|(c, _)| *c).collect();
    let answers = scene.shell(&commands);
    let mut wrong = Vec::new();
    for ((command, expected), answer) in UNASKED.iter().zip(&answers) {
        if !answer.ok || answer.status() != Some(0) || answer.output() != *expected {
            wrong.push(format!("`{command}` (expected {expected:?}): {answer:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "did not run as expected:\n{}",
        wrong.join("\n")
    );
    assert!(scene.root().join("x").exists());
}

#[test]
fn a_denied_command_is_refused_naming_the_deny_rule() {
    let scene = scene(r#"allow = ["*"], deny = ["git push *"], env = ["PATH", "HOME", "LANG"]"#);
    let answers = scene.shell(&[
        "git push origin main",
        "ls > /dev/null && git -C . --no-pager push",
        "echo 'git push' > /dev/null",
    ]);
    for answer in &answers[..2] {
        assert!(!answer.ok, "{answer:?}");
        assert!(
            answer.error.contains("deny rule \"git push *\"")
                && answer.error.contains("plugins.shell.grants.exec.deny"),
            "the error names the rule and where it is: {}",
            answer.error
        );
    }
    assert_eq!(answers[2].status(), Some(0), "{:?}", answers[2]);
}

#[test]
fn run_command_is_held_to_the_same_ask_and_deny_rules_through_what_it_wraps() {
    let scene = scene(
        r#"allow = ["git *", "sh", "ls"], ask = ["git push *", "rm *"], deny = ["git push --force *"], env = ["PATH", "HOME", "LANG"]"#,
    );
    let answers = scene.run(&[
        (
            "run_command",
            serde_json::json!({"program": "git", "args": ["status", "--short"]}),
        ),
        (
            "run_command",
            serde_json::json!({"program": "git", "args": ["push", "origin", "main"]}),
        ),
        (
            "run_command",
            serde_json::json!({"program": "sh", "args": ["-c", "ls; rm x"]}),
        ),
        (
            "run_command",
            serde_json::json!({"program": "git", "args": ["push", "--force", "origin"]}),
        ),
    ]);
    assert!(
        answers[0].ok,
        "an allowed program runs unasked: {answers:?}"
    );
    for asked in &answers[1..3] {
        assert!(!asked.ok, "{asked:?}");
        assert!(asked.error.contains("needs approval"), "{}", asked.error);
    }
    assert!(
        answers[3]
            .error
            .contains("deny rule \"git push --force *\""),
        "{}",
        answers[3].error
    );
    assert!(scene.root().join("x").exists(), "nothing removed x");
}
