//! `paddock acp`: paddock as an Agent Client Protocol agent on standard input and output, for
//! editors (Zed, JetBrains) that run an agent as a subprocess (docs/acp.md). The protocol is
//! the `agent-client-protocol` crate's (v1); this module only maps it onto sessions:
//!
//! - `wire.rs`: the lines in and out; a line that is not JSON is answered here with an error
//!   that says so, and the agent keeps reading;
//! - `connection.rs`: each method to its handler, and the error for a method paddock does not
//!   serve;
//! - `sessions.rs`: the editor's sessions (new, load, prompt, cancel, mode), each a paddock
//!   session started on its first prompt under the preset its mode names, and forked under
//!   another preset by a mode change between prompts;
//! - `updates.rs`: a running turn as `session/update`s (message chunks, tool calls);
//! - `replay.rs`: a recorded log as the same updates (`session/load`);
//! - `tool_calls.rs`: how one call is shown to the editor (title, kind, paths, diff);
//! - `permission.rs`: approval questions as `session/request_permission`.
//!
//! Files are read and written by paddock's own tools, under the preset's mounts and protected
//! paths, never through the editor's `fs/*` methods (docs/acp.md says why). M2, T2, I1

mod connection;
mod modes;
mod permission;
mod prompt;
mod replay;
mod sessions;
mod tool_calls;
mod updates;
mod wire;

use std::sync::Arc;

use clap::Args;

use super::Exit;
use super::report::{CommandResult, Failure};
use super::run::SessionArgs;
use sessions::{Defaults, Sessions};

#[derive(Args)]
pub struct AcpArgs {
    /// The flags of `paddock run`: --preset is the mode a new session starts in (the editor
    /// can pick another preset; after the first prompt that forks the session), the model
    /// flags pick the model.
    #[command(flatten)]
    session: SessionArgs,
}

/// `paddock acp`: serves one editor until it closes standard input.
pub async fn acp(args: AcpArgs) -> CommandResult {
    let defaults = Defaults {
        preset: args.session.preset().to_string(),
        model: args.session.model_choice()?,
        max_turns: args.session.max_turns,
    };
    let sessions = Arc::new(Sessions::new(defaults));
    wire::serve(sessions)
        .await
        .map_err(|e| Failure::usage(format!("the ACP connection failed: {e}")))?;
    Ok(Exit::Ok)
}
