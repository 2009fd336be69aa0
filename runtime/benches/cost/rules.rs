//! What a provider bills for the requests the loopback server recorded, by each provider's
//! caching rule, in token-equivalents (a token is four bytes of the prompt as serialized):
//!
//! - OpenAI caches automatically: a request's prompt (the tools, then the messages) is read
//!   from the cache for the longest prefix it shares with an earlier request, counted from
//!   1,024 tokens in steps of 128. Cached tokens are billed at a tenth.
//! - Anthropic caches only what `cache_control` breakpoints mark: the prompt is the tools, the
//!   system blocks and the message blocks in order; at each breakpoint the prefix up to it is
//!   looked up (the longest one an earlier request wrote is read, at a tenth), what lies
//!   between it and the last breakpoint is written (1.25 times), the rest billed plainly. A
//!   prefix under 1,024 tokens is not cached. The breakpoints themselves are not part of it.

use std::collections::HashSet;

use serde_json::Value;

pub const BYTES_PER_TOKEN: usize = 4;
const OPENAI_MIN: usize = 1024;
const OPENAI_STEP: usize = 128;
const ANTHROPIC_MIN: usize = 1024;
const READ: f64 = 0.1;
const WRITE: f64 = 1.25;

/// What one set of requests costs.
#[derive(Debug, Default, Clone, Copy)]
pub struct Bill {
    /// All input tokens.
    pub input: f64,
    pub read: f64,
    pub written: f64,
    /// Token-equivalents billed: plain input, reads at a tenth, writes at 1.25.
    pub billed: f64,
}

fn tokens(bytes: usize) -> usize {
    bytes / BYTES_PER_TOKEN
}

/// A value without its `cache_control` fields, as serialized.
fn bare(value: &Value) -> String {
    let mut value = value.clone();
    if let Some(object) = value.as_object_mut() {
        object.remove("cache_control");
    }
    value.to_string()
}

/// An OpenAI request's prompt: its tools, then its messages.
pub fn openai_prompt(body: &Value) -> Vec<u8> {
    let mut prompt = body["tools"].to_string().into_bytes();
    for message in body["messages"].as_array().into_iter().flatten() {
        prompt.extend_from_slice(message.to_string().as_bytes());
    }
    prompt
}

/// OpenAI's rule over `prompts` in the order sent; with each request's input and cached tokens.
pub fn openai(prompts: &[Vec<u8>]) -> (Bill, Vec<(f64, f64)>) {
    let mut bill = Bill::default();
    let mut cached_each = Vec::new();
    for (i, prompt) in prompts.iter().enumerate() {
        let shared = prompts[..i]
            .iter()
            .map(|earlier| {
                earlier
                    .iter()
                    .zip(prompt)
                    .take_while(|(a, b)| a == b)
                    .count()
            })
            .max()
            .unwrap_or(0);
        let shared = tokens(shared);
        let cached = if shared >= OPENAI_MIN {
            shared / OPENAI_STEP * OPENAI_STEP
        } else {
            0
        };
        let input = tokens(prompt.len());
        bill.input += input as f64;
        bill.read += cached as f64;
        bill.billed += (input - cached) as f64 + READ * cached as f64;
        cached_each.push((input as f64, cached as f64));
    }
    (bill, cached_each)
}

/// An Anthropic request's prompt as blocks (each serialized without its breakpoint), and
/// which of them are breakpoints.
pub fn anthropic_blocks(body: &Value) -> Vec<(String, bool)> {
    let marked = |v: &Value| v.get("cache_control").is_some();
    let mut blocks = Vec::new();
    for tool in body["tools"].as_array().into_iter().flatten() {
        blocks.push((bare(tool), marked(tool)));
    }
    match &body["system"] {
        Value::Array(system) => {
            for block in system {
                blocks.push((bare(block), marked(block)));
            }
        }
        Value::Null => {}
        text => blocks.push((text.to_string(), false)),
    }
    for turn in body["messages"].as_array().into_iter().flatten() {
        let role = turn["role"].as_str().unwrap_or_default();
        for (i, block) in turn["content"].as_array().into_iter().flatten().enumerate() {
            let opening = if i == 0 { role } else { "" };
            blocks.push((format!("{opening}{}", bare(block)), marked(block)));
        }
    }
    blocks
}

/// Anthropic's rule over requests in the order sent, as blocks.
pub fn anthropic(requests: &[Vec<(String, bool)>]) -> Bill {
    let mut written: HashSet<String> = HashSet::new();
    let mut bill = Bill::default();
    for blocks in requests {
        let mut prefix = String::new();
        let mut ends = Vec::new();
        for (text, marked) in blocks {
            prefix.push_str(text);
            if *marked {
                ends.push(prefix.len());
            }
        }
        let input = tokens(prefix.len());
        let hit = ends
            .iter()
            .copied()
            .filter(|&end| written.contains(&prefix[..end]))
            .max()
            .unwrap_or(0);
        let last = ends.last().copied().unwrap_or(0);
        let (read, write) = if tokens(last) >= ANTHROPIC_MIN {
            (tokens(hit), tokens(last) - tokens(hit))
        } else {
            (0, 0)
        };
        bill.input += input as f64;
        bill.read += read as f64;
        bill.written += write as f64;
        bill.billed += (input - read - write) as f64 + READ * read as f64 + WRITE * write as f64;
        for end in ends {
            if tokens(end) >= ANTHROPIC_MIN {
                written.insert(prefix[..end].to_string());
            }
        }
    }
    bill
}
