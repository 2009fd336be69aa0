//! A raw call checked once, before anything is logged or run (V3, C3): the entry its name
//! resolved to, the repairs applied, the validated arguments or the error the call ends with
//! unrun, and the real paths it touches (X1). The log's queue entry, the scheduler's grouping
//! and locks, and the run itself all read this one check.

use serde_json::Value;

use serde::Serialize;

use super::locks::Access;
use crate::calls::{AliasTable, Disposition, Registry, Repair, ToolEntry, check_call};
use paddock_types::contract::{ErrorCode, ToolError};

/// One call as the model sent it: an id, a name and the raw argument text.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, Serialize)]
pub struct RawCall {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub arguments: String,
}

/// One call after the checker, ready to be queued and scheduled.
pub struct Prepared<'r> {
    pub call: RawCall,
    /// The registered tool the name resolved to.
    pub tool: Option<String>,
    pub repairs: Vec<Repair>,
    entry: Option<&'r ToolEntry>,
    args: Result<Value, ToolError>,
    access: Option<Access>,
    /// Set by `refuse`: the call ends with this error without running.
    refused: Option<ToolError>,
}

impl<'r> Prepared<'r> {
    /// Resolves `call`'s name with the session's aliases, repairs and validates its
    /// arguments, and works out what it touches.
    pub fn check(registry: &'r Registry, aliases: &AliasTable, call: RawCall) -> Prepared<'r> {
        let checked = check_call(registry, aliases, &call.name, &call.arguments);
        let entry = checked.tool.as_deref().and_then(|t| registry.get(t));
        let args = match (entry, checked.args) {
            (None, Ok(_)) => Err(ToolError::new(
                ErrorCode::Host,
                "the registry lost a tool it had just resolved",
            )),
            (_, args) => args,
        };
        let access = match (entry, &args) {
            (Some(entry), Ok(args)) => Some(Access::of(&entry.spec, args, &entry.grant.mounts)),
            _ => None,
        };
        Prepared {
            call,
            tool: checked.tool,
            repairs: checked.repairs,
            entry,
            args,
            access,
            refused: None,
        }
    }

    /// The call is logged as checked but never runs: it ends with `error`, which goes back to
    /// the model (a call the model's response was cut off in the middle of).
    pub fn refuse(mut self, error: ToolError) -> Prepared<'r> {
        self.refused = Some(error);
        self
    }

    /// Whether running the call again is harmless. A call that cannot run (an unknown tool,
    /// arguments that fail the check) counts as idempotent: there is nothing to repeat.
    pub fn idempotent(&self) -> bool {
        self.entry.is_none_or(|e| e.spec.meta.is_idempotent())
    }

    /// The entry and the validated arguments, once the call passed the check.
    pub fn checked(&self) -> Option<(&'r ToolEntry, &Value)> {
        match (self.entry, &self.args) {
            (Some(entry), Ok(args)) => Some((entry, args)),
            _ => None,
        }
    }

    /// The real paths the call touches, once its arguments passed the check.
    pub fn access(&self) -> Option<&Access> {
        self.access.as_ref()
    }

    /// The entry, arguments and access of a call that may run, or the error it ends with and
    /// where that error sends the turn.
    pub(super) fn runnable(&self) -> Result<(&'r ToolEntry, &Value, &Access), Refusal> {
        if let Some(error) = &self.refused {
            return Err(Refusal {
                error: error.clone(),
                disposition: Disposition::ToModel,
            });
        }
        match (self.entry, &self.args, &self.access) {
            (Some(entry), Ok(args), Some(access)) => Ok((entry, args, access)),
            (_, Err(error), _) => Err(Refusal {
                disposition: Disposition::of(&error.code),
                error: error.clone(),
            }),
            _ => Err(Refusal {
                error: ToolError::new(ErrorCode::Host, "a checked call lost its tool"),
                disposition: Disposition::EndTurn(crate::calls::EndReason::HostFault),
            }),
        }
    }
}

/// Why a checked call does not run.
pub(super) struct Refusal {
    pub error: ToolError,
    pub disposition: Disposition,
}
