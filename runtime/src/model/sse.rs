//! From response bytes to SSE events for an assembler: UTF-8 repair, the idle timeout, and the
//! SSE framing itself (the `eventsource-stream` crate, not a parser of our own).
//!
//! M1 (streaming), V2 (invalid UTF-8 is replaced and recorded, not fatal; a final event
//! without its blank line still counts). The idle timeout (no bytes for N ms is an error, not a
//! hang) lives here because only this layer sees bytes arrive. `replay` runs the same path on
//! bytes in memory, for tests and the benchmark.

use super::assembler::{Step, WireAssembler};
use super::error::ModelError;
use super::sse_lines::LineTracker;
use super::types::{AssistantMessage, Delta};
use bytes::Bytes;
use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

/// Decodes UTF-8 across chunk boundaries, replacing invalid bytes with U+FFFD.
#[derive(Default)]
pub(crate) struct Utf8Repair {
    pending: Vec<u8>,
    replaced: usize,
}

impl Utf8Repair {
    pub fn push(&mut self, bytes: &[u8]) -> String {
        let joined;
        let mut rest: &[u8] = if self.pending.is_empty() {
            bytes
        } else {
            self.pending.extend_from_slice(bytes);
            joined = std::mem::take(&mut self.pending);
            &joined
        };
        let mut out = String::with_capacity(rest.len());
        loop {
            match std::str::from_utf8(rest) {
                Ok(valid) => {
                    out.push_str(valid);
                    return out;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        // An incomplete sequence at the end: wait for the next chunk.
                        None => {
                            self.pending = after.to_vec();
                            return out;
                        }
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.replaced += bad;
                            rest = &after[bad..];
                        }
                    }
                }
            }
        }
    }

    /// The end of input: an incomplete sequence left over is invalid too.
    pub fn finish(&mut self) -> String {
        if self.pending.is_empty() {
            return String::new();
        }
        self.replaced += self.pending.len();
        self.pending.clear();
        char::REPLACEMENT_CHARACTER.to_string()
    }

    pub fn replaced(&self) -> usize {
        self.replaced
    }
}

/// The byte stream as text for the SSE decoder: repaired UTF-8, a stall is an error, and a
/// blank line at the end so that a last event without one is still dispatched.
struct SseText<S> {
    inner: S,
    utf8: Utf8Repair,
    idle: Option<(Duration, Pin<Box<tokio::time::Sleep>>)>,
    replaced: Arc<AtomicUsize>,
    /// Which body line each event began on, for the assembler's messages.
    lines: Arc<Mutex<LineTracker>>,
    ended: bool,
}

impl<S> Stream for SseText<S>
where
    S: Stream<Item = Result<Bytes, ModelError>> + Unpin,
{
    type Item = Result<String, ModelError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.ended {
            return Poll::Ready(None);
        }
        let item = match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(bytes))) => {
                if let Some((after, sleep)) = &mut this.idle {
                    sleep.as_mut().reset(tokio::time::Instant::now() + *after);
                }
                Ok(this.utf8.push(&bytes))
            }
            Poll::Ready(Some(Err(e))) => {
                this.ended = true;
                Err(e)
            }
            Poll::Ready(None) => {
                this.ended = true;
                let mut tail = this.utf8.finish();
                tail.push_str("\n\n");
                Ok(tail)
            }
            Poll::Pending => {
                if let Some((after, sleep)) = &mut this.idle
                    && sleep.as_mut().poll(cx).is_ready()
                {
                    this.ended = true;
                    return Poll::Ready(Some(Err(ModelError::IdleTimeout { after: *after })));
                }
                return Poll::Pending;
            }
        };
        this.replaced.store(this.utf8.replaced(), Ordering::Relaxed);
        if let (Ok(text), Ok(mut lines)) = (&item, this.lines.lock()) {
            lines.push(text);
        }
        Poll::Ready(Some(item))
    }
}

/// Reads `bytes` to the end (or the provider's end marker) through `assembler`, handing every
/// display delta to `on_delta`. `idle` needs a Tokio runtime; `None` disables it.
pub(crate) async fn drive<S, A>(
    bytes: S,
    idle: Option<Duration>,
    assembler: &mut A,
    mut on_delta: impl FnMut(Delta),
) -> Result<(), ModelError>
where
    S: Stream<Item = Result<Bytes, ModelError>> + Unpin,
    A: WireAssembler,
{
    let replaced = Arc::new(AtomicUsize::new(0));
    let lines = Arc::new(Mutex::new(LineTracker::default()));
    let text = SseText {
        inner: bytes,
        utf8: Utf8Repair::default(),
        idle: idle.map(|after| (after, Box::pin(tokio::time::sleep(after)))),
        replaced: Arc::clone(&replaced),
        lines: Arc::clone(&lines),
        ended: false,
    };
    let mut events = text.eventsource();
    let mut deltas = Vec::new();
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| match e {
            EventStreamError::Transport(e) => e,
            other => ModelError::StreamBroken(other.to_string()),
        })?;
        if let Some(line) = lines.lock().ok().and_then(|mut lines| lines.take()) {
            assembler.at_line(line);
        }
        let step = assembler.on_event(&event.event, &event.data, &mut deltas)?;
        deltas.drain(..).for_each(&mut on_delta);
        if step == Step::Done {
            break;
        }
    }
    let replaced = replaced.load(Ordering::Relaxed);
    if replaced > 0 {
        assembler.note_invalid_utf8(replaced);
    }
    Ok(())
}

/// Assembles a complete SSE body held in memory, split into `chunks` as a network would.
pub fn replay<A, I>(mut assembler: A, chunks: I) -> Result<AssistantMessage, ModelError>
where
    A: WireAssembler,
    I: IntoIterator<Item = Bytes>,
{
    let bytes = futures::stream::iter(chunks.into_iter().map(Ok));
    futures::executor::block_on(drive(bytes, None, &mut assembler, |_| {}))?;
    assembler.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_split_across_chunks_is_joined() {
        let mut repair = Utf8Repair::default();
        let snow = "é☃".as_bytes();
        let mut out = repair.push(&snow[..2]);
        out.push_str(&repair.push(&snow[2..4]));
        out.push_str(&repair.push(&snow[4..]));
        out.push_str(&repair.finish());
        assert_eq!(out, "é☃");
        assert_eq!(repair.replaced(), 0);
    }

    #[test]
    fn invalid_utf8_is_replaced_and_counted() {
        let mut repair = Utf8Repair::default();
        let mut out = repair.push(b"a\xffb\xc3");
        out.push_str(&repair.finish());
        assert_eq!(out, "a\u{FFFD}b\u{FFFD}");
        assert_eq!(repair.replaced(), 2);
    }
}
