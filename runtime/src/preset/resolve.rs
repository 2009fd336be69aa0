//! From the preset as written to what the sandbox enforces: sources classified, relative mount
//! paths made absolute, limits filled with defaults, and unsafe mounts refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::context::{PluginSource, ResolveContext, make_mount};
use super::file::{PluginEntry, PresetFile};
use super::policy::{ApprovalPolicy, LoopBudgets, ResolvedHook, check_pin, grants};
use super::sections::FuelSetting;
use super::tools::ToolSelection;
use super::{PresetError, check_mount_is_safe};
use crate::model::ProviderConfig;
use paddock_sandbox::{Grant, Limits, Mount, MountMode};
use paddock_types::contract::Risk;

/// One plugin, ready to load.
#[derive(Debug, Clone, Serialize)]
pub struct ResolvedPlugin {
    pub name: String,
    pub source: PluginSource,
    pub sha256: Option<String>,
    pub grant: Grant,
    /// The tool's own output budget applies unless the preset sets `output_bytes`.
    pub output_bytes: Option<u64>,
    /// The preset's floor on this plugin's risk (K5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub risk: Option<Risk>,
    /// Tools whose risk the preset sets by name, lower than their floor if it says so.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_risk: BTreeMap<String, Risk>,
}

/// A preset with every default filled in and every path absolute.
#[derive(Debug, Clone, Serialize)]
pub struct ResolvedPreset {
    pub name: String,
    /// The model, for the loop; `preset show` prints it separately.
    #[serde(skip)]
    pub model: Option<ProviderConfig>,
    pub limits: LoopBudgets,
    pub plugins: Vec<ResolvedPlugin>,
    /// Enable/disable globs (applied with `Registry::retain`) and aliases (parsed here, used
    /// by the alias table when it comes).
    pub tools: ToolSelection,
    pub hooks: Vec<ResolvedHook>,
    pub approval: ApprovalPolicy,
    /// MCP servers to start confined (`[mcp.NAME]`).
    pub mcp: Vec<super::ResolvedMcp>,
    /// Skill folders the preset names (`skills`), absolute.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<PathBuf>,
    /// How the writable mounts are recorded for rewind (`[checkpoints]`).
    pub checkpoints: super::policy::CheckpointPolicy,
}

impl ResolvedPreset {
    #[cfg(any(test, feature = "internals"))]
    /// Does the preset's tool selection keep tool `name` (any plugin's)?
    pub fn keeps_tool(&self, name: &str) -> bool {
        self.tools.keeps(None, name)
    }

    /// Does the preset's tool selection keep tool `name` of plugin `plugin` (`PLUGIN:tool`
    /// entries count too)?
    pub fn keeps(&self, plugin: &str, name: &str) -> bool {
        self.tools.keeps(Some(plugin), name)
    }
}

impl PresetFile {
    /// Where relative `source` paths start: the preset file's directory (relative to `cwd`
    /// when the file was named relatively), else `cwd`.
    pub fn source_dir(&self, cwd: &Path) -> PathBuf {
        match &self.base_dir {
            Some(dir) => cwd.join(dir),
            None => cwd.to_path_buf(),
        }
    }

    /// Resolves the preset; an error names the file and the key.
    pub fn resolve(
        &self,
        fallback_name: &str,
        cx: &ResolveContext<'_>,
    ) -> Result<ResolvedPreset, PresetError> {
        self.resolve_here(fallback_name, cx)
            .map_err(|e| match self.origin.as_str() {
                "" => e,
                origin => PresetError(format!("{origin}: {}", e.0)),
            })
    }

    fn resolve_here(
        &self,
        fallback_name: &str,
        cx: &ResolveContext<'_>,
    ) -> Result<ResolvedPreset, PresetError> {
        let plugins = self
            .plugins
            .iter()
            .map(|(name, entry)| resolve_plugin(name, entry, &self.source_dir(cx.cwd), cx))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(model) = &self.model
            && model.model.trim().is_empty()
        {
            return Err(PresetError(
                "model.model: name the model, e.g. \"gpt-4.1-mini\"".into(),
            ));
        }
        for (alias, target) in &self.tools.aliases {
            if !paddock_types::contract::valid_tool_name(alias)
                || !paddock_types::contract::valid_tool_name(target)
            {
                return Err(PresetError(format!(
                    "tools.aliases: {alias:?} = {target:?}: both must be tool names \
                     (^[A-Za-z0-9_-]{{1,64}}$)"
                )));
            }
        }
        Ok(ResolvedPreset {
            name: self
                .name
                .clone()
                .unwrap_or_else(|| fallback_name.to_string()),
            model: self.model.clone(),
            limits: self.budgets(),
            plugins,
            tools: self.tools.clone(),
            hooks: self.resolve_hooks(cx)?,
            approval: self.approval_policy(),
            checkpoints: self.checkpoint_policy(),
            mcp: self
                .mcp
                .iter()
                .map(|(name, entry)| super::mcp::resolve_mcp(name, entry, cx))
                .collect::<Result<Vec<_>, _>>()?,
            skills: self
                .skills
                .iter()
                .map(|s| self.source_dir(cx.cwd).join(crate::preset::home_path(s)))
                .collect(),
        })
    }
}

fn resolve_plugin(
    name: &str,
    entry: &PluginEntry,
    source_dir: &Path,
    cx: &ResolveContext<'_>,
) -> Result<ResolvedPlugin, PresetError> {
    if !paddock_types::contract::valid_tool_name(name) {
        return Err(PresetError(format!(
            "plugins.{name}: plugin names must match ^[A-Za-z0-9_-]{{1,64}}$"
        )));
    }
    check_pin(&format!("plugins.{name}"), entry.sha256.as_deref())?;
    let mut mounts = match cx.mount_override {
        Some(mounts) => mounts.to_vec(),
        None => entry
            .mounts
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let key = format!("plugins.{name}.mounts[{i}]");
                make_mount(&key, &m.host, &m.guest, m.mode, cx.cwd)
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    for mount in &mounts {
        check_mount_is_safe(mount, cx.data_dir)?;
    }
    super::policy::check_exec_reach(
        &format!("plugins.{name}.grants.exec"),
        entry.grants.exec.as_ref(),
        cx.data_dir,
    )?;
    if entry.read_spill
        && let Some(spill) = cx.spill
    {
        // Private (0700, parents too): the spill holds whole results of this session only.
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&spill.host)
            .map_err(|e| {
                PresetError(format!(
                    "cannot create spill directory {}: {e}",
                    spill.host.display()
                ))
            })?;
        let host = spill
            .host
            .canonicalize()
            .unwrap_or_else(|_| spill.host.clone());
        let mount = Mount::open(host, spill.guest.clone(), MountMode::Ro).map_err(|e| {
            PresetError(format!(
                "cannot open spill directory {}: {e}",
                spill.host.display()
            ))
        })?;
        mounts.push(mount);
    }
    let defaults = Limits::default();
    let limits = Limits {
        fuel: FuelSetting::resolve(entry.fuel, defaults.fuel),
        timeout: entry
            .timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(defaults.timeout),
        memory_bytes: entry
            .memory_mb
            .map(|mb| mb << 20)
            .unwrap_or(defaults.memory_bytes),
        output_bytes: entry.output_bytes,
        stdio_bytes: entry.stdio_bytes.unwrap_or(defaults.stdio_bytes),
    };
    if limits.timeout.is_zero() {
        return Err(PresetError(format!(
            "plugins.{name}.timeout_ms: must be above 0"
        )));
    }
    if limits.memory_bytes == 0 {
        return Err(PresetError(format!(
            "plugins.{name}.memory_mb: must be above 0"
        )));
    }
    Ok(ResolvedPlugin {
        name: name.to_string(),
        source: PluginSource::parse(&entry.source, source_dir),
        sha256: entry.sha256.clone(),
        grant: Grant {
            mounts,
            limits,
            ..grants(Some(&entry.grants))
        },
        output_bytes: entry.output_bytes,
        risk: entry.risk,
        tool_risk: entry.tool_risk.clone(),
    })
}
