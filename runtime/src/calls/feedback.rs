//! Error feedback (V4, V5, C4): what a refused call tells the model, and whether a failure goes
//! back to the model or ends the turn.
//!
//! Every message says what is wrong, quotes what the model sent, and says how to fix it. The
//! classification is a type (`Disposition`) read from the `ErrorCode`, never from message text.

use serde::Serialize;
use serde_json::Value;

use super::extract::shown;
use super::repair::{Repair, STEPS_TRIED, Unparsable};
use super::validate::{quote, required_hint};
use paddock_types::contract::{ErrorCode, ToolError, ToolSpec};

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
    /// A call needed approval no one could give, and the session stops for it.
    ApprovalRequired,
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
            ErrorCode::ApprovalRequired => Disposition::EndTurn(EndReason::ApprovalRequired),
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

/// UNKNOWN_TOOL: the name as sent, the tool it is probably a typo of, and the available
/// tools closest first.
pub fn unknown_tool(name: &str, closest_first: &[&str]) -> ToolError {
    let shown: String = name.chars().take(64).collect();
    let typo = crate::plugin_store::DidYouMean::among(&shown, closest_first.iter().copied());
    ToolError::new(
        ErrorCode::UnknownTool,
        format!(
            "there is no tool named {shown:?}{typo}. Available tools, closest first: {}. Call \
             one of these by its exact name",
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
            "the arguments for `{}` are cut off ({error}); they were not completed or run \
             (paddock tried: {}; none completes cut-off text). Received: {}. Send the whole \
             JSON object again{}{}",
            spec.name,
            STEPS_TRIED.join(", "),
            quote(raw),
            required_hint(&spec.parameters),
            example_hint(spec)
        ),
    )
    .retryable(true)
}

/// INVALID_JSON for text that is not an object after every repair step (V6): the parse error
/// with its line, column and the text around it, what the repairs ran into, the steps tried, and
/// the fields the schema wants. Such a call never runs.
pub fn unparsable_json(spec: &ToolSpec, raw: &str, unparsable: &Unparsable) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidJson,
        format!(
            "the arguments for `{}` are not valid JSON ({}, near {:?}) and paddock could not \
             repair them ({}; tried: {}); the call was not run. Received: {}. Send one JSON \
             object{}{}",
            spec.name,
            unparsable.error,
            unparsable.around,
            unparsable.after_repairs,
            STEPS_TRIED.join(", "),
            quote(raw),
            required_hint(&spec.parameters),
            example_hint(spec)
        ),
    )
    .retryable(true)
}

/// INVALID_JSON for text that reads two ways (V8): both readings, and nothing run.
pub fn ambiguous_json(spec: &ToolSpec, raw: &str, error: &str, readings: [&str; 2]) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidJson,
        format!(
            "the arguments for `{}` are not valid JSON and {error}: either {}, or {}; paddock \
             runs neither (tried: {}). Received: {}. Send one JSON object, with quotes inside \
             strings escaped as \\\"{}{}",
            spec.name,
            readings[0],
            readings[1],
            STEPS_TRIED.join(", "),
            quote(raw),
            required_hint(&spec.parameters),
            example_hint(spec)
        ),
    )
    .retryable(true)
}

/// INVALID_JSON for an object that holds a key twice: the key, where, both values, and that
/// nothing ran; the fix is to send the key once.
pub fn duplicate_key(
    spec: &ToolSpec,
    raw: &str,
    at: &str,
    key: &str,
    values: &[Value; 2],
) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidJson,
        format!(
            "the arguments for `{}` hold the key {key:?} twice (the second at {at}): first {}, \
             then {}; paddock runs neither rather than pick one. Received: {}. Send the object \
             again with {key:?} once, holding the value you mean{}",
            spec.name,
            shown(&values[0]),
            shown(&values[1]),
            quote(raw),
            required_hint(&spec.parameters),
        ),
    )
    .retryable(true)
}

/// The repairs tried on arguments that are JSON, before the schema check.
pub const JSON_STEPS_TRIED: &str = "parameter names matched to the schema's, fields sent as \
     JSON strings decoded";

/// A schema refusal says which repairs were applied first, or that none applied and which were
/// tried, so the model can tell its own text from paddock's reading of it.
pub fn with_repairs(mut error: ToolError, repairs: &[Repair]) -> ToolError {
    if repairs.is_empty() {
        error.message.push_str(&format!(
            " (no repair applied; paddock tried: {JSON_STEPS_TRIED})"
        ));
    } else {
        let names: Vec<String> = repairs.iter().map(Repair::label).collect();
        error.message.push_str(&format!(
            " (paddock repaired the arguments before checking them: {})",
            names.join(", ")
        ));
    }
    error
}

/// What the model must be told about a call whose arguments held several objects (V7): which
/// one ran (`ran`: the arguments the tool ran with, when it ran) and which did not. `None` for
/// other calls.
pub fn repair_note(repairs: &[Repair], ran: Option<&Value>) -> Option<String> {
    repairs.iter().find_map(|repair| match repair {
        Repair::DuplicateObjects { count } => Some(format!(
            "[paddock] the arguments held the same JSON object {count} times; it is one call{}",
            if ran.is_some() { " and ran once" } else { "" }
        )),
        Repair::SplitConcatenated { found, not_run, .. } => {
            let others: Vec<String> = not_run.iter().map(shown).collect();
            let head = format!(
                "[paddock] the arguments held {found} JSON objects ({} different)",
                not_run.len() + 1
            );
            Some(match ran {
                Some(args) => format!(
                    "{head}; only {} ran. NOT run: {}. Send each of those as its own tool call",
                    shown(args),
                    others.join(", ")
                ),
                None => format!("{head}; none of them ran. Send each as its own tool call"),
            })
        }
        _ => None,
    })
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

impl Repair {
    /// A short name for messages: "trailing commas (2)", "renamed file_path to path".
    pub fn label(&self) -> String {
        match self {
            Repair::EmptyArguments => "empty arguments read as {}".into(),
            Repair::DoubleEncoded { field: None } => "double-encoded JSON decoded".into(),
            Repair::DoubleEncoded { field: Some(f) } => format!("`{f}` decoded from a string"),
            Repair::SplitConcatenated { found, .. } => format!("{found} objects split"),
            Repair::DuplicateObjects { count } => format!("{count} identical objects as one"),
            Repair::CodeFence => "markdown fence removed".into(),
            Repair::SurroundingProse { .. } => "prose around the object dropped".into(),
            Repair::ControlCharacters { count } => format!("raw control characters ({count})"),
            Repair::UnescapedQuotes { count } => format!("unescaped quotes ({count})"),
            Repair::MissingCommas { count } => format!("missing commas ({count})"),
            Repair::TrailingCommas { count } => format!("trailing commas ({count})"),
            Repair::Comments { count } => format!("comments ({count})"),
            Repair::SingleQuotes { count } => format!("single-quoted strings ({count})"),
            Repair::UnquotedKeys { count } => format!("unquoted keys ({count})"),
            Repair::StrayWords { count } => format!("stray words dropped ({count})"),
            Repair::PythonLiterals { count } => format!("Python literals ({count})"),
            Repair::PythonTuples { count } => format!("Python tuples as arrays ({count})"),
            Repair::BareWords { count } => format!("bare words as strings ({count})"),
            Repair::NumberForms { count } => format!("number forms ({count})"),
            Repair::HexIntegers { count } => format!("hexadecimal integers ({count})"),
            Repair::LoneBackslashes { count } => format!("lone backslashes ({count})"),
            Repair::RenamedParam { from, to } => format!("`{from}` renamed to `{to}`"),
            Repair::ToolAlias { from, to } => format!("tool `{from}` read as `{to}`"),
            Repair::ArgvJoined { words } => {
                format!("`command` sent as {words} words was read as one bash command")
            }
        }
    }
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
