//! Where the plugin to install is (`InstallSource`: a local file, an `oci://` artifact, an
//! `https://` URL with its SHA-256) and its bytes fetched from there, verified as that kind of
//! source requires: an artifact's digests and signature (`oci/`), a URL's SHA-256
//! (`remote/https.rs`). For an `oci://` version that would replace an installed one, who
//! signed it and what its config says it imports are compared before the layer is
//! downloaded, so a widening refused there costs no download. The bytes are then the store's
//! to check and record, like a local file's.

use std::path::{Path, PathBuf};

use super::data_dir::io;
use super::diff::{self, CapabilityDiff, Widening};
use super::keys::TrustedKeys;
use super::oci::{self, AuthChoice, OciRef};
use super::remote::https;
use super::remote::{Origin, Progress, RemoteError, parse_sha256};
use super::signature::SignaturePolicy;
use super::{Installed, StoreError};

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
                    why: "a SHA-256 to check is for https:// installs; an oci:// install is \
                          checked against its manifest's digests (pin one with @sha256:DIGEST)"
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
                sha256: parse_sha256(sha256)?,
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
                why: "a SHA-256 to check is for https:// installs; a local file is installed as \
                      it is"
                    .into(),
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

/// How an install or upgrade fetches and what it accepts.
pub struct InstallRequest<'a> {
    pub auth: &'a AuthChoice,
    /// An `oci://` source without a signature by a trusted key is allowed (and recorded so).
    pub allow_unsigned: bool,
    pub widening: Widening<'a>,
    pub progress: &'a (dyn Fn(Progress) + Sync),
}

/// A source's bytes, verified, and where they came from.
pub(super) struct Fetched {
    pub bytes: Vec<u8>,
    /// What the installed record says it was installed from.
    pub from: String,
    pub origin: Option<Origin>,
    /// The widening accepted before the download (an `oci://` replacement's signer and
    /// imports), which needs no second yes.
    pub accepted: Option<CapabilityDiff>,
}

/// The bytes `source` names, verified, downloaded into the data directory `data_dir` when
/// remote; `current` is the installed record they would replace under `name`, if any.
pub(super) async fn fetch(
    data_dir: &Path,
    source: &InstallSource,
    name: &str,
    current: Option<&Installed>,
    request: &InstallRequest<'_>,
) -> Result<Fetched, StoreError> {
    match source {
        InstallSource::File(file) => {
            let bytes = std::fs::read(file).map_err(io("cannot read", file))?;
            Ok(Fetched {
                bytes,
                from: file.display().to_string(),
                origin: None,
                accepted: None,
            })
        }
        InstallSource::Url { url, sha256 } => {
            let (download, origin) =
                https::download(url, sha256, data_dir, request.progress).await?;
            Ok(Fetched {
                bytes: download.into_bytes()?,
                from: url.clone(),
                origin: Some(origin),
                accepted: None,
            })
        }
        InstallSource::Oci(reference) => {
            let resolved = oci::resolve(reference, request.auth).await?;
            fetch_resolved(data_dir, resolved, name, current, request).await
        }
    }
}

/// An `oci://` artifact resolved: its signature checked as `request` says; when it replaces
/// `current`, its signer and the imports its config names compared before the layer is
/// downloaded (a widening refused there leaves the layer in the registry); then the layer.
pub(super) async fn fetch_resolved(
    data_dir: &Path,
    mut resolved: oci::Resolved,
    name: &str,
    current: Option<&Installed>,
    request: &InstallRequest<'_>,
) -> Result<Fetched, StoreError> {
    let installed_signer = current.and_then(|c| diff::Signer::of_origin(c.origin.as_ref()));
    let policy = signature_policy(data_dir, request.allow_unsigned)?;
    resolved
        .verify(&policy, installed_signer.map(|s| s.fingerprint))
        .await?;
    let accepted = match current {
        Some(current) => accept_before_download(&resolved, name, current, request).await?,
        None => None,
    };
    let from = resolved.given().to_string();
    let (download, origin) = resolved.fetch_layer(data_dir, request.progress).await?;
    Ok(Fetched {
        bytes: download.into_bytes()?,
        from,
        origin: Some(origin),
        accepted,
    })
}

/// A signature by a key trusted now, unless unsigned is allowed.
fn signature_policy(data_dir: &Path, allow_unsigned: bool) -> Result<SignaturePolicy, StoreError> {
    Ok(if allow_unsigned {
        SignaturePolicy::AllowUnsigned
    } else {
        SignaturePolicy::Require(TrustedKeys::of(data_dir).list()?)
    })
}

/// Who vouches for the resolved version and what its config says it imports, against the
/// installed `current`: both known before the layer is downloaded. A widening `request` does
/// not allow is refused here; one it allows is returned, accepted.
async fn accept_before_download(
    resolved: &oci::Resolved,
    name: &str,
    current: &Installed,
    request: &InstallRequest<'_>,
) -> Result<Option<CapabilityDiff>, StoreError> {
    let installed_signer = diff::Signer::of_origin(current.origin.as_ref());
    let mut early = CapabilityDiff::default();
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
    if !early.widens() {
        return Ok(None);
    }
    // Someone to ask is asked once, with the whole diff (the tools too, which only the
    // downloaded component tells), after the download; nothing is installed before the yes.
    // Without anyone to ask, a widening is refused here, before the layer is fetched.
    if matches!(request.widening, Widening::Ask(_)) {
        return Ok(None);
    }
    if !request.widening.allows(&early) {
        return Err(StoreError::widens(
            name,
            early,
            ", and its layer was not downloaded",
        ));
    }
    Ok(Some(early))
}
