//! Signatures of OCI artifacts in cosign's key-based format (the "simple signing" payload
//! that `cosign sign --key` and `skopeo copy --sign-by-sigstore-private-key` push): an
//! artifact at manifest digest `sha256:HEX` is signed by a manifest at tag `sha256-HEX.sig` in
//! the same repository, whose layers of type `application/vnd.dev.cosign.simplesigning.v1+json`
//! are a JSON payload naming that digest, each with an ECDSA P-256 signature (DER, base64)
//! over the payload's bytes in the annotation `dev.cosignproject.cosign/signature`.
//!
//! Only keys the user trusts count (`keys.rs`), and a key trusted for reference patterns
//! vouches only for references that match one (`ghcr.io/acme/*`); a key without patterns
//! vouches for any. The payload must name the exact digest being installed, so a signature
//! copied from another artifact is refused. A recorded signature is verified again, offline,
//! at each session start (`SignatureRecord::recheck`). Fetching and pushing signature
//! manifests is `oci/cosign.rs`; this file holds no I/O.

use p256::ecdsa::signature::{Signer, Verifier};
use p256::ecdsa::{Signature, SigningKey};
use serde::{Deserialize, Serialize};

use paddock_types::text::one_line;

use super::keys::TrustedKey;

pub const SIMPLESIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
pub const PAYLOAD_TYPE: &str = "cosign container image signature";
/// The config cosign gives a signature manifest.
pub const SIGNATURE_CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";
/// The largest signature payload read: a real one is a few hundred bytes.
pub const MAX_PAYLOAD_BYTES: u64 = 64 << 10;
/// How many signature layers are looked at; a manifest with more is refused.
pub const MAX_SIGNATURE_LAYERS: usize = 32;
/// The largest base64 signature annotation read (a DER P-256 signature is at most 72 bytes).
const MAX_SIGNATURE_CHARS: usize = 1024;

/// The tag cosign keeps the signatures of `manifest_digest` (`sha256:HEX`) at.
pub fn signature_tag(manifest_digest: &str) -> String {
    format!("{}.sig", manifest_digest.replacen(':', "-", 1))
}

/// How a remote install treats signatures.
#[derive(Debug, Clone)]
pub enum SignaturePolicy {
    /// A signature by one of these keys over the exact manifest digest is required.
    Require(Vec<TrustedKey>),
    /// Unsigned allowed: nothing is checked, and the record says so.
    AllowUnsigned,
}

/// What a remote install recorded about its signature.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignatureRecord {
    /// The trusted key that signed the manifest digest (none when unsigned was allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// `sha256:…` of the signature manifest that held the verified signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature_manifest: Option<String>,
    /// True when installed with unsigned allowed: no signature was checked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsigned_allowed: bool,
    /// The verified simple-signing payload, base64: with `signature`, what a session start
    /// verifies again, offline, against the keys trusted then. Records written before these
    /// were kept have neither, and are not verified again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
    /// The verified signature over `payload` (DER, base64), as the registry served it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// What verifying a recorded signature again found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recheck {
    /// Still signed, by this trusted key.
    Valid(TrustedKey),
    /// Installed with unsigned allowed: nothing to verify.
    UnsignedAllowed,
    /// A record from before payload and signature were kept: not verifiable offline.
    NotRecorded,
    /// No trusted key verifies it over the recorded digest any more, and why.
    Invalid(String),
}

/// The out-of-scope refusal, in words: key, its scope, the reference.
pub fn out_of_scope_words(key: &str, scopes: &str, reference: &str) -> String {
    format!(
        "it is signed by trusted key `{}`, which vouches only for {scopes}, not for {}; if this \
         publisher may sign it, trust the key for it too",
        one_line(key, 64),
        one_line(reference, 200),
    )
}

impl SignatureRecord {
    /// Verifies the recorded payload and signature again, offline, against `keys` (the keys
    /// trusted now, each within its scope), `reference` (`REGISTRY/REPOSITORY`, the record's)
    /// and `manifest_digest` (the record's).
    pub fn recheck(&self, keys: &[TrustedKey], reference: &str, manifest_digest: &str) -> Recheck {
        use base64::Engine;
        if self.unsigned_allowed {
            return Recheck::UnsignedAllowed;
        }
        let (Some(payload), Some(signature)) = (&self.payload, &self.signature) else {
            return Recheck::NotRecorded;
        };
        let Ok(payload) = base64::engine::general_purpose::STANDARD.decode(payload) else {
            return Recheck::Invalid("the recorded payload is not base64".into());
        };
        match verify_layer(&payload, signature, keys, reference, manifest_digest) {
            LayerVerdict::Verified(key) => Recheck::Valid(key),
            LayerVerdict::OutOfScope { key, scopes } => {
                Recheck::Invalid(out_of_scope_words(&key, &scopes, reference))
            }
            LayerVerdict::NoTrustedKey => Recheck::Invalid(format!(
                "no key trusted now verifies its signature (it was signed by `{}` {}, which is \
                 no longer trusted, or the record was altered)",
                self.key
                    .as_deref()
                    .map(|k| one_line(k, 64))
                    .unwrap_or_default(),
                self.fingerprint.as_deref().unwrap_or_default(),
            )),
            LayerVerdict::OtherDigest { found, .. } => Recheck::Invalid(format!(
                "the recorded signature is over {found}, not {manifest_digest}"
            )),
            LayerVerdict::Malformed(why) => Recheck::Invalid(why),
        }
    }
}

/// The simple-signing payload for `manifest_digest` in `docker_reference`
/// (`REGISTRY/REPOSITORY`), laid out as cosign lays it out.
pub fn payload(docker_reference: &str, manifest_digest: &str) -> Vec<u8> {
    let value = serde_json::json!({
        "critical": {
            "identity": {"docker-reference": docker_reference},
            "image": {"docker-manifest-digest": manifest_digest},
            "type": PAYLOAD_TYPE,
        },
        "optional": null,
    });
    serde_json::to_vec(&value).unwrap_or_default()
}

/// The base64 DER signature of `payload` by `key` (ECDSA P-256 over SHA-256).
pub fn sign(key: &SigningKey, payload: &[u8]) -> String {
    use base64::Engine;
    let signature: Signature = key.sign(payload);
    base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes())
}

/// Why one signature layer does not count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayerVerdict {
    /// Signed by this trusted key, and the payload names the digest installed.
    Verified(TrustedKey),
    /// The signature verifies with no trusted key.
    NoTrustedKey,
    /// Only keys trusted for other references verify it.
    OutOfScope { key: String, scopes: String },
    /// A trusted key signed it, but the payload names another digest (or is not a cosign
    /// image signature).
    OtherDigest { key: String, found: String },
    /// The layer is malformed (no annotation, not base64, not DER).
    Malformed(String),
}

#[derive(Deserialize)]
struct Payload {
    critical: Critical,
}

#[derive(Deserialize)]
struct Critical {
    image: Image,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct Image {
    #[serde(rename = "docker-manifest-digest")]
    docker_manifest_digest: String,
}

/// Checks one signature layer: `signature_b64` over `payload` with each of `keys` that
/// vouches for `reference` (`REGISTRY/REPOSITORY`), then that the payload names
/// `manifest_digest`.
pub fn verify_layer(
    payload: &[u8],
    signature_b64: &str,
    keys: &[TrustedKey],
    reference: &str,
    manifest_digest: &str,
) -> LayerVerdict {
    use base64::Engine;
    if signature_b64.len() > MAX_SIGNATURE_CHARS {
        return LayerVerdict::Malformed(format!(
            "its signature annotation is {} characters, over {MAX_SIGNATURE_CHARS}",
            signature_b64.len()
        ));
    }
    let Ok(der) = base64::engine::general_purpose::STANDARD.decode(signature_b64.trim()) else {
        return LayerVerdict::Malformed("its signature annotation is not base64".into());
    };
    let Ok(signature) = Signature::from_der(&der) else {
        return LayerVerdict::Malformed("its signature is not a DER ECDSA P-256 signature".into());
    };
    let mut verifying = keys
        .iter()
        .filter(|k| k.key.verify(payload, &signature).is_ok())
        .peekable();
    let Some(first) = verifying.peek().cloned() else {
        return LayerVerdict::NoTrustedKey;
    };
    let Some(key) = verifying.find(|k| k.covers(reference)) else {
        return LayerVerdict::OutOfScope {
            key: first.name.clone(),
            scopes: first.scope_words(),
        };
    };
    let parsed: Result<Payload, _> = serde_json::from_slice(payload);
    match parsed {
        Ok(p)
            if p.critical.kind == PAYLOAD_TYPE
                && p.critical.image.docker_manifest_digest == manifest_digest =>
        {
            LayerVerdict::Verified(key.clone())
        }
        Ok(p) if p.critical.kind != PAYLOAD_TYPE => LayerVerdict::OtherDigest {
            key: key.name.clone(),
            found: format!(
                "a payload of type `{}`, not `{PAYLOAD_TYPE}`",
                one_line(&p.critical.kind, 80)
            ),
        },
        Ok(p) => LayerVerdict::OtherDigest {
            key: key.name.clone(),
            found: format!(
                "a payload for {}",
                one_line(&p.critical.image.docker_manifest_digest, 80)
            ),
        },
        Err(e) => LayerVerdict::OtherDigest {
            key: key.name.clone(),
            found: format!("a payload that is not a cosign simple-signing document ({e})"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin_store::keys::fingerprint;

    const REF: &str = "127.0.0.1:5000/plugins/fs";

    fn key(name: &str) -> (SigningKey, TrustedKey) {
        let secret = {
            use sha2::Digest;
            SigningKey::from_slice(&sha2::Sha256::digest(name.as_bytes())).unwrap()
        };
        let public = *secret.verifying_key();
        let trusted = TrustedKey {
            name: name.into(),
            fingerprint: fingerprint(&public),
            key: public,
            scopes: Vec::new(),
        };
        (secret, trusted)
    }

    #[test]
    fn only_a_trusted_key_over_the_exact_digest_verifies() {
        let (secret, trusted) = key("alice");
        let (_, other) = key("bob");
        let digest = format!("sha256:{}", "a".repeat(64));
        let body = payload("127.0.0.1:5000/plugins/fs", &digest);
        let sig = sign(&secret, &body);
        assert_eq!(
            verify_layer(&body, &sig, std::slice::from_ref(&trusted), REF, &digest),
            LayerVerdict::Verified(trusted.clone())
        );
        assert_eq!(
            verify_layer(&body, &sig, std::slice::from_ref(&other), REF, &digest),
            LayerVerdict::NoTrustedKey
        );
        let elsewhere = format!("sha256:{}", "b".repeat(64));
        assert!(matches!(
            verify_layer(&body, &sig, std::slice::from_ref(&trusted), REF, &elsewhere),
            LayerVerdict::OtherDigest { .. }
        ));
        let mut tampered = body.clone();
        tampered[10] ^= 1;
        assert_eq!(
            verify_layer(
                &tampered,
                &sig,
                std::slice::from_ref(&trusted),
                REF,
                &digest
            ),
            LayerVerdict::NoTrustedKey
        );
        assert!(matches!(
            verify_layer(&body, "!!", std::slice::from_ref(&trusted), REF, &digest),
            LayerVerdict::Malformed(_)
        ));
        assert_eq!(
            signature_tag(&digest),
            format!("sha256-{}.sig", "a".repeat(64))
        );
    }

    #[test]
    fn a_recorded_signature_verifies_again_only_while_its_key_is_trusted() {
        use base64::Engine;
        let (secret, trusted) = key("alice");
        let (_, other) = key("bob");
        let digest = format!("sha256:{}", "a".repeat(64));
        let body = payload("127.0.0.1:5000/plugins/fs", &digest);
        let record = SignatureRecord {
            key: Some("alice".into()),
            fingerprint: Some(trusted.fingerprint.clone()),
            payload: Some(base64::engine::general_purpose::STANDARD.encode(&body)),
            signature: Some(sign(&secret, &body)),
            ..SignatureRecord::default()
        };
        assert_eq!(
            record.recheck(&[other.clone(), trusted.clone()], REF, &digest),
            Recheck::Valid(trusted.clone())
        );
        match record.recheck(std::slice::from_ref(&other), REF, &digest) {
            Recheck::Invalid(why) => assert!(why.contains("no longer trusted"), "{why}"),
            found => panic!("{found:?}"),
        }
        let elsewhere = format!("sha256:{}", "b".repeat(64));
        assert!(matches!(
            record.recheck(std::slice::from_ref(&trusted), REF, &elsewhere),
            Recheck::Invalid(_)
        ));
        let old = SignatureRecord {
            payload: None,
            signature: None,
            ..record
        };
        assert_eq!(old.recheck(&[], REF, &digest), Recheck::NotRecorded);
    }

    #[test]
    fn a_key_trusted_for_patterns_vouches_only_for_matching_references() {
        let (secret, mut trusted) = key("acme");
        trusted.scopes = vec!["ghcr.io/acme/*".into()];
        let digest = format!("sha256:{}", "a".repeat(64));
        let body = payload("ghcr.io/acme/fs", &digest);
        let sig = sign(&secret, &body);
        let keys = std::slice::from_ref(&trusted);
        assert_eq!(
            verify_layer(&body, &sig, keys, "ghcr.io/acme/fs", &digest),
            LayerVerdict::Verified(trusted.clone())
        );
        match verify_layer(&body, &sig, keys, "ghcr.io/other/fs", &digest) {
            LayerVerdict::OutOfScope { key, scopes } => {
                assert_eq!(key, "acme");
                assert!(scopes.contains("ghcr.io/acme/*"), "{scopes}");
            }
            found => panic!("{found:?}"),
        }
        // The same key trusted twice, once for everything: the second entry vouches.
        let mut any = trusted.clone();
        any.name = "acme-any".into();
        any.scopes.clear();
        assert_eq!(
            verify_layer(
                &body,
                &sig,
                &[trusted.clone(), any.clone()],
                "ghcr.io/other/fs",
                &digest
            ),
            LayerVerdict::Verified(any)
        );
        use base64::Engine;
        let record = SignatureRecord {
            key: Some("acme".into()),
            fingerprint: Some(trusted.fingerprint.clone()),
            payload: Some(base64::engine::general_purpose::STANDARD.encode(&body)),
            signature: Some(sig),
            ..SignatureRecord::default()
        };
        match record.recheck(keys, "ghcr.io/other/fs", &digest) {
            Recheck::Invalid(why) => {
                assert!(
                    why.contains("acme") && why.contains("ghcr.io/acme/*"),
                    "{why}"
                );
                assert!(why.contains("ghcr.io/other/fs"), "{why}");
            }
            found => panic!("{found:?}"),
        }
    }
}
