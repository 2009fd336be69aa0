//! The loop's tool side: each of a message's calls checked once, then queued, run and logged
//! through `LoggedCalls` (L1, L2, L8); the turn's stop worked out from how they ended.

use crate::calls::{Disposition, EndReason};
use paddock_types::contract::{ErrorCode, ToolError};
use crate::log::StopReason;
use crate::model::AssembledCall;
use crate::pipeline::{CallRecord, CallSummary, CallWatch, LoggedCalls, Prepared, RawCall};

use super::{Agent, Stop};

impl Agent<'_> {
    /// Queues every call in the log before any starts (L1), runs the runnable ones through
    /// the scheduler, and logs each result as that call ends (L8). A call the model's
    /// response was cut off in the middle of is queued but never runs.
    pub(super) async fn run_calls(&self, calls: &[AssembledCall]) -> Result<(), Stop> {
        let prepared: Vec<Prepared> = calls
            .iter()
            .map(|assembled| {
                let call = &assembled.call;
                let checked = self.calls.check(RawCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                });
                match &assembled.not_executable {
                    Some(why) => checked.refuse(ToolError::new(ErrorCode::NotExecuted, why)),
                    None => checked,
                }
            })
            .collect();
        let records = self
            .logged()
            .run(&prepared)
            .await
            .map_err(|e| Stop::host("cannot write the session log", e))?;
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
                Some(Disposition::EndTurn(EndReason::ApprovalRequired)) => {
                    let detail = format!(
                        "`{}` needed approval and no one could be asked",
                        record.name
                    );
                    stop.get_or_insert(Stop(StopReason::ApprovalRequired, Some(detail)));
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

    /// Runs calls already queued in the log (resume runs a lost idempotent call again),
    /// each start and result logged as it happens.
    pub async fn run_queued(&self, calls: &[RawCall]) -> std::io::Result<Vec<CallRecord>> {
        let prepared: Vec<Prepared> = calls.iter().map(|c| self.calls.check(c.clone())).collect();
        self.logged().run_queued(&prepared).await
    }

    /// This session's calls, logged, shown to the observer, large results kept for ageing.
    fn logged(&self) -> LoggedCalls<'_> {
        LoggedCalls {
            cx: self.calls.clone(),
            max_parallel: self.max_parallel,
            log: self.log,
            watch: self,
        }
    }

    /// Removes the temporary files that `calls` (started, never finished: a crash stopped
    /// them) left beside the paths they name, each by its call's tag and only that exact name
    /// (`sandbox::remove_temp`). Returns one line per file removed or that could not be.
    pub fn remove_interrupted_temps(&self, calls: &[crate::model::ToolCall]) -> Vec<String> {
        let mut said = Vec::new();
        for call in calls {
            let checked = self.calls.check(RawCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            });
            let Some((entry, args)) = checked.checked() else {
                continue;
            };
            let removed =
                crate::pipeline::remove_call_temps(entry, args, self.calls.session_id, &call.id);
            said.extend(removed.into_iter().map(|line| line.unwrap_or_else(|e| e)));
        }
        said
    }
}

impl CallWatch for Agent<'_> {
    /// At the preset's call grain, the mounts are recorded before each call that is not
    /// idempotent. A checkpoint that fails does not stop the call: the person is told.
    fn before_unrepeatable(&self, id: &str) {
        let Some(checkpoints) = self.checkpoints else {
            return;
        };
        let turn = self.log.with_state(|s| s.turns);
        if let Some(Err(e)) = checkpoints.before_call(self.log, turn, id) {
            self.observer
                .notice(&format!("no checkpoint of the mounts before call {id}: {e}"));
        }
    }

    fn started(&self, id: &str) {
        self.observer.tool_started(id);
    }

    fn ended(&self, call: &CallSummary, step: Option<u64>) {
        if let Some(step) = step {
            self.keep_for_ageing(step, call);
        }
        self.observer.result(call);
    }
}

impl Agent<'_> {
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
