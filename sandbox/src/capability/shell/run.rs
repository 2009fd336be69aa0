//! One command of a shell, in whichever process it runs: what it printed (`Transcript`) and
//! how it ended, shared between the tasks that read its output and wait for it and the calls
//! that report on it.

use std::sync::Mutex;

use tokio::sync::{Notify, watch};

use super::transcript::{Taken, Transcript};
use crate::grant::LiveOutput;

/// How a command ended.
#[derive(Debug, Clone, Default)]
pub(super) struct Ended {
    /// Its exit status (128+N after signal N), when it has one.
    pub status: Option<i32>,
    /// What paddock did or saw at the end (a clean-up, the shell exiting).
    pub notes: Vec<String>,
}

pub(super) struct RunShared {
    transcript: Mutex<Transcript>,
    ended: watch::Sender<Option<Ended>>,
    /// Told when the command's output is complete (its end mark was read).
    output_complete: Notify,
    output_done: std::sync::atomic::AtomicBool,
    /// paddock's notes about it not yet reported (a time limit reached).
    notes: Mutex<Vec<String>>,
    /// Who sees the output as it comes, while a call waits for it.
    live: Mutex<Option<LiveOutput>>,
}

/// Stops the live tail when the call that set it stops waiting.
pub(super) struct Watching<'a>(&'a RunShared);

impl Drop for Watching<'_> {
    fn drop(&mut self) {
        *self
            .0
            .live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }
}

impl RunShared {
    pub fn new(transcript: Transcript) -> RunShared {
        RunShared {
            transcript: Mutex::new(transcript),
            ended: watch::channel(None).0,
            output_complete: Notify::new(),
            output_done: std::sync::atomic::AtomicBool::new(false),
            notes: Mutex::new(Vec::new()),
            live: Mutex::new(None),
        }
    }

    pub fn push(&self, bytes: &[u8]) {
        self.lock().push(bytes);
        if let Some(live) = &*self
            .live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
        {
            live.send(&String::from_utf8_lossy(bytes));
        }
    }

    /// Sends the output to `live` as it comes, until the returned guard is dropped.
    pub fn watch(&self, live: LiveOutput) -> Watching<'_> {
        *self
            .live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(live);
        Watching(self)
    }

    pub fn note(&self, note: String) {
        self.notes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(note);
    }

    pub fn take_notes(&self) -> Vec<String> {
        std::mem::take(
            &mut *self
                .notes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    pub fn take(&self) -> Taken {
        self.lock().take()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Transcript> {
        self.transcript
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records the end; the first end recorded stands.
    pub fn end(&self, ended: Ended) {
        self.ended.send_if_modified(|slot| {
            if slot.is_some() {
                return false;
            }
            *slot = Some(ended);
            true
        });
    }

    pub fn ended(&self) -> Option<Ended> {
        self.ended.borrow().clone()
    }

    /// Waits until the command has ended.
    pub async fn wait(&self) -> Ended {
        let mut rx = self.ended.subscribe();
        loop {
            if let Some(ended) = rx.borrow_and_update().clone() {
                return ended;
            }
            if rx.changed().await.is_err() {
                return Ended::default();
            }
        }
    }

    pub fn complete_output(&self) {
        self.output_done
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.output_complete.notify_waiters();
    }

    /// Waits until the output is complete, for at most `limit`.
    pub async fn output_completed(&self, limit: std::time::Duration) {
        let wait = async {
            loop {
                let notified = self.output_complete.notified();
                if self.output_done.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(limit, wait).await;
    }
}
