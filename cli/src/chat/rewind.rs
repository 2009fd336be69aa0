//! What chat's `/rewind` and `/fork` ask for, read from their words, and the list of turns
//! (and, at the call grain, their calls) that a bare `/rewind` shows. The session does the
//! work (`Session::rewind`, `rewind_to_call`, `fork_here`); this only reads and writes text.

use paddock::session::TurnSummary;
use paddock::{ForkAt, RewindScope};

use super::sanitize;

/// What `/rewind ARGS` asks for.
#[derive(Debug, PartialEq)]
pub(super) enum Rewind<'a> {
    /// No argument: the list of turns.
    List,
    /// `/rewind call ID [force]`: the files as they were just before that call.
    Call { id: &'a str, force: bool },
    /// `/rewind N [code|conversation|both] [force]`: back to where turn N began.
    Turn {
        to: u64,
        scope: RewindScope,
        force: bool,
    },
}

/// Reads `/rewind`'s words; the error is the line to show.
pub(super) fn rewind(arg: &str) -> Result<Rewind<'_>, String> {
    let words: Vec<&str> = arg.split_whitespace().collect();
    match words.as_slice() {
        [] => Ok(Rewind::List),
        ["call"] => Err("/rewind call takes a call id: /rewind call ID [force]".into()),
        ["call", id, rest @ ..] => match rest.iter().find(|w| **w != "force") {
            Some(other) => Err(format!(
                "/rewind call ID takes force, not `{}`",
                sanitize(other)
            )),
            None => Ok(Rewind::Call {
                id,
                force: !rest.is_empty(),
            }),
        },
        [first, rest @ ..] => {
            let to = first
                .parse::<u64>()
                .map_err(|_| format!("/rewind takes a turn number, not `{}`", sanitize(first)))?;
            let mut scope = RewindScope::Both;
            let mut force = false;
            for word in rest {
                match *word {
                    "code" => scope = RewindScope::Code,
                    "conversation" => scope = RewindScope::Conversation,
                    "both" => scope = RewindScope::Both,
                    "force" => force = true,
                    other => {
                        return Err(format!(
                            "/rewind N takes code, conversation, both or force, not `{}`",
                            sanitize(other)
                        ));
                    }
                }
            }
            Ok(Rewind::Turn { to, scope, force })
        }
    }
}

/// What `/fork ARGS` asks for: where, then whether to keep the files as they are and whether
/// to force the restore.
pub(super) fn fork(arg: &str) -> Result<(ForkAt, bool, bool), String> {
    let words: Vec<&str> = arg.split_whitespace().collect();
    let (at, flags) = match words.as_slice() {
        ["call", call, flags @ ..] => (ForkAt::Call((*call).to_string()), flags),
        [n, flags @ ..] if n.parse::<u64>().is_ok() => {
            (ForkAt::Turn(n.parse().unwrap_or(0)), flags)
        }
        _ => {
            return Err(
                "/fork takes a turn number or a call: /fork N [keep-files] [force], \
                        /fork call ID [keep-files] [force]"
                    .into(),
            );
        }
    };
    if let Some(other) = flags
        .iter()
        .find(|w| !matches!(**w, "keep-files" | "force"))
    {
        return Err(format!(
            "/fork takes keep-files or force, not `{}`",
            sanitize(other)
        ));
    }
    Ok((at, flags.contains(&"keep-files"), flags.contains(&"force")))
}

/// The turns of the conversation with what each (and each checkpointed call) changed, and how
/// to go back to one.
pub(super) fn turn_list(turns: &[TurnSummary]) -> String {
    let paths = |n: Option<usize>| n.map_or("-".to_string(), |n| format!("{n} path(s)"));
    let mut text = String::from("turns of this conversation, and what each changed:\n");
    for t in turns {
        let prompt = t.prompt.as_deref().unwrap_or("(went on without a message)");
        text.push_str(&format!(
            "  {:>3}  {:<12}  {}\n",
            t.turn,
            paths(t.changed),
            sanitize(&paddock_types::text::one_line(prompt, 60))
        ));
        for c in &t.calls {
            text.push_str(&format!(
                "       {:<12}  call {} ({})\n",
                paths(c.changed),
                sanitize(&c.call),
                sanitize(c.tool.as_deref().unwrap_or("?"))
            ));
        }
    }
    text.push_str(
        "/rewind N goes back to where turn N began: files and conversation; add `code` or \
         `conversation` for one of them, `force` to restore files changed outside the session \
         too",
    );
    if turns.iter().any(|t| !t.calls.is_empty()) {
        text.push_str(
            "\n/rewind call ID puts the files back as they were just before that call (the \
             files only); /fork call ID forks from there",
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewind_reads_a_list_a_call_or_a_turn_and_names_a_wrong_word() {
        assert_eq!(rewind(" "), Ok(Rewind::List));
        assert_eq!(
            rewind("call c1 force"),
            Ok(Rewind::Call {
                id: "c1",
                force: true
            })
        );
        assert_eq!(
            rewind("2 code"),
            Ok(Rewind::Turn {
                to: 2,
                scope: RewindScope::Code,
                force: false
            })
        );
        assert!(rewind("call").unwrap_err().contains("takes a call id"));
        assert!(rewind("call c1 now").unwrap_err().contains("not `now`"));
        assert!(rewind("two").unwrap_err().contains("not `two`"));
        assert!(rewind("2 all").unwrap_err().contains("not `all`"));
    }

    #[test]
    fn fork_reads_a_turn_or_a_call_and_its_flags() {
        let (at, keep, force) = fork("call c2 keep-files").unwrap();
        assert_eq!((at, keep, force), (ForkAt::Call("c2".into()), true, false));
        let (at, keep, force) = fork("3 force").unwrap();
        assert_eq!((at, keep, force), (ForkAt::Turn(3), false, true));
        assert!(fork("").unwrap_err().contains("/fork N"));
        assert!(fork("3 now").unwrap_err().contains("not `now`"));
    }
}
