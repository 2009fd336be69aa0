//! What an `oci://` reference names, checked before anything is asked of a registry: the
//! registry in full (paddock assumes no docker.io), the repository, and a tag written or a
//! sha256 digest (paddock assumes no `:latest`).

use oci_client::Reference;

use paddock_types::text::one_line;

use super::auth::AuthChoice;
use super::distribution::{Access, Registry};
use super::step;
use crate::plugin_store::remote::{RemoteError, digest_hex};

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
    pub(super) fn tag_or_digest(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or_default()
    }

    /// This reference's repository on its registry, authenticated for `access`.
    pub(super) async fn connect(
        &self,
        auth: &AuthChoice,
        access: Access,
    ) -> Result<Registry, RemoteError> {
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
}
