//! Random sequences of edits (creates, overwrites, deletes, renames of files and directories,
//! mode changes, symlinks, binary files, nested directories, a file turned into a directory
//! and back), a checkpoint before each turn, then a rewind to every turn in random order,
//! each compared byte for byte with a copy of the tree taken when the turn began. The same
//! runs with the change journal, with metadata scans only, and with the recorder dropped and
//! made again between turns (what a crash and `resume` do). A protected `.git` directory
//! changes all along and no rewind may touch it.
//!
//! The seed of a failing run is in the assertion message; `REWIND_SEED=N` runs that one alone.

use std::collections::BTreeMap;
use std::os::fd::AsFd;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use paddock_checkpoint::{Hash, Recorder, Request, Rules, Store, restore};
use paddock_test_tree::{Entry, Rng, copy, differences};

/// All paths of the tree, files and directories, for picking one.
fn paths(root: &Path, dirs: bool) -> Vec<PathBuf> {
    copy(root)
        .into_iter()
        .filter(|(_, c)| matches!(c, Entry::Dir(_)) == dirs)
        .map(|(p, _)| p)
        .collect()
}

fn some_dir(rng: &mut Rng, root: &Path) -> PathBuf {
    let mut dirs = paths(root, true);
    dirs.push(PathBuf::new());
    dirs[rng.below(dirs.len())].clone()
}

fn edit(rng: &mut Rng, root: &Path) {
    let files = paths(root, false);
    let name = format!("n{}", rng.below(40));
    match rng.below(11) {
        0 | 1 => {
            let binary = rng.below(3) == 0;
            let at = root.join(some_dir(rng, root)).join(&name);
            if !at.is_dir() {
                let _ = std::fs::remove_file(&at);
                std::fs::write(&at, rng.bytes(binary)).unwrap();
            }
        }
        2 if !files.is_empty() => {
            let f = root.join(&files[rng.below(files.len())]);
            if !f.is_symlink() {
                let mut bytes = std::fs::read(&f).unwrap();
                bytes.extend(rng.bytes(false));
                std::fs::write(&f, bytes).unwrap();
            }
        }
        3 if !files.is_empty() => {
            std::fs::remove_file(root.join(&files[rng.below(files.len())])).unwrap();
        }
        4 if !files.is_empty() => {
            let from = root.join(&files[rng.below(files.len())]);
            let to = root.join(some_dir(rng, root)).join(&name);
            if !to.is_dir() {
                std::fs::rename(from, to).unwrap();
            }
        }
        5 => {
            let at = root
                .join(some_dir(rng, root))
                .join(format!("d{}", rng.below(6)));
            let _ = std::fs::create_dir_all(at.join("inner"));
        }
        6 => {
            let dirs = paths(root, true);
            if !dirs.is_empty() {
                let d = &dirs[rng.below(dirs.len())];
                if rng.below(2) == 0 {
                    std::fs::remove_dir_all(root.join(d)).unwrap();
                } else {
                    let to = root
                        .join(some_dir(rng, root))
                        .join(format!("m{}", rng.below(9)));
                    if !to.exists() && !to.starts_with(root.join(d)) {
                        std::fs::rename(root.join(d), to).unwrap();
                    }
                }
            }
        }
        7 if !files.is_empty() => {
            let f = root.join(&files[rng.below(files.len())]);
            if !f.is_symlink() {
                let mode = [0o644, 0o755, 0o600, 0o700][rng.below(4)];
                std::fs::set_permissions(f, std::fs::Permissions::from_mode(mode)).unwrap();
            }
        }
        8 => {
            let at = root
                .join(some_dir(rng, root))
                .join(format!("l{}", rng.below(5)));
            let target = ["n1", "../n2", "/etc/passwd", "missing/x", "d1"][rng.below(5)];
            if std::fs::symlink_metadata(&at).is_err() {
                symlink(target, at).unwrap();
            }
        }
        9 if !files.is_empty() => {
            // A file becomes a directory of the same name.
            let f = root.join(&files[rng.below(files.len())]);
            std::fs::remove_file(&f).unwrap();
            std::fs::create_dir(&f).unwrap();
            std::fs::write(f.join("x"), rng.bytes(true)).unwrap();
        }
        _ => {
            let dirs = paths(root, true);
            if !dirs.is_empty() {
                let d = root.join(&dirs[rng.below(dirs.len())]);
                let mode = [0o755, 0o700, 0o750][rng.below(3)];
                std::fs::set_permissions(d, std::fs::Permissions::from_mode(mode)).unwrap();
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Style {
    Journal,
    Scan,
    Resumed,
}

/// One run: `turns` turns, then a rewind to each in random order. Returns the rewinds done.
fn run(seed: u64, style: Style, turns: usize) -> usize {
    let mut rng = Rng::new(seed);
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("mount");
    std::fs::create_dir(&root).unwrap();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let store = Store::open(&work.path().join("store")).unwrap();
    let mount = std::fs::File::open(&root).unwrap();
    let fresh = || {
        let r = Recorder::new(mount.as_fd(), Rules::default()).unwrap();
        if style == Style::Scan {
            r.without_journal()
        } else {
            r
        }
    };
    let mut recorder = fresh();
    let mut taken: Vec<(Hash, BTreeMap<PathBuf, Entry>)> = Vec::new();
    for turn in 0..turns {
        if style == Style::Resumed && rng.below(2) == 0 {
            recorder = fresh();
        }
        let at_start = recorder.capture(&store).unwrap();
        taken.push((at_start.tree, copy(&root)));
        for _ in 0..1 + rng.below(6) {
            edit(&mut rng, &root);
        }
        std::fs::write(
            root.join(".git/hooks/post-checkout"),
            format!("turn {turn}"),
        )
        .unwrap();
    }
    let mut order: Vec<usize> = (0..turns).collect();
    rng.shuffle(&mut order);
    let mut changed = 0;
    for (n, turn) in order.iter().enumerate() {
        let now = recorder.capture(&store).unwrap();
        let outside = Default::default();
        let rules = Rules::default();
        let request = Request {
            store: &store,
            rules: &rules,
            current: now.tree,
            target: taken[*turn].0,
            outside: &outside,
            force: false,
        };
        let done = restore(mount.as_fd(), &request).unwrap();
        changed += done.written.len() + done.removed.len();
        let failed: Vec<_> = done
            .kept
            .iter()
            .filter(|(p, _)| !p.starts_with(".git"))
            .collect();
        assert!(
            failed.is_empty(),
            "seed {seed}: rewind {n} to turn {turn} kept {failed:?}"
        );
        let got = copy(&root);
        if got != taken[*turn].1 {
            let differ = differences(&got, &taken[*turn].1);
            panic!(
                "seed {seed} ({style_name}): rewind {n} to turn {turn} differs at {differ:?}",
                style_name = match style {
                    Style::Journal => "journal",
                    Style::Scan => "scan",
                    Style::Resumed => "resumed",
                }
            );
        }
        let hook = std::fs::read_to_string(root.join(".git/hooks/post-checkout")).unwrap();
        assert_eq!(
            hook,
            format!("turn {}", turns - 1),
            "seed {seed}: a rewind touched .git"
        );
        // Sometimes edit between rewinds: the journal must follow what the restore wrote too.
        if rng.below(3) == 0 {
            edit(&mut rng, &root);
        }
    }
    assert!(
        changed > turns,
        "seed {seed}: the rewinds changed almost nothing ({changed})"
    );
    turns
}

fn seeds() -> Vec<u64> {
    match std::env::var("REWIND_SEED") {
        Ok(s) => vec![s.parse().expect("REWIND_SEED is a number")],
        Err(_) => (1..=15).collect(),
    }
}

#[test]
fn rewinds_with_the_journal_restore_every_turn_exactly() {
    let n: usize = seeds()
        .into_iter()
        .map(|s| run(s, Style::Journal, 14))
        .sum();
    assert!(n >= 14);
}

#[test]
fn rewinds_with_metadata_scans_restore_every_turn_exactly() {
    let n: usize = seeds()
        .into_iter()
        .map(|s| run(s + 1000, Style::Scan, 14))
        .sum();
    assert!(n >= 14);
}

#[test]
fn rewinds_across_recorders_made_again_restore_every_turn_exactly() {
    let n: usize = seeds()
        .into_iter()
        .map(|s| run(s + 2000, Style::Resumed, 14))
        .sum();
    assert!(n >= 14);
}
