//! A scripted model for the demo (`paddock run --demo`) and for the user's own model scripts
//! (`--model-script FILE`, see `model_script`): no network and no API key, but the rest is real. Each reply is rendered as an OpenAI Chat Completions SSE body and goes
//! through the same assembler as a real stream, then through the loop, the pipeline (repair,
//! validation, hooks, approval), the sandbox and the log.

use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::model_script::ModelScript;
use crate::model::assembler::OpenAiAssembler;
use crate::model::{
    AttemptId, AttemptRecord, AttemptStatus, Completion, Delta, EventSink, ModelError, ModelEvent,
    ModelRequest, Provider, ProviderConfig, ProviderKind, replay,
};

/// One scripted response: some text and the calls it makes, as (name, raw arguments).
#[derive(Debug, Clone)]
pub struct Reply {
    pub text: String,
    pub calls: Vec<(String, String)>,
}

impl Reply {
    pub fn new(text: &str, calls: &[(&str, &str)]) -> Reply {
        Reply {
            text: text.to_string(),
            calls: calls
                .iter()
                .map(|(n, a)| (n.to_string(), a.to_string()))
                .collect(),
        }
    }
}

/// Answers each request with the next reply; after the last, it says the script has ended.
pub struct ScriptedProvider {
    config: ProviderConfig,
    replies: Replies,
    next: AtomicUsize,
}

/// Fixed replies (the demo), or a user's script filled from each request.
enum Replies {
    Fixed(Vec<Reply>),
    Script(ModelScript),
}

impl ScriptedProvider {
    pub fn new(replies: Vec<Reply>) -> ScriptedProvider {
        ScriptedProvider {
            config: ProviderConfig::new(ProviderKind::Openai, "scripted-demo", None),
            replies: Replies::Fixed(replies),
            next: AtomicUsize::new(0),
        }
    }

    /// The user's model script.
    pub fn script(script: ModelScript) -> ScriptedProvider {
        ScriptedProvider {
            config: ProviderConfig::new(ProviderKind::Openai, "model-script", None),
            replies: Replies::Script(script),
            next: AtomicUsize::new(0),
        }
    }

    /// Reply `n` for `request`, or the one that ends the script.
    fn reply(&self, n: usize, request: &ModelRequest) -> Reply {
        let found = match &self.replies {
            Replies::Fixed(replies) => replies.get(n).cloned(),
            Replies::Script(script) => script
                .render(n, request.messages.messages())
                .map(|r| Reply {
                    text: r.text,
                    calls: r.calls,
                }),
        };
        found.unwrap_or_else(|| match &self.replies {
            Replies::Fixed(_) => Reply::new("The demo script has ended.", &[]),
            Replies::Script(script) => Reply::new(
                &format!(
                    "The model script {} has ended (all {} of its turns were used).",
                    script.name,
                    script.len()
                ),
                &[],
            ),
        })
    }

    /// Skips replies already given (a resumed demo session goes on where it stopped).
    pub fn skip(&self, n: usize) {
        self.next.fetch_add(n, Ordering::Relaxed);
    }

    /// The demo: look around, read with a sloppy call that repair fixes, then try two things
    /// the default preset does not allow, then sum up.
    pub fn demo() -> ScriptedProvider {
        ScriptedProvider::new(vec![
            Reply::new(
                "I'll look at the project first: its top directory and its Markdown files.",
                &[
                    ("list_dir", r#"{"path": "."}"#),
                    ("glob", r#"{"pattern": "*.md"}"#),
                ],
            ),
            Reply::new(
                "Now the start of the README. This call is sloppy on purpose, as models' calls often are: \
                 another agent's tool name (Read), the arguments double-encoded as a string, and file_path \
                 for path. paddock repairs all three and logs each repair.",
                &[("Read", r#""{\"file_path\": \"README.md\", \"limit\": 12}""#)],
            ),
            Reply::new(
                "Two things this session must not be able to do: read outside /workspace, and write (the default preset is read-only).",
                &[
                    ("read_file", r#"{"path": "../../../../etc/passwd"}"#),
                    ("write_file", r#"{"path": "NOTES.md", "content": "hello"}"#),
                ],
            ),
            Reply::new(
                "Done. I listed the project, read the README through a repaired call, and the sandbox refused both the path outside /workspace and the write tool this preset does not load. Every step is in the session log.",
                &[],
            ),
        ])
    }

    fn sse(&self, reply: &Reply, n: usize) -> String {
        let mut body = String::new();
        let mut frame = |value: serde_json::Value| {
            body.push_str("data: ");
            body.push_str(&value.to_string());
            body.push_str("\n\n");
        };
        if !reply.text.is_empty() {
            frame(
                json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": reply.text}}]}),
            );
        }
        for (i, (name, arguments)) in reply.calls.iter().enumerate() {
            frame(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{
                "index": i, "id": format!("demo_{n}_{i}"), "type": "function",
                "function": {"name": name, "arguments": arguments}
            }]}}]}));
        }
        let finish = if reply.calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        frame(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}));
        body.push_str("data: [DONE]\n\n");
        body
    }
}

#[async_trait::async_trait]
impl Provider for ScriptedProvider {
    fn config(&self) -> &ProviderConfig {
        &self.config
    }

    async fn complete(
        &self,
        request: &ModelRequest,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<Completion, ModelError> {
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let reply = &self.reply(n, request);
        let attempt = AttemptId(format!("demo-{}", n + 1));
        events.emit(ModelEvent::AttemptStarted {
            attempt: attempt.clone(),
            number: 1,
        });
        if !reply.text.is_empty() {
            events.emit(ModelEvent::Delta {
                attempt: attempt.clone(),
                delta: Delta::Text {
                    text: reply.text.clone(),
                },
            });
        }
        let message = replay(
            OpenAiAssembler::new(attempt.clone()),
            [Bytes::from(self.sse(reply, n + 1))],
        )?;
        events.emit(ModelEvent::AttemptEnded {
            attempt: attempt.clone(),
            status: AttemptStatus::Completed,
            error: None,
            partial: None,
            usage: message.usage,
        });
        Ok(Completion {
            message,
            attempts: vec![AttemptRecord {
                id: attempt,
                number: 1,
                status: AttemptStatus::Completed,
                error: None,
                partial: None,
            }],
        })
    }
}
