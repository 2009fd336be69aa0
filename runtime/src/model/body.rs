//! The request body: a long session's request is the one it sent last time plus
//! what was added since. Where the wire format sends one JSON value per history message
//! (OpenAI), the body is `{…head…,"messages":[m0,m1,…]}` with the messages last, and the cache
//! keeps the last body with where each message ends and its key: the messages that are as
//! they were (same key in the same place; a key-0 message, such as the system prompt,
//! serialized again and compared) stay where they are in that same buffer, which is taken back
//! once the last request let go of it, and only the rest is written after them. A message
//! further on whose key is still in its place is copied, not serialized again. Without a keyed
//! message the body is serialized whole and the cache is left as it was. A wire format that
//! merges messages into turns (Anthropic) goes through `body_turns`, the same way by turns.

use std::sync::{Mutex, PoisonError};

use bytes::{Bytes, BytesMut};

use super::config::ProviderConfig;
use super::messages::ModelRequest;
use super::messages::Messages;
use super::wire::Wire;

/// The body last sent; see the module doc.
#[derive(Default)]
pub(crate) struct BodyCache {
    last: Mutex<Option<Last>>,
    turns: Mutex<Option<super::body_turns::Sent>>,
}

struct Last {
    body: Bytes,
    /// The body up to the first message: the head and `"messages":[`.
    start: usize,
    /// Where each message ends in `body`, and its key.
    ends: Vec<usize>,
    keys: Vec<u64>,
}

impl Last {
    /// The bytes of message `i`.
    fn message(&self, i: usize) -> &[u8] {
        let from = if i == 0 {
            self.start
        } else {
            self.ends[i - 1] + 1
        };
        &self.body[from..self.ends[i]]
    }

    /// Where the body up to message `i` (excluded) ends.
    fn end_before(&self, i: usize) -> usize {
        if i == 0 { self.start } else { self.ends[i - 1] }
    }
}

impl BodyCache {
    /// The body of `request`: the JSON `W::body` describes, with the `messages` key last.
    pub fn body<W: Wire>(
        &self,
        config: &ProviderConfig,
        request: &ModelRequest,
    ) -> serde_json::Result<Bytes> {
        if W::MERGES {
            return super::body_turns::body::<W>(&self.turns, config, request);
        }
        let whole = || serde_json::to_vec(&W::body(config, request)).map(Bytes::from);
        if request.messages.is_empty() {
            return whole();
        }
        if W::message(config, &request.messages, 0).is_none()
            || request.messages.iter().all(|k| k.key == 0)
        {
            return whole();
        }
        let frame = ModelRequest {
            messages: Messages::default(),
            tools: request.tools.clone(),
            max_output_tokens: request.max_output_tokens,
            cache_key: request.cache_key.clone(),
            cached_prefix: None,
        };
        let mut value = W::body(config, &frame);
        let Some(object) = value.as_object_mut() else {
            return whole();
        };
        if object.remove("messages").is_none() {
            return whole();
        }
        let head = serde_json::to_vec(&value)?;
        let mut start = head[..head.len() - 1].to_vec();
        if head.len() > 2 {
            start.push(b',');
        }
        start.extend_from_slice(b"\"messages\":[");
        let mut cache = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let last = cache.take();
        let Some(built) = build::<W>(config, last, start, &request.messages)? else {
            return whole();
        };
        let body = built.body.clone();
        *cache = Some(built);
        Ok(body)
    }
}

/// The body of `messages` after `start`, built on `last`: in its buffer when its head is
/// `start`, else with the messages still in their place copied from it. `None`: the wire
/// format merges messages after all.
fn build<W: Wire>(
    config: &ProviderConfig,
    last: Option<Last>,
    start: Vec<u8>,
    messages: &Messages,
) -> serde_json::Result<Option<Last>> {
    let serialize = |i: usize| -> serde_json::Result<Option<Vec<u8>>> {
        let Some(values) = W::message(config, messages, i) else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        for (n, value) in values.iter().enumerate() {
            if n > 0 {
                bytes.push(b',');
            }
            serde_json::to_writer(&mut bytes, value)?;
        }
        Ok(Some(bytes))
    };
    // How many messages are as they were, in place (behind the same head).
    let mut same = 0;
    let mut first_new = None;
    let in_place = last
        .as_ref()
        .filter(|last| last.body[..last.start] == start[..]);
    if let Some(last) = in_place {
        for (i, keyed) in messages.iter().enumerate().take(last.keys.len()) {
            if keyed.key != 0 {
                if keyed.key != last.keys[i] {
                    break;
                }
            } else {
                let Some(bytes) = serialize(i)? else {
                    return Ok(None);
                };
                if bytes != last.message(i) {
                    first_new = Some(bytes);
                    break;
                }
            }
            same += 1;
        }
    }
    // What follows them, written apart while `last` is still whole.
    let mut tail = Vec::new();
    let mut tail_ends = Vec::with_capacity(messages.len() - same);
    for (i, keyed) in messages.iter().enumerate().skip(same) {
        if i > 0 {
            tail.push(b',');
        }
        let reused = last
            .as_ref()
            .filter(|last| keyed.key != 0 && last.keys.get(i) == Some(&keyed.key));
        match reused {
            Some(last) => tail.extend_from_slice(last.message(i)),
            None => {
                let bytes = match first_new.take() {
                    Some(bytes) => bytes,
                    None => match serialize(i)? {
                        Some(bytes) => bytes,
                        None => return Ok(None),
                    },
                };
                tail.extend_from_slice(&bytes);
            }
        }
        tail_ends.push(tail.len());
    }
    let (mut buffer, mut ends, mut keys) = match last {
        Some(last) if last.body[..last.start] == start[..] => {
            let keep = last.end_before(same);
            let (mut ends, mut keys) = (last.ends, last.keys);
            ends.truncate(same);
            keys.truncate(same);
            let mut kept = last
                .body
                .try_into_mut()
                .unwrap_or_else(|shared| BytesMut::from(&shared[..keep]));
            kept.truncate(keep);
            (kept, ends, keys)
        }
        _ => (BytesMut::from(&start[..]), Vec::new(), Vec::new()),
    };
    let offset = buffer.len();
    ends.extend(tail_ends.into_iter().map(|end| end + offset));
    keys.extend(messages.iter().skip(same).map(|k| k.key));
    buffer.extend_from_slice(&tail);
    buffer.extend_from_slice(b"]}");
    Ok(Some(Last {
        body: buffer.freeze(),
        start: start.len(),
        ends,
        keys,
    }))
}

#[cfg(test)]
#[path = "body_tests.rs"]
mod tests;
