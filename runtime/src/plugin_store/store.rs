//! The store itself: installed plugins by name, their bytes by SHA-256 under the data
//! directory (`PluginStore`). One check-and-record path for every install, whatever the
//! source (`install_from`: fetched and verified by `source.rs`, checked by `component.rs`,
//! compared with the version it replaces by `diff.rs`, then recorded); `upgrade`, `list`,
//! `get`, `remove`; the bytes a session runs, verified again as they are read
//! (`verified_bytes`). The trusted keys are `keys.rs`'s, reached through the store.

use std::path::{Path, PathBuf};

use paddock_sandbox::{Capability, Sandbox, World, create_private_dir};
use paddock_types::contract::ToolSpec;

use super::component::check_component;
use super::data_dir::{io, names_in, write_atomically};
use super::diff::{self, CapabilityDiff, Change, Widening};
use super::keys::{TrustedKey, TrustedKeys};
use super::oci::{self, AuthChoice, OciRef};
use super::remote::{MAX_PLUGIN_BYTES, Origin, Progress};
use super::signature::Recheck;
use super::source::{self, Fetched, InstallRequest, InstallSource};
use super::{DidYouMean, FixedSource, Installed, StoreError, builtin, builtin_names};
use crate::preset::PluginSource;

/// What `install` did: the new record, and the one it replaced under the same name.
#[derive(Debug, Clone)]
pub struct InstallReport {
    pub record: Installed,
    pub replaced: Option<Installed>,
    /// What changed from the replaced version, when its bytes differ.
    pub diff: Option<CapabilityDiff>,
}

/// What `upgrade` did.
#[derive(Debug, Clone)]
pub enum Upgrade {
    /// The source resolves to what is installed (the same manifest digest, or the same
    /// bytes): nothing was done.
    UpToDate {
        record: Box<Installed>,
        source: String,
    },
    Upgraded(Box<InstallReport>),
}

/// Where an upgrade without a source named looks: the tag an `oci://` install was resolved
/// from.
fn upgrade_source(record: &Installed) -> Result<InstallSource, StoreError> {
    let none = |fixed| StoreError::NoUpgradeSource {
        name: record.name.clone(),
        from: record.installed_from.clone(),
        fixed,
    };
    match &record.origin {
        Some(Origin::Oci {
            registry,
            repository,
            tag: Some(tag),
            ..
        }) => Ok(InstallSource::Oci(OciRef::parse(&format!(
            "oci://{registry}/{repository}:{tag}"
        ))?)),
        Some(Origin::Oci { .. }) => Err(none(FixedSource::Digest)),
        Some(Origin::Https { .. }) => Err(none(FixedSource::Url)),
        None => Err(none(FixedSource::File)),
    }
}

/// The data directory and what lives in it.
#[derive(Debug, Clone)]
pub struct PluginStore {
    root: PathBuf,
}

impl PluginStore {
    /// `$PADDOCK_HOME`, else the XDG data directory.
    pub fn default_root() -> PathBuf {
        if let Some(home) = std::env::var_os("PADDOCK_HOME").filter(|h| !h.is_empty()) {
            return PathBuf::from(home);
        }
        dirs::data_dir()
            .unwrap_or_else(|| PathBuf::from(".paddock-data"))
            .join("paddock")
    }

    pub fn open(root: impl Into<PathBuf>) -> PluginStore {
        PluginStore { root: root.into() }
    }

    /// Creates the data directory private to this user (0700; an existing one is tightened),
    /// so that nothing in it (compiled code, its key, sessions) is open to other users (K4).
    /// Every program paddock confines from then on finds it covered by an empty directory.
    pub fn make_private(&self) -> Result<(), StoreError> {
        create_private_dir(&self.root)
            .map_err(io("cannot create the data directory", &self.root))?;
        paddock_sandbox::hide_from_programs(&self.root);
        Ok(())
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn cache_dir(&self) -> PathBuf {
        self.root.join("cache")
    }

    pub fn session_dir(&self, session: &str) -> PathBuf {
        self.root.join("sessions").join(session)
    }

    fn record_path(&self, name: &str) -> PathBuf {
        self.root.join("installed").join(format!("{name}.json"))
    }

    fn blob_path(&self, sha256: &str) -> PathBuf {
        self.root.join("blobs").join(format!("{sha256}.wasm"))
    }

    /// The bytes a source names.
    pub fn bytes(&self, source: &PluginSource) -> Result<Vec<u8>, StoreError> {
        match source {
            PluginSource::Builtin(name) => builtin(name)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| StoreError::NoBuiltin(name.clone(), builtin_names().join(", "))),
            PluginSource::Installed(name) => self.verified_bytes(name),
            PluginSource::Path(path) => std::fs::read(path).map_err(io("cannot read plugin", path)),
        }
    }

    /// `blobs/SHA.wasm`, read through one descriptor without following a link, and through a
    /// cap (one byte past the largest plugin, so that a larger file does not hash right).
    fn read_blob(&self, sha256: &str, size_hint: u64) -> std::io::Result<Vec<u8>> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let mut bytes = Vec::with_capacity(usize::try_from(size_hint).unwrap_or(0));
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(self.blob_path(sha256))?
            .take(MAX_PLUGIN_BYTES + 1)
            .read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// `blobs/SHA.wasm` when it exists and its bytes hash to `sha256`.
    pub(super) fn blob_if_verified(&self, sha256: &str) -> Option<Vec<u8>> {
        let bytes = self.read_blob(sha256, 0).ok()?;
        (paddock_types::stamp::sha256_hex(&bytes) == sha256).then_some(bytes)
    }

    /// The bytes of installed plugin `name`, verified as a session start needs them: read
    /// through one descriptor (no symlink followed) and hashed, they must have the SHA-256
    /// the record names; and a plugin recorded as signed must still be signed by a key
    /// trusted now (its recorded payload and signature verified again, offline), so that
    /// `trust-key --remove` stops what only that key vouched for. A record from before the
    /// signature was kept (no payload) is not verified again.
    pub fn verified_bytes(&self, name: &str) -> Result<Vec<u8>, StoreError> {
        let record = self.get(name)?;
        let path = self.blob_path(&record.sha256);
        let bytes = self
            .read_blob(&record.sha256, record.size)
            .map_err(io("cannot read installed plugin", &path))?;
        let actual = paddock_types::stamp::sha256_hex(&bytes);
        let layer_matches = match &record.origin {
            Some(Origin::Oci { layer_digest, .. }) => {
                layer_digest.strip_prefix("sha256:") == Some(record.sha256.as_str())
            }
            _ => true,
        };
        if actual != record.sha256 || !layer_matches {
            return Err(StoreError::BlobAltered {
                name: name.to_string(),
                path: path.display().to_string(),
                expected: record.sha256,
                actual,
            });
        }
        self.still_signed(&record)?;
        Ok(bytes)
    }

    /// A record of a signed install whose signature still verifies, offline, with a key
    /// trusted now; else `NoLongerTrusted`.
    fn still_signed(&self, record: &Installed) -> Result<(), StoreError> {
        if let Some(Origin::Oci {
            reference,
            registry,
            repository,
            manifest_digest,
            signature: Some(signature),
            ..
        }) = &record.origin
            && signature.payload.is_some()
            && let Recheck::Invalid(why) = signature.recheck(
                &self.trusted_keys()?,
                &format!("{registry}/{repository}"),
                manifest_digest,
            )
        {
            return Err(StoreError::NoLongerTrusted {
                name: record.name.clone(),
                reference: reference.clone(),
                digest: manifest_digest.clone(),
                why,
            });
        }
        Ok(())
    }

    /// Validates `file` as a tool plugin (it must load and list valid tools) or a hook (it must
    /// link as the `hook` world), whichever world it exports, and stores it under `name`, else
    /// the file name without `.wasm`. Nothing is written unless it is valid.
    pub async fn install(
        &self,
        sandbox: &Sandbox,
        file: &Path,
        name: Option<&str>,
    ) -> Result<InstallReport, StoreError> {
        let source = InstallSource::File(file.to_path_buf());
        let request = InstallRequest {
            auth: &AuthChoice::default(),
            allow_unsigned: false,
            widening: Widening::Refuse,
            progress: &|_| {},
        };
        self.install_from(sandbox, &source, name, &request).await
    }

    /// Installs from `source` under `name` (else the source's default name). A remote source
    /// is downloaded into the data directory and verified first (its manifest's digests, or
    /// the SHA-256 given); then the file goes through the same check and record as a local
    /// one. Nothing is recorded, and no download is kept, unless all of it passes. Under a
    /// name in use with other bytes, it is an upgrade: a change that widens what the plugin
    /// may do goes ahead only as `request.widening` says (for an `oci://` source, the
    /// imports its config names are compared before the layer is downloaded).
    pub async fn install_from(
        &self,
        sandbox: &Sandbox,
        source: &InstallSource,
        name: Option<&str>,
        request: &InstallRequest<'_>,
    ) -> Result<InstallReport, StoreError> {
        let name = name.map_or_else(|| source.default_name(), str::to_string);
        if !paddock_types::contract::valid_tool_name(&name) {
            return Err(StoreError::BadName(name));
        }
        let current = self.get(&name).ok();
        let fetched = source::fetch(&self.root, source, &name, current.as_ref(), request).await?;
        self.install_fetched(sandbox, &name, fetched, current, request)
            .await
    }

    /// Upgrades installed plugin `name`: from `to` if given, else from where it came (an
    /// `oci://` install by tag: the tag resolved again). The same manifest digest, or the
    /// same bytes, is `UpToDate` and nothing is done; otherwise the new version goes through
    /// install's checks and the capability diff (`Widening`).
    pub async fn upgrade(
        &self,
        sandbox: &Sandbox,
        name: &str,
        to: Option<&InstallSource>,
        request: &InstallRequest<'_>,
    ) -> Result<Upgrade, StoreError> {
        let record = self.get(name)?;
        let source = match to {
            Some(source) => source.clone(),
            None => upgrade_source(&record)?,
        };
        let fetched = match &source {
            InstallSource::Oci(reference) => {
                let resolved = oci::resolve(reference, request.auth).await?;
                if Some(resolved.manifest_digest()) == installed_manifest(&record) {
                    return Ok(Upgrade::UpToDate {
                        record: Box::new(record),
                        source: reference.given.clone(),
                    });
                }
                source::fetch_resolved(&self.root, resolved, name, Some(&record), request).await?
            }
            _ => source::fetch(&self.root, &source, name, Some(&record), request).await?,
        };
        if paddock_types::stamp::sha256_hex(&fetched.bytes) == record.sha256 {
            return Ok(Upgrade::UpToDate {
                record: Box::new(record),
                source: fetched.from,
            });
        }
        let report = self
            .install_fetched(sandbox, name, fetched, Some(record), request)
            .await?;
        Ok(Upgrade::Upgraded(Box::new(report)))
    }

    /// The one check-and-record path every install takes, whatever the source: `fetched`
    /// checked as a component, compared with `current` (the version it replaces, if its bytes
    /// differ; a widening goes ahead only as `request.widening` says), then recorded.
    async fn install_fetched(
        &self,
        sandbox: &Sandbox,
        name: &str,
        fetched: Fetched,
        current: Option<Installed>,
        request: &InstallRequest<'_>,
    ) -> Result<InstallReport, StoreError> {
        (request.progress)(Progress::Compiling {
            bytes: fetched.bytes.len() as u64,
        });
        let checked = check_component(sandbox, name, &fetched.bytes).await?;
        let size = fetched.bytes.len() as u64;
        let record = checked.record(name, size, fetched.from, fetched.origin);
        let diff = match &current {
            Some(old) if old.sha256 != record.sha256 => {
                let new = diff::Surface::of(&record, &checked.specs);
                let accepted = fetched.accepted.as_ref();
                let diff = self.replacement_diff(sandbox, old, new, accepted, request.widening);
                Some(diff.await?)
            }
            _ => None,
        };
        let replaced = self.record(&record, &fetched.bytes)?;
        Ok(InstallReport {
            record,
            replaced,
            diff,
        })
    }

    /// What the installed plugin `record` is, for a diff: its imports and its tools as the
    /// host reads them, loaded from its verified blob (compiled code from the cache). A blob
    /// that no longer loads counts as nothing: every tool of the new version is then new.
    async fn surface_of(&self, sandbox: &Sandbox, record: &Installed) -> Vec<ToolSpec> {
        if record.kind == World::Hook {
            return Vec::new();
        }
        let Ok(bytes) = self.verified_bytes(&record.name) else {
            return Vec::new();
        };
        match sandbox.load(&record.name, &bytes, &Capability::ALL).await {
            Ok(plugin) => plugin.tools.to_vec(),
            Err(_) => Vec::new(),
        }
    }

    /// What changes from the installed `old` to `new`, refused (`StoreError::Widens`) when it
    /// widens beyond what was `accepted` already (before a download) and `widening` does not
    /// allow it: the one capability check every replacement takes (an install under a name in
    /// use, `upgrade`, `install --locked`).
    pub(super) async fn replacement_diff(
        &self,
        sandbox: &Sandbox,
        old: &Installed,
        new: diff::Surface<'_>,
        accepted: Option<&CapabilityDiff>,
        widening: Widening<'_>,
    ) -> Result<CapabilityDiff, StoreError> {
        let old_tools = self.surface_of(sandbox, old).await;
        let full = diff::diff(diff::Surface::of(old, &old_tools), new);
        // What was accepted before the download needs no second yes.
        let already = |c: &Change| accepted.is_some_and(|early| early.changes.contains(c));
        let unaccepted = full.widening().any(|c| !already(c));
        if unaccepted && !widening.allows(&full) {
            return Err(StoreError::widens(&old.name, full, ""));
        }
        Ok(full)
    }

    /// Writes `bytes` as their blob and `record` under its name, and drops the blob of the
    /// record it replaced unless another name uses it; the record replaced, read again just
    /// before (another install may have run meanwhile).
    pub(super) fn record(
        &self,
        record: &Installed,
        bytes: &[u8],
    ) -> Result<Option<Installed>, StoreError> {
        let replaced = self.get(&record.name).ok();
        write_atomically(&self.blob_path(&record.sha256), bytes)?;
        let json = serde_json::to_vec_pretty(record).unwrap_or_default();
        write_atomically(&self.record_path(&record.name), &json)?;
        if let Some(old) = &replaced
            && old.sha256 != record.sha256
        {
            self.drop_blob_if_unused(&old.sha256)?;
        }
        Ok(replaced)
    }

    /// The trusted keys kept in this data directory.
    fn keys(&self) -> TrustedKeys {
        TrustedKeys::of(&self.root)
    }

    /// Trusts the public key in `file` under `name` (`TrustedKeys::trust`).
    pub fn trust_key(
        &self,
        name: &str,
        file: &Path,
        scopes: &[String],
    ) -> Result<TrustedKey, StoreError> {
        self.keys().trust(name, file, scopes)
    }

    /// The trusted keys, sorted by name.
    pub fn trusted_keys(&self) -> Result<Vec<TrustedKey>, StoreError> {
        self.keys().list()
    }

    /// Stops trusting the key named `name`.
    pub fn untrust_key(&self, name: &str) -> Result<(), StoreError> {
        self.keys().remove(name)
    }

    pub fn get(&self, name: &str) -> Result<Installed, StoreError> {
        let path = self.record_path(name);
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let names = self.names().unwrap_or_default();
                let hint = DidYouMean::among(name, names.iter().map(String::as_str));
                return Err(StoreError::NotInstalled(name.into(), hint));
            }
            Err(e) => return Err(io("cannot read", &path)(e)),
        };
        serde_json::from_slice(&text).map_err(|e| StoreError::Damaged {
            name: name.to_string(),
            path: path.display().to_string(),
            detail: e.to_string(),
        })
    }

    /// Installed plugins, sorted by name.
    pub fn list(&self) -> Result<Vec<Installed>, StoreError> {
        self.names()?.iter().map(|name| self.get(name)).collect()
    }

    /// Names of the installed plugins, sorted.
    pub fn names(&self) -> Result<Vec<String>, StoreError> {
        names_in(&self.root.join("installed"), ".json")
    }

    /// Forgets `name`; its blob goes too unless another name uses the same bytes.
    pub fn remove(&self, name: &str) -> Result<Installed, StoreError> {
        let record = self.get(name)?;
        let path = self.record_path(name);
        std::fs::remove_file(&path).map_err(io("cannot remove", &path))?;
        self.drop_blob_if_unused(&record.sha256)?;
        Ok(record)
    }

    fn drop_blob_if_unused(&self, sha256: &str) -> Result<(), StoreError> {
        if self.list()?.iter().any(|other| other.sha256 == sha256) {
            return Ok(());
        }
        let blob = self.blob_path(sha256);
        match std::fs::remove_file(&blob) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(io("cannot remove", &blob)(e))
            }
            _ => Ok(()),
        }
    }
}

/// The manifest digest an `oci://` install was pulled by.
fn installed_manifest(record: &Installed) -> Option<&str> {
    match &record.origin {
        Some(Origin::Oci {
            manifest_digest, ..
        }) => Some(manifest_digest.as_str()),
        _ => None,
    }
}
