//! What `paddock plugin new` writes that the binary carries: the WIT (`wit/`) and the Rust
//! SDK's source (`plugins/sdk`, whose own `wit/` is a copy of `wit/`, checked by a test), so
//! that a project builds with no checkout of this repository.

/// The SDK's version, as in `plugins/sdk/Cargo.toml` (checked by a test).
pub const SDK_VERSION: &str = "0.1.0";

/// `wit/`: file name and text.
pub const WIT: &[(&str, &str)] = &[
    ("types.wit", include_str!("../../../wit/types.wit")),
    (
        "capabilities.wit",
        include_str!("../../../wit/capabilities.wit"),
    ),
    ("worlds.wit", include_str!("../../../wit/worlds.wit")),
    ("hook.wit", include_str!("../../../wit/hook.wit")),
];

/// The SDK crate, without its `wit/` (written from `WIT`): path in the crate and text.
pub const SDK: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        include_str!("../../../plugins/sdk/Cargo.toml"),
    ),
    ("README.md", include_str!("../../../plugins/sdk/README.md")),
    (
        "src/lib.rs",
        include_str!("../../../plugins/sdk/src/lib.rs"),
    ),
    (
        "src/budget.rs",
        include_str!("../../../plugins/sdk/src/budget.rs"),
    ),
    (
        "src/hook.rs",
        include_str!("../../../plugins/sdk/src/hook.rs"),
    ),
    (
        "src/image.rs",
        include_str!("../../../plugins/sdk/src/image.rs"),
    ),
    (
        "src/path.rs",
        include_str!("../../../plugins/sdk/src/path.rs"),
    ),
    (
        "src/spec.rs",
        include_str!("../../../plugins/sdk/src/spec.rs"),
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

    /// The SDK crate must carry the same WIT as the host binds (S1): one contract.
    #[test]
    fn the_sdk_carries_the_hosts_wit() {
        for (name, text) in WIT {
            let copy = std::fs::read_to_string(format!("{ROOT}/plugins/sdk/wit/{name}"))
                .unwrap_or_else(|e| panic!("plugins/sdk/wit/{name}: {e}; copy wit/{name} there"));
            assert_eq!(
                &copy, text,
                "plugins/sdk/wit/{name} differs from wit/{name}; copy it"
            );
        }
        let files = std::fs::read_dir(format!("{ROOT}/wit")).unwrap().count();
        assert_eq!(
            files,
            WIT.len(),
            "a file in wit/ is missing from scaffold::embedded::WIT"
        );
    }

    #[test]
    fn every_sdk_source_file_is_embedded_and_the_version_matches() {
        let sources = std::fs::read_dir(format!("{ROOT}/plugins/sdk/src"))
            .unwrap()
            .count();
        let embedded = SDK.iter().filter(|(p, _)| p.starts_with("src/")).count();
        assert_eq!(
            sources, embedded,
            "a file in plugins/sdk/src is missing from SDK"
        );
        let manifest = SDK[0].1;
        assert!(manifest.contains(&format!("\nversion = \"{SDK_VERSION}\"\n")));
        assert!(
            !manifest.contains(".workspace"),
            "the SDK must not inherit from a workspace"
        );
    }
}
