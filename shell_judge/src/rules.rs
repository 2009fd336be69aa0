//! The preset's `allow`, `ask` and `deny` patterns, and the verdict on an [`Analysis`].
//!
//! A pattern is a program with argument words, as in the `exec` capability's allow-list: a
//! bare program name (`"ls"`: any arguments), `"git status"` (exactly that), `"cargo test *"`
//! (`cargo test` and anything after, also nothing), `*` inside a word for any text
//! (`"git log --format=*"`), and `"*"` alone for any command. The program matches by basename
//! (`/usr/bin/rm` is `rm`).
//!
//! `allow` matches strictly: the arguments start with the pattern's words, one for one.
//! `ask` and `deny` match generously, since missing one is the dangerous direction: the
//! pattern's words need only appear in order among the arguments (`git -C dir push` matches
//! `git push *`), and a word known only at run time may be any of them. A `deny` reached only
//! through such a word is asked rather than refused. Short-option clusters are not taken apart
//! (`rm -fr` does not match `rm -r *`); a rule meant for options should name each spelling.
//!
//! The wrappers a command ran through (`sudo`, `timeout`, `xargs`, `bash -c`) run too: each is
//! judged as its program with any arguments, so `timeout 5 cargo test` needs `timeout` (or
//! `timeout *`) allowed as well as `cargo test *`, and `deny = ["sudo"]` refuses `sudo ls`.

use crate::{Analysis, Command};

/// The preset's patterns, parsed.
#[derive(Clone, Debug)]
pub struct Rules {
    allow: Vec<Pattern>,
    ask: Vec<Pattern>,
    deny: Vec<Pattern>,
}

#[derive(Clone, Debug)]
struct Pattern {
    source: String,
    program: String,
    args: Vec<String>,
}

/// What to do with a shell call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every command is allowed, none is to be asked, nothing is unresolved.
    Allow,
    /// Ask the user; the reasons, one per command or unresolved item, name the rule.
    Ask(Vec<String>),
    /// Refuse: the command and the deny rule it matched.
    Deny(String),
}

impl Rules {
    /// Parses the three lists; an empty pattern is an error naming its list.
    pub fn new(allow: &[String], ask: &[String], deny: &[String]) -> Result<Rules, String> {
        Ok(Rules {
            allow: parse_list("allow", allow)?,
            ask: parse_list("ask", ask)?,
            deny: parse_list("deny", deny)?,
        })
    }
}

fn parse_list(key: &str, patterns: &[String]) -> Result<Vec<Pattern>, String> {
    patterns
        .iter()
        .map(|source| {
            let mut words = source.split_whitespace().map(str::to_owned);
            let program = words.next().ok_or_else(|| {
                format!("shell rule {key} = {source:?} is empty: write a program, e.g. \"ls\" or \"cargo test *\"")
            })?;
            Ok(Pattern {
                source: source.clone(),
                program: basename(&program).to_owned(),
                args: words.collect(),
            })
        })
        .collect()
}

/// How a generous (ask/deny) pattern matches a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Match {
    No,
    /// Only if a word known at run time turns out to be the pattern's word.
    Maybe,
    Yes,
}

/// The verdict on `analysis` under `rules`.
pub fn judge(analysis: &Analysis, rules: &Rules) -> Verdict {
    let mut reasons = Vec::new();
    let wrappers: Vec<Command> = analysis
        .commands
        .iter()
        .flat_map(wrapper_commands)
        .collect();
    for (command, is_wrapper) in analysis
        .commands
        .iter()
        .map(|c| (c, false))
        .chain(wrappers.iter().map(|c| (c, true)))
    {
        let shown = shown(command, is_wrapper);
        for rule in &rules.deny {
            match generous(rule, command) {
                Match::Yes => {
                    return Verdict::Deny(format!(
                        "{shown} matches the deny rule \"{}\"",
                        rule.source
                    ));
                }
                Match::Maybe => reasons.push(format!(
                    "{shown} may match the deny rule \"{}\" (a word is known only at run time)",
                    rule.source
                )),
                Match::No => {}
            }
        }
        let mut asked = false;
        for rule in &rules.ask {
            if generous(rule, command) != Match::No {
                asked = true;
                reasons.push(format!("{shown} matches the ask rule \"{}\"", rule.source));
            }
        }
        if !asked && !rules.allow.iter().any(|rule| strict(rule, command)) {
            reasons.push(format!("{shown} matches no allow rule"));
        }
    }
    for item in &analysis.unresolved {
        reasons.push(format!(
            "{} in `{}`: it counts as matching every ask rule",
            item.why, item.text
        ));
    }
    if reasons.is_empty() {
        Verdict::Allow
    } else {
        Verdict::Ask(reasons)
    }
}

/// The wrappers a command came through are programs that run too, with arguments this does
/// not keep: each is judged as its program name with any arguments.
fn wrapper_commands(command: &Command) -> Vec<Command> {
    command
        .via
        .iter()
        .filter_map(|via| via.split_whitespace().next())
        .filter(|program| !matches!(*program, "trap" | "alias" | "eval"))
        .map(|program| Command {
            argv: vec![program.to_owned()],
            program: program.to_owned(),
            via: Vec::new(),
            text: command.text.clone(),
            dynamic: Vec::new(),
            more_args: true,
        })
        .collect()
}

fn shown(command: &Command, is_wrapper: bool) -> String {
    let argv = command.argv.join(" ");
    if is_wrapper {
        format!("`{}` (the wrapper in `{}`)", command.program, command.text)
    } else if command.via.is_empty() && argv == command.text {
        format!("`{argv}`")
    } else if command.via.is_empty() {
        format!("`{argv}` (in `{}`)", command.text)
    } else {
        format!(
            "`{argv}` (run through {} in `{}`)",
            command.via.join(", "),
            command.text
        )
    }
}

/// `allow`: the program, then the pattern's words one for one; a trailing `*` takes any rest.
fn strict(rule: &Pattern, command: &Command) -> bool {
    if rule.program == "*" && rule.args.is_empty() {
        return true;
    }
    if !glob(&rule.program, &command.program) {
        return false;
    }
    if rule.args.is_empty() {
        return true;
    }
    let args = command.argv.get(1..).unwrap_or_default();
    let (fixed, rest) = match rule.args.split_last() {
        Some((last, fixed)) if last == "*" => (fixed, true),
        _ => (rule.args.as_slice(), false),
    };
    if args.len() < fixed.len() || (!rest && (args.len() != fixed.len() || command.more_args)) {
        return false;
    }
    fixed.iter().zip(args).enumerate().all(|(i, (word, arg))| {
        if command.dynamic.contains(&(i + 1)) {
            word == "*"
        } else {
            glob(word, arg)
        }
    })
}

/// `ask` and `deny`: the program, and the pattern's words in order anywhere in the arguments.
fn generous(rule: &Pattern, command: &Command) -> Match {
    if !(rule.program == "*" || glob(&rule.program, &command.program)) {
        return Match::No;
    }
    if in_order(rule, command, false) {
        Match::Yes
    } else if in_order(rule, command, true) {
        Match::Maybe
    } else {
        Match::No
    }
}

/// Whether the rule's words appear in order among the arguments, a run-time word standing for
/// any of them when `dynamic_matches`; words a wrapper appends may hold the missing rest.
fn in_order(rule: &Pattern, command: &Command, dynamic_matches: bool) -> bool {
    let mut at = 1;
    for word in rule.args.iter().filter(|w| *w != "*") {
        let found = (at..command.argv.len()).find(|&i| {
            (dynamic_matches && command.dynamic.contains(&i)) || glob(word, &command.argv[i])
        });
        match found {
            Some(i) => at = i + 1,
            None => return dynamic_matches && command.more_args,
        }
    }
    true
}

fn basename(path: &str) -> &str {
    if path == "*" {
        return path;
    }
    path.rsplit('/').next().unwrap_or(path)
}

/// `*` in `pattern` matches any run of characters: one word of a pattern against one word of
/// a command (`run_command`'s allow-list reads its patterns' words the same way).
pub fn glob(pattern: &str, text: &str) -> bool {
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
        match text.get(at..end).and_then(|t| t.find(part)) {
            Some(i) => at += i + part.len(),
            None => return false,
        }
    }
    true
}
