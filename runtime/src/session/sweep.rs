//! Client sessions a kill left unsettled (L7). A model's session killed mid-write is settled
//! by `resume`, which removes the temporary file of each interrupted write. `tool call` and
//! `mcp serve` are never resumed, so without this their temporary files would stay in the
//! project for good.
//!
//! - A client session marks itself open: an empty file named by its id in
//!   `DATA/clients-open/`, made once its log and lock exist.
//! - Every session started later in the same data directory (`run`, `chat`, `tool call`,
//!   `mcp serve`; not a subagent) looks at the marks first. A marked session whose lock is held
//!   is alive and left alone. Otherwise its lock is taken and its log read. If it ends with
//!   calls a kill interrupted, their temporary files are removed as `resume` removes them (that
//!   exact name, by descriptor under the recorded preset's mounts), and each call that never
//!   got a result is answered in its log (`OUTCOME_UNKNOWN`, or `NOT_EXECUTED` for one that
//!   never started; nothing is run again, since no client waits). Then the mark goes.
//! - A mark whose name is not a session id, or whose log is not a client's, is removed
//!   without reading anything else.

use std::path::PathBuf;

use super::Session;
use super::env::Env;
use super::client::{NoModel, is_client_session};
use crate::agent::Quiet;
use crate::ask::NoOneToAsk;
use crate::log::{
    LOG_FILE, LockError, LogWriter, SessionLock, SessionLog, Settle, Wait, client_gone,
    recover_tail, stream_log,
};

/// The directory of the marks, in the data directory.
const OPEN_DIR: &str = "clients-open";

/// Where client sessions mark themselves open.
pub(super) struct OpenMarks(PathBuf);

impl OpenMarks {
    pub(super) fn of(env: &Env) -> OpenMarks {
        OpenMarks(env.store.root().join(OPEN_DIR))
    }

    /// Marks session `id` open. A mark that cannot be made costs only the clean-up after a
    /// kill, so the error is returned as a sentence for the person, not as a failure.
    pub(super) fn mark(&self, id: &str) -> Result<(), String> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.0)
            .and_then(|()| std::fs::File::create(self.0.join(id)).map(drop))
            .map_err(|e| {
                format!(
                    "cannot mark session {id} open in {} ({e}): if this process is killed \
                     mid-write, its temporary file stays in the project",
                    self.0.display()
                )
            })
    }

    /// Settles every marked session that is not running any more; one line per thing done or
    /// that failed, for the person.
    pub(super) async fn settle_dead(&self, env: &Env) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.0) else {
            return Vec::new();
        };
        let mut said = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let id = name.to_string_lossy().into_owned();
            if !is_session_id(&id) {
                let _ = std::fs::remove_file(entry.path());
                continue;
            }
            match settle_one(env, &id).await {
                Ok(Some(lines)) => {
                    said.extend(lines);
                    let _ = std::fs::remove_file(entry.path());
                }
                Ok(None) => {}
                Err(e) => said.push(format!(
                    "the session {id} of a killed `tool call` or `mcp serve` could not be \
                     settled: {e}; `paddock log {id}` shows what it ran"
                )),
            }
        }
        said
    }
}

/// An id `new_session_id` makes: digits, a dash, eight hex digits.
fn is_session_id(id: &str) -> bool {
    id.split_once('-').is_some_and(|(secs, random)| {
        !secs.is_empty()
            && secs.bytes().all(|b| b.is_ascii_digit())
            && random.len() == 8
            && random.bytes().all(|b| b.is_ascii_hexdigit())
    })
}

/// Settles session `id` when nothing holds it: `None` while it runs; else what was done (empty
/// when its log owed nothing).
async fn settle_one(env: &Env, id: &str) -> Result<Option<Vec<String>>, String> {
    let dir = env.store.session_dir(id);
    let path = dir.join(LOG_FILE);
    if !path.is_file() {
        return Ok(Some(Vec::new()));
    }
    let lock = match SessionLock::acquire(&dir, Wait::No) {
        Ok(lock) => lock,
        Err(LockError::Held { .. }) => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let read = stream_log(&path).map_err(|e| e.to_string())?;
    if !is_client_session(&read.start) {
        return Ok(Some(Vec::new()));
    }
    let recovery = recover_tail(&read.tail, read.tail_opens_in_turn);
    if recovery.steps.is_empty() && read.torn.is_none() {
        return Ok(Some(Vec::new()));
    }
    let start = read.start.clone();
    let loaded = super::recorded::load_recorded(env.clone(), &start, Box::new(NoOneToAsk))
        .await
        .map_err(|e| format!("its preset no longer loads ({e})"))?;
    let writer = LogWriter::reopen_streamed(&path, &read)
        .map_err(|e| format!("cannot reopen {}: {e}", path.display()))?;
    let log = SessionLog::from_state(writer, read.state);
    let provider = Box::new(NoModel::new(&start.model));
    let session = Session::new(loaded, provider, log, start, path.clone(), lock, None);
    let agent = session.agent(&Quiet);
    let mut said = agent.remove_interrupted_temps(&recovery.interrupted);
    let written = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let mut answered = 0;
    for step in recovery.steps {
        let body = match step {
            Settle::Append(body) => body,
            Settle::Rerun(call) => client_gone(&call),
        };
        answered += usize::from(matches!(body, crate::log::Body::ToolResult { .. }));
        agent.log.append(body).map_err(written)?;
    }
    agent.log.sync().map_err(written)?;
    if answered > 0 {
        said.push(format!(
            "session {id} (a `{}` that was killed): {answered} call(s) left without a result \
             were recorded as such; `paddock log {id}` shows them",
            session.start.model
        ));
    }
    Ok(Some(said))
}

#[cfg(test)]
mod tests {
    use super::is_session_id;

    #[test]
    fn only_the_ids_paddock_makes_are_settled() {
        assert!(is_session_id(&super::super::new_session_id()));
        assert!(is_session_id("1764950000-0a1b2c3d"));
        for not in ["", "-0a1b2c3d", "12-0a1b2c3", "12-0a1b2c3g", "../12-0a1b2c3d", "x-0a1b2c3d"] {
            assert!(!is_session_id(not), "{not}");
        }
    }
}

