//! The chat's commands: one table (name, usage, help, action) that classifying a typed line,
//! `/help` and Tab completion all read, so a new command is one entry here and one arm where
//! the chat handles its action.

use paddock::log::Lane;

/// What a command does (handled in `mod.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Interrupt the running turn.
    Stop,
    /// Queue a follow-up for when the turn ends.
    Next,
    /// Show a call's whole result.
    Show,
    /// Summarize the history now, keeping what concerns the argument.
    Compact,
    /// Attach the image at the argument's path to the next message.
    Image,
    /// List the turns, or go back to where one began.
    Rewind,
    /// Start a new session from the history before a turn.
    Fork,
    Help,
    Quit,
}

pub struct Command {
    pub name: &'static str,
    pub usage: &'static str,
    pub help: &'static str,
    pub action: Action,
    /// Whether it needs an argument.
    pub takes: bool,
}

pub const COMMANDS: &[Command] = &[
    Command {
        name: "/stop",
        usage: "/stop",
        help: "interrupt the running turn (Ctrl-C too)",
        action: Action::Stop,
        takes: false,
    },
    Command {
        name: "/next",
        usage: "/next TEXT",
        help: "queue TEXT as a follow-up for when the running turn ends",
        action: Action::Next,
        takes: true,
    },
    Command {
        name: "/show",
        usage: "/show ID",
        help: "show the whole result of call ID (c1, ...)",
        action: Action::Show,
        takes: true,
    },
    Command {
        name: "/compact",
        usage: "/compact [FOCUS]",
        help: "between turns: summarize the history now, keeping what concerns FOCUS",
        action: Action::Compact,
        takes: false,
    },
    Command {
        name: "/image",
        usage: "/image PATH",
        help: "attach the image at PATH (PNG, JPEG, GIF, WebP) to your next message",
        action: Action::Image,
        takes: true,
    },
    Command {
        name: "/rewind",
        usage: "/rewind [N [code|conversation|both] [force] | call ID [force]]",
        help: "between turns: list the turns (and calls) and what each changed; with N, go back to where turn N began (files and conversation unless told); with call ID, the files as they were just before that call",
        action: Action::Rewind,
        takes: false,
    },
    Command {
        name: "/fork",
        usage: "/fork N|call ID [keep-files] [force]",
        help: "between turns: a new session from this one's history before turn N (or call ID), its files put back (this chat stays on this session)",
        action: Action::Fork,
        takes: true,
    },
    Command {
        name: "/help",
        usage: "/help",
        help: "commands and keys",
        action: Action::Help,
        takes: false,
    },
    Command {
        name: "/quit",
        usage: "/quit",
        help: "leave (Ctrl-D too); the session stays for --continue",
        action: Action::Quit,
        takes: false,
    },
];

/// The keys, for `/help`.
pub const KEYS: &str = "Enter sends · Alt-Enter, or \\ at the end of a line, starts a new line \
(pasted text keeps its lines) · ↑/↓ history · Ctrl-R searches it · Tab completes / commands · \
Ctrl-C interrupts a turn, or leaves when idle · Ctrl-D leaves";

/// A typed line.
#[derive(Debug, PartialEq)]
pub enum Typed {
    /// A message: the task when idle, steering while a turn runs.
    Message(String),
    Command(Action, String),
    /// Not a command, or one missing its argument: what to tell the user.
    Unknown(String),
    Blank,
}

/// Reads a typed line. A line starting with `/` is a command; start it with a space to send a
/// slash to the model.
pub fn classify(raw: &str) -> Typed {
    let line = raw.trim();
    if line.is_empty() {
        return Typed::Blank;
    }
    if !raw.starts_with('/') {
        return Typed::Message(line.to_string());
    }
    let (word, rest) = line
        .split_once(char::is_whitespace)
        .map_or((line, ""), |(c, r)| (c, r.trim()));
    match COMMANDS.iter().find(|c| c.name == word) {
        Some(c) if c.takes && rest.is_empty() => {
            Typed::Unknown(format!("{} needs an argument: {}", c.name, c.usage))
        }
        Some(c) => Typed::Command(c.action, rest.to_string()),
        None => Typed::Unknown(format!(
            "{word} is not a command; /help lists them (start a line with a space to send a slash)"
        )),
    }
}

/// The inbox lane of a command typed while a turn runs.
pub fn lane(action: Action) -> Option<Lane> {
    match action {
        Action::Stop => Some(Lane::Interrupt),
        Action::Next => Some(Lane::NextTurn),
        _ => None,
    }
}

/// `/help`.
pub fn help() -> String {
    let mut text = String::from("commands:\n");
    for c in COMMANDS {
        text.push_str(&format!("  {:<12} {}\n", c.usage, c.help));
    }
    text.push_str(&format!("keys: {KEYS}\n"));
    text
}

/// Commands starting with `prefix` (Tab completion).
pub fn completions(prefix: &str) -> Vec<&'static Command> {
    COMMANDS
        .iter()
        .filter(|c| c.name.starts_with(prefix))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_lines_map_to_messages_and_commands() {
        assert_eq!(
            classify("  look at b.rs "),
            Typed::Message("look at b.rs".into())
        );
        assert_eq!(
            classify("/next then c.rs"),
            Typed::Command(Action::Next, "then c.rs".into())
        );
        assert_eq!(
            classify("/stop"),
            Typed::Command(Action::Stop, String::new())
        );
        assert_eq!(
            classify("/quit"),
            Typed::Command(Action::Quit, String::new())
        );
        assert_eq!(
            classify("/show c2"),
            Typed::Command(Action::Show, "c2".into())
        );
        assert_eq!(classify("   "), Typed::Blank);
        assert_eq!(
            classify(" /usr/bin is odd"),
            Typed::Message("/usr/bin is odd".into())
        );
        assert!(matches!(classify("/next"), Typed::Unknown(m) if m.contains("/next TEXT")));
        assert!(
            matches!(classify("/nope"), Typed::Unknown(m) if m.contains("/nope is not a command"))
        );
        assert_eq!(completions("/s").len(), 2);
        assert_eq!(
            classify("/rewind"),
            Typed::Command(Action::Rewind, String::new())
        );
        assert_eq!(
            classify("/rewind 2 code"),
            Typed::Command(Action::Rewind, "2 code".into())
        );
        assert!(matches!(classify("/fork"), Typed::Unknown(m) if m.contains("/fork N")));
        assert!(help().contains("/show ID"));
    }
}
