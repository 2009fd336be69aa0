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

use paddock_sandbox::{Capability, Sandbox, World};
use paddock_types::contract::ToolSpec;
use paddock_types::text::one_line;

use super::component::check_component;
use super::diff::{self, CapabilityDiff, Widening};
use super::lock::{LockFile, PluginLock};
use super::oci::{self, AuthChoice, OciRef};
use super::remote::https;
use super::remote::{Origin, Progress, parse_sha256};
use super::signature::{Recheck, SignaturePolicy, SignatureRecord};
use super::store::{InstallReport, PluginStore};
use super::{Installed, StoreError};

/// Why `install --locked` refused; nothing was installed.
#[derive(Debug, thiserror::Error)]
pub enum LockedError {
    #[error("{name}: {source}")]
    Store {
        name: String,
        source: Box<StoreError>,
    },
    #[error("{name}: {what}")]
    Differs { name: String, what: String },
    /// An entry the lock records as installed unsigned, while unsigned is not allowed.
    #[error(
        "{name}: the lock records it as installed without a signature; trust its publisher's \
         key and install it signed ({installed_from}), or install it unsigned again"
    )]
    Unsigned {
        name: String,
        installed_from: String,
    },
    /// An entry from a URL, while unsigned is not allowed: its SHA-256 is the lock's word.
    #[error(
        "{name}: it comes from {url}, which has no signature: its SHA-256 is only the lock's \
         word, and the lock may be a repository's"
    )]
    UnsignedUrl {
        name: String,
        url: String,
        sha256: String,
    },
    /// An entry installed from a local file whose bytes are not in `blobs/`.
    #[error(
        "{name}: it was installed from a local file ({installed_from}) and its bytes (sha256 \
         {sha256}) are not in this data directory's blobs/: install that file under the name \
         `{name}`, then install the lock again"
    )]
    NotInBlobs {
        name: String,
        installed_from: String,
        sha256: String,
    },
    #[error("the lock names no plugins; a session records the installed plugins it uses")]
    Empty,
}

/// One plugin `install --locked` installed, and whether its bytes came from `blobs/`.
#[derive(Debug)]
pub struct LockedInstall {
    pub report: InstallReport,
    pub from_blobs: bool,
}

/// Installs every plugin entry of `lock` into `store` exactly (see the module's comment);
/// with `allow_unsigned`, an entry with no signature by a trusted key (recorded unsigned, or
/// from a URL) may be installed; a replacement that widens what an installed plugin may do
/// goes ahead only as `widening` says. All or nothing: every entry is checked before any is
/// recorded.
pub async fn install_locked(
    store: &PluginStore,
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
    let installing = Installing {
        store,
        sandbox,
        auth,
        allow_unsigned,
        widening,
    };
    let mut ready = Vec::new();
    for (name, entry) in &lock.plugins {
        let progress = |p| progress(name, p);
        ready.push(installing.prepare(name, entry, &progress).await?);
    }
    let mut done = Vec::new();
    for entry in ready {
        let name = entry.record.name.clone();
        done.push(entry.record(store).map_err(store_error(&name))?);
    }
    Ok(done)
}

/// What every entry of one `install --locked` is checked with.
struct Installing<'a> {
    store: &'a PluginStore,
    sandbox: &'a Sandbox,
    auth: &'a AuthChoice,
    allow_unsigned: bool,
    widening: Widening<'a>,
}

/// The bytes an entry names, and whether they came from `blobs/`.
struct Fetched {
    bytes: Vec<u8>,
    from_blobs: bool,
}

/// One entry checked and compared with the lock, ready to be recorded.
struct Ready {
    record: Installed,
    fetched: Fetched,
    diff: Option<CapabilityDiff>,
}

impl Installing<'_> {
    /// Entry `name` checked, nothing written: its bytes (from `blobs/` or its origin),
    /// checked as any install checks them, compared with the lock, and the capability diff
    /// against the installed plugin they replace (refused when it widens unaccepted).
    async fn prepare(
        &self,
        name: &str,
        entry: &PluginLock,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<Ready, LockedError> {
        let store = store_error(name);
        if !paddock_types::contract::valid_tool_name(name) {
            return Err(store(StoreError::BadName(name.to_string())));
        }
        // The hash names a file under blobs/: 64 lower-case hex digits, nothing else.
        if parse_sha256(&entry.sha256).ok().as_deref() != Some(&*entry.sha256) {
            return Err(differs(
                name,
                format!(
                    "the lock's sha256 `{}` is not 64 lower-case hex digits; the lock is damaged",
                    one_line(&entry.sha256, 80)
                ),
            ));
        }
        let fetched = self.bytes(name, entry, progress).await?;
        progress(Progress::Compiling {
            bytes: fetched.bytes.len() as u64,
        });
        let checked = check_component(self.sandbox, name, &fetched.bytes)
            .await
            .map_err(&store)?;
        let tools = self
            .tools(name, checked.world, &fetched.bytes)
            .await
            .map_err(&store)?;
        let lines = entry.differences(&checked.sha256, &tools);
        if !lines.is_empty() {
            return Err(differs(name, lines.join("; ")));
        }
        let size = fetched.bytes.len() as u64;
        let origin = entry.origin.clone();
        let record = checked.record(name, size, entry.installed_from.clone(), origin);
        // Replacing the user's plugin: the same capability check as an upgrade.
        let diff = match self.store.get(name) {
            Ok(old) if old.sha256 != record.sha256 => {
                let new = diff::Surface::of(&record, &checked.specs);
                let diff =
                    self.store
                        .replacement_diff(self.sandbox, &old, new, None, self.widening);
                Some(diff.await.map_err(&store)?)
            }
            _ => None,
        };
        Ok(Ready {
            record,
            fetched,
            diff,
        })
    }

    /// The tools of a checked component as the host reads them (a hook has none).
    async fn tools(
        &self,
        name: &str,
        world: World,
        bytes: &[u8],
    ) -> Result<Vec<ToolSpec>, StoreError> {
        Ok(match world {
            World::Tools => self
                .sandbox
                .load(name, bytes, &Capability::ALL)
                .await?
                .tools
                .to_vec(),
            World::Hook => Vec::new(),
        })
    }

    /// The bytes of `entry`: from `blobs/` if they are there, hash right and may stand
    /// without the registry; else from its origin by digest.
    async fn bytes(
        &self,
        name: &str,
        entry: &PluginLock,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<Fetched, LockedError> {
        if let Some(bytes) = self.store.blob_if_verified(&entry.sha256)
            && self.blob_may_be_used(name, entry)?
        {
            return Ok(Fetched {
                bytes,
                from_blobs: true,
            });
        }
        let bytes = match &entry.origin {
            Some(Origin::Oci { .. }) => self.pull(name, entry, progress).await?,
            Some(Origin::Https { url, sha256 }) => {
                if !self.allow_unsigned {
                    return Err(LockedError::UnsignedUrl {
                        name: name.to_string(),
                        url: url.clone(),
                        sha256: sha256.clone(),
                    });
                }
                let data_dir = self.store.root();
                let (download, _) = https::download(url, sha256, data_dir, progress)
                    .await
                    .map_err(|e| store_error(name)(e.into()))?;
                download
                    .into_bytes()
                    .map_err(|e| store_error(name)(e.into()))?
            }
            None => {
                return Err(LockedError::NotInBlobs {
                    name: name.to_string(),
                    installed_from: entry.installed_from.clone(),
                    sha256: entry.sha256.clone(),
                });
            }
        };
        Ok(Fetched {
            bytes,
            from_blobs: false,
        })
    }

    /// An `oci://` entry pulled by its manifest digest, its signature checked as a normal
    /// install checks it; the layer must be the lock's, and so must the signer's fingerprint.
    async fn pull(
        &self,
        name: &str,
        entry: &PluginLock,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<Vec<u8>, LockedError> {
        let store = store_error(name);
        let Some(Origin::Oci {
            registry,
            repository,
            manifest_digest,
            layer_digest,
            signature,
            ..
        }) = &entry.origin
        else {
            return Err(differs(name, "it was not installed from a registry".into()));
        };
        let reference = OciRef::parse(&format!("oci://{registry}/{repository}@{manifest_digest}"))
            .map_err(|e| store(e.into()))?;
        let locked_signer = signature.as_deref();
        let unsigned = locked_signer.is_none_or(|s| s.unsigned_allowed);
        let policy = if unsigned {
            if !self.allow_unsigned {
                return Err(unsigned_refused(name, entry));
            }
            SignaturePolicy::AllowUnsigned
        } else {
            SignaturePolicy::Require(self.store.trusted_keys().map_err(&store)?)
        };
        let data_dir = self.store.root();
        let (download, origin) = oci::pull(&reference, self.auth, &policy, data_dir, progress)
            .await
            .map_err(|e| store(e.into()))?;
        if let Origin::Oci {
            layer_digest: pulled_layer,
            signature: pulled_signature,
            ..
        } = &origin
        {
            if pulled_layer != layer_digest {
                return Err(differs(
                    name,
                    format!(
                        "manifest {manifest_digest} now names layer {pulled_layer}, the lock \
                         {layer_digest}"
                    ),
                ));
            }
            if !unsigned {
                same_signer(name, locked_signer, pulled_signature.as_deref())
                    .map_err(|what| differs(name, what))?;
            }
        }
        download.into_bytes().map_err(|e| store(e.into()))
    }

    /// Whether bytes found in `blobs/` may stand for `entry` without the registry: the same
    /// signature policy as a download. An entry from `oci://` recorded as signed must have a
    /// recorded signature that verifies, offline, with a key trusted now (one recorded
    /// without it is fetched and checked instead: false); one recorded as unsigned needs
    /// unsigned allowed. The lock may come from the repository: its word that something was
    /// signed is not taken on trust.
    fn blob_may_be_used(&self, name: &str, entry: &PluginLock) -> Result<bool, LockedError> {
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
            if self.allow_unsigned {
                return Ok(true);
            }
            return Err(unsigned_refused(name, entry));
        };
        let keys = self.store.trusted_keys().map_err(store_error(name))?;
        match signature.recheck(&keys, &format!("{registry}/{repository}"), manifest_digest) {
            Recheck::Valid(_) => Ok(true),
            Recheck::NotRecorded => Ok(false),
            Recheck::UnsignedAllowed => Ok(self.allow_unsigned),
            Recheck::Invalid(why) => Err(differs(
                name,
                format!(
                    "the signature the lock records for it does not verify: {why}. Trust the \
                     publisher's key (`paddock plugin trust-key NAME KEY.pub`) and run again"
                ),
            )),
        }
    }
}

impl Ready {
    /// Writes the entry's blob and record; the report of what it replaced.
    fn record(self, store: &PluginStore) -> Result<LockedInstall, StoreError> {
        let replaced = store.record(&self.record, &self.fetched.bytes)?;
        Ok(LockedInstall {
            report: InstallReport {
                record: self.record,
                replaced,
                diff: self.diff,
            },
            from_blobs: self.fetched.from_blobs,
        })
    }
}

/// The signer the registry's signature names must be the one the lock records; else why not.
fn same_signer(
    name: &str,
    locked: Option<&SignatureRecord>,
    pulled: Option<&SignatureRecord>,
) -> Result<(), String> {
    let locked_print = locked.and_then(|s| s.fingerprint.as_deref());
    let pulled_print = pulled.and_then(|s| s.fingerprint.as_deref());
    if locked_print == pulled_print {
        return Ok(());
    }
    Err(format!(
        "signed by key {} now, but the lock records the signer {}; if the publisher changed \
         keys, accept it with `paddock lock accept {name}` after installing it",
        pulled_print.unwrap_or("(none)"),
        locked_print.unwrap_or("(none)")
    ))
}

fn unsigned_refused(name: &str, entry: &PluginLock) -> LockedError {
    LockedError::Unsigned {
        name: name.to_string(),
        installed_from: entry.installed_from.clone(),
    }
}

fn store_error(name: &str) -> impl Fn(StoreError) -> LockedError {
    let name = name.to_string();
    move |source| LockedError::Store {
        name: name.clone(),
        source: Box::new(source),
    }
}

fn differs(name: &str, what: String) -> LockedError {
    LockedError::Differs {
        name: name.to_string(),
        what,
    }
}
