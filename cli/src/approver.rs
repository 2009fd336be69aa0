//! Who answers approval questions at the command line (T2): only a person at a terminal. The
//! library asks through the `Approver` trait and never touches a terminal itself. `TerminalApprover` asks on
//! standard error and reads standard input; `ChatQuestions` asks inside `paddock chat`, where
//! the chat hands it the next typed line. When standard input or standard error is not a
//! terminal (a pipe, CI), or input has closed, no one can be asked: the call is denied at once.
//!
//! Questions are asked one at a time: calls running in parallel that both need an answer wait
//! for each other's prompt instead of interleaving two prompts on one terminal.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use paddock::ask::{Answer, Approver, Question, parse_answer};

const NO_TERMINAL: &str = "there is no terminal to ask on (approvals come only from a terminal)";

fn on_a_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Prompts on the terminal.
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
    fn yields_to_recorded_mode(&self) -> bool {
        !on_a_terminal()
    }

    async fn ask(&self, q: &Question) -> Result<Answer, String> {
        if !on_a_terminal() {
            return Err(NO_TERMINAL.into());
        }
        let _turn = self.one_at_a_time.lock().await;
        let prompt = q.text();
        let answer = tokio::task::spawn_blocking(move || {
            let mut err = std::io::stderr();
            let _ = err.write_all(prompt.as_bytes());
            let _ = err.flush();
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .map(|n| (n, line))
        })
        .await;
        match answer {
            Ok(Ok((0, _))) => Err("the terminal closed before an answer".into()),
            Ok(Ok((_, line))) => Ok(parse_answer(&line)),
            _ => Err("the terminal could not be read".into()),
        }
    }
}

type Waiting = Option<tokio::sync::oneshot::Sender<String>>;

/// Shows a question that waits for its answer (`Some`), and that it has one (`None`).
pub type Presenter = Arc<dyn Fn(Option<&Question>) + Send + Sync>;

/// Questions asked inside `paddock chat`, where standard input belongs to the chat: the chat
/// hands the next typed line to the waiting question (`answer`) instead of to the inbox.
#[derive(Clone, Default)]
pub struct ChatQuestions {
    waiting: Arc<Mutex<Waiting>>,
    closed: Arc<AtomicBool>,
    one_at_a_time: Arc<tokio::sync::Mutex<()>>,
    /// How a question is shown; `None` writes it to standard error.
    presenter: Option<Presenter>,
}

impl ChatQuestions {
    /// Questions shown by `presenter` (the chat's terminal view) instead of on standard error.
    pub fn with_presenter(presenter: Presenter) -> ChatQuestions {
        ChatQuestions {
            presenter: Some(presenter),
            ..ChatQuestions::default()
        }
    }

    fn waiting(&self) -> MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Gives `line` to the question waiting for an answer; false when none waits.
    pub fn answer(&self, line: &str) -> bool {
        match self.waiting().take() {
            Some(reply) => reply.send(line.to_string()).is_ok(),
            None => false,
        }
    }

    /// No more answers will come (input closed): a waiting question is denied, and so is
    /// every later one, at once.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.waiting().take();
    }
}

#[async_trait::async_trait]
impl Approver for ChatQuestions {
    async fn ask(&self, q: &Question) -> Result<Answer, String> {
        if !on_a_terminal() {
            return Err(NO_TERMINAL.into());
        }
        let _turn = self.one_at_a_time.lock().await;
        let (reply, answer) = tokio::sync::oneshot::channel();
        {
            let mut waiting = self.waiting();
            // Checked under the lock `close` takes, so a close cannot slip in between.
            if self.closed.load(Ordering::SeqCst) {
                return Err("the chat's input closed before an answer".into());
            }
            *waiting = Some(reply);
        }
        match &self.presenter {
            Some(show) => show(Some(q)),
            None => {
                let mut err = std::io::stderr();
                let _ = err.write_all(q.text().as_bytes());
                let _ = err.flush();
            }
        }
        let answer = answer.await;
        if let Some(show) = &self.presenter {
            show(None);
        }
        match answer {
            Ok(line) => Ok(parse_answer(&line)),
            Err(_) => Err("the chat's input closed before an answer".into()),
        }
    }
}
