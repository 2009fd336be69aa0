//! `paddock plugin publish|sign|trust-key` (S8): pushing a component to an OCI registry,
//! signing what is there, and the keys an install trusts; installing from a registry is
//! `plugin.rs`'s `install`, through the same store.

use std::path::{Path, PathBuf};

use super::plugin_install::message;
use super::report::{CommandResult, Failure};
use super::style::sanitize;
use super::{Env, Exit};
use paddock::plugin_store::{AuthChoice, OciRef, PublishRequest, StoreError, TrustedKey};

pub(super) fn trust_key(
    env: &Env,
    name: Option<String>,
    keyfile: Option<PathBuf>,
    list: bool,
    remove: Option<String>,
    scopes: Vec<String>,
) -> CommandResult {
    if list {
        let keys = env
            .store
            .trusted_keys()
            .map_err(|e| Failure::plugin(message(&e)))?;
        if keys.is_empty() {
            println!(
                "no trusted keys; add one with `paddock plugin trust-key NAME KEY.pub`: until \
                 then oci:// installs need --allow-unsigned"
            );
        }
        for key in keys {
            println!(
                "{:<16}  {}  for {}",
                key.name,
                key.fingerprint,
                sanitize(&scope(&key))
            );
        }
        return Ok(Exit::Ok);
    }
    if let Some(name) = remove {
        env.store
            .untrust_key(&name)
            .map_err(|e| Failure::plugin(message(&e)))?;
        println!("no longer trusted: {name}");
        return Ok(Exit::Ok);
    }
    let (Some(name), Some(file)) = (name, keyfile) else {
        return Err(Failure::plugin(
            "give NAME KEYFILE, --list, or --remove NAME".to_string(),
        ));
    };
    let key = env
        .store
        .trust_key(&name, &file, &scopes)
        .map_err(|e| Failure::plugin(format!("{}\nno key was added", message(&e))))?;
    println!(
        "trusted {} ({}) for {}",
        key.name,
        key.fingerprint,
        sanitize(&scope(&key))
    );
    Ok(Exit::Ok)
}

/// What `key` vouches for, in words; a key trusted for any reference says it was given no
/// pattern.
fn scope(key: &TrustedKey) -> String {
    if key.scopes.is_empty() {
        format!("{} (no --for)", key.scope_words())
    } else {
        key.scope_words()
    }
}

pub(super) async fn sign(
    target: &str,
    key: &Path,
    digest: Option<&str>,
    auth: &AuthChoice,
) -> CommandResult {
    let refused = |e: StoreError| Failure::plugin(format!("{}\nnothing was signed", message(&e)));
    let target = OciRef::parse(target).map_err(|e| refused(e.into()))?;
    let digest = digest
        .map(|d| {
            paddock::plugin_store::parse_sha256(d)
                .map(|hex| format!("sha256:{hex}"))
                .map_err(|e| refused(e.into()))
        })
        .transpose()?;
    let key = paddock::plugin_store::signing_key(key).map_err(refused)?;
    let given = sanitize(&target.given);
    let signing = |manifest: &str| {
        println!("signing manifest {manifest} ({given} resolves to it)");
    };
    let signed = paddock::plugin_store::sign(&target, auth, &key, digest.as_deref(), &signing)
        .await
        .map_err(refused)?;
    println!(
        "signed {} (manifest {}) with key {}",
        sanitize(&target.given),
        signed.manifest_digest,
        signed.fingerprint
    );
    println!(
        "signature at oci://{}/{}:{} (manifest {})",
        target.registry, target.repository, signed.tag, signed.signature_manifest_digest
    );
    Ok(Exit::Ok)
}

pub(super) async fn publish(
    env: &Env,
    file: &Path,
    target: &str,
    version: Option<&str>,
    sign_key: Option<&Path>,
    auth: &AuthChoice,
) -> CommandResult {
    let refused =
        |e: StoreError| Failure::plugin(format!("{}\nnothing was published", message(&e)));
    let target = OciRef::parse(target).map_err(|e| refused(e.into()))?;
    let key = sign_key
        .map(paddock::plugin_store::signing_key)
        .transpose()
        .map_err(refused)?;
    let request = PublishRequest {
        file,
        target: &target,
        auth,
        version,
    };
    let published = paddock::plugin_store::publish(&env.sandbox, &request, &|_| {})
        .await
        .map_err(refused)?;
    println!(
        "published {} to {}",
        sanitize(&file.display().to_string()),
        sanitize(&target.given)
    );
    println!("layer {}", published.layer_digest);
    println!("config {}", published.config_digest);
    println!("manifest {}", published.manifest_digest);
    let by_digest = format!(
        "oci://{}/{}@{}",
        target.registry, target.repository, published.manifest_digest
    );
    if let Some(key) = key {
        let unsigned = |e: StoreError| {
            Failure::plugin(format!(
                "{}\nthe plugin was published but not signed: sign it with `paddock plugin \
                 sign {by_digest} --key KEY`",
                message(&e)
            ))
        };
        let pinned = OciRef::parse(&by_digest).map_err(|e| unsigned(e.into()))?;
        let expected = published.manifest_digest.as_str();
        let signed = paddock::plugin_store::sign(&pinned, auth, &key, Some(expected), &|_| {})
            .await
            .map_err(unsigned)?;
        println!(
            "signed with key {} at tag {}",
            signed.fingerprint, signed.tag
        );
    }
    println!("install it by digest: paddock plugin install {by_digest}");
    Ok(Exit::Ok)
}
