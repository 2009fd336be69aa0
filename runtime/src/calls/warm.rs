//! The first run of a preset compiles all its plugins and hooks at once (S8): on an empty
//! code cache (after an install or upgrade) each is compiled on its own thread, so the two
//! cores share the work instead of one waiting through each plugin's serial phases. The loads
//! that follow (`Registry::load`, `HookChain::load`) take the components from memory and do
//! every check themselves: a source that cannot be read or compiled here is reported there.

use crate::plugin_store::PluginStore;
use crate::preset::ResolvedPreset;
use paddock_sandbox::Sandbox;

/// Compiles (or takes from the cache on disk) every plugin and hook `preset` names, all at once.
pub async fn compile_preset(sandbox: &Sandbox, store: &PluginStore, preset: &ResolvedPreset) {
    let sources = preset
        .plugins
        .iter()
        .map(|p| (&p.name, &p.source))
        .chain(preset.hooks.iter().map(|h| (&h.name, &h.source)));
    // Built-ins with a build-time description are registered without compiling
    // (`sandbox::described`); only the rest must be compiled before the first request.
    let wasm: Vec<(String, Vec<u8>)> = sources
        .filter_map(|(name, source)| Some((name.clone(), store.bytes(source).ok()?)))
        .filter(|(_, wasm)| crate::plugin_store::builtin_described(wasm).is_none())
        .collect();
    if wasm.len() > 1 {
        sandbox.compile_many(wasm).await;
    }
}
