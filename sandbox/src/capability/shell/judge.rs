//! Whether a shell command may run unasked, must be asked about, or is refused, under its
//! grant's rules: every simple command bash would execute (`paddock-shell-judge` finds them,
//! through wrappers, `sh -c` strings and substitutions) against `allow`, `ask` and `deny`,
//! the options that make an allowed program run any command (`exec_policy`), and the names
//! the persistent shell has made functions or aliases. The gate asks from this judgement;
//! the capability checks it again before running, so a command is never run on the strength
//! of a question about another.

use paddock_shell_judge::{Rules, Session, Verdict, analyse, judge};

use crate::capability::exec_policy;
use crate::capability::locate::{find_program, host_dir};
use crate::grant::{ExecGrant, Mount};

/// A judged command, with what the user is shown when asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellJudgement {
    pub verdict: ShellVerdict,
    /// Each command that would run (with the wrappers it runs through) and each write, one
    /// line each.
    pub shown: Vec<String>,
    /// The files its redirections write, as written (those named at run time are not here).
    pub writes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellVerdict {
    Allow,
    /// Ask, for these reasons.
    Ask(Vec<String>),
    /// Refused, for this reason.
    Deny(String),
}

/// Judges `command` under `grant` with the shell's `session` names; `Err` when the grant's
/// patterns are malformed (the preset check reports those first).
pub(crate) fn judge_command(
    grant: &ExecGrant,
    session: &Session,
    command: &str,
    key: &str,
) -> Result<ShellJudgement, String> {
    let rules =
        Rules::new(&grant.allow, &grant.ask, &grant.deny).map_err(|e| format!("`{key}`: {e}"))?;
    let analysis = analyse(command, session);
    // A grant that allows every command and asks about none runs anything, functions and
    // names from expansions included: there is nothing to ask about.
    let everything = grant.allow.iter().any(|p| p == "*") && grant.ask.is_empty();
    let mut verdict = match judge(&analysis, &rules) {
        Verdict::Allow => ShellVerdict::Allow,
        Verdict::Ask(_) if everything => ShellVerdict::Allow,
        Verdict::Ask(reasons) => ShellVerdict::Ask(reasons),
        Verdict::Deny(reason) => ShellVerdict::Deny(format!("{reason} (`{key}.deny`)")),
    };
    // A program allowed by its pattern may still be given an option that runs any command
    // (`git -c core.pager=...`): asked about, unless the grant allows every command.
    if !grant.allow.iter().any(|p| p == "*") {
        let risky: Vec<String> = analysis
            .commands
            .iter()
            .filter_map(|c| {
                let args = c.argv.get(1..).unwrap_or_default();
                let matching = exec_policy::matching(&grant.allow, &c.program, args);
                exec_policy::risky_option(&matching, &c.program, args, key)
            })
            .collect();
        if !risky.is_empty() {
            verdict = match verdict {
                ShellVerdict::Allow => ShellVerdict::Ask(risky),
                ShellVerdict::Ask(mut reasons) => {
                    reasons.extend(risky);
                    ShellVerdict::Ask(reasons)
                }
                deny => deny,
            };
        }
    }
    let mut shown: Vec<String> = analysis
        .commands
        .iter()
        .map(|c| {
            let words = c.argv.join(" ");
            if c.via.is_empty() {
                format!("runs: {words}")
            } else {
                format!("runs: {words}   (through {})", c.via.join(" > "))
            }
        })
        .collect();
    shown.extend(analysis.writes.iter().map(|w| match &w.target {
        Some(target) => format!("writes: {target}"),
        None => format!("writes: a file named at run time ({})", w.text),
    }));
    shown.extend(
        analysis
            .unresolved
            .iter()
            .map(|u| format!("cannot tell what runs: {} ({})", u.why, u.text)),
    );
    let writes = analysis
        .writes
        .iter()
        .filter_map(|w| w.target.clone())
        .filter(|t| !matches!(t.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr"))
        .collect();
    Ok(ShellJudgement {
        verdict,
        shown,
        writes,
    })
}

/// The command a call's arguments ask for, as the gate shows and admits it: a shell
/// `command`, or a `program` with its `args` as one line of bash.
pub fn admitted_command(args: &serde_json::Value) -> Option<String> {
    if let Some(command) = args.get("command").and_then(serde_json::Value::as_str) {
        return Some(command.to_string());
    }
    program_words(args).map(|words| paddock_shell_judge::quote_words(&words))
}

/// Why a follow-up call may start no program.
pub(crate) const FOLLOW_UP: &str = "this call names a `session_id` and no command, so it \
     was admitted as a follow-up of a command already judged, without a question; it may wait \
     for, interrupt or type into that command, and start no program";

/// Whether a call's arguments make it a follow-up of a command already judged: a
/// `session_id`, and no command or program of its own. The gate asks nothing about it, so the
/// capability starts no program in it.
pub fn is_follow_up(args: &serde_json::Value) -> bool {
    args.get("session_id")
        .is_some_and(serde_json::Value::is_u64)
        && admitted_command(args).is_none()
}

/// `program` and its `args`, when the call names a program.
fn program_words(args: &serde_json::Value) -> Option<Vec<String>> {
    let program = args.get("program")?.as_str()?;
    let mut words = vec![program.to_string()];
    words.extend(
        args.get("args")
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string)),
    );
    Some(words)
}

/// A call that names a program (`run_command`) judged by the same rules as a shell command:
/// refused when the allow-list or a `deny` rule refuses it, asked when an `ask` rule matches
/// it, and otherwise left to its tier; `None` when the call names no program. What the `exec`
/// capability would refuse whatever the user said (a program not on the host's PATH, a `cwd`
/// with `..` or outside `mounts`) is refused here too, before anyone is asked; the capability
/// still checks all of it when it runs.
pub fn judge_program(
    grant: &ExecGrant,
    mounts: &[Mount],
    plugin: &str,
    args: &serde_json::Value,
) -> Option<ShellJudgement> {
    let words = program_words(args)?;
    let key = format!("plugins.{plugin}.grants.exec");
    let line = paddock_shell_judge::quote_words(&words);
    let refused = |reason: String| ShellJudgement {
        verdict: ShellVerdict::Deny(reason),
        shown: vec![format!("runs: {line}")],
        writes: Vec::new(),
    };
    // What the capability would refuse is refused here, without a question.
    if let Err(reason) = exec_policy::check(&grant.allow, &words[0], &words[1..], &key) {
        return Some(refused(reason));
    }
    if let Err(reason) = runs_somewhere(mounts, &words[0], args) {
        return Some(refused(reason));
    }
    Some(match judge_argv(grant, &words, &key) {
        Ok(judged) => judged,
        Err(reason) => refused(reason),
    })
}

/// Whether the capability could start `program` where the call asks: on the host's PATH, in a
/// `cwd` without `..` and, when absolute, inside a mount. A relative `cwd` is the plugin's to
/// place (the built-in shell puts it under `/workspace`); the capability checks it at the start.
fn runs_somewhere(mounts: &[Mount], program: &str, args: &serde_json::Value) -> Result<(), String> {
    find_program(program)?;
    let Some(cwd) = args.get("cwd").and_then(serde_json::Value::as_str) else {
        return Ok(());
    };
    if std::path::Path::new(cwd)
        .components()
        .any(|c| c == std::path::Component::ParentDir)
    {
        return Err(format!("cwd {cwd:?} may not contain `..`"));
    }
    if cwd.starts_with('/') {
        host_dir(mounts, Some(cwd))?;
    }
    Ok(())
}

/// A program and its arguments (allowed by the allow-list already) judged by the `ask` and
/// `deny` rules alone, through what it wraps (`sh -c "git push"` is `git push`).
pub(crate) fn judge_argv(
    grant: &ExecGrant,
    words: &[String],
    key: &str,
) -> Result<ShellJudgement, String> {
    let only_ask_and_deny = ExecGrant {
        allow: vec!["*".to_string()],
        ..grant.clone()
    };
    let line = paddock_shell_judge::quote_words(words);
    judge_command(&only_ask_and_deny, &Session::default(), &line, key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(allow: &[&str], ask: &[&str], deny: &[&str]) -> ExecGrant {
        let words = |list: &[&str]| list.iter().map(|s| s.to_string()).collect();
        ExecGrant {
            allow: words(allow),
            ask: words(ask),
            deny: words(deny),
            ..ExecGrant::default()
        }
    }

    fn verdict(grant: &ExecGrant, command: &str) -> ShellVerdict {
        judge_command(
            grant,
            &Session::default(),
            command,
            "plugins.shell.grants.exec",
        )
        .expect("valid rules")
        .verdict
    }

    #[test]
    fn allowed_commands_run_unasked_and_the_rest_are_asked() {
        let g = grant(&["ls *", "grep *", "wc *"], &["rm *"], &[]);
        assert_eq!(verdict(&g, "ls -la | grep x | wc -l"), ShellVerdict::Allow);
        assert!(matches!(verdict(&g, "ls; rm -f x"), ShellVerdict::Ask(_)));
        assert!(matches!(verdict(&g, "cat x"), ShellVerdict::Ask(_)));
    }

    #[test]
    fn an_option_that_runs_any_command_is_asked_about_even_when_allowed() {
        let g = grant(&["git log *"], &[], &[]);
        assert_eq!(verdict(&g, "git log --oneline"), ShellVerdict::Allow);
        match verdict(&g, "git -c core.pager=sh log") {
            ShellVerdict::Ask(reasons) => {
                assert!(reasons.iter().any(|r| r.contains("git -c")), "{reasons:?}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn deny_refuses_and_names_the_key() {
        let g = grant(&["*"], &[], &["git push *"]);
        match verdict(&g, "cd x && git push origin main") {
            ShellVerdict::Deny(reason) => {
                assert!(reason.contains("git push"), "{reason}");
                assert!(
                    reason.contains("plugins.shell.grants.exec.deny"),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn allowing_everything_with_nothing_to_ask_runs_even_what_cannot_be_named() {
        let g = grant(&["*"], &[], &[]);
        assert_eq!(
            verdict(&g, "f() { ls; }; f; $cmd x; eval 'ls'"),
            ShellVerdict::Allow
        );
        let asking = grant(&["*"], &["rm *"], &[]);
        assert!(matches!(verdict(&asking, "$cmd x"), ShellVerdict::Ask(_)));
    }

    #[test]
    fn the_question_shows_each_command_and_write() {
        let g = grant(&["ls *"], &[], &[]);
        let judged =
            judge_command(&g, &Session::default(), "sudo env rm x > out.txt", "k").unwrap();
        assert!(
            judged
                .shown
                .iter()
                .any(|l| l.contains("rm x") && l.contains("sudo")),
            "{:?}",
            judged.shown
        );
        assert!(
            judged.shown.iter().any(|l| l == "writes: out.txt"),
            "{:?}",
            judged.shown
        );
    }

    #[test]
    fn a_program_call_is_held_to_the_same_ask_and_deny_rules() {
        let g = grant(&["git *"], &["git push *"], &["git push --force *"]);
        let call =
            |args: serde_json::Value| judge_program(&g, &[], "shell", &args).unwrap().verdict;
        assert_eq!(
            call(serde_json::json!({"program": "git", "args": ["status"]})),
            ShellVerdict::Allow
        );
        assert!(matches!(
            call(serde_json::json!({"program": "git", "args": ["-C", ".", "push"]})),
            ShellVerdict::Ask(_)
        ));
        assert!(matches!(
            call(serde_json::json!({"program": "git", "args": ["push", "--force", "origin"]})),
            ShellVerdict::Deny(_)
        ));
        // What the allow-list refuses is refused, never asked about.
        assert!(matches!(
            call(serde_json::json!({"program": "rm", "args": ["x"]})),
            ShellVerdict::Deny(_)
        ));
        assert_eq!(
            admitted_command(
                &serde_json::json!({"program": "git", "args": ["commit", "-m", "a b"]})
            ),
            Some("git commit -m 'a b'".to_string())
        );
        assert!(judge_program(&g, &[], "shell", &serde_json::json!({"command": "ls"})).is_none());
    }

    #[test]
    fn a_program_call_the_capability_could_not_start_is_refused_before_any_question() {
        let g = grant(&["*"], &[], &[]);
        let call =
            |args: serde_json::Value| judge_program(&g, &[], "shell", &args).unwrap().verdict;
        assert_eq!(
            call(serde_json::json!({"program": "ls"})),
            ShellVerdict::Allow
        );
        // Not on PATH, a `cwd` out of the mounts (here there are none), a `cwd` with `..`.
        for (args, says) in [
            (
                serde_json::json!({"program": "no-such-program-here"}),
                "not on the host's PATH",
            ),
            (
                serde_json::json!({"program": "ls", "cwd": "/etc"}),
                "no mounts",
            ),
            (
                serde_json::json!({"program": "ls", "cwd": "src/../.."}),
                "`..`",
            ),
        ] {
            match call(args.clone()) {
                ShellVerdict::Deny(reason) => assert!(reason.contains(says), "{args}: {reason}"),
                other => panic!("{args}: {other:?}"),
            }
        }
    }
}
