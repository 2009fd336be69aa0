//! Who is asked, and what (T2): the approval question, its answers, and the `Approver` trait a
//! front end implements to answer it. The preset's policy (`hooks`) and an MCP server's
//! request for input (`mcp`) both ask through it; the library itself never reads or writes a
//! terminal (the command line's approvers do).

/// Where the answer is typed.
pub const ANSWER_PROMPT: &str = "  allow? [y/a/N] ";

/// What the user is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The id of the call asked about, as the model sent it (a front end that shows calls by
    /// id, such as ACP's editor, attaches the question to that call).
    pub call: String,
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
        let safe = |t: &str| paddock_types::text::sanitize(t).into_owned();
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

    /// True for a front-end that has no one to ask and no mode of its own (a terminal
    /// approver with no terminal): a reopened session then keeps the mode its start recorded
    /// (`run --on-ask`), so a headless session resumed headless decides its asks as it did.
    fn yields_to_recorded_mode(&self) -> bool {
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
    /// The mode `as_str` names (what `session/start.on_ask` records).
    pub fn parse(recorded: &str) -> Option<OnAsk> {
        [OnAsk::Deny, OnAsk::Allow, OnAsk::Fail]
            .into_iter()
            .find(|mode| mode.as_str() == recorded)
    }

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
            OnAsk::Deny => Err("no one is asked in this session (it denies what needs approval)".into()),
            OnAsk::Fail => Err("no one is asked in this session (it stops at what needs approval)".into()),
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

/// A typed answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Run this call.
    Once,
    /// Run this call and, for the rest of the session, every call matching the shown pattern.
    Always,
    /// Do not run it; the reason, if the user gave one, goes to the model.
    No(Option<String>),
}

impl From<bool> for Answer {
    fn from(yes: bool) -> Answer {
        if yes { Answer::Once } else { Answer::No(None) }
    }
}

/// `y`/`yes`, `a`/`always`, `n`/`no` with an optional reason after a space or colon; anything
/// else (an empty line included) is no.
pub fn parse_answer(line: &str) -> Answer {
    let line = line.trim();
    let (word, rest) = match line.find([' ', ':']) {
        Some(at) => (
            &line[..at],
            line[at + 1..].trim_start_matches([' ', ':']).trim(),
        ),
        None => (line, ""),
    };
    match word.to_ascii_lowercase().as_str() {
        "y" | "yes" if rest.is_empty() => Answer::Once,
        "a" | "always" if rest.is_empty() => Answer::Always,
        "n" | "no" if !rest.is_empty() => Answer::No(Some(rest.to_string())),
        _ => Answer::No(None),
    }
}
