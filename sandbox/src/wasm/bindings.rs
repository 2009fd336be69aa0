//! Host-side bindings generated from `wit/`. Only this crate sees generated types; the crates
//! built on it use `paddock_types::contract` and the hook types it exports (`wasm/hook.rs`).
//!
//! Tool plugins are bound through the host-only world `tool-host` (tool-plugin plus the
//! `exec` and `http` capabilities), so one linker serves every tool world; which capability a
//! plugin may actually import is decided per plugin at load (`plugin::check_imports`).

wasmtime::component::bindgen!({
    world: "tool-host",
    path: "../wit",
    imports: {
        "paddock:plugin/exec.run": async,
        "paddock:plugin/exec.shell": async,
        "paddock:plugin/exec.write-stdin": async,
        "paddock:plugin/exec.shell-jobs": async,
        "paddock:plugin/http.fetch": async,
    },
    exports: { default: async },
});

pub use paddock::plugin::{exec, http, log, types};

/// The tool-plugin world as the host instantiates it.
pub type ToolPlugin = ToolHost;
pub type ToolPluginPre<T> = ToolHostPre<T>;

/// The `hook` world (H2). It imports only `log` and `types`, which the tool linker already
/// provides, so hooks are prepared against the same linker.
pub mod hook {
    wasmtime::component::bindgen!({
        world: "hook",
        path: "../wit",
        exports: { default: async },
        with: {
            "paddock:plugin/types": crate::wasm::bindings::types,
            "paddock:plugin/log": crate::wasm::bindings::log,
        },
    });

    pub use paddock::plugin::hook_types;
}

/// The `configured-hook` world: a hook that also declares what its `config` accepts. Only its
/// `hook-config` export is called through these bindings; the calls go through `hook`'s.
pub mod configured_hook {
    wasmtime::component::bindgen!({
        world: "configured-hook",
        path: "../wit",
        exports: { default: async },
        with: {
            "paddock:plugin/types": crate::wasm::bindings::types,
            "paddock:plugin/log": crate::wasm::bindings::log,
            "paddock:plugin/hook-types": crate::wasm::bindings::hook::hook_types,
        },
    });
}
