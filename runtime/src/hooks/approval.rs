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
///
/// Questions are asked one at a time: calls running in parallel that both need an answer wait
/// for each other's prompt instead of interleaving two prompts on one terminal.
#[derive(Debug, Default)]
pub struct TerminalApprover {
    one_at_a_time: tokio::sync::Mutex<()>,
}

impl TerminalApprover {
    pub fn new() -> TerminalApprover {
        TerminalApprover::default()
    }
}

#[async_trait::async_trait]
impl Approver for TerminalApprover {
    async fn ask(&self, q: &Question) -> Result<bool, String> {
        if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
            return Err("there is no terminal to ask on".into());
        }
        let _turn = self.one_at_a_time.lock().await;
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

/// Questions asked inside `paddock chat`, where standard input belongs to the chat: the chat
/// hands the next typed line to the waiting question (`answer`) instead of to the inbox.
#[derive(Clone, Default)]
pub struct ChatQuestions {
    waiting: std::sync::Arc<std::sync::Mutex<Option<tokio::sync::oneshot::Sender<String>>>>,
    one_at_a_time: std::sync::Arc<tokio::sync::Mutex<()>>,
}

impl ChatQuestions {
    fn waiting(&self) -> std::sync::MutexGuard<'_, Option<tokio::sync::oneshot::Sender<String>>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Gives `line` to the question waiting for an answer; false when none waits.
    pub fn answer(&self, line: &str) -> bool {
        match self.waiting().take() {
            Some(reply) => reply.send(line.to_string()).is_ok(),
            None => false,
        }
    }

    /// No more answers will come (input closed): a waiting question is denied.
    pub fn close(&self) {
        self.waiting().take();
    }
}

#[async_trait::async_trait]
impl Approver for ChatQuestions {
    async fn ask(&self, q: &Question) -> Result<bool, String> {
        let _turn = self.one_at_a_time.lock().await;
        let (reply, answer) = tokio::sync::oneshot::channel();
        *self.waiting() = Some(reply);
        let mut err = std::io::stderr();
        let _ = write!(
            err,
            "paddock: run {} {}?\n  ({})\n  allow? [y/N] ",
            q.tool, q.args, q.why
        );
        let _ = err.flush();
        match answer.await {
            Ok(line) => Ok(matches!(line.trim(), "y" | "Y" | "yes" | "Yes")),
            Err(_) => Err("the chat's input closed before an answer".into()),
        }
    }
}

/// Why approval did not let a call run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub reason: String,
    /// The user was asked and said no (the turn then ends); otherwise the policy denied it or
    /// no one could be asked.
    pub by_user: bool,
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

    /// Asks: `Ok(())` to run; `Err` with the reason, and whether it was the user who said no
    /// (rather than no one being there to ask).
    pub async fn confirm(&self, question: Question) -> Result<(), Refused> {
        match self.approver.ask(&question).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(Refused {
                reason: format!("the user declined to run {}", question.tool),
                by_user: true,
            }),
            Err(why) => Err(Refused {
                reason: format!(
                    "{} needs approval ({}), and {why}; to run it without asking, change `{}` in \
                     the preset",
                    question.tool, question.why, question.key
                ),
                by_user: false,
            }),
        }
    }
}
