//! Loading a plugin (S1, S6, S7, S8): check the bytes, compile (or load from cache), refuse
//! imports that were not granted, prepare an `InstancePre`, and read the tool list once. A
//! built-in described at build time is registered from its description and compiled later
//! (`described.rs`, `deferred.rs`).

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use wasmtime::component::Component;
use wasmtime::component::types::ComponentItem;

use crate::grant::{Capability, Grant};
use crate::wasm::bindings::{ToolPluginPre, types};
use crate::wasm::cache::{check_component_header, sha256_hex};
use crate::wasm::compiled::CacheUse;
use crate::wasm::deferred::Deferred;
use crate::wasm::engine::Sandbox;
use crate::wasm::error::LoadError;
use crate::wasm::limits::list_limits;
use crate::wasm::store::{CallState, truncate_for_message};
use paddock_types::contract::{
    Example, OutputBudget, Overflow, Reach, Risk, RuntimeMeta, ToolSpec, valid_tool_name,
};

/// A loaded plugin: compiled, linked, and described. Cheap to clone; calls on it each get a
/// fresh store.
#[derive(Clone)]
pub struct Plugin {
    pub name: String,
    pub sha256: String,
    /// Every interface the component imports, as the component names them.
    pub imports: Vec<String>,
    pub tools: Arc<Vec<ToolSpec>>,
    pub cache: CacheUse,
    pub(crate) pre: Deferred<ToolPluginPre<CallState>>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name)
            .field("sha256", &self.sha256)
            .finish()
    }
}

impl Plugin {
    pub fn tool(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// Starts compiling a plugin registered from its description, in the background (a
    /// session does this at start; a plugin loaded from its code is ready already).
    pub fn start_compiling(&self) {
        self.pre.start();
    }

    /// Waits until the plugin's code is compiled, linked and checked against its
    /// description; the load error if it could not be.
    pub async fn ready(&self) -> Result<(), Arc<LoadError>> {
        self.pre.get().await.map(drop)
    }
}

/// A component compiled (or loaded from cache) whose imports passed `check_imports`.
pub(crate) struct Checked {
    pub component: Component,
    pub sha256: String,
    pub cache: CacheUse,
    pub imports: Vec<String>,
}

impl Sandbox {
    /// Checks the header, compiles through the cache, and refuses imports that were not
    /// granted: the part of loading that tools and hooks share.
    pub(crate) fn compile_checked(
        &self,
        name: &str,
        wasm: &[u8],
        granted: &[Capability],
    ) -> Result<Checked, LoadError> {
        check_component_header(name, wasm)?;
        let sha256 = sha256_hex(wasm);
        let (component, cache) = self.compile_cached(name, wasm, &sha256)?;
        let imports: Vec<String> = component
            .component_type()
            .imports(&self.engine)
            .filter(|(_, item)| !matches!(item.ty, ComponentItem::Type(_)))
            .map(|(import, _)| import.to_string())
            .collect();
        check_imports(name, &imports, granted)?;
        Ok(Checked {
            component,
            sha256,
            cache,
            imports,
        })
    }

    /// Loads `wasm` as plugin `name` from its code: compiled (or read from the cache), linked,
    /// and its tools listed, before this returns.
    pub async fn load_now(
        &self,
        name: &str,
        wasm: &[u8],
        granted: &[Capability],
    ) -> Result<Plugin, LoadError> {
        let Checked {
            component,
            sha256,
            cache,
            imports,
        } = self.compile_checked(name, wasm, granted)?;

        let pre = self
            .linker()
            .instantiate_pre(&component)
            .map_err(|e| LoadError::WrongWorld {
                origin: name.to_string(),
                detail: format!("{e:#}"),
            })?;
        let pre = ToolPluginPre::new(pre).map_err(|e| LoadError::WrongWorld {
            origin: name.to_string(),
            detail: format!("{e:#}"),
        })?;

        let grant = Grant {
            mounts: Vec::new(),
            capabilities: granted.to_vec(),
            limits: list_limits(),
            ..Grant::default()
        };
        let listed = self
            .run_list(&pre, &grant, &CancellationToken::new())
            .await
            .map_err(|e| LoadError::ListFailed {
                plugin: name.to_string(),
                detail: e.to_string(),
            })?;
        let mut tools = listed
            .into_iter()
            .map(|spec| convert_spec(name, spec))
            .collect::<Result<Vec<_>, _>>()?;
        // K5: what the component imports, not what it declares, decides the floor.
        floor_for_imports(&mut tools, &imports);
        check_unique(name, &tools)?;

        Ok(Plugin {
            name: name.to_string(),
            sha256,
            imports,
            tools: Arc::new(tools),
            cache,
            pre: Deferred::ready(pre),
        })
    }
}

/// Raises each tool's floor for what the component imports (K5): a tool whose plugin holds a
/// capability is never read-only, at least medium risk, and high (`run_command`'s tier) when
/// the capability is `exec`, whatever it declares.
pub(crate) fn floor_for_imports(tools: &mut [ToolSpec], imports: &[String]) {
    let holds = |cap: Capability| imports.iter().any(|i| i == cap.interface());
    let reach = if holds(Capability::Exec) {
        Reach::Programs
    } else if Capability::ALL.into_iter().any(holds) {
        Reach::Network
    } else {
        Reach::Mounts
    };
    for tool in tools {
        tool.meta.floor_for_capabilities(reach);
    }
}

pub(crate) fn check_imports(
    plugin: &str,
    imports: &[String],
    granted: &[Capability],
) -> Result<(), LoadError> {
    for import in imports {
        if let Some(cap) = Capability::ALL.iter().find(|c| import == c.interface()) {
            if !granted.contains(cap) {
                return Err(LoadError::Ungranted {
                    plugin: plugin.to_string(),
                    capability: cap.name().to_string(),
                });
            }
            continue;
        }
        let provided = import.starts_with("wasi:")
            || import.starts_with("paddock:plugin/log@")
            || import.starts_with("paddock:plugin/types@")
            || import.starts_with("paddock:plugin/hook-types@");
        if !provided {
            return Err(LoadError::UnknownImport {
                plugin: plugin.to_string(),
                import: import.clone(),
            });
        }
    }
    Ok(())
}

fn bad_spec(plugin: &str, detail: String) -> LoadError {
    LoadError::BadSpec {
        plugin: plugin.to_string(),
        detail,
    }
}

fn convert_spec(plugin: &str, spec: types::ToolSpec) -> Result<ToolSpec, LoadError> {
    if !valid_tool_name(&spec.name) {
        return Err(bad_spec(
            plugin,
            format!(
                "tool name {:?} must match ^[A-Za-z0-9_-]{{1,64}}$",
                truncate_for_message(&spec.name)
            ),
        ));
    }
    let tool = &spec.name;
    let parameters: serde_json::Value = serde_json::from_str(&spec.parameters).map_err(|e| {
        bad_spec(
            plugin,
            format!("tool `{tool}`: parameters are not JSON: {e}"),
        )
    })?;
    if parameters.get("type").and_then(|t| t.as_str()) != Some("object") {
        return Err(bad_spec(
            plugin,
            format!("tool `{tool}`: the parameters schema must have \"type\": \"object\""),
        ));
    }
    jsonschema::validator_for(&parameters).map_err(|e| {
        bad_spec(
            plugin,
            format!("tool `{tool}`: the parameters schema does not compile: {e}"),
        )
    })?;
    let examples = spec
        .examples
        .into_iter()
        .map(|ex| {
            serde_json::from_str::<serde_json::Value>(&ex.args).map_err(|e| {
                bad_spec(
                    plugin,
                    format!("tool `{tool}`: an example's args are not JSON: {e}"),
                )
            })?;
            Ok(Example {
                args: ex.args,
                correct: ex.correct,
                note: ex.note,
            })
        })
        .collect::<Result<Vec<_>, LoadError>>()?;
    let output_budget = match spec.output_budget {
        Some(b) if b.max_bytes == 0 => {
            return Err(bad_spec(
                plugin,
                format!("tool `{tool}`: output-budget max-bytes must be above 0"),
            ));
        }
        Some(b) => Some(OutputBudget {
            max_bytes: b.max_bytes,
            on_overflow: match b.on_overflow {
                types::Overflow::Truncate => Overflow::Truncate,
                types::Overflow::Spill => Overflow::Spill,
            },
        }),
        None => None,
    };
    let meta = RuntimeMeta {
        read_only: spec.read_only,
        concurrency_safe: spec.concurrency_safe,
        idempotent: spec.idempotent,
        cancellable: spec.cancellable,
        risk: spec.risk.map(|r| match r {
            types::Risk::Low => Risk::Low,
            types::Risk::Medium => Risk::Medium,
            types::Risk::High => Risk::High,
        }),
        output_budget,
        path_params: spec.path_params,
    };
    Ok(ToolSpec {
        name: spec.name,
        description: spec.description,
        parameters,
        examples,
        meta,
    })
}

pub(crate) fn check_unique(plugin: &str, tools: &[ToolSpec]) -> Result<(), LoadError> {
    let mut seen = BTreeSet::new();
    for tool in tools {
        if !seen.insert(tool.name.as_str()) {
            return Err(bad_spec(
                plugin,
                format!(
                    "two tools are named `{}`; tool names must be unique",
                    tool.name
                ),
            ));
        }
    }
    if tools.is_empty() {
        return Err(bad_spec(plugin, "it lists no tools".to_string()));
    }
    Ok(())
}
