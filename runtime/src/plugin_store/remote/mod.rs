//! Plugins from elsewhere than a local file: what an install from a registry or a URL records
//! (`Origin`), how it reports progress, why it failed (`RemoteError`, each message naming what
//! was asked for, what the other side answered and what to do), and the digests it checks.
//! The registry or server is not trusted; what every remote request shares lives here:
//! `hop.rs` where a request may go, `download.rs` bytes within their caps and deadline (kept
//! only once verified), `https.rs` an install from a URL. The registry client is `../oci/`.

mod download;
pub mod hop;
pub mod https;

pub use download::{BodyError, Download, Verified, download_deadline, read_capped};

use serde::{Deserialize, Serialize};

use paddock_types::text::one_line;

/// The largest plugin accepted from a registry or a URL. Components built from JavaScript or
/// Python carry their interpreter and are tens of MiB; this leaves room for those and refuses
/// a layer sized to fill the disk.
pub const MAX_PLUGIN_BYTES: u64 = 256 << 20;

/// The largest manifest read from a registry (the OCI distribution spec's recommended limit
/// for what registries accept).
pub const MAX_MANIFEST_BYTES: usize = 4 << 20;

/// Where a remote install came from, kept in the installed record so that a later check
/// (a lock, a signature, an upgrade's diff) can name exactly what was installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Origin {
    /// An OCI artifact, pulled by manifest digest.
    Oci {
        /// The reference as given (`oci://REGISTRY/REPOSITORY:TAG` or `@sha256:…`).
        reference: String,
        registry: String,
        repository: String,
        /// The tag it was resolved from, if it was given by tag.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tag: Option<String>,
        /// `sha256:…` of the manifest the tag resolved to (the manifest's bytes were checked).
        manifest_digest: String,
        /// `sha256:…` of the config blob the manifest names (not downloaded by install).
        config_digest: String,
        config_media_type: String,
        /// `sha256:…` of the one wasm layer: the installed bytes.
        layer_digest: String,
        layer_media_type: String,
        /// Which trusted key signed the manifest digest, or that unsigned was allowed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<Box<super::signature::SignatureRecord>>,
    },
    /// A URL, checked against the SHA-256 the user gave.
    Https { url: String, sha256: String },
}

/// What a download or an install is doing, for a progress line (the library prints nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Bytes received so far, of `total` when the source said how many.
    Downloading { done: u64, total: Option<u64> },
    /// Checking the component of `bytes` bytes: compiling it (or finding it compiled) and
    /// listing its tools.
    Compiling { bytes: u64 },
}

/// Why a remote install or a publish failed; each message names what was asked for, what
/// the other side answered, and what to do, in the library's terms (the command line adds
/// the option that does it).
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error(
        "`{given}` is not a reference paddock installs from: {why}; write \
         oci://REGISTRY/REPOSITORY:TAG, oci://REGISTRY/REPOSITORY@sha256:DIGEST, or \
         https://HOST/PATH.wasm with its SHA-256"
    )]
    BadReference { given: String, why: String },
    #[error(
        "{url}: plain http is allowed only to a loopback host (127.0.0.1, ::1, localhost); \
         use https://"
    )]
    InsecureHttp { url: String },
    #[error(
        "`{0}` is not a SHA-256: give 64 hex digits (`sha256sum FILE` prints them), e.g. \
         9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    )]
    BadSha256(String),
    #[error(
        "an https:// install needs the SHA-256 of the file you mean to install (from its \
         publisher): without it nothing says the bytes are the ones you trust"
    )]
    Sha256Required,
    #[error("{reference}: {action}: {answer}; {fix}")]
    Registry {
        reference: String,
        action: &'static str,
        answer: String,
        fix: String,
    },
    /// The registry wanted credentials paddock did not have, or refused them.
    #[error(
        "{reference}: {action}: {answer}; the registry wants credentials paddock did not have \
         or it refused: log in with `docker login {registry}` (paddock reads \
         ~/.docker/config.json and its credential helpers), or give a registry token"
    )]
    Unauthorized {
        reference: String,
        action: &'static str,
        answer: String,
        registry: String,
    },
    #[error(
        "{what} is {size} bytes, over the {max} bytes paddock accepts for a plugin \
         ({max_mib} MiB); nothing was downloaded past the limit"
    )]
    TooLarge {
        what: String,
        size: u64,
        max: u64,
        max_mib: u64,
    },
    #[error(
        "{what} has digest sha256:{actual}, but {source_of_truth} sha256:{expected}: the bytes \
         received are not the ones asked for (tampered in the registry or on the way). They \
         were deleted before anything parsed or compiled them"
    )]
    DigestMismatch {
        what: String,
        source_of_truth: &'static str,
        expected: String,
        actual: String,
    },
    #[error("{reference} is not a wasm component artifact: {why}")]
    NotWasm { reference: String, why: String },
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error(
        "{reference} (manifest {digest}) is not signed: the registry has no signature at tag \
         {tag} ({answer}). paddock installs from a registry only what a key you trust signed: \
         ask the publisher to sign this digest (`paddock plugin sign`, `cosign sign --key`) and \
         trust their public key with `paddock plugin trust-key NAME KEY.pub`"
    )]
    Unsigned {
        reference: String,
        digest: String,
        tag: String,
        answer: String,
    },
    #[error("{0}")]
    SignatureRefused(Box<SignatureRefusal>),
    /// The variable named to hold the registry token holds none.
    #[error(
        "registry credentials: the environment variable {var} is unset or empty; export it \
         with the registry token (e.g. `export {var}=$(cat token.txt)`)"
    )]
    TokenUnset { var: String },
    #[error(
        "registry credentials: the docker configuration holds an identity token for \
         {registry}, which paddock cannot use; log in with a username and password (`docker \
         login {registry}`), or give a registry token"
    )]
    IdentityToken { registry: String },
    #[error(
        "registry credentials: reading the credentials for {registry} from the docker \
         configuration failed: {why}; fix ~/.docker/config.json (or its credential helper), or \
         give a registry token"
    )]
    DockerCredentials { registry: String, why: String },
    #[error("{0}")]
    Setting(String),
    #[error("{0}")]
    SignRefused(String),
    #[error(
        "{reference}: {what} did not finish within {secs} s: {received} bytes received{of}. \
         The server is too slow, or holds the connection open without sending; if it is only \
         slow, allow longer with PADDOCK_DOWNLOAD_TIMEOUT_SECS=SECONDS (now {secs})"
    )]
    DeadlinePassed {
        reference: String,
        what: String,
        secs: u64,
        received: u64,
        /// ` of N` when the size is known.
        of: String,
    },
}

impl RemoteError {
    /// `what` of `reference` past the download deadline `limit`, `received` bytes in.
    pub fn deadline(
        reference: &str,
        what: &str,
        limit: std::time::Duration,
        received: u64,
        total: Option<u64>,
    ) -> RemoteError {
        RemoteError::DeadlinePassed {
            reference: one_line(reference, 200),
            what: what.to_string(),
            secs: limit.as_secs(),
            received,
            of: total.map(|t| format!(" of {t}")).unwrap_or_default(),
        }
    }
}

/// A signature manifest with no signature that counts: what was expected, what was found,
/// and what to do about it.
#[derive(Debug, thiserror::Error)]
#[error(
    "{reference} (manifest {digest}): no signature at tag {tag} is a valid signature of this \
     digest by a key you trust. Expected: a cosign signature of {digest} by one of: {trusted}. \
     Found: {found}. {fix}"
)]
pub struct SignatureRefusal {
    pub reference: String,
    pub digest: String,
    pub tag: String,
    pub trusted: String,
    pub found: String,
    pub fix: SignatureFix,
}

/// What to do about refused signatures, by what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureFix {
    /// Signatures by keys the user does not trust, or not signatures at all.
    NotTrusted,
    /// Signatures, but the user trusts no key yet.
    NoKeyTrusted,
    /// A trusted key's signature of another artifact, served under this one's tag.
    OtherArtifact,
    /// A signature by the trusted key `key`, which vouches only for other references.
    OutOfScope { key: String },
}

impl std::fmt::Display for SignatureFix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SignatureFix::NotTrusted => {
                "If the publisher's key is the one you expect, trust it with `paddock plugin \
                 trust-key NAME KEY.pub`; otherwise do not install this"
            }
            SignatureFix::NoKeyTrusted => {
                "Trust the publisher's public key with `paddock plugin trust-key NAME KEY.pub` \
                 (get it from the publisher, not from the registry)"
            }
            SignatureFix::OtherArtifact => {
                "The registry serves a signature made for another artifact under this one's \
                 tag: do not install this; ask the publisher to sign this exact digest"
            }
            SignatureFix::OutOfScope { .. } => {
                "A key you trust signed it, but you trusted that key only for other references: \
                 install it only if that publisher may publish this repository"
            }
        })
    }
}

/// `HEX` (64 hex digits, any case) as lower-case hex.
pub fn parse_sha256(given: &str) -> Result<String, RemoteError> {
    let hex = given.strip_prefix("sha256:").unwrap_or(given);
    if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(hex.to_ascii_lowercase())
    } else {
        Err(RemoteError::BadSha256(given.to_string()))
    }
}

/// The hex of an OCI digest `sha256:HEX`; other algorithms are refused with `what` named.
pub fn digest_hex(digest: &str, what: &str, reference: &str) -> Result<String, RemoteError> {
    match digest.strip_prefix("sha256:") {
        Some(hex)
            if hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) =>
        {
            Ok(hex.to_string())
        }
        _ => Err(RemoteError::NotWasm {
            reference: reference.to_string(),
            why: format!(
                "its {what} digest `{}` is not sha256:<64 lower-case hex digits> (the only \
                 algorithm paddock verifies)",
                one_line(digest, 100)
            ),
        }),
    }
}

/// An error with its causes, `a: b: c` (reqwest's own text leaves the cause out).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    one_line(&text, 600)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sha256_digests_in_lower_hex_are_accepted() {
        let good = format!("sha256:{}", "a".repeat(64));
        assert_eq!(digest_hex(&good, "layer", "r").unwrap(), "a".repeat(64));
        for bad in [
            format!("sha512:{}", "a".repeat(128)),
            format!("sha256:{}", "A".repeat(64)),
            format!("sha256:{}", "a".repeat(63)),
            "sha256:../../etc/passwd".to_string(),
        ] {
            assert!(digest_hex(&bad, "layer", "r").is_err(), "{bad}");
        }
        assert!(parse_sha256(&"F".repeat(64)).is_ok());
        assert!(parse_sha256("abc").is_err());
    }
}
