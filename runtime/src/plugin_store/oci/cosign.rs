//! cosign's signatures in the registry: the signature manifest at `sha256-HEX.sig` beside an
//! artifact fetched and each of its simple-signing layers checked against the trusted keys and
//! the exact manifest digest (`verify_signature`), or a new one pushed there (`sign`). What a
//! signature is, and when it counts, is `../signature.rs`; this file only moves it.

use std::collections::BTreeMap;

use paddock_types::text::one_line;

use super::auth::AuthChoice;
use super::distribution::{Access, Registry};
use super::manifest::{DOCKER_MANIFEST_MEDIA_TYPE, Descriptor, MANIFEST_MEDIA_TYPE, Manifest};
use super::reference::OciRef;
use super::{small_blob, step};
use crate::plugin_store::keys::{self, TrustedKey};
use crate::plugin_store::remote::{RemoteError, SignatureFix, SignatureRefusal, digest_hex};
use crate::plugin_store::signature::{
    self, LayerVerdict, MAX_PAYLOAD_BYTES, MAX_SIGNATURE_LAYERS, SIGNATURE_ANNOTATION,
    SIMPLESIGNING_MEDIA_TYPE, SignatureRecord,
};

/// The trusted key that signed `manifest_digest`, from the cosign signature manifest at
/// `sha256-HEX.sig` in `r`'s repository; else why not, with what to do. When several trusted
/// keys signed it, the one with fingerprint `prefer` is the one recorded.
pub(super) async fn verify_signature(
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
    let Some(bytes) = pulled else {
        return Err(RemoteError::Unsigned {
            reference: r.given.clone(),
            digest: manifest_digest.to_string(),
            tag,
            answer: "HTTP 404: manifest unknown".into(),
        });
    };
    let refusal = Refusal {
        r,
        digest: manifest_digest,
        tag: &tag,
        keys,
    };
    let layers =
        signature_layers(&bytes, keys).map_err(|(found, fix)| refusal.refused(found, fix))?;
    let mut findings = Findings {
        docker_reference: format!("{}/{}", r.registry, r.repository),
        digest: manifest_digest,
        signature_manifest: format!("sha256:{}", paddock_types::stamp::sha256_hex(&bytes)),
        prefer,
        found: Vec::new(),
        verified: Vec::new(),
        other_digest: false,
        out_of_scope: None,
    };
    for (i, layer) in layers.iter().enumerate() {
        let read = read_layer(r, registry, layer, keys, &findings).await;
        // The installed version's signer, or the first when none is preferred.
        if findings.add(i + 1, read) {
            break;
        }
    }
    findings
        .into_record()
        .map_err(|(found, fix)| refusal.refused(found, fix))
}

/// A refusal of the signatures of `digest` at `tag`, naming the keys trusted.
struct Refusal<'a> {
    r: &'a OciRef,
    digest: &'a str,
    tag: &'a str,
    keys: &'a [TrustedKey],
}

impl Refusal<'_> {
    fn refused(&self, found: String, fix: SignatureFix) -> RemoteError {
        let trusted = if self.keys.is_empty() {
            "none: no key is trusted yet".to_string()
        } else {
            self.keys
                .iter()
                .map(|k| format!("`{}` ({})", k.name, k.fingerprint))
                .collect::<Vec<_>>()
                .join(", ")
        };
        RemoteError::SignatureRefused(Box::new(SignatureRefusal {
            reference: self.r.given.clone(),
            digest: self.digest.to_string(),
            tag: self.tag.to_string(),
            trusted,
            found,
            fix,
        }))
    }
}

/// The simple-signing layers of the signature manifest `bytes`, at most
/// `MAX_SIGNATURE_LAYERS` of them; else what was found, and what to do.
fn signature_layers(
    bytes: &[u8],
    keys: &[TrustedKey],
) -> Result<Vec<Descriptor>, (String, SignatureFix)> {
    let manifest: Manifest = serde_json::from_slice(bytes).map_err(|e| {
        (
            format!("a signature manifest that is not valid JSON ({e})"),
            SignatureFix::NotTrusted,
        )
    })?;
    let layers: Vec<Descriptor> = manifest
        .layers
        .unwrap_or_default()
        .into_iter()
        .filter(|l| l.media_type == SIMPLESIGNING_MEDIA_TYPE)
        .collect();
    if layers.is_empty() {
        return Err((
            format!("a manifest with no layer of type {SIMPLESIGNING_MEDIA_TYPE}"),
            SignatureFix::NotTrusted,
        ));
    }
    if layers.len() > MAX_SIGNATURE_LAYERS {
        return Err((
            format!(
                "{} signature layers, more than the {MAX_SIGNATURE_LAYERS} paddock reads",
                layers.len()
            ),
            SignatureFix::NotTrusted,
        ));
    }
    if keys.is_empty() {
        return Err((
            format!("{} signature(s), but you trust no key", layers.len()),
            SignatureFix::NoKeyTrusted,
        ));
    }
    Ok(layers)
}

/// One signature layer as read: its payload, its signature, and the verdict on them.
struct Layer {
    payload: Vec<u8>,
    signature: String,
    verdict: LayerVerdict,
}

/// Signature layer `layer` read (its annotation; its payload fetched through a cap and
/// checked against its digest) and judged; else why it could not be read.
async fn read_layer(
    r: &OciRef,
    registry: &Registry,
    layer: &Descriptor,
    keys: &[TrustedKey],
    findings: &Findings<'_>,
) -> Result<Layer, String> {
    let signature = layer
        .annotations
        .as_ref()
        .and_then(|a| a.get(SIGNATURE_ANNOTATION))
        .ok_or_else(|| format!("no {SIGNATURE_ANNOTATION} annotation"))?;
    let payload = small_blob(r, registry, layer, MAX_PAYLOAD_BYTES).await?;
    let verdict = signature::verify_layer(
        &payload,
        signature,
        keys,
        &findings.docker_reference,
        findings.digest,
    );
    Ok(Layer {
        payload,
        signature: signature.clone(),
        verdict,
    })
}

/// What the layers of one signature manifest showed, layer by layer.
struct Findings<'a> {
    /// `REGISTRY/REPOSITORY`, as a payload names it.
    docker_reference: String,
    /// The manifest digest a signature must be over.
    digest: &'a str,
    /// `sha256:…` of the signature manifest, for the record.
    signature_manifest: String,
    /// The fingerprint of the signer to record when several signed.
    prefer: Option<&'a str>,
    /// One line a layer that does not count.
    found: Vec<String>,
    verified: Vec<SignatureRecord>,
    /// A trusted key signed another artifact's digest.
    other_digest: bool,
    /// A trusted key signed it, but is trusted only for other references.
    out_of_scope: Option<String>,
}

impl Findings<'_> {
    /// Layer `n` as read; true once it is the preferred signer's (no layer after it is read).
    fn add(&mut self, n: usize, read: Result<Layer, String>) -> bool {
        let layer = match read {
            Ok(layer) => layer,
            Err(why) => {
                self.found.push(format!("signature {n}: {why}"));
                return false;
            }
        };
        let digest = self.digest;
        match layer.verdict {
            LayerVerdict::Verified(key) => {
                use base64::Engine;
                let preferred = self.prefer.is_none_or(|p| p == key.fingerprint);
                self.verified.push(SignatureRecord {
                    key: Some(key.name),
                    fingerprint: Some(key.fingerprint),
                    signature_manifest: Some(self.signature_manifest.clone()),
                    unsigned_allowed: false,
                    payload: Some(base64::engine::general_purpose::STANDARD.encode(&layer.payload)),
                    signature: Some(layer.signature.trim().to_string()),
                });
                return preferred;
            }
            LayerVerdict::OutOfScope { key, scopes } => {
                self.found.push(format!(
                    "signature {n}: {}",
                    signature::out_of_scope_words(&key, &scopes, &self.docker_reference)
                ));
                self.out_of_scope = Some(key);
            }
            LayerVerdict::NoTrustedKey => self.found.push(format!(
                "signature {n}: does not verify with any trusted key (made by another key, or \
                 its payload or signature was altered)"
            )),
            LayerVerdict::OtherDigest { key, found: what } => {
                self.other_digest = true;
                self.found.push(format!(
                    "signature {n}: by trusted key `{key}`, but over {what}, not {digest} (a \
                     signature of another artifact)"
                ));
            }
            LayerVerdict::Malformed(why) => self.found.push(format!("signature {n}: {why}")),
        }
        false
    }

    /// The verified signature to record (the preferred signer's, else the first); else what
    /// was found, and what to do.
    fn into_record(mut self) -> Result<SignatureRecord, (String, SignatureFix)> {
        if !self.verified.is_empty() {
            let prefer = self.prefer;
            let at = self
                .verified
                .iter()
                .position(|v| prefer.is_some() && v.fingerprint.as_deref() == prefer)
                .unwrap_or(0);
            return Ok(self.verified.swap_remove(at));
        }
        let fix = if self.other_digest {
            SignatureFix::OtherArtifact
        } else if let Some(key) = self.out_of_scope {
            SignatureFix::OutOfScope { key }
        } else {
            SignatureFix::NotTrusted
        };
        Err((self.found.join("; "), fix))
    }
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
/// pushes the signature in cosign's layout at `sha256-HEX.sig`, replacing one there. With
/// `expected`, the reference must resolve to that digest, else nothing is signed; `signing`
/// is told the digest before it is signed.
pub async fn sign(
    r: &OciRef,
    auth: &AuthChoice,
    key: &p256::ecdsa::SigningKey,
    expected: Option<&str>,
    signing: &(dyn Fn(&str) + Sync),
) -> Result<Signed, RemoteError> {
    let registry = r.connect(auth, Access::Push).await?;
    let manifest_digest = resolve_to_sign(r, &registry, expected).await?;
    signing(&manifest_digest);
    digest_hex(&manifest_digest, "manifest", &r.given)?;
    let signature = SignatureArtifact::new(r, key, &manifest_digest);
    let signature_manifest_digest = format!(
        "sha256:{}",
        paddock_types::stamp::sha256_hex(&signature.manifest)
    );
    let tag = signature::signature_tag(&manifest_digest);
    signature.push(r, &registry, &tag).await?;
    Ok(Signed {
        manifest_digest,
        tag,
        signature_manifest_digest,
        fingerprint: keys::fingerprint(key.verifying_key()),
    })
}

/// The digest `r` resolves to now, which must be the one it names (if it names one) and the
/// one `expected` (if given): a tag that moved since it was checked is not signed.
async fn resolve_to_sign(
    r: &OciRef,
    registry: &Registry,
    expected: Option<&str>,
) -> Result<String, RemoteError> {
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
            "{} resolves to {manifest_digest}, not the {} asked for: the tag moved, or the \
             digest is another artifact's. Check what the tag holds now (`skopeo inspect \
             docker://{}/{}:{}`), then sign the digest you mean",
            r.given,
            one_line(expected, 80),
            r.registry,
            r.repository,
            r.tag.as_deref().unwrap_or_default()
        )));
    }
    Ok(manifest_digest)
}

/// A signature in cosign's layout: the simple-signing payload (the one layer, its signature
/// in an annotation), the config cosign writes for it, and the manifest naming both.
struct SignatureArtifact {
    payload: Vec<u8>,
    payload_digest: String,
    config: Vec<u8>,
    config_digest: String,
    manifest: Vec<u8>,
}

impl SignatureArtifact {
    /// `manifest_digest` in `r`'s repository, signed with `key`.
    fn new(r: &OciRef, key: &p256::ecdsa::SigningKey, manifest_digest: &str) -> SignatureArtifact {
        let docker_reference = format!("{}/{}", r.registry, r.repository);
        let payload = signature::payload(&docker_reference, manifest_digest);
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
        SignatureArtifact {
            payload,
            payload_digest,
            config,
            config_digest,
            manifest: serde_json::to_vec(&manifest).unwrap_or_default(),
        }
    }

    /// Pushes the payload, the config, then the manifest at `tag`.
    async fn push(self, r: &OciRef, registry: &Registry, tag: &str) -> Result<(), RemoteError> {
        let action = "pushing the signature payload";
        let payload = registry.push_blob(self.payload, &self.payload_digest, action);
        step(r, action, payload).await?;
        let action = "pushing the signature config";
        let config = registry.push_blob(self.config, &self.config_digest, action);
        step(r, action, config).await?;
        let action = "pushing the signature manifest";
        let manifest = registry.push_manifest(tag, self.manifest, MANIFEST_MEDIA_TYPE, action);
        step(r, action, manifest).await
    }
}
