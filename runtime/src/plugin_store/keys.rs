//! The keys signatures are checked and made with. Public keys the user trusts (`paddock plugin
//! trust-key`): ECDSA P-256 in PEM, kept private under the data directory's `trusted-keys/` as
//! `NAME.pem`, each with the reference patterns it vouches for in `NAME.for` (one a line; none:
//! any reference). And the unencrypted PKCS#8 private key `plugin sign` reads. What a signature
//! is and when it counts is `signature.rs`.

use std::path::{Path, PathBuf};

use p256::ecdsa::{SigningKey, VerifyingKey};
use p256::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePublicKey};

use paddock_types::text::one_line;

use super::StoreError;
use super::data_dir::{io, names_in, write_atomically};

/// The largest public key file read.
pub const MAX_KEY_FILE_BYTES: u64 = 16 << 10;

/// A public key the user trusts, by the name it was given.
#[derive(Debug, Clone)]
pub struct TrustedKey {
    pub name: String,
    /// `sha256:HEX` of the key's DER SubjectPublicKeyInfo.
    pub fingerprint: String,
    pub key: VerifyingKey,
    /// The reference patterns it vouches for; empty: any reference.
    pub scopes: Vec<String>,
}

impl TrustedKey {
    /// Whether this key vouches for `reference` (`REGISTRY/REPOSITORY`).
    pub fn covers(&self, reference: &str) -> bool {
        self.scopes.is_empty() || self.scopes.iter().any(|p| pattern_matches(p, reference))
    }

    /// Its scope in words: the patterns, or that it has none.
    pub fn scope_words(&self) -> String {
        if self.scopes.is_empty() {
            "any reference".to_string()
        } else {
            self.scopes
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
}

impl PartialEq for TrustedKey {
    fn eq(&self, other: &TrustedKey) -> bool {
        self.fingerprint == other.fingerprint && self.name == other.name
    }
}

impl Eq for TrustedKey {}

/// A reference pattern checked and normalised (an `oci://` prefix dropped), or why it is not
/// one: `REGISTRY/REPOSITORY` with `*` (within one path segment) or `**` (across segments),
/// no tag or digest.
pub fn parse_scope(given: &str) -> Result<String, String> {
    let pattern = given.trim().strip_prefix("oci://").unwrap_or(given.trim());
    let why = if pattern.is_empty() {
        Some("it is empty")
    } else if !pattern.contains('/') {
        Some("it names no repository (write REGISTRY/REPOSITORY, e.g. ghcr.io/acme/*)")
    } else if pattern.contains('@') {
        Some("it names a digest; a scope names repositories (REGISTRY/REPOSITORY)")
    } else if pattern
        .rsplit('/')
        .next()
        .is_some_and(|last| last.contains(':'))
    {
        Some("it names a tag; a scope names repositories (REGISTRY/REPOSITORY)")
    } else if !pattern.bytes().all(|b| {
        b.is_ascii_lowercase()
            || b.is_ascii_digit()
            || matches!(b, b'.' | b'-' | b'_' | b'/' | b':' | b'*' | b'[' | b']')
    }) {
        Some(
            "it holds characters no reference has (lower-case letters, digits, . - _ / : and * only)",
        )
    } else if pattern
        .split('/')
        .next()
        .is_some_and(|host| host.contains('*'))
    {
        Some("its registry is a wildcard; name the registry (`*` may stand for repository parts)")
    } else {
        None
    };
    match why {
        Some(why) => Err(format!(
            "`{}` is not a reference pattern: {why}",
            one_line(given, 120)
        )),
        None => Ok(pattern.to_string()),
    }
}

/// Whether `reference` (`REGISTRY/REPOSITORY`) matches `pattern`: `**` matches anything, `*`
/// anything but `/`, every other character itself.
pub fn pattern_matches(pattern: &str, reference: &str) -> bool {
    fn go(p: &[u8], r: &[u8]) -> bool {
        match p {
            [] => r.is_empty(),
            [b'*', b'*', rest @ ..] => (0..=r.len()).any(|i| go(rest, &r[i..])),
            [b'*', rest @ ..] => (0..=r.len())
                .take_while(|i| *i == 0 || r[i - 1] != b'/')
                .any(|i| go(rest, &r[i..])),
            [c, rest @ ..] => r.first() == Some(c) && go(rest, &r[1..]),
        }
    }
    go(pattern.as_bytes(), reference.as_bytes())
}

/// A P-256 public key from PEM (`-----BEGIN PUBLIC KEY-----`, as `cosign generate-key-pair`
/// and `skopeo generate-sigstore-key` write the public half), or what is wrong with it.
pub fn parse_public_key(pem: &[u8]) -> Result<VerifyingKey, String> {
    let text = std::str::from_utf8(pem)
        .map_err(|_| "it is not text (a PEM file is ASCII)".to_string())?
        .trim();
    if !text.starts_with("-----BEGIN PUBLIC KEY-----") {
        let first = text.lines().next().unwrap_or_default();
        return Err(format!(
            "it does not start with `-----BEGIN PUBLIC KEY-----` (it starts with `{}`)",
            one_line(first, 60)
        ));
    }
    VerifyingKey::from_public_key_pem(text)
        .map_err(|e| format!("it is not an ECDSA P-256 public key (SubjectPublicKeyInfo): {e}"))
}

/// `sha256:HEX` of the key's DER SubjectPublicKeyInfo (`openssl pkey -pubin -outform DER |
/// sha256sum` prints the same hex).
pub fn fingerprint(key: &VerifyingKey) -> String {
    let der = key
        .to_public_key_der()
        .map(|d| d.as_bytes().to_vec())
        .unwrap_or_default();
    format!("sha256:{}", paddock_types::stamp::sha256_hex(&der))
}

/// A P-256 private key from an unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
pub fn parse_private_key(pem: &[u8]) -> Result<SigningKey, String> {
    let text = std::str::from_utf8(pem)
        .map_err(|_| "it is not text (a PEM file is ASCII)".to_string())?
        .trim();
    if text.starts_with("-----BEGIN ENCRYPTED") {
        return Err(
            "it is encrypted; paddock signs with an unencrypted PKCS#8 key (`openssl genpkey \
             -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem`), or sign with cosign \
             or skopeo"
                .into(),
        );
    }
    SigningKey::from_pkcs8_pem(text).map_err(|e| {
        format!(
            "it is not an unencrypted PKCS#8 ECDSA P-256 private key (`-----BEGIN PRIVATE \
             KEY-----`): {e}"
        )
    })
}

/// The trusted keys of one data directory: `trusted-keys/NAME.pem`, and `NAME.for` when the
/// key vouches only for some references.
pub struct TrustedKeys {
    dir: PathBuf,
}

impl TrustedKeys {
    /// The trusted keys kept under the data directory `root`.
    pub fn of(root: &Path) -> TrustedKeys {
        TrustedKeys {
            dir: root.join("trusted-keys"),
        }
    }

    fn key_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.pem"))
    }

    fn scope_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.for"))
    }

    /// Trusts the public key in `file` under `name`: it must be an ECDSA P-256 public key in
    /// PEM; it is kept, private, under `trusted-keys/`. With `scopes` (reference patterns)
    /// it vouches only for references matching one; without, for any.
    pub fn trust(
        &self,
        name: &str,
        file: &Path,
        scopes: &[String],
    ) -> Result<TrustedKey, StoreError> {
        if !paddock_types::contract::valid_tool_name(name) {
            return Err(StoreError::BadKeyName(name.to_string()));
        }
        let scopes = scopes
            .iter()
            .map(|s| parse_scope(s))
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
                MAX_KEY_FILE_BYTES + 1,
            ),
            &mut pem,
        )
        .map_err(io("cannot read", file))?;
        if pem.len() as u64 > MAX_KEY_FILE_BYTES {
            return Err(bad(format!(
                "it is over {MAX_KEY_FILE_BYTES} bytes; a public key file is a few hundred"
            )));
        }
        let key = parse_public_key(&pem).map_err(bad)?;
        let fingerprint = fingerprint(&key);
        if let Ok(existing) = self.get(name) {
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

    /// The key trusted under `name`, with its scope.
    pub fn get(&self, name: &str) -> Result<TrustedKey, StoreError> {
        let path = self.key_path(name);
        let pem = match std::fs::read(&path) {
            Ok(pem) => pem,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::NoSuchKey(name.to_string()));
            }
            Err(e) => return Err(io("cannot read", &path)(e)),
        };
        let damaged = |file: &Path, why: String| StoreError::DamagedKey {
            name: name.to_string(),
            file: file.display().to_string(),
            why,
        };
        let key = parse_public_key(&pem).map_err(|why| damaged(&path, why))?;
        let scope_file = self.scope_path(name);
        let scopes = match std::fs::read_to_string(&scope_file) {
            Ok(text) => text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| parse_scope(l).map_err(|why| damaged(&scope_file, why)))
                .collect::<Result<Vec<_>, _>>()?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io("cannot read", &scope_file)(e)),
        };
        Ok(TrustedKey {
            name: name.to_string(),
            fingerprint: fingerprint(&key),
            key,
            scopes,
        })
    }

    /// The trusted keys, sorted by name.
    pub fn list(&self) -> Result<Vec<TrustedKey>, StoreError> {
        names_in(&self.dir, ".pem")?
            .iter()
            .map(|name| self.get(name))
            .collect()
    }

    /// Stops trusting the key named `name`.
    pub fn remove(&self, name: &str) -> Result<(), StoreError> {
        if !paddock_types::contract::valid_tool_name(name) {
            return Err(StoreError::BadKeyName(name.to_string()));
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(name: &str) -> VerifyingKey {
        use sha2::Digest;
        let secret = SigningKey::from_slice(&sha2::Sha256::digest(name.as_bytes())).unwrap();
        *secret.verifying_key()
    }

    #[test]
    fn keys_that_are_not_p256_public_keys_are_refused_with_what_was_expected() {
        let key = public("alice");
        let pem = key.to_public_key_pem(p256::pkcs8::LineEnding::LF).unwrap();
        let parsed = parse_public_key(pem.as_bytes()).unwrap();
        assert_eq!(fingerprint(&parsed), fingerprint(&key));
        let err = parse_public_key(b"hello").unwrap_err();
        assert!(err.contains("BEGIN PUBLIC KEY"), "{err}");
        let broken = pem.replace("A", "B");
        assert!(parse_public_key(broken.as_bytes()).is_err());
        assert!(parse_private_key(pem.as_bytes()).is_err());
    }

    #[test]
    fn a_pattern_star_stays_in_one_segment_and_two_stars_cross_them() {
        assert!(pattern_matches("ghcr.io/acme/*", "ghcr.io/acme/fs"));
        assert!(!pattern_matches("ghcr.io/acme/*", "ghcr.io/acme/team/fs"));
        assert!(pattern_matches("ghcr.io/acme/**", "ghcr.io/acme/team/fs"));
        assert!(!pattern_matches("ghcr.io/acme/*", "ghcr.io/acmeevil/fs"));
        assert!(!pattern_matches(
            "ghcr.io/acme/*",
            "ghcr.io.evil.com/acme/fs"
        ));
        assert!(pattern_matches("ghcr.io/acme/fs", "ghcr.io/acme/fs"));
        assert!(!pattern_matches("ghcr.io/acme/fs", "ghcr.io/acme/fs2"));
        assert!(pattern_matches("ghcr.io/acme/fs-*", "ghcr.io/acme/fs-grep"));
        assert_eq!(
            parse_scope("oci://ghcr.io/acme/*").unwrap(),
            "ghcr.io/acme/*"
        );
        for bad in [
            "",
            "ghcr.io",
            "*/acme/fs",
            "ghcr.io/acme/fs:1",
            "ghcr.io/a@sha256:x",
            "Ghcr.io/a",
        ] {
            assert!(parse_scope(bad).is_err(), "{bad}");
        }
    }
}
