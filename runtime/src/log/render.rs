//! The history as sent (issue 13). `History::render` and `History::estimate` keep what they
//! rendered between requests (`View`) and bring it up to date with what changed since: the
//! messages added, and the results that aged out since (results age in the order they were
//! added, so a cursor finds them). A request shares the rendered list (`Messages`) instead of
//! copying it; while no request holds it, it is updated in place. A compaction, or other
//! ageing settings, start the view again.

use std::sync::{Arc, MutexGuard, PoisonError};

use super::ageing::{AGED, Ageing, STUB_BYTES, aged};
use super::history::{Entry, History, estimate_tokens, message_bytes};
use crate::model::{Keyed, Message, Messages};

/// What was rendered for one ageing setting; see the module doc.
#[derive(Debug, Default)]
pub(super) struct View {
    ageing: Option<Ageing>,
    /// `History::generation` it was rendered from: a compaction replaced the entries.
    generation: u64,
    /// `History::steps` it was last brought up to date at.
    steps: u64,
    list: Arc<Vec<Keyed>>,
    /// The estimate of each rendered message (a stub counts as `STUB_BYTES`), and their sum.
    tokens: Vec<u64>,
    total: u64,
    /// The first result that had not aged at `steps`.
    young: usize,
}

/// How `entry` is sent after `steps` assistant messages, and its estimate.
fn rendered(entry: &Entry, steps: u64, ageing: Option<Ageing>) -> (Keyed, u64) {
    match (entry.message.as_ref(), ageing) {
        (Message::Tool(result), Some(ageing))
            if result.content.len() > ageing.bytes && entry.step + ageing.after_steps <= steps =>
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
    /// Brings the view up to date with `history`.
    fn update(&mut self, history: &History, ageing: Option<Ageing>) {
        let (entries, steps) = (history.entries(), history.steps());
        if self.ageing != ageing || self.generation != history.generation() {
            *self = View {
                ageing,
                generation: history.generation(),
                ..View::default()
            };
        }
        let list = Arc::make_mut(&mut self.list);
        // Results that aged since: results are added in the order of their steps.
        if let Some(ageing) = ageing {
            while self.young < list.len() {
                let entry = &entries[self.young];
                if matches!(*entry.message, Message::Tool(_)) {
                    if entry.step + ageing.after_steps > steps {
                        break;
                    }
                    let (keyed, tokens) = rendered(entry, steps, Some(ageing));
                    if keyed.key != list[self.young].key {
                        self.total = self.total - self.tokens[self.young] + tokens;
                        self.tokens[self.young] = tokens;
                        list[self.young] = keyed;
                    }
                }
                self.young += 1;
            }
        }
        for entry in &entries[list.len()..] {
            let (keyed, tokens) = rendered(entry, steps, ageing);
            list.push(keyed);
            self.tokens.push(tokens);
            self.total += tokens;
        }
        self.steps = steps;
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
