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
    /// Per message: its role and where its blocks are in `body`.
    parts: Vec<Place>,
    /// Per turn: its first message and where the turn starts in `body`.
    turns: Vec<(usize, usize)>,
    /// How many turns stayed in place from the body before (for tests).
    #[cfg(test)]
    kept: usize,
}

/// A message's role and where its blocks are in a body (`None`: no blocks, no turn).
type Place = Option<(&'static str, usize, usize)>;

impl Sent {
    #[cfg(test)]
    pub(crate) fn kept_and_all(&self) -> (usize, usize) {
        (self.kept, self.turns.len())
    }

    /// Message `i`'s role and blocks as this body has them.
    fn cached(&self, i: usize) -> Option<(&'static str, Vec<u8>)> {
        self.parts[i].map(|(role, from, to)| (role, self.body[from..to].to_vec()))
    }
}

/// One message's role and blocks (the last one a cache breakpoint when `marked`), serialized
/// and joined by commas.
fn part<W: Wire>(
    config: &ProviderConfig,
    keyed: &Keyed,
    marked: bool,
) -> serde_json::Result<Option<(&'static str, Vec<u8>)>> {
    let Some((role, mut blocks)) = W::blocks(config, &keyed.message) else {
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

/// The body of `messages` between `start` and `end`, on `last`: the turns it kept, then those
/// written again and after.
fn build<W: Wire>(
    last: Option<Sent>,
    config: &ProviderConfig,
    start: Vec<u8>,
    end: Vec<u8>,
    messages: &Messages,
    marks: Vec<bool>,
) -> serde_json::Result<Sent> {
    let in_place = last.as_ref().filter(|l| l.body[..l.start] == start[..]);
    let same = unchanged_prefix::<W>(in_place, config, messages, &marks)?;
    let (kept, from) = rewrite_from(in_place, same);
    // What follows them, written apart while `last` is still whole.
    let tail = write_tail::<W>(last.as_ref(), config, messages, &marks, from, kept > 0)?;
    let Front {
        mut buffer,
        mut parts,
        mut turns,
        mut keys,
        marks: mut kept_marks,
    } = keep_front(last, &start, kept, from);
    let offset = buffer.len();
    parts.extend(
        tail.parts
            .into_iter()
            .map(|p| p.map(|(r, a, b)| (r, a + offset, b + offset))),
    );
    turns.extend(
        tail.turns
            .into_iter()
            .map(|(first, at)| (first, at + offset)),
    );
    keys.extend(messages.iter().skip(from).map(|k| k.key));
    kept_marks.extend(marks.into_iter().skip(from));
    buffer.extend_from_slice(&tail.bytes);
    buffer.extend_from_slice(&end);
    Ok(Sent {
        body: buffer.freeze(),
        start: start.len(),
        end,
        keys,
        marks: kept_marks,
        parts,
        turns,
        #[cfg(test)]
        kept,
    })
}

/// How many messages lead the body as they were in `last` (in place: its frame unchanged).
fn unchanged_prefix<W: Wire>(
    in_place: Option<&Sent>,
    config: &ProviderConfig,
    messages: &Messages,
    marks: &[bool],
) -> serde_json::Result<usize> {
    let mut same = 0;
    if let Some(last) = in_place {
        for (i, keyed) in messages.iter().enumerate().take(last.keys.len()) {
            let unchanged = match keyed.key {
                0 => part::<W>(config, keyed, marks[i])? == last.cached(i),
                key => key == last.keys[i] && marks[i] == last.marks[i],
            };
            if !unchanged {
                break;
            }
            same += 1;
        }
    }
    Ok(same)
}

/// The turns kept (those a later turn followed before the first message that changed, the
/// `same` before it), and the first message written again.
fn rewrite_from(in_place: Option<&Sent>, same: usize) -> (usize, usize) {
    let kept = in_place.map_or(0, |last| {
        let next_starts = last.turns.iter().skip(1).map(|&(first, _)| first);
        next_starts.take_while(|&first| first <= same).count()
    });
    let from = match (in_place, kept) {
        (Some(last), k) if k < last.turns.len() => last.turns[k].0,
        (Some(_), _) => same,
        (None, _) => 0,
    };
    (kept, from)
}

/// The turns written again and after, apart from the body; places from its start.
struct Tail {
    bytes: Vec<u8>,
    parts: Vec<Place>,
    turns: Vec<(usize, usize)>,
}

/// Writes the turns of the messages from `from` on (after a comma when `after_kept`: kept
/// turns come before them). A message whose key and mark are as in `last` is copied from it.
fn write_tail<W: Wire>(
    last: Option<&Sent>,
    config: &ProviderConfig,
    messages: &Messages,
    marks: &[bool],
    from: usize,
    after_kept: bool,
) -> serde_json::Result<Tail> {
    let mut tail = Vec::new();
    let mut parts = Vec::with_capacity(messages.len() - from);
    let mut turns = Vec::new();
    let mut role_open: Option<&str> = None;
    for (i, keyed) in messages.iter().enumerate().skip(from) {
        let reused = last.filter(|last| {
            keyed.key != 0
                && last.keys.get(i) == Some(&keyed.key)
                && last.marks.get(i) == Some(&marks[i])
        });
        let part = match reused {
            Some(last) => last.cached(i),
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
            if after_kept || !turns.is_empty() {
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
    Ok(Tail {
        bytes: tail,
        parts,
        turns,
    })
}

/// What stays of the last body: its bytes up to the first turn written again, and its records
/// of the messages and turns before there.
struct Front {
    buffer: BytesMut,
    parts: Vec<Place>,
    turns: Vec<(usize, usize)>,
    keys: Vec<u64>,
    marks: Vec<bool>,
}

/// Cuts `last` after its `kept` turns (messages before `from`), in its own buffer when no
/// request holds it any more; without a last body in place, just the frame's `start`.
fn keep_front(last: Option<Sent>, start: &[u8], kept: usize, from: usize) -> Front {
    match last {
        Some(last) if last.body[..last.start] == *start => {
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
            let mut marks = last.marks;
            parts.truncate(from);
            turns.truncate(kept);
            keys.truncate(from);
            marks.truncate(from);
            let mut buffer = last
                .body
                .try_into_mut()
                .unwrap_or_else(|shared| BytesMut::from(&shared[..cut]));
            buffer.truncate(cut);
            Front {
                buffer,
                parts,
                turns,
                keys,
                marks,
            }
        }
        _ => Front {
            buffer: BytesMut::from(start),
            parts: Vec::new(),
            turns: Vec::new(),
            keys: Vec::new(),
            marks: Vec::new(),
        },
    }
}
