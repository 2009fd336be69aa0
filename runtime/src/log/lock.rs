//! The session lock (L6): a session has one writer. Every process that appends to a session's
//! log (`run` and `chat` from its creation, `resume` before it reads the log for recovery)
//! first takes an exclusive `flock` on the session's `lock` file and holds it until it exits.
//! A second process is refused at once with who holds it (pid, command, since when), or waits
//! when asked to.
//!
//! `flock` belongs to the open file: the kernel releases it when the holder exits, however it
//! dies (a `kill -9` included), so a crashed session is never locked out. The file is opened
//! close-on-exec, so programs a tool starts never inherit the lock.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// The lock file's name inside a session directory.
pub const LOCK_FILE: &str = "lock";

/// An exclusive hold on one session; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct SessionLock {
    // Kept open: closing the file releases the lock.
    _file: File,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "session {session} is in use by another paddock process ({holder}); a session has one writer: wait for that process to end, or stop it"
    )]
    Held { session: String, holder: String },
    #[error("cannot lock session {path}: {source}")]
    Io { path: String, source: io::Error },
}

/// Whether to wait for a lock another process holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    No,
    Yes,
}

impl SessionLock {
    /// Takes the lock of the session in `dir` (created if missing), and records this
    /// process in it (pid, command line, when) for whoever is refused next.
    pub fn acquire(dir: &Path, wait: Wait) -> Result<SessionLock, LockError> {
        let path = dir.join(LOCK_FILE);
        let io_error = |source| LockError::Io {
            path: path.display().to_string(),
            source,
        };
        // Private, as the log's own directory is (it holds every tool result).
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io_error)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(io_error)?;
        if let Err(e) = flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
            if e.kind() != io::ErrorKind::WouldBlock {
                return Err(io_error(e));
            }
            if wait == Wait::No && !released_after_dead_holder(&mut file).map_err(io_error)? {
                return Err(LockError::Held {
                    session: dir
                        .file_name()
                        .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into()),
                    holder: live_holder(&mut file),
                });
            }
            flock(&file, libc::LOCK_EX).map_err(io_error)?;
        }
        let record = format!(
            "{}\n{}\n{}\n",
            std::process::id(),
            this_command(),
            paddock_types::stamp::now_ms()
        );
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(record.as_bytes()))
            .map_err(io_error)?;
        Ok(SessionLock { _file: file })
    }
}

/// How long a contender waits for a lock whose recorded holder is dead.
const DEAD_HOLDER_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Whether the lock, held by someone, is released within `DEAD_HOLDER_GRACE` because the
/// process its file records is dead. A killed holder's lock outlives it for as long as a
/// process it forked still has the file open: a program between `clone` and `exec` in the jail
/// (close-on-exec closes the file only at `exec`), which its death signal is about to end. A
/// `kill -9` and an immediate `resume` meet exactly that; the lock is free a moment later.
/// A live holder (or one not yet recorded) is not waited for. `Ok(true)`: the lock is taken.
fn released_after_dead_holder(file: &mut File) -> io::Result<bool> {
    if !recorded_pid(file).is_some_and(has_ended) {
        return Ok(false);
    }
    let until = std::time::Instant::now() + DEAD_HOLDER_GRACE;
    while std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
        match flock(file, libc::LOCK_EX | libc::LOCK_NB) {
            Ok(()) => return Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(false)
}

/// Who the lock file of the session in `dir` says took it last (pid, command, since when),
/// read without taking the lock, so it never stands in a session's way. `None` without a lock
/// file.
pub fn recorded_holder(dir: &Path) -> Option<String> {
    let mut file = File::open(dir.join(LOCK_FILE)).ok()?;
    Some(holder(&mut file))
}

/// This process's command line as the lock records it: the program's file name and its
/// arguments, each cut to 40 characters, at most 120 in all, on one line.
fn this_command() -> String {
    let mut args = std::env::args();
    let program = args
        .next()
        .map(|p| {
            Path::new(&p)
                .file_name()
                .map_or(p.clone(), |n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    let line = std::iter::once(program)
        .chain(args)
        .map(|a| a.chars().take(40).collect::<String>())
        .collect::<Vec<_>>()
        .join(" ");
    line.chars().filter(|c| !c.is_control()).take(120).collect()
}

/// The pid the lock file records, if any.
fn recorded_pid(file: &mut File) -> Option<libc::pid_t> {
    let mut text = String::new();
    let _ = file.rewind().and_then(|()| file.read_to_string(&mut text));
    text.lines()
        .next()
        .and_then(|l| l.trim().parse::<libc::pid_t>().ok())
        .filter(|pid| *pid > 0)
}

fn has_ended(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 sends nothing; it only asks whether the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// Who holds the lock, for a refusal: the recorded holder while it lives. A recorded holder
/// that has ended is not the one in the way, and the refusal says so rather than name it.
fn live_holder(file: &mut File) -> String {
    let recorded = holder(file);
    match recorded_pid(file) {
        Some(pid) if has_ended(pid) => format!(
            "one that has not recorded itself: the last recorded holder, {recorded}, has \
             ended; a program it started may still hold the lock for a moment, or another \
             paddock took it just now"
        ),
        _ => recorded,
    }
}

/// Who holds the lock, as its lock file says: ``pid N: `COMMAND`, since TIME``. The holder writes
/// it just after taking the lock, so a contender that reads in between finds nothing.
fn holder(file: &mut File) -> String {
    let mut text = String::new();
    let _ = file.rewind().and_then(|()| file.read_to_string(&mut text));
    let mut lines = text.lines();
    let Some(pid) = lines.next().and_then(|l| l.trim().parse::<u32>().ok()) else {
        return "pid not yet recorded".into();
    };
    let command = lines.next().unwrap_or("").trim();
    let since = lines.next().and_then(|l| l.trim().parse::<u64>().ok());
    match (command.is_empty(), since) {
        (false, Some(ms)) => format!(
            "pid {pid}: `{command}`, since {}",
            paddock_types::stamp::rfc3339_ms(ms)
        ),
        _ => format!("pid {pid}"),
    }
}

fn flock(file: &File, operation: libc::c_int) -> io::Result<()> {
    loop {
        // SAFETY: the descriptor is open for the duration of the call (borrowed from `file`);
        // flock has no other precondition.
        let rc = unsafe { libc::flock(file.as_raw_fd(), operation) };
        if rc == 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_pid_and_admitted_after_release() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("s1");
        let first = SessionLock::acquire(&session, Wait::No).unwrap();
        // flock conflicts between open file descriptions, even within one process.
        let refused = SessionLock::acquire(&session, Wait::No).unwrap_err();
        let said = refused.to_string();
        assert!(
            said.contains(&format!("pid {}", std::process::id())) && said.contains("one writer"),
            "{said}"
        );
        assert!(said.contains("session s1"), "{said}");
        // The holder's command (this test binary) and since when.
        assert!(
            said.contains(": `") && said.contains(", since 20"),
            "{said}"
        );
        drop(first);
        let _again = SessionLock::acquire(&session, Wait::No).unwrap();
        let recorded = std::fs::read_to_string(session.join(LOCK_FILE)).unwrap();
        let lines: Vec<&str> = recorded.lines().collect();
        assert_eq!(lines.len(), 3, "{recorded}");
        assert_eq!(lines[0], std::process::id().to_string());
        assert!(lines[2].parse::<u64>().is_ok(), "{recorded}");
    }

    #[test]
    fn a_refusal_does_not_name_a_recorded_holder_that_has_ended() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        std::fs::write(dir.path().join(LOCK_FILE), format!("{dead}\nold paddock run\n1000\n"))
            .unwrap();
        // Another open file description holds the lock without recording itself, as a holder
        // between its flock and its record does.
        let held = File::open(dir.path().join(LOCK_FILE)).unwrap();
        flock(&held, libc::LOCK_EX).unwrap();
        let refused = SessionLock::acquire(dir.path(), Wait::No).unwrap_err().to_string();
        assert!(refused.contains("has ended"), "{refused}");
        assert!(refused.contains("not recorded itself"), "{refused}");
    }

    #[test]
    fn a_waiting_holder_gets_the_lock_when_it_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("s2");
        let first = SessionLock::acquire(&session, Wait::No).unwrap();
        let waiter = {
            let session = session.clone();
            std::thread::spawn(move || SessionLock::acquire(&session, Wait::Yes).is_ok())
        };
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(
            !waiter.is_finished(),
            "the waiter waits while the lock is held"
        );
        drop(first);
        assert!(waiter.join().unwrap());
    }
}
