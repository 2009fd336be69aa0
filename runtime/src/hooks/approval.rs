//! Approval by risk (C2): the preset maps each risk tier to allow, ask or deny; a tool that
//! declares no risk counts as high. `ask` prompts on the terminal; without one it is a deny
//! whose message names the preset key to change.

use std::io::{BufRead, IsTerminal, Write};

use crate::contract::Risk;
use crate::preset::{ApprovalMode, ApprovalPolicy};

/// What the user is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub tool: String,
    /// The arguments, as JSON text (shortened).
    pub args: String,
    /// Why it is asked: the risk tier, or a hook's reason.
    pub why: String,
    /// The preset key that would stop the question, for the no-terminal message.
    pub key: String,
}

/// Someone who can answer a question. Must not panic.
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    /// `Ok(true)` to run the call, `Ok(false)` if the user said no, `Err(reason)` when no one
    /// can be asked.
    async fn ask(&self, question: &Question) -> Result<bool, String>;
}

/// Prompts on the terminal when stdin and stderr are both terminals; otherwise no one can
/// be asked.
#[derive(Debug, Clone, Copy, Default)]
pub struct TerminalApprover;

#[async_trait::async_trait]
impl Approver for TerminalApprover {
    async fn ask(&self, q: &Question) -> Result<bool, String> {
        if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
            return Err("there is no terminal to ask on".into());
        }
        let prompt = format!(
            "paddock: run {} {}?\n  ({})\n  allow? [y/N] ",
            q.tool, q.args, q.why
        );
        let answer = tokio::task::spawn_blocking(move || {
            let mut err = std::io::stderr();
            let _ = err.write_all(prompt.as_bytes());
            let _ = err.flush();
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line).map(|_| line)
        })
        .await;
        match answer {
            Ok(Ok(line)) => Ok(matches!(line.trim(), "y" | "Y" | "yes" | "Yes")),
            _ => Err("the terminal could not be read".into()),
        }
    }
}

/// The preset's policy and who answers its questions.
pub struct Approval {
    pub policy: ApprovalPolicy,
    pub approver: Box<dyn Approver>,
}

impl Approval {
    /// The preset's answer for a tier, before anyone is asked.
    pub fn mode(&self, risk: Option<Risk>) -> (ApprovalMode, &'static str) {
        match risk.unwrap_or(Risk::High) {
            Risk::Low => (self.policy.low, "low"),
            Risk::Medium => (self.policy.medium, "medium"),
            Risk::High => (self.policy.high, "high"),
        }
    }

    /// Asks when it must: `Ok(())` to run, `Err(reason)` to deny.
    pub async fn confirm(&self, question: Question) -> Result<(), String> {
        match self.approver.ask(&question).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(format!("the user declined to run {}", question.tool)),
            Err(why) => Err(format!(
                "{} needs approval ({}), and {why}; to run it without asking, change `{}` in \
                 the preset",
                question.tool, question.why, question.key
            )),
        }
    }
}
