//! From finish reason and body to the message's outcome, and which calls may run.
//!
//! V1 (a length cut blocks every call, however parsable, with `TRUNCATED_CALL_ERROR`), B2
//! ("no tool call" alone is not "done": the body is read too) and B1's `dropped_tool_call`
//! (`announces_tool_call`, a documented, conservative heuristic).

use super::diagnostics::Diagnostics;
use crate::model::types::Diagnostic;
use crate::model::types::{
    Reasoning,
    AssembledCall, AssistantMessage, AttemptId, Finish, Outcome, STOPPED_CALL_ERROR,
    TRUNCATED_CALL_ERROR, Usage,
};

/// Everything an assembler gathered, ready to become a message.
pub(super) struct Gathered {
    pub attempt: AttemptId,
    pub text: String,
    pub calls: Vec<AssembledCall>,
    pub finish: Option<Finish>,
    pub usage: Option<Usage>,
    pub diagnostics: Diagnostics,
    pub reasoning: Vec<Reasoning>,
}

/// Decides finish (inferring it when the provider sent none) and outcome, and blocks the calls
/// that must not run.
pub(super) fn conclude(g: Gathered) -> AssistantMessage {
    let Gathered {
        attempt,
        text,
        mut calls,
        finish,
        usage,
        mut diagnostics,
        reasoning,
    } = g;
    let finish_inferred = finish.is_none();
    let finish = finish.unwrap_or_else(|| {
        let inferred = infer_finish(&calls);
        diagnostics.note(Diagnostic::FinishInferred {
            finish: inferred.clone(),
        });
        inferred
    });
    let outcome = match finish {
        Finish::Length => Outcome::Truncated,
        Finish::ContentFilter => Outcome::ContentFiltered,
        Finish::Refusal => Outcome::Refused,
        _ if !calls.is_empty() => Outcome::ToolCalls,
        Finish::ToolCalls => Outcome::DroppedToolCall,
        _ if announces_tool_call(&text) => Outcome::DroppedToolCall,
        _ => Outcome::Completed,
    };
    let blocked = match outcome {
        Outcome::Truncated => Some(TRUNCATED_CALL_ERROR),
        Outcome::ContentFiltered | Outcome::Refused => Some(STOPPED_CALL_ERROR),
        _ => None,
    };
    if let Some(reason) = blocked {
        for call in &mut calls {
            call.not_executable = Some(reason.to_owned());
        }
    }
    AssistantMessage {
        attempt,
        text,
        calls,
        finish,
        finish_inferred,
        reasoning,
        outcome,
        usage,
        cost_usd: None,
        diagnostics: diagnostics.into_vec(),
    }
}

/// No finish reason arrived: calls whose last arguments do not parse were most likely cut off,
/// so the response counts as truncated; otherwise calls mean `tool_calls` and text means `stop`.
fn infer_finish(calls: &[AssembledCall]) -> Finish {
    match calls.last() {
        None => Finish::Stop,
        Some(last) if last.parsed.is_none() && !last.call.arguments.trim().is_empty() => {
            Finish::Length
        }
        Some(_) => Finish::ToolCalls,
    }
}

/// Words that, right after "I'll" or "Let me", announce an action a tool would perform.
const ACTION_VERBS: &[&str] = &[
    "call", "use", "run", "execute", "invoke", "read", "open", "check", "look", "search", "grep",
    "find", "list", "view", "inspect", "examine", "explore", "fetch", "write", "edit", "create",
    "modify", "update", "apply", "add", "fix", "change", "start", "try", "test", "build",
    "compile", "install", "take", "see", "verify", "delete", "remove", "rename", "move", "patch",
];
const ANNOUNCERS: &[&str] = &[
    "let me ",
    "i'll ",
    "i will ",
    "i'm going to ",
    "i am going to ",
    "i'm now going to ",
];
const FILLERS: &[&str] = &[
    "now", "first", "then", "next", "quickly", "also", "just", "go", "and",
];
/// Tool-call markup that some servers leave in the text when their parser fails.
const LEAKED_MARKUP: &[&str] = &["<tool_call>", "<function=", "<|tool_call", "[TOOL_CALLS]"];

/// True when text that ends a response announces a tool call that did not come. Conservative:
/// only the last sentence counts; questions, offers ("if you want, I'll ...") and "let me know"
/// do not; a trailing colon does ("Let me read the file:"), and so does leaked tool-call markup.
pub fn announces_tool_call(text: &str) -> bool {
    let text = text.trim_end();
    if LEAKED_MARKUP.iter().any(|m| text.contains(m)) {
        return true;
    }
    if text.ends_with(':') {
        return true;
    }
    if text.is_empty() || text.ends_with('?') {
        return false;
    }
    let body = text.trim_end_matches(['.', '!', '…']);
    let sentence = last_sentence(body).to_lowercase().replace('\u{2019}', "'");
    if sentence.contains("if you")
        || sentence.contains("let me know")
        || sentence.contains("would you")
    {
        return false;
    }
    ANNOUNCERS.iter().any(|announcer| {
        sentence.match_indices(announcer).any(|(at, a)| {
            let preceded_by_word = sentence[..at]
                .chars()
                .next_back()
                .is_some_and(char::is_alphanumeric);
            !preceded_by_word && starts_with_action(&sentence[at + a.len()..])
        })
    })
}

/// The text after the last sentence end (`.`, `!` or `?` before white space, or a new line);
/// a dot inside a word (`main.rs`) ends nothing.
fn last_sentence(body: &str) -> &str {
    let bytes = body.as_bytes();
    let start = (0..bytes.len())
        .rev()
        .find(|&i| {
            bytes[i] == b'\n'
                || (matches!(bytes[i], b'.' | b'!' | b'?')
                    && bytes.get(i + 1).is_some_and(u8::is_ascii_whitespace))
        })
        .map_or(0, |i| i + 1);
    &body[start..]
}

fn starts_with_action(rest: &str) -> bool {
    let mut words = rest
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty());
    let verb = words.find(|w| !FILLERS.contains(w));
    verb.is_some_and(|v| ACTION_VERBS.contains(&v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announcements_without_a_call_are_detected() {
        for text in [
            "I'll use the read_file tool to look at main.rs.",
            "Let me read the config file",
            "Now I'll run the tests.",
            "Found the bug. I will now edit src/lib.rs to fix it.",
            "Let me check the directory structure:",
            "Here is the plan:\n",
            "I’ll search for the function.",
            "Calling it now <tool_call>{\"name\": \"x\"}</tool_call>",
        ] {
            assert!(announces_tool_call(text), "{text}");
        }
    }

    #[test]
    fn finished_answers_questions_and_offers_are_not_announcements() {
        for text in [
            "",
            "The tests pass. The bug was an off-by-one in parse().",
            "Should I run the tests?",
            "Let me know if you need anything else.",
            "If you want, I'll update the docs as well.",
            "I'll be happy to help further.",
            "Done. I ran the tests earlier and they passed.",
            "Let me summarize: the build works.",
        ] {
            assert!(!announces_tool_call(text), "{text}");
        }
    }
}
