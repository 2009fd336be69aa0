//! Host-side bindings generated from `wit/`. Only this file and its neighbours in `sandbox/`
//! see generated types; everything else uses `crate::contract`.

wasmtime::component::bindgen!({
    world: "tool-plugin",
    path: "../wit",
    exports: { default: async },
});

pub use paddock::plugin::log;
pub use paddock::plugin::types;
