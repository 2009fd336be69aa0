//! Why a session could not be set up, typed: the code a `--json` caller sees, the message, and
//! every finding of a refused preset. Nothing here prints; a front-end renders it once.

use super::verdict::{Refused, Shown};

/// Why a session (or a command's preset) could not be set up.
#[derive(Debug, Clone)]
pub struct SetupError {
    /// `USAGE_ERROR` (the preset, a flag, the log, the model settings), `BAD_PLUGIN`,
    /// `BAD_HOOK`, or `HOST_ERROR` (the data directory, the machine).
    pub code: &'static str,
    pub message: String,
    /// A refused preset's findings (errors and warnings, in the preset's order); shown before
    /// the message.
    pub findings: Vec<Shown>,
}

impl SetupError {
    /// A mistake in what was asked for: a preset, a flag, a session id.
    pub fn usage(message: impl Into<String>) -> SetupError {
        SetupError::new("USAGE_ERROR", message)
    }

    /// The machine failed us: the data directory, a log that cannot be written.
    pub fn host(message: impl Into<String>) -> SetupError {
        SetupError::new("HOST_ERROR", message)
    }

    pub fn new(code: &'static str, message: impl Into<String>) -> SetupError {
        SetupError {
            code,
            message: message.into(),
            findings: Vec::new(),
        }
    }
}

impl From<Refused> for SetupError {
    fn from(refused: Refused) -> SetupError {
        SetupError {
            code: refused.code,
            message: refused.message,
            findings: refused.findings,
        }
    }
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for finding in &self.findings {
            writeln!(f, "{}: {}: {}", finding.at, finding.key, finding.message)?;
        }
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for SetupError {}
