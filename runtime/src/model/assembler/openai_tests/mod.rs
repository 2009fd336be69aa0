//! The OpenAI assembler against hand-written transcripts, one per quirk (V1, V2, B2).
//! Chunks are modelled on the Chat Completions streaming reference. `calls`: how calls are
//! built; `finish`: how the response ends, and stream noise; `mirror`: the legacy
//! `function_call` field, alone or mirroring `tool_calls`.

mod calls;
mod finish;
mod mirror;

use super::OpenAiAssembler;
use crate::model::error::ModelError;
use crate::model::sse::replay;
use crate::model::types::*;
use bytes::Bytes;

pub(super) const ATTEMPT: &str = "att_test";

pub(super) fn body(datas: &[&str]) -> String {
    datas.iter().map(|d| format!("data: {d}\n\n")).collect()
}

pub(super) fn try_assemble(datas: &[&str]) -> Result<AssistantMessage, ModelError> {
    let assembler = OpenAiAssembler::new(AttemptId(ATTEMPT.into()));
    replay(assembler, [Bytes::from(body(datas))])
}

pub(super) fn assemble(datas: &[&str]) -> AssistantMessage {
    try_assemble(datas).expect("transcript assembles")
}

pub(super) fn chunk(delta: &str, finish: &str) -> String {
    let finish = if finish.is_empty() {
        "null".to_owned()
    } else {
        format!("\"{finish}\"")
    };
    format!(
        r#"{{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{{"index":0,"delta":{delta},"finish_reason":{finish}}}]}}"#
    )
}

pub(super) const ROLE: &str = r#"{"role":"assistant","content":""}"#;
pub(super) const USAGE: &str = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":7,"total_tokens":57,"prompt_tokens_details":{"cached_tokens":20}}}"#;

pub(super) fn call(index: &str, id: &str, name: &str, args: &str) -> String {
    format!(
        r#"{{"tool_calls":[{{{index}"id":{id},"type":"function","function":{{"name":{name},"arguments":{args}}}}}]}}"#
    )
}
