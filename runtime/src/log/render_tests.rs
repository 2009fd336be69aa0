//! Tests of the history as sent: kept up to date between requests, it is what a fresh render
//! of the same events is, across ageing and compaction (issue 13).

use super::super::ageing::{AGED, Ageing, STUB_BYTES};
use super::super::history::{History, SUMMARY_HEADER, estimate_tokens, message_bytes};
use super::super::test_session::session;
use crate::model::Message;

/// The estimate as it was made before the view: over every entry, each time.
fn estimate_from_scratch(history: &History, ageing: Option<Ageing>) -> u64 {
    let steps = history.steps();
    let mark = history.usage_mark();
    let (mut all, mut after_mark) = (0, None::<u64>);
    for (i, entry) in history.entries().iter().enumerate() {
        let bytes = match (entry.message.as_ref(), ageing) {
            (Message::Tool(r), Some(a))
                if r.content.len() > a.bytes && entry.step + a.after_steps <= steps =>
            {
                STUB_BYTES
            }
            (message, _) => message_bytes(message),
        };
        all += estimate_tokens(bytes);
        if let Some(sum) = after_mark.as_mut() {
            *sum += estimate_tokens(bytes);
        }
        if mark.is_some_and(|(index, _)| index == i) {
            after_mark = Some(0);
        }
    }
    let pending: u64 = history
        .pending_in_order()
        .map(|r| estimate_tokens(r.content.len() + r.call_id.len()))
        .sum();
    match (mark, after_mark) {
        (Some((_, reported)), Some(added)) => reported + added + pending,
        _ => all + pending,
    }
}

const AGEING: Ageing = Ageing {
    after_steps: 3,
    bytes: 1000,
};

#[test]
fn a_view_kept_up_to_date_renders_and_estimates_what_a_fresh_one_does() {
    let events = session(40);
    // One history always asked with ageing; one asked in turn with and without (each change
    // of setting starts its view again).
    let (mut steady, mut alternating) = (History::default(), History::default());
    let (mut aged, mut summarized) = (false, false);
    for (k, event) in events.iter().enumerate() {
        // A request still held while the history moves on keeps what it was sent.
        let held = steady.render(Some(AGEING));
        let held_copy = held.to_vec();
        steady.push(event);
        alternating.push(event);
        let fresh = History::of(&events[..=k]);
        let rendered = steady.render(Some(AGEING));
        assert_eq!(rendered, fresh.render(Some(AGEING)), "event {k}");
        assert_eq!(
            held.to_vec(),
            held_copy,
            "event {k}: a held request changed"
        );
        let expected = estimate_from_scratch(&fresh, Some(AGEING));
        assert_eq!(steady.estimate(Some(AGEING)), expected, "event {k}");
        let ageing = (k % 3 != 0).then_some(AGEING);
        assert_eq!(
            alternating.render(ageing),
            fresh.render(ageing),
            "event {k}"
        );
        let expected = estimate_from_scratch(&fresh, ageing);
        assert_eq!(alternating.estimate(ageing), expected, "event {k}");
        aged |= rendered.iter().any(|m| m.key & AGED != 0);
        summarized |= rendered
            .messages()
            .any(|m| matches!(m, Message::User { text } if text.starts_with(SUMMARY_HEADER)));
    }
    assert!(
        aged && summarized,
        "the session ages results ({aged}) and compacts ({summarized})"
    );
}

#[test]
fn an_estimate_after_reported_usage_counts_only_what_came_since() {
    let events = session(11);
    let history = History::of(&events);
    let (index, reported) = history.usage_mark().expect("the last step reported usage");
    let since: u64 = history.entries()[index + 1..]
        .iter()
        .map(|e| estimate_tokens(message_bytes(&e.message)))
        .sum();
    assert_eq!(history.estimate(None), reported + since);
    assert!(history.measured());
}
