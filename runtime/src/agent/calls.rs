//! The loop's tool side: queue a message's calls in the log with what each touches, run them
//! through the scheduler with a start hook that makes the start of a call with side effects
//! durable first (L1, L2), and an end hook that logs each result as its call ends (L8).

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use crate::calls::{Disposition, EndReason, check_call, repair_note};
use crate::exec::{Access, CallRecord, RawCall, Scheduler};
use crate::log::{Body, StopReason, Touches};
use crate::model::AssembledCall;

use super::{Agent, CallSummary, Stop};

/// What the log records about a call before it runs.
struct Resolved {
    tool: Option<String>,
    idempotent: bool,
    touches: Option<Touches>,
}

impl Agent<'_> {
    /// Queues every call in the log before any starts (L1), runs the runnable ones through
    /// the scheduler, and logs each result as that call ends (L8).
    pub(super) async fn run_calls(&self, calls: &[AssembledCall]) -> Result<(), Stop> {
        let log_error = |e| Stop::host("cannot write the session log", e);
        let mut runnable = Vec::new();
        let mut refused = Vec::new();
        for assembled in calls {
            let call = &assembled.call;
            let resolved = self.resolve(&call.name, &call.arguments);
            self.log
                .append(Body::ToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    tool: resolved.tool,
                    idempotent: resolved.idempotent,
                    touches: resolved.touches,
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
            self.record(summary, None).map_err(log_error)?;
        }
        let records = self.execute(&runnable).await.map_err(log_error)?;
        let mut stop = None;
        for record in &records {
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
        stop.map_or(Ok(()), Err)
    }

    /// Runs calls through the scheduler. Each start is written before the tool runs, and
    /// each result as its call ends, before any call that waits on it starts (L8).
    ///
    /// Only what could not be repeated safely is synced: the start and the result of a tool
    /// that is not idempotent. Losing the start of an idempotent call to a crash only turns
    /// "run it again" into "not executed", which is as safe, and saves an fsync per call.
    /// Fails with the first error writing the log; a call whose start could not be written
    /// was not run.
    pub async fn execute(&self, calls: &[RawCall]) -> std::io::Result<Vec<CallRecord>> {
        let must_sync: HashSet<&str> = calls
            .iter()
            .filter(|c| !self.resolve(&c.name, &c.arguments).idempotent)
            .map(|c| c.id.as_str())
            .collect();
        let failed: Mutex<Option<std::io::Error>> = Mutex::new(None);
        let on_start = |id: &str| {
            let start = Body::ToolStart { id: id.to_string() };
            let written = if must_sync.contains(id) {
                self.log.append_synced(start)
            } else {
                self.log.append(start)
            };
            written
                .map(|()| self.observer.tool_started(id))
                .map_err(|e| {
                    format!(
                        "the session log cannot record that this call started ({e}); it was not run"
                    )
                })
        };
        let on_end = |record: &CallRecord| {
            let written = self
                .record(&summarize(record), Some(record))
                .and_then(|()| {
                    if must_sync.contains(record.id.as_str()) {
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
            cx: self.calls.clone(),
            max_parallel: self.max_parallel,
            events: None,
            on_start: Some(&on_start),
            on_end: Some(&on_end),
        };
        let records = scheduler.run(calls).await;
        match failed.into_inner().unwrap_or_else(PoisonError::into_inner) {
            Some(error) => Err(error),
            None => Ok(records),
        }
    }

    /// Removes the temporary files that `calls` (started, never finished: a crash stopped
    /// them) left beside the paths they name, each by its call's tag and only that exact name
    /// (`sandbox::remove_temp`). Returns one line per file removed or that could not be.
    pub fn remove_interrupted_temps(&self, calls: &[crate::model::ToolCall]) -> Vec<String> {
        let mut said = Vec::new();
        for call in calls {
            let checked = check_call(
                self.calls.registry,
                self.calls.aliases,
                &call.name,
                &call.arguments,
            );
            let (Some(entry), Ok(args)) = (
                checked
                    .tool
                    .as_deref()
                    .and_then(|t| self.calls.registry.get(t)),
                checked.args.as_ref(),
            ) else {
                continue;
            };
            if entry.plugin().is_none() || entry.spec.meta.is_read_only() {
                continue;
            }
            let tag = crate::sandbox::call_tag(self.calls.session_id, &call.id);
            let paths = entry
                .spec
                .meta
                .path_params
                .iter()
                .filter_map(|param| args.get(param))
                .filter_map(serde_json::Value::as_str);
            for path in paths {
                match crate::sandbox::remove_temp(path, &entry.grant.mounts, &tag) {
                    Ok(true) => said.push(format!(
                        "call {}: removed the temporary file its interrupted write left beside {path}",
                        call.id
                    )),
                    Ok(false) => {}
                    Err(e) => said.push(format!(
                        "call {}: cannot remove the temporary file its interrupted write left \
                         beside {path} (named `.*.paddock-{tag}.tmp`): {e}; remove it by hand",
                        call.id
                    )),
                }
            }
        }
        said
    }

    /// The registered tool a call's name resolves to, whether that tool is idempotent (an
    /// unknown tool never runs, so it counts as idempotent), and the real paths it touches.
    fn resolve(&self, name: &str, arguments: &str) -> Resolved {
        let checked = check_call(self.calls.registry, self.calls.aliases, name, arguments);
        let entry = checked
            .tool
            .as_deref()
            .and_then(|t| self.calls.registry.get(t));
        let Some(entry) = entry else {
            return Resolved {
                tool: checked.tool,
                idempotent: true,
                touches: None,
            };
        };
        let touches = checked.args.as_ref().ok().map(|args| {
            let access = Access::of(&entry.spec, args, &entry.grant.mounts);
            Touches {
                paths: access
                    .paths
                    .iter()
                    .map(|p| p.to_string_lossy().into_owned())
                    .collect(),
                writes: access.writes,
            }
        });
        Resolved {
            idempotent: entry.spec.meta.is_idempotent(),
            tool: checked.tool,
            touches,
        }
    }

    /// Logs a call's result (with the arguments it ran with and the repairs applied, when it
    /// went through the scheduler) and shows it.
    pub fn record(&self, call: &CallSummary, record: Option<&CallRecord>) -> std::io::Result<()> {
        let step = self.log.with_state(|s| s.history.open_calls_seq());
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
            approval: record.and_then(|r| r.approval.clone()),
        })?;
        if let Some(step) = step {
            self.keep_for_ageing(step, call);
        }
        self.observer.result(call);
        Ok(())
    }

    /// A result large enough to age out of the context later is also written whole to the
    /// session's spill directory, where the stub that replaces it says it is. The
    /// log keeps it anyway: a spill that cannot be written is only a warning.
    fn keep_for_ageing(&self, step: u64, call: &CallSummary) {
        let (Some(ageing), Some(spill)) = (self.policy().ageing, self.calls.spill) else {
            return;
        };
        if call.content.len() <= ageing.bytes {
            return;
        }
        use std::io::Write;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let path = spill.host.join(crate::log::aged_spill_name(step, &call.id));
        let written = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&spill.host)
            .and_then(|()| {
                let _ = std::fs::remove_file(&path);
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&path)
            })
            .and_then(|mut file| file.write_all(call.content.as_bytes()));
        if let Err(e) = written {
            tracing::warn!(
                "cannot keep the result of call {} in {}: {e}",
                call.id,
                path.display()
            );
        }
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
