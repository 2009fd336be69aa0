//! What a session has spent, counted from its log, against the preset's budgets (B3).

use std::time::Duration;

use crate::log::{Event, StopReason, Tally};
use crate::preset::LoopBudgets;

/// Spending so far, over the whole session (a resumed session keeps its count): model
/// requests (compaction requests too), tokens, cost, and wall time spent in turns (time idle between turns, as in a
/// chat waiting for the user, does not count).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spent {
    /// Committed model responses (each is one "turn" of `max_turns`).
    pub model_requests: u64,
    /// Tool calls those responses made (whether or not they ran).
    pub tool_calls: u64,
    pub tokens: u64,
    /// Of the input tokens: read from the provider's prompt cache, and written to it.
    pub input_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub cost_usd: f64,
    /// Calls denied because they needed approval and no one could be asked.
    pub denied_calls: u64,
    pub wall: Duration,
}

impl Spent {
    /// What `events` record; an open turn counts until `now_ms` (milliseconds since the Unix
    /// epoch, as events carry).
    pub fn of(events: &[Event], now_ms: u64) -> Spent {
        Spent::from_tally(&Tally::of(events), now_ms)
    }

    /// What a tally kept event by event records (`SessionLog` keeps one).
    pub fn from_tally(tally: &Tally, now_ms: u64) -> Spent {
        Spent {
            model_requests: tally.model_requests,
            tool_calls: tally.tool_calls,
            tokens: tally.tokens,
            input_tokens: tally.input_tokens,
            cache_read_tokens: tally.cache_read_tokens,
            cache_write_tokens: tally.cache_write_tokens,
            cost_usd: tally.cost_usd,
            denied_calls: tally.denied_calls,
            wall: Duration::from_millis(tally.wall_ms(now_ms)),
        }
    }

    /// The budget that will run out soon, if any: the next model request is the last one
    /// `max_turns` allows, or 90% of the tokens, wall time or cost is spent. The loop then asks
    /// the model to finish (B3's wrap-up).
    pub fn nearly_over(&self, budgets: &LoopBudgets) -> Option<&'static str> {
        let ninety = |spent: f64, budget: f64| spent >= 0.9 * budget;
        if self.model_requests + 1 >= budgets.max_turns {
            Some("limits.max_turns")
        } else if ninety(self.tokens as f64, budgets.max_tokens as f64) {
            Some("limits.max_tokens")
        } else if ninety(self.wall.as_secs_f64(), budgets.max_wall_secs as f64) {
            Some("limits.max_wall_secs")
        } else if ninety(self.cost_usd, budgets.max_cost_usd) {
            Some("limits.max_cost_usd")
        } else {
            None
        }
    }

    /// The first budget that is used up, with a line that says by how much and which key to
    /// raise.
    pub fn over(&self, budgets: &LoopBudgets) -> Option<(StopReason, String)> {
        if self.model_requests >= budgets.max_turns {
            return Some((
                StopReason::MaxTurns,
                format!(
                    "{} model requests made; the budget is {} (limits.max_turns)",
                    self.model_requests, budgets.max_turns
                ),
            ));
        }
        if self.tokens >= budgets.max_tokens {
            return Some((
                StopReason::TokenBudget,
                format!(
                    "{} tokens used; the budget is {} (limits.max_tokens)",
                    self.tokens, budgets.max_tokens
                ),
            ));
        }
        if self.wall.as_secs() >= budgets.max_wall_secs {
            return Some((
                StopReason::TimeBudget,
                format!(
                    "{} s of wall time; the budget is {} s (limits.max_wall_secs)",
                    self.wall.as_secs(),
                    budgets.max_wall_secs
                ),
            ));
        }
        if self.cost_usd >= budgets.max_cost_usd {
            return Some((
                StopReason::CostBudget,
                format!(
                    "${:.4} spent; the budget is ${:.2} (limits.max_cost_usd)",
                    self.cost_usd, budgets.max_cost_usd
                ),
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::Body;
    use crate::model::{Finish, Outcome, Usage};

    fn budgets() -> LoopBudgets {
        LoopBudgets {
            max_turns: 3,
            max_tokens: 1000,
            max_wall_secs: 60,
            max_cost_usd: 1.0,
            max_parallel_tool_calls: 8,
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
        assert_eq!(one.nearly_over(&b), None);
        let two = Spent::of(&[message(10, 0.0), message(10, 0.0)], 0);
        assert_eq!(two.nearly_over(&b), Some("limits.max_turns"));
        let tokens = Spent::of(&[message(900, 0.0)], 0);
        assert_eq!(tokens.nearly_over(&b), Some("limits.max_tokens"));
        let cost = Spent::of(&[message(1, 0.95)], 0);
        assert_eq!(cost.nearly_over(&b), Some("limits.max_cost_usd"));
    }

    #[test]
    fn each_budget_stops_with_its_own_reason() {
        let within = Spent::of(&[message(10, 0.1)], 1_000);
        assert_eq!(within.over(&budgets()), None);
        let turns = Spent::of(&[message(1, 0.0), message(1, 0.0), message(1, 0.0)], 0);
        assert_eq!(turns.over(&budgets()).unwrap().0, StopReason::MaxTurns);
        let tokens = Spent::of(&[message(1000, 0.0)], 0);
        assert_eq!(tokens.over(&budgets()).unwrap().0, StopReason::TokenBudget);
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
        assert_eq!(wall.over(&budgets()).unwrap().0, StopReason::TimeBudget);
        assert!(Spent::of(&turns, 3_650_000).over(&budgets()).is_none());
        let cost = Spent::of(&[message(1, 1.5)], 0);
        let (reason, detail) = cost.over(&budgets()).unwrap();
        assert_eq!(reason, StopReason::CostBudget);
        assert!(detail.contains("limits.max_cost_usd"), "{detail}");
    }
}
