//! Which programs, with which arguments, the `exec` capability may start (S6, K1).
//!
//! A grant's `allow` holds patterns: a program name alone (`"ls"`: any arguments), or the
//! program with its arguments (`"git status"`: exactly that; `"cargo test *"`: `cargo test`
//! and anything after; `"git log --format=*"`: `*` inside a word matches any text). The shape
//! is the one Claude Code users know from `Bash(cargo test:*)`.
//!
//! Some options make an allowed program run *any* command (`git -c core.fsmonitor=...`,
//! `cargo --config target.runner=...`, `rg --pre CMD`). They are refused for those programs
//! unless the matching pattern spells the option out itself (`"rg --pre *"`), in any form the
//! program's parser would take for it: a long option's every prefix (git and getopt_long take
//! unique abbreviations: `git push --receive-pa=CMD`), a short option inside a cluster
//! (`-qcVALUE`). The program still runs confined (see `confine`): this list narrows what is
//! asked, the kernel limits what it can do.

/// Options that run arbitrary commands, by program; `subcommand` limits the rule to the
/// commands where that word appears (a git subcommand).
struct Risky {
    program: &'static str,
    subcommand: Option<&'static str>,
    option: &'static str,
    why: &'static str,
}

/// Each entry comes from the program's own option table: git's from `builtin/*.c` (its
/// `parse_options` tables: `push.c`, `send-pack.c`, `ls-remote.c`, `archive.c`, `clone.c`,
/// `init-db.c`, `rebase.c`, `grep.c`, `difftool.c`) and `git.c` (the options before the
/// subcommand), `git-send-email.perl`'s `GetOptions`; every long spelling of a listed short
/// option is listed too.
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
    // `push --exec` and `send-pack --exec` are `--receive-pack`, `ls-remote --exec` is
    // `--upload-pack`, `archive --exec` names the remote's program, `rebase --exec` runs a
    // command after each commit: whatever the subcommand, it runs a program.
    risky(
        "git",
        None,
        "--exec",
        "names a program git runs (--receive-pack, --upload-pack, or rebase's command)",
    ),
    risky(
        "git",
        Some("clone"),
        "-u",
        "names a program git runs (--upload-pack)",
    ),
    risky(
        "git",
        Some("clone"),
        "--config",
        "sets any configuration of the new repository, e.g. core.fsmonitor, which git then runs",
    ),
    risky(
        "git",
        Some("clone"),
        "--template",
        "copies hooks from a directory of its choice into the new repository, which git then runs",
    ),
    risky(
        "git",
        Some("init"),
        "--template",
        "copies hooks from a directory of its choice into the repository, which git then runs",
    ),
    risky(
        "git",
        Some("rebase"),
        "-x",
        "runs a command after each commit (--exec)",
    ),
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
        "git",
        Some("filter-branch"),
        "filter-branch",
        "runs shell commands of its choice (its --*-filter options)",
    ),
    risky(
        "git",
        Some("send-email"),
        "--sendmail-cmd",
        "runs a command of its choice to send mail",
    ),
    risky(
        "git",
        Some("send-email"),
        "--smtp-server",
        "runs the program it names when given a path",
    ),
    risky(
        "git",
        Some("send-email"),
        "--to-cmd",
        "runs a command of its choice per patch",
    ),
    risky(
        "git",
        Some("send-email"),
        "--cc-cmd",
        "runs a command of its choice per patch",
    ),
    risky(
        "git",
        Some("send-email"),
        "--header-cmd",
        "runs a command of its choice per patch",
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
pub(crate) fn check(
    allow: &[String],
    program: &str,
    args: &[String],
    key: &str,
) -> Result<(), String> {
    // `"*"` allows every program with any options (a container that is the outer boundary).
    if allow.iter().any(|p| p == "*") {
        return Ok(());
    }
    let matching: Vec<&String> = allow.iter().filter(|p| matches(p, program, args)).collect();
    if matching.is_empty() {
        return Err(refusal(allow, program, args, key));
    }
    match risky_option(&matching, program, args, key) {
        Some(refusal) => Err(refusal),
        None => Ok(()),
    }
}

/// The refusal of an option of `program` that makes it run any command (`git -c`), unless
/// one of the `matching` patterns spells the option out; `None` when there is none.
pub(crate) fn risky_option(
    matching: &[&String],
    program: &str,
    args: &[String],
    key: &str,
) -> Option<String> {
    let name = program.rsplit('/').next().unwrap_or(program);
    let mut refused: Vec<(&Risky, &String)> = Vec::new();
    for rule in RISKY.iter().filter(|r| r.program == name) {
        // Any word may be the subcommand: options before it can take a value as a word of
        // its own (`git -C DIR rebase`), so "the first word not an option" can be the value.
        if let Some(sub) = rule.subcommand
            && !args.iter().any(|a| a == sub)
        {
            continue;
        }
        let spelled = matching.iter().any(|pattern| {
            pattern
                .split_whitespace()
                .skip(1)
                .any(|w| names_option(w, rule.option))
        });
        if !spelled && let Some(used) = args.iter().find(|a| uses_option(a, rule.option)) {
            refused.push((rule, used));
        }
    }
    // The rule an argument names outright, before one it only abbreviates (`--exec` is
    // `--exec` itself, and a prefix of `--exec-path`).
    let named = refused
        .iter()
        .find(|(rule, used)| names_option(used, rule.option));
    named
        .or(refused.first())
        .map(|(rule, used)| refused_option(name, rule, used, key))
}

/// The patterns of `allow` that `program args` matches.
pub(crate) fn matching<'a>(allow: &'a [String], program: &str, args: &[String]) -> Vec<&'a String> {
    allow.iter().filter(|p| matches(p, program, args)).collect()
}

/// The refusal of `used`, taken as `rule`'s option.
fn refused_option(name: &str, rule: &Risky, used: &str, key: &str) -> String {
    let option = rule.option;
    let taken = if names_option(used, option) {
        String::new()
    } else {
        format!(
            " (`{}` is taken as `{option}`: {name} accepts any unique abbreviation of a long \
             option, and a short one among others (`-qc`), so paddock refuses every prefix and \
             cluster of it, even one a harmless option shares)",
            used.split('=')
                .next()
                .unwrap_or(used)
                .chars()
                .take(80)
                .collect::<String>()
        )
    };
    format!(
        "`{name} {option}` is refused: it {}{taken}. paddock refuses it for {name} unless the \
         allowed pattern names it; to allow it, add a pattern such as `\"{name} {option} *\"` \
         to `{key}.allow`",
        rule.why
    )
}

/// Whether `arg` may be taken as `option` by the program's parser. A long option (`--xyzzy`):
/// the argument's name (before any `=`) is `--` and a prefix of it, one character at least, as
/// git's parse-options, getopt_long and Perl's Getopt::Long accept unique abbreviations
/// (`--receive-pa=CMD`); refusing a prefix another option shares too is the price of not
/// knowing every option of every version. A short option (`-c`): a single-dash word holding
/// its letter anywhere, since short options cluster (`-qcVALUE` is `-q -c VALUE`). Any other
/// option (find's `-exec`, a word such as `run`): exactly that word.
fn uses_option(arg: &str, option: &str) -> bool {
    if arg == option {
        return true;
    }
    if let Some(long) = option.strip_prefix("--") {
        let name = arg.split('=').next().unwrap_or(arg);
        return name
            .strip_prefix("--")
            .is_some_and(|given| !given.is_empty() && long.starts_with(given));
    }
    match short_letter(option) {
        Some(letter) => arg
            .strip_prefix('-')
            .is_some_and(|cluster| !cluster.starts_with('-') && cluster.contains(letter)),
        None => false,
    }
}

/// The letter of a short option (`-c`), or `None` for any other word.
fn short_letter(option: &str) -> Option<char> {
    let mut chars = option.strip_prefix('-')?.chars();
    let letter = chars.next()?;
    (chars.next().is_none() && letter != '-').then_some(letter)
}

/// Does a pattern's word name `option` itself: the option, `option=...`, or (short) `-cVALUE`?
/// Only the user's own spelling allows a refused option, never an abbreviation of it.
fn names_option(word: &str, option: &str) -> bool {
    if word == option {
        return true;
    }
    if option.starts_with("--") {
        return word.starts_with(&format!("{option}="));
    }
    short_letter(option).is_some() && word.starts_with(option) && !word.starts_with("--")
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
    fixed
        .iter()
        .zip(args)
        .all(|(w, a)| paddock_shell_judge::glob(w, a))
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

    #[test]
    fn every_abbreviation_of_a_refused_long_option_is_refused() {
        let allow = ["git", "cargo", "rg"];
        for line in [
            // The ones git's parse-options took past the list.
            "git push --exec=touch origin",
            "git push --receive-pa=touch origin",
            "git clone --upload-pa=touch url dir",
            // And the rest of the class.
            "git push --exec touch origin",
            "git push --rec=touch origin",
            "git push --r=touch origin",
            "git send-pack --exec=touch remote",
            "git ls-remote --exec=touch origin",
            "git ls-remote --upload-p=touch origin",
            "git fetch --upload-pac=touch origin",
            "git pull --upl=touch",
            "git archive --exe=touch --remote=x HEAD",
            "git rebase --ex=make main",
            "git rebase --e make main",
            "git clone --templ=/tmp/hooks url dir",
            "git init --template=/tmp/hooks",
            "git clone --config=core.fsmonitor=touch url dir",
            "git clone --conf core.fsmonitor=touch url dir",
            "git grep --open-files=vim x",
            "git difftool --extc=touch",
            "git send-email --sendmail=touch a.patch",
            "git send-email --smtp-serv=/tmp/x a.patch",
            "git --config-e=core.pager=X log",
            "git --exec-p=/tmp status",
            "cargo --conf target.x.runner=sh run",
            "cargo test --co=build.rustc-wrapper=x",
            "rg --pr cat needle",
            "rg --hostname=touch x",
        ] {
            let err = run(&allow, line).expect_err(line);
            assert!(err.contains("is refused"), "{line}: {err}");
        }
        let err = run(&allow, "git push --exec=touch origin").unwrap_err();
        assert!(
            err.starts_with("`git --exec` is refused"),
            "named outright: {err}"
        );
        let err = run(&allow, "git push --receive-pa=touch origin").unwrap_err();
        assert!(
            err.contains("`--receive-pa` is taken as `--receive-pack`")
                && err.contains("even one a harmless option shares"),
            "{err}"
        );
    }

    #[test]
    fn short_options_in_a_cluster_and_subcommands_after_global_options_are_refused() {
        let allow = ["git", "cargo"];
        for line in [
            "git -qc core.pager=touch log",
            "git clone -qu touch url dir",
            "git clone -qutouch url dir",
            "git rebase -ix make main",
            "git -C sub rebase -x make main",
            "git --git-dir .git rebase --exec make main",
            "git grep -iO x",
            "cargo build -vZ unstable-options",
        ] {
            assert!(run(&allow, line).is_err(), "{line}");
        }
    }

    #[test]
    fn other_options_and_the_users_own_spelling_still_pass() {
        let allow = [
            "git",
            "cargo",
            "git push --receive-pack=/usr/bin/git-receive-pack *",
        ];
        for line in [
            "git push --force-with-lease origin",
            "git diff --exit-code",
            "git log --ext-diff",
            "git log --reverse",
            "git commit --template=msg.txt",
            "git commit -am fix",
            "git fetch -u origin",
            "git status -sb",
            "cargo test --color=never",
            "cargo build --release",
        ] {
            assert!(run(&allow, line).is_ok(), "{line}: {:?}", run(&allow, line));
        }
        // Named in the pattern: the user's choice. An abbreviation of it is not the spelling.
        assert!(
            run(
                &allow,
                "git push --receive-pack=/usr/bin/git-receive-pack origin"
            )
            .is_ok()
        );
        assert!(run(&["git push --receive-pa=*"], "git push --receive-pa=x").is_err());
    }
}
