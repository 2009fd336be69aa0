//! `paddock mcp serve --listen` under load from clients without the token: idle connections
//! past the connection limit evict the oldest idle ones and a client with the token is still
//! served at once; a connection that sends nothing is closed by the header-read timeout;
//! when accept runs out of descriptors the server logs one line and backs off instead of
//! spinning; and the soft descriptor limit is raised to the hard one at start.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

use super::{Listening, TOKEN, post_status, served_project};

/// The server's connection limit (`cli/src/mcp_admit.rs`).
const MAX_CONNECTIONS: usize = 256;

/// The server's header-read timeout (`cli/src/mcp_http.rs`): a client stuck behind the
/// idle connections would wait for them to time out.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How many of `streams` the server has closed (a read sees the end, or a reset).
fn closed(streams: &[TcpStream]) -> usize {
    streams
        .iter()
        .filter(|stream| {
            stream.set_nonblocking(true).expect("nonblocking");
            match (&**stream).read(&mut [0u8; 1]) {
                Ok(0) => true,
                Ok(_) => false,
                Err(e) => e.kind() != ErrorKind::WouldBlock,
            }
        })
        .count()
}

/// The status of an `initialize` sent with the token.
fn served_with_token(addr: &str) -> u16 {
    let auth = format!("Bearer {TOKEN}");
    post_status(addr, &[("Host", addr), ("Authorization", &auth)])
}

fn accept_lines(server: &Listening) -> usize {
    let log = server.log.lock().expect("log");
    log.first
        .iter()
        .filter(|line| line.contains("cannot accept"))
        .count()
}

#[test]
fn four_hundred_idle_connections_without_the_token_leave_a_client_with_it_served_at_once() {
    let (project, preset) = served_project();
    let server = Listening::start(&project, &preset);
    let idle: Vec<TcpStream> = (0..400)
        .map(|_| TcpStream::connect(&server.addr).expect("connect"))
        .collect();
    let started = Instant::now();
    let status = served_with_token(&server.addr);
    let took = started.elapsed();
    assert_eq!(status, 200);
    // Served without waiting for the idle connections to time out. (Not a speed bar: on a
    // loaded two-core machine the first answer alone has taken just over a second.)
    assert!(
        took < HEADER_READ_TIMEOUT / 2,
        "a client with the token waited {took:?} behind 400 idle connections"
    );
    // The limit held: the oldest idle connections were closed to make room.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut gone = closed(&idle);
    while gone < idle.len() - MAX_CONNECTIONS && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        gone = closed(&idle);
    }
    assert!(
        gone >= idle.len() - MAX_CONNECTIONS,
        "only {gone} of 400 idle connections were closed: no connection limit"
    );
    let log = server.log.clone();
    server.stop();
    let log = log.lock().expect("log");
    assert!(
        log.lines < 100,
        "{} log lines: {:?}",
        log.lines,
        &log.first[..log.first.len().min(5)]
    );
}

#[test]
fn a_connection_that_sends_nothing_is_closed_by_the_header_read_timeout() {
    let (project, preset) = served_project();
    let server = Listening::start(&project, &preset);
    let mut silent = TcpStream::connect(&server.addr).expect("connect");
    silent
        .set_read_timeout(Some(Duration::from_secs(40)))
        .expect("timeout");
    let started = Instant::now();
    let read = silent.read(&mut [0u8; 1]);
    let took = started.elapsed();
    assert!(
        matches!(read, Ok(0)) || matches!(&read, Err(e) if e.kind() == ErrorKind::ConnectionReset),
        "a connection that sent nothing was still open after {took:?}: {read:?}"
    );
    assert!(took < Duration::from_secs(30), "closed only after {took:?}");
    server.stop();
}

/// The descriptors `pid` holds.
fn descriptors(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("/proc/PID/fd")
        .count() as u64
}

/// The CPU time `pid` has used (user and system).
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/PID/stat");
    // The fields after the command name (which may hold spaces), from field 3 on.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .expect("stat")
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    // SAFETY: sysconf reads a constant of the system.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_millis(ticks * 1000 / per_second)
}

#[test]
fn out_of_descriptors_the_accept_loop_logs_one_line_and_backs_off() {
    let (project, preset) = served_project();
    // What the server holds when idle, measured on an unconstrained run.
    let probe = Listening::start(&project, &preset);
    std::thread::sleep(Duration::from_millis(500));
    let baseline = descriptors(probe.child.id());
    probe.stop();
    let limit = baseline + 12;
    let server = Listening::start_with(&project, &preset, |command| {
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            command.pre_exec(move || {
                let nofile = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &nofile) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            })
        };
    });
    // More clients with the token than descriptors are left: once every descriptor holds an
    // authenticated connection, accept fails with nothing to evict, and keeps failing while
    // the rest wait in the backlog.
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n\r\n{body}",
        server.addr,
        body.len()
    );
    let held: Vec<TcpStream> = (0..40)
        .map(|_| {
            let mut stream = TcpStream::connect(&server.addr).expect("connect");
            stream.write_all(request.as_bytes()).expect("send");
            stream
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let pid = server.child.id();
    let before = cpu_time(pid);
    std::thread::sleep(Duration::from_secs(3));
    let used = cpu_time(pid) - before;
    eprintln!("CPU used in 3 s while accept kept failing: {used:?}");
    assert_eq!(
        accept_lines(&server),
        1,
        "{:?}",
        server.log.lock().expect("log").first
    );
    assert!(
        used < Duration::from_secs(1),
        "the server used {used:?} of CPU in 3 s while accept kept failing: it spins"
    );
    let lines = server.log.lock().expect("log").lines;
    assert!(lines < 100, "{lines} log lines");
    drop(held);
    server.stop();
}

/// The soft and hard `Max open files` of `pid`.
fn open_files_limits(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("/proc/PID/limits");
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("Max open files");
    let mut values = line["Max open files".len()..].split_whitespace();
    (
        values.next().expect("soft").to_string(),
        values.next().expect("hard").to_string(),
    )
}

#[test]
fn the_descriptor_limit_is_raised_to_the_hard_limit_at_start() {
    let (project, preset) = served_project();
    let server = Listening::start_with(&project, &preset, |command| {
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            command.pre_exec(|| {
                let nofile = libc::rlimit {
                    rlim_cur: 256,
                    rlim_max: 4096,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &nofile) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            })
        };
    });
    assert_eq!(
        open_files_limits(server.child.id()),
        ("4096".to_string(), "4096".to_string())
    );
    server.stop();
}
