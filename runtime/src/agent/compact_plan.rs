//! What a compaction summarizes (L1): the cut point, and the part before it split
//! into rounds that each fit one summary request.
//!
//! The cut keeps the last `compact_keep` assistant messages verbatim with their results (less
//! when they would take more than 30% of the window), never separates a call from its result,
//! and never falls inside what an earlier compaction put in place. Everything before the cut
//! is summarized: when it is longer than one summary request can carry (a session moved to a
//! model with a smaller window, a server whose window is smaller than the preset says), it is
//! split into rounds at the same kind of boundary, and each round's request carries the
//! summary of the rounds before it. Each message is cut to a third of a round's budget (at
//! most `ITEM_BYTES`), with a marker; tool-call arguments are sent whole.

use paddock_types::text::prefix_bytes;

use crate::log::{History, estimate_tokens};
use crate::model::context::ContextPolicy;
use crate::model::{Message, ToolResultMessage};

/// Longest text of one message in a summary request; the rest is cut with a marker.
const ITEM_BYTES: usize = 8_000;

/// Most summary requests one compaction makes. Older parts that would need more are left out
/// of the summary, and the first round says so (they stay in the log).
pub(super) const MAX_ROUNDS: usize = 8;

/// What to summarize: everything derived from events up to `upto`.
pub(super) struct Plan {
    pub upto: u64,
    /// The messages of each summary request, oldest first.
    pub rounds: Vec<Vec<Message>>,
    /// Messages at the start left out because they would need more than `MAX_ROUNDS` rounds.
    pub skipped: usize,
}

/// The tokens a round's request has for the history it summarizes: the first round `budget`,
/// the later ones what is left beside the summary so far (at most a quarter of the window).
fn round_budget(first: bool, budget: u64, policy: &ContextPolicy) -> u64 {
    if first {
        budget
    } else {
        budget.saturating_sub(policy.window / 4).max(budget / 4)
    }
}

/// Where to cut and what the summary requests send; `None` when nothing new can be
/// summarized. `budget` bounds each round's estimated tokens.
pub(super) fn plan(history: &History, policy: &ContextPolicy, budget: u64) -> Option<Plan> {
    let entries = history.entries();
    let rendered = history.render(policy.ageing);
    let rendered: Vec<&Message> = rendered.messages().collect();
    let item_cap = ITEM_BYTES.min(usize::try_from(budget).unwrap_or(usize::MAX));
    let tokens: Vec<u64> = rendered
        .iter()
        .map(|m| estimate_tokens(item_bytes(m, item_cap)))
        .collect();
    // A cut may fall before any message that is not a result and not a summary.
    let boundary =
        |i: usize| !entries[i].compacted && !matches!(*entries[i].message, Message::Tool(_));
    let first = entries.iter().position(|e| !e.compacted)?;
    let keep_budget = policy.window * 3 / 10;
    let (mut cut_at, mut kept, mut steps) = (None, 0u64, 0u32);
    for i in (first + 1..entries.len()).rev() {
        kept += tokens[i];
        if matches!(*entries[i].message, Message::Assistant { .. }) {
            steps += 1;
        }
        if !boundary(i) {
            continue;
        }
        if cut_at.is_some() && (steps > policy.keep || kept > keep_budget) {
            break;
        }
        cut_at = Some(i);
    }
    let end = cut_at?;
    // Rounds: a new one starts at a boundary when the message would overfill the current one.
    let mut starts = vec![0];
    let mut filled = 0u64;
    for (i, &size) in tokens.iter().enumerate().take(end) {
        let room = round_budget(starts.len() == 1, budget, policy);
        if filled + size > room && i > *starts.last()? && boundary(i) {
            starts.push(i);
            filled = 0;
        }
        filled += size;
    }
    let skip = starts.len().saturating_sub(MAX_ROUNDS);
    let starts = &starts[skip..];
    let rounds = starts
        .iter()
        .enumerate()
        .map(|(r, &from)| {
            let to = starts.get(r + 1).copied().unwrap_or(end);
            rendered[from..to]
                .iter()
                .map(|m| shortened(m, item_cap))
                .collect()
        })
        .collect();
    Some(Plan {
        upto: entries[end].seq - 1,
        rounds,
        skipped: starts[0],
    })
}

fn item_bytes(message: &Message, cap: usize) -> usize {
    match message {
        Message::System { text } | Message::User { text, .. } => text.len().min(cap),
        Message::Assistant {
            text, tool_calls, ..
        } => {
            text.len().min(cap)
                + tool_calls
                    .iter()
                    .map(|c| c.arguments.len() + c.name.len() + 16)
                    .sum::<usize>()
        }
        Message::Tool(result) => result.content.len().min(cap),
    }
}

/// A message with its long text cut for the summary request; images are named, not sent
/// (the summary is text), and reasoning is left out (it is not sent back as it was).
fn shortened(message: &Message, cap: usize) -> Message {
    match message {
        Message::User { text, images } => {
            Message::user(named_images(cut_marked(text, cap), images))
        }
        Message::Assistant {
            text, tool_calls, ..
        } => Message::Assistant {
            text: cut_marked(text, cap),
            tool_calls: tool_calls.clone(),
            reasoning: Vec::new(),
        },
        Message::Tool(result) => Message::Tool(ToolResultMessage {
            content: named_images(cut_marked(&result.content, cap), &result.images),
            images: Vec::new(),
            ..result.clone()
        }),
        other => other.clone(),
    }
}

/// `text` and a line naming each image.
fn named_images(mut text: String, images: &[crate::model::ImagePart]) -> String {
    for image in images {
        text.push_str(&format!("\n[an image: {}]", image.describe()));
    }
    text
}

fn cut_marked(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_string();
    }
    format!(
        "{}\n[... {} more bytes, cut for the summary]",
        prefix_bytes(text, cap),
        text.len() - cap
    )
}
