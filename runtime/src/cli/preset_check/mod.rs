//! `paddock preset check FILE|NAME` (P1): parse strictly, resolve, load every plugin on its
//! own, then the deep checks (`findings.rs`), each printed with the `file:line:column` of the
//! file that writes the key (`locate.rs`: for a preset that `extends` another, the preset's
//! own file or its base's) and a fix. Errors fail the check (exit 2); warnings are printed and
//! pass. A preset without errors then loads as a session would: the registry (pins, MCP
//! servers) and the hook chain.

mod findings;
mod locate;

use super::style::{self, GREEN, RED, YELLOW, paint, sanitize};
use super::{Env, Exit};
use crate::calls::Registry;
use crate::hooks::{Approval, HookChain, TerminalApprover};
use crate::preset::{self, ResolveContext};
use findings::{LoadedPlugin, Severity};

pub(super) async fn check(env: &Env, name: &str) -> Exit {
    let project = super::trust::project_trusted_for(env, name);
    let (source, chain) = match preset::find_written(name, &env.cwd, project) {
        Ok(found) => found,
        Err(e) => return fail(&e.to_string()),
    };
    let file = match source.parse() {
        Ok(file) => file,
        Err(e) => return fail(&e.to_string()),
    };
    let cx = ResolveContext {
        cwd: &env.cwd,
        data_dir: env.store.root(),
        spill: None,
        mount_override: None,
    };
    let resolved = match file.resolve(name, &cx) {
        Ok(resolved) => resolved,
        Err(e) => return fail(&e.to_string()),
    };
    let mut plugins = Vec::new();
    for plugin in &resolved.plugins {
        let loaded = match env.store.bytes(&plugin.source) {
            Ok(bytes) => env
                .sandbox
                .load(&plugin.name, &bytes, &plugin.grant.capabilities)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match loaded {
            Ok(loaded) => plugins.push(loaded),
            Err(e) => return fail(&format!("{name}: plugin `{}`: {e}", plugin.name)),
        }
    }
    let views: Vec<LoadedPlugin<'_>> = plugins
        .iter()
        .map(|p| LoadedPlugin {
            name: &p.name,
            tools: &p.tools,
            imports: &p.imports,
        })
        .collect();
    let found = findings::findings(&file, &views);
    let color = style::color_enabled_stderr();
    for finding in &found {
        let (label, tint) = match finding.severity {
            Severity::Error => ("error:", RED),
            Severity::Warning => ("warning:", YELLOW),
        };
        eprintln!(
            "{} {}: {}: {}\n  fix: {}",
            paint(color, tint, label),
            sanitize(&locate::locate(&chain, &finding.at)),
            sanitize(&finding.at.to_string()),
            sanitize(&finding.message),
            sanitize(&finding.fix)
        );
    }
    let errors = found
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    let warnings = found.len() - errors;
    if errors > 0 {
        return fail(&format!(
            "{name}: preset `{}` would not work as written: {errors} error(s), {warnings} \
             warning(s)",
            resolved.name
        ));
    }
    if let Err(e) = Registry::load(&env.sandbox, &env.store, &resolved).await {
        return fail(&format!("{name}: {e}"));
    }
    let approval = Approval {
        policy: resolved.approval,
        approver: Box::new(TerminalApprover::new()),
    };
    if let Err(e) = HookChain::load(&env.sandbox, &env.store, &resolved, approval).await {
        return fail(&format!("{name}: {e}"));
    }
    let warned = match warnings {
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
fn fail(message: &str) -> Exit {
    eprintln!(
        "{} {}",
        paint(style::color_enabled_stderr(), RED, "error:"),
        sanitize(message)
    );
    Exit::Usage
}
