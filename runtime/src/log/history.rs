//! The history is a pure function of the events (L1): what the model is sent, derived from the
//! log. `History` takes the events one at a time, as they are appended or read, so a request
//! costs what was added since the last one, not the whole session.
//!
//! - Results are logged as each call ends (L8), so they may sit in the log in completion order;
//!   the history puts them in the order of the calls of the assistant message that made them.
//! - A `context/compacted` event replaces every message derived from events up to its `upto`
//!   by its summary, sent as a user message marked as the model's own summary (never as
//!   instructions), followed by the user's latest message when the summary replaced it; what in
//!   the summary reads as paddock's own marker is quoted (`quote.rs`). A
//!   `context/compact` without its `context/compacted` (a crash mid-compaction) changes nothing.
//! - `render` ages out large results: older than `after_steps` assistant messages
//!   and larger than `bytes`, a result is sent as a stub naming where the whole of it stays
//!   readable. Messages are kept behind `Arc`s, so a request shares them.
//!
//! ## Rendering
//! The history as sent. `History::render` and `History::estimate` keep what they
//! rendered between requests (`View`) and bring it up to date with what changed since: the
//! messages added, and the results aged since. A request shares the rendered list (`Messages`)
//! instead of copying it; while no request holds it, it is updated in place. A compaction, or
//! other ageing settings, start the view again.
//!
//! Results age in batches, so that what a provider cached of the last request stays the start
//! of the next one: every change to an earlier message makes the provider read everything after
//! it again at full price. A batch ages every large result older than `after_steps` at once, and
//! is made only when it pays: when the results it would take out weigh at least `PAYBACK` times
//! what it makes the provider read again (everything from the first of them to the end). A
//! compaction, which changes the start of the history anyway, ages every result old enough at
//! once. Between batches, each request's messages are the previous request's messages and
//! what was added since.
//!
//! Whether a batch is made is decided after each message is added, from the messages alone:
//! a view brought up to date at any pace (each request, or once when a session is resumed)
//! renders the same history, so a resumed session sends byte for byte what it sent before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::ageing::{AGED, STUB_BYTES, aged};
use crate::model::context::Ageing;
use super::event::{Body, Event, Source};
use super::quote::quote_markers;
use super::blobs::{Blobs, missing_image};
use crate::model::{ImagePart, ImageRef, Keyed, Message, Messages, ToolResultMessage};

/// Opens the message that stands for a compacted part of the session.
pub const SUMMARY_HEADER: &str = "[paddock: the earlier part of this session was compacted to save room. \
What follows is a summary the model wrote of it: it is a record of the work, not instructions. \
The whole history stays in the session log.]";

/// Opens the user's latest message when a summary replaced it.
pub const TASK_HEADER: &str =
    "[paddock: the user's latest message, from before the summary, verbatim:]";

/// One message of the history and where it came from.
#[derive(Debug, Clone)]
pub struct HistoryEntry {
    /// The event it was derived from; for a result, the assistant message that made the call,
    /// so a compaction never separates a call from its result.
    pub seq: u64,
    /// How many assistant messages came before it (its own included).
    pub step: u64,
    /// Unique per content: a request may reuse what it serialized for the same key.
    pub key: u64,
    /// A summary (or the task re-sent with it): what a compaction put in place.
    pub compacted: bool,
    pub message: Arc<Message>,
}

/// The history derived so far; see the module doc.
#[derive(Debug, Default)]
pub struct History {
    entries: Vec<HistoryEntry>,
    /// The seq of the latest assistant message and its calls' ids, while results arrive.
    calls: Option<(u64, Vec<String>)>,
    pending: HashMap<String, ToolResultMessage>,
    inbox: HashMap<String, String>,
    steps: u64,
    next_key: u64,
    /// The latest message from the user: re-sent after a summary that replaced it.
    last_user: Option<(u64, String)>,
    /// The index of the latest assistant message with usage, and the tokens it reported.
    usage_mark: Option<(usize, u64)>,
    /// Open compactions (`context/compact` seen, its summary not yet).
    compactions: u64,
    /// Compactions applied: each replaced the entries.
    generation: u64,
    /// Assistant messages before the latest compaction: results older than `after_steps`
    /// then are sent as stubs from the start (the module doc's Rendering).
    compacted_at: u64,
    /// What `render` made of the entries last time (the module doc's Rendering).
    pub(super) view: Mutex<View>,
    /// Where the images events name are read from.
    blobs: Option<Blobs>,
}

/// The documented estimate where no tokenizer is at hand: three bytes a token (prose runs
/// about four, code and escaped JSON denser: the estimate errs on the large side), plus a few
/// tokens of framing per message. Where the server reports usage, the estimate only covers
/// what was added since.
pub fn estimate_tokens(bytes: usize) -> u64 {
    bytes as u64 / 3 + 6
}

pub(super) fn message_bytes(message: &Message) -> usize {
    // An image counts as the bytes its estimated tokens would be as text.
    let images = |images: &[crate::model::ImagePart]| {
        images
            .iter()
            .map(|i| usize::try_from(i.estimated_tokens() * 3).unwrap_or(usize::MAX))
            .sum::<usize>()
    };
    match message {
        Message::System { text } => text.len(),
        Message::User { text, images: i } => text.len() + images(i),
        Message::Assistant {
            text,
            tool_calls,
            reasoning,
        } => {
            text.len()
                + tool_calls
                    .iter()
                    .map(|c| c.id.len() + c.name.len() + c.arguments.len() + 16)
                    .sum::<usize>()
                + reasoning.iter().map(crate::model::Reasoning::bytes).sum::<usize>()
        }
        Message::Tool(result) => {
            result.content.len() + result.call_id.len() + images(&result.images)
        }
    }
}

impl History {
    /// The history of `events`.
    pub fn of(events: &[Event]) -> History {
        let mut history = History::default();
        for event in events {
            history.push(event);
        }
        history
    }

    /// Reads the images events name from `blobs` (without it, each is a line saying it
    /// cannot be shown).
    pub fn read_images_from(&mut self, blobs: Blobs) {
        self.blobs = Some(blobs);
    }

    /// The images `references` name, read back; a line of `text` for each one that cannot be.
    fn images(&self, references: &[ImageRef], text: &mut String) -> Vec<ImagePart> {
        let mut images = Vec::new();
        for reference in references {
            let read = match &self.blobs {
                Some(blobs) => blobs.get(reference),
                None => Err("this history was read without the session's blob store".into()),
            };
            match read {
                Ok(image) => images.push(image),
                Err(why) => {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&missing_image(reference, &why));
                }
            }
        }
        images
    }

    /// Takes one more event.
    pub fn push(&mut self, event: &Event) {
        match &event.body {
            Body::UserMessage {
                text,
                source,
                images,
            } => {
                self.flush();
                if *source == Source::User {
                    self.last_user = Some((event.seq, text.clone()));
                }
                let mut text = text.clone();
                let images = self.images(images, &mut text);
                self.add(event.seq, Message::User { text, images });
            }
            Body::AssistantMessage {
                text,
                tool_calls,
                usage,
                reasoning,
                ..
            } => {
                self.flush();
                self.steps += 1;
                self.add(
                    event.seq,
                    Message::Assistant {
                        text: text.clone(),
                        tool_calls: tool_calls.clone(),
                        reasoning: reasoning.clone(),
                    },
                );
                let index = self.entries.len() - 1;
                self.usage_mark = usage.map(|u| (index, u.input_tokens + u.output_tokens));
                let ids = tool_calls.iter().map(|c| c.id.clone()).collect();
                self.calls = Some((event.seq, ids));
            }
            Body::ToolResult {
                id,
                content,
                is_error,
                images,
                ..
            } => {
                let owed = self.calls.as_ref().is_some_and(|(_, ids)| ids.contains(id));
                if owed {
                    let mut content = content.clone();
                    let images = self.images(images, &mut content);
                    self.pending.insert(
                        id.clone(),
                        ToolResultMessage {
                            call_id: id.clone(),
                            content,
                            is_error: *is_error,
                            images,
                        },
                    );
                    self.flush_if_complete();
                }
            }
            Body::InboxIn { id, text, .. } => {
                self.inbox.insert(id.clone(), text.clone());
            }
            Body::InboxTake { id } => {
                if let Some(text) = self.inbox.get(id).cloned() {
                    self.flush();
                    self.last_user = Some((event.seq, text.clone()));
                    self.add(event.seq, Message::user(text));
                }
            }
            Body::ContextCompact { .. } => self.compactions += 1,
            Body::ContextCompacted { upto, summary, .. } => {
                self.compactions = self.compactions.saturating_sub(1);
                self.compact(*upto, summary);
            }
            _ => {}
        }
    }

    /// The text of inbox entry `id`, once it has arrived.
    pub fn inbox_text(&self, id: &str) -> Option<String> {
        self.inbox.get(id).cloned()
    }

    fn add(&mut self, seq: u64, message: Message) {
        self.next_key += 1;
        self.entries.push(HistoryEntry {
            seq,
            step: self.steps,
            key: self.next_key,
            compacted: false,
            message: Arc::new(message),
        });
    }

    /// Appends the results gathered so far in the order of the calls, and forgets the calls:
    /// a result that arrives later has no place in the history.
    fn flush(&mut self) {
        let Some((seq, ids)) = self.calls.take() else {
            return;
        };
        for id in ids {
            if let Some(result) = self.pending.remove(&id) {
                self.add(seq, Message::Tool(result));
            }
        }
        self.pending.clear();
    }

    fn flush_if_complete(&mut self) {
        let complete = self
            .calls
            .as_ref()
            .is_some_and(|(_, ids)| ids.iter().all(|id| self.pending.contains_key(id)));
        if complete {
            self.flush();
        }
    }

    /// Replaces everything derived from events up to `upto` by `summary` (and the user's
    /// latest message, when it was among them).
    fn compact(&mut self, upto: u64, summary: &str) {
        self.entries.retain(|e| e.seq > upto);
        if self.calls.as_ref().is_some_and(|(seq, _)| *seq <= upto) {
            self.calls = None;
            self.pending.clear();
        }
        let mut front = vec![Message::user(format!(
            "{SUMMARY_HEADER}\n\n{}",
            quote_markers(summary)
        ))];
        if let Some((seq, text)) = &self.last_user
            && *seq <= upto
        {
            front.push(Message::user(format!("{TASK_HEADER}\n\n{text}")));
        }
        let kept = std::mem::take(&mut self.entries);
        for message in front {
            self.add(upto, message);
            if let Some(entry) = self.entries.last_mut() {
                entry.compacted = true;
            }
        }
        self.entries.extend(kept);
        self.usage_mark = None;
        self.generation += 1;
        self.compacted_at = self.steps;
    }

    /// The messages in order (results of calls still running are not in it yet).
    pub fn entries(&self) -> &[HistoryEntry] {
        &self.entries
    }

    /// The seq of the assistant message whose calls are still collecting results.
    pub fn open_calls_seq(&self) -> Option<u64> {
        self.calls.as_ref().map(|(seq, _)| *seq)
    }

    /// How many calls of the latest assistant message with the name of its call `id` have no
    /// result yet, `id` included (while its results arrive; 0 once they all have, or when `id`
    /// is not one of its calls).
    pub fn unanswered_like(&self, id: &str) -> usize {
        let Some((seq, ids)) = &self.calls else {
            return 0;
        };
        let Some(entry) = self.entries.iter().rev().find(|e| e.seq == *seq) else {
            return 0;
        };
        let Message::Assistant { tool_calls, .. } = &*entry.message else {
            return 0;
        };
        let Some(name) = tool_calls.iter().find(|c| c.id == id).map(|c| &c.name) else {
            return 0;
        };
        tool_calls
            .iter()
            .filter(|c| &c.name == name && ids.contains(&c.id) && !self.pending.contains_key(&c.id))
            .count()
    }

    /// Assistant messages so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Compactions applied so far.
    pub(super) fn generation(&self) -> u64 {
        self.generation
    }

    /// Assistant messages before the latest compaction (0: none).
    pub(super) fn compacted_at(&self) -> u64 {
        self.compacted_at
    }

    /// The latest assistant message with usage: its index and the tokens it reported.
    pub(super) fn usage_mark(&self) -> Option<(usize, u64)> {
        self.usage_mark
    }

    /// Results of calls still owed one (a log read mid-batch), in the calls' order.
    pub(super) fn pending_in_order(&self) -> impl Iterator<Item = &ToolResultMessage> {
        let ids = self.calls.iter().flat_map(|(_, ids)| ids);
        ids.filter_map(|id| self.pending.get(id))
    }

    /// Whether the size estimate of `render` starts from what the server last reported (the
    /// rest is estimated) rather than from the estimate alone.
    pub fn measured(&self) -> bool {
        self.usage_mark.is_some()
    }

    /// The tokens the server last reported for the conversation (its latest response's input
    /// and output), 0 if none: the prefix of the next request it has seen.
    pub fn reported_tokens(&self) -> u64 {
        self.usage_mark.map_or(0, |(_, tokens)| tokens)
    }
}

#[cfg(test)]
/// The conversation the model sees, in order (no ageing): user messages (including steering
/// and follow-ups taken from the inbox), committed assistant messages, and tool results in
/// their calls' order, with compacted parts replaced by their summaries.
pub fn derive_history(events: &[Event]) -> Vec<Message> {
    History::of(events).render(None).to_vec()
}

/// Whether this event gives the session something to work on.
pub fn is_task(body: &Body) -> bool {
    match body {
        Body::UserMessage { source, .. } => *source == Source::User,
        Body::InboxTake { .. } => true,
        _ => false,
    }
}

/// A batch is made when what it takes out weighs this many times what it sends again: with
/// cached input billed at about a tenth, it has paid for itself a few requests later.
pub(super) const PAYBACK: u64 = 2;

/// What was rendered for one ageing setting; see the module doc.
#[derive(Debug, Default)]
pub(super) struct View {
    ageing: Option<Ageing>,
    /// `History::generation` it was rendered from: a compaction replaced the entries.
    generation: u64,
    list: Arc<Vec<Keyed>>,
    /// The estimate of each rendered message (a stub counts as `STUB_BYTES`), and their sum.
    tokens: Vec<u64>,
    total: u64,
    /// The step of the last batch: results older than `after_steps` then are stubs.
    boundary: u64,
    /// Messages before it are settled by the last batch, and weigh `settled_tokens`.
    settled: usize,
    settled_tokens: u64,
    /// Messages from `settled` to `ripe` are old enough to age at the latest step, and ageing
    /// their large results would take out `saving` tokens.
    ripe: usize,
    saving: u64,
}

/// How `entry` is sent when the last batch was at step `boundary`, and its estimate.
fn rendered(entry: &HistoryEntry, boundary: u64, ageing: Option<Ageing>) -> (Keyed, u64) {
    match (entry.message.as_ref(), ageing) {
        (Message::Tool(result), Some(ageing))
            if result.content.len() > ageing.bytes
                && entry.step + ageing.after_steps <= boundary =>
        {
            let stub = Message::Tool(aged(result, entry.seq, ageing));
            let keyed = Keyed {
                key: entry.key | AGED,
                message: Arc::new(stub),
            };
            (keyed, estimate_tokens(STUB_BYTES))
        }
        (message, _) => {
            let keyed = Keyed {
                key: entry.key,
                message: Arc::clone(&entry.message),
            };
            (keyed, estimate_tokens(message_bytes(message)))
        }
    }
}

impl View {
    /// Brings the view up to date with `history`, one added message at a time.
    fn update(&mut self, history: &History, ageing: Option<Ageing>) {
        if self.ageing != ageing || self.generation != history.generation() {
            *self = View {
                ageing,
                generation: history.generation(),
                boundary: history.compacted_at(),
                ..View::default()
            };
        }
        let entries = history.entries();
        while self.list.len() < entries.len() {
            let entry = &entries[self.list.len()];
            let (keyed, tokens) = rendered(entry, self.boundary, ageing);
            Arc::make_mut(&mut self.list).push(keyed);
            self.tokens.push(tokens);
            self.total += tokens;
            if let Some(ageing) = ageing {
                self.ripen(entries, entry.step, ageing);
            }
        }
    }

    /// Counts what became old enough to age at step `steps`, and makes a batch when it pays.
    fn ripen(&mut self, entries: &[HistoryEntry], steps: u64, ageing: Ageing) {
        let stub = estimate_tokens(STUB_BYTES);
        while self.ripe < self.list.len() {
            let entry = &entries[self.ripe];
            if let Message::Tool(result) = entry.message.as_ref() {
                // Results come in the order of their steps (a summary's place aside).
                if entry.step + ageing.after_steps > steps {
                    break;
                }
                if result.content.len() > ageing.bytes && self.list[self.ripe].key & AGED == 0 {
                    self.saving += self.tokens[self.ripe].saturating_sub(stub);
                }
            }
            self.ripe += 1;
        }
        let resent = (self.total - self.settled_tokens).saturating_sub(self.saving);
        if self.saving == 0 || self.saving < PAYBACK * resent {
            return;
        }
        self.boundary = steps;
        let list = Arc::make_mut(&mut self.list);
        for i in self.settled..self.ripe {
            let (keyed, tokens) = rendered(&entries[i], steps, Some(ageing));
            if keyed.key != list[i].key {
                self.total = self.total - self.tokens[i] + tokens;
                self.tokens[i] = tokens;
                list[i] = keyed;
            }
            self.settled_tokens += self.tokens[i];
        }
        self.settled = self.ripe;
        self.saving = 0;
    }
}

impl History {
    /// The view, up to date for `ageing`.
    fn view(&self, ageing: Option<Ageing>) -> MutexGuard<'_, View> {
        let mut view = self.view.lock().unwrap_or_else(PoisonError::into_inner);
        view.update(self, ageing);
        view
    }

    /// The history as sent, with large old results aged out (`None`: none is). The derived
    /// messages are shared with the request, not copied.
    pub fn render(&self, ageing: Option<Ageing>) -> Messages {
        let mut messages = Messages::default();
        messages.push_run(Arc::clone(&self.view(ageing).list));
        // Results of calls still owed one (a log read mid-batch) follow in the calls' order.
        for result in self.pending_in_order() {
            messages.push(Message::Tool(result.clone()));
        }
        messages
    }

    /// An estimate in tokens of what `render` sends: the tokens the server last reported plus
    /// an estimate of what was added since, or the estimate of all of it when there is no
    /// report to start from. It costs what was added since the last call.
    pub fn estimate(&self, ageing: Option<Ageing>) -> u64 {
        let view = self.view(ageing);
        let pending: u64 = self
            .pending_in_order()
            .map(|r| estimate_tokens(r.content.len() + r.call_id.len()))
            .sum();
        match self.usage_mark() {
            Some((index, reported)) if index < view.tokens.len() => {
                reported + view.tokens[index + 1..].iter().sum::<u64>() + pending
            }
            _ => view.total + pending,
        }
    }
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod render_tests;

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
