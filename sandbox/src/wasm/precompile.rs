//! Compiling several plugins at once (S8): the first run after an install or upgrade compiles
//! every plugin a preset names before the first model request, and one at a time that left a
//! core idle through each plugin's serial phases (translation, linking, writing the entry).
//! `compile_many` compiles them on their own threads, each through the authenticated cache
//! (`cache.rs`), and keeps the results in memory for the loads that follow: a load then takes
//! the component from memory instead of compiling or reading the cache again.
//!
//! The memory holds only what this process compiled or took from the authenticated cache,
//! keyed by the wasm's SHA-256 (one engine per sandbox), so a load of other bytes never finds it.

use wasmtime::component::Component;

use crate::wasm::cache::sha256_hex;
use crate::wasm::compiled::CacheUse;
use crate::wasm::engine::Sandbox;

impl Sandbox {
    /// Compiles each `(name, wasm)` on its own thread, through the cache, and keeps the
    /// components for the loads that follow. Failures are left for those loads to report
    /// (with the plugin's name and the preset key to change); nothing here is checked or
    /// linked, only compiled.
    pub async fn compile_many(&self, plugins: Vec<(String, Vec<u8>)>) {
        let tasks: Vec<_> = plugins
            .into_iter()
            .map(|(name, wasm)| {
                let sandbox = self.clone();
                tokio::task::spawn_blocking(move || sandbox.compile_into_memory(&name, &wasm))
            })
            .collect();
        for task in tasks {
            let _ = task.await;
        }
    }

    /// Compiles `wasm` through the cache into memory, on a blocking thread, so the load
    /// that follows finds it there: a compile of a second or more must never hold one of the
    /// async runtime's two workers (a deferred built-in compiles while the session runs).
    pub(crate) async fn compile_off_runtime(&self, name: &str, wasm: bytes::Bytes) {
        let (sandbox, name) = (self.clone(), name.to_string());
        let _ =
            tokio::task::spawn_blocking(move || sandbox.compile_into_memory(&name, &wasm)).await;
    }

    /// Compiles (or reads from the cache) and keeps the component; failures are left for
    /// the load to report.
    fn compile_into_memory(&self, name: &str, wasm: &[u8]) {
        if crate::wasm::cache::check_component_header(name, wasm).is_err() {
            return;
        }
        let sha256 = sha256_hex(wasm);
        if self.compiled.get(&sha256).is_some() {
            return;
        }
        if let Ok(entry) = self.compile_disk_cached(name, wasm, &sha256) {
            self.compiled.insert(sha256, entry);
        }
    }

    /// The component for `wasm`: from memory when `compile_many` made it, else through the
    /// cache on disk.
    pub(crate) fn compile_cached(
        &self,
        name: &str,
        wasm: &[u8],
        sha256: &str,
    ) -> Result<(Component, CacheUse), crate::LoadError> {
        if let Some(entry) = self.compiled.get(sha256) {
            return Ok(entry);
        }
        self.compile_disk_cached(name, wasm, sha256)
    }
}
