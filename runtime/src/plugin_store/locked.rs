//! `plugin install --locked`: every plugin a `paddock.lock` names, installed exactly. The
//! bytes come from the data directory's `blobs/` when it holds them (hashed to be sure; no
//! network), else from the recorded origin by digest: an OCI artifact by its manifest digest
//! (its signature checked against the keys the user trusts, as a normal install checks it, and
//! the signer's fingerprint must be the lock's), a URL against its SHA-256. Each is then
//! checked as any install is, and its bytes and tool list compared with the lock.
//!
//! The lock may be a repository's: its word is never the approval. Bytes with no signature
//! by a trusted key (an entry recorded unsigned, or from a URL, whose SHA-256 is only the
//! lock's word) need `--allow-unsigned`; bytes from `blobs/` stand without it only when they
//! were verified when installed (a recorded signature rechecked, or a URL's). Replacing an
//! installed plugin with other bytes shows the capability diff and a widening needs the same
//! yes (or `--accept-widening`) as `plugin upgrade`. Nothing is recorded unless every entry
//! passes.

use std::io::Read;

use paddock_types::text::one_line;

use super::lock::{LockFile, PluginLock};
use super::remote::{MAX_PLUGIN_BYTES, Origin, Progress};
use super::signature::{Recheck, SignaturePolicy};
use super::{
    AuthChoice, InstallReport, Installed, OciRef, PluginStore, StoreError, Widening,
    check_component, diff, https, oci, write_atomically,
};
use paddock_sandbox::{Capability, Sandbox, World};

/// Why `install --locked` refused; nothing was installed.
#[derive(Debug, thiserror::Error)]
pub enum LockedError {
    #[error("{name}: {source}")]
    Store { name: String, source: StoreError },
    #[error("{name}: {what}")]
    Differs { name: String, what: String },
    #[error("the lock names no plugins; a session records the installed plugins it uses")]
    Empty,
}

/// One plugin `install --locked` installed, and whether its bytes came from `blobs/`.
#[derive(Debug)]
pub struct LockedInstall {
    pub report: InstallReport,
    pub from_blobs: bool,
}

/// The bytes an entry names, and whether they came from `blobs/`.
struct Fetched {
    bytes: Vec<u8>,
    from_blobs: bool,
}

impl PluginStore {
    /// Installs every plugin entry of `lock` exactly (see the module's comment); with
    /// `allow_unsigned`, an entry with no signature by a trusted key (recorded unsigned, or
    /// from a URL) may be installed; a replacement that widens what an installed plugin may
    /// do goes ahead only as `widening` says. All or nothing.
    pub async fn install_locked(
        &self,
        sandbox: &Sandbox,
        lock: &LockFile,
        auth: &AuthChoice,
        allow_unsigned: bool,
        widening: Widening<'_>,
        progress: &(dyn Fn(&str, Progress) + Sync),
    ) -> Result<Vec<LockedInstall>, LockedError> {
        if lock.plugins.is_empty() {
            return Err(LockedError::Empty);
        }
        let mut ready = Vec::new();
        for (name, entry) in &lock.plugins {
            let store = |source: StoreError| LockedError::Store {
                name: name.clone(),
                source,
            };
            if !paddock_types::contract::valid_tool_name(name) {
                return Err(store(StoreError::BadName(name.clone())));
            }
            // The hash names a file under blobs/: 64 lower-case hex digits, nothing else.
            if super::remote::parse_sha256(&entry.sha256).ok().as_deref() != Some(&*entry.sha256) {
                return Err(LockedError::Differs {
                    name: name.clone(),
                    what: format!(
                        "the lock's sha256 `{}` is not 64 lower-case hex digits; the lock is \
                         damaged",
                        one_line(&entry.sha256, 80)
                    ),
                });
            }
            let fetched = self
                .locked_bytes(name, entry, auth, allow_unsigned, &|p| progress(name, p))
                .await?;
            progress(name, Progress::Compiling);
            let checked = check_component(sandbox, name, &fetched.bytes)
                .await
                .map_err(store)?;
            let tools = match checked.world {
                World::Tools => sandbox
                    .load(name, &fetched.bytes, &Capability::ALL)
                    .await
                    .map_err(|e| store(StoreError::Load(e)))?
                    .tools
                    .to_vec(),
                World::Hook => Vec::new(),
            };
            let lines = entry.differences(&checked.sha256, &tools);
            if !lines.is_empty() {
                return Err(LockedError::Differs {
                    name: name.clone(),
                    what: lines.join("; "),
                });
            }
            let record = Installed {
                name: name.clone(),
                kind: checked.world.as_str().to_string(),
                sha256: checked.sha256,
                size: fetched.bytes.len() as u64,
                installed_from: entry.installed_from.clone(),
                tools: checked.tools,
                imports: checked.imports,
                origin: entry.origin.clone(),
            };
            // Replacing the user's plugin: the same capability check as an upgrade.
            let diff = match self.get(name) {
                Ok(old) if old.sha256 != record.sha256 => {
                    let new = diff::Surface {
                        kind: &record.kind,
                        imports: &record.imports,
                        tools: &checked.specs,
                        signer: diff::Signer::of_origin(record.origin.as_ref()),
                    };
                    Some(
                        self.replacement_diff(sandbox, &old, new, None, widening)
                            .await
                            .map_err(store)?,
                    )
                }
                _ => None,
            };
            ready.push((record, fetched, diff));
        }
        let mut done = Vec::new();
        for (record, fetched, diff) in ready {
            let store = |source: StoreError| LockedError::Store {
                name: record.name.clone(),
                source,
            };
            let replaced = self.get(&record.name).ok();
            write_atomically(&self.blob_path(&record.sha256), &fetched.bytes).map_err(store)?;
            let json = serde_json::to_vec_pretty(&record).unwrap_or_default();
            write_atomically(&self.record_path(&record.name), &json).map_err(store)?;
            if let Some(old) = &replaced
                && old.sha256 != record.sha256
            {
                self.drop_blob_if_unused(&old.sha256).map_err(store)?;
            }
            done.push(LockedInstall {
                report: InstallReport {
                    record,
                    replaced,
                    diff,
                },
                from_blobs: fetched.from_blobs,
            });
        }
        Ok(done)
    }

    /// The bytes of `entry`: from `blobs/` if they are there and hash right, else from its
    /// origin by digest.
    async fn locked_bytes(
        &self,
        name: &str,
        entry: &PluginLock,
        auth: &AuthChoice,
        allow_unsigned: bool,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<Fetched, LockedError> {
        let store = |source: StoreError| LockedError::Store {
            name: name.to_string(),
            source,
        };
        let differs = |what: String| LockedError::Differs {
            name: name.to_string(),
            what,
        };
        if let Some(bytes) = self.blob_if_verified(&entry.sha256)
            && self
                .blob_may_be_used(entry, allow_unsigned)
                .map_err(differs)?
        {
            return Ok(Fetched {
                bytes,
                from_blobs: true,
            });
        }
        let bytes = match &entry.origin {
            Some(Origin::Oci {
                registry,
                repository,
                manifest_digest,
                layer_digest,
                signature,
                ..
            }) => {
                let reference =
                    OciRef::parse(&format!("oci://{registry}/{repository}@{manifest_digest}"))
                        .map_err(|e| store(e.into()))?;
                let locked_signer = signature.as_deref();
                let unsigned = locked_signer.is_none_or(|s| s.unsigned_allowed);
                let policy = if unsigned {
                    if !allow_unsigned {
                        return Err(differs(format!(
                            "the lock records it as installed without a signature \
                             (--allow-unsigned); pass --allow-unsigned to install it so again, \
                             or trust its publisher's key and install it signed \
                             ({})",
                            entry.installed_from
                        )));
                    }
                    SignaturePolicy::AllowUnsigned
                } else {
                    SignaturePolicy::Require(self.trusted_keys().map_err(store)?)
                };
                let (download, origin) = oci::pull(&reference, auth, &policy, &self.root, progress)
                    .await
                    .map_err(|e| store(e.into()))?;
                if let Origin::Oci {
                    layer_digest: pulled_layer,
                    signature: pulled_signature,
                    ..
                } = &origin
                {
                    if pulled_layer != layer_digest {
                        return Err(differs(format!(
                            "manifest {manifest_digest} now names layer {pulled_layer}, the \
                             lock {layer_digest}"
                        )));
                    }
                    let locked_print = locked_signer.and_then(|s| s.fingerprint.as_deref());
                    let pulled_print = pulled_signature
                        .as_deref()
                        .and_then(|s| s.fingerprint.as_deref());
                    if !unsigned && locked_print != pulled_print {
                        return Err(differs(format!(
                            "signed by key {} now, but the lock records the signer {}; if the \
                             publisher changed keys, accept it with `paddock lock accept {name}` \
                             after installing it",
                            pulled_print.unwrap_or("(none)"),
                            locked_print.unwrap_or("(none)")
                        )));
                    }
                }
                download.into_bytes().map_err(|e| store(e.into()))?
            }
            Some(Origin::Https { url, sha256 }) => {
                if !allow_unsigned {
                    return Err(differs(format!(
                        "it comes from {url}, which has no signature: its SHA-256 is only the \
                         lock's word, and the lock may be a repository's. Pass --allow-unsigned \
                         if you trust this lock to name it, or install it yourself (`paddock \
                         plugin install {url} --sha256 {sha256} --name {name}`)"
                    )));
                }
                let (download, _) = https::download(url, sha256, &self.root, progress)
                    .await
                    .map_err(|e| store(e.into()))?;
                download.into_bytes().map_err(|e| store(e.into()))?
            }
            None => {
                return Err(differs(format!(
                    "it was installed from a local file ({}) and its bytes (sha256 {}) are not \
                     in this data directory's blobs/: install that file (`paddock plugin \
                     install FILE --name {name}`), then `paddock plugin install --locked` checks \
                     it",
                    entry.installed_from, entry.sha256
                )));
            }
        };
        Ok(Fetched {
            bytes,
            from_blobs: false,
        })
    }

    /// `blobs/SHA.wasm` when it exists and its bytes hash to `sha256` (read through a cap).
    /// Whether bytes found in `blobs/` may stand for `entry` without the registry: the same
    /// signature policy as a download. An entry from `oci://` recorded as signed must have a
    /// recorded signature that verifies, offline, with a key trusted now (one recorded
    /// without it is fetched and checked instead: false); one recorded as unsigned needs
    /// `--allow-unsigned`. The lock may come from the repository: its word that something was
    /// signed is not taken on trust.
    fn blob_may_be_used(&self, entry: &PluginLock, allow_unsigned: bool) -> Result<bool, String> {
        let Some(Origin::Oci {
            registry,
            repository,
            manifest_digest,
            signature,
            ..
        }) = &entry.origin
        else {
            return Ok(true);
        };
        let signature = signature.as_deref().filter(|s| !s.unsigned_allowed);
        let Some(signature) = signature else {
            if allow_unsigned {
                return Ok(true);
            }
            return Err(format!(
                "the lock records it as installed without a signature (--allow-unsigned); pass \
                 --allow-unsigned to install it so again, or trust its publisher's key and \
                 install it signed ({})",
                entry.installed_from
            ));
        };
        let keys = self.trusted_keys().map_err(|e| e.to_string())?;
        match signature.recheck(&keys, &format!("{registry}/{repository}"), manifest_digest) {
            Recheck::Valid(_) => Ok(true),
            Recheck::NotRecorded => Ok(false),
            Recheck::UnsignedAllowed => Ok(allow_unsigned),
            Recheck::Invalid(why) => Err(format!(
                "the signature the lock records for it does not verify: {why}. Trust the \
                 publisher's key (`paddock plugin trust-key NAME KEY.pub`) and run again"
            )),
        }
    }

    fn blob_if_verified(&self, sha256: &str) -> Option<Vec<u8>> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(self.blob_path(sha256))
            .ok()?;
        let mut bytes = Vec::new();
        file.take(MAX_PLUGIN_BYTES + 1)
            .read_to_end(&mut bytes)
            .ok()?;
        (paddock_types::stamp::sha256_hex(&bytes) == sha256).then_some(bytes)
    }
}
