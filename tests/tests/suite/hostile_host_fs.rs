//! Host side of the hostile suite, through the library: a hostile plugin with raw
//! WASI filesystem calls against protected paths (K2), a mount swapped for a symlink
//! between calls (K3), and planted compiled code (K4). `hostile_host.rs` drives the same
//! classes through the real binary.

use std::path::{Path, PathBuf};

use paddock_sandbox::{CacheUse, Grant, Mount, MountMode, Plugin, Protect, Sandbox};
use paddock_tests::{grant, load, plugin_bytes};
use tokio_util::sync::CancellationToken;

/// A repository-shaped mount `ws/` with the files other programs execute, and a decoy
/// outside it.
struct Repo {
    root: tempfile::TempDir,
    plugin: Plugin,
}

const CONFIG: &str = "[core]\n\tbare = false\n";

impl Repo {
    async fn new() -> Repo {
        let root = tempfile::tempdir().unwrap();
        let ws = root.path().join("ws");
        for dir in [".git/hooks", ".cargo", ".paddock/presets", "sub", "evil"] {
            std::fs::create_dir_all(ws.join(dir)).unwrap();
        }
        std::fs::write(ws.join(".git/config"), CONFIG).unwrap();
        std::fs::write(ws.join(".cargo/config.toml"), "").unwrap();
        std::fs::write(
            ws.join("evil/config.toml"),
            "[build]\nrustc-wrapper = \"/tmp/x\"\n",
        )
        .unwrap();
        std::fs::write(ws.join("notes.txt"), "notes").unwrap();
        std::fs::create_dir(root.path().join("decoy")).unwrap();
        Repo {
            root,
            plugin: load("hostile_attacks.wasm", "attacks").await,
        }
    }

    fn ws(&self) -> PathBuf {
        self.root.path().join("ws").canonicalize().unwrap()
    }

    async fn attack_with(
        &self,
        grant: &Grant,
        op: &str,
        path: &str,
        to: &str,
    ) -> Result<String, String> {
        let args = serde_json::json!({"op": op, "path": path, "to": to, "content": "pwned"});
        let report = paddock_tests::sandbox()
            .call(
                &self.plugin,
                "fs_attack",
                &args.to_string(),
                grant,
                &CancellationToken::new(),
            )
            .await;
        report.result.map(|o| o.content).map_err(|e| e.message)
    }

    async fn attack(&self, op: &str, path: &str, to: &str) -> Result<String, String> {
        self.attack_with(&grant(&self.ws(), MountMode::Rw), op, path, to)
            .await
    }

    /// Nothing protected changed and nothing was created where it must not be.
    fn assert_intact(&self) {
        let ws = self.ws();
        assert_eq!(
            std::fs::read_to_string(ws.join(".git/config")).unwrap(),
            CONFIG
        );
        assert!(!ws.join(".git/hooks/x").exists());
        assert!(!ws.join(".paddock/presets/x.toml").exists());
        assert_eq!(
            std::fs::read_to_string(ws.join(".cargo/config.toml")).unwrap(),
            ""
        );
        assert!(!ws.join("sub/.git").exists());
        let decoy: Vec<_> = std::fs::read_dir(self.root.path().join("decoy"))
            .unwrap()
            .collect();
        assert!(decoy.is_empty(), "the decoy outside the mount was written");
    }
}

fn refused(result: Result<String, String>, what: &str) {
    match result {
        Ok(out) => panic!("{what}: the attack succeeded ({out})"),
        Err(message) => assert!(
            message.contains("PermissionDenied") || message.contains("NotFound"),
            "{what}: {message}"
        ),
    }
}

#[tokio::test]
async fn k2_protected_paths_refuse_every_spelling_of_a_write() {
    let repo = Repo::new().await;
    for path in [
        ".git/config",
        "./.git//config",
        "sub/../.git/config",
        "/workspace/.git/config",
        "/workspace/sub/../.git/hooks/x",
        ".git/hooks/x",
        ".cargo/config.toml",
        ".cargo/config",
        ".paddock/presets/x.toml",
        "sub/.git",
    ] {
        refused(repo.attack("write", path, "").await, path);
        refused(repo.attack("append", path, "").await, path);
    }
    refused(repo.attack("mkdir", "sub/.git", "").await, "mkdir sub/.git");
    refused(repo.attack("remove", ".git/config", "").await, "unlink");
    refused(repo.attack("rmdir", ".git/hooks", "").await, "rmdir");
    repo.assert_intact();
    // The guard refuses writes, not the mount: an ordinary file is still written.
    assert!(repo.attack("write", "sub/ok.txt", "").await.is_ok());
}

#[tokio::test]
async fn k2_symlinks_hard_links_and_renames_cannot_reach_protected_paths() {
    let repo = Repo::new().await;
    // Repository content that points at .git (a link planted before the session) ...
    std::os::unix::fs::symlink(".git", repo.ws().join("g")).unwrap();
    refused(
        repo.attack("write", "g/config", "").await,
        "through a planted link",
    );
    // ... and links the plugin makes itself.
    assert!(repo.attack("symlink", "cfg", ".git/config").await.is_ok());
    refused(
        repo.attack("write", "cfg", "").await,
        "through its own link",
    );
    refused(
        repo.attack("symlink", ".git/hooks/pre-commit", "../../x")
            .await,
        "link in .git",
    );
    refused(
        repo.attack("hardlink", ".git/config", "hl").await,
        "hard link out of .git",
    );
    refused(
        repo.attack("hardlink", "notes.txt", ".git/hooks/x").await,
        "hard link into .git",
    );
    refused(
        repo.attack("rename", "notes.txt", ".git/config").await,
        "rename over .git/config",
    );
    refused(
        repo.attack("rename", ".git", "git-moved").await,
        "rename .git away",
    );
    // A directory renamed to `.cargo` would bring its config.toml to life.
    refused(
        repo.attack("rename", "evil", "sub/.cargo").await,
        "rename a dir to .cargo",
    );
    // A `.git` *file* (gitdir: ...) is protected like the directory.
    refused(repo.attack("write", "sub/.git", "").await, ".git file");
    repo.assert_intact();
    assert!(!repo.ws().join("hl").exists());
    assert!(!repo.ws().join("sub/.cargo").exists());
}

#[tokio::test]
async fn k2_the_preset_extends_and_opens_up_protected_paths() {
    let repo = Repo::new().await;
    let mut g = grant(&repo.ws(), MountMode::Rw);
    g.protect = Protect {
        extra: vec!["notes.txt".into()],
        writable: vec![".git".into()],
    };
    refused(
        repo.attack_with(&g, "write", "notes.txt", "").await,
        "extra entry",
    );
    assert!(
        repo.attack_with(&g, "write", ".git/description", "")
            .await
            .is_ok()
    );
    assert_eq!(
        std::fs::read_to_string(repo.ws().join("notes.txt")).unwrap(),
        "notes"
    );
    assert_eq!(
        std::fs::read_to_string(repo.ws().join(".git/description")).unwrap(),
        "pwned"
    );
}

#[tokio::test]
async fn k3_a_nested_mount_swapped_for_a_symlink_is_refused_and_the_decoy_untouched() {
    let repo = Repo::new().await;
    let ws = repo.ws();
    std::fs::create_dir(ws.join("out")).unwrap();
    let mut g = grant(&ws, MountMode::Rw);
    g.mounts
        .push(Mount::open(ws.join("out"), "/out", MountMode::Rw).unwrap());
    assert!(
        repo.attack_with(&g, "write", "/out/first.txt", "")
            .await
            .is_ok()
    );
    // The plugin swaps the nested mount for a link to the decoy through its `.` mount.
    assert!(
        repo.attack_with(&g, "swap", "out", "../decoy")
            .await
            .is_ok()
    );
    let args = serde_json::json!({"op": "write", "path": "/out/pwned", "content": "x"});
    let report = paddock_tests::sandbox()
        .call(
            &repo.plugin,
            "fs_attack",
            &args.to_string(),
            &g,
            &CancellationToken::new(),
        )
        .await;
    let message = report.result.expect_err("the next call is refused").message;
    assert!(
        message.contains("/out") && message.contains("symbolic link"),
        "{message}"
    );
    repo.assert_intact();
    assert!(ws.join("out.orig/first.txt").exists());
}

/// Loads `file` in a fresh sandbox over `cache`, as a new paddock process would.
async fn load_fresh(cache: &Path, file: &str) -> Plugin {
    let sandbox = Sandbox::new(cache).unwrap();
    sandbox.load("p", &plugin_bytes(file), &[]).await.unwrap()
}

#[tokio::test]
async fn k4_a_planted_or_altered_cache_entry_is_discarded_and_recompiled() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let first = load_fresh(&cache, "word_count.wasm").await;
    assert_eq!(first.cache, CacheUse::Compiled);
    assert_eq!(
        load_fresh(&cache, "word_count.wasm").await.cache,
        CacheUse::Hit
    );
    let sandbox = Sandbox::new(&cache).unwrap();
    let entry = sandbox.cache_entry_path(&first.sha256);

    // Flip a byte in the middle of the native code.
    let mut bytes = std::fs::read(&entry).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&entry, &bytes).unwrap();
    assert_eq!(
        load_fresh(&cache, "word_count.wasm").await.cache,
        CacheUse::Compiled
    );
    assert_eq!(
        load_fresh(&cache, "word_count.wasm").await.cache,
        CacheUse::Hit
    );

    // Another plugin's valid entry copied under this name: authentic bytes, wrong name.
    let other = load_fresh(&cache, "hostile_attacks.wasm").await;
    std::fs::copy(sandbox.cache_entry_path(&other.sha256), &entry).unwrap();
    let reloaded = load_fresh(&cache, "word_count.wasm").await;
    assert_eq!(reloaded.cache, CacheUse::Compiled);
    assert_eq!(reloaded.tools[0].name, first.tools[0].name);

    // An entry without any MAC (as an older paddock or an attacker writes it).
    let bare = sandbox
        .engine()
        .precompile_component(&plugin_bytes("word_count.wasm"))
        .unwrap();
    std::fs::write(&entry, &bare).unwrap();
    assert_eq!(
        load_fresh(&cache, "word_count.wasm").await.cache,
        CacheUse::Compiled
    );

    // The key and the cache directory are private to the user.
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&cache), 0o700);
    assert_eq!(mode(&cache.join("key")), 0o600);
    assert_eq!(mode(&entry), 0o600);
}

/// A preset's plugins are compiled all at once on their own threads (`calls/warm.rs`); that
/// route reads the same authenticated cache, so a planted or altered entry is still refused
/// there, and the component kept in memory for the load is the recompiled one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k4_a_preset_compiled_at_once_refuses_an_altered_entry_too() {
    let tmp = tempfile::tempdir().unwrap();
    let (work, home) = (tmp.path().join("work"), tmp.path().join("home"));
    std::fs::create_dir_all(&work).unwrap();
    let wasm = |file: &str| paddock_tests::plugin_dir().join(file);
    std::fs::write(
        work.join("two.toml"),
        format!(
            "[plugins.wc]\nsource = {:?}\n[plugins.attacks]\nsource = {:?}\n",
            wasm("word_count.wasm"),
            wasm("hostile_attacks.wasm")
        ),
    )
    .unwrap();
    let path = work.join("two.toml").display().to_string();
    let preset = paddock_tests::resolve_preset(&path, &work, &home);
    let store = paddock::plugin_store::PluginStore::open(&home);
    let cache = home.join("cache");
    let load = || {
        let (cache, store, preset) = (&cache, &store, &preset);
        async move {
            let sandbox = Sandbox::new(cache).unwrap();
            let registry = paddock::calls::Registry::load(&sandbox, store, preset)
                .await
                .unwrap();
            assert!(registry.get("count_words").is_some());
            let uses: Vec<(String, CacheUse, String)> = registry
                .plugins()
                .iter()
                .map(|p| (p.name.clone(), p.cache, p.sha256.clone()))
                .collect();
            (sandbox, uses)
        }
    };
    let (sandbox, first) = load().await;
    assert!(
        first.iter().all(|(_, c, _)| *c == CacheUse::Compiled),
        "{first:?}"
    );
    let wc = &first.iter().find(|(n, _, _)| n == "wc").unwrap().2;
    let attacks = &first.iter().find(|(n, _, _)| n == "attacks").unwrap().2;
    let entry = sandbox.cache_entry_path(wc);
    let mut bytes = std::fs::read(&entry).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&entry, &bytes).unwrap();
    let (_, altered) = load().await;
    let use_of = |uses: &[(String, CacheUse, String)], name: &str| {
        uses.iter().find(|(n, _, _)| n == name).unwrap().1
    };
    assert_eq!(use_of(&altered, "wc"), CacheUse::Compiled, "{altered:?}");
    assert_eq!(use_of(&altered, "attacks"), CacheUse::Hit, "{altered:?}");
    // Another plugin's authentic entry planted under this name.
    std::fs::copy(sandbox.cache_entry_path(attacks), &entry).unwrap();
    let (_, planted) = load().await;
    assert_eq!(use_of(&planted, "wc"), CacheUse::Compiled, "{planted:?}");
    let (_, clean) = load().await;
    assert!(
        clean.iter().all(|(_, c, _)| *c == CacheUse::Hit),
        "{clean:?}"
    );
}
