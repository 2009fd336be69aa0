//! What both wire formats accumulate while an attempt streams: its text, its calls and what was
//! odd about the stream. The wire-specific assemblers feed a `Draft`; it becomes the message.
//!
//! V2 (what does not parse is recorded and skipped, never fatal, unless nothing readable
//! arrived at all: then the error names what did) and L3 (`partial` is what
//! a failed attempt shows; it is a copy, never the committed message).

use super::calls::CallSlots;
use super::diagnostics::Diagnostics;
use super::outcome::{Gathered, conclude};
use super::sample;
use crate::model::error::ModelError;
use crate::model::types::{
    AssistantMessage, AttemptId, Delta, Diagnostic, Finish, PartialOutput, Reasoning, Usage,
};
use serde::Deserialize;

/// At most this many names of unrecognized events are kept for the error that names them.
const MAX_UNRECOGNIZED: usize = 5;

pub(super) struct Draft {
    pub attempt: AttemptId,
    pub text: String,
    pub calls: CallSlots,
    /// Reasoning blocks in order; the last one grows while its deltas arrive.
    pub reasoning: Vec<Reasoning>,
    pub(super) diagnostics: Diagnostics,
    /// Events with data so far; messages number them from 1.
    events: usize,
    /// The body line the current event began on, when the transport knows it.
    pub line: Option<usize>,
    /// The first event whose data was not JSON: its number, its line, serde's error, its start.
    first_garbage: Option<(usize, Option<usize>, String, String)>,
    /// What arrived that this wire format does not know (event types), the first few.
    unrecognized: Vec<String>,
}

impl Draft {
    pub fn new(attempt: AttemptId) -> Draft {
        Draft {
            attempt,
            text: String::new(),
            calls: CallSlots::new(),
            reasoning: Vec::new(),
            diagnostics: Diagnostics::default(),
            events: 0,
            line: None,
            first_garbage: None,
            unrecognized: Vec::new(),
        }
    }

    /// Records an event this wire format does not know, by its `type` (or `event_type`, or
    /// its keys), for the error that names what arrived when nothing else did.
    pub fn note_unrecognized(&mut self, data: &str) {
        let value: serde_json::Value = serde_json::from_str(data).unwrap_or_default();
        let name = ["type", "event_type", "event", "object"]
            .iter()
            .find_map(|key| value.get(key).and_then(|v| v.as_str()))
            .map(|name| format!("`{}`", sample(name)))
            .or_else(|| {
                let keys: Vec<&str> = value.as_object()?.keys().map(String::as_str).collect();
                Some(format!("an object with keys {}", sample(&keys.join(", "))))
            })
            .unwrap_or_else(|| format!("{:?}", sample(data)));
        if self.unrecognized.len() < MAX_UNRECOGNIZED && !self.unrecognized.contains(&name) {
            self.unrecognized.push(name);
        }
    }

    /// The error for a stream in which no event of `wire` arrived (V2): another API's
    /// events are named, data that is not JSON is quoted with its body line (and event
    /// number); neither is retried, since the same request brings the same body. A body with no
    /// events at all stays `EmptyStream` (a dropped connection, worth another attempt).
    pub fn nothing_recognized(&self, wire: &'static str) -> ModelError {
        if !self.unrecognized.is_empty() {
            return ModelError::Protocol {
                wire,
                detail: format!(
                    "no {wire} event arrived; what arrived: {}. Check base_url and provider in \
                     [model]: this looks like another API's stream",
                    self.unrecognized.join(", ")
                ),
                retry: false,
            };
        }
        if let Some((number, line, error, data)) = &self.first_garbage {
            let what = match line {
                Some(line) => format!("line {line} is not JSON (event {number}: {error})"),
                None => format!("event {number} is not JSON ({error})"),
            };
            return ModelError::Protocol {
                wire,
                detail: format!(
                    "{what}: {data:?}; no event was readable, and the same request would bring \
                     the same body, so it is not retried"
                ),
                retry: false,
            };
        }
        ModelError::EmptyStream
    }

    pub fn note(&mut self, diagnostic: Diagnostic) {
        self.diagnostics.note(diagnostic);
    }

    pub fn push_text(&mut self, text: &str, out: &mut Vec<Delta>) {
        if !text.is_empty() {
            self.text.push_str(text);
            out.push(Delta::Text {
                text: text.to_owned(),
            });
        }
    }

    /// Appends reasoning text: to the open readable block, or as a new one when
    /// `new_block` (Anthropic starts each thinking block explicitly).
    pub fn push_reasoning(&mut self, text: &str, new_block: bool, out: &mut Vec<Delta>) {
        let open = match self.reasoning.last_mut() {
            Some(Reasoning::Thinking { text, signature: None }) if !new_block => Some(text),
            _ => None,
        };
        match open {
            Some(open) => open.push_str(text),
            None => self.reasoning.push(Reasoning::Thinking {
                text: text.to_owned(),
                signature: None,
            }),
        }
        if !text.is_empty() {
            out.push(Delta::Reasoning {
                text: text.to_owned(),
            });
        }
    }

    /// Parses one event's data; data that is not JSON, or not the expected shape, is recorded
    /// and skipped.
    pub fn parse<'a, T: Deserialize<'a>>(&mut self, data: &'a str) -> Option<T> {
        self.events += 1;
        match serde_json::from_str(data) {
            Ok(value) => Some(value),
            Err(e) => {
                let sample = sample(data);
                let line = self.line;
                if !e.is_data() && self.first_garbage.is_none() {
                    self.first_garbage = Some((self.events, line, e.to_string(), sample.clone()));
                }
                self.note(if e.is_data() {
                    Diagnostic::UnexpectedShape { sample }
                } else {
                    Diagnostic::NonJsonData { line, sample }
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
            reasoning: self.reasoning,
        })
    }
}
