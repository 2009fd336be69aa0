//! Approval by risk (C2, T2): the preset maps each risk tier to allow, ask or deny; a tool that
//! declares no risk counts as high. `ask` puts a question (`crate::ask`, shown as
//! `question.rs` renders the call) to whoever answers (an `Approver`: at the command line, only
//! a terminal can); without one it is a deny whose message names the preset key to change.

use paddock_types::contract::Risk;

use crate::ask::{Answer, Approver, Question};
use crate::preset::{ApprovalMode, ApprovalPolicy};

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
