//! Rules and verdicts: the brief's benign strings are allowed, its adversarial ones asked.

use super::*;

#[test]
fn benign_strings_are_allowed() {
    for source in [
        "cd src && ls -la | grep foo | wc -l",
        "cargo test 2>&1 | head -n 20",
        "echo \"rm -rf /\" > /dev/null",
        "grep -r 'git push' .",
        "for f in *.rs; do wc -l \"$f\"; done",
        "if [ -f x ]; then cat x; else echo none; fi",
        "cat <<'EOF'\n$(rm x)\nEOF",
        "export FOO=bar; echo $FOO",
        "git log --oneline -5 # then rm",
        "git status",
        "git status --short",
        "pwd",
        "true && false",
        "test -d target || echo missing",
        "printf '%s\\n' a b | sort",
        "echo $(pwd)",
        "",
    ] {
        assert_eq!(
            verdict(source),
            Verdict::Allow,
            "{source:?}: {:#?}",
            run(source)
        );
    }
}

#[test]
fn adversarial_strings_are_asked() {
    for source in [
        "rm x",
        "/bin/rm x",
        "\\rm x",
        "'r'm x",
        "\"rm\" x",
        "r\"\"m x",
        "$'\\x72m' x",
        "ls; rm x",
        "ls && rm x",
        "ls || rm x",
        "ls | xargs rm",
        "find . -name '*.o' -exec rm {} \\;",
        "sudo rm x",
        "sudo -u root rm x",
        "env rm x",
        "env -i FOO=1 rm x",
        "timeout 5 rm x",
        "nice -n 5 rm x",
        "nohup rm x &",
        "command rm x",
        "exec rm x",
        "builtin eval x",
        "(rm x)",
        "{ rm x; }",
        "if true; then rm x; fi",
        "while false; do rm x; done",
        "case a in a) rm x;; esac",
        "echo $(rm x)",
        "echo \"$(rm x)\"",
        "echo `rm x`",
        "cat <(rm x)",
        "x=$(rm x)",
        "cat <<EOF\n$(rm x)\nEOF",
        "bash -c 'rm x'",
        "sh -c \"ls; rm x\"",
        "bash -lc 'rm x'",
        "bash -c \"bash -c 'rm x'\"",
        "$cmd x",
        "${cmd} x",
        "$(echo rm) x",
        "eval 'rm x'",
        "source ./script.sh",
        ". ./script.sh",
        "f() { rm x; }; f",
        "alias ll='rm x'; ll",
        "git push",
        "git push origin main",
        "git -C . push",
        "git --no-pager push -f",
        "PATH=/tmp/evil:$PATH ls",
        "export GIT_PAGER='rm -rf ~'; git log",
        "trap 'rm x' EXIT",
        "xargs -I{} rm {} < list",
        "find . -delete -exec rm {} +",
        "watch rm x",
        "flock /tmp/l rm x",
        "timeout -s KILL 5 sudo env rm x",
        "r*m x",
        "cargo test 2>&1 | tail -n 20",
        "echo hi > \"$(rm x)\"",
        "git $sub origin",
    ] {
        assert!(
            matches!(verdict(source), Verdict::Ask(_)),
            "{source:?}: {:#?}",
            run(source)
        );
    }
}

#[test]
fn ask_reasons_name_the_rule_and_the_command() {
    let Verdict::Ask(reasons) = verdict("ls && git -C . push origin") else {
        panic!("should ask");
    };
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(reasons[0].contains("git push *"), "{reasons:?}");
    assert!(reasons[0].contains("git -C . push origin"), "{reasons:?}");
    let Verdict::Ask(reasons) = verdict("$cmd x; tail f") else {
        panic!("should ask");
    };
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons.iter().any(|r| r.contains("matches no allow rule")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("expansion")),
        "{reasons:?}"
    );
}

#[test]
fn deny_names_the_rule_and_wins_over_ask() {
    let rules = match Rules::new(
        &strings(&["git *"]),
        &strings(&["rm *"]),
        &strings(&["git push *"]),
    ) {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    };
    for source in [
        "git push",
        "rm x; git push",
        "sudo git --no-pager push -f",
        "bash -c 'git push'",
    ] {
        match judge(&run(source), &rules) {
            Verdict::Deny(why) => assert!(why.contains("git push *"), "{why}"),
            other => panic!("{source:?}: {other:?}"),
        }
    }
    // Only a run-time word could make it a push: asked, not refused.
    assert!(matches!(judge(&run("git $sub"), &rules), Verdict::Ask(_)));
    assert_eq!(judge(&run("git status"), &rules), Verdict::Allow);
    assert_eq!(
        judge(&run("git commit -m 'push it'"), &rules),
        Verdict::Allow
    );
}

#[test]
fn allow_matches_strictly_and_ask_generously() {
    let rules = match Rules::new(
        &strings(&[
            "ls",
            "git status",
            "cargo test *",
            "git log --format=*",
            "xargs *",
            "find *",
        ]),
        &strings(&["git push *", "rm -rf *"]),
        &[],
    ) {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    };
    let allowed = |s: &str| judge(&run(s), &rules) == Verdict::Allow;
    assert!(allowed("ls -la /"));
    assert!(allowed("/bin/ls"));
    assert!(allowed("git status"));
    assert!(!allowed("git status --short"));
    assert!(allowed("cargo test"));
    assert!(allowed("cargo test -p x -- --nocapture"));
    assert!(!allowed("cargo testx"));
    assert!(allowed("git log --format=%H"));
    assert!(!allowed("git log --oneline"));
    assert!(!allowed("cargo test $(rm x)"));
    // A run-time word is allowed only by a `*`.
    assert!(allowed("cargo test \"$name\""));
    assert!(!allowed("git log $fmt"));
    // xargs adds arguments: only an allow pattern ending in `*` allows them.
    assert!(allowed("xargs ls"));
    assert!(!allowed("xargs git status"));
    assert!(allowed("xargs cargo test"));
    assert!(allowed("find . -exec ls {} \\;"));
    // ask: literal words in order, not adjacent; a quoted phrase is one word.
    assert!(!allowed("rm -rf x"));
    assert!(!allowed("rm -v -rf x"));
    assert!(!allowed("git -C . --no-pager push"));
    assert!(!allowed("xargs git"));
}

#[test]
fn wrappers_are_judged_as_programs_too() {
    let rules = match Rules::new(&strings(&["ls *", "timeout *"]), &[], &strings(&["sudo"])) {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(judge(&run("timeout 5 ls"), &rules), Verdict::Allow);
    assert!(matches!(judge(&run("nice ls"), &rules), Verdict::Ask(_)));
    assert!(matches!(judge(&run("sudo ls"), &rules), Verdict::Deny(_)));
}

#[test]
fn empty_patterns_are_refused() {
    assert!(Rules::new(&strings(&[""]), &[], &[]).is_err());
    assert!(Rules::new(&[], &strings(&["  "]), &[]).is_err());
    assert!(Rules::new(&strings(&["*"]), &[], &[]).is_ok());
}
