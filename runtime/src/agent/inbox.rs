//! The inbox (I1, I2): input that arrives while the loop works. Each entry has an id
//! (duplicates are dropped), a source and a lane, and is logged (`inbox/in`) before it is
//! acknowledged. The loop takes `next-step` entries (steering) before its next model request,
//! and one `next-turn` entry (a follow-up) when it would otherwise stop; an `interrupt` entry
//! is logged and the caller fires the turn's abort signal.

use std::collections::{HashSet, VecDeque};
use std::io;
use std::sync::{Mutex, PoisonError};

use crate::log::{Body, Lane, SessionLog, Source};

/// One piece of input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub id: String,
    pub source: Source,
    pub lane: Lane,
    pub text: String,
}

#[derive(Default)]
pub struct Inbox {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    pending: VecDeque<Entry>,
    seen: HashSet<String>,
}

impl Inbox {
    pub fn new() -> Inbox {
        Inbox::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Logs `entry` and, unless it is an interrupt, queues it. Returns false, and logs
    /// nothing, for an id already accepted (I1: dedup).
    pub fn accept(&self, log: &SessionLog, entry: Entry) -> io::Result<bool> {
        let mut state = self.state();
        if state.seen.contains(&entry.id) {
            return Ok(false);
        }
        log.append_synced(Body::InboxIn {
            id: entry.id.clone(),
            source: entry.source,
            lane: entry.lane,
            text: entry.text.clone(),
        })?;
        state.seen.insert(entry.id.clone());
        if entry.lane != Lane::Interrupt {
            state.pending.push_back(entry);
        }
        Ok(true)
    }

    /// Removes and returns every pending entry of `lane`, oldest first.
    pub fn take_all(&self, lane: Lane) -> Vec<Entry> {
        let mut state = self.state();
        let (taken, kept): (VecDeque<Entry>, VecDeque<Entry>) =
            state.pending.drain(..).partition(|e| e.lane == lane);
        state.pending = kept;
        taken.into()
    }

    /// Removes and returns the oldest pending entry of `lane`.
    pub fn take_one(&self, lane: Lane) -> Option<Entry> {
        let mut state = self.state();
        let at = state.pending.iter().position(|e| e.lane == lane)?;
        state.pending.remove(at)
    }

    pub fn has(&self, lane: Lane) -> bool {
        self.state().pending.iter().any(|e| e.lane == lane)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{LogWriter, read_log};

    fn entry(id: &str, lane: Lane) -> Entry {
        Entry {
            id: id.into(),
            source: Source::User,
            lane,
            text: format!("text of {id}"),
        }
    }

    #[test]
    fn entries_are_logged_once_and_taken_by_lane_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let log = SessionLog::new(LogWriter::create(&path).unwrap(), Vec::new());
        let inbox = Inbox::new();
        assert!(inbox.accept(&log, entry("a", Lane::NextStep)).unwrap());
        assert!(inbox.accept(&log, entry("b", Lane::NextTurn)).unwrap());
        assert!(inbox.accept(&log, entry("c", Lane::NextStep)).unwrap());
        assert!(
            !inbox.accept(&log, entry("a", Lane::NextStep)).unwrap(),
            "duplicate id"
        );
        assert!(inbox.accept(&log, entry("d", Lane::Interrupt)).unwrap());
        let steering: Vec<String> = inbox
            .take_all(Lane::NextStep)
            .into_iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(steering, ["a", "c"]);
        assert!(!inbox.has(Lane::Interrupt), "interrupts are not queued");
        assert_eq!(inbox.take_one(Lane::NextTurn).unwrap().id, "b");
        assert!(inbox.take_one(Lane::NextTurn).is_none());
        // Logged before acknowledged: every accepted entry is in the file (a session log
        // without session/start reads as an error, so look at the lines).
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("inbox/in").count(), 4, "{text}");
        assert!(
            read_log(&path).is_err(),
            "no session/start in this bare log"
        );
    }
}
