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
//!
//! Map, one job a module: `store.rs` the store (install, upgrade, list, get, remove, the
//! verified read); `source.rs` where a plugin comes from and its bytes fetched and verified;
//! `component.rs` what install checks; `diff.rs` what a replacement changes and whether a
//! widening goes ahead; `locked.rs` `install --locked`; `lock/` `paddock.lock`; `publish.rs`
//! publish and sign; `keys.rs` trusted keys; `signature.rs` cosign's signature format;
//! `oci/` the registry client; `remote/` what remote fetches share, and `https://`;
//! `data_dir.rs` how the store's files are written. This file: the store's error and record.

mod component;
mod data_dir;
mod diff;
mod keys;
pub mod lock;
mod locked;
mod oci;
mod publish;
mod remote;
mod signature;
mod source;
mod store;

use serde::{Deserialize, Serialize};

pub use component::{Checked, check_component};
pub use diff::{CapabilityDiff, Change, Widening};
pub use keys::TrustedKey;
pub use locked::{LockedError, LockedInstall, install_locked};
pub use oci::{AuthChoice, OciRef, Published, Signed};
pub use paddock_sandbox::builtin::{builtin, builtin_described, builtin_names};
pub use publish::{PublishRequest, publish, sign, signing_key};
pub use remote::{Origin, Progress, RemoteError, SignatureFix, SignatureRefusal, parse_sha256};
pub use signature::{Recheck, SignatureRecord};
pub use source::{InstallRequest, InstallSource};
pub use store::{InstallReport, PluginStore, Upgrade};

use paddock_sandbox::{LoadError, World};

/// Why a store operation failed; each message says what to do, in the library's terms: the
/// command line adds the option that does it (a variant carries what that needs).
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
        "`{0}` is not a valid plugin name; use letters, digits, `-` and `_` (at most 64), e.g. \
         my-tool"
    )]
    BadName(String),
    #[error(
        "`{0}` is not a valid key name; use letters, digits, `-` and `_` (at most 64), e.g. acme"
    )]
    BadKeyName(String),
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
        "{0}; a reference pattern is REGISTRY/REPOSITORY, `*` standing for one path segment and \
         `**` for several, e.g. 'ghcr.io/acme/*'"
    )]
    BadScope(String),
    /// A trusted key's file (`file`: its key, or its reference patterns) no longer parses.
    #[error(
        "the trusted key `{name}` is damaged: {file}: {why}; stop trusting it, then trust its \
         public key again"
    )]
    DamagedKey {
        name: String,
        file: String,
        why: String,
    },
    #[error("{file} is not a key paddock can sign with: {why}")]
    BadPrivateKey { file: String, why: String },
    #[error(
        "a key named `{name}` is already trusted (fingerprint {fingerprint}); choose another \
         name, or stop trusting that key first"
    )]
    KeyExists { name: String, fingerprint: String },
    #[error("no trusted key is named `{0}`")]
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
         installed version stays in use{download}"
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
         loaded; remove it (`paddock plugin remove {name}`), or install it again under the \
         same name"
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
         plugin remove {name}`)"
    )]
    NoLongerTrusted {
        name: String,
        reference: String,
        digest: String,
        why: String,
    },
    #[error("`{name}` was installed from {from}; {fixed}")]
    NoUpgradeSource {
        name: String,
        from: String,
        fixed: FixedSource,
    },
}

/// A source with no newer version paddock can find by itself: an upgrade needs the new
/// version's source named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixedSource {
    /// An `oci://` reference by digest: no tag to resolve again.
    Digest,
    Url,
    File,
}

impl std::fmt::Display for FixedSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FixedSource::Digest => {
                "it was installed by digest, so there is no tag to look at again"
            }
            FixedSource::Url => "a URL has no newer version paddock can find",
            FixedSource::File => "a local file has no newer version paddock can find",
        })
    }
}

impl StoreError {
    /// A replacement of `name` refused because `diff` widens what it may do unaccepted;
    /// `download` says what was spared (", and its layer was not downloaded"), if anything.
    pub(super) fn widens(name: &str, diff: CapabilityDiff, download: &'static str) -> StoreError {
        StoreError::Widens {
            name: name.to_string(),
            summary: diff.widening_summary(),
            diff: Box::new(diff),
            download,
        }
    }
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

/// What `plugin install` recorded about a plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installed {
    pub name: String,
    /// A tool plugin or a hook (records from before hooks could be installed are tools).
    #[serde(default)]
    pub kind: World,
    pub sha256: String,
    pub size: u64,
    pub installed_from: String,
    pub tools: Vec<String>,
    pub imports: Vec<String>,
    /// Where a remote install came from (none for a local file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}
