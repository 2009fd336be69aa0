//! A session's rewind, fork at a turn, diff and list of turns, over its checkpoint recorders
//! (`crate::rewind`) and its log: the code put back by descriptor and logged as `rewind`, the
//! conversation logged as `conversation/rewind` (the history then goes on from where it stood
//! when the turn began; nothing before it in the log changes).

use super::Session;
use crate::log::Body;

/// One turn of the conversation as it stands, for a person choosing where to go back to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnSummary {
    pub turn: u64,
    /// The message that started it.
    pub prompt: Option<String>,
    /// Paths the turn changed in the mounts (`None`: no checkpoints say).
    pub changed: Option<usize>,
    /// The calls of the turn with a checkpoint before them (`grain = "call"`), in order:
    /// points `rewind_to_call` and a fork at a call go back to.
    pub calls: Vec<CallPoint>,
}

/// One call with a checkpoint before it, for a person choosing where to go back to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallPoint {
    pub call: String,
    /// The tool the model called (`None`: not in the conversation's history).
    pub tool: Option<String>,
    /// Paths changed from just before it to the next checkpoint (the next call's, or the
    /// turn's end): what it changed, and what idempotent calls after it changed (they take
    /// no checkpoint). `None`: the checkpoints do not say.
    pub changed: Option<usize>,
}

/// Why a call id that names more than one call (in `turns`) is not a point to go back to: some
/// providers use the same ids in every response (`call_0`), and guessing which one was meant
/// could put back the wrong files.
pub(super) fn ambiguous_call(call: &str, turns: impl Iterator<Item = u64>) -> String {
    let turns: Vec<String> = turns.map(|t| t.to_string()).collect();
    format!(
        "call id {:?} names {} calls of this conversation (in turns {}): the model's provider \
         used the same id more than once, so paddock cannot tell which is meant; go back to the \
         start of a turn instead (--to N, --at N)",
        paddock_types::text::sanitize(call),
        turns.len(),
        turns.join(", ")
    )
}

impl Session {
    /// Puts the session back as it was when turn `to` began (turns count from 1): its
    /// writable mounts, its conversation, or both (`scope`).
    ///
    /// The code: files changed outside the session since its last checkpoint are kept (named
    /// in the answer) unless `force`; protected paths are never written; logged as `rewind`,
    /// with the checkpoint of the mounts just before it, so it can be undone. The
    /// conversation: logged as `conversation/rewind`; the events after it stay in the log but
    /// the history the model is sent goes on from before the message that started turn `to`,
    /// and the next turn is turn `to`.
    pub fn rewind(
        &self,
        to: u64,
        scope: crate::rewind::Scope,
        force: bool,
    ) -> Result<crate::rewind::Rewound, String> {
        let (turns, mark) = self.log.with_state(|s| {
            let mark = usize::try_from(to)
                .ok()
                .and_then(|n| s.turn_marks.get(n.wrapping_sub(1)))
                .cloned();
            (s.turns, mark)
        });
        let mark = match (scope.conversation(), mark) {
            (false, _) => None,
            (true, Some(mark)) => Some(mark),
            (true, None) => {
                return Err(format!(
                    "turn {to} is not in the conversation: it has {turns} turn(s), counted from \
                     1; `paddock log SESSION` shows them"
                ));
            }
        };
        let mut done = match scope {
            crate::rewind::Scope::Both if self.checkpoints.is_none() => crate::rewind::Rewound {
                notes: vec![format!(
                    "{}: only the conversation was rewound",
                    self.no_checkpoints()
                )],
                ..crate::rewind::Rewound::default()
            },
            scope if scope.code() => self.rewind_code(to, force)?,
            _ => crate::rewind::Rewound::default(),
        };
        if let Some(mark) = mark {
            self.log
                .append_synced(Body::ConversationRewind {
                    turn: to,
                    from: mark.from,
                })
                .map_err(|e| format!("cannot write the session log: {e}"))?;
            done.conversation = Some(crate::rewind::ConversationRewound {
                turn: to,
                prompt: mark.prompt,
            });
        }
        Ok(done)
    }

    /// Why the session has no checkpoints, in words.
    fn no_checkpoints(&self) -> String {
        match &self.checkpoints_off {
            Some(why) => format!("this session takes no checkpoints: {why}"),
            None => "this session has no writable mount".into(),
        }
    }

    /// Puts the writable mounts back as they were just before call `call` started: the
    /// checkpoint the preset's `[checkpoints] grain = "call"` took then (every call that is
    /// not idempotent has one). The conversation is not changed. Files changed outside the
    /// session are kept unless `force`, as for `rewind`; logged as `rewind` (its turn the
    /// call's).
    pub fn rewind_to_call(&self, call: &str, force: bool) -> Result<crate::rewind::Rewound, String> {
        let checkpoints = self.code_checkpoints()?;
        let found: Vec<(u64, String)> = self.log.with_state(|s| {
            s.call_checkpoints
                .iter()
                .filter(|(_, c, _)| c == call)
                .map(|(turn, _, id)| (*turn, id.clone()))
                .collect()
        });
        if found.len() > 1 {
            return Err(ambiguous_call(call, found.iter().map(|f| f.0)));
        }
        let Some((turn, target)) = found.into_iter().next() else {
            return Err(format!(
                "call {call:?} has no checkpoint: only calls that are not idempotent have one, in \
                 sessions whose preset sets [checkpoints] grain = \"call\"; `paddock log \
                 SESSION` shows the calls, and --to N goes back to the start of a turn"
            ));
        };
        let notes = self.settle_unended(checkpoints)?;
        let reference = self.log.with_state(|s| s.last_checkpoint.clone());
        let mut done = self.restore_checkpoint(turn, &target, reference.as_deref(), force)?;
        done.notes.splice(0..0, notes);
        Ok(done)
    }

    /// The checkpoints, or why there are none to rewind the files with.
    fn code_checkpoints(&self) -> Result<&crate::rewind::Checkpoints, String> {
        self.checkpoints.as_ref().ok_or_else(|| {
            format!(
                "{}, so there are no files to rewind; --conversation rewinds the conversation \
                 alone",
                self.no_checkpoints()
            )
        })
    }

    /// The code half of `rewind`.
    fn rewind_code(&self, to: u64, force: bool) -> Result<crate::rewind::Rewound, String> {
        let checkpoints = self.code_checkpoints()?;
        let notes = self.settle_unended(checkpoints)?;
        let (target, reference) = self.log.with_state(|s| {
            (
                crate::rewind::at_turn_start(&s.checkpoints, to).map(str::to_string),
                s.last_checkpoint.clone(),
            )
        });
        let Some(target) = target else {
            let turns = self.log.with_state(|s| s.turns);
            return Err(format!(
                "turn {to} has no checkpoint: this session has {turns} turn(s), counted from 1, \
                 and checkpoints began with the first turn run by a paddock that takes them"
            ));
        };
        let mut done = self.restore_checkpoint(to, &target, reference.as_deref(), force)?;
        done.notes.splice(0..0, notes);
        Ok(done)
    }

    /// Before a rewind of the files: a turn that ended without its checkpoint (the process
    /// was killed) has its changes counted as the session's up to now, recorded here as that
    /// turn's end, so they are not taken for changes made outside the session. The note says
    /// so.
    fn settle_unended(&self, checkpoints: &crate::rewind::Checkpoints) -> Result<Vec<String>, String> {
        let unended = self.log.with_state(|s| match s.checkpoints.last() {
            Some((turn, false, _)) if *turn == s.turns && s.last_checkpoint.as_ref() == s.checkpoints.last().map(|c| &c.2) => Some(*turn),
            _ => None,
        });
        let mut notes = Vec::new();
        if let Some(turn) = unended {
            checkpoints.log_one(&self.log, turn, true)?;
            notes.push(format!(
                "turn {turn} ended without a checkpoint (the process was stopped): its changes up \
                 to now are counted as the session's"
            ));
        }
        Ok(notes)
    }

    /// Restores the mounts from checkpoint `target` (taken as turn `turn` began), what differs
    /// from `reference` kept unless `force`, and logs it (`rewind`).
    pub(crate) fn restore_checkpoint(
        &self,
        turn: u64,
        target: &str,
        reference: Option<&str>,
        force: bool,
    ) -> Result<crate::rewind::Rewound, String> {
        let Some(checkpoints) = self.checkpoints.as_ref() else {
            return Err(self.no_checkpoints());
        };
        let done = checkpoints.restore(target, reference, force)?;
        self.log
            .append_synced(Body::Rewind {
                turn,
                to: target.to_string(),
                before: done.before.clone(),
                after: done.after.clone(),
            })
            .map_err(|e| format!("cannot write the session log: {e}"))?;
        Ok(done)
    }

    /// What the session changed as a unified diff: all of it (from the first checkpoint to
    /// the mounts now), or turn `turn` alone (from its start to its end).
    pub fn diff(&self, turn: Option<u64>) -> Result<crate::rewind::Diff, String> {
        let Some(checkpoints) = self.checkpoints.as_ref() else {
            return match self.checkpoints_off {
                Some(_) => Err(self.no_checkpoints()),
                None => Ok(crate::rewind::Diff::default()),
            };
        };
        let all = self.log.with_state(|s| s.checkpoints.clone());
        let (from, to) = match turn {
            Some(n) => {
                let (from, to) = Session::turn_bounds(&all, n)
                    .ok_or_else(|| format!("turn {n} has no checkpoint"))?;
                let to = match to {
                    Some(id) => id,
                    None => checkpoints.take()?.0,
                };
                (from, to)
            }
            None => {
                let from = all
                    .first()
                    .map(|(_, _, id)| id.clone())
                    .ok_or("this session has no checkpoint yet")?;
                (from, checkpoints.take()?.0)
            }
        };
        checkpoints.diff(&from, &to)
    }

    /// The checkpoints that bound turn `n` in `all` (the log's, in order): the one taken as
    /// it began, and the one as it ended (else as the next began; `None` while it runs).
    fn turn_bounds(all: &[(u64, bool, String)], n: u64) -> Option<(String, Option<String>)> {
        let at = all.iter().rposition(|(t, ended, _)| *t == n && !ended)?;
        let to = all[at..]
            .iter()
            .find(|(t, ended, _)| *t == n && *ended)
            .or_else(|| all[at..].iter().find(|(t, ended, _)| *t == n + 1 && !ended))
            .map(|(_, _, id)| id.clone());
        Some((all[at].2.clone(), to))
    }

    /// The turns of the conversation as it stands, each with its message, how many paths it
    /// changed in the mounts and, at the call grain, its calls with what each changed (what
    /// `/rewind` lists).
    pub fn turn_list(&self) -> Vec<TurnSummary> {
        let (marks, all, calls, tools) = self.log.with_state(|s| {
            let tools: std::collections::HashMap<String, String> = s
                .history
                .entries()
                .iter()
                .filter_map(|e| match e.message.as_ref() {
                    crate::model::Message::Assistant { tool_calls, .. } => Some(tool_calls),
                    _ => None,
                })
                .flatten()
                .map(|c| (c.id.clone(), c.name.clone()))
                .collect();
            (
                s.turn_marks.clone(),
                s.checkpoints.clone(),
                s.call_checkpoints.clone(),
                tools,
            )
        });
        // The mounts now, taken once, for a turn still open.
        let taken = std::cell::OnceCell::new();
        let now = || -> Option<String> {
            taken
                .get_or_init(|| self.checkpoints.as_ref()?.take().ok().map(|t| t.0))
                .clone()
        };
        let changed = |from: &str, to: Option<String>| -> Option<usize> {
            let to = to.or_else(now)?;
            self.checkpoints.as_ref()?.changed(from, &to).ok()
        };
        marks
            .into_iter()
            .map(|mark| {
                let bounds = Session::turn_bounds(&all, mark.turn);
                let end = bounds.as_ref().and_then(|(_, to)| to.clone());
                let of_turn: Vec<&(u64, String, String)> =
                    calls.iter().filter(|(t, _, _)| *t == mark.turn).collect();
                let calls = of_turn
                    .iter()
                    .enumerate()
                    .map(|(i, (_, call, id))| {
                        let next = of_turn.get(i + 1).map(|c| c.2.clone()).or_else(|| end.clone());
                        CallPoint {
                            call: call.clone(),
                            tool: tools.get(call).cloned(),
                            changed: changed(id, next),
                        }
                    })
                    .collect();
                TurnSummary {
                    turn: mark.turn,
                    prompt: mark.prompt,
                    changed: bounds.and_then(|(from, to)| changed(&from, to)),
                    calls,
                }
            })
            .collect()
    }
}
