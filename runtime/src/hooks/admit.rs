//! Admission of one call (H1, C2, T2): the pre-tool chain's verdict, then approval by risk
//! where the stricter answer wins; a question shows the whole call, and an `a` (always) answer
//! approves its pattern for the rest of the session.

use super::approval::{Refused, RefusedBy};
use crate::ask::Question;
use super::chain::{HookChain, PreVerdict};
use super::question::{Pattern, render_call};
use paddock_types::contract::ToolResult;
use crate::log::Asked;
use crate::pipeline::{Admission, AfterCall, CallGate, GateCall};
use crate::preset::ApprovalMode;
use paddock_sandbox::{
    Permission, ShellJudgement, ShellVerdict, is_follow_up, judge_program, judge_shell_command,
};

impl HookChain {
    /// Approval by risk, combined with what the hooks said: the stricter wins. `Ok(Some(how))`
    /// when the user approved it (now, or earlier with `a`), for the log.
    async fn approve(
        &self,
        call: GateCall<'_>,
        verdict: &PreVerdict,
        shell: Option<(ShellJudgement, String)>,
        program: Option<ShellJudgement>,
    ) -> Result<Option<Asked>, Refused> {
        let (mode, tier) = self.approval.mode(call.tool.meta.risk);
        let key = format!("approval.{tier}");
        // A program the exec rules refuse is refused before any question; one an `ask` rule
        // matches is asked about whatever its tier allows.
        let program_ask = match program.map(|p| p.verdict) {
            Some(ShellVerdict::Deny(reason)) => {
                return Err(Refused {
                    reason,
                    by: RefusedBy::Policy,
                });
            }
            Some(ShellVerdict::Ask(reasons)) => Some(reasons.join("; ")),
            _ => None,
        };
        // A shell call is judged by what it runs, under the rules the user wrote for the
        // plugin's programs; its tier (every tool importing exec is high) does not apply.
        if mode == ApprovalMode::Deny && shell.is_none() {
            return Err(Refused {
                reason: format!(
                    "{} is {tier} risk, and the preset denies {tier}-risk tools (`{key} = \"deny\"`)",
                    call.tool.name
                ),
                by: RefusedBy::Policy,
            });
        }
        // A shell command is judged by what it runs, under the plugin's exec rules: that
        // judgement stands in for the tool's risk tier (the hooks may still ask).
        let (why, key) = match (&verdict.permission, mode, &shell) {
            (Permission::Ask(reason), _, _) => (
                reason.clone(),
                verdict.asked_by.clone().unwrap_or_else(|| "hooks".into()),
            ),
            (_, _, Some((judged, exec_key))) => match &judged.verdict {
                ShellVerdict::Allow => return Ok(None),
                ShellVerdict::Deny(reason) => {
                    return Err(Refused {
                        reason: reason.clone(),
                        by: RefusedBy::Policy,
                    });
                }
                ShellVerdict::Ask(reasons) => (reasons.join("; "), exec_key.clone()),
            },
            (_, _, None) if program_ask.is_some() => (
                program_ask.clone().unwrap_or_default(),
                call.plugin
                    .map(|(plugin, _)| format!("plugins.{plugin}.grants.exec"))
                    .unwrap_or(key),
            ),
            (_, ApprovalMode::Ask, None) => (
                format!("the preset asks for {tier}-risk tools (`{key} = \"ask\"`)"),
                key,
            ),
            _ => return Ok(None),
        };
        let pattern = Pattern::offered(&call.tool.name, call.args);
        // One question at a time, and the `always` list read after waiting for the previous
        // one: a parallel call that an `a` just covered is not asked about.
        let _asking = self.asking.lock().await;
        if let Some(earlier) = self
            .always()
            .iter()
            .find(|p| p.matches(&call.tool.name, call.args))
        {
            return Ok(Some(Asked::AlwaysEarlier(earlier.shown())));
        }
        let mut lines = render_call(call.args).map_err(|reason| Refused {
            reason,
            by: RefusedBy::Policy,
        })?;
        if let Some((judged, _)) = &shell {
            lines.extend(judged.shown.iter().cloned());
        }
        let always = self
            .approval
            .confirm(Question {
                call: call.call_id.to_string(),
                tool: call.tool.name.clone(),
                lines,
                why,
                key,
                pattern: pattern.shown(),
            })
            .await?;
        if !always {
            return Ok(Some(Asked::Once));
        }
        let how = Asked::Always(pattern.shown());
        self.always().push(pattern);
        Ok(Some(how))
    }

    /// The first pre-tool hook's refusal of a write to one of `targets`, asked as if
    /// `write_file` wrote it; `None` when every hook allows them all.
    async fn writes_refused(&self, call: GateCall<'_>, targets: &[String]) -> Option<String> {
        // A plugin that can write nothing writes nothing of the user's (its redirections
        // reach only its private temporary directory).
        if targets.is_empty() || call.plugin.is_some_and(|(_, grant)| grant.writes_nothing()) {
            return None;
        }
        let write_file = paddock_types::contract::ToolSpec {
            name: "write_file".into(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object"}),
            examples: Vec::new(),
            meta: paddock_types::contract::RuntimeMeta {
                read_only: Some(false),
                path_params: vec!["path".into()],
                ..Default::default()
            },
        };
        for target in targets {
            let args = serde_json::json!({"path": target, "content": ""});
            let as_write = GateCall {
                tool: &write_file,
                args: &args,
                plugin: None,
                ..call
            };
            if let Permission::Deny(reason) = self.pre_tool_use(as_write).await.permission {
                return Some(format!(
                    "the command writes `{target}` by redirection, and write_file may not write \
                     it: {reason}"
                ));
            }
        }
        None
    }

    fn approved_calls(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Asked>> {
        self.approved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn always(&self) -> std::sync::MutexGuard<'_, Vec<Pattern>> {
        self.always
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The judgement of a shell command: the call's `command` argument, when a plugin granted
/// `exec` runs the tool, with the key of the rules that judged it.
async fn shell_judgement(
    call: GateCall<'_>,
) -> Result<Option<(ShellJudgement, String)>, Refused> {
    let Some((plugin, grant)) = call.plugin else {
        return Ok(None);
    };
    let Some(exec) = &grant.exec else {
        return Ok(None);
    };
    let command = call.args.get("command").and_then(serde_json::Value::as_str);
    let Some(command) = command else {
        // A follow-up of a command already judged (waiting for it, interrupting it, typing
        // into its terminal) starts nothing: the capability acts only on the session's own
        // commands, and runs no other program without the rules allowing it.
        if is_follow_up(call.args) {
            return Ok(Some((
                ShellJudgement {
                    verdict: ShellVerdict::Allow,
                    shown: Vec::new(),
                    writes: Vec::new(),
                },
                format!("plugins.{plugin}.grants.exec"),
            )));
        }
        return Ok(None);
    };
    let judged = judge_shell_command(&grant.session, exec, plugin, command)
        .await
        .map_err(|reason| Refused {
            reason,
            by: RefusedBy::Policy,
        })?;
    Ok(Some((judged, format!("plugins.{plugin}.grants.exec"))))
}

#[async_trait::async_trait]
impl CallGate for HookChain {
    async fn before(&self, call: GateCall<'_>) -> Admission {
        let verdict = self.pre_tool_use(call).await;
        if let Permission::Deny(reason) = &verdict.permission {
            return Admission::Deny {
                reason: reason.clone(),
                context: verdict.context,
            };
        }
        // Approval sees the arguments the tool would run with.
        let rewritten = GateCall {
            args: &verdict.args,
            ..call
        };
        let shell = match shell_judgement(rewritten).await {
            Ok(shell) => shell,
            Err(refused) => {
                return Admission::Deny {
                    reason: refused.reason,
                    context: verdict.context,
                };
            }
        };
        // A file a shell command writes by redirection is judged as write_file's path would
        // be: the pre-tool hooks that guard write_file see it.
        if let Some((judged, _)) = &shell
            && let Some(reason) = self.writes_refused(rewritten, &judged.writes).await
        {
            return Admission::Deny {
                reason,
                context: verdict.context,
            };
        }
        let program = match (&shell, call.plugin) {
            (None, Some((plugin, grant))) => grant
                .exec
                .as_ref()
                .and_then(|exec| judge_program(exec, &grant.mounts, plugin, &verdict.args)),
            _ => None,
        };
        match self.approve(rewritten, &verdict, shell, program).await {
            Ok(approval) => {
                if let Some(how) = approval {
                    self.approved_calls().insert(call.call_id.to_string(), how);
                }
                Admission::Allow {
                    args: verdict.args,
                    context: verdict.context,
                }
            }
            Err(Refused {
                reason,
                by: RefusedBy::User,
            }) => Admission::Declined {
                reason,
                context: verdict.context,
            },
            Err(Refused {
                reason,
                by: RefusedBy::NoAnswer { stop },
            }) => {
                // Logged with the call's result, and counted (`denied_calls`).
                self.approved_calls()
                    .insert(call.call_id.to_string(), Asked::Unanswered);
                match stop {
                    true => Admission::Stop {
                        reason,
                        context: verdict.context,
                    },
                    false => Admission::Deny {
                        reason,
                        context: verdict.context,
                    },
                }
            }
            Err(Refused {
                reason,
                by: RefusedBy::Policy,
            }) => Admission::Deny {
                reason,
                context: verdict.context,
            },
        }
    }

    async fn after(&self, call: GateCall<'_>, result: ToolResult) -> AfterCall {
        self.post_tool_use(call, result).await
    }

    fn approval(&self, call_id: &str) -> Option<Asked> {
        self.approved_calls().remove(call_id)
    }
}
