//! Parsing and strict validation of arguments (C3, V4). Every error says what is wrong (the
//! JSON line and column, or the schema path and keyword), what was received (the start of the
//! raw text), and how to fix it (the required fields and their types).

use serde_json::Value;

use paddock_types::contract::{ErrorCode, ToolError};

/// How much of the model's raw text an error quotes.
const QUOTE: usize = 200;

pub(crate) fn quote(raw: &str) -> String {
    let mut end = raw.len().min(QUOTE);
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    let more = if end < raw.len() {
        format!("… ({} bytes in all)", raw.len())
    } else {
        String::new()
    };
    format!("{:?}{more}", &raw[..end])
}

/// "line 2 column 5" for a byte offset (columns count characters, from 1).
pub(crate) fn position(text: &str, offset: usize) -> String {
    let offset = floor_boundary(text, offset.min(text.len()));
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("line {line} column {column}")
}

/// The byte offset of serde_json's (line, column); its column counts bytes from 1.
pub(crate) fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    (start + column.saturating_sub(1)).min(text.len())
}

/// Up to 40 characters either side of `offset`, the point marked `⟨here⟩`.
pub(crate) fn around(text: &str, offset: usize) -> String {
    let offset = floor_boundary(text, offset.min(text.len()));
    let (head, tail) = text.split_at(offset);
    let start = head.char_indices().rev().nth(39).map_or(0, |(i, _)| i);
    let end = tail.char_indices().nth(40).map_or(tail.len(), |(i, _)| i);
    let dots = |cut: bool| if cut { "…" } else { "" };
    format!(
        "{}{}⟨here⟩{}{}",
        dots(start > 0),
        &head[start..],
        &tail[..end],
        dots(end < tail.len())
    )
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
/// Parses raw arguments; empty or blank text means `{}`.
pub fn parse_args(tool: &str, raw: &str, schema: &Value) -> Result<Value, ToolError> {
    if raw.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_str(raw).map_err(|e| {
        ToolError::new(
            ErrorCode::InvalidJson,
            format!(
                "the arguments for `{tool}` are not valid JSON: {e}. Received: {}. Send one JSON object{}",
                quote(raw),
                required_hint(schema)
            ),
        )
        .retryable(true)
    })
}

/// Validates `args` against the tool's compiled schema.
pub fn validate_args(
    tool: &str,
    raw: &str,
    args: &Value,
    schema: &Value,
    validator: &jsonschema::Validator,
) -> Result<(), ToolError> {
    let problems: Vec<String> = validator
        .iter_errors(args)
        .take(5)
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() {
                "the arguments".to_string()
            } else {
                format!("`{at}`")
            };
            format!(
                "{at}: {e} (schema {}, keyword `{}`)",
                e.schema_path(),
                e.kind().keyword()
            )
        })
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    Err(ToolError::new(
        ErrorCode::InvalidArgs,
        format!(
            "the arguments for `{tool}` do not match its schema: {}. Received: {}. Fix the arguments{}",
            problems.join("; "),
            quote(raw),
            required_hint(schema)
        ),
    )
    .retryable(true))
}

/// "; it takes: path (string, required), offset (integer)".
pub(crate) fn required_hint(schema: &Value) -> String {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let fields: Vec<String> = props
        .iter()
        .map(|(name, prop)| {
            let ty = type_of(prop);
            let req = if required.contains(&name.as_str()) {
                ", required"
            } else {
                ""
            };
            format!("{name} ({ty}{req})")
        })
        .collect();
    format!("; it takes: {}", fields.join(", "))
}

fn type_of(prop: &Value) -> String {
    match prop.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect::<Vec<_>>()
            .join("|"),
        _ => "any".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}, "offset": {"type": ["integer", "null"]}},
               "required": ["path"], "additionalProperties": false})
    }

    #[test]
    fn blank_arguments_mean_an_empty_object() {
        assert_eq!(parse_args("t", "  \n", &schema()).unwrap(), json!({}));
    }

    #[test]
    fn invalid_json_names_line_column_quotes_the_input_and_lists_fields() {
        let err = parse_args("read_file", "{\"path\": \n oops}", &schema()).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidJson);
        assert!(
            err.message.contains("at line 2 column 2"),
            "{}",
            err.message
        );
        assert!(
            err.message
                .contains("Received: \"{\\\"path\\\": \\n oops}\""),
            "{}",
            err.message
        );
        assert!(
            err.message
                .contains("path (string, required), offset (integer)"),
            "{}",
            err.message
        );
    }

    #[test]
    fn schema_violations_name_the_path_and_keyword() {
        let s = schema();
        let v = jsonschema::validator_for(&s).unwrap();
        let args = json!({"offset": "ten"});
        let err = validate_args("read_file", "{\"offset\":\"ten\"}", &args, &s, &v).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgs);
        assert!(
            err.message.contains("keyword `required`"),
            "{}",
            err.message
        );
        assert!(err.message.contains("`/offset`"), "{}", err.message);
    }
}
