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
use crate::plugin_store::remote::{RemoteError, SignatureRefusal, digest_hex};
use crate::plugin_store::signature::{
    self, LayerVerdict, MAX_PAYLOAD_BYTES, MAX_SIGNATURE_LAYERS, SIGNATURE_ANNOTATION,
    SIMPLESIGNING_MEDIA_TYPE, SignatureRecord,
};

/// The trusted key that signed `manifest_digest`, from the cosign signature manifest at
/// `sha256-HEX.sig` in `r`'s repository; else why not, with what to do.
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
        fingerprint: keys::fingerprint(key.verifying_key()),
    })
}
