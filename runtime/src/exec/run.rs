//! One call through the spine, as far as it exists: look the tool up, parse and validate its
//! arguments, ask the gate (pre-hooks, approval), run it in the sandbox under its grant, pass
//! the result through its output budget, and let the gate see it (post-hooks). Never fails:
//! every outcome is a `ToolResult`.

use tokio_util::sync::CancellationToken;

use super::budget::{SpillDir, apply_budget};
use super::gate::{Admission, CallGate, GateCall};
use crate::calls::{Registry, parse_args, validate_args};
use crate::contract::{ErrorCode, ToolError, ToolResult, ToolSpec};
use crate::sandbox::{CallReport, Sandbox};

/// What a call needs from the session around it.
pub struct CallContext<'a> {
    pub sandbox: &'a Sandbox,
    pub registry: &'a Registry,
    pub spill: Option<&'a SpillDir>,
    pub gate: &'a dyn CallGate,
    pub session_id: &'a str,
    pub preset: &'a str,
    pub cancel: CancellationToken,
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
}

impl Executed {
    fn refused(error: ToolError, context: Vec<String>) -> Executed {
        Executed {
            result: Err(error),
            report: None,
            args: None,
            context,
        }
    }
}

pub async fn run_call(cx: &CallContext<'_>, call_id: &str, name: &str, raw_args: &str) -> Executed {
    let Some(entry) = cx.registry.get(name) else {
        let names = cx.registry.names_closest_to(name);
        let error = ToolError::new(
            ErrorCode::UnknownTool,
            format!(
                "there is no tool named {:?}. Available tools, closest first: {}. Call one of these by its exact name",
                name.chars().take(64).collect::<String>(),
                names.join(", ")
            ),
        )
        .retryable(true);
        return Executed::refused(error, Vec::new());
    };
    let checked = parse_args(name, raw_args, &entry.spec.parameters).and_then(|args| {
        validate_args(
            name,
            raw_args,
            &args,
            &entry.spec.parameters,
            &entry.validator,
        )?;
        Ok(args)
    });
    let args = match checked {
        Ok(args) => args,
        Err(error) => return Executed::refused(error, Vec::new()),
    };
    let admission = cx
        .gate
        .before(gate_call(cx, call_id, &entry.spec, &args))
        .await;
    let (args, mut context) = match admission {
        Admission::Deny { reason, context } => {
            let error = ToolError::new(ErrorCode::Denied, format!("the call was denied: {reason}"));
            return Executed::refused(error, context);
        }
        Admission::Allow {
            args: rewritten,
            context,
        } if rewritten != args => {
            // A hook rewrote the arguments: they must pass the schema like the model's did.
            let raw = rewritten.to_string();
            if let Err(mut error) = validate_args(
                name,
                &raw,
                &rewritten,
                &entry.spec.parameters,
                &entry.validator,
            ) {
                error.message = format!(
                    "a pre-tool hook rewrote the arguments into ones the schema refuses: {}",
                    error.message
                );
                error.retryable = false;
                return Executed::refused(error, context);
            }
            (rewritten, context)
        }
        Admission::Allow { context, .. } => (args, context),
    };
    // C3: the tool receives exactly the validated value.
    let mut report = cx
        .sandbox
        .call(
            &entry.plugin,
            name,
            &args.to_string(),
            &entry.grant,
            &cx.cancel,
        )
        .await;
    let result = std::mem::replace(
        &mut report.result,
        Ok(crate::contract::ToolOutput::complete("")),
    );
    let result = result.map(|out| apply_budget(out, entry.budget, cx.spill, call_id));
    let outcome = cx
        .gate
        .after(gate_call(cx, call_id, &entry.spec, &args), result)
        .await;
    context.extend(outcome.context);
    report.result = outcome.result.clone();
    Executed {
        result: outcome.result,
        report: Some(report),
        args: Some(args),
        context,
    }
}

fn gate_call<'a>(
    cx: &'a CallContext<'_>,
    call_id: &'a str,
    tool: &'a ToolSpec,
    args: &'a serde_json::Value,
) -> GateCall<'a> {
    GateCall {
        call_id,
        session_id: cx.session_id,
        preset: cx.preset,
        tool,
        args,
    }
}
