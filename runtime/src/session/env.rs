//! What every session and command needs from the machine: the data directory (plugin store,
//! compiled-code cache, session logs) and the working directory, with a sandbox whose cache
//! lives in the data directory.

use std::path::PathBuf;

use crate::plugin_store::PluginStore;
use paddock_sandbox::Sandbox;

/// The data directory, its sandbox, and the working directory.
///
/// The plugin store and the sandbox are the library's own: an embedder opens an `Env` and
/// hands it to a session. This repository's command line (built with `internals`) reaches
/// them to install plugins and check presets.
#[derive(Clone)]
pub struct Env {
    #[cfg(feature = "internals")]
    pub store: PluginStore,
    #[cfg(not(feature = "internals"))]
    pub(crate) store: PluginStore,
    #[cfg(feature = "internals")]
    pub sandbox: Sandbox,
    #[cfg(not(feature = "internals"))]
    pub(crate) sandbox: Sandbox,
    /// The working directory: where presets, the project's configuration and relative mounts
    /// are found.
    pub cwd: PathBuf,
}

impl Env {
    /// The data directory `PADDOCK_HOME` (or the default) and the process's working directory.
    pub fn open() -> anyhow::Result<Env> {
        Env::at(PluginStore::default_root(), std::env::current_dir()?)
    }

    /// The data directory `data_dir` (made private to the user) and working directory `cwd`.
    pub fn at(data_dir: PathBuf, cwd: PathBuf) -> anyhow::Result<Env> {
        let store = PluginStore::open(data_dir);
        store.make_private()?;
        let sandbox = Sandbox::new(store.cache_dir())?;
        Ok(Env {
            store,
            sandbox,
            cwd,
        })
    }

    /// The data directory: the plugin store, the compiled-code cache, session logs.
    pub fn data_dir(&self) -> &std::path::Path {
        self.store.root()
    }
}
