//! Why a plugin could not be loaded. Each message says what is wrong and how to fix it.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum LoadError {
    #[error("cannot read plugin {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },

    #[error(
        "{origin} is not a WebAssembly component ({detail}); build the plugin for the \
         wasm32-wasip2 target, which produces a component"
    )]
    NotAComponent { origin: String, detail: String },

    #[error(
        "{origin} does not implement the paddock tool-plugin world: {detail}; build it against \
         wit/ (package paddock:plugin@0.1.0, world tool-plugin), e.g. with plugins/sdk"
    )]
    WrongWorld { origin: String, detail: String },

    #[error(
        "plugin `{plugin}` imports the `{capability}` capability, which its preset does not \
         grant; add `plugins.{plugin}.grants.{capability}` to the preset if it should have it"
    )]
    Ungranted { plugin: String, capability: String },

    #[error(
        "plugin `{plugin}` imports `{import}`, which paddock does not provide; a tool plugin may \
         import WASI 0.2 interfaces and paddock:plugin/{{log,exec,http}} only"
    )]
    UnknownImport { plugin: String, import: String },

    #[error(
        "hook `{hook}` does not implement the paddock hook world: {detail}; build it against \
         wit/hook.wit (package paddock:plugin@0.1.0, world hook), e.g. like plugins/hooks/audit"
    )]
    NotAHook { hook: String, detail: String },

    #[error("plugin `{plugin}` failed while listing its tools: {detail}")]
    ListFailed { plugin: String, detail: String },

    #[error("plugin `{plugin}` describes an invalid tool: {detail}")]
    BadSpec { plugin: String, detail: String },

    #[error(
        "built-in `{plugin}` does not match the description it was built with: {detail}; \
         rebuild the plugins (`cargo xtask build-plugins`), write their descriptions again \
         (`PADDOCK_BLESS=1 cargo test -p paddock-tests --test suite builtin_described`) and rebuild \
         paddock"
    )]
    NotAsDescribed { plugin: String, detail: String },

    #[error("compiling plugin `{plugin}` failed: {detail}")]
    Compile { plugin: String, detail: String },

    #[error("the compiled-code cache at {path} is not usable: {source}")]
    Cache {
        path: String,
        source: std::io::Error,
    },

    #[error("{0}")]
    Engine(String),
}
