//! What install checks a component for, whatever its source: the world it exports (a tool
//! plugin or a hook), that it loads and links as that world, its tools (valid, as the host
//! reads them) and its imports. Compiled through the authenticated cache, so a component
//! checked once is not compiled again to be run.

use paddock_sandbox::{Capability, Sandbox, World};
use paddock_types::contract::ToolSpec;

use super::remote::Origin;
use super::{Installed, StoreError};

/// What a component is, as install checks it: its world, hash, tools and imports.
#[derive(Debug, Clone)]
pub struct Checked {
    pub world: World,
    pub sha256: String,
    pub tools: Vec<String>,
    pub imports: Vec<String>,
    /// The tools as the host reads them (floors applied), for an upgrade's diff.
    pub specs: std::sync::Arc<Vec<ToolSpec>>,
}

/// Checks `bytes` as install does: a tool plugin (it must load and list valid tools) or a
/// hook (it must link as the `hook` world), whichever world it exports; compiled through the
/// authenticated cache.
pub async fn check_component(
    sandbox: &Sandbox,
    name: &str,
    bytes: &[u8],
) -> Result<Checked, StoreError> {
    let world = sandbox.world_of(name, bytes)?;
    Ok(match world {
        World::Tools => {
            let plugin = sandbox.load(name, bytes, &Capability::ALL).await?;
            let tools = plugin.tools.iter().map(|t| t.name.clone()).collect();
            Checked {
                world,
                sha256: plugin.sha256,
                tools,
                imports: plugin.imports,
                specs: plugin.tools,
            }
        }
        World::Hook => {
            let hook = sandbox.load_hook(name, bytes, &Capability::ALL).await?;
            Checked {
                world,
                sha256: hook.sha256,
                tools: Vec::new(),
                imports: hook.imports,
                specs: std::sync::Arc::default(),
            }
        }
    })
}

impl Checked {
    /// What install records for this component under `name`.
    pub fn record(
        &self,
        name: &str,
        size: u64,
        installed_from: String,
        origin: Option<Origin>,
    ) -> Installed {
        Installed {
            name: name.to_string(),
            kind: self.world,
            sha256: self.sha256.clone(),
            size,
            installed_from,
            tools: self.tools.clone(),
            imports: self.imports.clone(),
            origin,
        }
    }
}
