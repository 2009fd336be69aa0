//! What a session has spent (`log::Spent`, counted from its log) against the preset's budgets
//! (B3).

use crate::log::{Spent, StopReason};
use crate::model::Usage;
use crate::model::price::Price;
use crate::preset::LoopBudgets;

/// The smallest reply worth a request: with less room than this (or than the output limit,
/// if that is smaller) left once its input is paid, the request is not sent.
const MIN_REPLY_TOKENS: u64 = 64;

/// The next request as the budgets see it before it is sent.
#[derive(Debug, Clone, Copy)]
pub struct NextRequest {
    /// Its input tokens, estimated (the last reported usage plus what was added since).
    pub input_tokens: u64,
    /// The part of that input the server reported last time: the prefix it most likely reads
    /// from its cache, priced as a cache read.
    pub reported_tokens: u64,
    /// The provider's output limit of one response.
    pub output_limit: u32,
    /// The price responses are charged at, if known.
    pub price: Option<Price>,
}

/// How long a reply the next request may ask for so that, with its estimated input paid, it
/// stays within the token and cost budgets: `Ok(None)` when no budget binds below the output
/// limit, `Ok(Some(n))` to cap the reply at `n` tokens, or the budget that leaves no room for
/// a reply worth asking for. Budgets are otherwise checked with what was spent (`over`), so
/// without this the last request could pass them by a whole request.
pub fn reply_room(
    spent: &Spent,
    budgets: &LoopBudgets,
    next: &NextRequest,
) -> Result<Option<u32>, (StopReason, String)> {
    let limit = u64::from(next.output_limit);
    let least = MIN_REPLY_TOKENS.min(limit);
    let left = budgets.max_tokens.saturating_sub(spent.charged_tokens());
    let by_tokens = left.saturating_sub(next.input_tokens);
    if by_tokens < least {
        return Err((
            StopReason::TokenBudget,
            format!(
                "{} tokens used{}; the next request would send about {} and leave {} for the \
                 reply, under the {least} a reply needs; the budget is {} (limits.max_tokens)",
                spent.charged_tokens(),
                by_subagents(spent.children.tokens),
                next.input_tokens,
                by_tokens,
                budgets.max_tokens
            ),
        ));
    }
    let mut room = limit.min(by_tokens);
    if let Some(price) = next.price.filter(|p| p.output > 0.0) {
        let input = price.cost(&Usage {
            input_tokens: next.input_tokens,
            cache_read_tokens: next.reported_tokens.min(next.input_tokens),
            ..Usage::default()
        });
        let left = budgets.max_cost_usd - spent.charged_cost();
        // Saturating: an unbounded cost budget leaves unbounded room.
        let by_cost = ((left - input) * 1e6 / price.output).max(0.0) as u64;
        if by_cost < least {
            return Err((
                StopReason::CostBudget,
                format!(
                    "${:.4} spent; the next request would cost about ${input:.4} and leave room \
                     for {by_cost} reply tokens, under the {least} a reply needs; the budget \
                     is ${:.2} (limits.max_cost_usd)",
                    spent.charged_cost(),
                    budgets.max_cost_usd
                ),
            ));
        }
        room = room.min(by_cost);
    }
    Ok((room < limit).then(|| u32::try_from(room).unwrap_or(u32::MAX)))
}

/// The budget that will run out soon, if any: the next model request is the last one
/// `max_turns` allows, or 90% of the tokens, wall time or cost is spent. The loop then asks
/// the model to finish (B3's wrap-up).
pub fn nearly_over(spent: &Spent, budgets: &LoopBudgets) -> Option<&'static str> {
    let ninety = |used: f64, budget: f64| used >= 0.9 * budget;
    if spent.charged_requests() + 1 >= budgets.max_turns {
        Some("limits.max_turns")
    } else if ninety(spent.charged_tokens() as f64, budgets.max_tokens as f64) {
        Some("limits.max_tokens")
    } else if ninety(spent.wall.as_secs_f64(), budgets.max_wall_secs as f64) {
        Some("limits.max_wall_secs")
    } else if ninety(spent.charged_cost(), budgets.max_cost_usd) {
        Some("limits.max_cost_usd")
    } else {
        None
    }
}

/// The first budget that is used up, with a line that says by how much and which key to raise.
pub fn over(spent: &Spent, budgets: &LoopBudgets) -> Option<(StopReason, String)> {
    if spent.charged_requests() >= budgets.max_turns {
        return Some((
            StopReason::MaxTurns,
            format!(
                "{} model requests made{}; the budget is {} (limits.max_turns)",
                spent.charged_requests(),
                by_subagents(spent.children.model_requests),
                budgets.max_turns
            ),
        ));
    }
    if spent.charged_tokens() >= budgets.max_tokens {
        return Some((
            StopReason::TokenBudget,
            format!(
                "{} tokens used{}; the budget is {} (limits.max_tokens)",
                spent.charged_tokens(),
                by_subagents(spent.children.tokens),
                budgets.max_tokens
            ),
        ));
    }
    if spent.wall.as_secs() >= budgets.max_wall_secs {
        return Some((
            StopReason::TimeBudget,
            format!(
                "{} s of wall time; the budget is {} s (limits.max_wall_secs)",
                spent.wall.as_secs(),
                budgets.max_wall_secs
            ),
        ));
    }
    if spent.charged_cost() >= budgets.max_cost_usd {
        return Some((
            StopReason::CostBudget,
            format!(
                "${:.4} spent{}; the budget is ${:.2} (limits.max_cost_usd)",
                spent.charged_cost(),
                if spent.children.cost_usd > 0.0 {
                    format!(" (${:.4} by subagents)", spent.children.cost_usd)
                } else {
                    String::new()
                },
                budgets.max_cost_usd
            ),
        ));
    }
    None
}

/// " (N by subagents)" when subagents spent any of it.
fn by_subagents(n: u64) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(" ({n} by subagents)")
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::log::{Body, Event};
    use crate::model::{Finish, Outcome, Usage};

    fn budgets() -> LoopBudgets {
        LoopBudgets {
            max_turns: 3,
            max_tokens: 1000,
            max_wall_secs: 60,
            max_cost_usd: 1.0,
            max_parallel_tool_calls: 8,
            max_subagents: 2,
            max_depth: 1,
            wrap_up: true,
        }
    }

    fn at(ts_ms: u64, body: Body) -> Event {
        Event {
            seq: 1,
            ts_ms,
            body,
        }
    }

    fn message(tokens: u64, cost: f64) -> Event {
        Event {
            seq: 1,
            ts_ms: 0,
            body: Body::AssistantMessage {
                reasoning: Vec::new(),
                attempt: "a".into(),
                text: String::new(),
                tool_calls: Vec::new(),
                finish: Finish::Stop,
                outcome: Outcome::Completed,
                usage: Some(Usage {
                    input_tokens: tokens,
                    ..Usage::default()
                }),
                cost_usd: Some(cost),
            },
        }
    }

    #[test]
    fn wrap_up_comes_before_the_last_turn_or_at_ninety_percent() {
        let b = budgets();
        let one = Spent::of(&[message(10, 0.0)], 0);
        assert_eq!(nearly_over(&one, &b), None);
        let two = Spent::of(&[message(10, 0.0), message(10, 0.0)], 0);
        assert_eq!(nearly_over(&two, &b), Some("limits.max_turns"));
        let tokens = Spent::of(&[message(900, 0.0)], 0);
        assert_eq!(nearly_over(&tokens, &b), Some("limits.max_tokens"));
        let cost = Spent::of(&[message(1, 0.95)], 0);
        assert_eq!(nearly_over(&cost, &b), Some("limits.max_cost_usd"));
    }

    fn next(input_tokens: u64, price: Option<Price>) -> NextRequest {
        NextRequest {
            input_tokens,
            reported_tokens: input_tokens / 2,
            output_limit: 500,
            price,
        }
    }

    #[test]
    fn the_reply_is_capped_to_what_the_budget_leaves_once_the_input_is_paid() {
        let b = budgets();
        // Nothing binds: 1000 - 100 - 200 leaves more than the output limit.
        assert_eq!(reply_room(&Spent::of(&[message(100, 0.0)], 0), &b, &next(200, None)), Ok(None));
        // 1000 - 600 spent - 300 sent leaves 100 for the reply.
        let spent = Spent::of(&[message(600, 0.0)], 0);
        assert_eq!(reply_room(&spent, &b, &next(300, None)), Ok(Some(100)));
        // 50 left for the reply: under the least worth asking for, so the request is not sent,
        // and the reason says so.
        let (reason, detail) = reply_room(&spent, &b, &next(350, None)).unwrap_err();
        assert_eq!(reason, StopReason::TokenBudget);
        assert!(
            detail.contains("would send about 350 and leave 50 for the reply"),
            "{detail}"
        );
    }

    #[test]
    fn the_reply_is_capped_to_what_the_cost_budget_leaves() {
        let b = budgets();
        // $1 a million either way; the reported half of the input is a cache read at $0.10.
        let price = Price {
            input: 1.0,
            output: 1.0,
            cache_read: Some(0.1),
            cache_write: None,
        };
        let mut wide = b.clone();
        wide.max_tokens = u64::MAX;
        // $0.9997 spent, $0.0003 left; 200 sent cost 100 * 1e-6 + 100 * 1e-7 = $0.00011, which
        // leaves $0.00019: 190 reply tokens (189 when the float sum rounds below; never more).
        let spent = Spent::of(&[message(1, 0.9997)], 0);
        let room = reply_room(&spent, &wide, &next(200, Some(price)));
        assert!(matches!(room, Ok(Some(189 | 190))), "{room:?}");
        let spent = Spent::of(&[message(1, 0.99998)], 0);
        let (reason, _) = reply_room(&spent, &wide, &next(200, Some(price))).unwrap_err();
        assert_eq!(reason, StopReason::CostBudget);
        // An unbounded cost budget never binds.
        wide.max_cost_usd = f64::MAX;
        assert_eq!(reply_room(&spent, &wide, &next(200, Some(price))), Ok(None));
    }

    #[test]
    fn each_budget_stops_with_its_own_reason() {
        let within = Spent::of(&[message(10, 0.1)], 1_000);
        assert_eq!(over(&within, &budgets()), None);
        let turns = Spent::of(&[message(1, 0.0), message(1, 0.0), message(1, 0.0)], 0);
        assert_eq!(over(&turns, &budgets()).unwrap().0, StopReason::MaxTurns);
        let tokens = Spent::of(&[message(1000, 0.0)], 0);
        assert_eq!(
            over(&tokens, &budgets()).unwrap().0,
            StopReason::TokenBudget
        );
        // Wall time is the time inside turns: 40 s in a closed turn, an idle hour, then 20 s of
        // the open turn.
        let turns = [
            at(0, Body::TurnStart { turn: 1 }),
            at(
                40_000,
                Body::TurnEnd {
                    reason: StopReason::Completed,
                    detail: None,
                },
            ),
            at(3_640_000, Body::TurnStart { turn: 2 }),
        ];
        let wall = Spent::of(&turns, 3_660_000);
        assert_eq!(wall.wall, Duration::from_secs(60));
        assert_eq!(over(&wall, &budgets()).unwrap().0, StopReason::TimeBudget);
        assert!(over(&Spent::of(&turns, 3_650_000), &budgets()).is_none());
        let cost = Spent::of(&[message(1, 1.5)], 0);
        let (reason, detail) = over(&cost, &budgets()).unwrap();
        assert_eq!(reason, StopReason::CostBudget);
        assert!(detail.contains("limits.max_cost_usd"), "{detail}");
    }
}
