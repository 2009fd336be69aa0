//! What the chat's status line says while a turn runs: a spinner with the time
//! spent waiting for the model, that its text is arriving, each running tool with its own
//! elapsed time, and a retry with the time left before it. Pure: the caller passes the clock.

use std::time::{Duration, Instant};

use paddock_types::text::clip;

use crate::out::Progress;

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

#[derive(Debug, Default)]
pub struct Status {
    /// When the turn started; `None` while idle.
    busy_since: Option<Instant>,
    phase: Phase,
    /// Running calls: id, tool, since.
    tools: Vec<(String, String, Instant)>,
    /// A retry waiting: when it goes, and why.
    retry: Option<(Instant, String)>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq)]
enum Phase {
    #[default]
    Idle,
    Waiting(Instant),
    Streaming,
    Calls(Instant),
}

impl Status {
    pub fn busy(&self) -> bool {
        self.busy_since.is_some()
    }

    pub fn apply(&mut self, progress: Progress, now: Instant) {
        if progress != Progress::Idle && self.busy_since.is_none() {
            self.busy_since = Some(now);
        }
        match progress {
            Progress::Waiting => {
                self.phase = Phase::Waiting(now);
                self.retry = None;
            }
            Progress::Streaming => {
                if !matches!(self.phase, Phase::Streaming) {
                    self.phase = Phase::Streaming;
                }
                self.retry = None;
            }
            Progress::Calls => self.phase = Phase::Calls(now),
            Progress::ToolStarted { id, name } => self.tools.push((id, name, now)),
            Progress::ToolEnded { id } => self.tools.retain(|(t, ..)| *t != id),
            Progress::Retry { delay, reason } => self.retry = Some((now + delay, reason)),
            Progress::Idle => *self = Status::default(),
        }
    }

    /// The status line, `None` while idle.
    pub fn line(&self, now: Instant) -> Option<String> {
        let since = self.busy_since?;
        let spin = SPINNER[(now.duration_since(since).as_millis() / 100) as usize % SPINNER.len()];
        let what = if let Some((at, reason)) = &self.retry {
            let left = at.saturating_duration_since(now);
            let first_line = reason.lines().next().unwrap_or("");
            format!("retrying in {} ({})", secs(left), clip(first_line, 80))
        } else if !self.tools.is_empty() {
            let running: Vec<String> = self
                .tools
                .iter()
                .map(|(id, name, at)| format!("{id} {name} {}", secs(now.duration_since(*at))))
                .collect();
            format!("running {}", running.join(" · "))
        } else {
            match self.phase {
                Phase::Waiting(at) => {
                    format!("waiting for the model {}", secs(now.duration_since(at)))
                }
                Phase::Streaming => "the model is writing".to_string(),
                Phase::Calls(at) => format!("preparing calls {}", secs(now.duration_since(at))),
                Phase::Idle => "starting".to_string(),
            }
        };
        Some(format!(
            "{spin} {what} · turn {} · Ctrl-C interrupts",
            secs(now.duration_since(since))
        ))
    }
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_follows_the_turn() {
        let t0 = Instant::now();
        let mut status = Status::default();
        assert_eq!(status.line(t0), None);
        status.apply(Progress::Waiting, t0);
        let at = |ms| t0 + Duration::from_millis(ms);
        let line = status.line(at(2300)).unwrap();
        assert!(
            line.contains("waiting for the model 2.3 s · turn 2.3 s"),
            "{line}"
        );
        status.apply(Progress::Streaming, at(2500));
        assert!(
            status
                .line(at(2600))
                .unwrap()
                .contains("the model is writing")
        );
        status.apply(Progress::Calls, at(3000));
        status.apply(
            Progress::ToolStarted {
                id: "c1".into(),
                name: "run_command".into(),
            },
            at(3000),
        );
        status.apply(
            Progress::ToolStarted {
                id: "c2".into(),
                name: "read_file".into(),
            },
            at(4000),
        );
        let line = status.line(at(11000)).unwrap();
        assert!(
            line.contains("running c1 run_command 8.0 s · c2 read_file 7.0 s"),
            "{line}"
        );
        status.apply(Progress::ToolEnded { id: "c1".into() }, at(11000));
        status.apply(Progress::ToolEnded { id: "c2".into() }, at(11000));
        status.apply(Progress::Waiting, at(11000));
        status.apply(
            Progress::Retry {
                delay: Duration::from_secs(4),
                reason: "HTTP 429: slow down".into(),
            },
            at(11500),
        );
        let line = status.line(at(12500)).unwrap();
        assert!(
            line.contains("retrying in 3.0 s (HTTP 429: slow down)"),
            "{line}"
        );
        status.apply(Progress::Idle, at(13000));
        assert_eq!(status.line(at(13000)), None);
    }
}
