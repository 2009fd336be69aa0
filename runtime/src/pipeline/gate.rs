//! The gate around each call (H1, H2, C2): what may stop or change a call before it starts
//! (pre-tool hooks, approval by risk) and what may change its result after it ends (post-tool
//! hooks). The pipeline owns validation: arguments a gate rewrites are validated again against
//! the tool's schema before the call runs (C3), so a gate cannot smuggle in invalid input.
//!
//! `OpenGate` lets everything through unchanged; the hook chain and the approval policy
//! (`hooks/`) implement `CallGate` for real sessions.

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use paddock_types::contract::{ToolResult, ToolSpec};
use crate::log::Asked;

/// A validated call about to run, as a gate sees it.
#[derive(Debug, Clone, Copy)]
pub struct GateCall<'a> {
    pub call_id: &'a str,
    pub session_id: &'a str,
    pub preset: &'a str,
    pub tool: &'a ToolSpec,
    /// The arguments after repair and validation.
    pub args: &'a Value,
    /// The plugin that runs the tool and its grant, when a plugin does (a shell command in
    /// `args.command` is judged under the grant's exec rules).
    pub plugin: Option<(&'a str, &'a paddock_sandbox::Grant)>,
    /// This call's abort signal (the turn's, or the CLI command's): hooks run under it, so an
    /// interrupt stops them for this call only, never for the calls of later turns.
    pub cancel: &'a CancellationToken,
}

/// What a gate decides before a call.
#[derive(Debug, Clone, PartialEq)]
pub enum Admission {
    /// Run the call, with these arguments (the same, or rewritten by a hook).
    Allow { args: Value, context: Vec<String> },
    /// Do not run it; the model gets a DENIED result with this reason.
    Deny {
        reason: String,
        context: Vec<String>,
    },
    /// The user was asked and said no: the model gets a DECLINED result, and the turn ends
    /// (`denied`) so the user can say what to do instead.
    Declined {
        reason: String,
        context: Vec<String>,
    },
    /// It needed approval, no one could be asked, and the session stops for it: the call
    /// ends APPROVAL_REQUIRED and the turn `approval_required` (`--on-ask fail`).
    Stop {
        reason: String,
        context: Vec<String>,
    },
}

/// What a gate decides after a call: the result the model gets (the same, or replaced), and
/// any context to add for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct AfterCall {
    pub result: ToolResult,
    pub context: Vec<String>,
}

/// Pre- and post-call policy. Implementations must not panic and must answer every call:
/// a failing hook is resolved by its own `on_error` policy inside the gate.
#[async_trait::async_trait]
pub trait CallGate: Send + Sync {
    async fn before(&self, call: GateCall<'_>) -> Admission;
    async fn after(&self, call: GateCall<'_>, result: ToolResult) -> AfterCall;

    /// How the user approved the call `before` just admitted, when a question was involved
    /// (T2): taken once, and logged with the call's result.
    fn approval(&self, _call_id: &str) -> Option<Asked> {
        None
    }
}

#[cfg(any(test, feature = "internals"))]
/// Lets every call through unchanged: no hooks, no approval.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenGate;

#[cfg(any(test, feature = "internals"))]
#[async_trait::async_trait]
impl CallGate for OpenGate {
    async fn before(&self, call: GateCall<'_>) -> Admission {
        Admission::Allow {
            args: call.args.clone(),
            context: Vec::new(),
        }
    }

    async fn after(&self, _call: GateCall<'_>, result: ToolResult) -> AfterCall {
        AfterCall {
            result,
            context: Vec::new(),
        }
    }
}
