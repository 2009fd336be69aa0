//! A small index per session: what `paddock log --list` shows, written beside
//! the log as `index.json` by the writer when a session starts and when a turn ends, so listing
//! reads a few hundred bytes per session instead of every log. It is a cache, never trusted
//! over the log: it records the log's length, and an index whose length is not the log's (a
//! session still running, a crash, an older paddock) is rebuilt from the log (streamed) and
//! written again. Nothing but the list reads it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::LOG_FILE;
use super::event::StopReason;
use super::read::LogError;
use super::state::SessionState;
use super::stream::stream_log;

/// The index's file name inside a session directory.
pub const INDEX_FILE: &str = "index.json";

/// One session as the list shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionIndex {
    pub session: String,
    /// Bytes of the log this index describes.
    pub log_len: u64,
    pub events: u64,
    /// Milliseconds since the epoch of the first and the latest event.
    pub started_ms: u64,
    pub last_ms: u64,
    pub cwd: String,
    pub model: String,
    pub first_message: Option<String>,
    pub turns: u64,
    /// How the last turn ended; `None` before the first, `interrupted` while one is open.
    pub stop: Option<StopReason>,
    pub model_requests: u64,
    pub tokens: u64,
    /// Input tokens read from the provider's prompt cache, and written to it (priced as such
    /// in `cost_usd`).
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
    pub cost_usd: f64,
    /// A subagent's parent session and `task` call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<super::event::ParentLink>,
    /// A fork's origin: the session and the turn it forked at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<super::event::ForkLink>,
    /// A client's session (`mcp serve`, `tool call`): calls from a client, no conversation.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub client: bool,
}

/// What client sessions record as their model: their calls come from a client (`mcp serve`,
/// `tool call`), not from a model.
pub const CLIENT_MODELS: [&str; 2] = ["mcp-client", "tool-call"];

impl SessionIndex {
    pub fn of(session: &str, state: &SessionState, log_len: u64) -> SessionIndex {
        SessionIndex {
            session: session.to_string(),
            log_len,
            events: state.events,
            started_ms: state.first_ms,
            last_ms: state.last_ms,
            cwd: state.cwd.clone(),
            model: state.model.clone(),
            first_message: state.first_message.clone(),
            turns: state.turns,
            stop: state.last_stop,
            model_requests: state.spent.model_requests,
            tokens: state.spent.tokens,
            cache_read_tokens: state.spent.cache_read_tokens,
            cache_write_tokens: state.spent.cache_write_tokens,
            cost_usd: state.spent.cost_usd,
            parent: state.parent.clone(),
            forked_from: state.forked_from.clone(),
            client: state.model_config.is_none() && CLIENT_MODELS.contains(&state.model.as_str()),
        }
    }

    /// Writes the index of `dir` (beside aside, then renamed: a reader sees a whole one or the
    /// one before). Private like the log.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let aside = dir.join(format!("{INDEX_FILE}.{}.new", std::process::id()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&aside)?;
        file.write_all(&serde_json::to_vec(self).map_err(std::io::Error::other)?)?;
        std::fs::rename(&aside, dir.join(INDEX_FILE))
    }
}

/// The index of the session in `dir`: the one on disk when it describes the log as it is, else
/// rebuilt from the log (and written back, when the directory allows).
pub fn session_index(dir: &Path) -> Result<SessionIndex, LogError> {
    let log = dir.join(LOG_FILE);
    let len = std::fs::metadata(&log)
        .map_err(|source| LogError::Io {
            path: log.display().to_string(),
            source,
        })?
        .len();
    if let Some(index) = std::fs::read(dir.join(INDEX_FILE))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<SessionIndex>(&bytes).ok())
        .filter(|index| index.log_len == len)
    {
        return Ok(index);
    }
    let streamed = stream_log(&log)?;
    let index = SessionIndex::of(&streamed.start.session, &streamed.state, streamed.good_len);
    if streamed.torn.is_none() {
        let _ = index.write(dir);
    }
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{Body, LogWriter, SessionLog, Source};

    #[test]
    fn the_writer_keeps_the_index_and_a_stale_one_is_rebuilt_from_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        let (writer, first) = LogWriter::start(&path, crate::log::event::test_start()).unwrap();
        let log = SessionLog::new(writer, vec![first]);
        log.append(Body::UserMessage { images: Vec::new(),
            text: "fix the build".into(),
            source: Source::User,
        })
        .unwrap();
        log.append(Body::TurnStart { turn: 1 }).unwrap();
        log.append_synced(Body::TurnEnd {
            reason: StopReason::Completed,
            detail: None,
        })
        .unwrap();
        let written: SessionIndex =
            serde_json::from_slice(&std::fs::read(dir.path().join(INDEX_FILE)).unwrap()).unwrap();
        assert_eq!(written.first_message.as_deref(), Some("fix the build"));
        assert_eq!(written.stop, Some(StopReason::Completed));
        assert_eq!(written.turns, 1);
        assert_eq!(session_index(dir.path()).unwrap(), written);
        // A turn starts after the index was written: the list rebuilds it from the log.
        log.append(Body::TurnStart { turn: 2 }).unwrap();
        let fresh = session_index(dir.path()).unwrap();
        assert_eq!(fresh.turns, 2);
        assert_eq!(fresh.stop, Some(StopReason::Interrupted));
        // A lying index (wrong length) is never believed.
        let mut lie = fresh.clone();
        lie.first_message = Some("lie".into());
        lie.log_len += 1;
        lie.write(dir.path()).unwrap();
        assert_eq!(
            session_index(dir.path()).unwrap().first_message.as_deref(),
            Some("fix the build")
        );
    }
}
