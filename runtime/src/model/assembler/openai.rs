//! Assembles an OpenAI Chat Completions stream (`stream: true`) into an assistant message.
//!
//! V2 and M1. Survives what OpenAI-compatible servers send: tool-call `index` starting at 1
//! or missing (the position is used), empty or missing `id`/`name`, `arguments: null`,
//! `tool_calls: null`, a usage chunk with `choices: []`, `n > 1` (choice 0 is used), deltas after
//! the finish reason (ignored), no finish reason at all (inferred, and recorded), a repeated call,
//! error objects mid-stream, data that is not JSON (skipped and recorded) and a missing `[DONE]`.
//!
//! Reasoning deltas (`reasoning_content`, or `reasoning`) are kept apart from the text, as
//! one block.
//!
//! The deprecated `function_call` delta is one call only when the stream carries no
//! `tool_calls` at all. Servers such as llama-cpp-python mirror each `tool_calls[0]` delta into
//! `function_call` (in the same chunk, or with fields split differently across chunks); that
//! mirror is the same call, never a second one (running it twice would double a side effect).
//! So `function_call` fragments are kept aside and decided on at the end: a call of their own
//! when no `tool_calls` came, otherwise recorded as a mirror and used only to fill in a name or
//! arguments the first call lacks.

use super::calls::Fragment;
use super::draft::Draft;
use super::openai_wire::{Arguments, Choice, Chunk, finish_from_openai, provider_error};
use super::{Step, WireAssembler, sample};
use crate::model::error::ModelError;
use crate::model::types::{
    AssistantMessage, AttemptId, Delta, Diagnostic, Finish, PartialOutput, ToolCall, Usage,
};
use std::borrow::Cow;

/// The key used for the deprecated `function_call` delta, apart from every `tool_calls` index.
const FUNCTION_CALL_KEY: i64 = i64::MIN;

/// What the deprecated `function_call` deltas carried, kept apart until the stream ends.
#[derive(Default)]
struct LegacyCall {
    name: String,
    arguments: String,
}

pub struct OpenAiAssembler {
    draft: Draft,
    /// `function_call` fragments, if any came.
    legacy: Option<LegacyCall>,
    /// A `tool_calls` entry has arrived: `function_call` is only a mirror.
    saw_tool_calls: bool,
    finish: Option<String>,
    refusal: bool,
    usage: Option<Usage>,
    saw_chunk: bool,
    saw_done: bool,
    /// The `id` of the response being assembled (its first chunk's).
    response_id: Option<String>,
    /// The `id` of a second response that followed it in the same body, ignored.
    ignored_id: Option<String>,
}

impl OpenAiAssembler {
    pub fn new(attempt: AttemptId) -> OpenAiAssembler {
        OpenAiAssembler {
            draft: Draft::new(attempt),
            legacy: None,
            saw_tool_calls: false,
            finish: None,
            refusal: false,
            usage: None,
            saw_chunk: false,
            saw_done: false,
            response_id: None,
            ignored_id: None,
        }
    }

    fn on_choice(&mut self, choice: Choice<'_>, out: &mut Vec<Delta>) {
        let Some(delta) = choice.delta else {
            self.on_finish_reason(choice.finish_reason);
            return;
        };
        if self.finish.is_some() {
            let late = delta.content.as_deref().is_some_and(|c| !c.is_empty())
                || delta.tool_calls.as_ref().is_some_and(|c| !c.is_empty());
            if late {
                self.draft.note(Diagnostic::LateDelta { index: -1 });
            }
            return;
        }
        for reasoning in [&delta.reasoning_content, &delta.reasoning] {
            if let Some(text) = reasoning.as_deref().filter(|t| !t.is_empty()) {
                self.draft.push_reasoning(text, false, out);
            }
        }
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            self.draft.text.push_str(&text);
            out.push(Delta::Text {
                text: text.into_owned(),
            });
        }
        if let Some(text) = delta.refusal.filter(|t| !t.is_empty()) {
            self.refusal = true;
            self.draft.text.push_str(&text);
            out.push(Delta::Text {
                text: text.into_owned(),
            });
        }
        for (position, call) in delta.tool_calls.into_iter().flatten().enumerate() {
            self.saw_tool_calls = true;
            let function = call.function.as_ref();
            let arguments = function
                .and_then(|f| f.arguments.as_ref())
                .map(arguments_text);
            let fragment = Fragment {
                key: call.index.unwrap_or(position as i64),
                id: call.id.as_deref(),
                name: function.and_then(|f| f.name.as_deref()),
                arguments: arguments.as_deref(),
            };
            self.draft
                .calls
                .apply(fragment, out, &mut self.draft.diagnostics);
        }
        if let Some(function) = delta.function_call {
            let legacy = self.legacy.get_or_insert_with(LegacyCall::default);
            if let Some(name) = function.name.filter(|n| !n.is_empty())
                && legacy.name.is_empty()
            {
                legacy.name = name.into_owned();
            }
            if let Some(arguments) = function.arguments.as_ref() {
                legacy.arguments.push_str(&arguments_text(arguments));
            }
        }
        self.on_finish_reason(choice.finish_reason);
    }

    /// Decides what the `function_call` fragments were: the call itself when no `tool_calls`
    /// came, else a mirror of the first call (recorded, and used only to fill its gaps).
    fn settle_legacy(&mut self, out: &mut Vec<Delta>) {
        let Some(legacy) = self.legacy.take() else {
            return;
        };
        if self.saw_tool_calls {
            let id = self.draft.calls.fill_first(&legacy.name, &legacy.arguments);
            self.draft.note(Diagnostic::MirroredFunctionCall { id });
            return;
        }
        let fragment = Fragment {
            key: FUNCTION_CALL_KEY,
            id: None,
            name: Some(&legacy.name),
            arguments: Some(&legacy.arguments),
        };
        self.draft
            .calls
            .apply(fragment, out, &mut self.draft.diagnostics);
    }

    /// Whether a chunk belongs to a second response after this one finished: recorded once,
    /// then all of it is ignored, usage too. Only a chunk with text or calls
    /// starts one: some servers give every chunk its own id, and their closing and usage chunks
    /// must still count.
    fn is_second_response(&mut self, chunk: &Chunk<'_>) -> bool {
        let Some(id) = chunk.id.as_deref().filter(|id| !id.is_empty()) else {
            return false;
        };
        let first = self.response_id.get_or_insert_with(|| id.to_owned());
        if first.as_str() == id {
            return false;
        }
        if self.ignored_id.as_deref() == Some(id) {
            return true;
        }
        let content = chunk.choices.iter().flatten().any(|c| {
            c.delta.as_ref().is_some_and(|d| {
                d.content.as_deref().is_some_and(|t| !t.is_empty())
                    || d.tool_calls.as_ref().is_some_and(|t| !t.is_empty())
                    || d.function_call.is_some()
            })
        });
        if self.finish.is_none() || !content || self.ignored_id.is_some() {
            return false;
        }
        self.draft
            .note(Diagnostic::SecondResponse { id: id.to_owned() });
        self.ignored_id = Some(id.to_owned());
        true
    }

    fn on_finish_reason(&mut self, reason: Option<Cow<'_, str>>) {
        if let Some(reason) = reason.filter(|r| !r.is_empty())
            && self.finish.is_none()
        {
            self.finish = Some(reason.into_owned());
            self.draft.calls.close_all();
        }
    }
}

fn arguments_text<'a>(arguments: &'a Arguments<'a>) -> Cow<'a, str> {
    match arguments {
        Arguments::Text(text) => Cow::Borrowed(text.as_ref()),
        Arguments::Json(serde_json::Value::Null) => Cow::Borrowed(""),
        Arguments::Json(value) => Cow::Owned(value.to_string()),
    }
}

impl WireAssembler for OpenAiAssembler {
    fn on_event(
        &mut self,
        _event: &str,
        data: &str,
        out: &mut Vec<Delta>,
    ) -> Result<Step, ModelError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.saw_done = true;
            return Ok(Step::Done);
        }
        if data.is_empty() {
            return Ok(Step::Continue);
        }
        let Some(chunk) = self.draft.parse::<Chunk<'_>>(data) else {
            return Ok(Step::Continue);
        };
        if let Some(error) = provider_error(&chunk) {
            return Err(error);
        }
        if chunk.choices.is_none() && chunk.usage.is_none() {
            // Another API's event (Responses, Cohere): named if nothing else arrives.
            self.draft.note(Diagnostic::UnexpectedShape {
                sample: sample(data),
            });
            self.draft.note_unrecognized(data);
            return Ok(Step::Continue);
        }
        self.saw_chunk = true;
        if self.is_second_response(&chunk) {
            return Ok(Step::Continue);
        }
        if let Some(usage) = chunk.usage {
            let cached = usage
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0);
            self.usage = Some(Usage {
                input_tokens: usage.prompt_tokens.unwrap_or(0),
                output_tokens: usage.completion_tokens.unwrap_or(0),
                cache_read_tokens: cached,
                cache_write_tokens: 0,
            });
        }
        for (position, choice) in chunk.choices.into_iter().flatten().enumerate() {
            if choice.index.unwrap_or(position as u64) == 0 {
                self.on_choice(choice, out);
            }
        }
        Ok(Step::Continue)
    }

    fn at_line(&mut self, line: usize) {
        self.draft.line = Some(line);
    }

    fn note_invalid_utf8(&mut self, bytes_replaced: usize) {
        self.draft.note(Diagnostic::InvalidUtf8 { bytes_replaced });
    }

    fn partial(&self) -> PartialOutput {
        let mut partial = self.draft.partial();
        if let (Some(legacy), false) = (&self.legacy, self.saw_tool_calls) {
            partial.calls.push(ToolCall {
                id: String::new(),
                name: legacy.name.clone(),
                arguments: legacy.arguments.clone(),
            });
        }
        partial
    }

    fn finish(mut self) -> Result<AssistantMessage, ModelError> {
        if !self.saw_chunk {
            return Err(self.draft.nothing_recognized("OpenAI Chat Completions"));
        }
        if !self.saw_done {
            self.draft.note(Diagnostic::MissingEndMarker);
        }
        self.settle_legacy(&mut Vec::new());
        let mut finish = self.finish.as_deref().map(finish_from_openai);
        if self.refusal && matches!(finish, Some(Finish::Stop) | None) {
            self.draft.note(Diagnostic::RefusalText);
            finish = Some(Finish::Refusal);
        }
        Ok(self.draft.conclude(finish, self.usage, false))
    }
}
