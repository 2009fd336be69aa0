//! Built plugins for the end-to-end tests: where they are, one sandbox per test binary, and
//! grants made to measure.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use paddock_sandbox::{Grant, Limits, Mount, MountMode, Plugin, Sandbox};

/// The directory `cargo xtask build-plugins` writes components to.
pub fn plugin_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/target/wasm32-wasip2/release")
}

/// The bytes of built plugin `file` (e.g. `hostile_attacks.wasm`).
pub fn plugin_bytes(file: &str) -> Vec<u8> {
    let path = plugin_dir().join(file);
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; build the plugins first with `cargo xtask build-plugins`",
            path.display()
        )
    })
}

/// One sandbox per test binary, its compiled-code cache in a private temporary directory.
pub fn sandbox() -> &'static Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir").keep();
        Sandbox::new(dir.join("cache")).expect("sandbox")
    })
}

/// Loads a built plugin with no capabilities.
pub async fn load(file: &str, name: &str) -> Plugin {
    sandbox()
        .load(name, &plugin_bytes(file), &[])
        .await
        .unwrap_or_else(|e| panic!("loading {file}: {e}"))
}

/// A grant of one mount at /workspace with test-sized limits.
pub fn grant(host: &Path, mode: MountMode) -> Grant {
    Grant {
        mounts: vec![Mount {
            host: host.to_path_buf(),
            guest: "/workspace".into(),
            mode,
            handle: None,
        }],
        capabilities: Vec::new(),
        limits: Limits {
            fuel: Some(1_000_000_000),
            timeout: Duration::from_secs(10),
            memory_bytes: 64 << 20,
            output_bytes: None,
            stdio_bytes: 4096,
        },
        ..Grant::default()
    }
}

/// Loads the preset `name_or_path` (a file, or a shipped preset's name) and resolves it as a
/// session in `work` with data dir `home` would; panics with the preset error otherwise.
pub fn resolve_preset(
    name_or_path: &str,
    work: &Path,
    home: &Path,
) -> paddock::preset::ResolvedPreset {
    let cx = paddock::preset::ResolveContext {
        cwd: work,
        data_dir: home,
        spill: None,
        mount_override: None,
    };
    paddock::preset::load_in(name_or_path, work)
        .and_then(|file| file.resolve(name_or_path, &cx))
        .unwrap_or_else(|e| panic!("preset {name_or_path}: {e}"))
}
