//! Tests of the history as sent: kept up to date between requests, it is what a fresh render
//! of the same events is, across ageing and compaction.

use super::super::ageing::{AGED, STUB_BYTES};
use crate::model::context::Ageing;
use super::super::event::{Body, Source};
use super::super::history::{History, SUMMARY_HEADER, estimate_tokens, message_bytes};
use super::super::test_session::{numbered, session};
use crate::model::Message;
use crate::model::{Finish, Outcome, ToolCall};

/// The estimate over every rendered message, each time: a stub counts as `STUB_BYTES`.
fn estimate_from_scratch(history: &History, ageing: Option<Ageing>) -> u64 {
    let mark = history.usage_mark();
    let rendered = history.render(ageing);
    let (mut all, mut after_mark) = (0, None::<u64>);
    for (i, keyed) in rendered.iter().take(history.entries().len()).enumerate() {
        let bytes = if keyed.key & AGED != 0 {
            STUB_BYTES
        } else {
            message_bytes(&keyed.message)
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
            .any(|m| matches!(m, Message::User { text, .. } if text.starts_with(SUMMARY_HEADER)));
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

/// A session of `steps` steps, each reading one file of `bytes` bytes.
fn reading(steps: usize, bytes: usize) -> Vec<super::super::Event> {
    let mut bodies = vec![Body::UserMessage { images: Vec::new(),
        text: "read them all".into(),
        source: Source::User,
    }];
    for step in 0..steps {
        let id = format!("c{step}");
        bodies.push(Body::AssistantMessage { reasoning: Vec::new(),
            attempt: format!("a{step}"),
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: id.clone(),
                name: "read_file".into(),
                arguments: format!(r#"{{"path":"f{step}"}}"#),
            }],
            finish: Finish::ToolCalls,
            outcome: Outcome::ToolCalls,
            usage: None,
            cost_usd: None,
        });
        bodies.push(Body::ToolResult { images: Vec::new(),
            id,
            content: format!("{step}").repeat(bytes),
            is_error: false,
            code: None,
            args: None,
            repairs: Vec::new(),
            approval: None,
        });
    }
    numbered(bodies)
}

#[test]
fn results_age_in_a_few_batches_and_each_request_starts_with_the_one_before_between_them() {
    let ageing = Ageing {
        after_steps: 8,
        bytes: 4096,
    };
    let events = reading(60, 6000);
    let mut history = History::default();
    let (mut last, mut batches): (Option<Vec<u64>>, Vec<u64>) = (None, Vec::new());
    for event in &events {
        history.push(event);
        if !matches!(event.body, Body::ToolResult { .. }) {
            continue;
        }
        // A request as the loop makes one: after the step's results.
        let keys = history.render(Some(ageing)).keys();
        if let Some(last) = &last
            && !keys.starts_with(last)
        {
            batches.push(history.steps());
            // A batch ages every large result older than `after_steps` at once.
            let steps = history.steps();
            for (entry, key) in history.entries().iter().zip(&keys) {
                let old = entry.step + ageing.after_steps <= steps;
                if matches!(*entry.message, Message::Tool(_)) {
                    assert_eq!(key & AGED != 0, old, "step {}", entry.step);
                }
            }
        }
        last = Some(keys);
    }
    assert!(
        (1..=4).contains(&batches.len()),
        "60 steps age in a few batches, not one per request: {batches:?}"
    );
    // A resumed session renders what the live one sent.
    assert_eq!(
        History::of(&events).render(Some(ageing)),
        history.render(Some(ageing))
    );
}

#[test]
fn a_compaction_ages_every_result_old_enough_at_once() {
    let ageing = Ageing {
        after_steps: 2,
        bytes: 100,
    };
    let mut events = reading(6, 200);
    let upto = events[2].seq;
    let next = events.len() as u64 + 1;
    events.extend(
        numbered([Body::ContextCompacted {
            id: "k".into(),
            upto,
            summary: "read f0".into(),
            attempt: "s".into(),
            rounds: 1,
            usage: None,
            cost_usd: None,
        }])
        .into_iter()
        .map(|mut e| {
            e.seq = next;
            e
        }),
    );
    let history = History::of(&events);
    let rendered = history.render(Some(ageing));
    let aged: Vec<bool> = history
        .entries()
        .iter()
        .zip(rendered.keys())
        .filter(|(e, _)| matches!(*e.message, Message::Tool(_)))
        .map(|(_, key)| key & AGED != 0)
        .collect();
    // Steps 2..=6 kept; results of steps 2, 3 and 4 are older than 2 steps at step 6.
    assert_eq!(aged, vec![true, true, true, false, false]);
}
