//! The registry: every tool of every plugin a preset loads, found by name through a map (never
//! an if/else chain), with its grant and its compiled argument validator beside it.

use std::collections::HashMap;
use std::sync::Arc;

use super::entry::{Backend, RegistryError, ToolEntry};
use super::mcp_tools::McpListed;
use paddock_types::contract::{OutputBudget, ToolSpec};
use crate::plugin_store::{PluginStore, StoreError};
use crate::preset::ResolvedPreset;
use paddock_sandbox::{Grant, Plugin, Sandbox};

/// All loaded tools by name.
#[derive(Default)]
pub struct Registry {
    pub(super) tools: HashMap<String, ToolEntry>,
    /// Tool names in the order the preset lists plugins and plugins list tools.
    pub(super) order: Vec<String>,
    plugins: Vec<Plugin>,
    /// Tools a loaded plugin provides that the preset's selection left out, with the plugin.
    dropped: HashMap<String, String>,
    /// Each MCP server's tools as its `tools/list` gave them, pinned, by server name.
    mcp_listed: Vec<(String, Vec<McpListed>)>,
}

impl Registry {
#[cfg(any(test, feature = "internals"))]
    /// Loads every plugin of `preset`, checking pins and grants. A plugin's tools that the
    /// preset's selection leaves out (`PLUGIN:tool` entries included) are not registered, so
    /// they cannot collide with another plugin's.
    pub async fn load(
        sandbox: &Sandbox,
        store: &PluginStore,
        preset: &ResolvedPreset,
    ) -> Result<Registry, RegistryError> {
        let plugins = Registry::load_plugins(sandbox, store, preset).await?;
        Registry::of_plugins(plugins, preset).await
    }

    /// Every plugin of `preset` loaded (its pin checked), in preset order, nothing registered
    /// yet: what a preset's checks look at before a session takes the plugins
    /// (`Registry::of_plugins`).
    pub async fn load_plugins(
        sandbox: &Sandbox,
        store: &PluginStore,
        preset: &ResolvedPreset,
    ) -> Result<Vec<Plugin>, RegistryError> {
        super::warm::compile_preset(sandbox, store, preset).await;
        let mut plugins = Vec::with_capacity(preset.plugins.len());
        for resolved in &preset.plugins {
            let err = |source: StoreError| RegistryError::Store {
                plugin: resolved.name.clone(),
                source,
            };
            let bytes = store.bytes(&resolved.source).map_err(err)?;
            let plugin = sandbox
                .load(&resolved.name, &bytes, &resolved.grant.capabilities)
                .await
                .map_err(|e| err(StoreError::Load(e)))?;
            if let Some(expected) = &resolved.sha256
                && *expected != plugin.sha256
            {
                return Err(err(StoreError::PinMismatch {
                    plugin: resolved.name.clone(),
                    expected: expected.clone(),
                    actual: plugin.sha256.clone(),
                }));
            }
            if let Some(tool) = resolved
                .tool_risk
                .keys()
                .find(|tool| !plugin.tools.iter().any(|spec| spec.name == **tool))
            {
                return Err(RegistryError::UnknownToolRisk {
                    plugin: resolved.name.clone(),
                    tool: tool.clone(),
                    known: plugin
                        .tools
                        .iter()
                        .map(|spec| format!("`{}`", spec.name))
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
            plugins.push(plugin);
        }
        Ok(plugins)
    }

    /// The registry of `plugins` (loaded by `load_plugins` for this `preset`, in its order)
    /// and of the preset's MCP servers, started here.
    pub async fn of_plugins(
        plugins: Vec<Plugin>,
        preset: &ResolvedPreset,
    ) -> Result<Registry, RegistryError> {
        let mut registry = Registry::default();
        let mut owner: HashMap<String, String> = HashMap::new();
        for (resolved, plugin) in preset.plugins.iter().zip(plugins) {
            let err = |source: StoreError| RegistryError::Store {
                plugin: resolved.name.clone(),
                source,
            };
            // The plugin's tools share one state for this session (its shell), and no other
            // session shares it.
            let plugin_grant = paddock_sandbox::Grant {
                session: paddock_sandbox::SessionState::fresh(),
                ..resolved.grant.clone()
            };
            for spec in plugin.tools.iter() {
                if !preset.keeps(&resolved.name, &spec.name) {
                    registry
                        .dropped
                        .insert(spec.name.clone(), resolved.name.clone());
                    continue;
                }
                if let Some(first) = owner.insert(spec.name.clone(), resolved.name.clone()) {
                    return Err(RegistryError::Collision {
                        tool: spec.name.clone(),
                        first,
                        second: resolved.name.clone(),
                    });
                }
                let mut budget = spec.meta.output_budget.unwrap_or(OutputBudget::DEFAULT);
                if let Some(max) = resolved.output_bytes {
                    budget.max_bytes = max;
                }
                // Schemas were compiled once at load already; this cannot fail for a loaded plugin.
                let validator = match jsonschema::validator_for(&spec.parameters) {
                    Ok(v) => Arc::new(v),
                    Err(e) => {
                        return Err(err(StoreError::Load(paddock_sandbox::LoadError::BadSpec {
                            plugin: resolved.name.clone(),
                            detail: e.to_string(),
                        })));
                    }
                };
                // K5: the preset may raise a plugin's risk, never lower it, except for a tool
                // it names in `tool_risk`.
                let mut spec = spec.clone();
                spec.meta.raise_risk(resolved.risk);
                if let Some(risk) = resolved.tool_risk.get(&spec.name) {
                    spec.meta.risk = Some(*risk);
                }
                registry.order.push(spec.name.clone());
                registry.tools.insert(
                    spec.name.clone(),
                    ToolEntry {
                        spec,
                        backend: Backend::Plugin(plugin.clone()),
                        grant: budgeted(&plugin_grant, budget),
                        budget,
                        validator,
                    },
                );
            }
            registry.plugins.push(plugin);
        }
        for server in &preset.mcp {
            let (entries, listed) = super::mcp_tools::load(&mut owner, server).await?;
            for (name, entry) in entries {
                registry.order.push(name.clone());
                registry.tools.insert(name, entry);
            }
            registry.mcp_listed.push((server.name.clone(), listed));
        }
        Ok(registry)
    }

    /// Offers a tool the host serves (`task`, `skill`), unless the preset's selection leaves
    /// it out (`keep(name)`) or a plugin's tool has its name already (the plugin's wins).
    pub fn add_host(
        &mut self,
        spec: ToolSpec,
        tool: Arc<dyn super::HostTool>,
        keep: impl Fn(&str) -> bool,
    ) -> bool {
        if self.tools.contains_key(&spec.name) {
            return false;
        }
        if !keep(&spec.name) {
            self.dropped
                .insert(spec.name.clone(), super::HOST.to_string());
            return false;
        }
        let Ok(validator) = jsonschema::validator_for(&spec.parameters) else {
            return false;
        };
        let budget = spec.meta.output_budget.unwrap_or(OutputBudget::DEFAULT);
        self.order.push(spec.name.clone());
        self.tools.insert(
            spec.name.clone(),
            ToolEntry {
                spec,
                backend: Backend::Host(tool),
                grant: Grant::default(),
                budget,
                validator: Arc::new(validator),
            },
        );
        true
    }

    /// Each MCP server's tools as listed at start (pinned for the lock), by server name.
    pub fn mcp_listed(&self) -> &[(String, Vec<McpListed>)] {
        &self.mcp_listed
    }

    /// Takes tools out of the registry as if they had never been offered: the model is not
    /// told of them, and a call to one is an unknown tool (a lock blocks them).
    pub fn block(&mut self, names: &[String]) {
        self.order.retain(|name| !names.contains(name));
        for name in names {
            self.tools.remove(name);
        }
    }

    /// Keeps only the tools `keep(name, owner)` accepts, e.g. a preset's enable/disable
    /// selection (P1); `owner` as `ToolEntry::owner` names it.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &str) -> bool) {
        let tools = &self.tools;
        let dropped = &mut self.dropped;
        self.order.retain(|name| {
            let owner = tools.get(name).map(ToolEntry::owner).unwrap_or_default();
            let kept = keep(name, &owner);
            if !kept {
                dropped.insert(name.clone(), owner);
            }
            kept
        });
        let order = &self.order;
        self.tools.retain(|name, _| order.contains(name));
    }

    /// The plugin providing tool `name` when the preset's selection left it out.
    pub fn left_out(&self, name: &str) -> Option<&str> {
        self.dropped.get(name).map(String::as_str)
    }

    pub fn get(&self, name: &str) -> Option<&ToolEntry> {
        self.tools.get(name)
    }

    /// Tools in preset order.
    pub fn tools(&self) -> impl Iterator<Item = &ToolEntry> {
        self.order.iter().filter_map(|name| self.tools.get(name))
    }

    pub fn plugins(&self) -> &[Plugin] {
        &self.plugins
    }

    /// Starts compiling, in the background, every plugin registered from its build-time
    /// description (a session does this at start, so the first request need not wait; S8).
    pub fn start_compiling(&self) {
        for plugin in &self.plugins {
            plugin.start_compiling();
        }
    }
}

impl super::check::ToolIndex for Registry {
    fn lookup(&self, name: &str) -> Option<(&ToolSpec, &jsonschema::Validator)> {
        self.tools
            .get(name)
            .map(|entry| (&entry.spec, entry.validator.as_ref()))
    }

    fn names(&self) -> Vec<&str> {
        self.order.iter().map(String::as_str).collect()
    }
}

/// The grant a tool's calls run with: its plugin's, carrying the tool's output budget so the
/// call can tell the tool (docs/output-paging.md).
fn budgeted(grant: &Grant, budget: OutputBudget) -> Grant {
    let mut grant = grant.clone();
    grant.limits.output_bytes = Some(budget.max_bytes);
    grant
}
