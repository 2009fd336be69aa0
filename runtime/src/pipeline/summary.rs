//! What the model reads for a call (and an observer is shown): the content, or
//! `error[CODE]: message`, with the note on several JSON objects (V7) and any context the
//! hooks added.

use super::scheduler::CallRecord;
use crate::calls::repair_note;

/// One call's outcome as the model reads it.
#[derive(Debug, Clone)]
pub struct CallSummary {
    pub id: String,
    pub name: String,
    pub content: String,
    pub is_error: bool,
    pub code: Option<String>,
}

/// The summary of `record`.
pub fn summarize(record: &CallRecord) -> CallSummary {
    let (mut content, is_error, code) = match &record.result {
        Ok(output) => (output.content.clone(), false, None),
        Err(error) => (
            format!("error[{}]: {}", error.code, error.message),
            true,
            Some(error.code.to_string()),
        ),
    };
    // V7: a call whose arguments held several objects says which ran and which did not.
    if let Some(note) = repair_note(&record.repairs, record.args.as_ref()) {
        content.push_str("\n\n");
        content.push_str(&note);
    }
    for note in &record.context {
        content.push_str("\n\n[context from a hook] ");
        content.push_str(note);
    }
    CallSummary {
        id: record.id.clone(),
        name: record.name.clone(),
        content,
        is_error,
        code,
    }
}
