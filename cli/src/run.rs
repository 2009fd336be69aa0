//! `paddock run` (M2, L1, P1): flags to a `SessionBuilder`, one message, the turn shown (or
//! streamed as `--json` events), its stop reason to an exit code. `SessionArgs` and
//! `start_session` are shared with `chat`.

use clap::Args;

use super::json_events::{self, JsonMode, JsonObserver};
use super::report::{CommandResult, Failure, Form, print_finding};
use super::session_view::Printer;
use super::trust::TerminalTrust;
use super::{Env, Exit};
use crate::approver::TerminalApprover;
use paddock::ModelScript;
use paddock::agent::{Observer, TurnEnd};
use paddock::ask::{Approver, OnAsk};
use paddock::log::Tap;
use paddock::model::ProviderKind;
use paddock::session::{ModelChoice, ModelMove, Session};

/// The task the demo works on when none is given.
const DEMO_TASK: &str = "Show me around this project, and show what the sandbox refuses.";

#[derive(Args)]
pub struct RunArgs {
    /// What the agent should do; `-` reads it from standard input. Optional with --demo.
    task: Option<String>,
    /// Print one JSON object per line on standard output for every event, then a `result`
    /// line with the stop reason and totals (docs/json-events.md); `--json=deltas` adds the
    /// streamed message text.
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "events")]
    json: Option<JsonMode>,
    /// Who answers when a call needs approval, instead of the terminal (or no one, without
    /// one): `deny` it, `allow` it (logged in session/start; for runs inside a container that
    /// is the outer boundary: paddock's sandbox and hooks still apply), or `fail`: stop the
    /// session (`approval_required`, exit 6).
    #[arg(long, value_enum, value_name = "deny|allow|fail")]
    on_ask: Option<OnAskArg>,
    /// When the session ends (however it ends), write it to FILE as an ATIF-v1.8 trajectory,
    /// as `paddock log SESSION --atif` prints it.
    #[arg(long, value_name = "FILE")]
    atif: Option<std::path::PathBuf>,
    /// Attach an image (PNG, JPEG, GIF or WebP, up to 3.75 MB) to the task; repeatable. A
    /// model set up as text-only (`[model] vision`) is told, in words, what it cannot see.
    #[arg(long = "image", value_name = "PATH")]
    images: Vec<std::path::PathBuf>,
    #[command(flatten)]
    session: SessionArgs,
}

/// `--on-ask`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum OnAskArg {
    Deny,
    Allow,
    Fail,
}

impl OnAskArg {
    fn mode(self) -> OnAsk {
        match self {
            OnAskArg::Deny => OnAsk::Deny,
            OnAskArg::Allow => OnAsk::Allow,
            OnAskArg::Fail => OnAsk::Fail,
        }
    }
}

/// How a new session is set up: preset and model (shared by `run` and `chat`).
#[derive(Args)]
pub struct SessionArgs {
    /// Preset name or path to a .toml file (see `paddock preset list`).
    #[arg(long, default_value = "default")]
    preset: String,
    /// Run the scripted demo model: no network, no API key; everything else is real.
    #[arg(long, conflicts_with = "model_script")]
    demo: bool,
    /// Your own scripted model: a TOML file of turns, each with text and tool calls
    /// (docs/model-script.md). No network, no key; drives your tools through the real loop.
    /// Like --demo, it stands in for any --base-url or preset [model].
    #[arg(long, value_name = "FILE")]
    model_script: Option<std::path::PathBuf>,
    /// An OpenAI-compatible (or, with --provider anthropic, Anthropic) server, instead of the
    /// preset's [model]. The API key, if the server needs one, is read from PADDOCK_API_KEY.
    #[arg(long, env = "PADDOCK_BASE_URL")]
    base_url: Option<String>,
    /// The model name to request (with --base-url; default: the preset's, else "default").
    #[arg(long, env = "PADDOCK_MODEL")]
    model: Option<String>,
    /// Wire format for --base-url: openai (the default) or anthropic.
    #[arg(long)]
    provider: Option<ProviderKind>,
    /// Override the preset's limits.max_turns (model requests per session).
    #[arg(long)]
    pub(super) max_turns: Option<u64>,
    /// Output limit per model response, instead of [model] max_output_tokens (default 8192).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    max_output_tokens: Option<u32>,
}

impl SessionArgs {
    /// The model flags, as a move of a reopened session (`chat --resume`).
    pub(super) fn model_move(&self) -> ModelMove {
        ModelMove {
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            provider: self.provider,
        }
    }

    /// The preset flag, as given (a name or a path).
    pub(super) fn preset(&self) -> &str {
        &self.preset
    }

    /// The model flags; a model script is read and checked here, so a bad one is refused
    /// before anything starts.
    pub(super) fn model_choice(&self) -> Result<ModelChoice, Failure> {
        let script = match &self.model_script {
            Some(path) => Some(ModelScript::from_file(path).map_err(Failure::usage)?),
            None => None,
        };
        Ok(ModelChoice {
            demo: self.demo,
            script,
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            provider: self.provider,
            max_output_tokens: self.max_output_tokens,
        })
    }
}

/// Starts a new session from the flags, asking the terminal about project trust; a failure is
/// printed, with every finding of a refused preset.
pub(super) async fn start_session(
    args: &SessionArgs,
    approver: Box<dyn Approver>,
    on_ask: Option<OnAsk>,
    tap: Option<Tap>,
) -> Result<Session, Failure> {
    let env = Env::open().map_err(|e| Failure::usage(format!("{e:#}")))?;
    let mut builder = Session::builder(env)
        .preset(&args.preset)
        .model(args.model_choice()?)
        .approver(approver)
        .trust(Box::new(TerminalTrust { may_ask: true }))
        .max_turns(args.max_turns);
    if let Some(tap) = tap {
        builder = builder.tap(tap).child_tap(json_events::child_tap());
    }
    if let Some(on_ask) = on_ask {
        builder = builder.on_ask(on_ask);
    }
    let session = builder.start().await?;
    for warning in session.warnings() {
        print_finding(warning);
    }
    Ok(session)
}

impl RunArgs {
    /// With `--json`, a run that cannot start still ends with its `result` line.
    pub(super) fn failure_form(&self) -> Form {
        match self.json {
            Some(_) => Form::ResultLine,
            None => Form::Text,
        }
    }
}

/// `paddock run`.
pub async fn run(args: RunArgs) -> CommandResult {
    super::signals::listen();
    let mut guard = args.json.map(|_| json_events::ResultGuard::new());
    let task = match (&args.task, args.session.demo) {
        (Some(dash), _) if dash == "-" => read_task_from_stdin().map_err(Failure::usage)?,
        (Some(task), _) => task.clone(),
        (None, true) => DEMO_TASK.to_string(),
        (None, false) => {
            return Err(Failure::usage(
                "give a task, e.g. paddock run \"explain src/main.rs\", or run the scripted demo with --demo",
            ));
        }
    };
    let images = args
        .images
        .iter()
        .map(|path| super::attach::read_image(path))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Failure::usage)?;
    let tap = args.json.map(|_| json_events::tap());
    let approver = Box::new(TerminalApprover::new());
    let on_ask = args.on_ask.map(OnAskArg::mode);
    let started = start_session(&args.session, approver, on_ask, tap).await?;
    if let Some(guard) = &mut guard {
        guard.session = Some(started.id().to_string());
    }
    if args.json.is_some() {
        for warning in started.warnings() {
            json_events::preset_warning(warning);
        }
    }
    let printer = Printer::new();
    let json = args.json.map(|mode| JsonObserver { mode });
    let observer: &dyn Observer = match &json {
        Some(json) => json,
        None => {
            printer.header(started.record(), started.log_path());
            printer.user(&task);
            &printer
        }
    };
    super::signals::watch(&started);
    let turn = started.send_with_images(&task, &images, observer);
    super::signals::deliver_early(&started);
    let end = turn.await;
    let exit = exit_of(&end);
    if let Some(file) = &args.atif
        && let Err(e) = paddock::log::write_trajectory(started.log_path(), file)
    {
        eprintln!(
            "paddock: cannot write the trajectory to {}: {e}; `paddock log {} --atif` prints it",
            paddock_types::text::sanitize(&file.display().to_string()),
            started.id()
        );
    }
    match json {
        Some(_) => json_events::result(started.id(), &end, exit as i32),
        None => printer.footer(started.id()),
    }
    if let Some(guard) = &mut guard {
        guard.done();
    }
    Ok(exit)
}

/// `paddock run -`: the task is all of standard input.
fn read_task_from_stdin() -> Result<String, String> {
    let mut task = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut task)
        .map_err(|e| format!("cannot read the task from standard input: {e}"))?;
    let task = task.trim().to_string();
    if task.is_empty() {
        return Err("`paddock run -` read an empty task from standard input; pipe the task in, e.g. echo \"explain src/main.rs\" | paddock run -".into());
    }
    Ok(task)
}

pub(super) fn exit_of(end: &TurnEnd) -> Exit {
    Exit::of_stop(end.reason)
}
