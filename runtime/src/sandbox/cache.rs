//! Compiled-code cache (S8): a plugin is compiled once per engine configuration and loaded
//! from disk afterwards.
//!
//! Files are keyed by the SHA-256 of the wasm plus wasmtime's compatibility hash, so another
//! wasmtime version or configuration simply misses; they are written to a temporary file and
//! renamed, so a crash never leaves half a file under a valid name. Loading a cached file is
//! `unsafe` (it is native code); the directory is private to paddock and `preset` refuses any
//! mount that would expose it to a plugin.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::path::PathBuf;

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Engine, Precompiled};

use super::engine::Sandbox;
use super::error::LoadError;

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether a load came from the cache or had to compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheUse {
    Hit,
    Compiled,
}

impl Sandbox {
    fn cache_path(&self, sha256: &str) -> PathBuf {
        let mut h = DefaultHasher::new();
        self.engine.precompile_compatibility_hash().hash(&mut h);
        self.cache_dir
            .join(format!("{sha256}-{:016x}.cwasm", h.finish()))
    }

    /// Returns the compiled component for `wasm`, from the cache when possible.
    pub(super) fn compile_cached(
        &self,
        origin: &str,
        wasm: &[u8],
        sha256: &str,
    ) -> Result<(Component, CacheUse), LoadError> {
        let path = self.cache_path(sha256);
        if let Ok(Some(Precompiled::Component)) = Engine::detect_precompiled_file(&path) {
            // SAFETY: the file was written by `store_compiled` below into paddock's private
            // cache directory, which is never mounted into a plugin; a file from another
            // wasmtime build fails the compatibility check and returns `Err`, and we recompile.
            if let Ok(component) = unsafe { Component::deserialize_file(&self.engine, &path) } {
                return Ok((component, CacheUse::Hit));
            }
        }
        let compiled = self
            .engine
            .precompile_component(wasm)
            .map_err(|e| classify_compile_error(origin, e))?;
        if let Err(e) = self.store_compiled(&path, &compiled) {
            // A read-only or full disk costs a recompile next time, nothing more.
            tracing::warn!("could not cache compiled plugin at {}: {e}", path.display());
        }
        // SAFETY: `compiled` was produced by this engine a moment ago.
        let component =
            unsafe { Component::deserialize(&self.engine, &compiled) }.map_err(|e| {
                LoadError::Compile {
                    plugin: origin.to_string(),
                    detail: format!("{e:?}"),
                }
            })?;
        Ok((component, CacheUse::Compiled))
    }

    fn store_compiled(&self, path: &std::path::Path, compiled: &[u8]) -> std::io::Result<()> {
        std::fs::create_dir_all(&*self.cache_dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(&*self.cache_dir)?;
        tmp.write_all(compiled)?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

/// Bytes that are not a component at all are told apart from a component that fails to
/// compile, because the fixes differ.
fn classify_compile_error(origin: &str, e: wasmtime::Error) -> LoadError {
    LoadError::Compile {
        plugin: origin.to_string(),
        detail: format!("{e:#}"),
    }
}

/// Checks the header before compiling: random bytes and core modules get their own message.
pub fn check_component_header(origin: &str, wasm: &[u8]) -> Result<(), LoadError> {
    let not_a_component = |detail: &str| {
        Err(LoadError::NotAComponent {
            origin: origin.to_string(),
            detail: detail.to_string(),
        })
    };
    match wasm.get(..8) {
        Some([0, b'a', b's', b'm', _, _, 1, 0]) => Ok(()),
        Some([0, b'a', b's', b'm', 1, 0, 0, 0]) => not_a_component("it is a core wasm module"),
        _ => not_a_component("it does not start with the wasm magic bytes `\\0asm`"),
    }
}
