//! The store's side of a registry that is written to: `publish` (a component checked as
//! install checks it, then pushed in the wasm OCI layout) and `sign` (a manifest digest
//! signed with the user's private key, the signature pushed where cosign keeps it).

use std::path::Path;

use super::StoreError;
use super::component::check_component;
use super::data_dir::io;
use super::keys;
use super::oci::{self, AuthChoice, OciRef, Published, Signed};
use super::remote::Progress;
use super::source::InstallSource;
use paddock_sandbox::Sandbox;

/// What `publish` sends: a component checked as install checks it, to an OCI tag.
pub struct PublishRequest<'a> {
    pub file: &'a Path,
    pub target: &'a OciRef,
    pub auth: &'a AuthChoice,
    /// `org.opencontainers.image.version`, if given.
    pub version: Option<&'a str>,
}

/// Checks the component in `request.file` as `install` would, then pushes it in the wasm OCI
/// layout (its imports and exports in the config); the digests pushed.
pub async fn publish(
    sandbox: &Sandbox,
    request: &PublishRequest<'_>,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Published, StoreError> {
    let title = InstallSource::File(request.file.to_path_buf()).default_name();
    let wasm = std::fs::read(request.file).map_err(io("cannot read", request.file))?;
    progress(Progress::Compiling {
        bytes: wasm.len() as u64,
    });
    let label = if paddock_types::contract::valid_tool_name(&title) {
        title.clone()
    } else {
        request.target.default_name()
    };
    let checked = check_component(sandbox, &label, &wasm).await?;
    let exports = sandbox.exports_of(&label, &wasm)?;
    let component = oci::ComponentInfo {
        exports,
        imports: checked.imports,
        target: None,
    };
    let created = paddock_types::stamp::rfc3339_ms(paddock_types::stamp::now_ms());
    let artifact = oci::Artifact {
        wasm,
        component: &component,
        created: &created,
        title: &title,
        version: request.version,
    };
    Ok(oci::push(request.target, request.auth, artifact).await?)
}

/// The unencrypted PKCS#8 P-256 private key in `key_file`, for `sign`.
pub fn signing_key(key_file: &Path) -> Result<p256::ecdsa::SigningKey, StoreError> {
    let pem = std::fs::read(key_file).map_err(io("cannot read", key_file))?;
    keys::parse_private_key(&pem).map_err(|why| StoreError::BadPrivateKey {
        file: key_file.display().to_string(),
        why,
    })
}

/// Signs the manifest `target` names with `key`, pushing the signature in cosign's layout.
/// With `expected` (`sha256:…`), a tag must still resolve to that digest, else nothing is
/// signed; `signing` is told the digest before it is signed.
pub async fn sign(
    target: &OciRef,
    auth: &AuthChoice,
    key: &p256::ecdsa::SigningKey,
    expected: Option<&str>,
    signing: &(dyn Fn(&str) + Sync),
) -> Result<Signed, StoreError> {
    Ok(oci::sign(target, auth, key, expected, signing).await?)
}
