//! The session's persistent shell: one interactive bash in the jail, reading paddock's
//! commands from a pipe, so a `cd`, a variable, a function, an alias or a job started with `&`
//! lasts from one command to the next, as in a terminal (the definitions it starts with are
//! in `init.bash`).
//!
//! Each command is sent as one line that `eval`s it (quoted byte for byte, so no text of it
//! is ever read as paddock's), then a line that marks its end: a token on the output pipe
//! after everything it printed, and its status with the names of the shell's functions and
//! aliases on a status pipe only the shell itself holds (commands run with it closed). What
//! the shell's background jobs print while no command runs is kept for the next report.
//!
//! What it does not do: decide what may run (`judge`), or outlive the session: the bash is PID
//! 1 of its PID namespace, so when it dies, or paddock does, every process it started dies too.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use paddock_shell_judge::Session;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;
use tokio::task::JoinHandle;

use super::run::{Ended, RunShared};
use super::transcript::Transcript;
use crate::capability::confined::{ConfinedRun, Program};

/// The definitions the shell reads first.
const INIT: &str = include_str!("init.bash");

/// The file the shell copies its state to after each command, in its temporary directory.
pub(super) const STATE_FILE: &str = ".paddock-shell-state";

/// How long a new shell may take to read its definitions.
const START_LIMIT: Duration = Duration::from_secs(10);

pub(super) struct MainShell {
    run: Option<ConfinedRun>,
    control: pipe::Sender,
    sink: Arc<Mutex<Sink>>,
    status: Arc<Status>,
    tasks: Vec<JoinHandle<()>>,
}

/// Where the shell's output goes: the running command's transcript until its end mark, the
/// rest (background jobs' output between commands) to `between`.
struct Sink {
    current: Option<(Vec<u8>, Arc<RunShared>)>,
    /// The end of the last read, which may be the start of the end mark.
    carry: Vec<u8>,
    between: Transcript,
}

/// What the status pipe told.
#[derive(Default)]
struct Status {
    busy: Mutex<Option<(u32, Arc<RunShared>)>>,
    names: Mutex<Session>,
    ready: tokio::sync::Notify,
    started: std::sync::atomic::AtomicBool,
    dead: std::sync::atomic::AtomicBool,
}

impl MainShell {
    /// Starts bash in `run`'s jail (started by the caller with `program`), reading its
    /// definitions first.
    pub async fn start(
        start: impl FnOnce(Program<'_>) -> Result<ConfinedRun, String>,
        bash: &Path,
        env: Vec<(String, std::ffi::OsString)>,
        cwd: &Path,
        between_cap: usize,
    ) -> Result<MainShell, String> {
        let args: Vec<String> = ["--noprofile", "--norc", "--noediting", "-i"]
            .map(String::from)
            .into();
        // No prompt, even before the definitions set one (bash takes them from its
        // environment): the status pipe carries paddock's lines only.
        let mut env = env;
        env.extend([("PS1".into(), "".into()), ("PS2".into(), "".into())]);
        let mut run = start(Program {
            path: bash,
            args: &args,
            env,
            cwd,
            stdin: true,
            terminal: None,
        })?;
        let child = run.child();
        let (Some(mut control), Some(output), Some(status_pipe)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the shell's pipes were not opened".into());
        };
        let sink = Arc::new(Mutex::new(Sink {
            current: None,
            carry: Vec::new(),
            between: Transcript::new(between_cap, None),
        }));
        let status = Arc::new(Status::default());
        let tasks = vec![
            tokio::spawn(read_output(output, sink.clone())),
            tokio::spawn(read_status(status_pipe, status.clone(), sink.clone())),
        ];
        let ready = status.ready.notified();
        control
            .write_all(INIT.as_bytes())
            .await
            .map_err(|e| format!("the shell did not start: {e}"))?;
        let _ = tokio::time::timeout(START_LIMIT, ready).await;
        if !status.started.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(format!(
                "the shell ({}) did not start within {}s",
                bash.display(),
                START_LIMIT.as_secs()
            ));
        }
        Ok(MainShell {
            run: Some(run),
            control,
            sink,
            status,
            tasks,
        })
    }

    /// Whether a command is running.
    pub fn busy(&self) -> Option<u32> {
        lock(&self.status.busy).as_ref().map(|(id, _)| *id)
    }

    /// Whether the shell has exited (or was killed).
    pub fn dead(&self) -> bool {
        self.status.dead.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The names that run a function or an alias in the shell, as of the last command's end.
    pub fn names(&self) -> Session {
        lock(&self.status.names).clone()
    }

    /// What the shell's jobs printed while no command ran.
    pub fn take_between(&self) -> super::transcript::Taken {
        lock(&self.sink).between.take()
    }

    pub fn group(&self) -> Option<Arc<paddock_jail::Group>> {
        self.run.as_ref().map(ConfinedRun::group)
    }

    pub fn pid(&self) -> Option<i32> {
        self.run.as_ref().map(ConfinedRun::pid)
    }

    /// Sends `command` to run as command `id`, in `workdir` for this command only.
    pub async fn send(
        &mut self,
        id: u32,
        command: &str,
        workdir: Option<&Path>,
        shared: Arc<RunShared>,
    ) -> Result<(), String> {
        let token = format!("\u{1}paddock-end-{}\u{1}", random_hex());
        {
            let mut sink = lock(&self.sink);
            sink.current = Some((token.clone().into_bytes(), shared.clone()));
        }
        *lock(&self.status.busy) = Some((id, shared));
        let dir = workdir
            .map(|d| ansi_c(d.as_os_str().as_encoded_bytes()))
            .unwrap_or_else(|| "''".into());
        let line = format!(
            "if __paddock_pre {dir}; then __paddock_ret; eval -- {} 8>&- 9>&- </dev/null; else \
             false; fi\n__paddock_post {id} {} $?\n",
            ansi_c(command.as_bytes()),
            ansi_c(token.as_bytes()),
        );
        self.control
            .write_all(line.as_bytes())
            .await
            .map_err(|e| format!("the shell is gone ({e}); the next command starts a new one"))
    }

    /// Removes protected paths the shell's processes created so far (K2).
    pub fn clean_up(&self) -> Result<Vec<String>, String> {
        match &self.run {
            Some(run) => run.undo_so_far(),
            None => Ok(Vec::new()),
        }
    }

    /// Ends the shell and every process of it; the last clean-up's notes.
    pub async fn finish(mut self) -> (Option<i32>, Result<Vec<String>, String>) {
        let Some(mut run) = self.run.take() else {
            return (None, Ok(Vec::new()));
        };
        // Exited on its own (`exit`): its status; killed otherwise.
        let code: Option<i32> = tokio::time::timeout(Duration::from_millis(200), run.wait())
            .await
            .unwrap_or_default();
        (code, run.finish().await)
    }
}

impl Drop for MainShell {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        // Dropping the run kills the shell and all it started, and cleans up after it.
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Sink {
    fn feed(&mut self, data: &[u8]) {
        let Some((token, run)) = &self.current else {
            self.between.push(data);
            return;
        };
        let mut pending = std::mem::take(&mut self.carry);
        pending.extend_from_slice(data);
        if let Some(at) = find(&pending, token) {
            run.push(&pending[..at]);
            run.complete_output();
            let rest = pending[at + token.len()..].to_vec();
            self.current = None;
            self.between.push(&rest);
            return;
        }
        // Hold back what could be the start of the mark: from its first byte (\x01) on, if
        // that is among the last bytes read.
        let window = pending.len().saturating_sub(token.len() - 1);
        let split = pending[window..]
            .iter()
            .position(|&b| b == token[0])
            .map_or(pending.len(), |at| window + at);
        run.push(&pending[..split]);
        self.carry = pending[split..].to_vec();
    }

    /// The command ended without its mark reaching the output (it closed the shell's
    /// output): what was held back is its.
    fn finish(&mut self, run: &Arc<RunShared>) {
        if let Some((_, current)) = &self.current
            && Arc::ptr_eq(current, run)
        {
            let carry = std::mem::take(&mut self.carry);
            current.push(&carry);
            self.current = None;
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

async fn read_output(mut output: pipe::Receiver, sink: Arc<Mutex<Sink>>) {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match output.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => lock(&sink).feed(&buf[..n]),
        }
    }
}

async fn read_status(pipe: pipe::Receiver, status: Arc<Status>, sink: Arc<Mutex<Sink>>) {
    let mut lines = BufReader::new(pipe);
    let mut names = Session::default();
    let mut line = Vec::new();
    loop {
        line.clear();
        match lines.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches('\n');
        if let Some(name) = text.strip_prefix("f ") {
            if !name.starts_with("__paddock_") {
                names.functions.insert(name.to_string());
            }
        } else if let Some(name) = text.strip_prefix("a ") {
            names.aliases.insert(name.to_string());
        } else if text == "ready" {
            status
                .started
                .store(true, std::sync::atomic::Ordering::SeqCst);
            status.ready.notify_waiters();
        } else if let Some(rest) = text.strip_prefix("done ") {
            let mut words = rest.split(' ');
            let id: Option<u32> = words.next().and_then(|w| w.parse().ok());
            let code: Option<i32> = words.next().and_then(|w| w.parse().ok());
            *lock(&status.names) = std::mem::take(&mut names);
            let finished = {
                let mut busy = lock(&status.busy);
                match (&*busy, id) {
                    (Some((running, _)), Some(id)) if *running == id => busy.take(),
                    _ => None,
                }
            };
            if let Some((_, run)) = finished {
                run.output_completed(Duration::from_millis(500)).await;
                lock(&sink).finish(&run);
                run.end(Ended {
                    status: code,
                    notes: Vec::new(),
                });
            }
        }
        // Anything else is bash's own word before it read the definitions (no job control
        // without a terminal): not paddock's to report.
    }
    status.dead.store(true, std::sync::atomic::Ordering::SeqCst);
    status.ready.notify_waiters();
    let finished = lock(&status.busy).take();
    if let Some((_, run)) = finished {
        run.output_completed(Duration::from_millis(200)).await;
        lock(&sink).finish(&run);
        run.end(Ended {
            status: None,
            notes: vec![
                "the shell exited (or was killed), and every job it ran with it; the next \
                 command starts a new shell, in the first mount, with nothing defined"
                    .into(),
            ],
        });
    }
}

/// `bytes` as a bash ANSI-C quoted word (`$'...'`): printable ASCII as itself, everything
/// else as `\xHH`, so bash reads back exactly these bytes and nothing in them is syntax.
pub(super) fn ansi_c(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 3);
    out.push_str("$'");
    for &b in bytes {
        if (0x20..0x7f).contains(&b) && b != b'\'' && b != b'\\' {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out.push('\'');
    out
}

/// 128 random bits in hex: a command cannot print its own end mark by chance.
fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // Never expected; the time still makes a collision with output unlikely.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        bytes = now.to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_c_quoting_reads_back_every_byte() {
        let all: Vec<u8> = (1..=255u8).collect();
        let quoted = ansi_c(&all);
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("printf %s {quoted}"))
            .output()
            .unwrap();
        assert_eq!(out.stdout, all);
    }

    #[test]
    fn output_without_the_marks_first_byte_is_not_held_back() {
        let run = Arc::new(RunShared::new(Transcript::new(1 << 10, None)));
        let mut sink = Sink {
            current: Some((b"\x01mark\x01".to_vec(), run.clone())),
            carry: Vec::new(),
            between: Transcript::new(1 << 10, None),
        };
        sink.feed(b"first\n");
        assert_eq!(run.take().text, "first\n");
    }

    #[test]
    fn the_end_mark_is_found_across_reads() {
        let run = Arc::new(RunShared::new(Transcript::new(1 << 10, None)));
        let token = b"\x01mark\x01".to_vec();
        let mut sink = Sink {
            current: Some((token, run.clone())),
            carry: Vec::new(),
            between: Transcript::new(1 << 10, None),
        };
        sink.feed(b"hello \x01ma");
        sink.feed(b"rk\x01late");
        assert_eq!(run.take().text, "hello ");
        assert_eq!(sink.between.take().text, "late");
        assert!(sink.current.is_none());
    }
}
