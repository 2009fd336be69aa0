//! `paddock log` (M2, L1): show one session's events, or list the sessions: date,
//! working directory, first message, turns, stop reason, cost, newest first; `--json` prints
//! one object per session. The list reads each session's small index (`log::session_index`),
//! which is rebuilt from the log when it is missing or stale, so listing costs what it shows.
//! `--atif` prints the session as one ATIF-v1.8 trajectory (`log::trajectory_of_log`).
//! A session directory without a readable log (a start that failed or was killed before its
//! `session/start` was in place, or one starting right now) is listed too, as `no log`, with
//! who last took its lock: a harness never finds a directory the list skipped.

use clap::Args;

use super::log_view::print_log;
use super::report::{CommandResult, Failure};
use super::style::{json_for_terminal, sanitize};
use super::{Env, Exit};
use paddock::log::{
    LOG_FILE, SessionIndex, read_log, recorded_holder, session_index, trajectory_of_log,
};
use paddock_types::stamp::rfc3339_ms;

#[derive(Args)]
pub struct LogArgs {
    /// The session id; omit it with --list.
    session: Option<String>,
    /// Print the events as they are stored (JSON lines); with --list, one object per session.
    #[arg(long)]
    json: bool,
    /// List the sessions, newest first; subagents and forks under the session they came
    /// from.
    #[arg(long)]
    list: bool,
    /// With --list, list client sessions too (`mcp serve`, `tool call`: calls from a client,
    /// no conversation).
    #[arg(long, requires = "list")]
    all: bool,
    /// Print the session as one ATIF-v1.8 trajectory (JSON), the format evaluation harnesses
    /// read (Harbor, Docent).
    #[arg(long, conflicts_with_all = ["json", "list"])]
    atif: bool,
}

/// `paddock log`.
pub async fn log(args: LogArgs) -> CommandResult {
    let env = Env::open().map_err(|e| Failure::usage(format!("{e:#}")))?;
    let sessions = env.store.root().join("sessions");
    if args.list {
        return Ok(list(&sessions, args.json, args.all));
    }
    let Some(session) = args.session else {
        return Err(Failure::usage("give a session id, or --list to see them"));
    };
    if session.contains('/') || session.starts_with('.') {
        return Err(Failure::usage(format!(
            "`{session}` is not a session id (ids are like 1796185742-7124); \
             `paddock log --list` shows them"
        )));
    }
    let path = sessions.join(&session).join(LOG_FILE);
    if args.atif {
        print_trajectory(&path).map_err(Failure::usage)?;
        return Ok(Exit::Ok);
    }
    if args.json {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display())))?;
        print!("{}", json_for_terminal(&text));
        return Ok(Exit::Ok);
    }
    let read = read_log(&path).map_err(Failure::usage)?;
    print_log(&read.events);
    if read.torn.is_some() {
        println!("(the last line is torn; `paddock resume {session}` drops it)");
    }
    Ok(Exit::Ok)
}

/// `--atif`: the session as one ATIF-v1.8 trajectory on stdout.
fn print_trajectory(log: &std::path::Path) -> Result<(), String> {
    let trajectory = trajectory_of_log(log).map_err(|e| e.to_string())?;
    let json = serde_json::to_string_pretty(&trajectory)
        .map_err(|e| format!("cannot write the trajectory: {e}"))?;
    println!("{}", json_for_terminal(&json));
    Ok(())
}

/// One row of `log --list`: a session, or a directory whose log cannot be read.
enum Listed {
    Session(Box<SessionIndex>),
    NoLog {
        session: String,
        /// When the directory was last changed, in milliseconds since the epoch.
        changed_ms: u64,
        why: String,
    },
}

impl Listed {
    fn of(dir: &std::path::Path) -> Listed {
        match session_index(dir) {
            Ok(index) => Listed::Session(Box::new(index)),
            Err(e) => {
                let changed_ms = std::fs::metadata(dir)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_millis() as u64);
                let holder = recorded_holder(dir)
                    .map_or_else(String::new, |h| format!("; its lock was last taken by {h}"));
                let why = match dir.join(LOG_FILE).exists() {
                    true => format!("the log cannot be read: {e}{holder}"),
                    false => format!(
                        "no log: a start that failed or was killed before its session/start \
                         was written, or one starting now{holder}"
                    ),
                };
                Listed::NoLog {
                    session: dir
                        .file_name()
                        .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                    changed_ms,
                    why,
                }
            }
        }
    }

    fn started_ms(&self) -> u64 {
        match self {
            Listed::Session(index) => index.started_ms,
            Listed::NoLog { changed_ms, .. } => *changed_ms,
        }
    }

    fn session(&self) -> &str {
        match self {
            Listed::Session(index) => &index.session,
            Listed::NoLog { session, .. } => session,
        }
    }
}

fn list(sessions: &std::path::Path, json: bool, all: bool) -> Exit {
    let mut found: Vec<Listed> = std::fs::read_dir(sessions)
        .map(|entries| {
            entries
                .flatten()
                .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
                .map(|entry| Listed::of(&entry.path()))
                .filter(|listed| all || !matches!(listed, Listed::Session(index) if index.client))
                .collect()
        })
        .unwrap_or_default();
    found.sort_by(|a, b| {
        b.started_ms()
            .cmp(&a.started_ms())
            .then(b.session().cmp(a.session()))
    });
    if json {
        for listed in &found {
            let line = match listed {
                Listed::Session(index) => serde_json::to_string(index),
                Listed::NoLog {
                    session,
                    changed_ms,
                    why,
                } => serde_json::to_string(&serde_json::json!({
                    "session": session,
                    "started_ms": changed_ms,
                    "no_log": why,
                })),
            };
            if let Ok(line) = line {
                println!("{}", json_for_terminal(&line));
            }
        }
        return Exit::Ok;
    }
    if found.is_empty() {
        println!("no sessions yet (paddock run TASK starts one)");
        return Exit::Ok;
    }
    let found = in_tree_order(found);
    println!(
        "{:<16}  {:<16}  {:>5}  {:<17}  {:>8}  {:<24}  first message",
        "started (UTC)", "session", "turns", "stop", "cost", "directory"
    );
    for (depth, listed) in found {
        match listed {
            Listed::Session(index) => {
                let stop = index.stop.map_or("-", |r| r.as_str());
                let under = |what: String| {
                    format!(
                        "{}└ {} ({what})",
                        "  ".repeat(depth.saturating_sub(1)),
                        index.session
                    )
                };
                let fork_point = |fork: &paddock::event::ForkLink| match (&fork.call, &fork.preset)
                {
                    (Some(call), _) => format!("call {call} of turn {}", fork.turn),
                    (None, Some(switch)) => format!(
                        "turn {}, preset {} -> {}",
                        fork.turn, switch.from, switch.to
                    ),
                    (None, None) => format!("turn {}", fork.turn),
                };
                let session = match (&index.parent, &index.forked_from) {
                    (Some(parent), _) => under(format!("task {}", parent.call)),
                    (None, Some(fork)) if depth > 0 => {
                        under(format!("fork at {}", fork_point(fork)))
                    }
                    (None, Some(fork)) => format!(
                        "{} (fork of {} at {})",
                        index.session,
                        fork.session,
                        fork_point(fork)
                    ),
                    (None, None) => index.session.clone(),
                };
                println!(
                    "{:<16}  {:<16}  {:>5}  {stop:<17}  {:>8}  {:<24}  {}",
                    utc_minute(index.started_ms),
                    sanitize(&session),
                    index.turns,
                    format!("${:.4}", index.cost_usd),
                    sanitize(&tail(&index.cwd, 24)),
                    sanitize(&one_line(index.first_message.as_deref().unwrap_or(""), 60)),
                );
            }
            Listed::NoLog {
                session,
                changed_ms,
                why,
            } => println!(
                "{:<16}  {:<16}  {:>5}  {:<17}  {:>8}  {:<24}  ({})",
                utc_minute(changed_ms),
                sanitize(&session),
                "-",
                "no log",
                "-",
                "-",
                sanitize(&why),
            ),
        }
    }
    Exit::Ok
}

/// The list with each subagent right under the session that started it (its `task` call),
/// and each fork under the session it forked from, children oldest first; each with its depth
/// (0 for a session a person started, or one whose parent is not listed).
fn in_tree_order(found: Vec<Listed>) -> Vec<(usize, Listed)> {
    let parent_of = |l: &Listed| match l {
        Listed::Session(index) => index
            .parent
            .as_ref()
            .map(|p| p.session.clone())
            .or_else(|| index.forked_from.as_ref().map(|f| f.session.clone())),
        Listed::NoLog { .. } => None,
    };
    let ids: Vec<String> = found.iter().map(|l| l.session().to_string()).collect();
    let (mut roots, mut children): (Vec<Listed>, Vec<Listed>) = found
        .into_iter()
        .partition(|l| parent_of(l).is_none_or(|p| !ids.contains(&p)));
    children.reverse();
    let mut out = Vec::new();
    let mut stack: Vec<(usize, Listed)> = roots.drain(..).rev().map(|l| (0, l)).collect();
    while let Some((depth, listed)) = stack.pop() {
        let id = listed.session().to_string();
        let (mine, rest): (Vec<Listed>, Vec<Listed>) = children
            .into_iter()
            .partition(|c| parent_of(c).as_deref() == Some(id.as_str()));
        children = rest;
        stack.extend(mine.into_iter().rev().map(|c| (depth + 1, c)));
        out.push((depth, listed));
    }
    out
}

/// `YYYY-MM-DD HH:MM` in UTC from milliseconds since the epoch.
fn utc_minute(ms: u64) -> String {
    let stamp = rfc3339_ms(ms);
    format!("{} {}", &stamp[..10], &stamp[11..16])
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
