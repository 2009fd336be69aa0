//! What a session has spent (`log::Spent`, counted from its log) against the preset's budgets
//! (B3).

use crate::log::{Spent, StopReason};
use crate::preset::LoopBudgets;

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
