//! `paddock run` (M2, L1, P1): flags to a `SessionBuilder`, one message, the turn shown (or
//! streamed as `--json` events), its stop reason to an exit code. `SessionArgs` and
//! `start_session` are shared with `chat`.

use clap::Args;

use super::json_events::{self, JsonMode, JsonObserver};
use super::report::{fail, print_finding, setup_failed};
use super::session_view::Printer;
use super::tool::interrupt_on_ctrl_c;
use super::trust::TerminalTrust;
use super::{Env, Exit};
use crate::agent::{Observer, TurnEnd};
use crate::hooks::{Approver, TerminalApprover};
use crate::log::Tap;
use crate::session::{ModelChoice, ModelMove, Session};

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
    #[command(flatten)]
    session: SessionArgs,
}

/// How a new session is set up: preset and model (shared by `run` and `chat`).
#[derive(Args)]
pub struct SessionArgs {
    /// Preset name or path to a .toml file (see `paddock preset list`).
    #[arg(long, default_value = "default")]
    preset: String,
    /// Run the scripted demo model: no network, no API key; everything else is real.
    #[arg(long)]
    demo: bool,
    /// An OpenAI-compatible (or, with --provider anthropic, Anthropic) server, instead of the
    /// preset's [model]. The API key, if the server needs one, is read from PADDOCK_API_KEY.
    #[arg(long, env = "PADDOCK_BASE_URL")]
    base_url: Option<String>,
    /// The model name to request (with --base-url; default: the preset's, else "default").
    #[arg(long, env = "PADDOCK_MODEL")]
    model: Option<String>,
    /// Wire format for --base-url: openai (the default) or anthropic.
    #[arg(long)]
    provider: Option<String>,
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
            provider: self.provider.clone(),
        }
    }

    fn model_choice(&self) -> ModelChoice {
        ModelChoice {
            demo: self.demo,
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            provider: self.provider.clone(),
            max_output_tokens: self.max_output_tokens,
        }
    }
}

/// Starts a new session from the flags, asking the terminal about project trust; a failure is
/// printed, with every finding of a refused preset.
pub(super) async fn start_session(
    args: &SessionArgs,
    approver: Box<dyn Approver>,
    tap: Option<Tap>,
) -> Result<Session, Exit> {
    let env = Env::open().map_err(|e| fail(&format!("{e:#}")))?;
    let mut builder = Session::builder(env)
        .preset(&args.preset)
        .model(args.model_choice())
        .approver(approver)
        .trust(Box::new(TerminalTrust))
        .max_turns(args.max_turns);
    if let Some(tap) = tap {
        builder = builder.tap(tap);
    }
    let session = builder.start().await.map_err(|e| setup_failed(false, &e))?;
    for warning in session.warnings() {
        print_finding(warning);
    }
    Ok(session)
}

/// `paddock run`.
pub async fn run(args: RunArgs) -> Exit {
    let task = match (&args.task, args.session.demo) {
        (Some(dash), _) if dash == "-" => match read_task_from_stdin() {
            Ok(task) => task,
            Err(message) => return fail(&message),
        },
        (Some(task), _) => task.clone(),
        (None, true) => DEMO_TASK.to_string(),
        (None, false) => {
            return fail(
                "give a task, e.g. paddock run \"explain src/main.rs\", or run the scripted demo with --demo",
            );
        }
    };
    let tap = args.json.map(|_| json_events::tap());
    let approver = Box::new(TerminalApprover::new());
    let started = match start_session(&args.session, approver, tap).await {
        Ok(started) => started,
        Err(exit) => return exit,
    };
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
    interrupt_on_ctrl_c(&started);
    let end = started.send(&task, observer).await;
    let exit = exit_of(&end);
    match json {
        Some(_) => json_events::result(started.id(), &end, exit as i32),
        None => printer.footer(started.id()),
    }
    exit
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
