//! From a model's raw call (a name and an argument string) to a validated one, or to an error
//! result for the model (V3, V4, C3): resolve the name (aliases), repair the arguments, then
//! validate them strictly against the tool's compiled schema. Never panics, whatever the input.
//! Arguments that could not be read never run (V6): the call gets the parse error instead.

use serde::Serialize;
use serde_json::Value;

use super::aliases::AliasTable;
use super::feedback;
use super::repair::{Repair, Unreadable, repair_args};
use super::validate::validate_args;
use paddock_types::contract::{ErrorCode, ToolError, ToolSpec};

/// What the checker needs to know about the loaded tools.
pub trait ToolIndex {
    /// The tool's spec and its compiled validator.
    fn lookup(&self, name: &str) -> Option<(&ToolSpec, &jsonschema::Validator)>;
    /// Every registered name, in preset order.
    fn names(&self) -> Vec<&str>;
}

/// A raw call after the checker: the tool it resolved to, the repairs applied, and either the
/// arguments to run with or the error the model gets.
#[derive(Debug, Clone, Serialize)]
pub struct CheckedCall {
    /// The registered tool name, when the name resolved.
    pub tool: Option<String>,
    pub repairs: Vec<Repair>,
    #[serde(skip)]
    pub args: Result<Value, ToolError>,
}

/// Resolves, repairs and validates one call.
pub fn check_call(
    index: &dyn ToolIndex,
    aliases: &AliasTable,
    name: &str,
    raw: &str,
) -> CheckedCall {
    let names = index.names();
    let mut repairs = Vec::new();
    let resolved = aliases
        .resolve(name, &names)
        .and_then(|tool| index.lookup(tool));
    let Some((spec, validator)) = resolved else {
        return CheckedCall {
            tool: None,
            repairs,
            args: Err(feedback::unknown_tool(name, &closest_first(&names, name))),
        };
    };
    if spec.name != name {
        repairs.push(Repair::ToolAlias {
            from: name.to_string(),
            to: spec.name.clone(),
        });
    }
    let args = match repair_args(raw, &spec.parameters, |v| validator.is_valid(v)) {
        Ok(repaired) => {
            repairs.extend(repaired.repairs);
            validate_args(&spec.name, raw, &repaired.args, &spec.parameters, validator)
                .map(|()| repaired.args)
                .map_err(|error| with_example(feedback::with_repairs(error, &repairs), spec))
        }
        Err(Unreadable::Truncated { error }) => Err(feedback::truncated_json(spec, raw, &error)),
        Err(Unreadable::Unparsable(unparsable)) => {
            Err(feedback::unparsable_json(spec, raw, &unparsable))
        }
        Err(Unreadable::DuplicateKey { at, key, values }) => {
            Err(feedback::duplicate_key(spec, raw, &at, &key, &values))
        }
        Err(Unreadable::Ambiguous {
            error,
            first,
            second,
        }) => Err(feedback::ambiguous_json(
            spec,
            raw,
            &error,
            [first.as_str(), second.as_str()],
        )),
    };
    CheckedCall {
        tool: Some(spec.name.clone()),
        repairs,
        args,
    }
}

fn with_example(mut error: ToolError, spec: &ToolSpec) -> ToolError {
    if error.code == ErrorCode::InvalidArgs {
        error.message.push_str(&feedback::example_hint(spec));
    }
    error
}

/// Registered names, the closest to `wanted` first.
pub fn closest_first<'n>(names: &[&'n str], wanted: &str) -> Vec<&'n str> {
    let mut sorted = names.to_vec();
    // Names are at most 64 characters; a longer `wanted` only costs time.
    let wanted: String = wanted.chars().take(128).collect::<String>().to_lowercase();
    sorted.sort_by_key(|name| strsim::damerau_levenshtein(&wanted, &name.to_lowercase()));
    sorted
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
