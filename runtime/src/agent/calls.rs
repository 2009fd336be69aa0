//! The loop's tool side: queue a message's calls in the log, run them through the scheduler
//! with a start hook that makes the start of a call with side effects durable first (L1, L2),
//! and log what the model will read back for each.

use crate::calls::{Disposition, EndReason, check_call, repair_note};
use crate::exec::{CallRecord, RawCall, Scheduler};
use crate::log::{Body, StopReason};
use crate::model::AssembledCall;

use super::{Agent, CallSummary, Stop};

impl Agent<'_> {
    /// Queues every call in the log (synced) before any starts (L1), runs the runnable ones
    /// through the scheduler, and logs each result.
    pub(super) async fn run_calls(&self, calls: &[AssembledCall]) -> Result<(), Stop> {
        let log_error = |e| Stop::host("cannot write the session log", e);
        let mut runnable = Vec::new();
        let mut refused = Vec::new();
        for assembled in calls {
            let call = &assembled.call;
            let (tool, idempotent) = self.resolve(&call.name, &call.arguments);
            self.log
                .append(Body::ToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    tool,
                    idempotent,
                })
                .map_err(log_error)?;
            match &assembled.not_executable {
                Some(why) => refused.push(CallSummary {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    content: format!("error[NOT_EXECUTED]: {why}"),
                    is_error: true,
                    code: Some("NOT_EXECUTED".into()),
                }),
                None => runnable.push(RawCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                }),
            }
        }
        // No sync here: the first start below syncs the queue with it, and a call that never
        // started is settled as NOT_EXECUTED on resume whether or not its queue entry survived.
        for summary in &refused {
            self.record(summary, None)
                .map_err(|e| Stop::host("cannot write the session log", e))?;
        }
        let records = self.execute(&runnable).await;
        let mut stop = None;
        for record in &records {
            self.record(&summarize(record), Some(record))
                .map_err(|e| Stop::host("cannot write the session log", e))?;
            match record.disposition {
                Some(Disposition::EndTurn(EndReason::Interrupted)) => {
                    stop.get_or_insert(Stop(StopReason::Interrupted, None));
                }
                Some(Disposition::EndTurn(EndReason::Declined)) => {
                    let detail = format!("the user declined `{}`", record.name);
                    stop.get_or_insert(Stop(StopReason::Denied, Some(detail)));
                }
                Some(Disposition::EndTurn(EndReason::HostFault)) => {
                    let detail = record.result.as_ref().err().map(|e| e.to_string());
                    stop.get_or_insert(Stop(StopReason::HostError, detail));
                }
                _ => {}
            }
        }
        // The results of calls with side effects are made durable now; those of idempotent
        // calls ride on the next sync (a crash before it only means running them again).
        if runnable
            .iter()
            .any(|c| !self.resolve(&c.name, &c.arguments).1)
        {
            self.log.sync().map_err(log_error)?;
        }
        stop.map_or(Ok(()), Err)
    }

    /// Runs calls through the scheduler; each start is made durable before the tool runs.
    ///
    /// Only a start that could not be repeated safely is synced (a tool that is not
    /// idempotent): losing the start of an idempotent call to a crash only turns "run it
    /// again" into "not executed", which is as safe, and saves an fsync per call.
    pub async fn execute(&self, calls: &[RawCall]) -> Vec<CallRecord> {
        let must_sync: std::collections::HashSet<&str> = calls
            .iter()
            .filter(|c| !self.resolve(&c.name, &c.arguments).1)
            .map(|c| c.id.as_str())
            .collect();
        let on_start = |id: &str| {
            let start = Body::ToolStart { id: id.to_string() };
            let written = if must_sync.contains(id) {
                self.log.append_synced(start)
            } else {
                self.log.append(start)
            };
            written.map_err(|e| {
                format!(
                    "the session log cannot record that this call started ({e}); it was not run"
                )
            })
        };
        let scheduler = Scheduler {
            cx: self.calls.clone(),
            max_parallel: self.max_parallel,
            events: None,
            on_start: Some(&on_start),
        };
        scheduler.run(calls).await
    }

    /// The registered tool a call's name resolves to, and whether that tool is idempotent
    /// (an unknown tool never runs, so it counts as idempotent).
    fn resolve(&self, name: &str, arguments: &str) -> (Option<String>, bool) {
        let tool = check_call(self.calls.registry, self.calls.aliases, name, arguments).tool;
        let idempotent = match tool.as_deref() {
            Some(t) => self
                .calls
                .registry
                .get(t)
                .is_some_and(|entry| entry.spec.meta.is_idempotent()),
            None => true,
        };
        (tool, idempotent)
    }

    /// Logs a call's result (with the arguments it ran with and the repairs applied, when it
    /// went through the scheduler) and shows it.
    pub fn record(&self, call: &CallSummary, record: Option<&CallRecord>) -> std::io::Result<()> {
        self.log.append(Body::ToolResult {
            id: call.id.clone(),
            content: call.content.clone(),
            is_error: call.is_error,
            code: call.code.clone(),
            args: record.and_then(|r| r.args.clone()),
            repairs: record.map_or_else(Vec::new, |r| {
                r.repairs
                    .iter()
                    .filter_map(|repair| serde_json::to_value(repair).ok())
                    .collect()
            }),
        })?;
        self.observer.result(call);
        Ok(())
    }
}

/// What the model reads for a call: the content, or `error[CODE]: message`, followed by any
/// context the hooks added.
pub fn summarize(record: &CallRecord) -> CallSummary {
    let (mut content, is_error, code) = match &record.result {
        Ok(output) => (output.content.clone(), false, None),
        Err(error) => (
            format!("error[{}]: {}", error.code, error.message),
            true,
            Some(error.code.to_string()),
        ),
    };
    // V7: a call whose arguments held several objects says which ran and which did not.
    if let Some(note) = repair_note(&record.repairs, record.args.as_ref()) {
        content.push_str("\n\n");
        content.push_str(&note);
    }
    for note in &record.context {
        content.push_str("\n\n[context from a hook] ");
        content.push_str(note);
    }
    CallSummary {
        id: record.id.clone(),
        name: record.name.clone(),
        content,
        is_error,
        code,
    }
}
