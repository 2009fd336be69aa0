//! Attacks on a restore: a store that lists protected paths or a git directory, a damaged
//! blob, a directory swapped for a symlink out of the mount between the checkpoint and the
//! restore. Nothing may be written outside the mount, nothing protected written, and the
//! answer must say what was kept.

use std::ffi::OsString;
use std::os::fd::AsFd;
use std::path::Path;

use paddock_checkpoint::tree::{Kind, Tree, TreeEntry};
use paddock_checkpoint::{Hash, Kept, Recorder, Request, Rules, Store, restore};

struct Place {
    _work: tempfile::TempDir,
    root: std::path::PathBuf,
    outside: std::path::PathBuf,
    store: Store,
}

fn place() -> Place {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("mount");
    let outside = work.path().join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let store = Store::open(&work.path().join("store")).unwrap();
    Place {
        _work: work,
        root,
        outside,
        store,
    }
}

fn entry(name: &str, kind: Kind, hash: Hash) -> TreeEntry {
    TreeEntry {
        name: OsString::from(name),
        kind,
        mode: 0o755,
        hash,
    }
}

fn tree(store: &Store, mut entries: Vec<TreeEntry>) -> Hash {
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    store.put(&Tree { entries }.encode()).unwrap().0
}

fn capture(p: &Place) -> Hash {
    let mount = std::fs::File::open(&p.root).unwrap();
    Recorder::new(mount.as_fd(), Rules::default())
        .unwrap()
        .capture(&p.store)
        .unwrap()
        .tree
}

fn run(p: &Place, current: Hash, target: Hash) -> Result<paddock_checkpoint::Restored, String> {
    let mount = std::fs::File::open(&p.root).unwrap();
    let rules = Rules::default();
    let outside = Default::default();
    restore(
        mount.as_fd(),
        &Request {
            store: &p.store,
            rules: &rules,
            current,
            target,
            outside: &outside,
            force: false,
        },
    )
    .map_err(|e| e.to_string())
}

#[test]
fn a_store_listing_hooks_tool_config_or_a_git_directory_restores_none_of_them() {
    let p = place();
    let script = p.store.put(b"#!/bin/sh\ntouch /tmp/pwned\n").unwrap().0;
    let hook = tree(&p.store, vec![entry("pre-commit", Kind::File, script)]);
    let hooks = tree(&p.store, vec![entry("hooks", Kind::Dir, hook)]);
    let empty = tree(&p.store, vec![]);
    // A directory git would take for a git directory, under an innocent name.
    let git_like = tree(
        &p.store,
        vec![
            entry("HEAD", Kind::File, script),
            entry("hooks", Kind::Dir, hook),
            entry("objects", Kind::Dir, empty),
            entry("refs", Kind::Dir, empty),
        ],
    );
    let nested = tree(&p.store, vec![entry(".git", Kind::Dir, hooks)]);
    let target = tree(
        &p.store,
        vec![
            entry(".git", Kind::Dir, hooks),
            entry(".npmrc", Kind::File, script),
            entry("innocent", Kind::Dir, git_like),
            entry("sub", Kind::Dir, nested),
            entry("ok.txt", Kind::File, script),
        ],
    );
    let done = run(&p, capture(&p), target).unwrap();
    assert!(p.root.join("ok.txt").exists(), "the plain file is restored");
    assert!(!p.root.join(".git").exists());
    assert!(!p.root.join(".npmrc").exists());
    assert!(!p.root.join("innocent").exists());
    assert!(!p.root.join("sub/.git").exists());
    let kept: Vec<_> = done
        .kept
        .iter()
        .map(|(p, k)| (p.display().to_string(), k.clone()))
        .collect();
    assert!(kept.contains(&(".git".into(), Kept::Protected)), "{kept:?}");
    assert!(
        kept.contains(&(".npmrc".into(), Kept::Protected)),
        "{kept:?}"
    );
    assert!(
        kept.contains(&("innocent".into(), Kept::GitDir)),
        "{kept:?}"
    );
    assert!(
        kept.contains(&("sub/.git".into(), Kept::Protected)),
        "{kept:?}"
    );
}

#[test]
fn a_damaged_blob_fails_the_restore_before_anything_is_written() {
    let p = place();
    std::fs::write(p.root.join("a.txt"), "first").unwrap();
    std::fs::write(p.root.join("b.txt"), "keep").unwrap();
    let first = capture(&p);
    std::fs::write(p.root.join("a.txt"), "second").unwrap();
    std::fs::remove_file(p.root.join("b.txt")).unwrap();
    let now = capture(&p);
    let blob = Hash::of(b"first").to_string();
    let object = p
        .store
        .dir()
        .join("objects")
        .join(&blob[..2])
        .join(&blob[2..]);
    std::fs::write(&object, "tampered").unwrap();
    let err = run(&p, now, first).unwrap_err();
    assert!(err.contains("damaged") && err.contains(&blob), "{err}");
    assert_eq!(
        std::fs::read_to_string(p.root.join("a.txt")).unwrap(),
        "second"
    );
    assert!(!p.root.join("b.txt").exists(), "nothing was restored");
}

#[test]
fn a_directory_swapped_for_a_symlink_out_of_the_mount_is_not_followed() {
    let p = place();
    std::fs::create_dir(p.root.join("dir")).unwrap();
    std::fs::write(p.root.join("dir/f"), "recorded").unwrap();
    let first = capture(&p);
    std::fs::write(p.root.join("dir/f"), "changed").unwrap();
    std::fs::write(p.root.join("dir/new"), "created since").unwrap();
    let now = capture(&p);
    // Between the checkpoint of now and the restore, `dir` becomes a symlink to outside.
    std::fs::rename(p.root.join("dir"), p.root.join("moved")).unwrap();
    std::os::unix::fs::symlink(&p.outside, p.root.join("dir")).unwrap();
    std::fs::write(p.outside.join("new"), "victim").unwrap();
    let done = run(&p, now, first).unwrap();
    assert_eq!(
        std::fs::read_dir(&p.outside).unwrap().count(),
        1,
        "nothing written outside"
    );
    assert_eq!(
        std::fs::read_to_string(p.outside.join("new")).unwrap(),
        "victim"
    );
    assert!(
        done.kept
            .iter()
            .any(|(rel, k)| rel == Path::new("dir/f") && matches!(k, Kept::Failed(_))),
        "{:?}",
        done.kept
    );
    assert!(
        std::fs::symlink_metadata(p.root.join("dir"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// A directory's tree stored as a delta from its last one, tampered with in the store: an
/// entry pointed at other bytes (a hook script), or the delta made its own base (a loop).
/// The rebuilt tree no longer hashes to its name, or the chain never ends: the restore fails
/// before anything is written.
#[test]
fn a_tampered_tree_delta_fails_the_restore_before_anything_is_written() {
    for tamper in ["entry", "loop"] {
        let p = place();
        std::fs::create_dir(p.root.join("big")).unwrap();
        for i in 0..60 {
            std::fs::write(p.root.join(format!("big/f{i:02}")), format!("file {i}")).unwrap();
        }
        let mount = std::fs::File::open(&p.root).unwrap();
        let mut recorder = Recorder::new(mount.as_fd(), Rules::default()).unwrap();
        recorder.capture(&p.store).unwrap();
        std::fs::write(p.root.join("big/f01"), "changed once").unwrap();
        let second = recorder.capture(&p.store).unwrap().tree;
        std::fs::write(p.root.join("big/f02"), "changed twice").unwrap();
        let third = recorder.capture(&p.store).unwrap().tree;

        let big = paddock_checkpoint::recorder::flatten(&p.store, &second).unwrap()
            [Path::new("big")]
        .hash
        .to_string();
        let object = p
            .store
            .dir()
            .join("objects")
            .join(&big[..2])
            .join(&big[2..]);
        let stored = std::fs::read(&object).unwrap();
        assert!(
            stored.starts_with(b"\0pd2") && stored.len() < 100,
            "one changed file of 60 is stored as a small delta: {stored:?}"
        );
        let evil = p.store.put(b"#!/bin/sh\ntouch /tmp/pwned\n").unwrap().0;
        let changed = Hash::of(b"changed once");
        let mut tampered = stored.clone();
        match tamper {
            // The entry's raw hash, pointed at the hook script.
            "entry" => {
                let at = stored
                    .windows(32)
                    .position(|w| w == changed.0)
                    .expect("the delta holds the changed file's hash");
                tampered[at..at + 32].copy_from_slice(&evil.0);
            }
            // The base (the 32 bytes after the header), made the delta itself.
            _ => {
                let own = Hash::parse(&big).unwrap();
                tampered[4..36].copy_from_slice(&own.0);
            }
        }
        assert_ne!(tampered, stored);
        std::fs::write(&object, tampered).unwrap();

        let err = run(&p, third, second).unwrap_err();
        assert!(
            err.contains("damaged") && err.contains(&big),
            "{tamper}: {err}"
        );
        assert_eq!(
            std::fs::read_to_string(p.root.join("big/f02")).unwrap(),
            "changed twice",
            "{tamper}: nothing was restored"
        );
    }
}
