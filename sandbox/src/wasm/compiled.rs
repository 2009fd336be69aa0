//! Compiled components kept in this process, by SHA-256 of their wasm, and how each load used
//! the on-disk cache: what every clone of a sandbox shares.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use wasmtime::component::Component;

/// Whether a load came from the cache or had to compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheUse {
    Hit,
    Compiled,
    /// Registered from its build-time description; compiled (or read from the cache) later,
    /// in the background or for its first call (`described.rs`).
    Deferred,
}

/// Components compiled in this process, by SHA-256 of their wasm.
#[derive(Default)]
pub(crate) struct Compiled(Mutex<HashMap<String, (Component, CacheUse)>>);

impl Compiled {
    pub(crate) fn get(&self, sha256: &str) -> Option<(Component, CacheUse)> {
        self.0.lock().ok()?.get(sha256).cloned()
    }

    pub(crate) fn insert(&self, sha256: String, entry: (Component, CacheUse)) {
        if let Ok(mut map) = self.0.lock() {
            map.insert(sha256, entry);
        }
    }
}

/// Shared between clones of a sandbox.
pub(crate) type CompiledMemo = Arc<Compiled>;
