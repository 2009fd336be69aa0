//! Plugins in OCI registries, in the layout wasm-pkg-tools (`wkg`) uses (the CNCF TAG Runtime
//! wasm OCI artifact): one manifest whose config (`application/vnd.wasm.config.v0+json`)
//! lists the component's imports and exports, and exactly one layer, the component
//! (`application/wasm`); and the cosign signatures kept beside it.
//!
//! Install resolves a tag to a manifest digest, pulls the manifest by that digest and checks
//! its bytes against it, checks its shape (one wasm layer, a size under the cap), then streams
//! the layer into the data directory while hashing it (`remote::Download`), within the
//! download deadline. The registry is not trusted for any of it; every request goes through
//! `distribution::Registry`, which holds the rules on credentials, redirects, body caps and
//! plain http (spoken only to a loopback registry).
//!
//! Map: `reference.rs` what `oci://…` names, `manifest.rs` the manifest's shape, `pull.rs`
//! resolve and pull, `push.rs` publish, `cosign.rs` signature manifests fetched and checked,
//! or pushed; `distribution.rs` every HTTP request, `auth.rs` whose credentials. This file:
//! one bounded exchange, and a small blob read whole.

pub mod auth;
mod cosign;
mod distribution;
mod manifest;
mod pull;
mod push;
mod reference;

use std::time::Duration;

pub use auth::AuthChoice;
pub use cosign::{Signed, sign};
pub use pull::{Resolved, pull, resolve};
pub use push::{Artifact, ComponentInfo, Published, push};
pub use reference::OciRef;

use crate::plugin_store::remote::{RemoteError, digest_hex, error_chain};
use distribution::Registry;
use manifest::Descriptor;

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
