//! Fuzz target for the stream assemblers (V1, V2, issue 11 items 5-8): any body, split into
//! network chunks anywhere, through the real SSE path into the OpenAI or the Anthropic
//! assembler. It must never panic, a length-cut response must never let a call run, and no
//! call may be offered twice under one id.

#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use paddock::model::assembler::{AnthropicAssembler, OpenAiAssembler};
use paddock::model::{AssistantMessage, AttemptId, ModelError, Outcome, replay};

fuzz_target!(|data: &[u8]| {
    // First byte: the wire format (low bit) and the chunk size (the rest).
    let Some((&head, body)) = data.split_first() else {
        return;
    };
    let size = usize::from(head >> 1) + 1;
    let chunks: Vec<Bytes> = body.chunks(size).map(Bytes::copy_from_slice).collect();
    let attempt = AttemptId("att_fuzz".into());
    let result: Result<AssistantMessage, ModelError> = if head & 1 == 0 {
        replay(OpenAiAssembler::new(attempt), chunks)
    } else {
        replay(AnthropicAssembler::new(attempt), chunks)
    };
    let Ok(message) = result else {
        return;
    };
    if message.outcome == Outcome::Truncated {
        assert!(message.calls.iter().all(|c| c.not_executable.is_some()));
    }
    let mut ids: Vec<&str> = message.calls.iter().map(|c| c.call.id.as_str()).collect();
    let total = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), total, "a call id offered twice");
});
