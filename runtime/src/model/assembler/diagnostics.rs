//! What went wrong in a stream without making its message unusable (a generated call id, a
//! late delta, an unknown event), kept for the log: at most `MAX` per message, so a broken
//! stream cannot grow the log without bound.

use crate::model::types::Diagnostic;

/// At most this many diagnostics are kept per message.
const MAX: usize = 64;

/// One message's diagnostics, capped.
#[derive(Debug, Default)]
pub(super) struct Diagnostics(Vec<Diagnostic>);

impl Diagnostics {
    /// Keeps `diagnostic` unless the message already has `MAX`.
    pub(super) fn note(&mut self, diagnostic: Diagnostic) {
        if self.0.len() < MAX {
            self.0.push(diagnostic);
        }
    }

    pub(super) fn into_vec(self) -> Vec<Diagnostic> {
        self.0
    }
}
