//! `paddock mcp serve`: the preset's tools to any MCP client over standard input
//! and output. The session is set up like `run`'s: the preset found (a project preset only
//! when the directory is already trusted: standard input is the protocol, nothing is asked on
//! it), its plugins, hooks and approval loaded, and a session log started whose
//! `session/start` records the preset, so every call the client makes is in a log like any
//! other (`paddock log`). Approval `ask` goes to the client as MCP elicitation. With
//! `--listen`, the same over streamable HTTP (`mcp_http.rs`).

use std::sync::Arc;

use clap::{Args, Subcommand};

use super::Exit;
use super::mcp_serve::{Served, ServedSession};
use super::report::{CommandResult, Failure, print_finding};
use super::trust::TerminalTrust;
use crate::elicit::ElicitApprover;
use paddock::session::Session;

#[derive(Subcommand)]
pub enum McpCommand {
    /// Serve the preset's tools over MCP on standard input and output: for Claude Code, codex,
    /// Cursor or any MCP client. Every call runs through the preset's hooks, approval (`ask`
    /// becomes a question to the client's user), sandbox and output budgets, and is logged in
    /// a session.
    Serve(ServeArgs),
}

#[derive(Args)]
pub struct ServeArgs {
    /// Preset name or path to a .toml file (see `paddock preset list`).
    #[arg(long, default_value = "default")]
    preset: String,
    /// Never ask the client's user: a call the preset would ask about is denied.
    #[arg(long)]
    no_elicitation: bool,
    /// Serve streamable HTTP at http://ADDR/mcp instead of standard input and output, e.g.
    /// 127.0.0.1:8765 (port 0 picks one; the address is printed). Clients send
    /// `Authorization: Bearer TOKEN`: $PADDOCK_MCP_TOKEN, else a new token printed on stderr.
    /// Only Host headers naming the address are answered, and no request carrying an Origin
    /// (a web page), so a page in a browser cannot drive it.
    #[arg(long, value_name = "ADDR")]
    listen: Option<std::net::SocketAddr>,
    /// Let `--listen` take an address that is not loopback (the network can then reach the
    /// tools of this preset, with the token).
    #[arg(long, requires = "listen")]
    allow_non_loopback: bool,
}

pub async fn run(cmd: McpCommand) -> CommandResult {
    match cmd {
        McpCommand::Serve(args) => serve(args).await,
    }
}

async fn serve(args: ServeArgs) -> CommandResult {
    // The address is checked and bound before anything is loaded or logged.
    let listener = match args.listen {
        Some(addr) => Some(
            super::mcp_http::bind(addr, args.allow_non_loopback)
                .await
                .map_err(Failure::usage)?,
        ),
        None => None,
    };
    let session = Arc::new(start(&args).await?);
    // The preset's name is printed, and names can come from files: sanitized (T3).
    let preset = paddock_types::text::sanitize(session.session.preset_name()).to_string();
    let id = session.session.id().to_string();
    let id = &id;
    let served = Served::new(session.clone());
    let result = match listener {
        Some(listener) => super::mcp_http::serve_http(served, listener, &preset, id).await,
        None => {
            eprintln!(
                "paddock: serving preset `{preset}` over MCP on standard input and output (session {id})"
            );
            super::mcp_serve::serve_stdio(served).await
        }
    };
    result.map_err(Failure::usage)?;
    Ok(Exit::Ok)
}

async fn start(args: &ServeArgs) -> Result<ServedSession, Failure> {
    let env = super::Env::open().map_err(|e| Failure::usage(format!("{e:#}")))?;
    let approver = ElicitApprover::new(!args.no_elicitation);
    let session = Session::builder(env)
        .preset(&args.preset)
        .trust(Box::new(TerminalTrust { may_ask: false }))
        .approver(Box::new(approver.clone()))
        .client("mcp-client")
        .start()
        .await?;
    for warning in session.warnings() {
        print_finding(warning);
    }
    Ok(ServedSession { session, approver })
}
