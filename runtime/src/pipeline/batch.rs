//! `tool batch` input and output (X1, X2): a JSON list of raw calls `[{id, name, arguments}]`
//! in, the scheduler's records out as JSON, one per call id, in the order given.
//!
//! `arguments` is the raw string a model would send, possibly malformed; for convenience a
//! JSON value other than a string is taken as its JSON text.

use serde_json::{Value, json};

use super::prepared::RawCall;
use super::scheduler::CallRecord;

/// Why a batch file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error(
        "the batch is not JSON: {0}; write a list like [{{\"id\":\"1\",\"name\":\"read_file\",\"arguments\":\"{{}}\"}}]"
    )]
    Json(#[from] serde_json::Error),
    #[error("the batch must be a JSON list of calls, got {0}")]
    NotAList(&'static str),
    #[error(
        "call {index}: {problem}; each call is {{\"id\": string, \"name\": string, \"arguments\": string}}"
    )]
    BadCall { index: usize, problem: String },
    #[error("calls {first} and {second} both have the id `{id}`; give each call its own id")]
    DuplicateId {
        id: String,
        first: usize,
        second: usize,
    },
}

/// Reads a batch file's text.
pub fn parse_batch(text: &str) -> Result<Vec<RawCall>, BatchError> {
    let value: Value = serde_json::from_str(text)?;
    let Value::Array(items) = value else {
        return Err(BatchError::NotAList(kind(&value)));
    };
    let calls: Vec<RawCall> = items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            raw_call(item).map_err(|problem| BatchError::BadCall { index, problem })
        })
        .collect::<Result<_, _>>()?;
    // Each call's start and result are logged by its id.
    let mut seen = std::collections::HashMap::new();
    for (second, call) in calls.iter().enumerate() {
        if let Some(first) = seen.insert(call.id.as_str(), second) {
            return Err(BatchError::DuplicateId {
                id: call.id.clone(),
                first,
                second,
            });
        }
    }
    Ok(calls)
}

fn raw_call(item: &Value) -> Result<RawCall, String> {
    let text = |field: &str| match item.get(field) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!("`{field}` must be a string, got {}", kind(other))),
        None => Err(format!("`{field}` is missing")),
    };
    let arguments = match item.get("arguments") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    Ok(RawCall {
        id: text("id")?,
        name: text("name")?,
        arguments,
    })
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The records as the JSON `tool batch` prints: `ok` and `content`, or `ok: false` and `error`.
pub fn records_json(records: &[CallRecord]) -> Value {
    Value::Array(
        records
            .iter()
            .map(|r| {
                let mut out = json!({
                    "id": r.id,
                    "name": r.name,
                    "tool": r.tool,
                    "repairs": r.repairs,
                    "args": r.args,
                });
                match &r.result {
                    Ok(o) => {
                        out["ok"] = json!(true);
                        out["content"] = json!(o.content);
                        out["truncated"] = json!(o.truncated);
                        out["continuation"] = json!(o.continuation);
                    }
                    Err(e) => {
                        out["ok"] = json!(false);
                        out["error"] = json!(e);
                        out["disposition"] = json!(r.disposition);
                    }
                }
                if !r.context.is_empty() {
                    out["context"] = json!(r.context);
                }
                out
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_reads_raw_strings_and_takes_other_values_as_their_json() {
        let calls = parse_batch(
            r#"[{"id":"1","name":"read_file","arguments":"{\"path\":"},
                {"id":"2","name":"list_dir","arguments":{"path":"."}},
                {"id":"3","name":"list_dir"}]"#,
        )
        .unwrap();
        assert_eq!(calls[0].arguments, r#"{"path":"#);
        assert_eq!(calls[1].arguments, r#"{"path":"."}"#);
        assert_eq!(calls[2].arguments, "");
    }

    #[test]
    fn a_malformed_batch_names_the_call_and_the_field() {
        let err = parse_batch(r#"[{"id":"1","name":"x"},{"id":2,"name":"y"}]"#).unwrap_err();
        assert!(
            err.to_string().starts_with("call 1: `id` must be a string"),
            "{err}"
        );
        assert!(matches!(
            parse_batch("{}"),
            Err(BatchError::NotAList("an object"))
        ));
        assert!(matches!(parse_batch("[1"), Err(BatchError::Json(_))));
        let twice =
            parse_batch(r#"[{"id":"a","name":"x"},{"id":"b","name":"x"},{"id":"a","name":"y"}]"#);
        assert_eq!(
            twice.unwrap_err().to_string(),
            "calls 0 and 2 both have the id `a`; give each call its own id"
        );
    }
}
