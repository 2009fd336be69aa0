//! One call through the spine, as far as it exists: look the tool up, parse and validate its
//! arguments, run it in the sandbox under its grant, and pass the result through its output
//! budget. Never fails: every outcome is a `ToolResult`.

use tokio_util::sync::CancellationToken;

use super::budget::{SpillDir, apply_budget};
use crate::calls::{Registry, parse_args, validate_args};
use crate::contract::{ErrorCode, ToolError, ToolResult};
use crate::sandbox::{CallReport, Sandbox};

/// What a call needs from the session around it.
pub struct CallContext<'a> {
    pub sandbox: &'a Sandbox,
    pub registry: &'a Registry,
    pub spill: Option<&'a SpillDir>,
    pub cancel: CancellationToken,
}

/// The result, and the sandbox's report when the call reached the sandbox.
#[derive(Debug)]
pub struct Executed {
    pub result: ToolResult,
    pub report: Option<CallReport>,
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
        return Executed {
            result: Err(error),
            report: None,
        };
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
        Err(error) => {
            return Executed {
                result: Err(error),
                report: None,
            };
        }
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
    report.result = result.clone();
    Executed {
        result,
        report: Some(report),
    }
}
