//! Plugins in OCI registries, in the layout wasm-pkg-tools (`wkg`) uses (the CNCF TAG Runtime
//! wasm OCI artifact): one manifest whose config (`application/vnd.wasm.config.v0+json`)
//! lists the component's imports and exports, and exactly one layer, the component
//! (`application/wasm`).
//!
//! Install resolves a tag to a manifest digest, pulls the manifest by that digest and checks
//! its bytes against it, checks its shape (one wasm layer, a size under the cap), then streams
//! the layer into the data directory while hashing it (`remote::Download`), within the
//! download deadline. The registry is not trusted for any of it; every request goes through
//! `distribution::Registry`, which holds the rules on credentials, redirects, body caps and
//! plain http (spoken only to a loopback registry).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use oci_client::Reference;
use serde::{Deserialize, Serialize};

use paddock_types::text::one_line;

use super::distribution::{self, Access, Registry};
use super::registry_auth::AuthChoice;
use super::remote::{
    Download, MAX_PLUGIN_BYTES, Origin, Progress, RemoteError, SignatureRefusal, Verified,
    digest_hex, error_chain,
};
use super::signature::{
    self, LayerVerdict, MAX_PAYLOAD_BYTES, MAX_SIGNATURE_LAYERS, SIGNATURE_ANNOTATION,
    SIMPLESIGNING_MEDIA_TYPE, SignaturePolicy, SignatureRecord, TrustedKey,
};

pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
const DOCKER_MANIFEST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";
const INDEX_MEDIA_TYPES: [&str; 2] = [
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
];
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
pub const LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The layer type of the older wasm-to-oci layout, still found in registries.
const OLD_LAYER_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+wasm";
/// Configs of container images: such an artifact is not a component.
const IMAGE_CONFIG_MEDIA_TYPES: [&str; 2] = [
    "application/vnd.oci.image.config.v1+json",
    "application/vnd.docker.container.image.v1+json",
];

/// `oci://REGISTRY/REPOSITORY:TAG` or `oci://REGISTRY/REPOSITORY@sha256:DIGEST`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciRef {
    /// As given, `oci://` included.
    pub given: String,
    /// `HOST[:PORT]`.
    pub registry: String,
    pub repository: String,
    pub tag: Option<String>,
    /// `sha256:HEX`.
    pub digest: Option<String>,
}

impl OciRef {
    pub fn parse(given: &str) -> Result<OciRef, RemoteError> {
        let bad = |why: &str| RemoteError::BadReference {
            given: one_line(given, 200),
            why: why.to_string(),
        };
        let rest = given
            .strip_prefix("oci://")
            .ok_or_else(|| bad("it does not start with oci://"))?;
        let (first, _) = rest
            .split_once('/')
            .ok_or_else(|| bad("it names no registry (oci://REGISTRY/REPOSITORY:TAG)"))?;
        if !(first.contains('.') || first.contains(':') || first == "localhost") {
            return Err(bad(&format!(
                "`{}` is not a registry host; name the registry in full (e.g. oci://ghcr.io/...), \
                 paddock does not assume docker.io",
                one_line(first, 100)
            )));
        }
        let reference: Reference = rest
            .parse()
            .map_err(|e: oci_client::ParseError| bad(&e.to_string()))?;
        if reference.registry() != first {
            return Err(bad("the registry part does not parse as a host"));
        }
        let digest = reference.digest().map(str::to_string);
        if let Some(digest) = &digest {
            digest_hex(digest, "reference's", given)
                .map_err(|_| bad("only @sha256:<64 lower-case hex digits> digests are accepted"))?;
        }
        // The parser fills in `latest` for a reference without a tag; only a tag written
        // counts.
        let written = rest
            .rsplit('/')
            .next()
            .is_some_and(|last| last.contains(':'));
        let tag = reference.tag().filter(|_| written).map(str::to_string);
        if tag.is_none() && digest.is_none() {
            return Err(bad(
                "it names no tag or digest; add :TAG or @sha256:DIGEST (paddock does not \
                 assume :latest)",
            ));
        }
        Ok(OciRef {
            given: given.to_string(),
            registry: reference.registry().to_string(),
            repository: reference.repository().to_string(),
            tag,
            digest,
        })
    }

    /// The registry's host, without port or brackets.
    pub fn host(&self) -> &str {
        let registry = self.registry.as_str();
        if let Some(rest) = registry.strip_prefix('[') {
            return rest.split(']').next().unwrap_or_default();
        }
        match registry.rsplit_once(':') {
            Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
            _ => registry,
        }
    }

    /// The name an install takes unless told: the repository's last part.
    pub fn default_name(&self) -> String {
        self.repository
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string()
    }

    /// The digest, else the tag: what the registry is asked for first.
    fn tag_or_digest(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or_default()
    }

    /// This reference's repository on its registry, authenticated for `access`.
    async fn connect(&self, auth: &AuthChoice, access: Access) -> Result<Registry, RemoteError> {
        let credentials = auth.resolve(&self.registry)?;
        step(
            self,
            "authenticating",
            Registry::connect(
                &self.given,
                &self.registry,
                &self.repository,
                &credentials,
                access,
            ),
        )
        .await
    }
}

/// How long one exchange with a registry other than a layer's transfer may take: a manifest
/// is small, and a registry that keeps sending one is refused rather than waited on.
const STEP_DEADLINE: Duration = Duration::from_secs(60);

/// `exchange`, refused past `STEP_DEADLINE`.
async fn step<T>(
    r: &OciRef,
    action: &'static str,
    exchange: impl std::future::Future<Output = Result<T, RemoteError>>,
) -> Result<T, RemoteError> {
    match tokio::time::timeout(STEP_DEADLINE, exchange).await {
        Ok(answer) => answer,
        Err(_) => Err(RemoteError::Registry {
            reference: r.given.clone(),
            action,
            answer: format!("no complete answer within {} s", STEP_DEADLINE.as_secs()),
            fix: format!("check that {} is a working registry", r.registry),
        }),
    }
}

/// A manifest as far as install reads it; everything else in it is ignored.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    schema_version: Option<i64>,
    media_type: Option<String>,
    config: Option<Descriptor>,
    layers: Option<Vec<Descriptor>>,
    manifests: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    media_type: String,
    digest: String,
    size: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    annotations: Option<BTreeMap<String, String>>,
}

/// The manifest's one wasm layer and its config, or why this is not a component artifact.
fn wasm_layer(r: &OciRef, bytes: &[u8]) -> Result<(Descriptor, Descriptor), RemoteError> {
    let not = |why: String| RemoteError::NotWasm {
        reference: r.given.clone(),
        why,
    };
    let manifest: Manifest = serde_json::from_slice(bytes)
        .map_err(|e| not(format!("its manifest is not valid JSON ({e})")))?;
    let media_type = manifest
        .media_type
        .as_deref()
        .unwrap_or(MANIFEST_MEDIA_TYPE);
    if manifest.manifests.is_some() || INDEX_MEDIA_TYPES.contains(&media_type) {
        return Err(not(
            "it is an image index (a list of manifests), not one artifact; a wasm component \
             is published as a single manifest: name that manifest's digest"
                .into(),
        ));
    }
    if media_type != MANIFEST_MEDIA_TYPE && media_type != DOCKER_MANIFEST_MEDIA_TYPE {
        return Err(not(format!(
            "its manifest is of type `{}`, not {MANIFEST_MEDIA_TYPE}",
            one_line(media_type, 100)
        )));
    }
    if manifest.schema_version != Some(2) {
        return Err(not("its manifest's schemaVersion is not 2".into()));
    }
    let config = manifest
        .config
        .ok_or_else(|| not("its manifest has no config".into()))?;
    if IMAGE_CONFIG_MEDIA_TYPES.contains(&config.media_type.as_str()) {
        return Err(not(format!(
            "it is a container image (config `{}`), not a wasm component",
            config.media_type
        )));
    }
    digest_hex(&config.digest, "config", &r.given)?;
    let layers = manifest.layers.unwrap_or_default();
    let [layer] = layers.as_slice() else {
        return Err(not(format!(
            "its manifest has {} layers; a wasm component artifact has exactly one, of type \
             {LAYER_MEDIA_TYPE}",
            layers.len()
        )));
    };
    if layer.media_type != LAYER_MEDIA_TYPE && layer.media_type != OLD_LAYER_MEDIA_TYPE {
        return Err(not(format!(
            "its layer is of type `{}`, not {LAYER_MEDIA_TYPE}",
            one_line(&layer.media_type, 100)
        )));
    }
    digest_hex(&layer.digest, "layer", &r.given)?;
    let size = u64::try_from(layer.size)
        .map_err(|_| not(format!("its layer's size {} is negative", layer.size)))?;
    if size > MAX_PLUGIN_BYTES {
        return Err(RemoteError::TooLarge {
            what: format!("the layer of {} (as its manifest declares)", r.given),
            size,
            max: MAX_PLUGIN_BYTES,
            max_mib: MAX_PLUGIN_BYTES >> 20,
        });
    }
    Ok((layer.clone(), config))
}

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
    let limit = distribution::download_deadline()?;
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

/// A small blob of `r`'s repository, read whole up to `cap` bytes and checked against its
/// digest.
async fn small_blob(
    r: &OciRef,
    registry: &Registry,
    descriptor: &Descriptor,
    cap: u64,
) -> Result<Vec<u8>, String> {
    let hex = digest_hex(&descriptor.digest, "signature layer", &r.given)
        .map_err(|_| "its digest is not sha256:<64 hex digits>".to_string())?;
    let size = u64::try_from(descriptor.size).map_err(|_| "its size is negative".to_string())?;
    if size > cap {
        return Err(format!(
            "it declares {size} bytes, over the {cap} paddock reads for it"
        ));
    }
    let fetch = async {
        let mut response = registry
            .blob(&descriptor.digest, "fetching a small blob")
            .await
            .map_err(|e| format!("fetching it failed: {e}"))?;
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("fetching it failed: {}", error_chain(&e)))?
        {
            if (bytes.len() + chunk.len()) as u64 > size {
                return Err(format!("the registry sent more than its {size} bytes"));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    };
    let bytes = tokio::time::timeout(STEP_DEADLINE, fetch)
        .await
        .map_err(|_| format!("no complete answer within {} s", STEP_DEADLINE.as_secs()))??;
    let actual = paddock_types::stamp::sha256_hex(&bytes);
    if actual != hex {
        return Err(format!(
            "its payload has digest sha256:{actual}, but the signature manifest names sha256:{hex}"
        ));
    }
    Ok(bytes)
}

/// The trusted key that signed `manifest_digest`, from the cosign signature manifest at
/// `sha256-HEX.sig` in `r`'s repository; else why not, with what to do.
async fn verify_signature(
    r: &OciRef,
    registry: &Registry,
    manifest_digest: &str,
    keys: &[TrustedKey],
    prefer: Option<&str>,
) -> Result<SignatureRecord, RemoteError> {
    let tag = signature::signature_tag(manifest_digest);
    let accepted = [MANIFEST_MEDIA_TYPE, DOCKER_MANIFEST_MEDIA_TYPE];
    let action = "fetching the signature";
    let pulled = step(r, action, registry.manifest(&tag, &accepted, action)).await?;
    let trusted = if keys.is_empty() {
        "none: no key is trusted yet".to_string()
    } else {
        keys.iter()
            .map(|k| format!("`{}` ({})", k.name, k.fingerprint))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let refused = |found: String, fix: &str| {
        RemoteError::SignatureRefused(Box::new(SignatureRefusal {
            reference: r.given.clone(),
            digest: manifest_digest.to_string(),
            tag: tag.clone(),
            trusted: trusted.clone(),
            found,
            fix: fix.to_string(),
        }))
    };
    let Some(bytes) = pulled else {
        return Err(RemoteError::Unsigned {
            reference: r.given.clone(),
            digest: manifest_digest.to_string(),
            tag,
            answer: "HTTP 404: manifest unknown".into(),
        });
    };
    const NOT_TRUSTED_FIX: &str = "If the publisher's key is the one you expect, trust it \
         with `paddock plugin trust-key NAME KEY.pub`; otherwise do not install this (or use \
         --allow-unsigned if you accept it unverified)";
    let signature_manifest = format!("sha256:{}", paddock_types::stamp::sha256_hex(&bytes));
    let manifest: Manifest = serde_json::from_slice(&bytes).map_err(|e| {
        refused(
            format!("a signature manifest that is not valid JSON ({e})"),
            NOT_TRUSTED_FIX,
        )
    })?;
    let layers: Vec<Descriptor> = manifest
        .layers
        .unwrap_or_default()
        .into_iter()
        .filter(|l| l.media_type == SIMPLESIGNING_MEDIA_TYPE)
        .collect();
    if layers.is_empty() {
        return Err(refused(
            format!("a manifest with no layer of type {SIMPLESIGNING_MEDIA_TYPE}"),
            NOT_TRUSTED_FIX,
        ));
    }
    if layers.len() > MAX_SIGNATURE_LAYERS {
        return Err(refused(
            format!(
                "{} signature layers, more than the {MAX_SIGNATURE_LAYERS} paddock reads",
                layers.len()
            ),
            NOT_TRUSTED_FIX,
        ));
    }
    if keys.is_empty() {
        return Err(refused(
            format!("{} signature(s), but you trust no key", layers.len()),
            "Trust the publisher's public key with `paddock plugin trust-key NAME KEY.pub` \
             (get it from the publisher, not from the registry), or install with \
             --allow-unsigned",
        ));
    }
    let mut found = Vec::new();
    let mut other_digest = false;
    let mut out_of_scope = None;
    let mut verified: Vec<SignatureRecord> = Vec::new();
    let docker_reference = format!("{}/{}", r.registry, r.repository);
    for (i, layer) in layers.iter().enumerate() {
        let n = i + 1;
        let Some(sig) = layer
            .annotations
            .as_ref()
            .and_then(|a| a.get(SIGNATURE_ANNOTATION))
        else {
            found.push(format!(
                "signature {n}: no {SIGNATURE_ANNOTATION} annotation"
            ));
            continue;
        };
        let payload = match small_blob(r, registry, layer, MAX_PAYLOAD_BYTES).await {
            Ok(payload) => payload,
            Err(why) => {
                found.push(format!("signature {n}: {why}"));
                continue;
            }
        };
        match signature::verify_layer(&payload, sig, keys, &docker_reference, manifest_digest) {
            LayerVerdict::Verified(key) => {
                use base64::Engine;
                let preferred = prefer.is_none_or(|p| p == key.fingerprint);
                verified.push(SignatureRecord {
                    key: Some(key.name),
                    fingerprint: Some(key.fingerprint),
                    signature_manifest: Some(signature_manifest.clone()),
                    unsigned_allowed: false,
                    payload: Some(base64::engine::general_purpose::STANDARD.encode(&payload)),
                    signature: Some(sig.trim().to_string()),
                });
                // The installed version's signer, or the first when none is preferred.
                if preferred {
                    break;
                }
            }
            LayerVerdict::OutOfScope { key, scopes } => {
                found.push(format!(
                    "signature {n}: {}",
                    signature::out_of_scope_words(&key, &scopes, &docker_reference)
                ));
                out_of_scope = Some(());
            }
            LayerVerdict::NoTrustedKey => found.push(format!(
                "signature {n}: does not verify with any trusted key (made by another key, or \
                 its payload or signature was altered)"
            )),
            LayerVerdict::OtherDigest { key, found: what } => {
                other_digest = true;
                found.push(format!(
                    "signature {n}: by trusted key `{key}`, but over {what}, not {manifest_digest} \
                     (a signature of another artifact)"
                ));
            }
            LayerVerdict::Malformed(why) => found.push(format!("signature {n}: {why}")),
        }
    }
    if !verified.is_empty() {
        let at = verified
            .iter()
            .position(|v| prefer.is_some() && v.fingerprint.as_deref() == prefer)
            .unwrap_or(0);
        return Ok(verified.swap_remove(at));
    }
    let fix = if other_digest {
        "The registry serves a signature made for another artifact under this one's tag: do \
         not install this; ask the publisher to sign this exact digest"
    } else if out_of_scope.is_some() {
        "A key you trust signed it, but you trusted that key only for other references: \
         install it only if that publisher may publish this repository"
    } else {
        NOT_TRUSTED_FIX
    };
    Err(refused(found.join("; "), fix))
}

/// What `sign` pushed.
#[derive(Debug, Clone)]
pub struct Signed {
    /// The digest signed.
    pub manifest_digest: String,
    /// The tag the signature manifest was pushed to (`sha256-HEX.sig`).
    pub tag: String,
    pub signature_manifest_digest: String,
    pub fingerprint: String,
}

/// Signs the manifest `r` names (a tag is resolved to its digest first) with `key`, and
/// pushes the signature in cosign's layout at `sha256-HEX.sig`, replacing one there.
pub async fn sign(
    r: &OciRef,
    auth: &AuthChoice,
    key: &p256::ecdsa::SigningKey,
    expected: Option<&str>,
    signing: &(dyn Fn(&str) + Sync),
) -> Result<Signed, RemoteError> {
    let registry = r.connect(auth, Access::Push).await?;
    let accepted = [MANIFEST_MEDIA_TYPE, DOCKER_MANIFEST_MEDIA_TYPE];
    let action = "resolving the manifest";
    let manifest_digest = step(
        r,
        action,
        registry.manifest_digest(r.tag_or_digest(), &accepted, action),
    )
    .await?;
    if let Some(given) = &r.digest
        && given != &manifest_digest
    {
        return Err(RemoteError::DigestMismatch {
            what: format!("the manifest of {}", r.given),
            source_of_truth: "the reference names",
            expected: given.clone(),
            actual: manifest_digest,
        });
    }
    if let Some(expected) = expected
        && expected != manifest_digest
    {
        return Err(RemoteError::SignRefused(format!(
            "{} resolves to {manifest_digest}, not the {} --digest names: the tag moved, or \
             the digest is another artifact's. Check what the tag holds now (`skopeo inspect \
             docker://{}/{}:{}`), then sign the digest you mean",
            r.given,
            one_line(expected, 80),
            r.registry,
            r.repository,
            r.tag.as_deref().unwrap_or_default()
        )));
    }
    signing(&manifest_digest);
    digest_hex(&manifest_digest, "manifest", &r.given)?;
    let docker_reference = format!("{}/{}", r.registry, r.repository);
    let payload = signature::payload(&docker_reference, &manifest_digest);
    let signed = signature::sign(key, &payload);
    let payload_digest = format!("sha256:{}", paddock_types::stamp::sha256_hex(&payload));
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "",
        "config": {},
        "created": "0001-01-01T00:00:00Z",
        "history": [{"created": "0001-01-01T00:00:00Z"}],
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": [payload_digest]},
    }))
    .unwrap_or_default();
    let config_digest = format!("sha256:{}", paddock_types::stamp::sha256_hex(&config));
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": Descriptor {
            media_type: signature::SIGNATURE_CONFIG_MEDIA_TYPE.into(),
            digest: config_digest.clone(),
            size: config.len() as i64,
            annotations: None,
        },
        "layers": [Descriptor {
            media_type: SIMPLESIGNING_MEDIA_TYPE.into(),
            digest: payload_digest.clone(),
            size: payload.len() as i64,
            annotations: Some(BTreeMap::from([(SIGNATURE_ANNOTATION.to_string(), signed)])),
        }],
    });
    let manifest = serde_json::to_vec(&manifest).unwrap_or_default();
    let tag = signature::signature_tag(&manifest_digest);
    let action = "pushing the signature payload";
    step(
        r,
        action,
        registry.push_blob(payload, &payload_digest, action),
    )
    .await?;
    let action = "pushing the signature config";
    step(
        r,
        action,
        registry.push_blob(config, &config_digest, action),
    )
    .await?;
    let action = "pushing the signature manifest";
    step(
        r,
        action,
        registry.push_manifest(&tag, manifest.clone(), MANIFEST_MEDIA_TYPE, action),
    )
    .await?;
    Ok(Signed {
        manifest_digest,
        tag,
        signature_manifest_digest: format!(
            "sha256:{}",
            paddock_types::stamp::sha256_hex(&manifest)
        ),
        fingerprint: signature::fingerprint(key.verifying_key()),
    })
}

/// The component's interfaces, for the artifact's config.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentInfo {
    pub exports: Vec<String>,
    pub imports: Vec<String>,
    pub target: Option<String>,
}

/// The config blob of the wasm OCI artifact layout.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct WasmConfig<'a> {
    created: &'a str,
    author: Option<&'a str>,
    architecture: &'static str,
    os: &'static str,
    layer_digests: Vec<String>,
    component: &'a ComponentInfo,
}

/// What `publish` pushed.
#[derive(Debug, Clone)]
pub struct Published {
    pub manifest_digest: String,
    pub layer_digest: String,
    pub config_digest: String,
}

/// What to push: the component's bytes and what the manifest says about it.
pub struct Artifact<'a> {
    pub wasm: Vec<u8>,
    pub component: &'a ComponentInfo,
    /// RFC 3339.
    pub created: &'a str,
    pub title: &'a str,
    pub version: Option<&'a str>,
}

/// Pushes `artifact` to `r` (which must name a tag) in the wasm OCI layout.
pub async fn push(
    r: &OciRef,
    auth: &AuthChoice,
    artifact: Artifact<'_>,
) -> Result<Published, RemoteError> {
    if r.tag.is_none() || r.digest.is_some() {
        return Err(RemoteError::BadReference {
            given: r.given.clone(),
            why: "publish pushes to a tag: write oci://REGISTRY/REPOSITORY:TAG".into(),
        });
    }
    let registry = r.connect(auth, Access::Push).await?;
    let layer_digest = format!(
        "sha256:{}",
        paddock_types::stamp::sha256_hex(&artifact.wasm)
    );
    let config = serde_json::to_vec(&WasmConfig {
        created: artifact.created,
        author: None,
        architecture: "wasm",
        os: "wasip2",
        layer_digests: vec![layer_digest.clone()],
        component: artifact.component,
    })
    .unwrap_or_default();
    let config_digest = format!("sha256:{}", paddock_types::stamp::sha256_hex(&config));
    let mut annotations = BTreeMap::from([
        (
            "org.opencontainers.image.created".to_string(),
            artifact.created.to_string(),
        ),
        (
            "org.opencontainers.image.title".to_string(),
            artifact.title.to_string(),
        ),
    ]);
    if let Some(version) = artifact.version {
        annotations.insert(
            "org.opencontainers.image.version".to_string(),
            version.to_string(),
        );
    }
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": Descriptor {
            media_type: CONFIG_MEDIA_TYPE.into(),
            digest: config_digest.clone(),
            size: config.len() as i64,
            annotations: None,
        },
        "layers": [Descriptor {
            media_type: LAYER_MEDIA_TYPE.into(),
            digest: layer_digest.clone(),
            size: artifact.wasm.len() as i64,
            annotations: Some(BTreeMap::from([(
                "org.opencontainers.image.title".to_string(),
                format!("{}.wasm", artifact.title),
            )])),
        }],
        "annotations": annotations,
    });
    let manifest = serde_json::to_vec(&manifest).unwrap_or_default();
    let manifest_digest = format!("sha256:{}", paddock_types::stamp::sha256_hex(&manifest));
    let tag = r.tag.as_deref().unwrap_or_default();
    registry
        .push_blob(artifact.wasm, &layer_digest, "pushing the layer")
        .await?;
    registry
        .push_blob(config, &config_digest, "pushing the config")
        .await?;
    registry
        .push_manifest(tag, manifest, MANIFEST_MEDIA_TYPE, "pushing the manifest")
        .await?;
    Ok(Published {
        manifest_digest,
        layer_digest,
        config_digest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_name_a_registry_and_a_tag_or_sha256_digest() {
        let r = OciRef::parse("oci://127.0.0.1:5000/plugins/fs:1.0").unwrap();
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert_eq!(r.repository, "plugins/fs");
        assert_eq!(r.tag.as_deref(), Some("1.0"));
        assert_eq!(r.host(), "127.0.0.1");
        assert_eq!(r.default_name(), "fs");
        let d = format!("oci://localhost:5000/fs@sha256:{}", "a".repeat(64));
        let r = OciRef::parse(&d).unwrap();
        assert_eq!(r.host(), "localhost");
        assert_eq!(r.tag, None);
        assert!(r.digest.is_some());
        for bad in [
            "oci://fs:1.0",
            "fs:1.0",
            "oci://library/fs:1.0",
            "oci://ghcr.io/acme/fs",
            "oci://ghcr.io/acme/../fs:1",
            "oci://ghcr.io/acme/FS:1",
            "https://ghcr.io/acme/fs:1",
        ] {
            assert!(OciRef::parse(bad).is_err(), "{bad}");
        }
        let md5 = format!("oci://ghcr.io/acme/fs@md5:{}", "a".repeat(32));
        assert!(OciRef::parse(&md5).is_err());
    }

    fn manifest(layers: &str, media_type: &str) -> Vec<u8> {
        format!(
            r#"{{"schemaVersion":2,"mediaType":"{media_type}","config":{{"mediaType":"{CONFIG_MEDIA_TYPE}","digest":"sha256:{c}","size":2}},"layers":[{layers}]}}"#,
            c = "c".repeat(64)
        )
        .into_bytes()
    }

    fn layer(media_type: &str, size: u64) -> String {
        format!(
            r#"{{"mediaType":"{media_type}","digest":"sha256:{}","size":{size}}}"#,
            "b".repeat(64)
        )
    }

    #[test]
    fn only_a_manifest_with_one_wasm_layer_under_the_cap_is_a_component() {
        let r = OciRef::parse("oci://localhost:5000/x:1").unwrap();
        let one = layer(LAYER_MEDIA_TYPE, 10);
        assert!(wasm_layer(&r, &manifest(&one, MANIFEST_MEDIA_TYPE)).is_ok());
        let two = format!("{one},{one}");
        let err = wasm_layer(&r, &manifest(&two, MANIFEST_MEDIA_TYPE)).unwrap_err();
        assert!(err.to_string().contains("has 2 layers"), "{err}");
        let tar = layer("application/vnd.oci.image.layer.v1.tar+gzip", 10);
        let err = wasm_layer(&r, &manifest(&tar, MANIFEST_MEDIA_TYPE)).unwrap_err();
        assert!(err.to_string().contains("tar+gzip"), "{err}");
        let huge = layer(LAYER_MEDIA_TYPE, MAX_PLUGIN_BYTES + 1);
        let err = wasm_layer(&r, &manifest(&huge, MANIFEST_MEDIA_TYPE)).unwrap_err();
        assert!(
            err.to_string()
                .contains(&(MAX_PLUGIN_BYTES + 1).to_string()),
            "{err}"
        );
        let err = wasm_layer(&r, &manifest(&one, INDEX_MEDIA_TYPES[0])).unwrap_err();
        assert!(err.to_string().contains("image index"), "{err}");
        let negative = layer(LAYER_MEDIA_TYPE, 0).replace("\"size\":0", "\"size\":-1");
        assert!(wasm_layer(&r, &manifest(&negative, MANIFEST_MEDIA_TYPE)).is_err());
    }
}
