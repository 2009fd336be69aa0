//! Pulling a component: a tag resolved to a manifest digest, that manifest fetched by digest
//! and its bytes checked against it, its shape checked (`manifest.rs`); its signature checked
//! as the policy says (`cosign.rs`), and only then its layer streamed into the data directory,
//! hashed as it arrives, within the download deadline. Between the manifest and the layer an
//! upgrade can look at what the config says the component imports (`Resolved`).

use std::path::Path;

use serde::Deserialize;

use paddock_types::text::one_line;

use super::auth::AuthChoice;
use super::cosign::verify_signature;
use super::distribution::{Access, Registry};
use super::manifest::{
    CONFIG_MEDIA_TYPE, DOCKER_MANIFEST_MEDIA_TYPE, Descriptor, INDEX_MEDIA_TYPES,
    MANIFEST_MEDIA_TYPE, wasm_layer,
};
use super::reference::OciRef;
use super::{small_blob, step};
use crate::plugin_store::remote::{
    Download, Origin, Progress, RemoteError, Verified, digest_hex, download_deadline, error_chain,
};
use crate::plugin_store::signature::{SignaturePolicy, SignatureRecord};

/// The largest config blob read before the layer (a wasm config lists imports and exports:
/// a few KiB).
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// A manifest resolved by digest and checked (its bytes against the digest, its shape), the
/// layer not fetched yet: what an upgrade looks at before it downloads anything large.
pub struct Resolved {
    r: OciRef,
    registry: Registry,
    manifest_digest: String,
    layer: Descriptor,
    config: Descriptor,
    signature: Option<SignatureRecord>,
}

/// Resolves `r`, applies the signature `policy`, and fetches the layer: an install with
/// nothing to look at between the manifest and the layer (`plugin install --locked`).
pub async fn pull(
    r: &OciRef,
    auth: &AuthChoice,
    policy: &SignaturePolicy,
    data_dir: &Path,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(Verified, Origin), RemoteError> {
    let mut resolved = resolve(r, auth).await?;
    resolved.verify(policy, None).await?;
    resolved.fetch_layer(data_dir, progress).await
}

/// Resolves `r` to its manifest digest and fetches and checks that manifest.
pub async fn resolve(r: &OciRef, auth: &AuthChoice) -> Result<Resolved, RemoteError> {
    let registry = r.connect(auth, Access::Pull).await?;
    let mut accepted = vec![MANIFEST_MEDIA_TYPE, DOCKER_MANIFEST_MEDIA_TYPE];
    accepted.extend(INDEX_MEDIA_TYPES);
    let manifest_digest = match &r.digest {
        Some(digest) => digest.clone(),
        None => {
            step(
                r,
                "resolving the tag",
                registry.manifest_digest(r.tag_or_digest(), &accepted, "resolving the tag"),
            )
            .await?
        }
    };
    let manifest_hex = digest_hex(&manifest_digest, "manifest", &r.given)?;
    let action = "fetching the manifest";
    let manifest = step(
        r,
        action,
        registry.manifest(&manifest_digest, &accepted, action),
    )
    .await?
    .ok_or_else(|| RemoteError::Registry {
        reference: r.given.clone(),
        action,
        answer: format!("HTTP 404: manifest unknown ({manifest_digest})"),
        fix: registry.missing_fix(),
    })?;
    let actual = paddock_types::stamp::sha256_hex(&manifest);
    if actual != manifest_hex {
        return Err(RemoteError::DigestMismatch {
            what: format!("the manifest of {}", r.given),
            source_of_truth: if r.digest.is_some() {
                "the reference names"
            } else {
                "the registry resolved the tag to"
            },
            expected: manifest_hex,
            actual,
        });
    }
    let (layer, config) = wasm_layer(r, &manifest)?;
    Ok(Resolved {
        r: r.clone(),
        registry,
        manifest_digest,
        layer,
        config,
        signature: None,
    })
}

impl Resolved {
    /// `sha256:…` of the manifest, verified.
    pub fn manifest_digest(&self) -> &str {
        &self.manifest_digest
    }

    /// The reference as given.
    pub fn given(&self) -> &str {
        &self.r.given
    }

    /// `sha256:…` of the layer, as the manifest names it.
    pub fn layer_digest(&self) -> &str {
        &self.layer.digest
    }

    /// Checks the signature of the manifest digest as `policy` says. The signature binds the
    /// digest already verified; the layer is then fetched through that same digest, so the
    /// tag is never resolved again. When several trusted keys signed it, the one with
    /// fingerprint `prefer` (the installed version's signer) is the one recorded.
    pub async fn verify(
        &mut self,
        policy: &SignaturePolicy,
        prefer: Option<&str>,
    ) -> Result<(), RemoteError> {
        let record = match policy {
            SignaturePolicy::AllowUnsigned => SignatureRecord {
                unsigned_allowed: true,
                ..SignatureRecord::default()
            },
            SignaturePolicy::Require(keys) => {
                verify_signature(&self.r, &self.registry, &self.manifest_digest, keys, prefer)
                    .await?
            }
        };
        self.signature = Some(record);
        Ok(())
    }

    /// The signature as checked by `verify`, if it ran.
    pub fn signature(&self) -> Option<&SignatureRecord> {
        self.signature.as_ref()
    }

    /// What the artifact's config says the component imports, fetched by digest (at most
    /// 1 MiB, its bytes checked against the digest); `Err` with why not when the config is
    /// not the wasm layout's, or has no `component.imports`. The registry's word only: the
    /// component itself is checked once downloaded.
    pub async fn config_imports(&self) -> Result<Vec<String>, String> {
        if self.config.media_type != CONFIG_MEDIA_TYPE {
            return Err(format!(
                "its config is of type `{}`, not {CONFIG_MEDIA_TYPE}",
                one_line(&self.config.media_type, 100)
            ));
        }
        let bytes = small_blob(&self.r, &self.registry, &self.config, MAX_CONFIG_BYTES).await?;
        #[derive(Deserialize)]
        struct Config {
            component: Option<Imports>,
        }
        #[derive(Deserialize)]
        struct Imports {
            imports: Option<Vec<String>>,
        }
        let config: Config = serde_json::from_slice(&bytes)
            .map_err(|e| format!("its config is not the wasm layout's JSON ({e})"))?;
        config
            .component
            .and_then(|c| c.imports)
            .ok_or_else(|| "its config lists no component.imports".to_string())
    }

    /// Streams the layer into `data_dir/downloads`, hashed as it arrives; the verified file
    /// and where it came from.
    pub async fn fetch_layer(
        self,
        data_dir: &Path,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<(Verified, Origin), RemoteError> {
        let Resolved {
            r,
            registry,
            manifest_digest,
            layer,
            config,
            signature,
        } = self;
        let r = &r;
        // No layer is fetched before the signature policy was applied.
        let Some(signature) = signature else {
            return Err(RemoteError::Registry {
                reference: r.given.clone(),
                action: "fetching the layer",
                answer: "the signature was not checked first".into(),
                fix: "this is a bug in paddock; report it".into(),
            });
        };
        let layer_hex = digest_hex(&layer.digest, "layer", &r.given)?;
        fetch_layer(
            r,
            &registry,
            layer,
            config,
            manifest_digest,
            layer_hex,
            signature,
            data_dir,
            progress,
        )
        .await
    }
}

/// The layer streamed into `data_dir/downloads`, hashed as it arrives, within the download
/// deadline: a registry that trickles it is cut off there with what it sent.
#[allow(clippy::too_many_arguments)]
async fn fetch_layer(
    r: &OciRef,
    registry: &Registry,
    layer: Descriptor,
    config: Descriptor,
    manifest_digest: String,
    layer_hex: String,
    signature: SignatureRecord,
    data_dir: &Path,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(Verified, Origin), RemoteError> {
    let declared = layer.size as u64;
    let what = format!("the layer of {}", r.given);
    let limit = download_deadline()?;
    let deadline = tokio::time::Instant::now() + limit;
    let late = |received| {
        RemoteError::deadline(
            &r.given,
            "the layer's download",
            limit,
            received,
            Some(declared),
        )
    };
    let mut download = Download::start(data_dir, &what, declared, Some(declared))?;
    progress(download.progress());
    let action = "fetching the layer";
    let mut response = tokio::time::timeout_at(deadline, registry.blob(&layer.digest, action))
        .await
        .map_err(|_| late(0))??;
    loop {
        let chunk = match tokio::time::timeout_at(deadline, response.chunk()).await {
            Err(_) => return Err(late(download.size())),
            Ok(Ok(Some(chunk))) => chunk,
            Ok(Ok(None)) => break,
            Ok(Err(e)) => {
                return Err(RemoteError::Registry {
                    reference: r.given.clone(),
                    action,
                    answer: error_chain(&e),
                    fix: "try again; if it persists, the registry is serving a broken blob"
                        .to_string(),
                });
            }
        };
        if download.size() + chunk.len() as u64 > declared {
            return Err(RemoteError::NotWasm {
                reference: r.given.clone(),
                why: format!(
                    "the registry sent more than the {declared} bytes its manifest declares \
                     for the layer; refused"
                ),
            });
        }
        download.write(&chunk)?;
        progress(download.progress());
    }
    if download.size() != declared {
        return Err(RemoteError::NotWasm {
            reference: r.given.clone(),
            why: format!(
                "the registry sent {} bytes for the layer, its manifest declares {declared}",
                download.size()
            ),
        });
    }
    let verified = download.finish(&layer_hex, "the manifest names")?;
    let origin = Origin::Oci {
        reference: r.given.clone(),
        registry: r.registry.clone(),
        repository: r.repository.clone(),
        tag: r.tag.clone(),
        manifest_digest,
        config_digest: config.digest,
        config_media_type: config.media_type,
        layer_digest: layer.digest,
        layer_media_type: layer.media_type,
        signature: Some(Box::new(signature)),
    };
    Ok((verified, origin))
}
