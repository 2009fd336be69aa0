//! `paddock resume` (L2, L5, M2): flags to `Session::reopen` (drop a torn tail, refuse
//! changed plugins, on its model or moved to another), the header, recovery settled with each
//! step shown, then the session continued. The log is streamed: a long session is resumed
//! holding what the model will be sent, not every event.

use clap::Args;

use super::report::{CommandResult, Failure};
use super::run::exit_of;
use super::session_view::Printer;
use super::{Env, Exit};
use crate::approver::TerminalApprover;
use paddock::agent::NO_TASK;
use paddock::ask::Approver;
use paddock::log::StopReason;
use paddock::model::ProviderKind;
use paddock::session::{ModelMove, ReopenOptions, Reopened, Session};

/// Where a reopened session's requests go from now on (recorded in the log when it changes).
#[derive(Args, Debug, Default, Clone)]
pub struct MoveArgs {
    /// Send this session's requests to another OpenAI-compatible (or, with --provider
    /// anthropic, Anthropic) server from now on; the key, if needed, is read from
    /// PADDOCK_API_KEY. Recorded in the log (`session/model`).
    #[arg(long)]
    pub base_url: Option<String>,
    /// Request another model from now on (recorded in the log).
    #[arg(long)]
    pub model: Option<String>,
    /// Wire format of --base-url: openai or anthropic (default: the session's).
    #[arg(long)]
    pub provider: Option<ProviderKind>,
}

impl MoveArgs {
    fn model_move(&self) -> ModelMove {
        ModelMove {
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            provider: self.provider,
        }
    }
}

/// Reopens session `id` of the data directory.
pub(super) async fn reopen(id: &str, options: ReopenOptions) -> Result<Reopened, Failure> {
    let env = Env::open().map_err(|e| Failure::usage(format!("{e:#}")))?;
    Ok(Session::reopen(env, id, options).await?)
}

/// Settles what recovery found, each step shown by `printer`.
pub(super) async fn settle(reopened: Reopened, printer: &Printer) -> Result<Session, Failure> {
    Ok(reopened.settle(printer).await?)
}

/// Options for reopening with the terminal's approver.
pub(super) fn options(
    wait: bool,
    max_output_tokens: Option<u32>,
    moved: ModelMove,
    approver: Box<dyn Approver>,
    max_turns: Option<u64>,
) -> ReopenOptions {
    ReopenOptions {
        wait,
        max_output_tokens,
        moved,
        approver,
        max_turns,
        without_message: false,
    }
}

#[derive(Args)]
pub struct ResumeArgs {
    /// The session id (`paddock log --list` shows them); with `--last`, the message.
    session: Option<String>,
    /// A new message; without one, an interrupted or budget-stopped turn continues.
    message: Option<String>,
    /// The newest session started in this directory (as `chat --continue` picks it), instead
    /// of an id.
    #[arg(long)]
    last: bool,
    /// Override the preset's limits.max_turns (model requests per session).
    #[arg(long)]
    max_turns: Option<u64>,
    /// Output limit per model response from now on, instead of the recorded one.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    max_output_tokens: Option<u32>,
    /// When another paddock process has the session, wait for it to end instead of refusing.
    #[arg(long)]
    wait: bool,
    #[command(flatten)]
    moved: MoveArgs,
}

/// The session `args` name (by id, or `--last`) and the message, if any.
fn which(args: &ResumeArgs) -> Result<(String, Option<String>), Failure> {
    if !args.last {
        let Some(id) = args.session.clone() else {
            return Err(Failure::usage(
                "give a session id (`paddock log --list` shows them), or --last for the newest \
                 one started here",
            ));
        };
        return Ok((id, args.message.clone()));
    }
    if args.message.is_some() {
        return Err(Failure::usage(
            "with --last, give only the message: paddock resume --last \"...\"",
        ));
    }
    let env = Env::open().map_err(|e| Failure::usage(format!("{e:#}")))?;
    let id = paddock::session::latest_in(&env.store.root().join("sessions"), &env.cwd).ok_or_else(
        || {
            Failure::usage(format!(
                "no session was started in {}; start one with paddock run",
                env.cwd.display()
            ))
        },
    )?;
    Ok((id, args.session.clone()))
}

/// `paddock resume`: take the session (L6), recover the log (L2, L8), then continue (L5).
pub async fn resume(args: ResumeArgs) -> CommandResult {
    super::signals::listen();
    let approver = Box::new(TerminalApprover::new());
    let options = options(
        args.wait,
        args.max_output_tokens,
        args.moved.model_move(),
        approver,
        args.max_turns,
    );
    let (id, message) = which(&args)?;
    let options = ReopenOptions {
        without_message: message.is_none(),
        ..options
    };
    let reopened = reopen(&id, options).await?;
    let last_turn = reopened.last_turn();
    if message.is_none() && !reopened.session().has_task() {
        return Err(Failure::usage(format!(
            "{NO_TASK}: paddock resume {id} \"...\""
        )));
    }
    let printer = Printer::new();
    if let Some(torn) = reopened.torn() {
        printer.notice(&format!(
            "dropped a torn last line ({torn} bytes) left by a crash"
        ));
    }
    printer.header(reopened.session().record(), reopened.session().log_path());
    super::signals::watch(reopened.session());
    let session = settle(reopened, &printer).await?;
    let turn: std::pin::Pin<Box<dyn std::future::Future<Output = _> + '_>> = match (
        &message, last_turn,
    ) {
        (Some(message), _) => {
            printer.user(message);
            Box::pin(session.send(message, &printer))
        }
        (None, Some(StopReason::Completed)) => {
            printer.notice(&format!(
                "the session's last turn completed; to go on, give a message: paddock resume {} \"...\"",
                session.id()
            ));
            return Ok(Exit::Ok);
        }
        (None, _) => Box::pin(session.go_on(&printer)),
    };
    super::signals::deliver_early(&session);
    let end = turn.await;
    printer.footer(session.id());
    Ok(exit_of(&end))
}
