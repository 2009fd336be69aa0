//! The crash harness (L2, L6-L8, X4; `cargo xtask crash N`, and a short run in CI): a
//! scripted multi-turn task that reads, writes and edits files and runs a side-effecting
//! allow-listed program (`sh` appending a tag to `markers.log`), run through the real
//! `paddock` binary against the scripted model server. Each trial kills paddock at a random
//! point (SIGKILL after a random delay) or at a chosen log write (`PADDOCK_CRASH_AT_APPEND`:
//! before it, halfway through it, or after it), resumes (and sometimes kills the resume too),
//! and then checks from the outside:
//!
//! - `double_exec`: a program run whose tag appears twice in `markers.log`;
//! - `torn_files`: a user file that is neither its old nor its new content (empty, cut, mixed);
//! - `invalid_histories`: a log the strict reader refuses, a call left without its result, a
//!   session that did not end completed, a model request without the user's task, or a
//!   resume without a MESSAGE that ran turns on a session with no task;
//! - `out_of_order`: a request whose tool results do not follow their calls' order;
//! - `unrecoverable`: a session the final resume could not finish;
//! - `leftover_temps`: a temporary file of a killed write still beside its target after the
//!   final resume.
//!
//! `task` holds the script and the files' valid states; this module runs the trials.

mod rng;
mod task;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::scripted::ScriptedServer;

pub use rng::Rng;
pub use task::{FILES, script};

/// What the trials found; `Display` is the `CRASH ...` line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    pub trials: usize,
    pub double_exec: usize,
    pub torn_files: usize,
    pub invalid_histories: usize,
    pub out_of_order: usize,
    pub unrecoverable: usize,
    /// Trials where the chosen crash point was never reached (the run ended first).
    pub not_crashed: usize,
    /// Temporary files a killed write left beside its target after the final resume (it
    /// removes those of the writes the crash interrupted).
    pub leftover_temps: usize,
}

impl Report {
    /// Every count but `trials` (and `not_crashed`) is zero.
    pub fn clean(&self) -> bool {
        self.double_exec
            + self.torn_files
            + self.invalid_histories
            + self.out_of_order
            + self.unrecoverable
            + self.leftover_temps
            == 0
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CRASH trials={} double_exec={} torn_files={} invalid_histories={} out_of_order={} unrecoverable={} leftover_temps={}",
            self.trials,
            self.double_exec,
            self.torn_files,
            self.invalid_histories,
            self.out_of_order,
            self.unrecoverable,
            self.leftover_temps
        )
    }
}

/// How one process is stopped.
#[derive(Debug, Clone)]
enum Kill {
    None,
    /// SIGKILL after this long.
    After(Duration),
    /// Abort at the Nth log append of the process, `before`, `torn` or `after` it.
    AtAppend(u64, &'static str),
}

/// The harness's fixed surroundings: a data directory shared by every trial (so plugins are
/// compiled once), the preset, the scripted server, and the binary.
pub struct Harness {
    paddock: PathBuf,
    root: tempfile::TempDir,
    server: ScriptedServer,
    /// Appends and wall time of an uninterrupted run, to spread the crash points over.
    appends: u64,
    duration: Duration,
    pub verbose: bool,
    /// A trial failed: keep its project and the sessions for inspection.
    failed: std::sync::atomic::AtomicBool,
}

impl Drop for Harness {
    fn drop(&mut self) {
        if self.failed.load(std::sync::atomic::Ordering::Relaxed) {
            self.root.disable_cleanup(true);
            eprintln!(
                "crash-harness: kept {} (sessions in home/sessions)",
                self.root.path().display()
            );
        }
    }
}

impl Harness {
    /// Starts the server and calibrates with one clean run.
    pub async fn new(paddock: &Path) -> Result<Harness, String> {
        let mut root = tempfile::tempdir().map_err(|e| e.to_string())?;
        if std::env::var_os("CRASH_KEEP").is_some() {
            eprintln!("crash-harness: keeping {}", root.path().display());
            root.disable_cleanup(true);
        }
        std::fs::create_dir_all(root.path().join("home")).map_err(|e| e.to_string())?;
        std::fs::write(root.path().join("crash.toml"), task::PRESET).map_err(|e| e.to_string())?;
        let server = ScriptedServer::start_by_history(task::script())
            .await
            .map_err(|e| e.to_string())?;
        let mut harness = Harness {
            paddock: paddock.to_path_buf(),
            root,
            server,
            appends: 0,
            duration: Duration::ZERO,
            verbose: false,
            failed: std::sync::atomic::AtomicBool::new(false),
        };
        // Twice: the first run compiles the plugins into the shared cache.
        for _ in 0..2 {
            let project = harness.project(0)?;
            let before = harness.sessions();
            let started = Instant::now();
            let out = harness
                .paddock(&project, &harness.run_args(0), &Kill::None)
                .await;
            harness.duration = started.elapsed();
            if out.status.code() != Some(0) {
                return Err(format!("the uninterrupted run failed: {}", text(&out)));
            }
            let log = harness
                .new_log(&before)
                .ok_or("the uninterrupted run left no log")?;
            let lines = std::fs::read_to_string(&log).map_err(|e| e.to_string())?;
            harness.appends = lines.lines().count() as u64 - 1;
            let _ = std::fs::remove_dir_all(&project);
        }
        harness.server.take_requests();
        Ok(harness)
    }

    /// Runs `trials` trials with crash points drawn from `seed`.
    pub async fn run(&self, trials: usize, seed: u64) -> Report {
        let mut rng = Rng::new(seed);
        let mut report = Report::default();
        let mut at_append = 0;
        for trial in 1..=trials {
            report.trials += 1;
            // Half the trials stop at a log write, going through every write in turn (before
            // it, halfway through it, after it); the first stops before the user's message.
            let kill = if trial % 2 == 1 {
                at_append += 1;
                self.nth_append(at_append - 1)
            } else {
                self.pick(&mut rng)
            };
            let found = self.trial(trial, &kill, &mut rng).await;
            if self.verbose || !found.clean() {
                eprintln!("trial {trial} ({kill:?}): {found:?}");
            }
            report.double_exec += found.double_exec;
            report.torn_files += found.torn_files;
            report.invalid_histories += found.invalid_histories;
            report.out_of_order += found.out_of_order;
            report.unrecoverable += found.unrecoverable;
            report.not_crashed += found.not_crashed;
            report.leftover_temps += found.leftover_temps;
        }
        report
    }

    /// The `k`th crash point at a log write, counting through all of them.
    fn nth_append(&self, k: u64) -> Kill {
        let appends = self.appends.max(1);
        let how = ["before", "torn", "after"][((k / appends) % 3) as usize];
        Kill::AtAppend(1 + k % appends, how)
    }

    /// A random crash point: at a log write, or after a random time.
    fn pick(&self, rng: &mut Rng) -> Kill {
        if rng.below(2) == 0 {
            let how = ["before", "torn", "after"][rng.below(3) as usize];
            Kill::AtAppend(1 + rng.below(self.appends), how)
        } else {
            let ms = self.duration.as_millis() as u64;
            Kill::After(Duration::from_millis(rng.below(ms + 1)))
        }
    }

    /// One trial: run with `kill`, resume until the session is finished, check.
    async fn trial(&self, trial: usize, kill: &Kill, rng: &mut Rng) -> Report {
        let mut found = Report::default();
        let Ok(project) = self.project(trial) else {
            found.unrecoverable = 1;
            return found;
        };
        let before = self.sessions();
        let first = self.paddock(&project, &self.run_args(trial), kill).await;
        if first.status.code().is_some() && !matches!(kill, Kill::None) {
            found.not_crashed = 1;
        }
        let mut finished = first.status.code() == Some(0);
        // A resume may itself be killed (at most twice); the last one runs to the end.
        for attempt in 0..3 {
            if finished {
                break;
            }
            let Some(log) = self.new_log(&before) else {
                // Killed before the session existed: nothing ran. Start it again.
                let again = self
                    .paddock(&project, &self.run_args(trial), &Kill::None)
                    .await;
                finished = again.status.code() == Some(0);
                continue;
            };
            let id = session_id(&log);
            let mut args = vec!["resume".to_string(), id];
            if !has_user_message(&log) {
                // No task reached the log: resume without a MESSAGE must refuse.
                let refused = self.paddock(&project, &args, &Kill::None).await;
                if refused.status.code() != Some(2) || !text(&refused).contains("MESSAGE") {
                    found.invalid_histories = 1;
                }
                args.push(task::task(trial));
            }
            let kill = if attempt < 2 && rng.below(3) == 0 {
                self.pick(rng)
            } else {
                Kill::None
            };
            let out = self.paddock(&project, &args, &kill).await;
            finished = out.status.code() == Some(0);
            if !finished && matches!(kill, Kill::None) {
                if self.verbose {
                    eprintln!("trial {trial}: resume failed: {}", text(&out));
                }
                break;
            }
        }
        let log = self.new_log(&before);
        task::check(
            &project,
            log.as_deref(),
            trial,
            finished,
            &self.server,
            &mut found,
        );
        if found.clean() && std::env::var_os("CRASH_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&project);
        } else if !found.clean() {
            self.failed
                .store(true, std::sync::atomic::Ordering::Relaxed);
            eprintln!("trial {trial}: kept {}", project.display());
        }
        found
    }

    fn project(&self, trial: usize) -> Result<PathBuf, String> {
        let dir = self.root.path().join(format!("trial-{trial}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("work")).map_err(|e| e.to_string())?;
        for (name, content) in task::initial_files() {
            std::fs::write(dir.join("work").join(name), content).map_err(|e| e.to_string())?;
        }
        Ok(dir)
    }

    /// Every session in the shared data directory.
    fn sessions(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.root.path().join("home/sessions"))
            .map(|entries| entries.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    }

    /// The log of the session created since `before` was listed, if one was.
    fn new_log(&self, before: &[PathBuf]) -> Option<PathBuf> {
        self.sessions()
            .into_iter()
            .filter(|dir| !before.contains(dir))
            .map(|dir| dir.join("events.jsonl"))
            .find(|log| log.is_file())
    }

    fn run_args(&self, trial: usize) -> Vec<String> {
        vec![
            "run".into(),
            task::task(trial),
            "--preset".into(),
            self.root.path().join("crash.toml").display().to_string(),
            "--base-url".into(),
            self.server.openai_base_url(),
            "--model".into(),
            "scripted".into(),
        ]
    }

    /// Runs paddock in the trial's project and stops it as `kill` says.
    async fn paddock(&self, project: &Path, args: &[String], kill: &Kill) -> Output {
        let mut cmd = Command::new(&self.paddock);
        cmd.args(args)
            .current_dir(project.join("work"))
            .env("PADDOCK_HOME", self.root.path().join("home"))
            .env("NO_COLOR", "1")
            .env_remove("PADDOCK_BASE_URL")
            .env_remove("PADDOCK_MODEL")
            .env_remove("PADDOCK_API_KEY")
            .stdin(Stdio::null());
        if let Kill::AtAppend(n, how) = kill {
            cmd.env("PADDOCK_CRASH_AT_APPEND", format!("{n}:{how}"));
        }
        let after = match kill {
            Kill::After(delay) => Some(*delay),
            _ => None,
        };
        let (out, err) = (project.join("stdout.txt"), project.join("stderr.txt"));
        tokio::task::spawn_blocking(move || {
            let files =
                std::fs::File::create(&out).and_then(|o| Ok((o, std::fs::File::create(&err)?)));
            let (stdout, stderr) = files.expect("output files");
            let mut child = cmd
                .stdout(stdout)
                .stderr(stderr)
                .spawn()
                .expect("spawn paddock");
            let started = Instant::now();
            let status = loop {
                if let Some(status) = child.try_wait().expect("wait for paddock") {
                    break status;
                }
                if after.is_some_and(|delay| started.elapsed() >= delay) {
                    // SIGKILL; the child is not reaped yet, so its pid is still its own.
                    let _ = child.kill();
                    break child.wait().expect("wait for paddock");
                }
                std::thread::sleep(Duration::from_millis(2));
            };
            Output {
                status,
                stdout: std::fs::read(&out).unwrap_or_default(),
                stderr: std::fs::read(&err).unwrap_or_default(),
            }
        })
        .await
        .expect("join")
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn session_id(log: &Path) -> String {
    log.parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn has_user_message(log: &Path) -> bool {
    std::fs::read_to_string(log).is_ok_and(|t| {
        t.lines().any(|l| {
            serde_json::from_str::<serde_json::Value>(l)
                .is_ok_and(|e| e["type"] == "user/message" && e["data"]["source"] == "user")
        })
    })
}
