//! Repair of a model's raw argument text (V3, V6-V8), one small step per function, each repair
//! it applies recorded as a typed `Repair` for the event log.
//!
//! The steps, in order: blank text becomes `{}`; parse strictly (`strict`: an object holding a
//! key twice is refused, never resolved by keeping one value); unwrap double-encoded JSON (a
//! string holding an object, or holding an array for an array-valued parameter); concatenated
//! objects `{..}{..}` (identical copies are one; of different ones the first that passes the
//! schema is chosen and the rest are named as not run, V7); then, for text that is still not
//! JSON, a markdown fence, prose around one object (never a JSON value beside it), and the
//! lenient reader (`lenient`, whose invariant is that a repair never changes the structure the
//! text shows; V8); finally parameter names that are unambiguous case/separator variants or
//! known aliases of the schema's properties.
//!
//! What it deliberately does not do: invent values, complete truncated JSON (a prefix of a
//! document is refused with its line and column), or run text it could not read: there is no
//! `{"raw": text}` fallback any more (V6). Text that is not an object after every step is
//! `Unreadable::Unparsable`, with the parse error, the text around it, the real defect and the
//! steps tried; two readings are `Unreadable::Ambiguous`, both named; a key sent twice is
//! `Unreadable::DuplicateKey`, with both values. Tool-name aliases live in `aliases`, strict
//! validation in `validate`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::extract::{self, Concatenated, strip_fence};
use super::lenient::{Failure, Forgiven};
use super::strict::{self, DuplicateKey, StrictError};
use super::validate::{around, offset_of, position};

/// One repair applied to a call, in the order applied. The log keeps them as they are (a
/// `tool/result`'s `repairs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "repair", rename_all = "snake_case")]
pub enum Repair {
    /// Blank arguments were read as `{}`.
    EmptyArguments,
    /// A JSON string holding JSON was decoded; `field` is `None` for the whole arguments.
    DoubleEncoded { field: Option<String> },
    /// Several different top-level objects were sent (`found` in all); object `taken` (0-based
    /// among the different ones) ran, the ones in `not_run` did not and the result says so (V7).
    SplitConcatenated {
        found: usize,
        taken: usize,
        not_run: Vec<Value>,
    },
    /// The same object was sent `count` times; it is one call.
    DuplicateObjects { count: usize },
    /// A markdown code fence around the object was removed.
    CodeFence,
    /// Prose around the one object was dropped (`before` and `after`, in bytes).
    SurroundingProse { before: usize, after: usize },
    /// Raw control characters (new lines, tabs) inside strings were read as characters.
    ControlCharacters { count: usize },
    /// Quotes inside strings that could only be part of the text were kept as text.
    UnescapedQuotes { count: usize },
    /// Commas missing between members were read where the next member plainly starts (a key
    /// and its `:`, or an array item).
    MissingCommas { count: usize },
    /// Commas before a closing `}` or `]` were dropped.
    TrailingCommas { count: usize },
    /// `//` and `/* */` comments were dropped.
    Comments { count: usize },
    /// Single-quoted strings or keys were read as strings.
    SingleQuotes { count: usize },
    /// Bare-word (or number) keys were read as strings.
    UnquotedKeys { count: usize },
    /// Words standing before a key (`please "path": ...`), neither key nor value, were dropped.
    StrayWords { count: usize },
    /// `True`, `False`, `None` were read as `true`, `false`, `null`.
    PythonLiterals { count: usize },
    /// Python tuples `(1, 2)` were read as arrays.
    PythonTuples { count: usize },
    /// Bare words where only a string can stand (`{"mode": fast}`) were read as strings.
    BareWords { count: usize },
    /// Numbers in a form with one reading (`.5`, `1.`, `+1`, `1_000`) were read as numbers.
    NumberForms { count: usize },
    /// Hexadecimal values (`0x1F`) of parameters whose schema wants an integer were read as
    /// integers.
    HexIntegers { count: usize },
    /// A backslash before a character JSON does not escape (`\d`) was kept as a backslash.
    LoneBackslashes { count: usize },
    /// A parameter name was mapped onto the schema's property.
    RenamedParam { from: String, to: String },
    /// A tool-name alias was mapped onto a registered tool.
    ToolAlias { from: String, to: String },
    /// A `command` sent as an argument vector of `words` words was made one bash command.
    ArgvJoined { words: usize },
}

/// The steps tried on text that is not JSON, as a refusal names them.
pub const STEPS_TRIED: &[&str] = &[
    "concatenated objects",
    "markdown fence",
    "prose around one object",
    "raw control characters",
    "unescaped quotes",
    "missing commas",
    "trailing commas",
    "comments",
    "single quotes",
    "unquoted keys",
    "stray words",
    "Python literals",
    "Python tuples",
    "bare words",
    "number forms",
    "hexadecimal integers",
    "lone backslashes",
];

/// Why the text could not be read as arguments at all. Such a call never runs (V6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// The text ends before its JSON does: a cut-off prefix, never completed.
    Truncated { error: String },
    /// Not an object even after every repair step.
    Unparsable(Unparsable),
    /// Two readings are possible; nothing is run, both are named.
    Ambiguous {
        error: String,
        first: String,
        second: String,
    },
    /// An object holds a key twice: which value was meant is the model's to say.
    DuplicateKey {
        /// Where, as "line L column C".
        at: String,
        key: String,
        /// The two values, in the order sent.
        values: Box<[Value; 2]>,
    },
}

/// Where reading failed: the strict parser's error, and what the repair steps found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unparsable {
    /// serde_json's message, with its line and column.
    pub error: String,
    /// The text around the failure, the failure point marked `⟨here⟩`.
    pub around: String,
    /// Why the repair steps could not read it either, with its line and column.
    pub after_repairs: String,
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
    // The shell's names in the agents models are trained on (Claude Code's `Bash`, codex's
    // `exec_command` and `write_stdin`).
    ("timeout", "timeout_ms"),
    ("run_in_background", "background"),
    ("yield_time_ms", "yield_ms"),
    ("cwd", "workdir"),
    ("shell_id", "session_id"),
    ("bash_id", "session_id"),
    ("input", "chars"),
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
        None => match strict::parse(raw) {
            Ok(value) => unwrap_double_encoded(value, &mut repairs),
            Err(StrictError::Duplicate {
                duplicate,
                line,
                column,
            }) => {
                return Err(duplicate_key(
                    format!("line {line} column {column}"),
                    *duplicate,
                ));
            }
            // Text that ends with a closing bracket looks complete: the lenient reader says
            // which bracket is missing instead of calling it cut off.
            Err(StrictError::Json(error))
                if error.is_eof() && !raw.trim_end().ends_with(['}', ']']) =>
            {
                return Err(Unreadable::Truncated {
                    error: error.to_string(),
                });
            }
            Err(StrictError::Json(error)) => match extract::split_concatenated(raw) {
                Some(objects) => choose_concatenated(objects, schema, &passes, &mut repairs),
                None => read_leniently(raw, &error, schema, &mut repairs)?,
            },
        },
    };
    let args = unwrap_double_encoded_fields(args, schema, &mut repairs);
    let args = remap_params(args, schema, &mut repairs);
    let args = join_argv(args, schema, &mut repairs);
    Ok(Repaired { args, repairs })
}

/// Step 7: a `command` sent as an argument vector (codex's `shell` tool: `["bash", "-lc",
/// "ls"]`) where the schema wants bash source: the script of a `sh -c` vector, else the words
/// quoted for bash and joined, so each stays one word.
pub fn join_argv(mut value: Value, schema: &Value, repairs: &mut Vec<Repair>) -> Value {
    let wants_string = schema
        .pointer("/properties/command/type")
        .is_some_and(|t| t == "string");
    let Some(object) = value.as_object_mut() else {
        return value;
    };
    let Some(Value::Array(items)) = object.get("command") else {
        return value;
    };
    if !wants_string {
        return value;
    }
    let Some(words) = items
        .iter()
        .map(|v| v.as_str().map(str::to_string))
        .collect::<Option<Vec<String>>>()
    else {
        return value;
    };
    let shells = ["bash", "sh", "zsh", "dash", "/bin/bash", "/bin/sh", "/usr/bin/bash"];
    let script = match words.as_slice() {
        [shell, flag, script] if shells.contains(&shell.as_str()) && flag.starts_with('-') && flag.ends_with('c') => {
            script.clone()
        }
        _ => paddock_shell_judge::quote_words(&words),
    };
    object.insert("command".into(), Value::String(script));
    repairs.push(Repair::ArgvJoined {
        words: words.len(),
    });
    value
}

/// Step 4 (V7): concatenated objects. Copies of one object are that object; of different
/// ones, the first that passes the schema (after remapping its names) is taken, else the first,
/// and the others are recorded as not run.
fn choose_concatenated(
    objects: Concatenated,
    schema: &Value,
    passes: &impl Fn(&Value) -> bool,
    repairs: &mut Vec<Repair>,
) -> Value {
    let Concatenated {
        found,
        mut distinct,
    } = objects;
    if distinct.len() == 1 {
        repairs.push(Repair::DuplicateObjects { count: found });
        return distinct.swap_remove(0);
    }
    let taken = distinct
        .iter()
        .position(|candidate| passes(&remap_params(candidate.clone(), schema, &mut Vec::new())))
        .unwrap_or(0);
    let chosen = distinct.remove(taken);
    repairs.push(Repair::SplitConcatenated {
        found,
        taken,
        not_run: distinct,
    });
    chosen
}

/// Steps 5-7 (V8): a fence, prose around one object, then the lenient reader. `strict` is the
/// strict parser's error, reported when these steps cannot read the text either.
fn read_leniently(
    raw: &str,
    strict: &serde_json::Error,
    schema: &Value,
    repairs: &mut Vec<Repair>,
) -> Result<Value, Unreadable> {
    let (body, base) = strip_fence(raw).unwrap_or((raw, 0));
    let fenced = base > 0;
    let unparsable = |after_repairs: String| {
        Unreadable::Unparsable(Unparsable {
            error: strict.to_string(),
            around: around(raw, offset_of(raw, strict.line(), strict.column())),
            after_repairs,
        })
    };
    let found = extract::find_object(body).map_err(|failure| match failure {
        Failure::Truncated { at } => Unreadable::Truncated {
            error: format!(
                "the text ends inside the object at {}",
                position(raw, base + at)
            ),
        },
        Failure::Ambiguous { at, first, second } => Unreadable::Ambiguous {
            error: format!("at {} the text reads two ways", position(raw, base + at)),
            first,
            second,
        },
        Failure::Invalid { at, what } => {
            unparsable(format!("{what} at {}", position(raw, base + at)))
        }
        Failure::Mismatched {
            at,
            opened,
            expected,
            found,
        } => unparsable(format!(
            "the {} opened at {} is closed by `{found}` at {}, where `{expected}` belongs",
            match expected {
                '}' => "object",
                ')' => "tuple",
                _ => "array",
            },
            position(raw, base + opened),
            position(raw, base + at)
        )),
        Failure::DuplicateKey { at, duplicate } => {
            duplicate_key(position(raw, base + at), *duplicate)
        }
    })?;
    if fenced {
        repairs.push(Repair::CodeFence);
    }
    if found.before > 0 || found.after > 0 {
        repairs.push(Repair::SurroundingProse {
            before: found.before,
            after: found.after,
        });
    }
    if found.copies > 1 {
        repairs.push(Repair::DuplicateObjects {
            count: found.copies,
        });
    }
    let props = schema.get("properties").and_then(Value::as_object);
    let hex = &found.forgiven.hex_parameters;
    if let Some(name) = hex.iter().find(|name| {
        !props
            .and_then(|props| props.get(name.as_str()))
            .is_some_and(|prop| accepts_type(prop, "integer"))
    }) {
        return Err(unparsable(format!(
            "`{name}` is written in hexadecimal, which paddock reads only where the schema \
             wants an integer; send it as a decimal number or a string"
        )));
    }
    repairs.extend(forgiven_repairs(&found.forgiven));
    if !hex.is_empty() {
        repairs.push(Repair::HexIntegers { count: hex.len() });
    }
    Ok(found.value)
}

fn duplicate_key(at: String, duplicate: DuplicateKey) -> Unreadable {
    let DuplicateKey { key, first, second } = duplicate;
    Unreadable::DuplicateKey {
        at,
        key,
        values: Box::new([first, second]),
    }
}

/// What the lenient reader forgave, as repairs, most common first.
fn forgiven_repairs(f: &Forgiven) -> Vec<Repair> {
    type Make = fn(usize) -> Repair;
    let steps: [(usize, Make); 13] = [
        (f.control_characters, |count| Repair::ControlCharacters {
            count,
        }),
        (f.unescaped_quotes, |count| Repair::UnescapedQuotes {
            count,
        }),
        (f.missing_commas, |count| Repair::MissingCommas { count }),
        (f.trailing_commas, |count| Repair::TrailingCommas { count }),
        (f.comments, |count| Repair::Comments { count }),
        (f.single_quotes, |count| Repair::SingleQuotes { count }),
        (f.unquoted_keys, |count| Repair::UnquotedKeys { count }),
        (f.stray_words, |count| Repair::StrayWords { count }),
        (f.python_literals, |count| Repair::PythonLiterals { count }),
        (f.python_tuples, |count| Repair::PythonTuples { count }),
        (f.bare_words, |count| Repair::BareWords { count }),
        (f.number_forms, |count| Repair::NumberForms { count }),
        (f.lone_backslashes, |count| Repair::LoneBackslashes {
            count,
        }),
    ];
    steps
        .into_iter()
        .filter(|(count, _)| *count > 0)
        .map(|(count, make)| make(count))
        .collect()
}

/// Step 1: empty or whitespace-only text means no arguments.
pub fn empty_to_object(raw: &str) -> Option<Value> {
    raw.trim().is_empty().then(|| Value::Object(Map::new()))
}

/// Step 3: the whole arguments sent as a JSON string that holds an object.
pub fn unwrap_double_encoded(value: Value, repairs: &mut Vec<Repair>) -> Value {
    if let Value::String(text) = &value
        && let Ok(inner @ Value::Object(_)) = strict::parse(text)
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
        let decoded = match strict::parse(text) {
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

#[cfg(test)]
#[path = "repair_proptests.rs"]
mod proptests;

#[cfg(test)]
#[path = "repair_corruptions.rs"]
mod corruptions;
