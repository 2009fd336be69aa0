//! What the loop needs to know about a session, kept up to date event by event: the derived
//! history (`History`), what was spent (`Spent`), how many turns ran, whether there is a task,
//! and how the last turn ended. Every field is a function of the events alone (L1), so the log
//! stays the only memory; this only saves reading it again for every request.

use std::time::Duration;

use super::event::{Asked, Body, Event, StopReason};
use super::history::{History, is_task};

/// What a session has spent, counted from its log (B3): model requests (compaction requests
/// included), tool calls, tokens, cost, calls denied for want of an answer, and wall time
/// inside turns (time idle between turns, as in a chat waiting for the user, does not count).
/// A resumed session keeps its count. `SessionState` keeps one event by event; `at` is the
/// count at a moment, the open turn included.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spent {
    /// Committed model responses and completed compaction requests (each response is one
    /// "turn" of `max_turns`).
    pub model_requests: u64,
    /// Of which compactions.
    pub compactions: u64,
    /// Tool calls the responses made (whether or not they ran).
    pub tool_calls: u64,
    /// Input and output tokens.
    pub tokens: u64,
    /// Of the input: all of it, what was read from the provider's prompt cache, and what was
    /// written to it.
    pub input_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub cost_usd: f64,
    /// Calls denied because they needed approval and no one could be asked (logged with
    /// approval `unanswered`).
    pub denied_calls: u64,
    /// Wall time inside turns: the closed ones, and the open one up to the moment of `at`.
    pub wall: Duration,
    /// What this session's subagents spent (`subagent/end`), charged to its budgets on top of
    /// its own requests, tokens and cost above (`charged_*`).
    pub children: super::event::ChildSpent,
    /// When the open turn started (ms since the epoch), while one is open.
    open_turn: Option<u64>,
}

impl Spent {
    /// What `events` record, the open turn counted until `now_ms` (milliseconds since the Unix
    /// epoch, as events carry).
    pub fn of(events: &[Event], now_ms: u64) -> Spent {
        let mut spent = Spent::default();
        for event in events {
            spent.push(event);
        }
        spent.at(now_ms)
    }

    /// Counts `event`.
    pub fn push(&mut self, event: &Event) {
        match &event.body {
            Body::AssistantMessage {
                usage,
                cost_usd,
                tool_calls,
                ..
            } => {
                self.model_requests += 1;
                self.tool_calls += tool_calls.len() as u64;
                if let Some(usage) = usage {
                    self.add(usage);
                }
                self.cost_usd += cost_usd.unwrap_or(0.0);
            }
            Body::ContextCompacted {
                usage,
                cost_usd,
                rounds,
                ..
            } => {
                self.model_requests += u64::from(*rounds);
                self.compactions += 1;
                if let Some(usage) = usage {
                    self.add(usage);
                }
                self.cost_usd += cost_usd.unwrap_or(0.0);
            }
            Body::ToolResult {
                approval: Some(Asked::Unanswered),
                ..
            } => {
                self.denied_calls += 1;
            }
            Body::SubagentEnd { spent, .. } => {
                self.children.model_requests += spent.model_requests;
                self.children.tokens += spent.tokens;
                self.children.cost_usd += spent.cost_usd;
            }
            Body::TurnStart { .. } => self.open_turn = Some(event.ts_ms),
            Body::TurnEnd { .. } => {
                if let Some(start) = self.open_turn.take() {
                    self.wall += Duration::from_millis(event.ts_ms.saturating_sub(start));
                }
            }
            _ => {}
        }
    }

    fn add(&mut self, usage: &crate::model::Usage) {
        self.tokens += usage.input_tokens + usage.output_tokens;
        self.input_tokens += usage.input_tokens;
        self.cache_read_tokens += usage.cache_read_tokens;
        self.cache_write_tokens += usage.cache_write_tokens;
    }

    /// Model requests charged to the budget: its own and its subagents'.
    pub fn charged_requests(&self) -> u64 {
        self.model_requests + self.children.model_requests
    }

    /// Tokens charged to the budget: its own and its subagents'.
    pub fn charged_tokens(&self) -> u64 {
        self.tokens + self.children.tokens
    }

    /// Cost charged to the budget: its own and its subagents'.
    pub fn charged_cost(&self) -> f64 {
        self.cost_usd + self.children.cost_usd
    }

    /// What this session spent, its subagents' included: what its own parent is charged.
    pub fn as_child(&self) -> super::event::ChildSpent {
        super::event::ChildSpent {
            model_requests: self.charged_requests(),
            tokens: self.charged_tokens(),
            cost_usd: self.charged_cost(),
        }
    }

    /// The count as of `now_ms`: the open turn's time counted until then.
    pub fn at(&self, now_ms: u64) -> Spent {
        let mut spent = self.clone();
        if let Some(start) = spent.open_turn.take() {
            spent.wall += Duration::from_millis(now_ms.saturating_sub(start));
        }
        spent
    }
}

/// The session as the loop sees it; see the module doc.
#[derive(Debug, Default)]
pub struct SessionState {
    pub history: History,
    pub spent: Spent,
    /// `turn/start` events so far.
    pub turns: u64,
    /// A message from the user is in the log (`has_task`).
    pub has_task: bool,
    /// How the last turn ended; `Interrupted` while one is open.
    pub last_stop: Option<StopReason>,
    /// Events taken.
    pub events: u64,
    /// Time of the first and the latest event.
    pub first_ms: u64,
    pub last_ms: u64,
    /// From `session/start`: the session's id, where it ran and with which model.
    pub session: String,
    pub cwd: String,
    pub model: String,
    /// How the model is reached now: `session/start`'s, or the last `session/model`'s (a
    /// session moved with `resume --base-url`). `None` for the scripted demo.
    pub model_config: Option<crate::model::ProviderConfig>,
    /// A subagent's parent, from `session/start`.
    pub parent: Option<super::event::ParentLink>,
    /// The start of the user's first message (for `paddock log --list`).
    pub first_message: Option<String>,
    /// The smallest window the server revealed by refusing a request as too long, since the
    /// session last moved to another model (`ContextCompact::window`).
    pub revealed_window: Option<u64>,
    /// The session's shell: used or not, and the commands still running.
    pub shells: super::shells::ShellLedger,
    /// Checkpoints of the mounts, in log order: `(turn, ended, id)`.
    pub checkpoints: Vec<(u64, bool, String)>,
    /// Checkpoints taken before calls (`grain = "call"`), in log order: `(turn, call, id)`.
    pub call_checkpoints: Vec<(u64, String, String)>,
    /// The mounts as last recorded: the latest checkpoint, or the state a rewind left.
    pub last_checkpoint: Option<String>,
    /// The turns of the conversation as it stands (a conversation rewind drops those after
    /// it), each with the message that started it.
    pub turn_marks: Vec<TurnMark>,
    /// A fork's origin, from `session/start`.
    pub forked_from: Option<super::event::ForkLink>,
    /// The message waiting for the next turn to start: its seq and text.
    prompt: Option<(u64, String)>,
    in_turn: bool,
    /// What conversation rewinds took out of the history: `[from, rewind)` ranges of seqs,
    /// known before the events are taken (`rewound_ranges`).
    dead: Vec<(u64, u64)>,
}

/// One turn of the conversation as it stands: where it began in the log, and the message
/// that started it (none for a turn that went on without one, as `resume` does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnMark {
    pub turn: u64,
    /// The seq of the message that started it (or of its `turn/start`): what a conversation
    /// rewind to it takes out of the history from.
    pub from: u64,
    pub prompt: Option<String>,
}

/// The seq ranges that conversation rewinds among `events` take out of the history.
pub fn rewound_ranges<'a>(events: impl IntoIterator<Item = &'a Event>) -> Vec<(u64, u64)> {
    events
        .into_iter()
        .filter_map(|e| match e.body {
            Body::ConversationRewind { from, .. } => Some((from, e.seq)),
            _ => None,
        })
        .collect()
}

/// How much of the first message the state keeps.
const FIRST_MESSAGE_CHARS: usize = 200;

impl SessionState {
    pub fn of(events: &[Event]) -> SessionState {
        let mut state = SessionState::rewound(rewound_ranges(events));
        for event in events {
            state.push(event);
        }
        state
    }

    /// A turn has started and not ended (one is running, or a crash left it open).
    pub fn turn_open(&self) -> bool {
        self.in_turn
    }

    /// A state to take events into, knowing the ranges conversation rewinds take out of the
    /// history (`rewound_ranges` of the same events).
    pub fn rewound(dead: Vec<(u64, u64)>) -> SessionState {
        SessionState {
            dead,
            ..SessionState::default()
        }
    }

    /// Whether `seq` is part of the conversation as it stands.
    fn live(&self, seq: u64) -> bool {
        !self
            .dead
            .iter()
            .any(|(from, to)| (*from..*to).contains(&seq))
    }

    pub fn push(&mut self, event: &Event) {
        if self.live(event.seq) {
            self.history.push(event);
            self.has_task |= is_task(&event.body);
        }
        self.spent.push(event);
        self.shells.push(&event.body);
        match &event.body {
            Body::UserMessage { text, source, .. } if *source == super::Source::User => {
                if self.first_message.is_none() {
                    self.first_message = Some(text.chars().take(FIRST_MESSAGE_CHARS).collect());
                }
                if !self.in_turn {
                    self.prompt = Some((event.seq, text.clone()));
                }
            }
            // A follow-up taken between turns starts the next one.
            Body::InboxTake { id } if !self.in_turn => {
                let text = self.history.inbox_text(id).unwrap_or_default();
                self.prompt = Some((event.seq, text));
            }
            Body::TurnStart { turn } => {
                self.in_turn = true;
                self.turns += 1;
                self.last_stop = Some(StopReason::Interrupted);
                let (from, prompt) = match self.prompt.take() {
                    Some((seq, text)) => (seq, Some(text)),
                    None => (event.seq, None),
                };
                self.turn_marks.push(TurnMark {
                    turn: *turn,
                    from,
                    prompt,
                });
            }
            Body::ConversationRewind { turn, .. } => {
                let kept = turn.saturating_sub(1);
                self.turns = kept;
                self.turn_marks
                    .truncate(usize::try_from(kept).unwrap_or(usize::MAX));
                // The checkpoints of the turns taken out go too, but not the one taken as
                // turn `turn` began: it is the state the conversation went back to.
                self.checkpoints
                    .retain(|(t, ended, _)| t < turn || (t == turn && !ended));
                self.call_checkpoints.retain(|(t, _, _)| t < turn);
                self.prompt = None;
            }
            Body::TurnEnd { reason, .. } => {
                self.in_turn = false;
                self.last_stop = Some(*reason);
            }
            // A call's checkpoint is a point to go back to, not what the session last
            // recorded of its turn: a turn killed after it still has its changes counted as
            // the session's from its start.
            Body::Checkpoint {
                id,
                turn,
                call: Some(call),
                ..
            } => self.call_checkpoints.push((*turn, call.clone(), id.clone())),
            Body::Checkpoint {
                id,
                turn,
                ended,
                call: None,
                ..
            } => {
                self.checkpoints.push((*turn, *ended, id.clone()));
                self.last_checkpoint = Some(id.clone());
            }
            Body::Rewind { after, .. } => self.last_checkpoint = Some(after.clone()),
            Body::SessionStart(start) => {
                self.session.clone_from(&start.session);
                self.cwd.clone_from(&start.cwd);
                self.model.clone_from(&start.model);
                self.model_config.clone_from(&start.model_config);
                self.parent.clone_from(&start.parent);
                self.forked_from.clone_from(&start.forked_from);
            }
            Body::SessionModel {
                model,
                model_config,
            } => {
                self.model.clone_from(model);
                self.model_config = Some((**model_config).clone());
                self.revealed_window = None;
            }
            Body::ContextCompact {
                window: Some(window),
                ..
            } => {
                self.revealed_window =
                    Some(self.revealed_window.map_or(*window, |w| w.min(*window)));
            }
            _ => {}
        }
        if self.events == 0 {
            self.first_ms = event.ts_ms;
        }
        self.events += 1;
        self.last_ms = event.ts_ms;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Finish, Outcome, Usage, price};

    #[test]
    fn the_tally_counts_cached_input_and_its_cost_from_the_log() {
        let sonnet = price::lookup("claude-sonnet-4-5").expect("in the table");
        let usage = |input, read, write| Usage {
            input_tokens: input,
            output_tokens: 100,
            cache_read_tokens: read,
            cache_write_tokens: write,
        };
        let answer = |usage: Usage| Body::AssistantMessage {
            reasoning: Vec::new(),
            attempt: "a".into(),
            text: String::new(),
            tool_calls: Vec::new(),
            finish: Finish::Stop,
            outcome: Outcome::Completed,
            usage: Some(usage),
            cost_usd: Some(sonnet.cost(&usage)),
        };
        let first = usage(10_000, 0, 9_000);
        let second = usage(12_000, 9_000, 2_500);
        let summary = usage(13_000, 11_500, 1_000);
        let events = super::super::test_session::numbered([
            answer(first),
            answer(second),
            Body::ContextCompacted {
                id: "k".into(),
                upto: 1,
                summary: "s".into(),
                attempt: "s".into(),
                rounds: 1,
                usage: Some(summary),
                cost_usd: Some(sonnet.cost(&summary)),
            },
        ]);
        let tally = Spent::of(&events, 0);
        assert_eq!(tally.input_tokens, 35_000);
        assert_eq!(tally.cache_read_tokens, 20_500);
        assert_eq!(tally.cache_write_tokens, 12_500);
        assert_eq!(tally.tokens, 35_300);
        // Plain input at $3, reads at $0.30, writes at $3.75, output at $15 per million.
        let expected = (2_000.0 * 3.0 + 20_500.0 * 0.3 + 12_500.0 * 3.75 + 300.0 * 15.0) / 1e6;
        assert!(
            (tally.cost_usd - expected).abs() < 1e-12,
            "{}",
            tally.cost_usd
        );
        // At full price, the same input would cost more.
        let uncached = (35_000.0 * 3.0 + 300.0 * 15.0) / 1e6;
        assert!(uncached > 1.5 * tally.cost_usd);
    }
}
