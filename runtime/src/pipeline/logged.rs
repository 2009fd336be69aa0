//! One path for every call the session log records, whoever made it (the model, an MCP client,
//! `tool call`, a resume running a lost idempotent call again): each call checked once
//! (`Prepared`), queued in the log with what it touches before any starts (L1), its
//! `tool/start` written just before it enters the sandbox (synced for a call that is not
//! idempotent, L2), and its result written as it ends, before any call that waits on it
//! starts (L8).
//!
//! Only what could not be repeated safely is synced: the start and the result of a tool that
//! is not idempotent. Losing the start of an idempotent call to a crash only turns "run it
//! again" into "not executed", which is as safe, and saves an fsync per call.

use std::collections::HashSet;
use std::io;
use std::sync::{Mutex, PoisonError};

use super::prepared::Prepared;
use super::run::CallContext;
use super::scheduler::{CallRecord, Scheduler};
use super::summary::{CallSummary, summarize};
use crate::log::{Body, SessionLog, Touches};

/// Told as logged calls start and end (the agent shows them and keeps large results for
/// ageing). Both default to nothing.
pub trait CallWatch: Sync {
    /// Call `id`, whose tool is not idempotent, is about to start: its `tool/start` is
    /// written next (the session takes a checkpoint here at the preset's call grain).
    fn before_unrepeatable(&self, _id: &str) {}
    /// Call `id`'s `tool/start` is written; it is entering the sandbox.
    fn started(&self, _id: &str) {}
    /// A call's result is written. `step` is the sequence number of the assistant message
    /// whose calls it answers, when one is open.
    fn ended(&self, _call: &CallSummary, _step: Option<u64>) {}
}

/// A watch that is told nothing.
pub struct Unwatched;
impl CallWatch for Unwatched {}

/// Runs checked calls with their start and result written to a session log.
pub struct LoggedCalls<'a> {
    pub cx: CallContext<'a>,
    pub max_parallel: usize,
    pub log: &'a SessionLog,
    pub watch: &'a dyn CallWatch,
}

impl LoggedCalls<'_> {
    /// Queues `calls` in the log, then runs them: one record per call, in order. Fails with
    /// the first error writing the log; a call whose start could not be written was not run.
    pub async fn run(&self, calls: &[Prepared<'_>]) -> io::Result<Vec<CallRecord>> {
        self.queue(calls)?;
        self.run_queued(calls).await
    }

    /// Writes each call's `tool/call`: the name as sent, the tool it resolved to, whether it
    /// is idempotent, and the real paths it touches. Not synced: the first start syncs the
    /// queue with it, and a call that never started is settled as NOT_EXECUTED on resume
    /// whether or not its queue entry survived.
    pub fn queue(&self, calls: &[Prepared<'_>]) -> io::Result<()> {
        for prepared in calls {
            self.log.append(Body::ToolCall {
                id: prepared.call.id.clone(),
                name: prepared.call.name.clone(),
                tool: prepared.tool.clone(),
                idempotent: prepared.idempotent(),
                touches: prepared.access().map(|access| Touches {
                    paths: access
                        .paths
                        .iter()
                        .map(|p| p.to_string_lossy().into_owned())
                        .collect(),
                    writes: access.writes,
                }),
            })?;
        }
        Ok(())
    }

    /// Runs calls whose `tool/call` is already in the log.
    pub async fn run_queued(&self, calls: &[Prepared<'_>]) -> io::Result<Vec<CallRecord>> {
        let not_idempotent: HashSet<&str> = calls
            .iter()
            .filter(|c| !c.idempotent())
            .map(|c| c.call.id.as_str())
            .collect();
        let must_sync = |id: &str| not_idempotent.contains(id);
        let failed: Mutex<Option<io::Error>> = Mutex::new(None);
        let on_start = |id: &str| {
            let start = Body::ToolStart { id: id.to_string() };
            let written = if must_sync(id) {
                self.watch.before_unrepeatable(id);
                self.log.append_synced(start)
            } else {
                self.log.append(start)
            };
            written.map(|()| self.watch.started(id)).map_err(|e| {
                format!(
                    "the session log cannot record that this call started ({e}); it was not run"
                )
            })
        };
        let on_end = |record: &CallRecord| {
            let written = self.write_result(record).and_then(|()| {
                if must_sync(&record.id) {
                    self.log.sync()
                } else {
                    Ok(())
                }
            });
            if let Err(e) = written {
                failed
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_or_insert(e);
            }
        };
        let scheduler = Scheduler {
            cx: self.cx.clone(),
            max_parallel: self.max_parallel,
            events: None,
            on_start: Some(&on_start),
            on_end: Some(&on_end),
        };
        let records = scheduler.run_prepared(calls).await;
        match failed.into_inner().unwrap_or_else(PoisonError::into_inner) {
            Some(error) => Err(error),
            None => Ok(records),
        }
    }

    /// Writes a call's `tool/result`: what the model reads, the arguments it ran with, the
    /// repairs applied and how it was approved; then tells the watch.
    fn write_result(&self, record: &CallRecord) -> io::Result<()> {
        let summary = summarize(record);
        let step = self.log.with_state(|s| s.history.open_calls_seq());
        let blobs = self.log.blobs();
        let images = summary
            .images
            .iter()
            .map(|image| blobs.put(image))
            .collect::<io::Result<Vec<_>>>()?;
        self.log.append(Body::ToolResult {
            id: record.id.clone(),
            content: summary.content.clone(),
            is_error: summary.is_error,
            code: summary.code.clone(),
            args: record.args.clone(),
            repairs: record
                .repairs
                .iter()
                .cloned()
                .map(crate::log::LoggedRepair::Known)
                .collect(),
            approval: record.approval.clone(),
            images,
        })?;
        self.watch.ended(&summary, step);
        Ok(())
    }
}
