//! The history as sent (issue 13). `History::render` and `History::estimate` keep what they
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

use std::sync::{Arc, MutexGuard, PoisonError};

use super::ageing::{AGED, Ageing, STUB_BYTES, aged};
use super::history::{Entry, History, estimate_tokens, message_bytes};
use crate::model::{Keyed, Message, Messages};

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
fn rendered(entry: &Entry, boundary: u64, ageing: Option<Ageing>) -> (Keyed, u64) {
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
    fn ripen(&mut self, entries: &[Entry], steps: u64, ageing: Ageing) {
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
mod tests;
