//! How a command's failure is shown, decided in one place (errors printed once, at the top):
//! a setup error as `error:` lines on standard error, or one JSON object for `--json`
//! callers; a preset's findings, each with where, what and the fix. Everything printed here
//! quotes text from elsewhere (a preset, a plugin) and passes `sanitize` (T3).

use serde_json::json;

use super::Exit;
use super::style::{self, RED, YELLOW, json_for_terminal, paint, sanitize};
use crate::session::SetupError;
use crate::session::verdict::{Refused, Shown};

/// A usage or configuration error, one `error:` a line; exit 2.
pub(crate) fn fail(message: &str) -> Exit {
    setup_error(false, "USAGE_ERROR", message)
}

/// Prints a setup error in the requested form; setup errors are usage/configuration errors.
pub(crate) fn setup_error(json: bool, code: &str, message: &str) -> Exit {
    if json {
        let object =
            json!({"ok": false, "error": {"code": code, "message": message, "retryable": false}});
        println!("{}", json_for_terminal(&object.to_string()));
    } else {
        // Setup errors quote files and plugins (a preset's text, a plugin's message); every
        // mistake of a preset file is one `error:` a line.
        for line in message.lines() {
            eprintln!(
                "{} {}",
                paint(style::color_enabled_stderr(), RED, "error:"),
                sanitize(line)
            );
        }
    }
    Exit::Usage
}

/// Prints why a session or a command's preset could not be set up: every finding of a
/// refused preset, then the message (or, with `json`, one JSON object).
pub(crate) fn setup_failed(json: bool, error: &SetupError) -> Exit {
    if !json {
        for finding in &error.findings {
            print_finding(finding);
        }
    }
    setup_error(json, error.code, &error.message)
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

/// Every finding of a refused preset; the summary is the caller's to print.
pub(crate) fn print_findings(refused: &Refused) {
    for finding in &refused.findings {
        print_finding(finding);
    }
}
