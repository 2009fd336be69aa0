//! Which world a component implements, read from its exports: `plugin install` and
//! `plugin inspect` take tools and hooks alike and load each as what it is. Detection decides
//! only which loader runs; each loader still checks the whole world and the imports.

use wasmtime::component::types::ComponentItem;

use crate::wasm::cache::{check_component_header, sha256_hex};
use crate::wasm::engine::Sandbox;
use crate::wasm::error::LoadError;

/// The interface a hook exports (`wit/hook.wit`, world `hook`).
const HOOKS_EXPORT: &str = "paddock:plugin/hooks@0.1.0";

/// What a component is; recorded (the store, the lock) as `tools` or `hook`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum World {
    /// World `tool-plugin` (and its capability variants): exports `tools`.
    #[default]
    Tools,
    /// World `hook`: exports `hooks`.
    Hook,
}

impl World {
    pub fn as_str(self) -> &'static str {
        match self {
            World::Tools => "tools",
            World::Hook => "hook",
        }
    }

    /// What it is called in a sentence: `tool plugin` or `hook`.
    pub fn noun(self) -> &'static str {
        match self {
            World::Tools => "tool plugin",
            World::Hook => "hook",
        }
    }
}

impl Sandbox {
    /// A component that exports `hooks` is a hook; anything else is read as a tool plugin
    /// (whose loader says what is missing).
    pub fn world_of(&self, name: &str, wasm: &[u8]) -> Result<World, LoadError> {
        check_component_header(name, wasm)?;
        let (component, _) = self.compile_cached(name, wasm, &sha256_hex(wasm))?;
        let is_hook = component
            .component_type()
            .exports(self.engine())
            .any(|(export, item)| {
                export == HOOKS_EXPORT && matches!(item.ty, ComponentItem::ComponentInstance(_))
            });
        Ok(if is_hook { World::Hook } else { World::Tools })
    }

    /// The names of what the component exports (interfaces and functions), in its order: what
    /// a published artifact's config lists beside the imports.
    pub fn exports_of(&self, name: &str, wasm: &[u8]) -> Result<Vec<String>, LoadError> {
        check_component_header(name, wasm)?;
        let (component, _) = self.compile_cached(name, wasm, &sha256_hex(wasm))?;
        Ok(component
            .component_type()
            .exports(self.engine())
            .filter(|(_, item)| !matches!(item.ty, ComponentItem::Type(_)))
            .map(|(export, _)| export.to_string())
            .collect())
    }
}
