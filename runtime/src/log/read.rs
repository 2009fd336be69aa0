//! The log reader (L2, L8): every line an event, in sequence, with its calls and results paired
//! (`check`); otherwise the log is refused with the line and what is wrong. Only a last line
//! without its newline is torn (a crash mid-write): it is reported, not returned, and
//! `LogWriter::reopen` drops it. A whole line that does not parse is damage wherever it is.
//! Reading never changes the file.

use std::path::Path;

use super::check::check;
use super::event::Event;

/// A log as read from disk.
#[derive(Debug)]
pub struct LogRead {
    pub events: Vec<Event>,
    /// Bytes up to the end of the last whole event.
    pub good_len: u64,
    /// A last line without its newline, cut short by a crash.
    pub torn: Option<String>,
}

/// A log that cannot be trusted.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("cannot read session log {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "{path}:{line}: {problem}. The log is damaged, so paddock will neither guess nor change it: inspect the file, or start a new session"
    )]
    Damaged {
        path: String,
        line: usize,
        problem: String,
    },
    #[error("{path}: the log is empty or does not start with session/start")]
    NoStart { path: String },
}

/// Reads and checks every event; see the module doc.
pub fn read_log(path: &Path) -> Result<LogRead, LogError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| LogError::Io {
        path: shown.clone(),
        source,
    })?;
    let damaged = |line, problem| LogError::Damaged {
        path: shown.clone(),
        line,
        problem,
    };
    let mut events = Vec::new();
    let mut good_len = 0u64;
    let mut torn = None;
    let mut rest = &bytes[..];
    let mut line_no = 0;
    while !rest.is_empty() {
        line_no += 1;
        let Some(at) = rest.iter().position(|&b| b == b'\n') else {
            torn = Some(String::from_utf8_lossy(rest).into_owned());
            break;
        };
        let line = &rest[..at];
        rest = &rest[at + 1..];
        let event = serde_json::from_slice::<Event>(line)
            .map_err(|e| damaged(line_no, format!("not a paddock event ({e})")))?;
        events.push(event);
        good_len += at as u64 + 1;
    }
    if events.is_empty() {
        return Err(LogError::NoStart { path: shown });
    }
    check(&events).map_err(|(line, problem)| damaged(line, problem))?;
    Ok(LogRead {
        events,
        good_len,
        torn,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::event::{Body, Source};

    fn start() -> Body {
        crate::log::event::test_start()
    }

    fn line(seq: u64, body: Body) -> String {
        serde_json::to_string(&Event {
            seq,
            ts_ms: 1,
            body,
        })
        .unwrap()
    }

    fn user(text: &str) -> Body {
        Body::UserMessage { images: Vec::new(),
            text: text.into(),
            source: Source::User,
        }
    }

    fn refused(text: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(&path, text).unwrap();
        let error = read_log(&path).unwrap_err().to_string();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            text,
            "never rewritten"
        );
        error
    }

    #[test]
    fn a_bad_line_in_the_middle_is_refused_with_its_line_number() {
        let text = format!(
            "{}\ngarbage\n{}\n",
            line(1, start()),
            line(2, user("later"))
        );
        let error = refused(&text);
        assert!(
            error.contains("events.jsonl:2: not a paddock event"),
            "{error}"
        );
    }

    #[test]
    fn a_whole_but_bad_last_line_is_damage_not_a_torn_line() {
        let text = format!("{}\n{{\"seq\":2,\"garbage\n", line(1, start()));
        let error = refused(&text);
        assert!(error.contains(":2: not a paddock event"), "{error}");
    }

    #[test]
    fn only_a_last_line_without_its_newline_is_torn() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let whole = format!("{}\n", line(1, start()));
        // Even a cut that happens to parse is torn: its newline never made it.
        std::fs::write(&path, format!("{whole}{}", line(2, user("cut")))).unwrap();
        let read = read_log(&path).unwrap();
        assert_eq!(read.events.len(), 1);
        assert_eq!(read.good_len, whole.len() as u64);
        assert!(read.torn.is_some());
    }

    #[test]
    fn a_duplicated_or_deleted_line_is_refused_by_its_sequence_number() {
        let (one, two, three) = (line(1, start()), line(2, user("a")), line(3, user("b")));
        let duplicated = refused(&format!("{one}\n{two}\n{two}\n{three}\n"));
        assert!(
            duplicated.contains(":3: sequence number 2 where 3 was expected"),
            "{duplicated}"
        );
        assert!(duplicated.contains("duplicated"), "{duplicated}");
        let deleted = refused(&format!("{one}\n{three}\n"));
        assert!(
            deleted.contains(":2: sequence number 3 where 2 was expected"),
            "{deleted}"
        );
        assert!(deleted.contains("deleted"), "{deleted}");
    }

    #[test]
    fn an_empty_log_has_no_start() {
        let error = refused("");
        assert!(
            error.contains("does not start with session/start"),
            "{error}"
        );
    }
}
