//! Sessions that stay flat as they grow, measured through the real binary against
//! a loopback model server (`loopback.rs`):
//!
//! - `rt_10k_over_first`: one `paddock run` of ~2,000 model requests, each making one
//!   `read_file` call, with a window large enough that nothing is compacted (the worst case: the
//!   request grows to ~1.3 MB): the time between two requests arriving at the server near 10k
//!   events, over the same at the start (medians of ten). `rt_10k_over_first_32k`: the same
//!   session with a 32k-token window, compacted as a real one is. `rt_10k_paddock_over_first`
//!   (and `_32k`): the same ratio of paddock's own part of each round trip, from the reply
//!   written to the next request's first byte; the rest is the transfer of the request (it
//!   grows with the request, as it would for any server) and the bench server's time.
//!   `rt_first_ms` and `rt_10k_ms` are those round trips; `rt_10k_bare_ms` is a bare client's
//!   (a request of the last size written at once, the reply read) to a server like it: what
//!   the transfer alone costs on this machine, which the bar cannot go below;
//!   `rt_10k_reqwest_ms` the same request through reqwest (paddock's HTTP client) alone.
//! - `log_list_1000_ms`: `paddock log --list` over 1,000 sessions, one of them the 1M-event
//!   one, once each has its index (bar ≤ 50 ms).
//! - `first_request_ms` (`first.rs`): a first run through the binary on an empty code cache,
//!   to its first request; `first_request_warm_ms` the same cached.
//! - `resume_1m_ms`, `resume_1m_rss_over_log`: a generated session of 1M events (the log's own
//!   types, compactions every 40 steps as a long session has them), resumed with a message:
//!   the time from starting `paddock resume` to its first request reaching the server, and the
//!   process's peak resident memory (VmHWM) over the log's size.

#[path = "first.rs"]
mod first;
#[path = "../common/long_session.rs"]
mod long_session;
#[path = "loopback.rs"]
mod loopback;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use loopback::{Loopback, Reply};
use paddock::log::{Body, LOG_FILE, PluginHash};
use paddock::model::{ProviderConfig, ProviderKind};

#[path = "../common/paddock_bin.rs"]
mod paddock_bin;

/// How a summary request starts (`paddock::agent::COMPACT_SYSTEM`).
const SUMMARY_MARK: &str = "You summarize the earlier part";
const COMPACT_NOW_MARK: &str = "[paddock: this conversation is being compacted";

pub fn measure() -> Vec<(String, String)> {
    let rt = round_trip(1_000_000_000);
    let compacting = round_trip(32_000);
    let (resume_ms, rss_over_log, list_ms) = resume_1m();
    let (first_ms, first_warm_ms) = first::first_request();
    vec![
        ("first_request_ms".into(), format!("{first_ms:.0}")),
        (
            "first_request_warm_ms".into(),
            format!("{first_warm_ms:.0}"),
        ),
        ("rt_10k_over_first".into(), format!("{:.2}", rt.end_to_end)),
        (
            "rt_10k_paddock_over_first".into(),
            format!("{:.2}", rt.paddock),
        ),
        ("rt_first_ms".into(), format!("{:.2}", rt.first_ms)),
        ("rt_10k_ms".into(), format!("{:.2}", rt.last_ms)),
        ("rt_10k_bare_ms".into(), format!("{:.2}", rt.bare_last_ms)),
        (
            "rt_10k_reqwest_ms".into(),
            format!("{:.2}", rt.client_last_ms),
        ),
        (
            "rt_10k_over_first_32k".into(),
            format!("{:.2}", compacting.end_to_end),
        ),
        (
            "rt_10k_paddock_over_first_32k".into(),
            format!("{:.2}", compacting.paddock),
        ),
        ("resume_1m_ms".into(), format!("{resume_ms:.0}")),
        ("log_list_1000_ms".into(), format!("{list_ms:.0}")),
        (
            "resume_1m_rss_over_log".into(),
            format!("{rss_over_log:.2}"),
        ),
    ]
}

fn paddock(home: &Path, cwd: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(paddock_bin::paddock_bin());
    cmd.args(args)
        .current_dir(cwd)
        .env("PADDOCK_HOME", home)
        .env("NO_COLOR", "1")
        .env_remove("PADDOCK_BASE_URL")
        .env_remove("PADDOCK_MODEL")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Round trips at the start of a session and near 10k events, with a context window of
/// `window` tokens (the server counts four bytes a token, and answers summary requests).
fn round_trip(window: u64) -> RoundTrip {
    const REQUESTS: usize = 2_050;
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let server = Loopback::start(move |_, body| {
        // A summary request ends with paddock's instruction (on the session's own prefix) or
        // opens with its own system prompt (in rounds): looking only at the head and the tail
        // keeps this server's own time flat.
        let head = &body[..body.len().min(16 << 10)];
        let tail = &body[body.len().saturating_sub(16 << 10)..];
        let has = |part: &[u8], mark: &str| part.windows(mark.len()).any(|w| w == mark.as_bytes());
        if has(head, SUMMARY_MARK) || has(tail, COMPACT_NOW_MARK) {
            return Reply::Text("Summary: notes.txt was read many times.".into());
        }
        let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if n < REQUESTS {
            Reply::Call(
                format!("call_{n}"),
                "read_file",
                r#"{"path":"notes.txt"}"#.into(),
            )
        } else {
            Reply::Text("done".into())
        }
    });
    let work = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        work.path().join("notes.txt"),
        "a line of notes, as a project file has them\n".repeat(8),
    )
    .expect("notes");
    let preset = format!(
        "[model]\nprovider = \"openai\"\nmodel = \"bench\"\nbase_url = \"{}\"\n\
         context_window = {window}\n\n\
         [limits]\nmax_turns = 100_000\nmax_tokens = 100_000_000_000\nmax_wall_secs = 36_000\n\n\
         [plugins.fs]\nsource = \"builtin:fs\"\n\
         mounts = [{{ host = \".\", guest = \"/workspace\", mode = \"ro\" }}]\n\n\
         [tools]\nenable = [\"read_file\"]\n",
        server.base_url()
    );
    std::fs::write(work.path().join("bench.toml"), preset).expect("preset");
    let status = paddock(
        home.path(),
        work.path(),
        &[
            "run",
            "--preset",
            "bench.toml",
            "read notes.txt again and again",
        ],
    )
    .status()
    .expect("run paddock");
    assert!(status.success(), "the round-trip session failed: {status}");
    let arrivals = server.arrivals();
    assert!(arrivals.len() > REQUESTS);
    let events = count_events(home.path());
    let gaps: Vec<Duration> = arrivals.windows(2).map(|w| w[1] - w[0]).collect();
    let first = median(gaps[1..11].to_vec());
    let last = median(gaps[gaps.len() - 10..].to_vec());
    // The same round trips split: paddock's own time (the reply written to the next request's
    // first byte: reading the stream, the tool call, the log, the next body), the transfer of
    // the request, and this server's time.
    let timings = server.timings();
    let split = |range: std::ops::Range<usize>| {
        let part = |f: &dyn Fn(usize) -> Duration| median(range.clone().map(f).collect());
        (
            part(&|i| timings[i + 1].first_byte - timings[i].replied),
            part(&|i| timings[i + 1].arrived - timings[i + 1].first_byte),
            part(&|i| timings[i + 1].replied - timings[i + 1].arrived),
        )
    };
    let n = timings.len();
    let (own_first, send_first, server_first) = split(1..11);
    let (own_last, send_last, server_last) = split(n - 11..n - 1);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "round trip (window {window} tokens): {:.2} ms at requests 2-12, {:.2} ms at the last ten ({} events, last request {} KiB)",
        ms(first),
        ms(last),
        events,
        server.last_size() / 1024
    );
    println!(
        "  of which paddock {:.2} -> {:.2} ms, sending the request {:.2} -> {:.2} ms, the bench's server {:.2} -> {:.2} ms",
        ms(own_first),
        ms(own_last),
        ms(send_first),
        ms(send_last),
        ms(server_first),
        ms(server_last)
    );
    // What sending requests of those sizes costs by itself: a bare client to a server like it.
    let size = |range: std::ops::Range<usize>| {
        let mut sizes: Vec<usize> = timings[range].iter().map(|t| t.size).collect();
        sizes.sort();
        sizes[sizes.len() / 2]
    };
    let bare = Loopback::start(|_, _: &[u8]| Reply::Text("done".into()));
    let (bare_first, bare_last) = (
        bare.bare_round_trip(size(2..12)),
        bare.bare_round_trip(size(n - 10..n)),
    );
    let (client_first, client_last) = (
        bare.client_round_trip(size(2..12)),
        bare.client_round_trip(size(n - 10..n)),
    );
    println!(
        "  a bare client sending requests of the same sizes: {:.2} -> {:.2} ms a round trip; \
         reqwest alone: {:.2} -> {:.2} ms",
        ms(bare_first),
        ms(bare_last),
        ms(client_first),
        ms(client_last)
    );
    RoundTrip {
        end_to_end: last.as_secs_f64() / first.as_secs_f64(),
        paddock: own_last.as_secs_f64() / own_first.as_secs_f64(),
        first_ms: ms(first),
        last_ms: ms(last),
        bare_last_ms: ms(bare_last),
        client_last_ms: ms(client_last),
    }
}

/// Round trips near 10k events over those at the start: end to end (what the bar reads), and
/// paddock's own part of them.
struct RoundTrip {
    end_to_end: f64,
    paddock: f64,
    first_ms: f64,
    last_ms: f64,
    /// A bare client's round trip with a request of the last size, and reqwest's.
    bare_last_ms: f64,
    client_last_ms: f64,
}

fn count_events(home: &Path) -> usize {
    let sessions = home.join("sessions");
    std::fs::read_dir(&sessions)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join(LOG_FILE)).ok())
        .map(|t| t.lines().count())
        .sum()
}

/// Resume of a generated 1M-event session: time to the first request, peak RSS over log size.
fn resume_1m() -> (f64, f64, f64) {
    let server = Loopback::start(|_, _: &[u8]| Reply::Text("done".into()));
    let work = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("tempdir");
    let dir = home.path().join("sessions/long");
    std::fs::create_dir_all(&dir).expect("session dir");
    let mut events = long_session::events(1_000_000, 40, 300);
    let config = ProviderConfig::new(ProviderKind::Openai, "bench", Some(&server.base_url()));
    // A preset must give the model a tool; the session records the plugin it ran with, as
    // resume checks.
    let fs = paddock_sandbox::builtin::builtin("fs").expect("the fs built-in");
    if let Body::SessionStart(start) = &mut events[0].body {
        start.cwd = work.path().display().to_string();
        start.model = "bench".into();
        start.model_config = Some(config);
        start.preset_text = "[limits]\nmax_turns = 100_000_000\nmax_tokens = 100_000_000_000_000\n\
                             max_wall_secs = 100_000_000\n\n[plugins.fs]\nsource = \"builtin:fs\"\n\
                             mounts = [{ host = \".\", guest = \"/workspace\", mode = \"ro\" }]\n"
            .into();
        start.plugins = vec![PluginHash {
            name: "fs".into(),
            sha256: paddock_types::stamp::sha256_hex(fs),
        }];
    }
    let path = dir.join(LOG_FILE);
    {
        use std::io::Write;
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).expect("log"));
        for event in &events {
            serde_json::to_writer(&mut out, event).expect("event");
            out.write_all(b"\n").expect("newline");
        }
    }
    drop(events);
    let log_len = std::fs::metadata(&path).expect("log").len();
    let mut samples = Vec::new();
    let mut rss = 0u64;
    for _ in 0..3 {
        let started = Instant::now();
        let child = paddock(home.path(), work.path(), &["resume", "long", "go on"])
            .spawn()
            .expect("resume");
        let (status, peak) = wait_with_rss(child);
        assert!(status == 0, "resume failed with status {status}");
        let first = server
            .arrivals()
            .last()
            .copied()
            .expect("a request arrived");
        samples.push(first - started);
        rss = rss.max(peak);
    }
    let first = median(samples);
    println!(
        "resume of {} events ({} MiB): first request after {:.0} ms, peak RSS {} MiB",
        1_000_000,
        log_len >> 20,
        first.as_secs_f64() * 1e3,
        rss >> 20
    );
    let list = log_list_1000(home.path(), work.path());
    (first.as_secs_f64() * 1e3, rss as f64 / log_len as f64, list)
}

/// `log_list_1000_ms`: `paddock log --list` over 1,000 sessions, one of them the 1M-event
/// session just resumed, the rest short generated ones. The first listing writes the index
/// of each session that has none (a session paddock wrote itself has one); the figure is the
/// median of the listings after it, which read only the indexes.
fn log_list_1000(home: &Path, cwd: &Path) -> f64 {
    let mut events = long_session::events(60, 40, 300);
    if let Body::SessionStart(start) = &mut events[0].body {
        start.cwd = cwd.display().to_string();
    }
    let mut log = Vec::new();
    for event in &events {
        serde_json::to_writer(&mut log, event).expect("event");
        log.push(b'\n');
    }
    for n in 0..999 {
        let dir = home.join(format!("sessions/short{n:03}"));
        std::fs::create_dir_all(&dir).expect("session dir");
        std::fs::write(dir.join(LOG_FILE), &log).expect("log");
    }
    let list = || {
        let started = Instant::now();
        let status = paddock(home, cwd, &["log", "--list"])
            .status()
            .expect("log --list");
        assert!(status.success(), "log --list failed: {status}");
        started.elapsed()
    };
    let unindexed = list();
    let listed = median((0..5).map(|_| list()).collect());
    println!(
        "log --list of 1,000 sessions (one of 1M events): {:.0} ms, the first listing (writing 999 indexes) {:.0} ms",
        listed.as_secs_f64() * 1e3,
        unindexed.as_secs_f64() * 1e3
    );
    listed.as_secs_f64() * 1e3
}

/// Waits for `pid`; its exit status and peak resident memory in bytes. The peak is the
/// process's own `VmHWM` (since its exec), sampled every millisecond until it exits: wait4's
/// `ru_maxrss` would count this large bench process, which the child was forked from.
fn wait_with_rss(mut child: std::process::Child) -> (i32, u64) {
    let pid = child.id();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watching = std::sync::Arc::clone(&stop);
    let sampler = std::thread::spawn(move || {
        let mut peak = 0u64;
        while !watching.load(std::sync::atomic::Ordering::SeqCst) {
            let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
                break;
            };
            let Some(kib) = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            else {
                break;
            };
            peak = peak.max(kib * 1024);
            std::thread::sleep(Duration::from_millis(1));
        }
        peak
    });
    let status = child.wait().expect("wait for resume");
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let code = status.code().unwrap_or(-1);
    (code, sampler.join().unwrap_or(0))
}
