//! Compiled-code cache (S8, K4): a plugin is compiled once per engine configuration and loaded
//! from disk afterwards, but only when the entry is authenticated.
//!
//! Files are keyed by the SHA-256 of the wasm plus wasmtime's compatibility hash, so another
//! wasmtime version or configuration simply misses; they are written to a temporary file and
//! renamed, so a crash never leaves half a file under a valid name. Each entry ends with an
//! HMAC-SHA256 (`cache_key`) over its name and bytes: loading a cached file is `unsafe` (it
//! is native code), so an entry whose MAC is missing or wrong (planted, altered, or copied
//! from another plugin) is discarded with a warning and compiled again. The MAC is checked on
//! the very bytes that are then deserialized, never on a file read twice. The directory is
//! created 0700, entries 0600, and `preset` refuses any mount that would reach it.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use wasmtime::component::Component;

use crate::fs::private_dir::create_private_dir;
use crate::wasm::cache_key::{CacheKey, MAC_LEN};
use crate::wasm::compiled::CacheUse;
use crate::wasm::engine::Sandbox;
use crate::wasm::error::LoadError;
use crate::wasm::snapshot::{SNAPSHOT_REVISION, takes_snapshot};

/// Lower-case hex SHA-256 of `bytes`; a built-in's was computed when the binary was built
/// (`builtin::builtin_sha256`, a leaf table: the bytes are compared in full).
pub fn sha256_hex(bytes: &[u8]) -> String {
    if let Some(known) = crate::builtin::builtin_sha256(bytes) {
        return known.to_string();
    }
    paddock_types::stamp::sha256_hex(bytes)
}

impl Sandbox {
    /// The entry's file name without extension: `<sha256>-<engine hash>`, and the snapshot's
    /// revision for a component snapshotted after its warm-up (`snapshot.rs`): the entry
    /// holds the code that runs for these bytes, which is the snapshot's when there is one.
    fn cache_name(&self, sha256: &str, snapshot: bool) -> String {
        let mut h = DefaultHasher::new();
        self.engine.precompile_compatibility_hash().hash(&mut h);
        let engine = h.finish();
        if snapshot {
            format!("{sha256}-{engine:016x}-{SNAPSHOT_REVISION}")
        } else {
            format!("{sha256}-{engine:016x}")
        }
    }

    /// The cache key, created on first use; `None` (warned once) leaves the cache unused.
    fn cache_key(&self) -> Option<&CacheKey> {
        self.cache_key
            .get_or_init(|| match CacheKey::load_or_create(&self.cache_dir) {
                Ok(key) => Some(key),
                Err(e) => {
                    tracing::warn!(
                        "no key for the compiled-code cache in {} ({e}); plugins are compiled \
                         on every start",
                        self.cache_dir.display()
                    );
                    None
                }
            })
            .as_ref()
    }

    /// An authenticated entry, deserialized; `None` when there is none or it fails its MAC.
    fn load_entry(&self, key: &CacheKey, name: &str, path: &Path) -> Option<Component> {
        let bytes = std::fs::read(path).ok()?;
        let split = bytes.len().checked_sub(MAC_LEN)?;
        let (compiled, tag) = bytes.split_at(split);
        if !key.verify(name, compiled, tag) {
            tracing::warn!(
                "discarding compiled-code cache entry {}: its MAC does not match (altered, \
                 planted, or written without this user's key); compiling the plugin again",
                path.display()
            );
            let _ = std::fs::remove_file(path);
            return None;
        }
        // SAFETY: these exact bytes carry a MAC under this user's private key, which only
        // `store_compiled` below produces, over output of this engine's `precompile_component`;
        // a file from another wasmtime build fails the compatibility check and returns `Err`.
        unsafe { Component::deserialize(&self.engine, compiled) }.ok()
    }

    /// Returns the compiled component for `wasm`, from the cache on disk when possible.
    pub(crate) fn compile_disk_cached(
        &self,
        origin: &str,
        wasm: &[u8],
        sha256: &str,
    ) -> Result<(Component, CacheUse), LoadError> {
        let snapshot = self.snapshots && takes_snapshot(wasm);
        let name = self.cache_name(sha256, snapshot);
        let path = self.cache_dir.join(format!("{name}.cwasm"));
        let key = self.cache_key();
        if let Some(key) = key
            && let Some(component) = self.load_entry(key, &name, &path)
        {
            tracing::debug!("plugin {origin}: compiled code loaded from the cache");
            return Ok((component, CacheUse::Hit));
        }
        // Seconds for a JavaScript or Python runtime: `plugin install` does this ahead of a
        // session, and `PADDOCK_LOG=paddock_sandbox=info` shows a session that still has to.
        tracing::info!(
            "plugin {origin}: no compiled code in the cache {}; compiling {} bytes",
            self.cache_dir.display(),
            wasm.len()
        );
        let compiled = self.compile_for_cache(origin, wasm, snapshot)?;
        if let Some(key) = key
            && let Err(e) = self.store_compiled(key, &name, &path, &compiled)
        {
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

    /// The code kept for `wasm`: its snapshot after `list` and the tools' examples
    /// (`snapshot.rs`), compiled, when it takes one and the snapshot succeeds; else the
    /// component as it is.
    fn compile_for_cache(
        &self,
        origin: &str,
        wasm: &[u8],
        snapshot: bool,
    ) -> Result<Vec<u8>, LoadError> {
        if snapshot {
            let started = std::time::Instant::now();
            // The warm-up's own engine compiles faster; where it cannot be made (a thread
            // refused), this one serves, rather than leaving the component unsnapshotted.
            let warm_up = self.for_warm_up().unwrap_or_else(|e| {
                tracing::info!("plugin {origin}: warming up on the sandbox's own engine ({e})");
                self.clone()
            });
            let compiled = warm_up
                .snapshot_after_warm_up(origin, wasm)
                .and_then(|snapshotted| self.compile_snapshot(origin, &snapshotted));
            match compiled {
                Ok(compiled) => {
                    tracing::info!(
                        "plugin {origin}: snapshotted after its warm-up and compiled in {:.1} s",
                        started.elapsed().as_secs_f64()
                    );
                    return Ok(compiled);
                }
                // Kept under the snapshot's name all the same, so that a component whose
                // snapshot fails is not tried again at every start.
                Err(why) => tracing::info!(
                    "plugin {origin}: not snapshotted ({why}); compiling it as it is"
                ),
            }
        }
        self.engine
            .precompile_component(wasm)
            .map_err(|e| classify_compile_error(origin, e))
    }

    fn store_compiled(
        &self,
        key: &CacheKey,
        name: &str,
        path: &Path,
        compiled: &[u8],
    ) -> std::io::Result<()> {
        create_private_dir(&self.cache_dir)?;
        // NamedTempFile creates the file 0600.
        let mut tmp = tempfile::NamedTempFile::new_in(&*self.cache_dir)?;
        tmp.write_all(compiled)?;
        tmp.write_all(&key.mac(name, compiled))?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }

    /// Where the entry for wasm with this SHA-256 lives, for a component that is not
    /// snapshotted (for tests of the cache).
    pub fn cache_entry_path(&self, sha256: &str) -> PathBuf {
        self.cache_dir
            .join(format!("{}.cwasm", self.cache_name(sha256, false)))
    }

    /// Where the entry of the snapshot of wasm with this SHA-256 lives (for tests of the
    /// cache).
    pub fn snapshot_entry_path(&self, sha256: &str) -> PathBuf {
        self.cache_dir
            .join(format!("{}.cwasm", self.cache_name(sha256, true)))
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
