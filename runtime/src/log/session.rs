//! A session's log as the loop uses it: the writer and every event so far, behind one lock so
//! that the scheduler's start hook can append from inside a batch.

use std::io;
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::event::{Body, Event};
use super::file::LogWriter;

pub struct SessionLog {
    inner: Mutex<Inner>,
}

struct Inner {
    writer: LogWriter,
    events: Vec<Event>,
}

impl SessionLog {
    /// `events` are the ones already in the file `writer` appends to.
    pub fn new(writer: LogWriter, events: Vec<Event>) -> SessionLog {
        SessionLog {
            inner: Mutex::new(Inner { writer, events }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while appending leaves the vector and file as they were; go on.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends one event (not yet synced).
    pub fn append(&self, body: Body) -> io::Result<()> {
        let mut inner = self.lock();
        let event = inner.writer.append(body)?;
        inner.events.push(event);
        Ok(())
    }

    /// Appends one event and makes the log durable up to it.
    pub fn append_synced(&self, body: Body) -> io::Result<()> {
        let mut inner = self.lock();
        let event = inner.writer.append(body)?;
        inner.events.push(event);
        inner.writer.sync()
    }

    pub fn sync(&self) -> io::Result<()> {
        self.lock().writer.sync()
    }

    /// A copy of every event so far.
    pub fn events(&self) -> Vec<Event> {
        self.lock().events.clone()
    }

    /// Runs `f` over the events without copying them.
    pub fn with_events<R>(&self, f: impl FnOnce(&[Event]) -> R) -> R {
        f(&self.lock().events)
    }

    pub fn path(&self) -> std::path::PathBuf {
        self.lock().writer.path().to_path_buf()
    }
}
