//! The one result shape (C4): content on success; code, message and `retryable` on failure.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Machine-readable failure codes. The runtime's own codes are variants; a plugin's codes
/// (NOT_FOUND, AMBIGUOUS_MATCH, ...) travel as `Plugin`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The arguments do not match the tool's schema.
    InvalidArgs,
    /// The arguments are not JSON and could not be repaired.
    InvalidJson,
    /// No tool by that name is loaded.
    UnknownTool,
    /// The call ran past its deadline (S3).
    Timeout,
    /// The call was interrupted while running (X2).
    Cancelled,
    /// A hook, the approval policy or the sandbox refused the call.
    Denied,
    /// The user, asked for approval, said no: the turn ends so they can say what to do instead.
    Declined,
    /// The call never started (X2).
    NotExecuted,
    /// The call needed approval, no one could be asked, and the session stops rather than
    /// deny it (`--on-ask fail`).
    ApprovalRequired,
    /// The plugin trapped: a panic, `unreachable`, a stack overflow (S7).
    Trap,
    /// The plugin used up its fuel (S3).
    OutOfFuel,
    /// The plugin asked for more memory, tables or instances than its cap (S4).
    MemoryLimit,
    /// The plugin is not a valid tool plugin, or returned something malformed (S7).
    BadPlugin,
    /// The host could not set up the call (a mount that does not exist, say).
    Host,
    /// Any other code, as the plugin wrote it.
    Plugin(String),
}

impl ErrorCode {
    pub fn as_str(&self) -> &str {
        match self {
            ErrorCode::InvalidArgs => "INVALID_ARGS",
            ErrorCode::InvalidJson => "INVALID_JSON",
            ErrorCode::UnknownTool => "UNKNOWN_TOOL",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::Cancelled => "CANCELLED",
            ErrorCode::Denied => "DENIED",
            ErrorCode::Declined => "DECLINED",
            ErrorCode::NotExecuted => "NOT_EXECUTED",
            ErrorCode::ApprovalRequired => "APPROVAL_REQUIRED",
            ErrorCode::Trap => "TRAP",
            ErrorCode::OutOfFuel => "OUT_OF_FUEL",
            ErrorCode::MemoryLimit => "MEMORY_LIMIT",
            ErrorCode::BadPlugin => "BAD_PLUGIN",
            ErrorCode::Host => "HOST_ERROR",
            ErrorCode::Plugin(code) => code,
        }
    }

    /// Reads a code the runtime wrote (from the log or `--json` output). Codes that come from a
    /// plugin are never parsed: the sandbox wraps them as `Plugin`, so a plugin cannot pass
    /// itself off as the runtime (a plugin's "CANCELLED" does not end the turn).
    pub fn parse(code: &str) -> ErrorCode {
        match code {
            "INVALID_ARGS" => ErrorCode::InvalidArgs,
            "INVALID_JSON" => ErrorCode::InvalidJson,
            "UNKNOWN_TOOL" => ErrorCode::UnknownTool,
            "TIMEOUT" => ErrorCode::Timeout,
            "CANCELLED" => ErrorCode::Cancelled,
            "DENIED" => ErrorCode::Denied,
            "DECLINED" => ErrorCode::Declined,
            "NOT_EXECUTED" => ErrorCode::NotExecuted,
            "APPROVAL_REQUIRED" => ErrorCode::ApprovalRequired,
            "TRAP" => ErrorCode::Trap,
            "OUT_OF_FUEL" => ErrorCode::OutOfFuel,
            "MEMORY_LIMIT" => ErrorCode::MemoryLimit,
            "BAD_PLUGIN" => ErrorCode::BadPlugin,
            "HOST_ERROR" => ErrorCode::Host,
            other => ErrorCode::Plugin(other.to_string()),
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(ErrorCode::parse(&String::deserialize(d)?))
    }
}

/// A successful result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolOutput {
    pub content: String,
    pub truncated: bool,
    pub continuation: Option<String>,
}

impl ToolOutput {
    pub fn complete(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            truncated: false,
            continuation: None,
        }
    }
}

/// A failed call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolError {
    pub code: ErrorCode,
    pub message: String,
    pub retryable: bool,
}

impl ToolError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ToolError {
        ToolError {
            code,
            message: message.into(),
            retryable: false,
        }
    }

    pub fn retryable(mut self, retryable: bool) -> ToolError {
        self.retryable = retryable;
        self
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ToolError {}

pub type ToolResult = Result<ToolOutput, ToolError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_through_their_wire_names() {
        for code in [
            ErrorCode::InvalidArgs,
            ErrorCode::Timeout,
            ErrorCode::OutOfFuel,
            ErrorCode::MemoryLimit,
            ErrorCode::Plugin("NOT_FOUND".into()),
        ] {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(serde_json::from_str::<ErrorCode>(&json).unwrap(), code);
        }
        assert_eq!(
            serde_json::to_string(&ErrorCode::OutOfFuel).unwrap(),
            "\"OUT_OF_FUEL\""
        );
    }
}
