//! What a bash string will execute, found without running it, and how the `shell` tool's
//! `allow` / `ask` / `deny` rules judge that.
//!
//! The `shell` tool hands model-written bash source to a persistent bash inside the kernel
//! jail. Before it runs, paddock decides whether to run it unasked, ask the user, or refuse.
//! [`analyse`] lists every simple command the string may execute ([`Command`]), what cannot be
//! known statically ([`Unresolved`]) and the redirections that write ([`Write`]); [`judge`]
//! matches that against the preset's [`Rules`] and gives a [`Verdict`].
//!
//! What is found:
//! - commands in every construct bash has (pipelines, lists, subshells, groups, `if`, loops,
//!   `case`, function bodies, coprocesses), and in every place code hides inside words:
//!   `$(...)`, backticks, `<(...)`/`>(...)`, unquoted heredoc bodies, `${x:-$(...)}`,
//!   arithmetic, redirect targets, assignments, `case` and `for` words, `[[ ]]` operands;
//! - the real name behind quoting (`r\m`, `'r'm`, `$'\x72m'`), by the word's quote removal;
//! - commands run through wrappers (`sudo`, `env`, `timeout`, `xargs`, `find -exec`,
//!   `bash -c STRING`, `trap STRING`, ...), recursively; each is listed once, as the command
//!   that runs, with the wrappers it came through in [`Command::via`].
//!
//! What is [`Unresolved`], so asked: a command name built by an expansion, a glob or a brace
//! expansion; `eval`, `source`, `fc`, calls to functions or aliases; assignments to variables
//! that make programs run other code (`PATH`, `LD_PRELOAD`, `GIT_*`, ... see `variables.rs`);
//! shells reading code from a file or stdin; anything that does not parse.
//!
//! What is deliberately left to the jail: what a program does with its arguments once it runs
//! (`git -c core.pager=...`, `python -c`, `make`, a script on disk), the values variables hold
//! at run time (an arithmetic context dereferencing a variable that holds `a[$(cmd)]` runs
//! `cmd`; only a subscript written into the source with an expansion in it is flagged), and
//! whatever the user's own earlier calls set up beyond the [`Session`]'s functions and aliases.
//! The judge narrows what runs unasked; the kernel limits what anything can do.
//!
//! The parser is brush-parser, the parser of the brush shell: pure Rust, maintained, with a
//! bash (not only POSIX) grammar and a separate word parser that splits a word into its quoted
//! parts and expansions, which is what finding code inside words needs. Its 0.4 grammar has no
//! `select` loop and takes no process substitution in a `for` word list: such strings do not
//! parse, and what does not parse is asked, never allowed. A panic inside the parser is caught
//! and is unresolved too.
//!
//! Beyond the words themselves, [`Command`] says which of them are known only at run time
//! (`dynamic`) and whether a wrapper appends more (`more_args`), so that `ask` and `deny` rules
//! can take those words as any word (`git $sub` may be `git push`).

mod rules;
mod variables;
mod walk;
mod words;
mod wrappers;

#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

pub use rules::{Rules, Verdict, glob, judge};

/// What the persistent shell already defines (from earlier calls): names that, as a command,
/// run a function or an alias rather than a program.
#[derive(Clone, Debug, Default)]
pub struct Session {
    pub functions: BTreeSet<String>,
    pub aliases: BTreeSet<String>,
}

/// What a bash string will execute, as far as can be known without running it.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    /// Every simple command that may execute, in the order bash starts them (a command
    /// substitution in a word before the command it is in), after unwrapping wrappers.
    pub commands: Vec<Command>,
    /// What cannot be resolved statically; each counts as matching every `ask` rule.
    pub unresolved: Vec<Unresolved>,
    /// Redirections that write (`>`, `>>`, `>|`, `&>`, `&>>`, `<>`), with their target.
    pub writes: Vec<Write>,
}

/// One simple command that may run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    /// Its words after quote removal; `argv[0]` is the program as written. A word whose value
    /// is known only at run time (an expansion, a glob, `{}` of `find -exec`) holds its source
    /// text and its index is in `dynamic`.
    pub argv: Vec<String>,
    /// The basename of `argv[0]` (`/usr/bin/rm` is `rm`).
    pub program: String,
    /// The wrappers it was found through, outermost first, e.g. `["sudo", "bash -c"]`.
    pub via: Vec<String>,
    /// Its source text, for the question shown to the user (for a wrapped command, the text of
    /// the command that wraps it).
    pub text: String,
    /// Indices into `argv` of words known only at run time. `ask` and `deny` rules take them
    /// as any word; `allow` rules only as a `*`.
    pub dynamic: Vec<usize>,
    /// The wrapper adds arguments at run time (`xargs`, `find -exec ... +`): `ask` and `deny`
    /// rules take them as any words; only an `allow` pattern ending in `*` (or a bare program
    /// name) allows them.
    pub more_args: bool,
}

/// Something that may run but cannot be named statically.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unresolved {
    /// Why, e.g. "the command name comes from an expansion".
    pub why: String,
    /// The source text it was found in.
    pub text: String,
}

/// A redirection that writes a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Write {
    /// The target after quote removal; `None` when it comes from an expansion.
    pub target: Option<String>,
    /// `>>` or `&>>`.
    pub append: bool,
    /// The redirection's source text.
    pub text: String,
}

/// Lists what `source` will execute, given what the persistent shell already defines.
/// Never fails: what cannot be parsed or resolved is an [`Unresolved`] item.
pub fn analyse(source: &str, session: &Session) -> Analysis {
    if let Some(why) = too_deep(source) {
        let mut analysis = Analysis::default();
        analysis.unresolved.push(Unresolved {
            why,
            text: source.chars().take(200).collect(),
        });
        return analysis;
    }
    // brush-parser recurses per nesting level and the walk per level of code in code; a stack
    // overflow aborts the process (no panic to catch), so both run on a thread whose stack is
    // far larger than the nesting `too_deep` lets through needs.
    let owned = (source.to_owned(), session.clone());
    let worker = std::thread::Builder::new()
        .name("shell-judge".to_owned())
        .stack_size(WORKER_STACK)
        .spawn(move || walk::Walker::run(&owned.0, &owned.1));
    match worker.map(std::thread::JoinHandle::join) {
        Ok(Ok(analysis)) => analysis,
        Ok(Err(_)) => {
            let mut analysis = Analysis::default();
            analysis.unresolved.push(Unresolved {
                why: "the analysis failed on this input".to_owned(),
                text: source.chars().take(200).collect(),
            });
            analysis
        }
        // No thread to be had: walk here, within the nesting limit.
        Err(_) => walk::Walker::run(source, session),
    }
}

const WORKER_STACK: usize = 64 << 20;

/// Brackets nested deeper than any real command line are refused before parsing, as is a
/// string longer than any real command line.
const MAX_NESTING: usize = 128;
const MAX_LEN: usize = 1 << 20;

fn too_deep(source: &str) -> Option<String> {
    if source.len() > MAX_LEN {
        return Some(format!(
            "the command is longer than {MAX_LEN} bytes, more than this analysis reads"
        ));
    }
    let (mut depth, mut deepest) = (0usize, 0usize);
    for b in source.bytes() {
        match b {
            b'(' | b'{' | b'[' | b'`' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' | b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    (deepest > MAX_NESTING).then(|| {
        format!("brackets nest deeper than {MAX_NESTING} levels, more than this analysis parses")
    })
}

/// `words` as one line of bash that runs exactly them: each word as itself when bash would
/// read nothing in it, else single-quoted. (How a program and its arguments given apart, as
/// `run_command` takes them, are judged and shown like a shell command.)
pub fn quote_words(words: &[String]) -> String {
    words
        .iter()
        .map(|word| {
            let plain = !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod quote_tests {
    use super::*;

    #[test]
    fn quoted_words_are_read_back_as_the_same_command() {
        let words: Vec<String> = ["git", "commit", "-m", "it's $(rm x)", ""]
            .map(String::from)
            .into();
        let line = quote_words(&words);
        assert_eq!(line, r#"git commit -m 'it'\''s $(rm x)' ''"#);
        let analysis = analyse(&line, &Session::default());
        assert_eq!(analysis.commands.len(), 1, "{analysis:?}");
        assert_eq!(analysis.commands[0].argv, words);
    }
}
