//! A child process on a pseudo-terminal, for tests of what paddock does on a terminal (T2,
//! T3): approval questions, trust questions, what reaches the screen. Standard input, output
//! and error of the child are the pty's slave side; the test reads everything the child writes
//! from the master side and types into it.
//!
//! The bytes also drive a terminal emulator (`vt100`), so a test can read the screen as a
//! person would see it (`screen_text`), and the harness answers the cursor-position queries a
//! line editor sends (`ESC [ 6 n`), as a real terminal does.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const ROWS: u16 = 40;
pub const COLS: u16 = 200;

/// The cursor-position query (DSR 6).
const CURSOR_QUERY: &[u8] = b"\x1b[6n";

pub struct Pty {
    pub child: Child,
    master: File,
    /// The thread that reads the master side: done once everything the child wrote is read.
    reader: std::thread::JoinHandle<()>,
    screen: Arc<Mutex<Vec<u8>>>,
    emulator: Arc<Mutex<vt100::Parser>>,
}

impl Pty {
    /// Starts `cmd` on a new pty, as the session leader with the pty as controlling terminal.
    pub fn spawn(mut cmd: Command) -> std::io::Result<Pty> {
        let (mut master, mut slave) = (0, 0);
        let size = libc::winsize {
            ws_row: ROWS,
            ws_col: COLS,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty writes two new descriptors into the two integers; the name and
        // termios pointers may be null, and `size` outlives the call.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just opened by openpty and are owned by nothing else.
        let (master, slave) = unsafe { (File::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        cmd.stdin(Stdio::from(slave.try_clone()?))
            .stdout(Stdio::from(slave.try_clone()?))
            .stderr(Stdio::from(slave));
        // SAFETY: setsid and ioctl(TIOCSCTTY) are async-signal-safe; they make the child a
        // session leader whose controlling terminal is its standard input, the pty.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        // The parent's copies of the slave side go with `cmd`.
        drop(cmd);
        let screen = Arc::new(Mutex::new(Vec::new()));
        let emulator = Arc::new(Mutex::new(vt100::Parser::new(
            nonzero(ROWS),
            nonzero(COLS),
            0,
        )));
        let mut reader = master.try_clone()?;
        let mut answers = master.try_clone()?;
        let sink = Arc::clone(&screen);
        let terminal = Arc::clone(&emulator);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            // EIO once the child and every holder of the slave side are gone.
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let bytes = &buf[..n];
                sink.lock().unwrap().extend_from_slice(bytes);
                let mut rest = bytes;
                while let Some(at) = find(rest, CURSOR_QUERY) {
                    let end = at + CURSOR_QUERY.len();
                    let mut term = terminal.lock().unwrap();
                    term.process(&rest[..end]);
                    let (row, col) = term.screen().cursor_position();
                    let _ = write!(answers, "\x1b[{};{}R", row + 1, col + 1);
                    rest = &rest[end..];
                }
                terminal.lock().unwrap().process(rest);
            }
        });
        Ok(Pty {
            child,
            master,
            reader,
            screen,
            emulator,
        })
    }

    /// Everything the child wrote so far, as bytes (escape sequences included).
    pub fn screen(&self) -> Vec<u8> {
        self.screen.lock().unwrap().clone()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.screen()).into_owned()
    }

    /// The screen as a person sees it now (rows of text, trailing spaces trimmed).
    pub fn screen_text(&self) -> String {
        self.emulator.lock().unwrap().screen().contents()
    }

    /// Waits until the screen as seen shows `needle`; panics after `timeout`.
    pub fn expect_on_screen(&self, needle: &str, timeout: Duration) {
        let started = Instant::now();
        while !self.screen_text().contains(needle) {
            assert!(
                started.elapsed() < timeout,
                "the screen never showed {needle:?}; it shows:\n{}",
                self.screen_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Types `text` as is (no Enter): keys, escape sequences.
    pub fn type_keys(&mut self, text: &str) {
        self.master
            .write_all(text.as_bytes())
            .expect("type into the pty");
        self.master.flush().expect("flush the pty");
    }

    /// Waits until the screen shows `needle` `count` times; panics after `timeout` with the
    /// screen so far.
    pub fn expect_n(&self, needle: &str, count: usize, timeout: Duration) {
        let started = Instant::now();
        while self.text().matches(needle).count() < count {
            assert!(
                started.elapsed() < timeout,
                "the terminal never showed {count} x {needle:?}; it shows:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn expect(&self, needle: &str) {
        self.expect_n(needle, 1, Duration::from_secs(60));
    }

    /// Types `line` and Enter.
    pub fn type_line(&mut self, line: &str) {
        self.master
            .write_all(format!("{line}\r").as_bytes())
            .expect("type into the pty");
        self.master.flush().expect("flush the pty");
    }

    /// Sends Ctrl-D (end of input at the start of a line).
    pub fn end_input(&mut self) {
        self.master.write_all(&[4]).expect("type Ctrl-D");
    }

    /// Waits for the child to exit; kills it after `timeout`.
    pub fn wait(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the child") {
                // What the child wrote just before it exited may still be in the pty: read
                // until the reader meets the end (every holder of the slave side gone), so
                // the screen a test reads next is complete. Bounded: a process the child
                // left behind may hold the slave side open.
                let exited = Instant::now();
                while !self.reader.is_finished() && exited.elapsed() < Duration::from_secs(5) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                return status;
            }
            if started.elapsed() > timeout {
                let _ = self.child.kill();
                panic!(
                    "the child did not exit in {timeout:?}; screen:\n{}",
                    self.text()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

impl Drop for Pty {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn nonzero(n: u16) -> std::num::NonZero<u16> {
    std::num::NonZero::new(n).expect("a terminal has rows and columns")
}
