//! Sessions in process, through the library's public `Session` against the scripted model
//! server: no binary. A `Project`'s directory is the working directory and its data dir the
//! session's, so `Project::events` reads an in-process session's log as it reads a binary's.

use std::sync::Mutex;

use paddock::agent::{Compaction, Observer, Quiet};
use paddock::ask::NoOneToAsk;
use paddock::model::AssistantMessage;
use paddock::session::{Env, ModelChoice, ReopenOptions, Session, SessionBuilder};
use paddock_tests::scripted::{Script, ScriptedServer, Step};

use super::Project;

/// A scripted server that answers with `steps`, in order.
pub async fn server(steps: Vec<Step>) -> ScriptedServer {
    ScriptedServer::start(Script { steps })
        .await
        .expect("scripted server")
}

/// The OpenAI-compatible side of `server`, model `scripted` (`--base-url URL --model
/// scripted`).
pub fn openai(server: &ScriptedServer) -> ModelChoice {
    ModelChoice {
        base_url: Some(server.openai_base_url()),
        model: Some("scripted".into()),
        ..ModelChoice::default()
    }
}

/// The Anthropic Messages side of `server` (`--provider anthropic`).
pub fn anthropic(server: &ScriptedServer) -> ModelChoice {
    ModelChoice {
        base_url: Some(server.anthropic_base_url()),
        provider: Some(paddock::event::ProviderKind::Anthropic),
        ..openai(server)
    }
}

/// How `paddock resume ID` reopens a session: no waiting, no new limits, no move, nobody to
/// ask.
pub fn reopen_options() -> ReopenOptions {
    ReopenOptions {
        wait: false,
        max_output_tokens: None,
        moved: Default::default(),
        approver: Box::new(NoOneToAsk),
        max_turns: None,
        without_message: false,
    }
}

impl Project {
    /// The machine for an in-process session: this project's data dir and directory.
    pub fn env(&self) -> Env {
        Env::at(
            self.home.path().to_path_buf(),
            self.dir.path().to_path_buf(),
        )
        .expect("env")
    }

    /// A new session in this project, on the `default` preset unless the builder says else.
    pub fn builder(&self, model: ModelChoice) -> SessionBuilder {
        Session::builder(self.env()).model(model)
    }

    /// A new session in this project on the `default` preset, talking to `model`.
    pub async fn start(&self, model: ModelChoice) -> Session {
        self.builder(model).start().await.expect("session starts")
    }

    /// Session `id` reopened with `options` and its recovery settled (`Seen` is told each
    /// step).
    pub async fn reopen(&self, id: &str, options: ReopenOptions, seen: &Seen) -> Session {
        Session::reopen(self.env(), id, options)
            .await
            .expect("the session reopens")
            .settle(seen)
            .await
            .expect("recovery settles")
    }

    /// Session `id` reopened as `resume ID` does, settled quietly.
    pub async fn resume(&self, id: &str) -> Session {
        Session::reopen(self.env(), id, reopen_options())
            .await
            .expect("the session reopens")
            .settle(&Quiet)
            .await
            .expect("recovery settles")
    }
}

/// An observer that keeps what a front-end would show: the stream anomalies under each
/// committed message, the compactions, and the notices.
#[derive(Default)]
pub struct Seen {
    pub anomalies: Mutex<Vec<String>>,
    pub compactions: Mutex<Vec<Compaction>>,
    pub notices: Mutex<Vec<String>>,
}

impl Observer for Seen {
    fn assistant(&self, message: &AssistantMessage) {
        let mut anomalies = self.anomalies.lock().unwrap();
        anomalies.extend(message.diagnostics.iter().map(ToString::to_string));
    }

    fn compacted(&self, compaction: &Compaction) {
        self.compactions.lock().unwrap().push(compaction.clone());
    }

    fn notice(&self, text: &str) {
        self.notices.lock().unwrap().push(text.to_string());
    }
}
