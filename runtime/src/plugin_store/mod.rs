//! The local plugin store (S8): `.wasm` files installed by name, kept by SHA-256 under the data
//! directory, and the built-in plugins embedded in the binary. It answers "which bytes does
//! this source mean"; it does not run or link anything except to validate an install.
//!
//! Layout under the data directory (`$PADDOCK_HOME`, else `$XDG_DATA_HOME/paddock`, else
//! `~/.local/share/paddock`):
//!
//! ```text
//! blobs/<sha256>.wasm      the component, named by its hash
//! installed/<name>.json    what `plugin install` recorded (and, for a remote install, where
//!                          from: reference, manifest and layer digests; `remote::Origin`)
//! downloads/               remote installs while they download (deleted unless verified)
//! trusted-keys/<name>.pem  public keys whose signatures remote installs accept
//! trusted-keys/<name>.for  the reference patterns a key vouches for, one a line (none: any)
//! cache/                   compiled code, each entry with an HMAC under cache/key (K4)
//! sessions/<id>/spill/     results too large for the model, readable at /spill
//! ```
//!
//! The directory and what paddock creates in it are private to the user (0700 directories,
//! 0600 files), and no mount may contain it or lie inside it (`preset::check_mount_is_safe`).

mod diff;
mod distribution;
mod https;
pub mod lock;
mod locked;
mod oci;
mod registry_auth;
mod remote;
mod signature;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use paddock_sandbox::builtin::{builtin, builtin_described, builtin_names};
pub use diff::{CapabilityDiff, Change};
pub use locked::LockedError;
pub use oci::{OciRef, Published, Signed};
pub use registry_auth::AuthChoice;
pub use remote::{Origin, Progress, RemoteError, parse_sha256};
pub use signature::{Recheck, SignatureRecord, TrustedKey};

use paddock_types::contract::ToolSpec;
use crate::preset::PluginSource;
use paddock_sandbox::{Capability, LoadError, Sandbox, World, create_private_dir};

/// Why a store operation failed; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0}")]
    Load(#[from] LoadError),
    #[error("{0}")]
    Remote(#[from] RemoteError),
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error("no installed plugin is named `{0}`{1}; `paddock plugin list` shows what is installed")]
    NotInstalled(String, DidYouMean),
    #[error(
        "no built-in plugin is named `{0}`; the built-ins are: {1}. If the list is empty, this \
         binary was built before its plugins: run `cargo xtask build-plugins`, then rebuild"
    )]
    NoBuiltin(String, String),
    #[error(
        "`{0}` is not a valid plugin name; use letters, digits, `-` and `_` (at most 64), e.g. --name my-tool"
    )]
    BadName(String),
    #[error(
        "the installed record {path} is damaged ({detail}); remove it with `paddock plugin remove {name}` and install again"
    )]
    Damaged {
        name: String,
        path: String,
        detail: String,
    },
    #[error(
        "{file} is not a key paddock can trust: {why}. Expected an ECDSA P-256 public key in \
         PEM (`-----BEGIN PUBLIC KEY-----`), as `cosign generate-key-pair` (cosign.pub), \
         `skopeo generate-sigstore-key` (NAME.pub) or `openssl pkey -pubout` write it"
    )]
    BadPublicKey { file: String, why: String },
    #[error(
        "{0}; a --for pattern is REGISTRY/REPOSITORY, `*` standing for one path segment and \
         `**` for several, e.g. --for 'ghcr.io/acme/*'"
    )]
    BadScope(String),
    #[error("{file} is not a key paddock can sign with: {why}")]
    BadPrivateKey { file: String, why: String },
    #[error(
        "a key named `{name}` is already trusted (fingerprint {fingerprint}); remove it first \
         with `paddock plugin trust-key --remove {name}`, or choose another name"
    )]
    KeyExists { name: String, fingerprint: String },
    #[error(
        "no trusted key is named `{0}`; `paddock plugin trust-key --list` shows the trusted keys"
    )]
    NoSuchKey(String),
    #[error(
        "plugin `{plugin}` has SHA-256 {actual}, but the preset pins {expected}; if the new file is \
         the one you trust, update plugins.{plugin}.sha256"
    )]
    PinMismatch {
        plugin: String,
        expected: String,
        actual: String,
    },
    #[error(
        "replacing `{name}` would widen what it may do: {summary}. Nothing was changed: the \
         installed version stays in use{download}. If you accept these changes, rerun with \
         --accept-widening"
    )]
    Widens {
        name: String,
        summary: String,
        diff: Box<CapabilityDiff>,
        /// ", and its layer was not downloaded" when refused from the registry's config.
        download: &'static str,
    },
    #[error(
        "the installed plugin `{name}` is not the one installed: {path} has SHA-256 {actual}, \
         but its record says {expected} (changed on disk since it was installed). It was not \
         loaded; reinstall it (`paddock plugin install SOURCE --name {name}`) or remove it"
    )]
    BlobAltered {
        name: String,
        path: String,
        expected: String,
        actual: String,
    },
    #[error(
        "the installed plugin `{name}` ({reference}, manifest {digest}) was installed as signed, \
         but {why}. It was not loaded. If you trust its publisher's key, trust it again \
         (`paddock plugin trust-key NAME KEY.pub`); otherwise remove the plugin (`paddock \
         plugin remove {name}`), or reinstall it with --allow-unsigned if you accept it unverified"
    )]
    NoLongerTrusted {
        name: String,
        reference: String,
        digest: String,
        why: String,
    },
    #[error("`{name}` was installed from {from}; {why}")]
    NoUpgradeSource {
        name: String,
        from: String,
        why: &'static str,
    },
}

fn tools_kind() -> String {
    World::Tools.as_str().to_string()
}

/// ", did you mean `x`?" when a known name is close to the one asked for, else nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DidYouMean(pub Option<String>);

impl DidYouMean {
    /// The closest of `known` to `wanted`, if it is close enough to be a typo.
    pub fn among<'a>(wanted: &str, known: impl IntoIterator<Item = &'a str>) -> DidYouMean {
        let best = known
            .into_iter()
            .map(|k| (strsim::damerau_levenshtein(wanted, k), k))
            .filter(|(d, k)| *d <= (wanted.len().max(k.len()) / 3).max(1))
            .min();
        DidYouMean(best.map(|(_, k)| k.to_string()))
    }
}

impl std::fmt::Display for DidYouMean {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(name) => write!(f, " (did you mean `{name}`?)"),
            None => Ok(()),
        }
    }
}

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

/// Whether a replacement that widens what a plugin may do goes ahead.
#[derive(Clone, Copy)]
pub enum Widening<'a> {
    /// Refused (scripts without --accept-widening).
    Refuse,
    /// `--accept-widening`.
    Accept,
    /// Asked: true means yes (the command line asks on a terminal).
    Ask(&'a (dyn Fn(&CapabilityDiff) -> bool + Sync)),
}

impl Widening<'_> {
    fn allows(&self, diff: &CapabilityDiff) -> bool {
        match self {
            Widening::Refuse => false,
            Widening::Accept => true,
            Widening::Ask(ask) => ask(diff),
        }
    }
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> StoreError {
    let path = path.display().to_string();
    move |source| StoreError::Io { what, path, source }
}

/// What `plugin install` recorded about a plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installed {
    pub name: String,
    /// `tools` or `hook` (records from before hooks could be installed are tools).
    #[serde(default = "tools_kind")]
    pub kind: String,
    pub sha256: String,
    pub size: u64,
    pub installed_from: String,
    pub tools: Vec<String>,
    pub imports: Vec<String>,
    /// Where a remote install came from (none for a local file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

/// Where the plugin to install is: a local file, an OCI artifact, or a URL with the SHA-256
/// its bytes must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallSource {
    File(PathBuf),
    Oci(OciRef),
    Url { url: String, sha256: String },
}

impl InstallSource {
    /// `oci://…`, `https://…` (with `sha256`; `http://` only to a loopback host), else a local
    /// file's path.
    pub fn parse(given: &str, sha256: Option<&str>) -> Result<InstallSource, StoreError> {
        if given.starts_with("oci://") {
            if sha256.is_some() {
                return Err(RemoteError::BadReference {
                    given: given.to_string(),
                    why: "--sha256 is for https:// installs; an oci:// install is checked \
                          against its manifest's digests (pin one with @sha256:DIGEST)"
                        .into(),
                }
                .into());
            }
            return Ok(InstallSource::Oci(OciRef::parse(given)?));
        }
        let lower = given.to_ascii_lowercase();
        if lower.starts_with("https://") || lower.starts_with("http://") {
            https::check_url(given)?;
            let sha256 = sha256.ok_or(RemoteError::Sha256Required)?;
            return Ok(InstallSource::Url {
                url: given.to_string(),
                sha256: remote::parse_sha256(sha256)?,
            });
        }
        if lower.contains("://") {
            return Err(RemoteError::BadReference {
                given: given.to_string(),
                why: "only oci://, https:// and local files are installed".into(),
            }
            .into());
        }
        if sha256.is_some() {
            return Err(RemoteError::BadReference {
                given: given.to_string(),
                why: "--sha256 is for https:// installs; a local file is installed as it is".into(),
            }
            .into());
        }
        Ok(InstallSource::File(PathBuf::from(given)))
    }

    /// The name an install takes unless told: the file name or the repository's last part,
    /// without `.wasm`.
    pub fn default_name(&self) -> String {
        let stem = |s: &str| s.strip_suffix(".wasm").unwrap_or(s).to_string();
        match self {
            InstallSource::File(file) => file
                .file_name()
                .map(|s| stem(&s.to_string_lossy()))
                .unwrap_or_default(),
            InstallSource::Oci(r) => r.default_name(),
            InstallSource::Url { url, .. } => reqwest::Url::parse(url)
                .ok()
                .and_then(|u| u.path_segments()?.next_back().map(stem))
                .unwrap_or_default(),
        }
    }
}

/// What a component is, as install checks it: its world, hash, tools and imports.
#[derive(Debug, Clone)]
pub struct Checked {
    pub world: World,
    pub sha256: String,
    pub tools: Vec<String>,
    pub imports: Vec<String>,
    /// The tools as the host reads them (floors applied), for an upgrade's diff.
    pub specs: std::sync::Arc<Vec<ToolSpec>>,
}

/// Checks `bytes` as install does: a tool plugin (it must load and list valid tools) or a
/// hook (it must link as the `hook` world), whichever world it exports; compiled through the
/// authenticated cache.
pub async fn check_component(
    sandbox: &Sandbox,
    name: &str,
    bytes: &[u8],
) -> Result<Checked, StoreError> {
    let world = sandbox.world_of(name, bytes)?;
    Ok(match world {
        World::Tools => {
            let plugin = sandbox.load(name, bytes, &Capability::ALL).await?;
            let tools = plugin.tools.iter().map(|t| t.name.clone()).collect();
            Checked {
                world,
                sha256: plugin.sha256,
                tools,
                imports: plugin.imports,
                specs: plugin.tools,
            }
        }
        World::Hook => {
            let hook = sandbox.load_hook(name, bytes, &Capability::ALL).await?;
            Checked {
                world,
                sha256: hook.sha256,
                tools: Vec::new(),
                imports: hook.imports,
                specs: std::sync::Arc::default(),
            }
        }
    })
}

/// What `publish` sends: a component checked as install checks it, to an OCI tag.
pub struct PublishRequest<'a> {
    pub file: &'a Path,
    pub target: &'a OciRef,
    pub auth: &'a AuthChoice,
    /// `org.opencontainers.image.version`, if given.
    pub version: Option<&'a str>,
}

/// Checks the component in `request.file` as `install` would, then pushes it in the wasm OCI
/// layout (its imports and exports in the config); the digests pushed.
pub async fn publish(
    sandbox: &Sandbox,
    request: &PublishRequest<'_>,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Published, StoreError> {
    let title = InstallSource::File(request.file.to_path_buf()).default_name();
    let wasm = std::fs::read(request.file).map_err(io("cannot read", request.file))?;
    progress(Progress::Compiling);
    let label = if paddock_types::contract::valid_tool_name(&title) {
        title.clone()
    } else {
        request.target.default_name()
    };
    let checked = check_component(sandbox, &label, &wasm).await?;
    let exports = sandbox.exports_of(&label, &wasm)?;
    let component = oci::ComponentInfo {
        exports,
        imports: checked.imports,
        target: None,
    };
    let created = paddock_types::stamp::rfc3339_ms(paddock_types::stamp::now_ms());
    let artifact = oci::Artifact {
        wasm,
        component: &component,
        created: &created,
        title: &title,
        version: request.version,
    };
    Ok(oci::push(request.target, request.auth, artifact).await?)
}

/// The unencrypted PKCS#8 P-256 private key in `key_file`, for `sign`.
pub fn signing_key(key_file: &Path) -> Result<p256::ecdsa::SigningKey, StoreError> {
    let pem = std::fs::read(key_file).map_err(io("cannot read", key_file))?;
    signature::parse_private_key(&pem).map_err(|why| StoreError::BadPrivateKey {
        file: key_file.display().to_string(),
        why,
    })
}

/// Signs the manifest `target` names with `key`, pushing the signature in cosign's layout.
/// With `expected` (`sha256:…`), a tag must still resolve to that digest, else nothing is
/// signed; `signing` is told the digest before it is signed.
pub async fn sign(
    target: &OciRef,
    auth: &AuthChoice,
    key: &p256::ecdsa::SigningKey,
    expected: Option<&str>,
    signing: &(dyn Fn(&str) + Sync),
) -> Result<Signed, StoreError> {
    Ok(oci::sign(target, auth, key, expected, signing).await?)
}

/// How an install or upgrade fetches and what it accepts.
pub struct InstallRequest<'a> {
    pub auth: &'a AuthChoice,
    /// `--allow-unsigned`: an `oci://` source without a signature by a trusted key.
    pub allow_unsigned: bool,
    pub widening: Widening<'a>,
    pub progress: &'a (dyn Fn(Progress) + Sync),
}

/// The record a new version would replace, and what was accepted of the change already.
struct Replacing<'a> {
    current: Option<Installed>,
    accepted: Option<CapabilityDiff>,
    widening: Widening<'a>,
}

fn widens(name: &str, diff: CapabilityDiff, download: &'static str) -> StoreError {
    StoreError::Widens {
        name: name.to_string(),
        summary: diff.widening_summary(),
        diff: Box::new(diff),
        download,
    }
}

/// Where an upgrade without `--to` looks: the tag an `oci://` install was resolved from.
fn upgrade_source(record: &Installed) -> Result<InstallSource, StoreError> {
    let none = |why| StoreError::NoUpgradeSource {
        name: record.name.clone(),
        from: record.installed_from.clone(),
        why,
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
        Some(Origin::Oci { .. }) => Err(none(
            "it was installed by digest, so there is no tag to look at again: give the new \
             version with --to oci://REGISTRY/REPOSITORY:TAG (or @sha256:DIGEST)",
        )),
        Some(Origin::Https { .. }) => Err(none(
            "a URL has no newer version paddock can find: give it with --to URL --sha256 HEX",
        )),
        None => Err(none(
            "a local file has no newer version paddock can find: give it with --to FILE",
        )),
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

    /// The bytes of installed plugin `name`, verified as a session start needs them: read
    /// through one descriptor (no symlink followed) and hashed, they must have the SHA-256
    /// the record names; and a plugin recorded as signed must still be signed by a key
    /// trusted now (its recorded payload and signature verified again, offline), so that
    /// `trust-key --remove` stops what only that key vouched for. A record from before the
    /// signature was kept (no payload) is not verified again.
    pub fn verified_bytes(&self, name: &str) -> Result<Vec<u8>, StoreError> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let record = self.get(name)?;
        let path = self.blob_path(&record.sha256);
        let mut bytes = Vec::with_capacity(usize::try_from(record.size).unwrap_or(0));
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .and_then(|file| {
                file.take(remote::MAX_PLUGIN_BYTES + 1)
                    .read_to_end(&mut bytes)
            })
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
                name: name.to_string(),
                reference: reference.clone(),
                digest: manifest_digest.clone(),
                why,
            });
        }
        Ok(bytes)
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
        let (bytes, from, origin, accepted) = match source {
            InstallSource::Oci(reference) => {
                let resolved = oci::resolve(reference, request.auth).await?;
                self.fetch_resolved(resolved, &name, current.as_ref(), request)
                    .await?
            }
            _ => {
                let (bytes, from, origin) = self.fetch(source, request).await?;
                (bytes, from, origin, None)
            }
        };
        let replacing = Replacing {
            current,
            accepted,
            widening: request.widening,
        };
        self.install_bytes(
            sandbox,
            bytes,
            &name,
            from,
            origin,
            replacing,
            request.progress,
        )
        .await
    }

    /// The bytes of a file or an `https://` source, verified; where they came from.
    async fn fetch(
        &self,
        source: &InstallSource,
        request: &InstallRequest<'_>,
    ) -> Result<(Vec<u8>, String, Option<Origin>), StoreError> {
        match source {
            InstallSource::File(file) => {
                let bytes = std::fs::read(file).map_err(io("cannot read", file))?;
                Ok((bytes, file.display().to_string(), None))
            }
            InstallSource::Url { url, sha256 } => {
                let (download, origin) =
                    https::download(url, sha256, &self.root, request.progress).await?;
                Ok((download.into_bytes()?, url.clone(), Some(origin)))
            }
            InstallSource::Oci(reference) => {
                let resolved = oci::resolve(reference, request.auth).await?;
                let (bytes, from, origin, _) =
                    self.fetch_resolved(resolved, "", None, request).await?;
                Ok((bytes, from, origin))
            }
        }
    }

    /// An `oci://` artifact resolved: its signature checked as `request` says; when it
    /// replaces `current`, the imports its config names compared before the layer is
    /// downloaded (a widening refused there leaves the layer in the registry); then the layer.
    /// Also the import diff accepted before the download, if any.
    async fn fetch_resolved(
        &self,
        mut resolved: oci::Resolved,
        name: &str,
        current: Option<&Installed>,
        request: &InstallRequest<'_>,
    ) -> Result<(Vec<u8>, String, Option<Origin>, Option<CapabilityDiff>), StoreError> {
        let policy = if request.allow_unsigned {
            signature::SignaturePolicy::AllowUnsigned
        } else {
            signature::SignaturePolicy::Require(self.trusted_keys()?)
        };
        let installed_signer = current.and_then(|c| diff::Signer::of_origin(c.origin.as_ref()));
        resolved
            .verify(&policy, installed_signer.map(|s| s.fingerprint))
            .await?;
        let mut accepted = None;
        if let Some(current) = current {
            // Who vouches, then what it imports: both known before the layer is downloaded.
            let mut early = diff::CapabilityDiff::default();
            early.changes.extend(diff::signer_change(
                installed_signer,
                resolved.signature().and_then(diff::Signer::of_record),
            ));
            if Some(resolved.layer_digest()) != Some(&format!("sha256:{}", current.sha256))
                && let Ok(imports) = resolved.config_imports().await
            {
                early
                    .changes
                    .extend(diff::imports_diff(&current.imports, &imports).changes);
            }
            if early.widens() {
                if !request.widening.allows(&early) {
                    return Err(widens(name, early, ", and its layer was not downloaded"));
                }
                accepted = Some(early);
            }
        }
        let from = resolved.given().to_string();
        let (download, origin) = resolved.fetch_layer(&self.root, request.progress).await?;
        Ok((download.into_bytes()?, from, Some(origin), accepted))
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
        let installed_manifest = match &record.origin {
            Some(Origin::Oci {
                manifest_digest, ..
            }) => Some(manifest_digest.as_str()),
            _ => None,
        };
        let (bytes, from, origin, accepted) = match &source {
            InstallSource::Oci(reference) => {
                let resolved = oci::resolve(reference, request.auth).await?;
                if Some(resolved.manifest_digest()) == installed_manifest {
                    return Ok(Upgrade::UpToDate {
                        record: Box::new(record),
                        source: reference.given.clone(),
                    });
                }
                self.fetch_resolved(resolved, name, Some(&record), request)
                    .await?
            }
            _ => {
                let (bytes, from, origin) = self.fetch(&source, request).await?;
                (bytes, from, origin, None)
            }
        };
        if paddock_types::stamp::sha256_hex(&bytes) == record.sha256 {
            return Ok(Upgrade::UpToDate {
                record: Box::new(record),
                source: from,
            });
        }
        let replacing = Replacing {
            current: Some(record),
            accepted,
            widening: request.widening,
        };
        let report = self
            .install_bytes(
                sandbox,
                bytes,
                name,
                from,
                origin,
                replacing,
                request.progress,
            )
            .await?;
        Ok(Upgrade::Upgraded(Box::new(report)))
    }

    /// What the installed plugin `record` is, for a diff: its imports and its tools as the
    /// host reads them, loaded from its verified blob (compiled code from the cache). A blob
    /// that no longer loads counts as nothing: every tool of the new version is then new.
    async fn surface_of(&self, sandbox: &Sandbox, record: &Installed) -> Vec<ToolSpec> {
        if record.kind == World::Hook.as_str() {
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
    async fn replacement_diff(
        &self,
        sandbox: &Sandbox,
        old: &Installed,
        new: diff::Surface<'_>,
        accepted: Option<&CapabilityDiff>,
        widening: Widening<'_>,
    ) -> Result<CapabilityDiff, StoreError> {
        let old_tools = self.surface_of(sandbox, old).await;
        let full = diff::diff(
            diff::Surface {
                kind: &old.kind,
                imports: &old.imports,
                tools: &old_tools,
                signer: diff::Signer::of_origin(old.origin.as_ref()),
            },
            new,
        );
        // What was accepted before the download needs no second yes.
        let already = |c: &Change| accepted.is_some_and(|early| early.changes.contains(c));
        let unaccepted = full.widening().any(|c| !already(c));
        if unaccepted && !widening.allows(&full) {
            return Err(widens(&old.name, full, ""));
        }
        Ok(full)
    }

    /// The one check-and-record path every install takes, whatever the source.
    #[allow(clippy::too_many_arguments)]
    async fn install_bytes(
        &self,
        sandbox: &Sandbox,
        bytes: Vec<u8>,
        name: &str,
        installed_from: String,
        origin: Option<Origin>,
        replacing: Replacing<'_>,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<InstallReport, StoreError> {
        progress(Progress::Compiling);
        let checked = check_component(sandbox, name, &bytes).await?;
        let record = Installed {
            name: name.to_string(),
            kind: checked.world.as_str().to_string(),
            sha256: checked.sha256,
            size: bytes.len() as u64,
            installed_from,
            tools: checked.tools,
            imports: checked.imports,
            origin,
        };
        let mut diff = None;
        if let Some(old) = &replacing.current
            && old.sha256 != record.sha256
        {
            let new = diff::Surface {
                kind: &record.kind,
                imports: &record.imports,
                tools: &checked.specs,
                signer: diff::Signer::of_origin(record.origin.as_ref()),
            };
            let accepted = replacing.accepted.as_ref();
            diff = Some(
                self.replacement_diff(sandbox, old, new, accepted, replacing.widening)
                    .await?,
            );
        }
        // Read again just before the record is replaced: another install may have run.
        let replaced = self.get(name).ok();
        let blob = self.blob_path(&record.sha256);
        write_atomically(&blob, &bytes)?;
        let json = serde_json::to_vec_pretty(&record).unwrap_or_default();
        write_atomically(&self.record_path(name), &json)?;
        if let Some(old) = &replaced {
            self.drop_blob_if_unused(&old.sha256)?;
        }
        Ok(InstallReport {
            record,
            replaced,
            diff,
        })
    }

    fn key_path(&self, name: &str) -> PathBuf {
        self.root.join("trusted-keys").join(format!("{name}.pem"))
    }

    fn scope_path(&self, name: &str) -> PathBuf {
        self.root.join("trusted-keys").join(format!("{name}.for"))
    }

    /// Trusts the public key in `file` under `name`: it must be an ECDSA P-256 public key in
    /// PEM; it is kept, private, under `trusted-keys/`. With `scopes` (reference patterns)
    /// it vouches only for references matching one; without, for any.
    pub fn trust_key(
        &self,
        name: &str,
        file: &Path,
        scopes: &[String],
    ) -> Result<TrustedKey, StoreError> {
        if !paddock_types::contract::valid_tool_name(name) {
            return Err(StoreError::BadName(name.to_string()));
        }
        let scopes = scopes
            .iter()
            .map(|s| signature::parse_scope(s))
            .collect::<Result<Vec<_>, _>>()
            .map_err(StoreError::BadScope)?;
        let bad = |why: String| StoreError::BadPublicKey {
            file: file.display().to_string(),
            why,
        };
        // Read through a cap, whatever the file is (a device or a pipe reports no size).
        let mut pem = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(
                std::fs::File::open(file).map_err(io("cannot read", file))?,
                signature::MAX_KEY_FILE_BYTES + 1,
            ),
            &mut pem,
        )
        .map_err(io("cannot read", file))?;
        if pem.len() as u64 > signature::MAX_KEY_FILE_BYTES {
            return Err(bad(format!(
                "it is over {} bytes; a public key file is a few hundred",
                signature::MAX_KEY_FILE_BYTES
            )));
        }
        let key = signature::parse_public_key(&pem).map_err(bad)?;
        let fingerprint = signature::fingerprint(&key);
        if let Ok(existing) = self.trusted_key(name) {
            return Err(StoreError::KeyExists {
                name: name.to_string(),
                fingerprint: existing.fingerprint,
            });
        }
        // The scope is written before the key: a key never stands, even for a moment, wider
        // than it was trusted.
        let scope_file = self.scope_path(name);
        if scopes.is_empty() {
            match std::fs::remove_file(&scope_file) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io("cannot remove", &scope_file)(e));
                }
                _ => {}
            }
        } else {
            write_atomically(&scope_file, format!("{}\n", scopes.join("\n")).as_bytes())?;
        }
        write_atomically(&self.key_path(name), &pem)?;
        Ok(TrustedKey {
            name: name.to_string(),
            fingerprint,
            key,
            scopes,
        })
    }

    fn trusted_key(&self, name: &str) -> Result<TrustedKey, StoreError> {
        let path = self.key_path(name);
        let pem = match std::fs::read(&path) {
            Ok(pem) => pem,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::NoSuchKey(name.to_string()));
            }
            Err(e) => return Err(io("cannot read", &path)(e)),
        };
        let key = signature::parse_public_key(&pem).map_err(|why| StoreError::BadPublicKey {
            file: path.display().to_string(),
            why: format!("{why} (remove it with `paddock plugin trust-key --remove {name}`)"),
        })?;
        let scope_file = self.scope_path(name);
        let scopes = match std::fs::read_to_string(&scope_file) {
            Ok(text) => text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| {
                    signature::parse_scope(l).map_err(|why| {
                        StoreError::BadScope(format!(
                            "{}: {why} (remove the key with `paddock plugin trust-key --remove \
                             {name}` and trust it again)",
                            scope_file.display()
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io("cannot read", &scope_file)(e)),
        };
        Ok(TrustedKey {
            name: name.to_string(),
            fingerprint: signature::fingerprint(&key),
            key,
            scopes,
        })
    }

    /// The trusted keys, sorted by name.
    pub fn trusted_keys(&self) -> Result<Vec<TrustedKey>, StoreError> {
        self.names_in("trusted-keys", ".pem")?
            .iter()
            .map(|name| self.trusted_key(name))
            .collect()
    }

    /// Stops trusting the key named `name`.
    pub fn untrust_key(&self, name: &str) -> Result<(), StoreError> {
        if !paddock_types::contract::valid_tool_name(name) {
            return Err(StoreError::BadName(name.to_string()));
        }
        let path = self.key_path(name);
        match std::fs::remove_file(&path) {
            Ok(()) => {
                let scope_file = self.scope_path(name);
                match std::fs::remove_file(&scope_file) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        Err(io("cannot remove", &scope_file)(e))
                    }
                    _ => Ok(()),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(StoreError::NoSuchKey(name.to_string()))
            }
            Err(e) => Err(io("cannot remove", &path)(e)),
        }
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
        self.names_in("installed", ".json")
    }

    /// The names of the files in `sub` that end in `suffix`, without it, sorted; none when
    /// `sub` does not exist.
    fn names_in(&self, sub: &str, suffix: &str) -> Result<Vec<String>, StoreError> {
        let dir = self.root.join(sub);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io("cannot list", &dir)(e)),
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                e.file_name()
                    .to_str()?
                    .strip_suffix(suffix)
                    .map(str::to_string)
            })
            .collect();
        names.sort();
        Ok(names)
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

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir).map_err(io("cannot create", dir))?;
    // NamedTempFile creates the file 0600.
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io("cannot write in", dir))?;
    tmp.write_all(bytes).map_err(io("cannot write", path))?;
    tmp.persist(path)
        .map_err(|e| io("cannot write", path)(e.error))?;
    Ok(())
}
