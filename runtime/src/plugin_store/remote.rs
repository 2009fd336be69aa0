//! Plugins from elsewhere than a local file: what a remote source names, what an install from
//! one records, and the one place downloaded bytes land. The registry or server is not
//! trusted: the bytes are hashed while they are written to a private temporary file in the
//! data directory, and nothing reads that file as a plugin unless its digest is the one
//! asked for (the manifest's, or `--sha256`). A refused download leaves nothing behind.

use std::io::Write;
use std::net::IpAddr;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use paddock_sandbox::create_private_dir;
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
    /// A URL, checked against the `--sha256` the user gave.
    Https { url: String, sha256: String },
}

/// What a download or an install is doing, for a progress line (the library prints nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Bytes received so far, of `total` when the source said how many.
    Downloading { done: u64, total: Option<u64> },
    /// Checking the component: compiling it (or finding it compiled) and listing its tools.
    Compiling,
}

/// Why a remote install or a publish failed; each message names what was asked for, what
/// the other side answered, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error(
        "`{given}` is not a reference paddock installs from: {why}; write \
         oci://REGISTRY/REPOSITORY:TAG, oci://REGISTRY/REPOSITORY@sha256:DIGEST, or \
         https://HOST/PATH.wasm with --sha256 HEX"
    )]
    BadReference { given: String, why: String },
    #[error(
        "{url}: plain http is allowed only to a loopback host (127.0.0.1, ::1, localhost); \
         use https://"
    )]
    InsecureHttp { url: String },
    #[error(
        "`{0}` is not a SHA-256: give 64 hex digits (`sha256sum FILE` prints them), e.g. \
         --sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    )]
    BadSha256(String),
    #[error(
        "an https:// install needs --sha256 HEX, the SHA-256 of the file you mean to install \
         (from its publisher): without it nothing says the bytes are the ones you trust"
    )]
    Sha256Required,
    #[error("{reference}: {action}: {answer}; {fix}")]
    Registry {
        reference: String,
        action: &'static str,
        answer: String,
        fix: String,
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
         trust their public key with `paddock plugin trust-key NAME KEY.pub`; or, if you accept \
         an unsigned plugin, install it with --allow-unsigned"
    )]
    Unsigned {
        reference: String,
        digest: String,
        tag: String,
        answer: String,
    },
    #[error("{0}")]
    SignatureRefused(Box<SignatureRefusal>),
    #[error("registry credentials: {0}")]
    Auth(String),
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

/// A signature manifest with no signature that counts: what was expected, what was found.
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
    pub fix: String,
}

/// True for a host name that can only mean this machine: `localhost` or a loopback address.
pub fn is_loopback_host(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
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

/// A file being downloaded into `downloads/` under the data directory: private (0600), hashed
/// as it is written, capped, and deleted when dropped unless its digest was verified.
pub struct Download {
    file: tempfile::NamedTempFile,
    hasher: Sha256,
    size: u64,
    limit: u64,
    total: Option<u64>,
    what: String,
}

/// A download whose SHA-256 is the expected one; the file goes when this is dropped.
pub struct Verified {
    file: tempfile::NamedTempFile,
    pub sha256: String,
}

impl Verified {
    /// The verified bytes, read through the descriptor they were written and hashed through
    /// (never by name again: nothing that swaps the file in `downloads/` can change what is
    /// installed), and hashed once more as they are read.
    pub fn into_bytes(mut self) -> Result<Vec<u8>, RemoteError> {
        use std::io::{Read, Seek};
        let path = self.file.path().display().to_string();
        let file = self.file.as_file_mut();
        let mut bytes = Vec::new();
        file.rewind()
            .and_then(|()| file.read_to_end(&mut bytes))
            .map_err(|source| RemoteError::Io {
                what: "cannot read",
                path,
                source,
            })?;
        let actual = paddock_types::stamp::sha256_hex(&bytes);
        if actual != self.sha256 {
            return Err(RemoteError::DigestMismatch {
                what: "the download".into(),
                source_of_truth: "the digest it was verified against",
                expected: self.sha256,
                actual,
            });
        }
        Ok(bytes)
    }
}

impl Download {
    /// A new download of `what` (for messages) into `data_dir/downloads`, refused past
    /// `limit` bytes; `total` is what the source announced, if anything.
    pub fn start(
        data_dir: &Path,
        what: &str,
        limit: u64,
        total: Option<u64>,
    ) -> Result<Download, RemoteError> {
        if let Some(total) = total {
            check_size(what, total, limit)?;
        }
        let dir = data_dir.join("downloads");
        create_private_dir(&dir).map_err(|source| RemoteError::Io {
            what: "cannot create",
            path: dir.display().to_string(),
            source,
        })?;
        remove_abandoned(&dir);
        let file = tempfile::Builder::new()
            .prefix("download-")
            .suffix(".part")
            .tempfile_in(&dir)
            .map_err(|source| RemoteError::Io {
                what: "cannot create a file in",
                path: dir.display().to_string(),
                source,
            })?;
        Ok(Download {
            file,
            hasher: Sha256::new(),
            size: 0,
            limit,
            total,
            what: what.to_string(),
        })
    }

    /// Appends `chunk`; refuses (and the file goes) once the limit would be passed.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), RemoteError> {
        let size = self.size + chunk.len() as u64;
        if size > self.limit {
            return Err(check_size(&self.what, size, self.limit).unwrap_err());
        }
        self.hasher.update(chunk);
        self.file
            .write_all(chunk)
            .map_err(|source| RemoteError::Io {
                what: "cannot write",
                path: self.file.path().display().to_string(),
                source,
            })?;
        self.size = size;
        Ok(())
    }

    pub fn progress(&self) -> Progress {
        Progress::Downloading {
            done: self.size,
            total: self.total,
        }
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// The SHA-256 of what was written so far.
    pub fn sha256(&self) -> String {
        hex(&self.hasher.clone().finalize())
    }

    /// The download, if its SHA-256 is `expected` (hex); else an error naming both, and the
    /// file is deleted.
    pub fn finish(
        mut self,
        expected: &str,
        source_of_truth: &'static str,
    ) -> Result<Verified, RemoteError> {
        let actual = self.sha256();
        if actual != expected {
            return Err(RemoteError::DigestMismatch {
                what: self.what,
                source_of_truth,
                expected: expected.to_string(),
                actual,
            });
        }
        self.file.flush().map_err(|source| RemoteError::Io {
            what: "cannot write",
            path: self.file.path().display().to_string(),
            source,
        })?;
        Ok(Verified {
            file: self.file,
            sha256: actual,
        })
    }
}

/// Deletes downloads a killed install left (older than a day: one still running is younger).
fn remove_abandoned(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > std::time::Duration::from_secs(24 * 3600));
        if old && name.starts_with("download-") && name.ends_with(".part") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn check_size(what: &str, size: u64, max: u64) -> Result<(), RemoteError> {
    if size > max {
        return Err(RemoteError::TooLarge {
            what: what.to_string(),
            size,
            max,
            max_mib: max >> 20,
        });
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_only_this_machine() {
        for host in [
            "localhost",
            "LOCALHOST",
            "127.0.0.1",
            "127.0.0.2",
            "::1",
            "[::1]",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "example.com",
            "10.0.0.1",
            "localhost.example.com",
            "0.0.0.0",
            "[::]",
            "",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn a_download_past_its_limit_or_with_another_digest_is_refused_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let mut big = Download::start(dir.path(), "the layer", 10, None).unwrap();
        big.write(b"12345").unwrap();
        let err = big.write(b"678901").unwrap_err().to_string();
        assert!(err.contains("11 bytes, over the 10 bytes"), "{err}");
        drop(big);
        let announced = Download::start(dir.path(), "the layer", 10, Some(11))
            .err()
            .unwrap();
        assert!(announced.to_string().contains("11 bytes"), "{announced}");

        let mut wrong = Download::start(dir.path(), "the layer", 100, None).unwrap();
        wrong.write(b"abc").unwrap();
        let err = wrong
            .finish(&"0".repeat(64), "the manifest names")
            .err()
            .unwrap();
        let text = err.to_string();
        assert!(
            text.contains(&paddock_types::stamp::sha256_hex(b"abc")),
            "{text}"
        );
        assert!(text.contains(&"0".repeat(64)), "{text}");
        let left: Vec<_> = std::fs::read_dir(dir.path().join("downloads"))
            .unwrap()
            .collect();
        assert!(left.is_empty(), "{left:?}");

        let mut right = Download::start(dir.path(), "the layer", 100, None).unwrap();
        right.write(b"abc").unwrap();
        let ok = right
            .finish(&paddock_types::stamp::sha256_hex(b"abc"), "x")
            .unwrap();
        // Another process swaps the file in `downloads/` for other bytes after the check: what
        // is installed is still what was verified, read through the descriptor.
        let downloaded = std::fs::read_dir(dir.path().join("downloads"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .next()
            .unwrap();
        let swapped = dir.path().join("swapped");
        std::fs::write(&swapped, b"evil").unwrap();
        std::fs::rename(&swapped, &downloaded).unwrap();
        assert_eq!(ok.into_bytes().unwrap(), b"abc");
    }

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
