//! What the log says of the session's shell (L2): whether the session used one, and which of
//! its commands were still running when the log ends. A shell's processes die with the
//! paddock that ran them, so a resumed session starts with a new shell; `resume` tells the
//! model so, naming the commands that died (`ShellLedger::resume_note`).

use std::collections::{BTreeMap, HashMap};

use super::event::Body;

/// The shell's tools, whose results say where a command stands.
const SHELL: &str = "shell";
const WRITE_STDIN: &str = "write_stdin";
/// How the shell plugin words a command that is still running.
const RUNNING: &str = "still running (session_id ";

#[derive(Debug, Default, Clone)]
pub struct ShellLedger {
    /// A shell call ran in this session.
    pub used: bool,
    /// Calls of the shell's tools, by call id: the tool.
    calls: HashMap<String, &'static str>,
    /// Commands still running, by session id: their command.
    pub running: BTreeMap<u64, String>,
}

impl ShellLedger {
    pub fn push(&mut self, body: &Body) {
        match body {
            Body::ToolCall {
                id,
                tool: Some(tool),
                ..
            } => {
                let tool = match tool.as_str() {
                    SHELL => SHELL,
                    WRITE_STDIN => WRITE_STDIN,
                    _ => return,
                };
                self.calls.insert(id.clone(), tool);
            }
            Body::ToolResult {
                id,
                content,
                is_error: false,
                args,
                ..
            } => {
                let Some(tool) = self.calls.remove(id) else {
                    return;
                };
                self.used = true;
                let args = args.as_ref();
                let running = content
                    .strip_prefix(RUNNING)
                    .and_then(|rest| rest.split(')').next())
                    .and_then(|n| n.parse::<u64>().ok());
                match (tool, running) {
                    (SHELL, Some(session)) => {
                        let command = args
                            .and_then(|a| a.get("command"))
                            .and_then(serde_json::Value::as_str)
                            .unwrap_or_default();
                        self.running.insert(session, command.chars().take(120).collect());
                    }
                    (WRITE_STDIN, None) => {
                        if let Some(session) = args
                            .and_then(|a| a.get("session_id"))
                            .and_then(serde_json::Value::as_u64)
                        {
                            self.running.remove(&session);
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// What the model is told when the session is resumed, if it used a shell.
    pub fn resume_note(&self) -> Option<String> {
        self.ended_note("paddock was restarted, and the shell of the previous run ended with it")
    }

    /// What the model is told when its shell ended (`why`, the start of the first sentence),
    /// if it used one.
    pub fn ended_note(&self, why: &str) -> Option<String> {
        if !self.used {
            return None;
        }
        let mut note = format!(
            "{why}: its directory, variables, functions and aliases are gone, and so is every \
             job it ran (jobs started with &, servers). The next shell command starts a new \
             shell in the workspace."
        );
        if !self.running.is_empty() {
            note.push_str(" These commands were still running and were killed:");
            for (session, command) in &self.running {
                note.push_str(&format!("\n- session_id {session}: {command}"));
            }
            note.push_str("\nStart again whatever is still needed.");
        }
        Some(note)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, tool: &str) -> Body {
        Body::ToolCall {
            id: id.into(),
            name: tool.into(),
            tool: Some(tool.into()),
            idempotent: false,
            touches: None,
        }
    }

    fn result(id: &str, content: &str, args: serde_json::Value) -> Body {
        Body::ToolResult { images: Vec::new(),
            id: id.into(),
            content: content.into(),
            is_error: false,
            code: None,
            args: Some(args),
            repairs: Vec::new(),
            approval: None,
        }
    }

    #[test]
    fn commands_still_running_at_the_end_are_named_on_resume() {
        let mut ledger = ShellLedger::default();
        assert!(ledger.resume_note().is_none(), "no shell, nothing to say");
        for body in [
            call("c1", "shell"),
            result(
                "c1",
                "still running (session_id 1): call write_stdin ...",
                serde_json::json!({"command": "python3 -m http.server"}),
            ),
            call("c2", "shell"),
            result(
                "c2",
                "still running (session_id 2): ...",
                serde_json::json!({"command": "sleep 100"}),
            ),
            call("c3", "write_stdin"),
            result("c3", "exit status 130", serde_json::json!({"session_id": 2})),
        ] {
            ledger.push(&body);
        }
        let note = ledger.resume_note().expect("a shell was used");
        assert!(note.contains("session_id 1: python3 -m http.server"), "{note}");
        assert!(!note.contains("sleep 100"), "{note}");
    }
}
