//! Publishing a component: its bytes pushed as the one layer of the wasm OCI layout, its
//! config (what it imports and exports) and a manifest annotated with its title, version and
//! time, to a tag. `publish` in the store checks the component first, as install would.

use std::collections::BTreeMap;

use serde::Serialize;

use super::auth::AuthChoice;
use super::distribution::Access;
use super::manifest::{CONFIG_MEDIA_TYPE, Descriptor, LAYER_MEDIA_TYPE, MANIFEST_MEDIA_TYPE};
use super::reference::OciRef;
use crate::plugin_store::remote::RemoteError;

/// The component's interfaces, for the artifact's config.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentInfo {
    pub exports: Vec<String>,
    pub imports: Vec<String>,
    pub target: Option<String>,
}

/// The config blob of the wasm OCI artifact layout.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct WasmConfig<'a> {
    created: &'a str,
    author: Option<&'a str>,
    architecture: &'static str,
    os: &'static str,
    layer_digests: Vec<String>,
    component: &'a ComponentInfo,
}

/// What `publish` pushed.
#[derive(Debug, Clone)]
pub struct Published {
    pub manifest_digest: String,
    pub layer_digest: String,
    pub config_digest: String,
}

/// What to push: the component's bytes and what the manifest says about it.
pub struct Artifact<'a> {
    pub wasm: Vec<u8>,
    pub component: &'a ComponentInfo,
    /// RFC 3339.
    pub created: &'a str,
    pub title: &'a str,
    pub version: Option<&'a str>,
}

/// Pushes `artifact` to `r` (which must name a tag) in the wasm OCI layout.
pub async fn push(
    r: &OciRef,
    auth: &AuthChoice,
    artifact: Artifact<'_>,
) -> Result<Published, RemoteError> {
    if r.tag.is_none() || r.digest.is_some() {
        return Err(RemoteError::BadReference {
            given: r.given.clone(),
            why: "publish pushes to a tag: write oci://REGISTRY/REPOSITORY:TAG".into(),
        });
    }
    let registry = r.connect(auth, Access::Push).await?;
    let layer_digest = format!(
        "sha256:{}",
        paddock_types::stamp::sha256_hex(&artifact.wasm)
    );
    let config = serde_json::to_vec(&WasmConfig {
        created: artifact.created,
        author: None,
        architecture: "wasm",
        os: "wasip2",
        layer_digests: vec![layer_digest.clone()],
        component: artifact.component,
    })
    .unwrap_or_default();
    let config_digest = format!("sha256:{}", paddock_types::stamp::sha256_hex(&config));
    let mut annotations = BTreeMap::from([
        (
            "org.opencontainers.image.created".to_string(),
            artifact.created.to_string(),
        ),
        (
            "org.opencontainers.image.title".to_string(),
            artifact.title.to_string(),
        ),
    ]);
    if let Some(version) = artifact.version {
        annotations.insert(
            "org.opencontainers.image.version".to_string(),
            version.to_string(),
        );
    }
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": Descriptor {
            media_type: CONFIG_MEDIA_TYPE.into(),
            digest: config_digest.clone(),
            size: config.len() as i64,
            annotations: None,
        },
        "layers": [Descriptor {
            media_type: LAYER_MEDIA_TYPE.into(),
            digest: layer_digest.clone(),
            size: artifact.wasm.len() as i64,
            annotations: Some(BTreeMap::from([(
                "org.opencontainers.image.title".to_string(),
                format!("{}.wasm", artifact.title),
            )])),
        }],
        "annotations": annotations,
    });
    let manifest = serde_json::to_vec(&manifest).unwrap_or_default();
    let manifest_digest = format!("sha256:{}", paddock_types::stamp::sha256_hex(&manifest));
    let tag = r.tag.as_deref().unwrap_or_default();
    registry
        .push_blob(artifact.wasm, &layer_digest, "pushing the layer")
        .await?;
    registry
        .push_blob(config, &config_digest, "pushing the config")
        .await?;
    registry
        .push_manifest(tag, manifest, MANIFEST_MEDIA_TYPE, "pushing the manifest")
        .await?;
    Ok(Published {
        manifest_digest,
        layer_digest,
        config_digest,
    })
}
