//! The scheduler (X1-X4): a batch of raw calls in, one record per call out, in model order.
//!
//! Every call is checked once first (name, repair, validation: V3; `Prepared`). Consecutive concurrency-safe
//! calls form a group that runs in a pool bounded by `max_parallel`; any other call is a
//! barrier that runs alone, after everything before it and before everything after it. Within
//! a group, a call waits for every earlier call it conflicts with on a real path (`locks`), so
//! writes to one file happen in model order. A failure is that call's result only.
//!
//! One cancellation token covers the batch (X2, X3): each call checks it before it starts;
//! running calls are interrupted by the sandbox (epoch, host processes) and report CANCELLED;
//! calls that had not started report NOT_EXECUTED. Every call id gets a record.
//!
//! Each transition (Queued → Started → Completed, Failed or Cancelled) is sent on the optional
//! event channel (X4). All calls run on the caller's task; they overlap while they wait (sleep,
//! I/O) and while the epoch makes running guests yield.

use futures::future::join_all;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{Semaphore, mpsc, watch};

use super::locks::Access;
use super::prepared::Prepared;
use super::run::{CallContext, Executed, execute};
use crate::calls::{Disposition, Repair, ToolEntry};
use crate::log::Asked;
use paddock_types::contract::{ErrorCode, ToolResult};

/// Where a call is (X4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum CallPhase {
    Queued,
    Started,
    Completed,
    Failed {
        code: ErrorCode,
    },
    /// Interrupted: `started` tells CANCELLED (it ran) from NOT_EXECUTED (it never started).
    Cancelled {
        started: bool,
    },
}

/// One transition of one call.
#[derive(Debug, Clone, Serialize)]
pub struct CallEvent {
    /// Position in the batch.
    pub index: usize,
    pub id: String,
    #[serde(flatten)]
    pub phase: CallPhase,
}

/// What one call ended with.
#[derive(Debug, Clone, Serialize)]
pub struct CallRecord {
    pub id: String,
    /// The name as the model sent it.
    pub name: String,
    /// The registered tool it resolved to.
    pub tool: Option<String>,
    pub repairs: Vec<Repair>,
    /// The arguments the tool ran with (C3), when it ran.
    pub args: Option<Value>,
    pub result: ToolResult,
    /// Context for the model added by hooks.
    pub context: Vec<String>,
    /// How the user approved it, when asked (T2).
    pub approval: Option<Asked>,
    /// For a failure: back to the model, or the end of the turn (V5).
    pub disposition: Option<Disposition>,
}

/// Told a call's id just before it enters the sandbox; an error refuses the call.
pub type StartHook<'a> = dyn Fn(&str) -> Result<(), String> + Send + Sync + 'a;

/// Told each call's record as that call ends, before any call waiting on it starts.
pub type EndHook<'a> = dyn Fn(&CallRecord) + Send + Sync + 'a;

/// Runs batches of calls for one session.
pub struct Scheduler<'a> {
    pub cx: CallContext<'a>,
    pub max_parallel: usize,
    pub events: Option<mpsc::UnboundedSender<CallEvent>>,
    /// Called with a call's id just before it enters the sandbox, and waited for: the session
    /// log makes `tool/start` durable here, so a crash can never pass a started call off as
    /// one that never ran (L2). An error refuses the call (HOST_ERROR) with that text.
    pub on_start: Option<&'a StartHook<'a>>,
    /// Called with each call's record as soon as that call ends (not when its batch does),
    /// and before a later call that conflicts with it starts: the session log writes the
    /// result here, so a crash mid-batch loses no finished call's result (L8).
    pub on_end: Option<&'a EndHook<'a>>,
}

/// A checked call ready to run.
struct Ready<'r> {
    index: usize,
    entry: &'r ToolEntry,
    args: &'r Value,
    access: &'r Access,
}

impl Scheduler<'_> {
    #[cfg(any(test, feature = "internals"))]
    /// Checks `calls` (`CallContext::check`) and runs them: one record per call, in the same
    /// order.
    pub async fn run(&self, calls: &[super::RawCall]) -> Vec<CallRecord> {
        let prepared: Vec<Prepared> = calls.iter().map(|c| self.cx.check(c.clone())).collect();
        self.run_prepared(&prepared).await
    }

    /// Runs calls checked once before (their queue entries may already be logged): one record
    /// per call, in the same order. A call the check refused ends with its error, unrun.
    pub async fn run_prepared(&self, calls: &[Prepared<'_>]) -> Vec<CallRecord> {
        for (index, call) in calls.iter().enumerate() {
            self.emit(index, &call.call.id, CallPhase::Queued);
        }
        let mut records: Vec<Option<CallRecord>> = vec![None; calls.len()];
        let mut ready = Vec::new();
        for (index, prepared) in calls.iter().enumerate() {
            let record = |result: ToolResult| CallRecord {
                id: prepared.call.id.clone(),
                name: prepared.call.name.clone(),
                tool: prepared.tool.clone(),
                repairs: prepared.repairs.clone(),
                args: None,
                result,
                context: Vec::new(),
                approval: None,
                disposition: None,
            };
            match prepared.runnable() {
                Ok((entry, args, access)) => {
                    records[index] = Some(record(Err(super::run::not_executed())));
                    ready.push(Ready {
                        index,
                        entry,
                        args,
                        access,
                    });
                }
                Err(refusal) => {
                    let mut refused = record(Err(refusal.error));
                    refused.disposition = Some(refusal.disposition);
                    records[index] = Some(self.refuse(index, refused));
                }
            }
        }
        let mut group: Vec<Ready> = Vec::new();
        for call in ready {
            if call.entry.spec.meta.is_concurrency_safe() {
                group.push(call);
                continue;
            }
            self.run_group(std::mem::take(&mut group), calls, &mut records)
                .await;
            self.run_group(vec![call], calls, &mut records).await;
        }
        self.run_group(group, calls, &mut records).await;
        records.into_iter().flatten().collect()
    }

    /// Runs `group` in the bounded pool; each call first waits for the earlier calls it
    /// conflicts with.
    async fn run_group(
        &self,
        group: Vec<Ready<'_>>,
        calls: &[Prepared<'_>],
        records: &mut [Option<CallRecord>],
    ) {
        if group.is_empty() {
            return;
        }
        let pool = Semaphore::new(self.max_parallel.max(1));
        let (done_tx, done_rx): (Vec<_>, Vec<_>) =
            group.iter().map(|_| watch::channel(false)).unzip();
        let drafts: Vec<Option<CallRecord>> = group
            .iter()
            .map(|call| records[call.index].take())
            .collect();
        let runs = group
            .iter()
            .zip(drafts)
            .enumerate()
            .map(|(pos, (call, draft))| {
                let waits: Vec<watch::Receiver<bool>> = group[..pos]
                    .iter()
                    .enumerate()
                    .filter(|(_, earlier)| earlier.access.conflicts_with(call.access))
                    .map(|(k, _)| done_rx[k].clone())
                    .collect();
                let done = &done_tx[pos];
                let pool = &pool;
                async move {
                    for mut wait in waits {
                        // An error means the sender is gone, which only happens once it is done.
                        let _ = wait.wait_for(|finished| *finished).await;
                    }
                    let id = &calls[call.index].call.id;
                    let (executed, held) = match pool.acquire().await {
                        Ok(_permit) => self.execute_held(call, id).await,
                        Err(_) => (
                            Executed::refused(super::run::not_executed(), Vec::new()),
                            None,
                        ),
                    };
                    // Reported as each call ends, not when the group does (X4).
                    let started = executed.report.is_some();
                    self.emit(call.index, id, phase_of(&executed.result, started));
                    let record = draft.map(|mut record| {
                        record.disposition = disposition_of(&executed.result);
                        record.args = executed.args;
                        record.result = executed.result;
                        record.context = executed.context;
                        record.approval = executed.approval;
                        self.ended(&record);
                        record
                    });
                    // The files are let go once the result is logged.
                    drop(held);
                    done.send_replace(true);
                    record
                }
            });
        let finished = join_all(runs).await;
        for (call, record) in group.iter().zip(finished) {
            records[call.index] = record;
        }
    }

    fn ended(&self, record: &CallRecord) {
        if let Some(hook) = self.on_end {
            hook(record);
        }
    }

    /// Runs `call` holding the locks of the files it names (shared with other sessions of
    /// the family: subagents); an abort while it waits for them leaves it not executed.
    async fn execute_held(
        &self,
        call: &Ready<'_>,
        id: &str,
    ) -> (Executed, Option<super::locks::Held>) {
        let held = if call.access.paths.is_empty() {
            None
        } else {
            tokio::select! {
                biased;
                _ = self.cx.cancel.cancelled() => {
                    return (Executed::refused(super::run::not_executed(), Vec::new()), None);
                }
                held = self.cx.locks.hold(call.access) => Some(held),
            }
        };
        (self.execute_one(call, id).await, held)
    }

    async fn execute_one(&self, call: &Ready<'_>, id: &str) -> Executed {
        let mut on_start = || {
            if let Some(hook) = self.on_start {
                hook(id)?;
            }
            self.emit(call.index, id, CallPhase::Started);
            Ok(())
        };
        execute(&self.cx, id, call.entry, call.args.clone(), &mut on_start).await
    }

    /// Reports the end of a call that never reached the pool.
    fn refuse(&self, index: usize, record: CallRecord) -> CallRecord {
        self.emit(index, &record.id, phase_of(&record.result, false));
        self.ended(&record);
        record
    }

    fn emit(&self, index: usize, id: &str, phase: CallPhase) {
        if let Some(events) = &self.events {
            // A dropped receiver only means nobody is listening.
            let _ = events.send(CallEvent {
                index,
                id: id.to_string(),
                phase,
            });
        }
    }
}

/// The last transition of a call with `result`; `started` tells whether it entered the sandbox.
fn phase_of(result: &ToolResult, started: bool) -> CallPhase {
    match result {
        Ok(_) => CallPhase::Completed,
        Err(e) if matches!(e.code, ErrorCode::Cancelled | ErrorCode::NotExecuted) => {
            CallPhase::Cancelled { started }
        }
        Err(e) => CallPhase::Failed {
            code: e.code.clone(),
        },
    }
}

fn disposition_of(result: &ToolResult) -> Option<Disposition> {
    result.as_ref().err().map(|e| Disposition::of(&e.code))
}
