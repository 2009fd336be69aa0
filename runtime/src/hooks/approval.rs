//! Approval by risk (C2, T2): the preset maps each risk tier to allow, ask or deny; a tool that
//! declares no risk counts as high. `ask` puts a question (`question.rs`) to whoever answers
//! (`prompt.rs`): only a terminal can; without one it is a deny whose message names the
//! preset key to change.

use crate::contract::Risk;
use crate::preset::{ApprovalMode, ApprovalPolicy};

pub use super::question::Answer;

/// Where the answer is typed.
pub const ANSWER_PROMPT: &str = "  allow? [y/a/N] ";

/// What the user is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub tool: String,
    /// The whole call, one line per field, canonical and sanitized (`question::render_call`).
    pub lines: Vec<String>,
    /// Why it is asked: the preset's tier, or a hook's reason (labelled with the hook).
    pub why: String,
    /// The preset key that would stop the question, for the no-terminal message.
    pub key: String,
    /// What `a` (always) approves for the rest of the session, e.g. `run_command git status*`.
    pub pattern: String,
}

impl Question {
    /// The question as printed: what comes from the model and from hooks is labelled and
    /// sanitized (T3); the answers are spelled out.
    pub fn text(&self) -> String {
        format!("{}{ANSWER_PROMPT}", self.body())
    }

    /// The question without the answer prompt (`ANSWER_PROMPT`): what `chat` prints above its
    /// input line, whose prompt then asks for the answer.
    pub fn body(&self) -> String {
        let safe = |t: &str| crate::terminal::sanitize(t).into_owned();
        let mut text = format!(
            "paddock: approve this call? The model asks to run {}:\n",
            safe(&self.tool)
        );
        for line in &self.lines {
            text.push_str(&format!("  | {}\n", safe(line)));
        }
        text.push_str(&format!("  why: {}\n", safe(&self.why)));
        text.push_str(&format!(
            "  y = run it once, a = always run {} in this session, n = no (n: REASON tells the model why)\n",
            safe(&self.pattern)
        ));
        text
    }
}

/// Someone who can answer a question. Must not panic.
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    /// The user's answer, or `Err(reason)` when no one can be asked (no terminal, input
    /// closed).
    async fn ask(&self, question: &Question) -> Result<Answer, String>;

    /// Whether a question no one could answer stops the session (`approval_required`)
    /// instead of denying the call; false unless the front-end says so (`--on-ask fail`).
    fn stops_when_unanswered(&self) -> bool {
        false
    }
}

/// What a headless session does with a call that needs approval (`--on-ask`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnAsk {
    /// Deny it (the default where no one can answer): the model is told, the session goes on.
    Deny,
    /// Run it, as if the user said yes once: for runs whose outer boundary is a container.
    /// paddock's own sandbox and hooks still apply.
    Allow,
    /// Stop the session (`approval_required`, its own exit code).
    Fail,
}

impl OnAsk {
    pub fn as_str(self) -> &'static str {
        match self {
            OnAsk::Deny => "deny",
            OnAsk::Allow => "allow",
            OnAsk::Fail => "fail",
        }
    }
}

#[async_trait::async_trait]
impl Approver for OnAsk {
    async fn ask(&self, _question: &Question) -> Result<Answer, String> {
        match self {
            OnAsk::Allow => Ok(Answer::Once),
            OnAsk::Deny => Err("no one is asked in this session (`--on-ask deny`)".into()),
            OnAsk::Fail => Err("no one is asked in this session (`--on-ask fail`)".into()),
        }
    }

    fn stops_when_unanswered(&self) -> bool {
        *self == OnAsk::Fail
    }
}

/// An approver with no one behind it: every question is answered "no one can be asked", so
/// a call the policy would ask about is denied (headless sessions, tests).
pub struct NoOneToAsk;

#[async_trait::async_trait]
impl Approver for NoOneToAsk {
    async fn ask(&self, _question: &Question) -> Result<Answer, String> {
        Err("no one can be asked in this session".into())
    }
}

/// Why approval did not let a call run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub reason: String,
    pub by: RefusedBy,
}

/// Who refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusedBy {
    /// The preset's policy (or a hook's question that cannot be put) denies it.
    Policy,
    /// The user was asked and said no: the turn ends so they can say what to do instead.
    User,
    /// It needed an answer and no one could be asked: denied (logged `unanswered`), and when
    /// `stop`, the session stops (`--on-ask fail`).
    NoAnswer { stop: bool },
}

/// The preset's policy and who answers its questions.
pub struct Approval {
    pub policy: ApprovalPolicy,
    pub approver: Box<dyn Approver>,
}

impl Approval {
    /// The preset's answer for a tier, before anyone is asked.
    pub fn mode(&self, risk: Option<Risk>) -> (ApprovalMode, &'static str) {
        let risk = risk.unwrap_or(Risk::High);
        let mode = match risk {
            Risk::Low => self.policy.low,
            Risk::Medium => self.policy.medium,
            Risk::High => self.policy.high,
        };
        (mode, risk.name())
    }

    /// Asks: `Ok(true)` to run it and approve its pattern for the session, `Ok(false)` to run
    /// it once; `Err` with the reason, and whether it was the user who said no (rather than no
    /// one being there to ask).
    pub async fn confirm(&self, question: Question) -> Result<bool, Refused> {
        match self.approver.ask(&question).await {
            Ok(Answer::Once) => Ok(false),
            Ok(Answer::Always) => Ok(true),
            Ok(Answer::No(reason)) => Err(Refused {
                reason: match reason {
                    Some(why) => format!("the user declined to run {}: {why}", question.tool),
                    None => format!("the user declined to run {}", question.tool),
                },
                by: RefusedBy::User,
            }),
            Err(why) => Err(Refused {
                reason: format!(
                    "{} needs approval ({}), and {why}; to run it without asking, change `{}` in \
                     the preset",
                    question.tool, question.why, question.key
                ),
                by: RefusedBy::NoAnswer {
                    stop: self.approver.stops_when_unanswered(),
                },
            }),
        }
    }
}
