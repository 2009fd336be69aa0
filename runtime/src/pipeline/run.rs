//! One checked call through the spine (`execute`): ask the gate (pre-hooks, approval), run it
//! in the sandbox under its grant, pass the result through its output budget, and let the gate
//! see it (post-hooks). Never fails: every outcome is a `ToolResult`. The scheduler runs
//! batches through `execute`; `run_call` checks one raw call (`Prepared`, V3) and runs it,
//! unlogged.

use tokio_util::sync::CancellationToken;

use super::budget::{apply_budget, bound_error, bound_result, bound_text};
use super::gate::{Admission, CallGate, GateCall};
use super::prepared::{Prepared, RawCall};
use crate::calls::{AliasTable, Backend, Registry, ToolEntry, validate_args};
use crate::log::Asked;
use paddock_sandbox::SpillDir;
use paddock_sandbox::{CallReport, Sandbox};
use paddock_types::contract::{ErrorCode, ToolError, ToolResult};

/// What a call needs from the session around it.
#[derive(Clone)]
pub struct CallContext<'a> {
    pub sandbox: &'a Sandbox,
    pub registry: &'a Registry,
    /// Tool-name aliases: the built-in table extended by the preset's `[tools] aliases` (V3).
    pub aliases: &'a AliasTable,
    pub spill: Option<&'a SpillDir>,
    pub gate: &'a dyn CallGate,
    pub session_id: &'a str,
    pub preset: &'a str,
    pub cancel: CancellationToken,
    /// Where a call's output goes as it is printed (a shell command's live tail), by call id.
    pub live: Option<LiveTap>,
    /// The per-file locks a call holds while it runs, shared with the session's subagents.
    pub locks: super::PathLocks,
}

/// Takes a running call's output as it comes: (call id, text).
pub type LiveTap = std::sync::Arc<dyn Fn(&str, &str) + Send + Sync>;

impl<'a> CallContext<'a> {
    /// Checks `call` once against this session's tools and aliases (`Prepared`).
    pub fn check(&self, call: RawCall) -> Prepared<'a> {
        Prepared::check(self.registry, self.aliases, call)
    }
}

/// The result, and the sandbox's report when the call reached the sandbox.
#[derive(Debug)]
pub struct Executed {
    pub result: ToolResult,
    pub report: Option<CallReport>,
    /// The arguments the tool actually ran with (C3), when it ran.
    pub args: Option<serde_json::Value>,
    /// Context for the model added by hooks.
    pub context: Vec<String>,
    /// How the user approved the call, when a question was involved (T2).
    pub approval: Option<Asked>,
}

impl Executed {
    pub(crate) fn refused(error: ToolError, context: Vec<String>) -> Executed {
        Executed {
            result: Err(error),
            report: None,
            args: None,
            context,
            approval: None,
        }
    }
}

#[cfg(any(test, feature = "internals"))]
/// One raw call, checked once (`Prepared`: repaired and validated with the session's aliases,
/// V3), then executed. Nothing is logged: a session's calls go through `LoggedCalls`.
pub async fn run_call(cx: &CallContext<'_>, call_id: &str, name: &str, raw_args: &str) -> Executed {
    let call = RawCall {
        id: call_id.to_string(),
        name: name.to_string(),
        arguments: raw_args.to_string(),
    };
    let prepared = cx.check(call);
    match prepared.runnable() {
        Ok((entry, args, _)) => execute(cx, call_id, entry, args.clone(), &mut || Ok(())).await,
        Err(refusal) => Executed::refused(
            bound_error(
                refusal.error,
                paddock_types::contract::OutputBudget::DEFAULT,
            ),
            Vec::new(),
        ),
    }
}

/// Hook context joins the result the model reads: each piece is held to this many bytes.
const CONTEXT_BYTES: usize = 8 << 10;

/// Runs a validated call: the gate before it, the sandbox, the output budget, the gate after
/// it. `on_start` is told just before the sandbox is entered (X4), after the abort check (X3);
/// if it fails (the session log cannot record the start), the call does not run.
///
/// Whatever the outcome (a result, an error, a hook's refusal or replacement, hook context),
/// it passes the tool's output budget last (S5): nothing reaches the log or the model unbounded.
pub(crate) async fn execute(
    cx: &CallContext<'_>,
    call_id: &str,
    entry: &ToolEntry,
    args: serde_json::Value,
    on_start: &mut (dyn FnMut() -> Result<(), String> + Send),
) -> Executed {
    let mut executed = execute_unbounded(cx, call_id, entry, args, on_start).await;
    executed.result = bound_result(executed.result, entry.budget);
    executed.context = std::mem::take(&mut executed.context)
        .into_iter()
        .map(|c| bound_text(c, CONTEXT_BYTES))
        .collect();
    if let Some(report) = &mut executed.report {
        report.result = executed.result.clone();
    }
    executed
}

/// `execute` before the bounds, step by step: admit, start, run where the tool lives, let the
/// gate see the result.
async fn execute_unbounded(
    cx: &CallContext<'_>,
    call_id: &str,
    entry: &ToolEntry,
    args: serde_json::Value,
    on_start: &mut (dyn FnMut() -> Result<(), String> + Send),
) -> Executed {
    let Admitted {
        args,
        mut context,
        approval,
    } = match admit(cx, call_id, entry, args).await {
        Ok(admitted) => admitted,
        Err(refused) => return refused,
    };
    // X3: the abort is checked again right before the call starts.
    if cx.cancel.is_cancelled() {
        return Executed::refused(not_executed(), context);
    }
    if let Err(why) = on_start() {
        return Executed::refused(ToolError::new(ErrorCode::Host, why), context);
    }
    let mut report = run_backend(cx, call_id, entry, &args).await;
    let result = std::mem::replace(
        &mut report.result,
        Ok(paddock_types::contract::ToolOutput::complete("")),
    );
    // Post-hooks see the budgeted result, errors included.
    let result = match result {
        Ok(out) => Ok(apply_budget(out, entry.budget, cx.spill, call_id)),
        Err(mut error) => {
            // A write that ended before its rename leaves no temporary file behind.
            for failed in super::remove_call_temps(entry, &args, cx.session_id, call_id)
                .into_iter()
                .filter_map(Result::err)
            {
                error.message = format!("{}; {failed}", error.message);
            }
            let error = match entry.plugin() {
                Some(_) => super::path_errors::explain(&entry.spec, &entry.grant, &args, error),
                None => error,
            };
            Err(bound_error(error, entry.budget))
        }
    };
    let outcome = cx
        .gate
        .after(gate_call(cx, call_id, entry, &args), result)
        .await;
    context.extend(outcome.context);
    report.result = outcome.result.clone();
    Executed {
        result: outcome.result,
        report: Some(report),
        args: Some(args),
        context,
        approval,
    }
}

/// A call the gate let through: the arguments it runs with, hook context, and how the user
/// approved it.
struct Admitted {
    args: serde_json::Value,
    context: Vec<String>,
    approval: Option<Asked>,
}

/// Asks the gate (pre-hooks, approval) about the call, unless the abort came first; a refusal
/// is the call's whole outcome.
async fn admit(
    cx: &CallContext<'_>,
    call_id: &str,
    entry: &ToolEntry,
    args: serde_json::Value,
) -> Result<Admitted, Executed> {
    if cx.cancel.is_cancelled() {
        return Err(Executed::refused(not_executed(), Vec::new()));
    }
    let admission = tokio::select! {
        biased;
        _ = cx.cancel.cancelled() => return Err(Executed::refused(not_executed(), Vec::new())),
        admission = cx.gate.before(gate_call(cx, call_id, entry, &args)) => admission,
    };
    let approval = cx.gate.approval(call_id);
    let (args, context) = match admission {
        Admission::Deny { reason, context } => {
            let error = ToolError::new(ErrorCode::Denied, format!("the call was denied: {reason}"));
            return Err(Executed {
                approval,
                ..Executed::refused(error, context)
            });
        }
        Admission::Stop { reason, context } => {
            let error = ToolError::new(
                ErrorCode::ApprovalRequired,
                format!("the call was not run: {reason}; the session stops here"),
            );
            return Err(Executed {
                approval,
                ..Executed::refused(error, context)
            });
        }
        Admission::Declined { reason, context } => {
            let error = ToolError::new(
                ErrorCode::Declined,
                format!("{reason}; do not retry it: wait for the user to say what to do instead"),
            );
            return Err(Executed::refused(error, context));
        }
        Admission::Allow {
            args: rewritten,
            context,
        } if rewritten != args => {
            if let Err(error) = recheck_rewritten(entry, &rewritten) {
                return Err(Executed::refused(error, context));
            }
            (rewritten, context)
        }
        Admission::Allow { context, .. } => (args, context),
    };
    Ok(Admitted {
        args,
        context,
        approval,
    })
}

/// A hook rewrote the arguments: they must pass the schema like the model's did.
fn recheck_rewritten(entry: &ToolEntry, rewritten: &serde_json::Value) -> Result<(), ToolError> {
    let raw = rewritten.to_string();
    validate_args(
        entry.spec.name.as_str(),
        &raw,
        rewritten,
        &entry.spec.parameters,
        &entry.validator,
    )
    .map_err(|mut error| {
        error.message = format!(
            "a pre-tool hook rewrote the arguments into ones the schema refuses: {}",
            error.message
        );
        error.retryable = false;
        error
    })
}

/// Runs the admitted call where its tool lives: a plugin in the sandbox under its grant, or an
/// MCP server. C3: the tool receives exactly the validated value.
async fn run_backend(
    cx: &CallContext<'_>,
    call_id: &str,
    entry: &ToolEntry,
    args: &serde_json::Value,
) -> CallReport {
    let name = entry.spec.name.as_str();
    match &entry.backend {
        Backend::Plugin(plugin) => {
            // The call's tag names the temporary files it may leave (`resume` removes them).
            // The shell command the gate admitted is the one it judged (and asked about):
            // the sandbox runs a command its rules would ask about only if it is this one.
            let grant = paddock_sandbox::Grant {
                call_tag: Some(paddock_sandbox::call_tag(cx.session_id, call_id)),
                spill: cx.spill.cloned(),
                admitted_command: paddock_sandbox::admitted_command(args),
                follow_up: paddock_sandbox::is_follow_up(args),
                live_output: cx.live.clone().map(|tap| {
                    let id = call_id.to_string();
                    paddock_sandbox::LiveOutput::new(move |text: &str| tap(&id, text))
                }),
                ..entry.grant.clone()
            };
            cx.sandbox
                .call(plugin, name, &args.to_string(), &grant, &cx.cancel)
                .await
        }
        Backend::Mcp(tool) => {
            let started = std::time::Instant::now();
            let result = tool
                .server
                .call(&tool.remote, args.clone(), &cx.cancel)
                .await;
            CallReport::of_host(result, started.elapsed())
        }
        Backend::Host(tool) => {
            let started = std::time::Instant::now();
            let result = tool
                .call(crate::calls::HostCall {
                    call_id,
                    args,
                    cancel: &cx.cancel,
                })
                .await;
            CallReport::of_host(result, started.elapsed())
        }
    }
}

/// The result of a call the abort reached before it started (X2).
pub fn not_executed() -> ToolError {
    ToolError::new(ErrorCode::NotExecuted, "not executed: the user interrupted")
}

fn gate_call<'a>(
    cx: &'a CallContext<'_>,
    call_id: &'a str,
    entry: &'a ToolEntry,
    args: &'a serde_json::Value,
) -> GateCall<'a> {
    GateCall {
        call_id,
        session_id: cx.session_id,
        preset: cx.preset,
        tool: &entry.spec,
        args,
        plugin: entry
            .plugin()
            .map(|plugin| (plugin.name.as_str(), &entry.grant)),
        cancel: &cx.cancel,
    }
}
