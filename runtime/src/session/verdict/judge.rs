//! One verdict on a preset, for `preset check` and for every command that starts with one
//! (`run`, `chat`, `resume`, `tool call|list|batch`, `mcp serve`): parse, the findings on the
//! text as written (empty strings, grants that reach the data directory, `hooks_drop`),
//! resolve, load every plugin, then the findings on what the plugins provide and on each hook's
//! `config` against what the hook declares. An error
//! refuses (exit 2, each finding with its `file:line:column` and fix); warnings travel with
//! the preset for the caller to show once. No command has a more lenient path than `check`.

use super::findings::{self, Finding, LoadedPlugin, Severity};
use super::locate::Seg;
use super::{empty, hook_config, inherit, locate, reach};
use crate::calls::Registry;
use paddock_sandbox::SpillDir;
use crate::preset::{Found, ResolveContext, ResolvedPreset};
use paddock_sandbox::{Mount, Plugin};
use crate::session::{Env, SetupCode, SetupError};

/// One finding as shown: where, what, and the fix.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Shown {
    #[serde(skip)]
    pub error: bool,
    /// `file:line:column` of the key in the file that writes it.
    pub at: String,
    /// The key path, `plugins.fs.mounts[1].guest`.
    pub key: String,
    pub message: String,
    pub fix: String,
}

impl Shown {
    fn of(found: &Found, finding: &Finding) -> Shown {
        let mut file = finding.file;
        let mut path = finding.at.clone();
        // `hooks[i]` of the effective preset is the base's hooks, then the preset's: the
        // entry is found in the file that wrote it, under its index there.
        if let [Seg::Key(hooks), Seg::Index(i), ..] = &mut path.0[..]
            && hooks.as_str() == "hooks"
            && let Some(origin) = inherit::hooks(&found.written).0.get(*i)
        {
            *i = origin.index;
            file = Some(origin.file);
        }
        let chain = match file.and_then(|i| found.written.get(i)) {
            Some(file) => std::slice::from_ref(file),
            None => &found.written[..],
        };
        Shown {
            error: finding.severity == Severity::Error,
            at: locate::locate(chain, &path),
            key: finding.at.to_string(),
            message: finding.message.clone(),
            fix: finding.fix.clone(),
        }
    }
}

/// A preset that holds: resolved, its plugins loaded, and its warnings.
pub struct Judged {
    pub resolved: ResolvedPreset,
    pub plugins: Vec<Plugin>,
    pub warnings: Vec<Shown>,
}

/// What judging needs besides the preset: the spill directory a session mounts, and
/// `--mount` replacing the plugins' mounts.
#[derive(Default)]
pub struct Start<'a> {
    pub spill: Option<&'a SpillDir>,
    pub mount_override: Option<&'a [Mount]>,
}

/// The verdict on `found` (looked up as `name`).
pub async fn judge(
    env: &Env,
    found: &Found,
    name: &str,
    start: Start<'_>,
) -> Result<Judged, SetupError> {
    let file = found
        .parse()
        .map_err(|e| SetupError::usage(e.to_string()))?;
    let overridden = start.mount_override.is_some();
    let mut written = empty::empty_strings(&found.source.text);
    written.extend(inherit::hooks(&found.written).1);
    written.extend(reach::data_dir(
        &file,
        &env.cwd,
        env.store.root(),
        overridden,
    ));
    let refuse = |all: &[Finding], resolved: Option<&str>| {
        let shown: Vec<Shown> = all.iter().map(|f| Shown::of(found, f)).collect();
        let errors = shown.iter().filter(|f| f.error).count();
        // Why the preset does not start: every finding (errors and warnings, in the preset's
        // order) and one summary line.
        SetupError {
            code: SetupCode::Usage,
            message: format!(
                "{name}: preset `{}` would not work as written: {errors} error(s), {} \
                 warning(s)",
                resolved.unwrap_or(name),
                shown.len() - errors
            ),
            findings: shown,
        }
    };
    let has_errors = |all: &[Finding]| all.iter().any(|f| f.severity == Severity::Error);
    if has_errors(&written) {
        return Err(refuse(&written, file.name.as_deref()));
    }
    let cx = ResolveContext {
        cwd: &env.cwd,
        data_dir: env.store.root(),
        spill: start.spill,
        mount_override: start.mount_override,
    };
    let resolved = file
        .resolve(name, &cx)
        .map_err(|e| SetupError::usage(e.to_string()))?;
    let plugins = Registry::load_plugins(&env.sandbox, &env.store, &resolved)
        .await
        .map_err(|e| SetupError::new(SetupCode::BadPlugin, format!("{name}: {e}")))?;
    let views: Vec<LoadedPlugin<'_>> = plugins
        .iter()
        .map(|p| LoadedPlugin {
            name: &p.name,
            tools: &p.tools,
            imports: &p.imports,
        })
        .collect();
    let mut all = written;
    all.extend(findings::findings(&file, &views, overridden));
    let declared = hook_config::declared(&env.sandbox, &env.store, &resolved).await;
    all.extend(hook_config::hook_configs(&file, &declared));
    if has_errors(&all) {
        return Err(refuse(&all, Some(&resolved.name)));
    }
    Ok(Judged {
        warnings: all.iter().map(|f| Shown::of(found, f)).collect(),
        resolved,
        plugins,
    })
}
