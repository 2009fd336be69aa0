//! A fork: a new session whose log begins with a recorded session's history up to the start
//! of one of its turns, and whose mounts are put back as they were then.
//!
//! The parent is held (its lock) while it is read and its mounts are restored, so no turn of
//! it runs meanwhile; its log is only read. The parent's log is read whole and checked as
//! `resume` checks it: a log that does not read as paddock wrote it (an edited line, a gap in
//! the sequence, a result without its call) forks nothing. The child's log is the parent's
//! `session/start` under a new id with `forked_from` (parent and turn), then the parent's
//! events before the message that started that turn, as its conversation holds them: what a
//! conversation rewind took out is left behind, the rest numbered again (times kept, and a
//! compaction's `upto` moved to the same event). It is then reopened as
//! `resume` reopens a session (the recorded preset, the plugins checked), and its mounts are
//! restored from the checkpoint taken as that turn began, logged in the child as `rewind`.
//!
//! A fork restores into the same mounts as its parent (the preset names them): the parent's
//! files change too. Files changed since the parent's last checkpoint (by the user, or by a
//! turn cut short) are kept and named unless forced, as a rewind keeps them.
//!
//! A fork can also begin just before a call (`ForkAt::Call`, a checkpoint the preset's
//! `grain = "call"` took): the child's log is the parent's history up to that call's
//! checkpoint (the model's message that made the call included), then what a log cut there
//! owes (`log::cut_before_call`): a result for each of that message's calls that has none
//! (the call itself and those not started: not run; those running beside it: interrupted
//! there), and the turn's end. The model is never left with a call without its result, and
//! no result claims an effect the restored files do not have. The next message starts the
//! next turn.

use super::error::SetupError;
use super::resume::{ReopenOptions, lock_session, reopen};
use super::client::is_client_session;
use super::start::{Continued, SessionBuilder, copy_blobs, new_session_id};
use super::{Env, Session};
use crate::agent::Observer;
use crate::ask::Approver;
use crate::log::{
    BLOBS_DIR, Body, Event, ForkLink, LOG_FILE, LogWriter, PresetSwitch, SessionState, Source,
    cut_before_call, read_log, rewound_ranges,
};

/// Where a fork begins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForkAt {
    /// The start of turn N (turns count from 1): the history before the message that
    /// started it.
    Turn(u64),
    /// Just before call ID started (its checkpoint, taken at the preset's `grain = "call"`):
    /// the history up to that call, which is answered as not run.
    Call(String),
}

impl ForkAt {
    /// Where the fork begins, in words (`at the start of turn 2`, `just before call c3`).
    pub fn describe(&self) -> String {
        match self {
            ForkAt::Turn(n) => format!("at the start of turn {n}"),
            ForkAt::Call(call) => format!(
                "just before call {}",
                paddock_types::text::sanitize(call)
            ),
        }
    }
}

/// How to fork.
pub struct ForkOptions {
    /// Where the fork begins.
    pub at: ForkAt,
    /// Put the mounts back as they were there (else the files stay as they are and only the
    /// conversation forks).
    pub files: bool,
    /// Restore files changed since the parent's last checkpoint too.
    pub force: bool,
    pub approver: Box<dyn Approver>,
}

/// A fork made: the new session, ready to go on, and what was done to the mounts.
pub struct Forked {
    pub session: Session,
    pub rewound: crate::rewind::Rewound,
    /// The message that started the turn forked at, to send again or change (`None` for a
    /// fork at a call: that turn is in the fork's history).
    pub prompt: Option<String>,
}

/// The events of `events` before seq `from` that its conversation holds and `keep` keeps,
/// numbered from 2; see the module doc.
fn history_before(events: &[Event], from: u64, keep: impl Fn(&Body) -> bool) -> Vec<Event> {
    let dead = rewound_ranges(events);
    let live = |seq: u64| !dead.iter().any(|(a, b)| (*a..*b).contains(&seq));
    let mut numbered: Vec<(u64, u64)> = Vec::new();
    let mut out = Vec::new();
    let kept = events.iter().filter(|e| {
        e.seq > 1
            && e.seq < from
            && live(e.seq)
            && !matches!(e.body, Body::ConversationRewind { .. })
            && keep(&e.body)
    });
    for event in kept {
        let mut event = event.clone();
        let seq = out.len() as u64 + 2;
        if let Body::ContextCompact { upto, .. } | Body::ContextCompacted { upto, .. } = &mut event.body {
            *upto = numbered
                .iter()
                .rev()
                .find(|(old, _)| *old <= *upto)
                .map_or(1, |(_, new)| *new);
        }
        numbered.push((event.seq, seq));
        event.seq = seq;
        out.push(event);
    }
    out
}

/// Where a fork cuts its parent's log, and what it restores.
struct Point {
    /// The turn it is in.
    turn: u64,
    /// The first seq of the parent's log left out.
    cut: u64,
    /// The checkpoint the files go back to (`None`: the parent took none there).
    target: Option<String>,
    prompt: Option<String>,
}

/// A fork at the start of turn `at`.
fn turn_point(state: &SessionState, parent: &str, at: u64) -> Result<Point, SetupError> {
    let mark = usize::try_from(at)
        .ok()
        .and_then(|n| state.turn_marks.get(n.wrapping_sub(1)))
        .cloned()
        .ok_or_else(|| {
            SetupError::usage(format!(
                "turn {at} is not in session `{parent}`'s conversation: it has {} turn(s), \
                 counted from 1; `paddock log {parent}` shows them",
                state.turns
            ))
        })?;
    Ok(Point {
        turn: at,
        cut: mark.from,
        target: crate::rewind::at_turn_start(&state.checkpoints, at).map(str::to_string),
        prompt: mark.prompt,
    })
}

/// A fork just before call `call`: its checkpoint, the last one the conversation as it
/// stands holds (a conversation rewind takes out the calls of the turns it removes).
fn call_point(events: &[Event], parent: &str, call: &str) -> Result<Point, SetupError> {
    let dead = rewound_ranges(events);
    let found: Vec<(u64, u64, String)> = events
        .iter()
        .filter_map(|e| match &e.body {
            Body::Checkpoint {
                id,
                turn,
                call: Some(c),
                ..
            } if c == call && !dead.iter().any(|(a, b)| (*a..*b).contains(&e.seq)) => {
                Some((e.seq, *turn, id.clone()))
            }
            _ => None,
        })
        .collect();
    if found.len() > 1 {
        return Err(SetupError::usage(super::rewind::ambiguous_call(
            call,
            found.iter().map(|f| f.1),
        )));
    }
    let Some((cut, turn, target)) = found.into_iter().next() else {
        return Err(SetupError::usage(format!(
            "call {:?} of session `{parent}` has no checkpoint in its conversation: only calls \
             that are not idempotent have one, in sessions whose preset sets [checkpoints] \
             grain = \"call\"; `paddock log {parent}` shows the calls, and --at N forks at the \
             start of a turn",
            paddock_types::text::sanitize(call)
        )));
    };
    Ok(Point {
        turn,
        cut,
        target: Some(target),
        prompt: None,
    })
}

pub(super) async fn fork(
    env: Env,
    parent: &str,
    options: ForkOptions,
    observer: &dyn Observer,
) -> Result<Forked, SetupError> {
    let fail = SetupError::usage;
    let path = env.store.session_dir(parent).join(LOG_FILE);
    if !path.is_file() {
        return Err(fail(format!(
            "no session `{parent}` (looked for {}); `paddock log --list` shows the sessions",
            path.display()
        )));
    }
    let _held = lock_session(&path, false).await?;
    from_log(env, parent, &path, options, observer).await
}

/// `fork` of the session whose log is at `path`, held by the caller.
pub(super) async fn from_log(
    env: Env,
    parent: &str,
    path: &std::path::Path,
    options: ForkOptions,
    observer: &dyn Observer,
) -> Result<Forked, SetupError> {
    let fail = SetupError::usage;
    let ForkOptions {
        at,
        files,
        force,
        approver,
    } = options;
    let read = read_log(path).map_err(|e| {
        fail(format!(
            "cannot fork session `{parent}`: its log does not read as paddock wrote it ({e}); \
             nothing was forked"
        ))
    })?;
    let Some(Body::SessionStart(start)) = read.events.first().map(|e| &e.body) else {
        return Err(fail(format!(
            "cannot fork session `{parent}`: its log does not begin with session/start"
        )));
    };
    if is_client_session(start) {
        return Err(fail(format!(
            "session `{parent}`'s calls came from a client, not a model: there is no \
             conversation to fork"
        )));
    }
    let state = SessionState::of(&read.events);
    let point = match &at {
        ForkAt::Turn(n) => turn_point(&state, parent, *n)?,
        ForkAt::Call(call) => call_point(&read.events, parent, call)?,
    };
    let reference = state.last_checkpoint.clone();

    let id = new_session_id();
    let mut first = (**start).clone();
    first.session.clone_from(&id);
    first.parent = None;
    first.forked_from = Some(ForkLink {
        session: parent.to_string(),
        turn: point.turn,
        call: match &at {
            ForkAt::Turn(_) => None,
            ForkAt::Call(call) => Some(call.clone()),
        },
        preset: None,
    });
    let mut events = vec![Event {
        seq: 1,
        ts_ms: paddock_types::stamp::now_ms(),
        body: Body::SessionStart(Box::new(first)),
    }];
    events.extend(history_before(&read.events, point.cut, |_| true));
    if let ForkAt::Call(call) = &at {
        for body in cut_before_call(&events, call) {
            events.push(Event {
                seq: events.len() as u64 + 1,
                ts_ms: paddock_types::stamp::now_ms(),
                body,
            });
        }
    }
    let child_dir = env.store.session_dir(&id);
    LogWriter::create_whole(&child_dir.join(LOG_FILE), &events).map_err(|e| {
        SetupError::host(format!("cannot write the fork's log in {}: {e}", child_dir.display()))
    })?;
    // The images its history names go with it (a failed copy is cleaned up with the rest).
    let blobs = path.parent().unwrap_or(path).join(BLOBS_DIR);
    let made = async {
        copy_blobs(&blobs, &child_dir)?;
        let options = ReopenOptions {
            wait: false,
            max_output_tokens: None,
            moved: super::ModelMove::default(),
            approver,
            max_turns: None,
            without_message: false,
        };
        let session = reopen(env, &id, options).await?.settle(observer).await?;
        let mut rewound = crate::rewind::Rewound::default();
        match (files, point.target) {
            (false, _) => {}
            (true, Some(target)) => {
                rewound = session
                    .restore_checkpoint(point.turn, &target, reference.as_deref(), force)
                    .map_err(SetupError::host)?;
            }
            (true, None) => rewound.notes.push(format!(
                "turn {} of `{parent}` has no checkpoint (no writable mount, or checkpoints \
                 were off): the files are left as they are",
                point.turn
            )),
        }
        Ok::<_, SetupError>((session, rewound))
    };
    match made.await {
        Ok((session, rewound)) => Ok(Forked {
            session,
            rewound,
            prompt: point.prompt,
        }),
        Err(e) => {
            // Nothing of a failed fork stays: its directory is this call's own.
            let _ = std::fs::remove_dir_all(&child_dir);
            Err(e)
        }
    }
}

/// `Session::fork_under`: `parent`'s whole conversation, the files as they are, in a new
/// session that `builder` starts under its own preset, exactly as any new session starts
/// (found, trusted, judged and loaded again; nothing of the parent's loaded preset is reused:
/// its plugins, shell and "always" answers end with it). Left out of the history: what ties
/// it to the parent's preset: its checkpoints and rewinds (its mounts' recorders; rewind the
/// parent for those turns) and moves of its model (the builder chooses the model). The model
/// is told of the change, and of the shell that ended with the old preset.
pub(super) async fn under(
    parent: &Session,
    builder: SessionBuilder,
) -> Result<Session, SetupError> {
    let id = parent.id().to_string();
    let fail = SetupError::usage;
    parent
        .log
        .sync()
        .map_err(|e| SetupError::host(format!("cannot write the session log: {e}")))?;
    let read = read_log(parent.log_path()).map_err(|e| {
        fail(format!(
            "cannot go on from session `{id}` under another preset: its log does not read as \
             paddock wrote it ({e}); nothing was forked"
        ))
    })?;
    let state = SessionState::of(&read.events);
    if is_client_session(parent.record()) {
        return Err(fail(format!(
            "session `{id}`'s calls came from a client, not a model: there is no conversation \
             to go on with under another preset"
        )));
    }
    if state.turn_open() {
        return Err(fail(format!(
            "session `{id}` is in the middle of a turn: its preset changes between turns; \
             wait for the turn to end or interrupt it"
        )));
    }
    let tied = |body: &Body| {
        !matches!(
            body,
            Body::Checkpoint { .. } | Body::Rewind { .. } | Body::SessionModel { .. }
        )
    };
    let mut history = history_before(&read.events, u64::MAX, tied);
    let from = parent.preset_name().to_string();
    let mut note = format!(
        "The user switched this session from preset `{from}` to another preset (a mode \
         change): from here on the tools offered, the files they may read and write, and what \
         needs approval are the new preset's. Calls above ran under `{from}`; a tool named \
         there may not be offered now."
    );
    let ended = "The shell of the old preset ended with it (it had the old preset's mounts)";
    if let Some(shell) = state.shells.ended_note(ended) {
        note.push_str("\n\n");
        note.push_str(&shell);
    }
    history.push(Event {
        seq: history.len() as u64 + 2,
        ts_ms: paddock_types::stamp::now_ms(),
        body: Body::UserMessage {
            text: note,
            source: Source::System,
            images: Vec::new(),
        },
    });
    let continued = Continued {
        link: ForkLink {
            session: id,
            turn: state.turn_marks.len() as u64 + 1,
            call: None,
            preset: Some(PresetSwitch {
                from,
                to: String::new(),
            }),
        },
        history,
        blobs: parent.log_path().parent().unwrap_or(parent.log_path()).join(BLOBS_DIR),
    };
    builder.continues(continued).start().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Body {
        Body::UserMessage {
            text: text.into(),
            source: Source::User,
            images: Vec::new(),
        }
    }

    #[test]
    fn a_forks_history_leaves_what_a_rewind_took_out_and_keeps_compactions_on_their_events() {
        let events = crate::log::test_session::numbered([
            crate::log::test_session::start(),
            user("first"),
            Body::TurnStart { turn: 1 },
            Body::TurnEnd {
                reason: crate::log::StopReason::Completed,
                detail: None,
            },
            user("second"),
            Body::TurnStart { turn: 2 },
            Body::TurnEnd {
                reason: crate::log::StopReason::Completed,
                detail: None,
            },
            Body::ConversationRewind { turn: 2, from: 5 },
            Body::ContextCompacted {
                id: "k".into(),
                upto: 4,
                summary: "s".into(),
                attempt: "a".into(),
                rounds: 1,
                usage: None,
                cost_usd: None,
            },
            user("second, again"),
        ]);
        let kept = history_before(&events, 11, |_| true);
        let seqs: Vec<u64> = kept.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [2, 3, 4, 5, 6]);
        assert!(matches!(&kept[3].body, Body::ContextCompacted { upto: 4, .. }));
        assert!(
            kept.iter()
                .all(|e| !matches!(&e.body, Body::UserMessage { text, .. } if text == "second"))
        );
        let state = SessionState::of(&events);
        assert_eq!(state.turns, 1);
        assert_eq!(state.turn_marks.len(), 1);
        let users: Vec<&str> = state
            .history
            .entries()
            .iter()
            .filter_map(|e| match e.message.as_ref() {
                crate::model::Message::User { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert!(!users.contains(&"second"), "{users:?}");
        assert_eq!(users.last(), Some(&"second, again"), "{users:?}");
    }
}
