//! Error feedback (V4, V5, C4): what a refused call tells the model, and whether a failure goes
//! back to the model or ends the turn.
//!
//! Every message says what is wrong, quotes what the model sent, and says how to fix it. The
//! classification is a type (`Disposition`) read from the `ErrorCode`, never from message text.

use serde::Serialize;
use serde_json::Value;

use super::validate::{quote, required_hint};
use crate::contract::{ErrorCode, ToolError, ToolSpec};

/// What a failed call means for the turn (V5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "disposition", content = "reason", rename_all = "snake_case")]
pub enum Disposition {
    /// The model can correct it: the result goes back and the turn continues.
    ToModel,
    /// The turn ends, with this recorded reason.
    EndTurn(EndReason),
}

/// Why a failure ends the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// The user interrupted: running calls were cancelled, queued ones never ran.
    Interrupted,
    /// The user declined a call when asked: they decide what happens next (B1 `denied`).
    Declined,
    /// The host itself failed (a mount that vanished, a plugin that cannot be set up): a
    /// program or configuration fault the model cannot fix.
    HostFault,
}

impl Disposition {
    /// The disposition of a failure with `code`. Plugin-defined codes (`Plugin`) always go back
    /// to the model: a plugin cannot end a turn by naming a runtime code.
    pub fn of(code: &ErrorCode) -> Disposition {
        match code {
            ErrorCode::Cancelled | ErrorCode::NotExecuted => {
                Disposition::EndTurn(EndReason::Interrupted)
            }
            ErrorCode::Host | ErrorCode::BadPlugin => Disposition::EndTurn(EndReason::HostFault),
            ErrorCode::Declined => Disposition::EndTurn(EndReason::Declined),
            ErrorCode::InvalidArgs
            | ErrorCode::InvalidJson
            | ErrorCode::UnknownTool
            | ErrorCode::Timeout
            | ErrorCode::Denied
            | ErrorCode::Trap
            | ErrorCode::OutOfFuel
            | ErrorCode::MemoryLimit
            | ErrorCode::Plugin(_) => Disposition::ToModel,
        }
    }
}

/// UNKNOWN_TOOL: the name as sent, and the available tools closest first.
pub fn unknown_tool(name: &str, closest_first: &[&str]) -> ToolError {
    let shown: String = name.chars().take(64).collect();
    ToolError::new(
        ErrorCode::UnknownTool,
        format!(
            "there is no tool named {shown:?}. Available tools, closest first: {}. Call one of \
             these by its exact name",
            closest_first.join(", ")
        ),
    )
    .retryable(true)
}

/// INVALID_JSON for a cut-off document: never completed, always re-sent.
pub fn truncated_json(spec: &ToolSpec, raw: &str, error: &str) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidJson,
        format!(
            "the arguments for `{}` are cut off ({error}); they were not completed or run. \
             Received: {}. Send the whole JSON object again{}{}",
            spec.name,
            quote(raw),
            required_hint(&spec.parameters),
            example_hint(spec)
        ),
    )
    .retryable(true)
}

/// INVALID_JSON for text that was not JSON, kept as `{"raw": ...}`, and then failed the schema.
pub fn unparsable_json(spec: &ToolSpec, raw: &str, parse_error: &str, problems: &str) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidJson,
        format!(
            "the arguments for `{}` are not valid JSON ({parse_error}), and as raw text they do not \
             fit the schema: {problems}. Received: {}. Send one JSON object{}{}",
            spec.name,
            quote(raw),
            required_hint(&spec.parameters),
            example_hint(spec)
        ),
    )
    .retryable(true)
}

/// "; for example: {...}", from the tool's first correct example, if it has one.
pub fn example_hint(spec: &ToolSpec) -> String {
    spec.examples
        .iter()
        .find(|e| e.correct)
        .and_then(|e| serde_json::from_str::<Value>(&e.args).ok())
        .map(|args| format!("; for example: {args}"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interruption_and_host_faults_end_the_turn_and_the_rest_go_back() {
        let ends = [
            (ErrorCode::Cancelled, EndReason::Interrupted),
            (ErrorCode::NotExecuted, EndReason::Interrupted),
            (ErrorCode::Host, EndReason::HostFault),
        ];
        for (code, reason) in ends {
            assert_eq!(
                Disposition::of(&code),
                Disposition::EndTurn(reason),
                "{code}"
            );
        }
        for code in [
            ErrorCode::InvalidArgs,
            ErrorCode::InvalidJson,
            ErrorCode::UnknownTool,
            ErrorCode::Timeout,
            ErrorCode::Denied,
            ErrorCode::Trap,
            ErrorCode::Plugin("CANCELLED".into()),
        ] {
            assert_eq!(Disposition::of(&code), Disposition::ToModel, "{code}");
        }
    }
}
