//! The request body of a format that merges consecutive messages of one role into one turn
//! (Anthropic): byte for byte what serializing `W::body` whole gives, built on the
//! body sent last time. The turns made only of messages still in place stay where they are in
//! that buffer (taken back once the last request let go of it); the turn they end with is
//! written again, since the messages that follow may join it, and so is everything after.
//! Each message's blocks are serialized once: a message further on whose key is still in its
//! place, and marked as a cache breakpoint (`Wire::marked`) as it was, is copied from the last
//! body.

use std::sync::{Mutex, PoisonError};

use bytes::{Bytes, BytesMut};
use serde_json::{Map, Value};

use super::config::ProviderConfig;
use super::messages::ModelRequest;
use super::messages::{Keyed, Messages};
use super::types::Message;
use super::wire::Wire;

/// The body last sent and where its parts are.
pub(crate) struct Sent {
    body: Bytes,
    /// Up to `"messages":[` included, and from the `]` that closes it to the end.
    start: usize,
    end: Vec<u8>,
    keys: Vec<u64>,
    /// Per message: whether its last block is a cache breakpoint.
    marks: Vec<bool>,
    /// Per message: its role and where its blocks are in `body` (`None`: no blocks, no turn).
    parts: Vec<Option<(&'static str, usize, usize)>>,
    /// Per turn: its first message and where the turn starts in `body`.
    turns: Vec<(usize, usize)>,
    /// How many turns stayed in place from the body before (for tests).
    #[cfg(test)]
    kept: usize,
}

impl Sent {
    #[cfg(test)]
    pub(crate) fn kept_and_all(&self) -> (usize, usize) {
        (self.kept, self.turns.len())
    }
}

/// One message's role and blocks (the last one a cache breakpoint when `marked`), serialized
/// and joined by commas.
fn part<W: Wire>(
    config: &ProviderConfig,
    keyed: &Keyed,
    marked: bool,
) -> serde_json::Result<Option<(&'static str, Vec<u8>)>> {
    let Some((role, mut blocks)) = W::blocks(&keyed.message) else {
        return Ok(None);
    };
    if blocks.is_empty() {
        return Ok(None);
    }
    if marked {
        W::mark(config, &mut blocks);
    }
    let mut bytes = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            bytes.push(b',');
        }
        serde_json::to_writer(&mut bytes, block)?;
    }
    Ok(Some((role, bytes)))
}

/// The body around the turns: `{…,"messages":[` and `],…}` (keys in their order).
fn frame<W: Wire>(config: &ProviderConfig, request: &ModelRequest) -> Option<(Vec<u8>, Vec<u8>)> {
    // The system prompt goes apart from the turns, in the frame.
    let mut system = Messages::default();
    for keyed in request.messages.iter() {
        if matches!(*keyed.message, Message::System { .. }) {
            system.push_keyed(keyed.clone());
        }
    }
    let frame = ModelRequest {
        messages: system,
        tools: request.tools.clone(),
        max_output_tokens: request.max_output_tokens,
        cache_key: request.cache_key.clone(),
        cached_prefix: None,
    };
    let Value::Object(object) = W::body(config, &frame) else {
        return None;
    };
    let (mut before, mut after, mut seen) = (Map::new(), Map::new(), false);
    for (key, value) in object {
        match (key.as_str(), seen) {
            ("messages", _) => seen = true,
            (_, false) => drop(before.insert(key, value)),
            (_, true) => drop(after.insert(key, value)),
        }
    }
    if !seen {
        return None;
    }
    let before = serde_json::to_vec(&before).ok()?;
    let after = serde_json::to_vec(&after).ok()?;
    let mut start = before[..before.len() - 1].to_vec();
    if before.len() > 2 {
        start.push(b',');
    }
    start.extend_from_slice(b"\"messages\":[");
    let mut end = b"]".to_vec();
    if after.len() > 2 {
        end.push(b',');
        end.extend_from_slice(&after[1..]);
    } else {
        end.push(b'}');
    }
    Some((start, end))
}

/// The body of `request`; see the module doc.
pub(crate) fn body<W: Wire>(
    cache: &Mutex<Option<Sent>>,
    config: &ProviderConfig,
    request: &ModelRequest,
) -> serde_json::Result<Bytes> {
    let whole = || serde_json::to_vec(&W::body(config, request)).map(Bytes::from);
    if request.messages.iter().all(|k| k.key == 0) {
        return whole();
    }
    let Some((start, end)) = frame::<W>(config, request) else {
        return whole();
    };
    let marked = W::marked(config, request);
    let marks: Vec<bool> = (0..request.messages.len())
        .map(|i| marked.contains(&i))
        .collect();
    let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
    let sent = build::<W>(cache.take(), config, start, end, &request.messages, marks)?;
    let body = sent.body.clone();
    *cache = Some(sent);
    Ok(body)
}

fn build<W: Wire>(
    last: Option<Sent>,
    config: &ProviderConfig,
    start: Vec<u8>,
    end: Vec<u8>,
    messages: &Messages,
    marks: Vec<bool>,
) -> serde_json::Result<Sent> {
    let in_place = last.as_ref().filter(|l| l.body[..l.start] == start[..]);
    let cached = |last: &Sent, i: usize| {
        last.parts[i].map(|(role, from, to)| (role, last.body[from..to].to_vec()))
    };
    // Messages as they were, in place.
    let mut same = 0;
    if let Some(last) = in_place {
        for (i, keyed) in messages.iter().enumerate().take(last.keys.len()) {
            let unchanged = match keyed.key {
                0 => part::<W>(config, keyed, marks[i])? == cached(last, i),
                key => key == last.keys[i] && marks[i] == last.marks[i],
            };
            if !unchanged {
                break;
            }
            same += 1;
        }
    }
    // The turns kept: those a later turn followed before the first message that changed.
    let kept = in_place.map_or(0, |last| {
        let next_starts = last.turns.iter().skip(1).map(|&(first, _)| first);
        next_starts.take_while(|&first| first <= same).count()
    });
    let from = match (in_place, kept) {
        (Some(last), k) if k < last.turns.len() => last.turns[k].0,
        (Some(_), _) => same,
        (None, _) => 0,
    };
    // What follows them, written apart while `last` is still whole.
    let mut tail = Vec::new();
    let mut parts = Vec::with_capacity(messages.len() - from);
    let mut turns = Vec::new();
    let mut role_open: Option<&str> = None;
    for (i, keyed) in messages.iter().enumerate().skip(from) {
        let reused = last.as_ref().filter(|last| {
            keyed.key != 0
                && last.keys.get(i) == Some(&keyed.key)
                && last.marks.get(i) == Some(&marks[i])
        });
        let part = match reused {
            Some(last) => cached(last, i),
            None => part::<W>(config, keyed, marks[i])?,
        };
        let Some((role, bytes)) = part else {
            parts.push(None);
            continue;
        };
        if role_open == Some(role) {
            tail.push(b',');
        } else {
            if role_open.is_some() {
                tail.extend_from_slice(b"]}");
            }
            if kept > 0 || !turns.is_empty() {
                tail.push(b',');
            }
            turns.push((i, tail.len()));
            tail.extend_from_slice(b"{\"role\":");
            serde_json::to_writer(&mut tail, role)?;
            tail.extend_from_slice(b",\"content\":[");
            role_open = Some(role);
        }
        parts.push(Some((role, tail.len(), tail.len() + bytes.len())));
        tail.extend_from_slice(&bytes);
    }
    if role_open.is_some() {
        tail.extend_from_slice(b"]}");
    }
    let (mut buffer, mut kept_parts, mut kept_turns, mut keys, mut kept_marks) = match last {
        Some(last) if last.body[..last.start] == start[..] => {
            let cut = last
                .turns
                .get(kept)
                .map_or(last.body.len() - last.end.len(), |t| t.1);
            // The comma before the first turn written again goes with it.
            let cut = if kept > 0 && kept < last.turns.len() {
                cut - 1
            } else {
                cut
            };
            let (mut parts, mut turns, mut keys) = (last.parts, last.turns, last.keys);
            let mut kept_marks = last.marks;
            parts.truncate(from);
            turns.truncate(kept);
            keys.truncate(from);
            kept_marks.truncate(from);
            let mut buffer = last
                .body
                .try_into_mut()
                .unwrap_or_else(|shared| BytesMut::from(&shared[..cut]));
            buffer.truncate(cut);
            (buffer, parts, turns, keys, kept_marks)
        }
        _ => (
            BytesMut::from(&start[..]),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
        ),
    };
    let offset = buffer.len();
    kept_parts.extend(
        parts
            .into_iter()
            .map(|p| p.map(|(r, a, b)| (r, a + offset, b + offset))),
    );
    kept_turns.extend(turns.into_iter().map(|(first, at)| (first, at + offset)));
    keys.extend(messages.iter().skip(from).map(|k| k.key));
    kept_marks.extend(marks.into_iter().skip(from));
    buffer.extend_from_slice(&tail);
    buffer.extend_from_slice(&end);
    Ok(Sent {
        body: buffer.freeze(),
        start: start.len(),
        end,
        keys,
        marks: kept_marks,
        parts: kept_parts,
        turns: kept_turns,
        #[cfg(test)]
        kept,
    })
}
