//! What both wire formats accumulate while an attempt streams: its text, its calls and what was
//! odd about the stream. The wire-specific assemblers feed a `Draft`; it becomes the message.
//!
//! SPEC V2 (what does not parse is recorded and skipped, never fatal) and L3 (`partial` is what
//! a failed attempt shows; it is a copy, never the committed message).

use super::calls::CallSlots;
use super::outcome::{Gathered, conclude};
use super::sample;
use crate::model::types::{
    AssistantMessage, AttemptId, Delta, Diagnostic, Finish, PartialOutput, Usage,
};
use serde::Deserialize;

/// At most this many diagnostics are kept per message; a broken stream must not grow the log.
const MAX_DIAGNOSTICS: usize = 64;

pub(super) struct Draft {
    pub attempt: AttemptId,
    pub text: String,
    pub calls: CallSlots,
    pub diagnostics: Vec<Diagnostic>,
}

impl Draft {
    pub fn new(attempt: AttemptId) -> Draft {
        Draft {
            attempt,
            text: String::new(),
            calls: CallSlots::new(),
            diagnostics: Vec::new(),
        }
    }

    pub fn note(&mut self, diagnostic: Diagnostic) {
        note(&mut self.diagnostics, diagnostic);
    }

    pub fn push_text(&mut self, text: &str, out: &mut Vec<Delta>) {
        if !text.is_empty() {
            self.text.push_str(text);
            out.push(Delta::Text {
                text: text.to_owned(),
            });
        }
    }

    /// Parses one event's data; data that is not JSON, or not the expected shape, is recorded
    /// and skipped.
    pub fn parse<'a, T: Deserialize<'a>>(&mut self, data: &'a str) -> Option<T> {
        match serde_json::from_str(data) {
            Ok(value) => Some(value),
            Err(e) => {
                let sample = sample(data);
                self.note(if e.is_data() {
                    Diagnostic::UnexpectedShape { sample }
                } else {
                    Diagnostic::NonJsonData { sample }
                });
                None
            }
        }
    }

    pub fn partial(&self) -> PartialOutput {
        PartialOutput {
            text: self.text.clone(),
            calls: self.calls.partial(),
        }
    }

    /// Completes the calls (`empty_is_object`: the wire format defines empty arguments as
    /// `{}`) and decides finish and outcome.
    pub fn conclude(
        mut self,
        finish: Option<Finish>,
        usage: Option<Usage>,
        empty_is_object: bool,
    ) -> AssistantMessage {
        let calls = self
            .calls
            .finish(&self.attempt, empty_is_object, &mut self.diagnostics);
        conclude(Gathered {
            attempt: self.attempt,
            text: self.text,
            calls,
            finish,
            usage,
            diagnostics: self.diagnostics,
        })
    }
}

pub(super) fn note(diagnostics: &mut Vec<Diagnostic>, diagnostic: Diagnostic) {
    if diagnostics.len() < MAX_DIAGNOSTICS {
        diagnostics.push(diagnostic);
    }
}
