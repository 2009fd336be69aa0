//! Repair of a model's raw argument text (V3), one small step per function, each repair it
//! applies recorded as a `Repair` for the event log.
//!
//! The steps, in order: blank text becomes `{}`; parse; unwrap double-encoded JSON (a string
//! holding an object, or holding an array for an array-valued parameter); split concatenated
//! objects `{..}{..}` and take the first that passes the schema; keep other unparsable text as
//! `{"raw": text}` so validation names the missing fields; remap parameter names that are
//! unambiguous case/separator variants or known aliases of the schema's properties.
//!
//! What it deliberately does not do: invent values, or complete truncated JSON. A prefix of a
//! JSON document (an unexpected end of input) is refused with its line and column. Tool-name
//! aliases live in `aliases`, strict validation in `validate`.

use serde::Serialize;
use serde_json::{Map, Value};

/// One repair applied to a call, in the order applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "repair", rename_all = "snake_case")]
pub enum Repair {
    /// Blank arguments were read as `{}`.
    EmptyArguments,
    /// A JSON string holding JSON was decoded; `field` is `None` for the whole arguments.
    DoubleEncoded { field: Option<String> },
    /// Several top-level objects were sent; `taken` (0-based) was the one used. A warning.
    SplitConcatenated { found: usize, taken: usize },
    /// Unparsable text was kept as `{"raw": text}`; `error` says where parsing failed.
    KeptRaw { error: String },
    /// A parameter name was mapped onto the schema's property.
    RenamedParam { from: String, to: String },
    /// A tool-name alias was mapped onto a registered tool.
    ToolAlias { from: String, to: String },
}

/// Why the text could not be read as arguments at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// The text ends before its JSON does: a cut-off prefix, never completed.
    Truncated { error: String },
}

/// Arguments after repair, not yet validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Repaired {
    pub args: Value,
    pub repairs: Vec<Repair>,
}

/// Parameter aliases models commonly use, as (alias, property). Applied only when the schema
/// has the property and lacks the alias.
const PARAM_ALIASES: &[(&str, &str)] = &[
    ("file_path", "path"),
    ("filepath", "path"),
    ("file", "path"),
    ("filename", "path"),
    ("file_name", "path"),
    ("dir", "path"),
    ("directory", "path"),
    ("old_str", "old_string"),
    ("new_str", "new_string"),
    ("old_text", "old_string"),
    ("new_text", "new_string"),
    ("contents", "content"),
    ("text", "content"),
    ("cmd", "command"),
    ("regex", "pattern"),
    ("query", "pattern"),
];

/// Runs every repair step on `raw` for a tool with `schema`. `passes` says whether a candidate
/// passes the tool's schema (used to choose among concatenated objects).
pub fn repair_args(
    raw: &str,
    schema: &Value,
    passes: impl Fn(&Value) -> bool,
) -> Result<Repaired, Unreadable> {
    let mut repairs = Vec::new();
    let args = match empty_to_object(raw) {
        Some(empty) => {
            repairs.push(Repair::EmptyArguments);
            empty
        }
        None => match parse(raw) {
            Ok(value) => unwrap_double_encoded(value, &mut repairs),
            Err(error) if error.is_eof() => {
                return Err(Unreadable::Truncated {
                    error: error.to_string(),
                });
            }
            Err(error) => match split_concatenated(raw, schema, &passes) {
                Some((value, found, taken)) => {
                    repairs.push(Repair::SplitConcatenated { found, taken });
                    value
                }
                None => {
                    repairs.push(Repair::KeptRaw {
                        error: error.to_string(),
                    });
                    keep_raw(raw)
                }
            },
        },
    };
    let args = unwrap_double_encoded_fields(args, schema, &mut repairs);
    let args = remap_params(args, schema, &mut repairs);
    Ok(Repaired { args, repairs })
}

/// Step 1: empty or whitespace-only text means no arguments.
pub fn empty_to_object(raw: &str) -> Option<Value> {
    raw.trim().is_empty().then(|| Value::Object(Map::new()))
}

/// Step 2: plain JSON.
pub fn parse(raw: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str(raw)
}

/// Step 3: the whole arguments sent as a JSON string that holds an object.
pub fn unwrap_double_encoded(value: Value, repairs: &mut Vec<Repair>) -> Value {
    if let Value::String(text) = &value
        && let Ok(inner @ Value::Object(_)) = serde_json::from_str::<Value>(text)
    {
        repairs.push(Repair::DoubleEncoded { field: None });
        return inner;
    }
    value
}

/// Step 3, per field: a string where the schema wants an array or an object (`edits` sent as
/// `"[{...}]"`), decoded when it holds exactly that kind.
pub fn unwrap_double_encoded_fields(
    mut value: Value,
    schema: &Value,
    repairs: &mut Vec<Repair>,
) -> Value {
    let (Some(object), Some(props)) = (
        value.as_object_mut(),
        schema.get("properties").and_then(Value::as_object),
    ) else {
        return value;
    };
    for (name, field) in object.iter_mut() {
        let Some(text) = field.as_str() else {
            continue;
        };
        let Some(prop) = props.get(name) else {
            continue;
        };
        if accepts_type(prop, "string") {
            continue;
        }
        let decoded = match serde_json::from_str::<Value>(text) {
            Ok(v @ Value::Array(_)) if accepts_type(prop, "array") => v,
            Ok(v @ Value::Object(_)) if accepts_type(prop, "object") => v,
            _ => continue,
        };
        *field = decoded;
        repairs.push(Repair::DoubleEncoded {
            field: Some(name.clone()),
        });
    }
    value
}

fn accepts_type(prop: &Value, ty: &str) -> bool {
    match prop.get("type") {
        Some(Value::String(t)) => t == ty,
        Some(Value::Array(ts)) => ts.iter().any(|t| t == ty),
        _ => false,
    }
}

/// Step 4: `{..}{..}`: every top-level value an object and nothing else in the text. Returns
/// the first object that passes the schema (after remapping its names), else the first, with
/// how many were found and which was taken.
pub fn split_concatenated(
    raw: &str,
    schema: &Value,
    passes: impl Fn(&Value) -> bool,
) -> Option<(Value, usize, usize)> {
    let mut objects = Vec::new();
    for value in serde_json::Deserializer::from_str(raw).into_iter::<Value>() {
        match value {
            Ok(value @ Value::Object(_)) => objects.push(value),
            _ => return None,
        }
    }
    if objects.len() < 2 {
        return None;
    }
    let found = objects.len();
    let taken = objects
        .iter()
        .position(|candidate| passes(&remap_params(candidate.clone(), schema, &mut Vec::new())))
        .unwrap_or(0);
    Some((objects.swap_remove(taken), found, taken))
}

/// Step 5: text that is not JSON, kept so that validation reports what is missing.
pub fn keep_raw(raw: &str) -> Value {
    let mut object = Map::new();
    object.insert("raw".into(), Value::String(raw.to_string()));
    Value::Object(object)
}

/// Step 6: names that are not properties of the schema, mapped onto the one property they
/// unambiguously mean: the same letters up to case and separators (`filePath`, `file-path`),
/// or a known alias (`file_path` → `path`). Never overwrites a field the model also sent.
pub fn remap_params(mut value: Value, schema: &Value, repairs: &mut Vec<Repair>) -> Value {
    let (Some(object), Some(props)) = (
        value.as_object_mut(),
        schema.get("properties").and_then(Value::as_object),
    ) else {
        return value;
    };
    let unknown: Vec<String> = object
        .keys()
        .filter(|k| !props.contains_key(k.as_str()))
        .cloned()
        .collect();
    for from in unknown {
        let Some(to) = param_target(&from, props) else {
            continue;
        };
        if object.contains_key(to) {
            continue;
        }
        if let Some(field) = object.remove(&from) {
            object.insert(to.to_string(), field);
            repairs.push(Repair::RenamedParam {
                from,
                to: to.to_string(),
            });
        }
    }
    value
}

fn param_target<'p>(name: &str, props: &'p Map<String, Value>) -> Option<&'p str> {
    let wanted = squash(name);
    let mut variants = props.keys().filter(|p| squash(p) == wanted);
    if let Some(only) = variants.next() {
        return variants.next().is_none().then_some(only.as_str());
    }
    let lower = name.to_lowercase();
    let mut aliased = PARAM_ALIASES
        .iter()
        .filter(|(alias, _)| squash(alias) == squash(&lower))
        .filter_map(|(_, to)| props.get_key_value(*to).map(|(k, _)| k.as_str()));
    let first = aliased.next()?;
    aliased.all(|other| other == first).then_some(first)
}

/// Lower case without `_`, `-`, spaces or dots: the form variants of a name share.
pub(crate) fn squash(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-' | ' ' | '.'))
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
#[path = "repair_tests.rs"]
mod tests;
