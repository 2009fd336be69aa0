//! Large results age out: a tool result older than some assistant messages and
//! larger than some bytes is sent as a stub naming where the whole result stays readable (the
//! session log; the spill directory, which the agent fills when it logs such a result).

use crate::model::context::Ageing;
use crate::model::ToolResultMessage;

/// About the size of a stub (`aged`).
pub(super) const STUB_BYTES: usize = 330;

/// Marks the key of a result sent as its stub.
pub(super) const AGED: u64 = 1 << 63;

/// The name a result's whole text has in the spill directory when it ages out.
/// `step_seq` is the seq of the assistant message that made the call: a provider that reuses
/// call ids across responses (`call_0` every time) cannot make one result's file another's.
pub fn aged_spill_name(step_seq: u64, call_id: &str) -> String {
    format!("{step_seq}-{}.result.txt", file_safe(call_id))
}

pub(super) fn aged(result: &ToolResultMessage, step_seq: u64, ageing: Ageing) -> ToolResultMessage {
    ToolResultMessage {
        call_id: result.call_id.clone(),
        content: format!(
            "[paddock: this result ({} bytes) is older than {} steps and larger than {} bytes, so it left \
             the context to save room. It stays whole in the session log, and at /spill/{} for a tool \
             granted read_spill (read_file). Call the tool again if you need it now.]",
            result.content.len(),
            ageing.after_steps,
            ageing.bytes,
            aged_spill_name(step_seq, &result.call_id)
        ),
        is_error: result.is_error,
        images: Vec::new(),
    }
}

/// A call id as part of a file name: letters, digits, `-` and `_` kept, anything else `_`, at
/// most 80 characters; never a separator or `..`, whatever the model sent as the id.
pub fn file_safe(call_id: &str) -> String {
    call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect()
}
