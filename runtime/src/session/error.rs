//! Why a session could not be set up, typed: the code a `--json` caller sees, the message, and
//! every finding of a refused preset. Nothing here prints; a front-end renders it once.

use super::verdict::Shown;

/// What kind of thing stopped a session from being set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SetupCode {
    /// A mistake in what was asked for: the preset, an option, a session id, the log, the
    /// model settings.
    Usage,
    /// A plugin could not be found or loaded.
    BadPlugin,
    /// A hook could not be found, loaded or configured.
    BadHook,
    /// A plugin or MCP server differs from what the project's lock file pins.
    LockMismatch,
    /// Another process writes the session's log (a session has one writer).
    SessionInUse,
    /// No model is named: the preset has no `[model]` and none was chosen, or a session that
    /// ran without a model server is moved without naming one.
    NoModel,
    /// The preset relies on a layer of paddock's sandbox this machine does not allow.
    SandboxUnavailable,
    /// The machine failed: the data directory, a log that cannot be written.
    Host,
}

impl SetupCode {
    /// The code as `--json` output and `docs/json-events.md` spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            SetupCode::Usage => "USAGE_ERROR",
            SetupCode::BadPlugin => "BAD_PLUGIN",
            SetupCode::BadHook => "BAD_HOOK",
            SetupCode::LockMismatch => "LOCK_MISMATCH",
            // A usage error as the command line reports it: the same code as before it had
            // a kind of its own.
            SetupCode::SessionInUse | SetupCode::NoModel => "USAGE_ERROR",
            SetupCode::SandboxUnavailable => "SANDBOX_UNAVAILABLE",
            SetupCode::Host => "HOST_ERROR",
        }
    }
}

impl std::fmt::Display for SetupCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a session (or a command's preset) could not be set up.
#[derive(Debug, Clone)]
pub struct SetupError {
    pub code: SetupCode,
    pub message: String,
    /// A refused preset's findings (errors and warnings, in the preset's order); shown before
    /// the message.
    pub findings: Vec<Shown>,
}

impl SetupError {
    /// A mistake in what was asked for: a preset, a flag, a session id.
    pub fn usage(message: impl Into<String>) -> SetupError {
        SetupError::new(SetupCode::Usage, message)
    }

    /// The machine failed us: the data directory, a log that cannot be written.
    pub fn host(message: impl Into<String>) -> SetupError {
        SetupError::new(SetupCode::Host, message)
    }

    pub fn new(code: SetupCode, message: impl Into<String>) -> SetupError {
        SetupError {
            code,
            message: message.into(),
            findings: Vec::new(),
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
