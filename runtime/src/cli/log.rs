//! `paddock log` (M2, L1): show one session's events, or list the sessions: date,
//! working directory, first message, turns, stop reason, cost, newest first; `--json` prints
//! one object per session. The list reads each session's small index (`log::session_index`),
//! which is rebuilt from the log when it is missing or stale, so listing costs what it shows.

use clap::Args;

use super::log_view::print_log;
use super::report::fail;
use super::style::{json_for_terminal, sanitize};
use super::{Env, Exit};
use crate::log::{LOG_FILE, SessionIndex, read_log, session_index};

#[derive(Args)]
pub struct LogArgs {
    /// The session id; omit it with --list.
    session: Option<String>,
    /// Print the events as they are stored (JSON lines); with --list, one object per session.
    #[arg(long)]
    json: bool,
    /// List the sessions, newest first.
    #[arg(long)]
    list: bool,
}

/// `paddock log`.
pub async fn log(args: LogArgs) -> Exit {
    let env = match Env::open() {
        Ok(env) => env,
        Err(e) => return fail(&format!("{e:#}")),
    };
    let sessions = env.store.root().join("sessions");
    if args.list {
        return list(&sessions, args.json);
    }
    let Some(session) = args.session else {
        return fail("give a session id, or --list to see them");
    };
    let path = sessions.join(&session).join(LOG_FILE);
    if args.json {
        return match std::fs::read_to_string(&path) {
            Ok(text) => {
                print!("{}", json_for_terminal(&text));
                Exit::Ok
            }
            Err(e) => fail(&format!("cannot read {}: {e}", path.display())),
        };
    }
    match read_log(&path) {
        Ok(read) => {
            print_log(&read.events);
            if read.torn.is_some() {
                println!("(the last line is torn; `paddock resume {session}` drops it)");
            }
            Exit::Ok
        }
        Err(e) => fail(&e.to_string()),
    }
}

fn list(sessions: &std::path::Path, json: bool) -> Exit {
    let mut found: Vec<SessionIndex> = std::fs::read_dir(sessions)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| session_index(&entry.path()).ok())
                .collect()
        })
        .unwrap_or_default();
    found.sort_by(|a, b| {
        b.started_ms
            .cmp(&a.started_ms)
            .then(b.session.cmp(&a.session))
    });
    if json {
        for index in &found {
            if let Ok(line) = serde_json::to_string(index) {
                println!("{}", json_for_terminal(&line));
            }
        }
        return Exit::Ok;
    }
    if found.is_empty() {
        println!("no sessions yet (paddock run TASK starts one)");
        return Exit::Ok;
    }
    println!(
        "{:<16}  {:<16}  {:>5}  {:<17}  {:>8}  {:<24}  first message",
        "started (UTC)", "session", "turns", "stop", "cost", "directory"
    );
    for index in found {
        let stop = index.stop.map_or("-", |r| r.as_str());
        println!(
            "{:<16}  {:<16}  {:>5}  {stop:<17}  {:>8}  {:<24}  {}",
            utc_minute(index.started_ms),
            sanitize(&index.session),
            index.turns,
            format!("${:.4}", index.cost_usd),
            sanitize(&tail(&index.cwd, 24)),
            sanitize(&one_line(index.first_message.as_deref().unwrap_or(""), 60)),
        );
    }
    Exit::Ok
}

/// `YYYY-MM-DD HH:MM` in UTC from milliseconds since the epoch.
fn utc_minute(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60
    )
}

/// The last `chars` characters of a path, with `…` when cut.
fn tail(text: &str, chars: usize) -> String {
    let count = text.chars().count();
    if count <= chars {
        return text.to_string();
    }
    let kept: String = text.chars().skip(count - (chars - 1)).collect();
    format!("…{kept}")
}

/// The first line of `text`, at most `chars` characters, with `…` when cut.
fn one_line(text: &str, chars: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    let cut: String = line.chars().take(chars).collect();
    if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_cuts() {
        assert_eq!(utc_minute(0), "1970-01-01 00:00");
        assert_eq!(utc_minute(1_796_116_404_000), "2026-12-01 09:13");
        assert_eq!(tail("/home/user/projects/paddock", 10), "…s/paddock");
        assert_eq!(one_line("fix it\nplease", 60), "fix it…");
    }
}
