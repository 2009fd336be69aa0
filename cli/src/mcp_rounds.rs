//! Approval over MCP 2026-07-28's multi-round-trip requests: a revision without
//! server-to-client requests asks by answering `tools/call` with `input_required` (the
//! question) and a `requestState`, and the client calls again with the answer and that state.
//!
//! paddock's call is one run of the spine that awaits its approver mid-way, so it is not
//! restarted per round: it runs in a task of its own, and between rounds it waits *parked*
//! under a random handle, the only thing `requestState` carries (the client echoes it; it
//! names nothing and holds nothing the client could forge). The retry that brings the handle
//! hands the answer to the waiting question and drives the call on.
//!
//! Bounded: one call runs at a time (the served session's one-call lock stays held while a
//! call is parked, as while it runs), a parked call waits at most [`ROUND_WAIT`] for its retry
//! (then the question is a no and the call ends denied, logged), and a retry with an unknown
//! or spent handle, or without an answer, changes nothing but itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    ElicitRequest, ElicitResult, ElicitationAction, InputRequest, InputRequests,
    InputRequiredResult, InputResponses,
};
use tokio::sync::{OwnedMutexGuard, mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::elicit::Pending;
use paddock::pipeline::CallRecord;

/// How long a parked call waits for the client's retry.
const ROUND_WAIT: Duration = Duration::from_secs(600);
/// The key of the one input request paddock makes.
const APPROVAL: &str = "approval";

/// A call running in its own task, with the questions it asks.
pub(super) struct Running {
    pub task: JoinHandle<std::io::Result<CallRecord>>,
    pub questions: mpsc::Receiver<Pending>,
    /// Cancels the call (a round the client cancels cancels it).
    pub cancel: CancellationToken,
    /// The served session's one-call lock, held until the call ends.
    pub _one_call: OwnedMutexGuard<()>,
}

struct Parked {
    running: Running,
    answer: oneshot::Sender<ElicitResult>,
}

/// What one round ends with.
pub(super) enum Step {
    Done(std::io::Result<CallRecord>),
    Asked(InputRequiredResult),
}

/// The calls parked between rounds, by handle.
#[derive(Clone, Default)]
pub(super) struct Rounds {
    parked: Arc<Mutex<HashMap<String, Parked>>>,
}

impl Rounds {
    /// Drives `running` until it ends or asks; cancelled by `round` (the client's request).
    pub async fn drive(&self, mut running: Running, round: &CancellationToken) -> Step {
        let asked = tokio::select! {
            biased;
            _ = round.cancelled() => {
                running.cancel.cancel();
                None
            }
            asked = running.questions.recv() => asked,
            ended = &mut running.task => return Step::Done(joined(ended)),
        };
        // Cancelled, or no randomness for a handle: any question is a no, and the call ends
        // on its own (a question it asks next finds no one to ask).
        let (Some(pending), Ok(handle)) = (asked, new_handle()) else {
            running.questions.close();
            return Step::Done(joined((&mut running.task).await));
        };
        let form = InputRequest::Elicitation(ElicitRequest::new(pending.form));
        self.lock().insert(
            handle.clone(),
            Parked {
                running,
                answer: pending.answer,
            },
        );
        // Unanswered in time: dropped, so the question is a no and the call ends.
        let rounds = self.clone();
        let expiring = handle.clone();
        tokio::spawn(async move {
            tokio::time::sleep(ROUND_WAIT).await;
            rounds.lock().remove(&expiring);
        });
        let mut requests = InputRequests::new();
        requests.insert(APPROVAL.into(), form);
        Step::Asked(InputRequiredResult::new(Some(requests), Some(handle)))
    }

    /// The parked call `state` names, its question answered from `responses`; or why not.
    pub fn resume(
        &self,
        state: &str,
        responses: Option<&InputResponses>,
    ) -> Result<Running, String> {
        let Some(parked) = self.lock().remove(state) else {
            return Err(
                "this call's approval round is unknown or expired (rounds wait 10 minutes); \
                 call the tool again"
                    .into(),
            );
        };
        // No answer, or one that does not parse, is a decline: the call is not run.
        let answer = responses
            .and_then(|r| r.get(APPROVAL))
            .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok())
            .unwrap_or_else(|| ElicitResult::new(ElicitationAction::Decline));
        let _ = parked.answer.send(answer);
        Ok(parked.running)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Parked>> {
        self.parked.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn joined(
    ended: Result<std::io::Result<CallRecord>, tokio::task::JoinError>,
) -> std::io::Result<CallRecord> {
    ended.unwrap_or_else(|e| {
        Err(std::io::Error::other(format!(
            "the call's task failed: {e}"
        )))
    })
}

/// 16 random bytes, hex: a handle no client can guess.
fn new_handle() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
