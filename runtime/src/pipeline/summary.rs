//! What the model reads for a call (and an observer is shown): the content, or
//! `error[CODE]: message`, with the note on several JSON objects (V7) and any context the
//! hooks added. A result that carries an image (`model::IMAGE_OUTPUT_PREFIX`, what
//! `read_file` returns for a PNG) becomes the checked image and a line describing it; one
//! whose image does not pass the checks becomes an `IMAGE_REFUSED` error that says why.

use super::scheduler::CallRecord;
use crate::calls::repair_note;
use crate::model::ImagePart;

/// The code of a result whose image was not sent (over the bound, not a valid image).
pub const IMAGE_REFUSED: &str = "IMAGE_REFUSED";

/// One call's outcome as the model reads it.
#[derive(Debug, Clone)]
pub struct CallSummary {
    pub id: String,
    pub name: String,
    pub content: String,
    pub is_error: bool,
    pub code: Option<String>,
    /// The images the tool returned, checked; `content` describes them.
    pub images: Vec<ImagePart>,
}

/// The summary of `record`.
pub fn summarize(record: &CallRecord) -> CallSummary {
    let mut images = Vec::new();
    let (mut content, is_error, code) = match &record.result {
        Ok(output) => match ImagePart::from_tool_output(&output.content) {
            None => (output.content.clone(), false, None),
            Some(Ok((image, caption))) => {
                let mut text = caption.trim_end().to_owned();
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&format!("[image attached: {}]", image.describe()));
                images.push(image);
                (text, false, None)
            }
            Some(Err(why)) => (
                format!("error[{IMAGE_REFUSED}]: {} returned an image: {why}", record.name),
                true,
                Some(IMAGE_REFUSED.to_owned()),
            ),
        },
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
        images,
    }
}
