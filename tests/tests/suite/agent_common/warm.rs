//! The built-ins compiled once per test process: a `Project::warm` data dir starts with a copy
//! (hard links) of that compiled-code cache, key and entries, so a session's calls load the
//! plugins from the cache instead of compiling them again in every test. What the agent tests
//! check is the loop and the binary's surface, not a first start; cold compiles, and a cache
//! that is tampered with, are the subject of other tests, which start from empty data dirs
//! (`Project::new`).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::OnceLock;

use paddock::plugin_store::{builtin, builtin_names};
use paddock::session::Env;
use tempfile::TempDir;

/// The data dir whose cache holds every built-in, compiled on first use.
fn warm() -> &'static Path {
    static WARM: OnceLock<TempDir> = OnceLock::new();
    WARM.get_or_init(|| {
        let data = tempfile::tempdir().expect("warm data dir");
        let root = data.path().to_path_buf();
        // Its own runtime on its own thread: the first caller may be inside a test's runtime.
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                let env = Env::at(root.clone(), root).expect("env");
                let plugins = builtin_names()
                    .into_iter()
                    .filter_map(|name| Some((name.to_string(), builtin(name)?.to_vec())))
                    .collect();
                env.sandbox.compile_many(plugins).await;
            });
        })
        .join()
        .expect("the built-ins compile");
        data
    })
    .path()
}

/// Gives the data dir `home` the warm cache (made private, as paddock makes it).
pub fn seed_cache(home: &Path) {
    let from = warm().join("cache");
    let to = home.join("cache");
    std::fs::create_dir_all(&to).expect("cache dir");
    std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    for entry in std::fs::read_dir(&from).expect("the warm cache").flatten() {
        let path = entry.path();
        if path.is_file() {
            std::fs::hard_link(&path, to.join(entry.file_name())).expect("link a cache entry");
        }
    }
}
