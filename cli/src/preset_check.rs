//! `paddock preset check FILE|NAME` (P1): the verdict every start gives too
//! (`session::verdict`), each finding printed with the `file:line:column` of the file that
//! writes the key and a fix. Errors fail the check (exit 2); warnings are printed and pass. A
//! preset without errors then loads as a session would: the registry (MCP servers) and the
//! hook chain.

use super::report::{CommandResult, Failure, print_finding};
use super::style::{self, GREEN, paint, sanitize};
use super::{Env, Exit};
use crate::approver::TerminalApprover;
use paddock::calls::Registry;
use paddock::hooks::{Approval, HookChain};
use paddock::preset;
use paddock::session::verdict::{Judged, Start, judge};

pub(super) async fn check(env: &Env, name: &str) -> CommandResult {
    let project = super::trust::project_trusted_for(env, name);
    let found = preset::find_written(name, &env.cwd, project).map_err(Failure::usage)?;
    let judged = judge(env, &found, name, Start::default())
        .await
        .map_err(|refused| Failure {
            findings: refused.findings,
            ..Failure::usage(refused.message)
        })?;
    for warning in &judged.warnings {
        print_finding(warning);
    }
    let Judged {
        resolved,
        plugins,
        warnings,
    } = judged;
    if let Err(e) = Registry::of_plugins(plugins, &resolved).await {
        return Err(Failure::usage(format!("{name}: {e}")));
    }
    let approval = Approval {
        policy: resolved.approval,
        approver: Box::new(TerminalApprover::new()),
    };
    if let Err(e) = HookChain::load(&env.sandbox, &env.store, &resolved, approval).await {
        return Err(Failure::usage(format!("{name}: {e}")));
    }
    super::skill::report(env, &resolved);
    let warned = match warnings.len() {
        0 => String::new(),
        n => format!(", {n} warning(s)"),
    };
    println!(
        "{} {}: preset `{}` is valid ({} plugins, {} hooks{warned})",
        paint(style::color_enabled_stdout(), GREEN, "ok"),
        sanitize(name),
        sanitize(&resolved.name),
        resolved.plugins.len(),
        resolved.hooks.len()
    );
    Ok(Exit::Ok)
}
