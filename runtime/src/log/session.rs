//! A session's log as the loop uses it: the writer and the state derived from every event so
//! far (`SessionState`: history, spending, turns), behind one lock so that the scheduler's
//! start hook can append from inside a batch. The events themselves are not kept: each one
//! updates the state as it is written, so a long session costs memory for what the model is
//! sent, not for everything it did.

use std::io;
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::blobs::Blobs;
use super::event::{Body, Event};
use super::file::LogWriter;
use super::index::SessionIndex;
use super::state::SessionState;

/// Sees every event as it is appended (`paddock run --json`).
pub type Tap = Box<dyn Fn(&Event) + Send + Sync>;

pub struct SessionLog {
    inner: Mutex<Inner>,
    tap: Option<Tap>,
}

struct Inner {
    writer: LogWriter,
    state: SessionState,
}

impl Inner {
    /// Best effort: the index is a cache that the list rebuilds when it is missing or stale.
    fn write_index(&self) {
        let Some(dir) = self.writer.path().parent() else {
            return;
        };
        let session = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        let index = SessionIndex::of(
            session.as_deref().unwrap_or_default(),
            &self.state,
            self.writer.bytes(),
        );
        if let Err(e) = index.write(dir) {
            tracing::debug!("cannot write the session index in {}: {e}", dir.display());
        }
    }
}

impl SessionLog {
    /// `events` are the ones already in the file `writer` appends to.
    pub fn new(writer: LogWriter, events: Vec<Event>) -> SessionLog {
        let mut state = SessionState::default();
        state
            .history
            .read_images_from(Blobs::of_log(writer.path()));
        for event in &events {
            state.push(event);
        }
        SessionLog::from_state(writer, state)
    }

    /// The session's blob store, where the images its events name are kept.
    pub fn blobs(&self) -> Blobs {
        Blobs::of_log(self.lock().writer.path())
    }

    /// `state` is derived from the events already in the file `writer` appends to. The
    /// session's index is written now, so a new session is listed at once.
    pub fn from_state(writer: LogWriter, state: SessionState) -> SessionLog {
        let inner = Inner { writer, state };
        inner.write_index();
        SessionLog {
            inner: Mutex::new(inner),
            tap: None,
        }
    }

    /// Shows each event to `tap` as it is appended, in the log's order (the tap runs under
    /// the log's lock). Events already written are not shown again.
    pub fn with_tap(mut self, tap: Tap) -> SessionLog {
        self.tap = Some(tap);
        self
    }

    fn taken(&self, inner: &mut Inner, event: &Event) {
        if let Some(tap) = &self.tap {
            tap(event);
        }
        inner.state.push(event);
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while appending leaves the state and file as they were; go on.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends one event (not yet synced).
    pub fn append(&self, body: Body) -> io::Result<()> {
        let mut inner = self.lock();
        let event = inner.writer.append(body)?;
        self.taken(&mut inner, &event);
        Ok(())
    }

    /// Appends one event and makes the log durable up to it. At the end of a turn the
    /// session's index (`index.json`, for `paddock log --list`) is written too.
    pub fn append_synced(&self, body: Body) -> io::Result<()> {
        let mut inner = self.lock();
        let event = inner.writer.append(body)?;
        self.taken(&mut inner, &event);
        inner.writer.sync()?;
        if matches!(event.body, Body::ConversationRewind { .. }) {
            // The history is built forward only: one that goes back is built again from the
            // log, the events taken out skipped.
            let path = inner.writer.path().to_path_buf();
            inner.state = super::stream::stream_log(&path)
                .map_err(|e| io::Error::other(e.to_string()))?
                .state;
        }
        if matches!(event.body, Body::TurnEnd { .. } | Body::ConversationRewind { .. }) {
            inner.write_index();
        }
        Ok(())
    }

    pub fn sync(&self) -> io::Result<()> {
        self.lock().writer.sync()
    }

    /// Runs `f` over the state derived from every event so far.
    pub fn with_state<R>(&self, f: impl FnOnce(&SessionState) -> R) -> R {
        f(&self.lock().state)
    }

    pub fn path(&self) -> std::path::PathBuf {
        self.lock().writer.path().to_path_buf()
    }
}
