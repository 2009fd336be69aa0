//! Built-ins described at build time (S8): compiling the built-ins was most of a first run's
//! CPU before the first model request (docs/scale.md). The tools a built-in lists and the interfaces it imports are fixed when it is
//! built, so `plugins/described/NAME.json` records them (written by the `builtin_described`
//! test, which fails when one is stale) and `sandbox/build.rs` embeds them beside the code.
//!
//! A load of bytes equal, in full, to a built-in's takes its description: the import check
//! against the grant and the tool list need no compile, and the compile runs in the
//! background (`deferred.rs`). The description decides nothing the compiled code does not
//! confirm before it runs: the code's own imports are checked against the grant
//! (`compile_checked`, so a description cannot widen what a plugin may import), and its tools,
//! with the floor its own imports set (K5), must equal the described ones field for field,
//! or every call of that plugin fails with `NotAsDescribed`. The import lists themselves need
//! not be equal: what a description says about imports decides only an early refusal, and a
//! toolchain whose standard library imports another WASI patch version must not make the
//! built-ins unusable.

use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::grant::{Capability, Grant};
use crate::wasm::cache::{check_component_header, sha256_hex};
use crate::wasm::compiled::CacheUse;
use crate::wasm::deferred::Deferred;
use crate::wasm::engine::Sandbox;
use crate::wasm::error::LoadError;
use crate::wasm::hook::HookPlugin;
use crate::wasm::plugin::{Plugin, check_imports, check_unique, floor_for_imports};
use crate::wasm::world::World;
use paddock_types::contract::ToolSpec;

/// What a built-in is, imports and lists, as recorded when it was built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Description {
    /// `tools` or `hook` (`World::as_str`).
    pub world: String,
    /// Every interface the component imports.
    pub imports: Vec<String>,
    /// What `list()` returns, as the host reads it (hooks list nothing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// What a hook's `config` accepts, as its `config-schema` export answers (JSON Schema
    /// text; tools and hooks that declare nothing have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_schema: Option<String>,
}

/// The code and description of the built-in whose bytes are exactly `wasm`, if it has one.
pub(crate) fn builtin(wasm: &[u8]) -> Option<(Bytes, Description)> {
    let (code, text) = crate::builtin::builtin_described(wasm)?;
    match serde_json::from_str(text) {
        Ok(description) => Some((Bytes::from_static(code), description)),
        Err(e) => {
            tracing::warn!(
                "a built-in's embedded description does not parse ({e}); compiling it first"
            );
            None
        }
    }
}

impl Sandbox {
    /// Loads `wasm` as plugin `name`, which may import only WASI, `log`, and the capabilities
    /// in `granted`. A built-in with a build-time description is registered from it and
    /// compiled later (`start_compiling`, or its first call); anything else is compiled now.
    pub async fn load(
        &self,
        name: &str,
        wasm: &[u8],
        granted: &[Capability],
    ) -> Result<Plugin, LoadError> {
        // A built-in of the other world goes the long way, which says what it is.
        match builtin(wasm) {
            Some((code, description)) if description.world == World::Tools.as_str() => {
                self.load_described(name, code, granted, description)
            }
            _ => self.load_now(name, wasm, granted).await,
        }
    }

    /// Loads `wasm` as hook `name`, which may import only WASI, `log`, and the capabilities
    /// in `granted` (none by default). A built-in hook with a build-time description is
    /// registered from it and compiled later; anything else is compiled now.
    pub async fn load_hook(
        &self,
        name: &str,
        wasm: &[u8],
        granted: &[Capability],
    ) -> Result<HookPlugin, LoadError> {
        // A built-in of the other world goes the long way, which says what it is.
        match builtin(wasm) {
            Some((code, description)) if description.world == World::Hook.as_str() => {
                self.load_hook_described(name, code, granted, description)
            }
            _ => self.load_hook_now(name, wasm, granted).await,
        }
    }

    /// What hook `name` (code `wasm`) declares its `config` accepts, as JSON Schema text: a
    /// built-in's from its build-time description, any other's by calling its `config-schema`
    /// export under `grant` (its fuel, deadline and memory cap, as for an event). `None`: it
    /// declares nothing (world `hook`, or an answer of `none`). The error says why the hook
    /// could not be asked.
    pub async fn hook_config_schema(
        &self,
        name: &str,
        wasm: &[u8],
        grant: &Grant,
    ) -> Result<Option<String>, String> {
        match builtin(wasm) {
            Some((_, description)) if description.world == World::Hook.as_str() => {
                Ok(description.config_schema)
            }
            _ => self.ask_config_schema(name, wasm, grant).await,
        }
    }
}

impl Sandbox {
    /// Registers plugin `name` from `description` (checked against `granted` as its imports
    /// would be) and defers compiling `code` until `start_compiling` or its first call.
    pub fn load_described(
        &self,
        name: &str,
        code: Bytes,
        granted: &[Capability],
        description: Description,
    ) -> Result<Plugin, LoadError> {
        check_component_header(name, &code)?;
        check_imports(name, &description.imports, granted)?;
        let mut tools = description.tools.clone();
        floor_for_imports(&mut tools, &description.imports);
        check_unique(name, &tools)?;
        let sha256 = sha256_hex(&code);
        let imports = description.imports.clone();
        let (sandbox, plugin, granted) = (self.clone(), name.to_string(), granted.to_vec());
        let expected = Arc::new(tools.clone());
        let pre = Deferred::later(move || {
            let (sandbox, plugin, code, granted, expected) = (
                sandbox.clone(),
                plugin.clone(),
                code.clone(),
                granted.clone(),
                expected.clone(),
            );
            Box::pin(async move {
                sandbox.compile_off_runtime(&plugin, code.clone()).await;
                let loaded = sandbox.load_now(&plugin, &code, &granted).await?;
                confirm_tools(&plugin, &expected, &loaded.tools)?;
                linked(&loaded.pre).await
            })
        });
        Ok(Plugin {
            name: name.to_string(),
            sha256,
            imports,
            tools: Arc::new(tools),
            cache: CacheUse::Deferred,
            pre,
        })
    }

    /// Registers hook `name` from `description` and defers compiling `code`, as
    /// `load_described` does for tools.
    pub fn load_hook_described(
        &self,
        name: &str,
        code: Bytes,
        granted: &[Capability],
        description: Description,
    ) -> Result<HookPlugin, LoadError> {
        check_component_header(name, &code)?;
        check_imports(name, &description.imports, granted)?;
        let imports = description.imports.clone();
        let sha256 = sha256_hex(&code);
        let (sandbox, hook, granted) = (self.clone(), name.to_string(), granted.to_vec());
        let pre = Deferred::later(move || {
            let (sandbox, hook, code, granted) =
                (sandbox.clone(), hook.clone(), code.clone(), granted.clone());
            Box::pin(async move {
                sandbox.compile_off_runtime(&hook, code.clone()).await;
                let loaded = sandbox.load_hook_now(&hook, &code, &granted).await?;
                linked(&loaded.pre).await
            })
        });
        Ok(HookPlugin {
            name: name.to_string(),
            sha256,
            imports,
            pre,
        })
    }

    /// What a description of `wasm` must say, read from its compiled code (the
    /// `builtin_described` test writes and checks the files with it).
    pub async fn describe(&self, name: &str, wasm: &[u8]) -> Result<Description, LoadError> {
        let world = self.world_of(name, wasm)?;
        let (imports, tools, config_schema) = match world {
            World::Tools => {
                let plugin = self.load_now(name, wasm, &Capability::ALL).await?;
                (plugin.imports, plugin.tools.as_ref().clone(), None)
            }
            World::Hook => {
                let hook = self.load_hook_now(name, wasm, &Capability::ALL).await?;
                let grant = Grant {
                    capabilities: Capability::ALL.to_vec(),
                    ..Grant::default()
                };
                let schema =
                    self.ask_config_schema(name, wasm, &grant)
                        .await
                        .map_err(|detail| LoadError::NotAHook {
                            hook: name.to_string(),
                            detail,
                        })?;
                (hook.imports, Vec::new(), schema)
            }
        };
        Ok(Description {
            world: world.as_str().to_string(),
            imports,
            tools,
            config_schema,
        })
    }
}

/// The code a load just made (ready: it never waits or fails, but its type says it could).
async fn linked<T: Clone + Send + Sync + 'static>(code: &Deferred<T>) -> Result<T, LoadError> {
    code.get()
        .await
        .map_err(|e| LoadError::Engine(e.to_string()))
}

fn differs(plugin: &str, detail: String) -> LoadError {
    LoadError::NotAsDescribed {
        plugin: plugin.to_string(),
        detail,
    }
}

/// Every field of every tool, in order: the text the model was shown included.
fn confirm_tools(
    plugin: &str,
    described: &[ToolSpec],
    actual: &[ToolSpec],
) -> Result<(), LoadError> {
    let names = |tools: &[ToolSpec]| tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    if names(described) != names(actual) {
        return Err(differs(
            plugin,
            format!(
                "it lists the tools [{}], its description says [{}]",
                names(actual).join(", "),
                names(described).join(", ")
            ),
        ));
    }
    let json = |tool: &ToolSpec| serde_json::to_string(tool).unwrap_or_default();
    match described
        .iter()
        .zip(actual)
        .find(|(d, a)| json(d) != json(a))
    {
        Some((_, tool)) => Err(differs(
            plugin,
            format!("tool `{}` is not as described", tool.name),
        )),
        None => Ok(()),
    }
}
