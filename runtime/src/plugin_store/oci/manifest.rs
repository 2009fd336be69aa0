//! The shape a manifest must have to be a wasm component: the OCI (or docker v2) manifest of
//! one artifact, not an index nor a container image, with a config and exactly one layer of
//! type `application/wasm`, under the size cap. What the registry says is read no further than
//! this; the layer's bytes are checked against its digest as they arrive (`pull.rs`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use paddock_types::text::one_line;

use super::reference::OciRef;
use crate::plugin_store::remote::{MAX_PLUGIN_BYTES, RemoteError, digest_hex};

pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
pub(super) const DOCKER_MANIFEST_MEDIA_TYPE: &str =
    "application/vnd.docker.distribution.manifest.v2+json";
pub(super) const INDEX_MEDIA_TYPES: [&str; 2] = [
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
];
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
pub const LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The layer type of the older wasm-to-oci layout, still found in registries.
const OLD_LAYER_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+wasm";
/// Configs of container images: such an artifact is not a component.
const IMAGE_CONFIG_MEDIA_TYPES: [&str; 2] = [
    "application/vnd.oci.image.config.v1+json",
    "application/vnd.docker.container.image.v1+json",
];

/// A manifest as far as install reads it; everything else in it is ignored.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Manifest {
    schema_version: Option<i64>,
    media_type: Option<String>,
    config: Option<Descriptor>,
    pub(super) layers: Option<Vec<Descriptor>>,
    manifests: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Descriptor {
    pub(super) media_type: String,
    pub(super) digest: String,
    pub(super) size: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) annotations: Option<BTreeMap<String, String>>,
}

/// The manifest's one wasm layer and its config, or why this is not a component artifact.
pub(super) fn wasm_layer(
    r: &OciRef,
    bytes: &[u8],
) -> Result<(Descriptor, Descriptor), RemoteError> {
    let not = |why: String| RemoteError::NotWasm {
        reference: r.given.clone(),
        why,
    };
    let manifest: Manifest = serde_json::from_slice(bytes)
        .map_err(|e| not(format!("its manifest is not valid JSON ({e})")))?;
    let media_type = manifest
        .media_type
        .as_deref()
        .unwrap_or(MANIFEST_MEDIA_TYPE);
    if manifest.manifests.is_some() || INDEX_MEDIA_TYPES.contains(&media_type) {
        return Err(not(
            "it is an image index (a list of manifests), not one artifact; a wasm component \
             is published as a single manifest: name that manifest's digest"
                .into(),
        ));
    }
    if media_type != MANIFEST_MEDIA_TYPE && media_type != DOCKER_MANIFEST_MEDIA_TYPE {
        return Err(not(format!(
            "its manifest is of type `{}`, not {MANIFEST_MEDIA_TYPE}",
            one_line(media_type, 100)
        )));
    }
    if manifest.schema_version != Some(2) {
        return Err(not("its manifest's schemaVersion is not 2".into()));
    }
    let config = manifest
        .config
        .ok_or_else(|| not("its manifest has no config".into()))?;
    if IMAGE_CONFIG_MEDIA_TYPES.contains(&config.media_type.as_str()) {
        return Err(not(format!(
            "it is a container image (config `{}`), not a wasm component",
            config.media_type
        )));
    }
    digest_hex(&config.digest, "config", &r.given)?;
    let layers = manifest.layers.unwrap_or_default();
    let [layer] = layers.as_slice() else {
        return Err(not(format!(
            "its manifest has {} layers; a wasm component artifact has exactly one, of type \
             {LAYER_MEDIA_TYPE}",
            layers.len()
        )));
    };
    if layer.media_type != LAYER_MEDIA_TYPE && layer.media_type != OLD_LAYER_MEDIA_TYPE {
        return Err(not(format!(
            "its layer is of type `{}`, not {LAYER_MEDIA_TYPE}",
            one_line(&layer.media_type, 100)
        )));
    }
    digest_hex(&layer.digest, "layer", &r.given)?;
    let size = u64::try_from(layer.size)
        .map_err(|_| not(format!("its layer's size {} is negative", layer.size)))?;
    if size > MAX_PLUGIN_BYTES {
        return Err(RemoteError::TooLarge {
            what: format!("the layer of {} (as its manifest declares)", r.given),
            size,
            max: MAX_PLUGIN_BYTES,
            max_mib: MAX_PLUGIN_BYTES >> 20,
        });
    }
    Ok((layer.clone(), config))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(layers: &str, media_type: &str) -> Vec<u8> {
        format!(
            r#"{{"schemaVersion":2,"mediaType":"{media_type}","config":{{"mediaType":"{CONFIG_MEDIA_TYPE}","digest":"sha256:{c}","size":2}},"layers":[{layers}]}}"#,
            c = "c".repeat(64)
        )
        .into_bytes()
    }

    fn layer(media_type: &str, size: u64) -> String {
        format!(
            r#"{{"mediaType":"{media_type}","digest":"sha256:{}","size":{size}}}"#,
            "b".repeat(64)
        )
    }

    #[test]
    fn only_a_manifest_with_one_wasm_layer_under_the_cap_is_a_component() {
        let r = OciRef::parse("oci://localhost:5000/x:1").unwrap();
        let one = layer(LAYER_MEDIA_TYPE, 10);
        assert!(wasm_layer(&r, &manifest(&one, MANIFEST_MEDIA_TYPE)).is_ok());
        let two = format!("{one},{one}");
        let err = wasm_layer(&r, &manifest(&two, MANIFEST_MEDIA_TYPE)).unwrap_err();
        assert!(err.to_string().contains("has 2 layers"), "{err}");
        let tar = layer("application/vnd.oci.image.layer.v1.tar+gzip", 10);
        let err = wasm_layer(&r, &manifest(&tar, MANIFEST_MEDIA_TYPE)).unwrap_err();
        assert!(err.to_string().contains("tar+gzip"), "{err}");
        let huge = layer(LAYER_MEDIA_TYPE, MAX_PLUGIN_BYTES + 1);
        let err = wasm_layer(&r, &manifest(&huge, MANIFEST_MEDIA_TYPE)).unwrap_err();
        assert!(
            err.to_string()
                .contains(&(MAX_PLUGIN_BYTES + 1).to_string()),
            "{err}"
        );
        let err = wasm_layer(&r, &manifest(&one, INDEX_MEDIA_TYPES[0])).unwrap_err();
        assert!(err.to_string().contains("image index"), "{err}");
        let negative = layer(LAYER_MEDIA_TYPE, 0).replace("\"size\":0", "\"size\":-1");
        assert!(wasm_layer(&r, &manifest(&negative, MANIFEST_MEDIA_TYPE)).is_err());
    }
}
