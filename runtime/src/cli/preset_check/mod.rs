//! `paddock preset check FILE|NAME` (P1): the verdict every start gives too (`judge.rs`:
//! parse strictly, the findings on the text as written, resolve, load every plugin, then the
//! deep checks of `findings.rs`), each printed with the `file:line:column` of the file that
//! writes the key (`locate.rs`: for a preset that `extends` another, the preset's own file or
//! its base's) and a fix. Errors fail the check (exit 2); warnings are printed and pass. A
//! preset without errors then loads as a session would: the registry (MCP servers) and the
//! hook chain.

mod empty;
mod findings;
mod hook_config;
mod inherit;
pub(crate) mod judge;
mod locate;
mod reach;

use super::style::{self, GREEN, RED, paint, sanitize};
use super::{Env, Exit};
use crate::calls::Registry;
use crate::hooks::{Approval, HookChain, TerminalApprover};
use crate::preset;
pub(crate) use inherit::hooks as hook_origins;
pub(crate) use judge::{Judged, Start, judge};
pub(crate) use locate::{KeyPath, locate};

pub(super) async fn check(env: &Env, name: &str) -> Exit {
    let project = super::trust::project_trusted_for(env, name);
    let found = match preset::find_written(name, &env.cwd, project) {
        Ok(found) => found,
        Err(e) => return fail(&e.to_string()),
    };
    let judged = match judge(env, &found, name, Start::default()).await {
        Ok(judged) => judged,
        Err(refused) => {
            refused.print_findings();
            return fail(&refused.message);
        }
    };
    for warning in &judged.warnings {
        warning.print();
    }
    let Judged {
        resolved,
        plugins,
        warnings,
    } = judged;
    if let Err(e) = Registry::of_plugins(plugins, &resolved).await {
        return fail(&format!("{name}: {e}"));
    }
    let approval = Approval {
        policy: resolved.approval,
        approver: Box::new(TerminalApprover::new()),
    };
    if let Err(e) = HookChain::load(&env.sandbox, &env.store, &resolved, approval).await {
        return fail(&format!("{name}: {e}"));
    }
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
    Exit::Ok
}

/// Errors quote the preset's text (keys, values, paths), which may come from anywhere (T3).
/// A message of several lines (every mistake of a file) is one `error:` a line.
fn fail(message: &str) -> Exit {
    for line in message.lines() {
        eprintln!(
            "{} {}",
            paint(style::color_enabled_stderr(), RED, "error:"),
            sanitize(line)
        );
    }
    Exit::Usage
}
