//! The log writer: append-only JSONL (L1), one `write` per event, `sync` on demand.
//!
//! A log holds only whole lines. A failed append (a short write, then ENOSPC or EIO) is cut
//! back to the end of the last whole line before the error is returned; if even that fails,
//! the writer refuses every later append, so nothing is ever written after half a line, and
//! the next open (`reopen`) drops exactly that unfinished last line (L8). A new log comes into
//! existence with its `session/start` already in it (written aside, synced, renamed), so no
//! crash leaves an empty log.
//!
//! Test hook, only in builds with the `crash-points` feature (the test suite's): with it,
//! `PADDOCK_CRASH_AT_APPEND=N[:before|:torn|:after|:panic]` aborts the process at the Nth
//! append of this process (before writing it, after writing half of it, or after writing it;
//! or panics there instead of aborting), so the crash harness (`cargo xtask crash`) can stop
//! paddock at every log write. Without it the variable means nothing.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::event::{Body, Event};
use super::read::LogRead;

/// Appends events to one session's log. Each event is one `write` of one line; `sync` makes
/// everything written so far durable.
pub struct LogWriter {
    file: File,
    path: PathBuf,
    next_seq: u64,
    /// Bytes of whole lines in the file.
    len: u64,
    /// Set when a failed write could not be cut back: the file may end in half a line.
    broken: Option<String>,
}

impl LogWriter {
    /// Creates a new, empty log; fails if one exists at `path`.
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
        Ok(LogWriter::over(file, path, 1, 0))
    }

    /// Creates a new log whose first event is `first`, atomically: the line is written to a
    /// file beside it, synced, and renamed into place, so the log never exists without it.
    /// Private like `create`'s.
    pub fn start(path: &Path, first: Body) -> io::Result<(LogWriter, Event)> {
        let (writer, mut events) = LogWriter::start_with(path, first, Vec::new())?;
        Ok((writer, events.remove(0)))
    }

    /// `start` with `rest` after the first event, as they are (seqs from 2 and times kept: the
    /// history a session started under another preset goes on with); returns every event.
    pub fn start_with(
        path: &Path,
        first: Body,
        rest: Vec<Event>,
    ) -> io::Result<(LogWriter, Vec<Event>)> {
        let mut events = vec![stamp(1, first)];
        events.extend(rest);
        let len = LogWriter::create_whole(path, &events)?;
        let file = OpenOptions::new().append(true).open(path)?;
        let next = events.last().map_or(1, |e| e.seq + 1);
        Ok((LogWriter::over(file, path, next, len), events))
    }

    /// Creates a new log holding `events` as they are (seqs and times kept: a fork's copy of
    /// its parent's history), atomically as `start` does; returns its length.
    pub fn create_whole(path: &Path, events: &[Event]) -> io::Result<u64> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        if path.exists() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists", path.display()),
            ));
        }
        let mut lines = Vec::new();
        for event in events {
            lines.extend(line_of(event)?);
        }
        let aside = path.with_extension("jsonl.new");
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&aside)?;
        file.write_all(&lines)?;
        file.sync_all()?;
        std::fs::rename(&aside, path)?;
        File::open(dir)?.sync_all()?;
        Ok(lines.len() as u64)
    }

    /// Reopens a log that `read_log` has read: drops its torn last line, if any (and nothing
    /// else), and appends after its last event.
    pub fn reopen(path: &Path, read: &LogRead) -> io::Result<LogWriter> {
        let file = OpenOptions::new().append(true).open(path)?;
        if read.torn.is_some() {
            file.set_len(read.good_len)?;
            file.sync_all()?;
        }
        let next = read.events.last().map_or(1, |e| e.seq + 1);
        Ok(LogWriter::over(file, path, next, read.good_len))
    }

    /// `reopen` for a log that `stream_log` has read.
    pub fn reopen_streamed(path: &Path, read: &super::Streamed) -> io::Result<LogWriter> {
        let file = OpenOptions::new().append(true).open(path)?;
        if read.torn.is_some() {
            file.set_len(read.good_len)?;
            file.sync_all()?;
        }
        Ok(LogWriter::over(
            file,
            path,
            read.last_seq + 1,
            read.good_len,
        ))
    }

    /// Bytes of whole lines in the file.
    pub fn bytes(&self) -> u64 {
        self.len
    }

    fn over(file: File, path: &Path, next_seq: u64, len: u64) -> LogWriter {
        LogWriter {
            file,
            path: path.to_path_buf(),
            next_seq,
            len,
            broken: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes one event and returns it. On failure the file is cut back to its last whole
    /// line; when that fails too, this and every later append is refused.
    pub fn append(&mut self, body: Body) -> io::Result<Event> {
        self.usable()?;
        let event = stamp(self.next_seq, body);
        let line = line_of(&event)?;
        crash_point(&mut self.file, &line);
        if let Err(error) = self.file.write_all(&line) {
            if let Err(cut) = self.file.set_len(self.len) {
                self.broken = Some(format!(
                    "a write failed ({error}) and cutting the log back to its last whole line failed too ({cut})"
                ));
            }
            return Err(error);
        }
        self.len += line.len() as u64;
        self.next_seq += 1;
        Ok(event)
    }

    /// Makes every event written so far durable (fsync). After a failed sync the kernel may
    /// have dropped the data, so the writer refuses further appends.
    pub fn sync(&mut self) -> io::Result<()> {
        self.usable()?;
        self.file.sync_data().inspect_err(|e| {
            self.broken = Some(format!("a sync failed ({e})"));
        })
    }

    fn usable(&self) -> io::Result<()> {
        match &self.broken {
            None => Ok(()),
            Some(why) => Err(io::Error::other(format!(
                "{why}; nothing more is written to {} in this process. `paddock resume` repairs it",
                self.path.display()
            ))),
        }
    }
}

fn stamp(seq: u64, body: Body) -> Event {
    Event {
        seq,
        ts_ms: paddock_types::stamp::now_ms(),
        body,
    }
}

fn line_of(event: &Event) -> io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(event).map_err(io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

/// Without the `crash-points` feature there is no hook.
#[cfg(not(feature = "crash-points"))]
fn crash_point(_file: &mut File, _line: &[u8]) {}

/// The crash harness's hook (see the module doc); does nothing unless the variable is set.
#[cfg(feature = "crash-points")]
fn crash_point(file: &mut File, line: &[u8]) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static APPENDS: AtomicU64 = AtomicU64::new(0);
    static AT: std::sync::OnceLock<Option<(u64, String)>> = std::sync::OnceLock::new();
    let Some((at, how)) = AT.get_or_init(|| {
        let spec = std::env::var("PADDOCK_CRASH_AT_APPEND").ok()?;
        let (n, how) = spec.split_once(':').unwrap_or((&spec, "before"));
        Some((n.parse().ok()?, how.to_string()))
    }) else {
        return;
    };
    if APPENDS.fetch_add(1, Ordering::SeqCst) + 1 != *at {
        return;
    }
    match how.as_str() {
        "torn" => {
            let _ = file.write_all(&line[..line.len() / 2]);
        }
        "after" => {
            let _ = file.write_all(line);
        }
        "panic" => panic!("PADDOCK_CRASH_AT_APPEND asked for a panic at append {at}"),
        _ => {}
    }
    std::process::abort();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::event::Source;
    use crate::log::read::read_log;

    fn start() -> Body {
        crate::log::event::test_start()
    }

    fn user(text: &str) -> Body {
        Body::UserMessage { images: Vec::new(),
            text: text.into(),
            source: Source::User,
        }
    }

    #[test]
    fn events_round_trip_with_sequence_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let (mut log, first) = LogWriter::start(&path, start()).unwrap();
        assert_eq!(first.seq, 1);
        log.append(user("hi")).unwrap();
        log.sync().unwrap();
        let read = read_log(&path).unwrap();
        assert_eq!(read.events.len(), 2);
        assert_eq!(read.events[1].seq, 2);
        assert_eq!(read.events[1].body, user("hi"));
        assert!(read.torn.is_none());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(r#""type":"user/message""#), "{text}");
        assert!(
            !path.with_extension("jsonl.new").exists(),
            "the start was renamed into place"
        );
        assert!(LogWriter::start(&path, start()).is_err(), "never clobbers");
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_truncated_on_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let (mut log, _) = LogWriter::start(&path, start()).unwrap();
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
    fn a_failed_append_that_cannot_be_cut_back_stops_every_later_append() {
        // /dev/full fails every write with ENOSPC: the kernel's own "disk full".
        let full = OpenOptions::new()
            .append(true)
            .open("/dev/full")
            .expect("/dev/full exists on Linux");
        let mut log = LogWriter::over(full, Path::new("/dev/full"), 7, 0);
        let error = log.append(user("lost")).unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::ENOSPC), "{error}");
        // Cutting /dev/full back is not possible either: the writer now refuses to go on
        // rather than write after what may be half a line.
        let refused = log.append(user("later")).unwrap_err().to_string();
        assert!(refused.contains("paddock resume"), "{refused}");
        assert_eq!(log.next_seq, 7, "no sequence number was used up");
    }
}
