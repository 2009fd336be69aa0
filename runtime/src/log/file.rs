//! The log file: append-only JSONL (L1), read back with a torn last line dropped (L2).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::event::{Body, Event};

/// Appends events to one session's log. Each event is one `write` of one line; `sync` makes
/// everything written so far durable.
pub struct LogWriter {
    file: File,
    path: PathBuf,
    next_seq: u64,
}

impl LogWriter {
    /// Creates a new log; fails if one exists at `path`.
    /// The session's directory is created private (0700) and the log readable by its owner
    /// only (0600): it holds every tool result the session saw.
    pub fn create(path: &Path) -> io::Result<LogWriter> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        if let Some(dir) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(0o600)
            .open(path)?;
        Ok(LogWriter {
            file,
            path: path.to_path_buf(),
            next_seq: 1,
        })
    }

    /// Reopens a log that `read_log` has read: drops its torn tail, if any, and appends after
    /// its last event.
    pub fn reopen(path: &Path, read: &LogRead) -> io::Result<LogWriter> {
        let file = OpenOptions::new().append(true).open(path)?;
        if read.torn.is_some() {
            file.set_len(read.good_len)?;
            file.sync_all()?;
        }
        Ok(LogWriter {
            file,
            path: path.to_path_buf(),
            next_seq: read.events.last().map_or(1, |e| e.seq + 1),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes one event and returns it.
    pub fn append(&mut self, body: Body) -> io::Result<Event> {
        let event = Event {
            seq: self.next_seq,
            ts_ms: now_ms(),
            body,
        };
        let mut line = serde_json::to_vec(&event).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.next_seq += 1;
        Ok(event)
    }

    /// Makes every event written so far durable (fsync).
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A log as read from disk.
#[derive(Debug)]
pub struct LogRead {
    pub events: Vec<Event>,
    /// Bytes up to the end of the last whole event.
    pub good_len: u64,
    /// A last line that was cut short by a crash (no newline, or not a whole event).
    pub torn: Option<String>,
}

/// A log that cannot be trusted: a line in the middle is not an event.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("cannot read session log {path}: {source}")]
    Io { path: String, source: io::Error },
    #[error(
        "{path}:{line}: not a paddock event ({problem}); the log is damaged before its last line, so paddock will not guess. Inspect it, or start a new session"
    )]
    Damaged {
        path: String,
        line: usize,
        problem: String,
    },
    #[error("{path}: the log is empty or does not start with session/start")]
    NoStart { path: String },
}

/// Reads every event. Only the last line may be torn (a crash mid-write); it is reported in
/// `torn` and excluded. Any other bad line is an error with its line number.
pub fn read_log(path: &Path) -> Result<LogRead, LogError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| LogError::Io {
        path: shown.clone(),
        source,
    })?;
    let mut events = Vec::new();
    let mut good_len = 0u64;
    let mut torn = None;
    let mut rest = &bytes[..];
    let mut line_no = 0;
    while !rest.is_empty() {
        line_no += 1;
        let (line, complete, used) = match memchr_newline(rest) {
            Some(at) => (&rest[..at], true, at + 1),
            None => (rest, false, rest.len()),
        };
        rest = &rest[used..];
        let is_last = rest.is_empty();
        match serde_json::from_slice::<Event>(line) {
            Ok(event) if complete => {
                events.push(event);
                good_len += used as u64;
            }
            parsed => {
                if is_last {
                    torn = Some(String::from_utf8_lossy(line).into_owned());
                } else {
                    let problem = match parsed {
                        Err(e) => e.to_string(),
                        Ok(_) => "no line end".into(),
                    };
                    return Err(LogError::Damaged {
                        path: shown,
                        line: line_no,
                        problem,
                    });
                }
            }
        }
    }
    if !matches!(events.first().map(|e| &e.body), Some(Body::SessionStart(_))) {
        return Err(LogError::NoStart { path: shown });
    }
    Ok(LogRead {
        events,
        good_len,
        torn,
    })
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::event::{SessionStart, Source};

    fn start() -> Body {
        Body::SessionStart(Box::new(SessionStart {
            session: "s".into(),
            preset: "default".into(),
            preset_origin: "<embedded>".into(),
            preset_text: String::new(),
            preset_from: None,
            preset_sha256: None,
            cwd: "/".into(),
            plugins: Vec::new(),
            model: "m".into(),
            model_config: None,
            system: String::new(),
        }))
    }

    fn user(text: &str) -> Body {
        Body::UserMessage {
            text: text.into(),
            source: Source::User,
        }
    }

    #[test]
    fn events_round_trip_with_sequence_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = LogWriter::create(&path).unwrap();
        log.append(start()).unwrap();
        log.append(user("hi")).unwrap();
        log.sync().unwrap();
        let read = read_log(&path).unwrap();
        assert_eq!(read.events.len(), 2);
        assert_eq!(read.events[1].seq, 2);
        assert_eq!(read.events[1].body, user("hi"));
        assert!(read.torn.is_none());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(r#""type":"user/message""#), "{text}");
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_truncated_on_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = LogWriter::create(&path).unwrap();
        log.append(start()).unwrap();
        log.append(user("kept")).unwrap();
        drop(log);
        let whole = std::fs::metadata(&path).unwrap().len();
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(br#"{"seq":3,"ts_ms":1,"type":"user/mes"#)
            .unwrap();
        let read = read_log(&path).unwrap();
        assert_eq!(read.events.len(), 2);
        assert_eq!(read.good_len, whole);
        assert!(read.torn.as_deref().unwrap().contains("user/mes"));
        let mut log = LogWriter::reopen(&path, &read).unwrap();
        log.append(user("after")).unwrap();
        let again = read_log(&path).unwrap();
        assert!(again.torn.is_none());
        assert_eq!(again.events.len(), 3);
        assert_eq!(again.events[2].seq, 3);
    }

    #[test]
    fn a_bad_line_in_the_middle_is_an_error_with_its_line_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let line = |seq, body| {
            serde_json::to_string(&Event {
                seq,
                ts_ms: 1,
                body,
            })
            .unwrap()
        };
        let text = format!(
            "{}\ngarbage\n{}\n",
            line(1, start()),
            line(2, user("later"))
        );
        std::fs::write(&path, text).unwrap();
        let error = read_log(&path).unwrap_err().to_string();
        assert!(
            error.contains("events.jsonl:2: not a paddock event"),
            "{error}"
        );
    }
}
