//! Which programs, with which arguments, the `exec` capability may start (S6, K1).
//!
//! A grant's `allow` holds patterns: a program name alone (`"ls"`: any arguments), or the
//! program with its arguments (`"git status"`: exactly that; `"cargo test *"`: `cargo test`
//! and anything after; `"git log --format=*"`: `*` inside a word matches any text). The shape
//! is the one Claude Code users know from `Bash(cargo test:*)`.
//!
//! Some options make an allowed program run *any* command (`git -c core.fsmonitor=...`,
//! `cargo --config target.runner=...`, `rg --pre CMD`). They are refused for those programs
//! unless the matching pattern spells the option out itself (`"rg --pre *"`). The program
//! still runs confined (see `confine`): this list narrows what is asked, the kernel limits
//! what it can do.

/// Options that run arbitrary commands, by program; `subcommand` limits the rule to one git
/// or cargo subcommand.
struct Risky {
    program: &'static str,
    subcommand: Option<&'static str>,
    option: &'static str,
    why: &'static str,
}

const RISKY: &[Risky] = &[
    risky(
        "git",
        None,
        "-c",
        "sets any configuration, e.g. core.fsmonitor or an alias, which git then runs",
    ),
    risky(
        "git",
        None,
        "--config-env",
        "sets any configuration from the environment",
    ),
    risky(
        "git",
        None,
        "--exec-path",
        "makes git run its helpers from another directory",
    ),
    risky("git", None, "--upload-pack", "names a program git runs"),
    risky("git", None, "--receive-pack", "names a program git runs"),
    risky(
        "git",
        Some("clone"),
        "-u",
        "names a program git runs (--upload-pack)",
    ),
    risky(
        "git",
        Some("fetch"),
        "-u",
        "names a program git runs (--upload-pack)",
    ),
    risky(
        "git",
        Some("rebase"),
        "-x",
        "runs a command after each commit (--exec)",
    ),
    risky(
        "git",
        Some("rebase"),
        "--exec",
        "runs a command after each commit",
    ),
    risky("git", Some("archive"), "--exec", "names a program git runs"),
    risky(
        "git",
        Some("grep"),
        "-O",
        "opens matches in a program of its choice",
    ),
    risky(
        "git",
        Some("grep"),
        "--open-files-in-pager",
        "opens matches in a program of its choice",
    ),
    risky("git", Some("bisect"), "run", "runs a command on every step"),
    risky(
        "git",
        Some("submodule"),
        "foreach",
        "runs a command in every submodule",
    ),
    risky(
        "git",
        Some("difftool"),
        "-x",
        "runs a command of its choice (--extcmd)",
    ),
    risky(
        "git",
        Some("difftool"),
        "--extcmd",
        "runs a command of its choice",
    ),
    risky(
        "cargo",
        None,
        "--config",
        "sets any configuration, e.g. a runner or rustc wrapper, which cargo then runs",
    ),
    risky(
        "cargo",
        None,
        "-Z",
        "enables unstable behaviour, some of which runs programs",
    ),
    risky("rg", None, "--pre", "runs a command on every file searched"),
    risky(
        "rg",
        None,
        "--hostname-bin",
        "runs a command to find the host name",
    ),
    risky("find", None, "-exec", "runs a command per file"),
    risky("find", None, "-execdir", "runs a command per file"),
    risky("find", None, "-ok", "runs a command per file"),
    risky("find", None, "-okdir", "runs a command per file"),
];

const fn risky(
    program: &'static str,
    subcommand: Option<&'static str>,
    option: &'static str,
    why: &'static str,
) -> Risky {
    Risky {
        program,
        subcommand,
        option,
        why,
    }
}

/// Checks `program args` against the grant's patterns. `key` names the preset key for errors.
pub(in crate::sandbox) fn check(
    allow: &[String],
    program: &str,
    args: &[String],
    key: &str,
) -> Result<(), String> {
    let matching: Vec<&String> = allow.iter().filter(|p| matches(p, program, args)).collect();
    if matching.is_empty() {
        return Err(refusal(allow, program, args, key));
    }
    let name = program.rsplit('/').next().unwrap_or(program);
    let subcommand = args
        .iter()
        .find(|a| !a.starts_with('-'))
        .map(String::as_str);
    for rule in RISKY.iter().filter(|r| r.program == name) {
        if rule.subcommand.is_some() && rule.subcommand != subcommand {
            continue;
        }
        let used = args.iter().any(|a| uses_option(a, rule.option));
        let spelled = matching.iter().any(|pattern| {
            pattern
                .split_whitespace()
                .skip(1)
                .any(|w| uses_option(w, rule.option))
        });
        if used && !spelled {
            return Err(format!(
                "`{name} {}` is refused: it {}. paddock refuses it for {name} unless the allowed \
                 pattern names it; to allow it, add a pattern such as `\"{name} {} *\"` to `{key}.allow`",
                rule.option, rule.why, rule.option
            ));
        }
    }
    Ok(())
}

/// `arg` is `option`, `option=value`, or (for a short option like `-c`) `-cVALUE`.
fn uses_option(arg: &str, option: &str) -> bool {
    if arg == option {
        return true;
    }
    if option.starts_with("--") {
        return arg.starts_with(&format!("{option}="));
    }
    // `-c` with its value attached; `--` options never match a short one.
    option.len() == 2
        && option.starts_with('-')
        && arg.starts_with(option)
        && !arg.starts_with("--")
}

/// Does `pattern` allow `program args`?
fn matches(pattern: &str, program: &str, args: &[String]) -> bool {
    let mut words = pattern.split_whitespace();
    if words.next() != Some(program) {
        return false;
    }
    let words: Vec<&str> = words.collect();
    if words.is_empty() {
        // A bare program name allows any arguments (the risky options aside).
        return true;
    }
    let (fixed, rest) = match words.split_last() {
        Some((&"*", fixed)) => (fixed, true),
        _ => (words.as_slice(), false),
    };
    if args.len() < fixed.len() || (!rest && args.len() != fixed.len()) {
        return false;
    }
    fixed.iter().zip(args).all(|(w, a)| glob(w, a))
}

/// `*` in `pattern` matches any run of characters.
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut at = first.len();
    let end = text.len() - last.len();
    for part in &parts[1..parts.len() - 1] {
        match text[at..end].find(part) {
            Some(i) => at += i + part.len(),
            None => return false,
        }
    }
    true
}

fn refusal(allow: &[String], program: &str, args: &[String], key: &str) -> String {
    let shown: String = std::iter::once(program)
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(200)
        .collect();
    let same_program: Vec<&str> = allow
        .iter()
        .filter(|p| p.split_whitespace().next() == Some(program))
        .map(String::as_str)
        .collect();
    if same_program.is_empty() {
        format!(
            "program `{}` is not allowed; add it to `{key}.allow` in the preset (allowed: {})",
            program.chars().take(200).collect::<String>(),
            if allow.is_empty() {
                "none".to_string()
            } else {
                allow.join(", ")
            }
        )
    } else {
        format!(
            "`{shown}` matches no allowed pattern for {program} ({}); add a pattern to `{key}.allow`",
            same_program.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(allow: &[&str], line: &str) -> Result<(), String> {
        let allow: Vec<String> = allow.iter().map(|s| s.to_string()).collect();
        let mut words = line.split_whitespace();
        let program = words.next().unwrap();
        let args: Vec<String> = words.map(String::from).collect();
        check(&allow, program, &args, "plugins.shell.grants.exec")
    }

    #[test]
    fn patterns_allow_exactly_what_they_name() {
        let allow = [
            "git status",
            "git diff *",
            "cargo test *",
            "ls",
            "git log --format=*",
        ];
        assert!(run(&allow, "git status").is_ok());
        assert!(run(&allow, "git status --short").is_err());
        assert!(run(&allow, "git diff").is_ok());
        assert!(run(&allow, "git diff HEAD~1 -- src").is_ok());
        assert!(run(&allow, "cargo test -p paddock").is_ok());
        assert!(run(&allow, "cargo build").is_err());
        assert!(run(&allow, "ls -la /workspace").is_ok());
        assert!(run(&allow, "git log --format=%H").is_ok());
        assert!(
            run(&allow, "git push")
                .unwrap_err()
                .contains("matches no allowed pattern")
        );
        assert!(
            run(&allow, "sh -c id")
                .unwrap_err()
                .contains("is not allowed")
        );
    }

    #[test]
    fn options_that_run_commands_are_refused_unless_spelled_out() {
        let allow = ["git", "cargo", "rg", "rg --pre *"];
        let err = run(&allow, "git -c core.fsmonitor=touch status").unwrap_err();
        assert!(
            err.contains("`git -c` is refused") && err.contains("core.fsmonitor"),
            "{err}"
        );
        assert!(run(&allow, "git -ccore.pager=x log").is_err());
        assert!(run(&allow, "git --config-env=core.pager=X log").is_err());
        assert!(run(&allow, "git --exec-path=/tmp status").is_err());
        assert!(run(&allow, "git fetch --upload-pack=touch origin").is_err());
        assert!(run(&allow, "git rebase -x make main").is_err());
        assert!(run(&allow, "cargo --config target.x.runner=sh run").is_err());
        assert!(run(&allow, "cargo test --config=build.rustc-wrapper=x").is_err());
        // The pattern `rg --pre *` names the option, so it is the user's explicit choice.
        assert!(run(&allow, "rg --pre cat needle").is_ok());
        // Options with the same letters elsewhere are fine.
        assert!(run(&allow, "git -C sub status").is_ok());
        assert!(run(&allow, "git add -u").is_ok());
        assert!(run(&allow, "git clean -x -n").is_ok());
        assert!(run(&allow, "cargo test -- --config").is_err());
    }
}
