//! Builds tool calls from streamed fragments, for both wire formats (V2).
//!
//! A fragment names its call by a key (OpenAI `index` or its position, Anthropic block index).
//! The first non-empty id and name win; a fragment with the id of a known call belongs to that
//! call even under another key; a fragment for a closed call is ignored; a fragment that repeats
//! a call's complete arguments is ignored. Arguments are only concatenated here and parsed in
//! `finish`, once.

use super::diagnostics::Diagnostics;
use crate::model::types::Diagnostic;
use crate::model::types::{AssembledCall, AttemptId, Delta, MISSING_TOOL_NAME, ToolCall};

/// One fragment of a call, as a wire format reported it.
pub(super) struct Fragment<'a> {
    pub key: i64,
    pub id: Option<&'a str>,
    pub name: Option<&'a str>,
    pub arguments: Option<&'a str>,
}

#[derive(Default)]
struct Slot {
    id: String,
    name: String,
    arguments: String,
    /// Complete arguments given up front (Anthropic `content_block_start.input`).
    initial: Option<String>,
    closed: bool,
}

pub(super) struct CallSlots {
    slots: Vec<Slot>,
    /// Key -> slot. Few calls per message, so a vector beats a map.
    keys: Vec<(i64, usize)>,
}

impl CallSlots {
    pub fn new() -> CallSlots {
        CallSlots {
            slots: Vec::new(),
            keys: Vec::new(),
        }
    }

    fn bind(&mut self, key: i64, slot: usize) {
        match self.keys.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = slot,
            None => self.keys.push((key, slot)),
        }
    }

    fn slot_of(&self, key: i64) -> Option<usize> {
        self.keys.iter().find(|(k, _)| *k == key).map(|(_, s)| *s)
    }

    fn open_slot(&mut self, key: i64) -> (usize, bool) {
        let index = self.slots.len();
        self.slots.push(Slot::default());
        self.bind(key, index);
        (index, true)
    }

    /// Applies one fragment, creating the call if the provider never started it.
    pub fn apply(&mut self, f: Fragment<'_>, out: &mut Vec<Delta>, diags: &mut Diagnostics) {
        let id = f.id.filter(|s| !s.is_empty());
        let name = f.name.filter(|s| !s.is_empty());
        let known = id.and_then(|id| self.slots.iter().position(|s| s.id == id));
        let (index, created) = match (known, self.slot_of(f.key)) {
            (Some(slot), _) => {
                self.bind(f.key, slot);
                (slot, false)
            }
            // A new id under a key whose call already has another id: a new call.
            (None, Some(slot)) if id.is_some() && !self.slots[slot].id.is_empty() => {
                self.open_slot(f.key)
            }
            (None, Some(slot)) => (slot, false),
            (None, None) => self.open_slot(f.key),
        };
        let slot = &mut self.slots[index];
        if slot.closed {
            let diagnostic = match known {
                Some(_) => Diagnostic::RepeatedCall {
                    id: slot.id.clone(),
                },
                None => Diagnostic::LateDelta { index: f.key },
            };
            diags.note(diagnostic);
            return;
        }
        if let (Some(id), true) = (id, slot.id.is_empty()) {
            slot.id = id.to_owned();
        }
        if let (Some(name), true) = (name, slot.name.is_empty()) {
            slot.name = name.to_owned();
        }
        if created {
            out.push(Delta::CallStarted {
                index,
                id: slot.id.clone(),
                name: slot.name.clone(),
            });
        }
        let Some(fragment) = f.arguments.filter(|a| !a.is_empty()) else {
            return;
        };
        if fragment == slot.arguments && is_complete_json(&slot.arguments) {
            diags.note(Diagnostic::RepeatedCall {
                id: slot.id.clone(),
            });
            return;
        }
        slot.arguments.push_str(fragment);
        out.push(Delta::CallArguments {
            index,
            fragment: fragment.to_owned(),
        });
    }

    /// Fills the first call's missing name and arguments from a mirror of it (OpenAI's legacy
    /// `function_call` copy); what the call already has is kept. Returns the call's id (empty
    /// when it has none yet).
    pub fn fill_first(&mut self, name: &str, arguments: &str) -> String {
        let Some(slot) = self.slots.first_mut() else {
            return String::new();
        };
        if slot.name.is_empty() {
            slot.name = name.to_owned();
        }
        if slot.arguments.is_empty() && slot.initial.is_none() {
            slot.arguments = arguments.to_owned();
        }
        slot.id.clone()
    }

    /// Records complete arguments sent with the start of a call.
    pub fn set_initial(&mut self, key: i64, arguments: String) {
        if let Some(slot) = self.slot_of(key) {
            self.slots[slot].initial = Some(arguments);
        }
    }

    pub fn close(&mut self, key: i64) {
        if let Some(slot) = self.slot_of(key) {
            self.slots[slot].closed = true;
        }
    }

    pub fn close_all(&mut self) {
        for slot in &mut self.slots {
            slot.closed = true;
        }
    }

    pub fn partial(&self) -> Vec<ToolCall> {
        self.slots
            .iter()
            .map(|s| ToolCall {
                id: s.id.clone(),
                name: s.name.clone(),
                arguments: s.arguments.clone(),
            })
            .collect()
    }

    /// Completes every call: defaults for what is missing, then the one parse of the arguments.
    /// `empty_is_object`: the wire format defines empty arguments as `{}` (Anthropic).
    pub fn finish(
        self,
        attempt: &AttemptId,
        empty_is_object: bool,
        diags: &mut Diagnostics,
    ) -> Vec<AssembledCall> {
        let mut calls = Vec::with_capacity(self.slots.len());
        for (i, slot) in self.slots.into_iter().enumerate() {
            let generated_id = slot.id.is_empty();
            let id = if generated_id {
                let id = format!("{attempt}_call{i}");
                diags.note(Diagnostic::GeneratedCallId { id: id.clone() });
                id
            } else {
                slot.id
            };
            let missing_name = slot.name.is_empty();
            let name = if missing_name {
                diags.note(Diagnostic::MissingCallName { id: id.clone() });
                MISSING_TOOL_NAME.to_owned()
            } else {
                slot.name
            };
            let arguments = match (slot.arguments.is_empty(), slot.initial) {
                (false, _) => slot.arguments,
                (true, Some(initial)) => initial,
                (true, None) if empty_is_object => "{}".to_owned(),
                (true, None) => String::new(),
            };
            let parsed = serde_json::from_str(&arguments).ok();
            calls.push(AssembledCall {
                call: ToolCall {
                    id,
                    name,
                    arguments,
                },
                parsed,
                generated_id,
                missing_name,
                not_executable: None,
            });
        }
        calls
    }
}

fn is_complete_json(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}
