//! How a command's failure is shown, decided in one place (errors printed once, at the top):
//! a setup error as `error:` lines on standard error, or one JSON object for `--json`
//! callers; a preset's findings, each with where, what and the fix. Everything printed here
//! quotes text from elsewhere (a preset, a plugin) and passes `sanitize` (T3).

use serde_json::json;

use super::Exit;
use super::style::{self, RED, YELLOW, json_for_terminal, paint, sanitize};
use paddock::session::verdict::Shown;
use paddock::session::{SetupCode, SetupError};

/// Why a command could not do its work: a code (`USAGE_ERROR`, `HOST_ERROR`, ...), the
/// message, a refused preset's findings, and the exit code. Commands return it; `show` prints
/// it once, at the top, in the form the command line asked for.
#[derive(Debug)]
pub(crate) struct Failure {
    pub code: &'static str,
    pub message: String,
    pub findings: Vec<Shown>,
    pub exit: Exit,
}

impl Failure {
    /// A usage or configuration error: exit 2.
    pub(crate) fn usage(message: impl std::fmt::Display) -> Failure {
        Failure::new("USAGE_ERROR", message, Exit::Usage)
    }

    /// The machine failed paddock during set-up (the data directory, the session log): exit 2,
    /// as every set-up failure.
    pub(crate) fn host(message: impl std::fmt::Display) -> Failure {
        Failure::new("HOST_ERROR", message, Exit::Usage)
    }

    /// A plugin that could not be installed, inspected or removed: exit 1.
    pub(crate) fn plugin(message: impl std::fmt::Display) -> Failure {
        Failure::new("PLUGIN_ERROR", message, Exit::Failed)
    }

    pub(crate) fn new(code: &'static str, message: impl std::fmt::Display, exit: Exit) -> Failure {
        Failure {
            code,
            message: message.to_string(),
            findings: Vec::new(),
            exit,
        }
    }
}

impl From<SetupError> for Failure {
    fn from(error: SetupError) -> Failure {
        // The library says what is wrong; the command line adds the option that helps.
        let message = match error.code {
            SetupCode::SessionInUse => format!("{}, or pass --wait to wait for it", error.message),
            SetupCode::NoModel => format!(
                "{} (at the command line: --base-url URL for a server, --demo for the \
                 scripted demo, --preset NAME for another preset)",
                error.message
            ),
            _ => error.message,
        };
        Failure {
            code: error.code.as_str(),
            message,
            findings: error.findings,
            exit: Exit::Usage,
        }
    }
}

/// What a command returns: how it ended, or why it could not do its work.
pub(crate) type CommandResult = Result<Exit, Failure>;

/// How a failure is printed, decided from the command line before the command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// `error:` lines on standard error.
    Text,
    /// One JSON object on standard output (`tool call --json`, `tool batch`, `tool list
    /// --json`): `{"ok": false, "error": {...}}`.
    Object,
    /// `run --json`: the `result` line every run ends with, stop `setup_error`.
    ResultLine,
}

impl Form {
    /// The form of a command line clap could not parse, read from its words alone: the same
    /// choice `Command::failure_form` makes from a parsed one (`run --json`, `tool list|call
    /// --json`, `tool batch`).
    pub(crate) fn of_raw_args(args: &[String]) -> Form {
        let json = args
            .iter()
            .any(|a| a == "--json" || a.starts_with("--json="));
        // The first word that is not an option (or an option's value) names the command.
        let mut words = args.iter().filter(|a| !a.starts_with('-'));
        match (
            words.next().map(String::as_str),
            words.next().map(String::as_str),
        ) {
            (Some("run"), _) if json => Form::ResultLine,
            (Some("tool"), Some("batch")) => Form::Object,
            (Some("tool"), Some("list" | "call")) if json => Form::Object,
            _ => Form::Text,
        }
    }
}

/// Prints `failure` once in `form` (a refused preset's findings always on standard error,
/// each with where and the fix), and returns its exit code.
pub(crate) fn show(failure: &Failure, form: Form) -> Exit {
    for finding in &failure.findings {
        print_finding(finding);
    }
    match form {
        Form::Object => {
            let object = json!({"ok": false, "error": {"code": failure.code,
                "message": failure.message, "retryable": false}});
            println!("{}", json_for_terminal(&object.to_string()));
        }
        Form::ResultLine => {
            super::json_events::setup_failed(failure.code, &failure.message, failure.exit as i32);
        }
        Form::Text => {
            // Failures quote files and plugins (a preset's text, a plugin's message); every
            // mistake of a preset file is one `error:` a line.
            for line in failure.message.lines() {
                eprintln!(
                    "{} {}",
                    paint(style::color_enabled_stderr(), RED, "error:"),
                    sanitize(line)
                );
            }
        }
    }
    failure.exit
}

/// One finding on standard error: `error:` or `warning:`, where, what, and the fix on the
/// next line; the text is the preset's (T3).
pub(crate) fn print_finding(finding: &Shown) {
    let (label, tint) = match finding.error {
        true => ("error:", RED),
        false => ("warning:", YELLOW),
    };
    eprintln!(
        "{} {}: {}: {}\n  fix: {}",
        paint(style::color_enabled_stderr(), tint, label),
        sanitize(&finding.at),
        sanitize(&finding.key),
        sanitize(&finding.message),
        sanitize(&finding.fix)
    );
}
