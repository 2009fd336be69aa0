//! `cargo xtask bench rewind`: what checkpoints and rewinds cost.
//!
//! - One checkpoint of a 100,000-file tree (40 × 25 directories of 100 files) after 10 files
//!   changed, found by the change journal (inotify), and the same found by a scan of
//!   metadata (what runs when the journal overflowed or inotify is missing);
//! - a checkpoint with nothing changed, on a 1,000-file and on the 100,000-file tree: the
//!   journal makes it independent of the tree's size;
//! - the first checkpoint of each tree (a full walk that reads and hashes every file);
//! - a restore of 1,000 changed files;
//! - the bytes the store grew by for the 10 changed files, against the bytes changed: the
//!   files, and the trees on their paths, each stored as a delta from the directory's last
//!   tree (every 16th one whole again, which the mean over 20 checkpoints includes);
//! - a session's checkpoints (`paddock::rewind::Checkpoints`, what a turn takes: every root,
//!   the record, the store synced) of a 1,000-file project mount alone, and of the same with
//!   an exec write grant of 100,000 files beside it: the grant's cost as the session starts
//!   (counted against the bounds, then walked and hashed whole), per turn with nothing
//!   changed, and with 10 files of the grant changed.
//!
//! Ends with one line: `BENCH checkpoint_10_of_100k_ms=… scan_10_of_100k_ms=…
//! unchanged_1k_ms=… unchanged_100k_ms=… full_100k_ms=… restore_1000_ms=…
//! stored_bytes_10=… changed_bytes_10=… stored_per_changed=… session_mount_1k_ms=…
//! session_grant_100k_unchanged_ms=… session_grant_100k_10_ms=… session_grant_100k_start_ms=…`.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::os::fd::AsFd;
use std::path::Path;
use std::time::Instant;

use paddock::preset::CheckpointPolicy;
use paddock::rewind::Checkpoints;
use paddock_checkpoint::{Recorder, Request, Rules, Store, restore};
use paddock_sandbox::{Mount, MountMode};

fn make_tree(root: &Path, top: usize, mid: usize, files: usize) {
    for a in 0..top {
        for b in 0..mid {
            let dir = root.join(format!("t{a}/m{b}"));
            std::fs::create_dir_all(&dir).unwrap();
            for c in 0..files {
                std::fs::write(
                    dir.join(format!("f{c}.rs")),
                    format!("// file {a} {b} {c}\nfn main() {{}}\n"),
                )
                .unwrap();
            }
        }
    }
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn change(root: &Path, n: usize, round: usize) -> u64 {
    let mut bytes = 0;
    for i in 0..n {
        let (a, b, c) = (i % 40, (i / 40) % 25, (i * 7 + round) % 100);
        let text = format!("// changed {round} {i}\nfn main() {{ println!(\"{i}\"); }}\n");
        bytes += text.len() as u64;
        std::fs::write(root.join(format!("t{a}/m{b}/f{c}.rs")), text).unwrap();
    }
    bytes
}

fn main() {
    let work = tempfile::tempdir().unwrap();
    let store = Store::open(&work.path().join("store")).unwrap();

    let big = work.path().join("big");
    make_tree(&big, 40, 25, 100);
    let small = work.path().join("small");
    make_tree(&small, 10, 1, 100);
    let big_fd = std::fs::File::open(&big).unwrap();
    let small_fd = std::fs::File::open(&small).unwrap();

    let mut recorder = Recorder::new(big_fd.as_fd(), Rules::default()).unwrap();
    let t = Instant::now();
    recorder.capture(&store).unwrap();
    let full_100k = ms(t);
    let mut small_rec = Recorder::new(small_fd.as_fd(), Rules::default()).unwrap();
    small_rec.capture(&store).unwrap();

    let (mut ten, mut unchanged_big, mut unchanged_small) = (vec![], vec![], vec![]);
    let (mut stored, mut changed) = (0, 0);
    let rounds = 20;
    for round in 0..rounds {
        changed += change(&big, 10, round);
        let before = store.bytes_used();
        let t = Instant::now();
        let c = recorder.capture(&store).unwrap();
        ten.push(ms(t));
        stored += store.bytes_used() - before;
        assert_eq!(c.hashed, 10, "the journal found the 10 changed files");
        let t = Instant::now();
        recorder.capture(&store).unwrap();
        unchanged_big.push(ms(t));
        let t = Instant::now();
        small_rec.capture(&store).unwrap();
        unchanged_small.push(ms(t));
    }

    let mut scanner = Recorder::new(big_fd.as_fd(), Rules::default())
        .unwrap()
        .without_journal();
    scanner.capture(&store).unwrap();
    let (stored, changed) = (stored / rounds as u64, changed / rounds as u64);
    let mut scan = vec![];
    for round in 100..103 {
        change(&big, 10, round);
        let t = Instant::now();
        scanner.capture(&store).unwrap();
        scan.push(ms(t));
    }

    let before = recorder.capture(&store).unwrap().tree;
    change(&big, 1000, 199);
    let now = recorder.capture(&store).unwrap().tree;
    let rules = Rules::default();
    let outside = Default::default();
    let t = Instant::now();
    let done = restore(
        big_fd.as_fd(),
        &Request {
            store: &store,
            rules: &rules,
            current: now,
            target: before,
            outside: &outside,
            force: false,
        },
    )
    .unwrap();
    let restore_1000 = ms(t);
    assert_eq!(done.written.len(), 1000, "{:?}", done.kept.first());

    let (mount_only, unchanged_grant, ten_grant, grant_start) =
        session(&work.path().join("data"), &small, &big);

    println!(
        "BENCH checkpoint_10_of_100k_ms={:.1} scan_10_of_100k_ms={:.1} unchanged_1k_ms={:.2} \
         unchanged_100k_ms={:.2} full_100k_ms={:.0} restore_1000_ms={:.1} stored_bytes_10={} \
         changed_bytes_10={} stored_per_changed={:.1} session_mount_1k_ms={:.2} \
         session_grant_100k_unchanged_ms={:.2} session_grant_100k_10_ms={:.2} \
         session_grant_100k_start_ms={:.0}",
        median(ten),
        median(scan),
        median(unchanged_small),
        median(unchanged_big),
        full_100k,
        restore_1000,
        stored,
        changed,
        stored as f64 / changed as f64,
        mount_only,
        unchanged_grant,
        ten_grant,
        grant_start,
    );
}

/// A session's checkpoints of `project` alone, then with `grant` as an exec write grant:
/// the median take of the project alone, of both with nothing changed and with 10 files of
/// the grant changed, and the grant's cost as the session starts.
fn session(data: &Path, project: &Path, grant: &Path) -> (f64, f64, f64, f64) {
    let mount = Mount {
        host: project.to_path_buf(),
        guest: "/workspace".into(),
        mode: MountMode::Rw,
        handle: None,
    };
    let policy = CheckpointPolicy {
        max_files: 1_000_000,
        ..CheckpointPolicy::default()
    };
    let takes = |checkpoints: &Checkpoints, changed: usize| -> f64 {
        median(
            (0..10)
                .map(|round| {
                    if changed > 0 {
                        change(grant, changed, 300 + round);
                    }
                    let t = Instant::now();
                    checkpoints.take().unwrap();
                    ms(t)
                })
                .collect(),
        )
    };
    let alone = Checkpoints::new(data, std::slice::from_ref(&mount), &[], &[], &policy)
        .unwrap()
        .unwrap();
    alone.take().unwrap();
    let mount_only = takes(&alone, 0);
    drop(alone);
    let t = Instant::now();
    let both = Checkpoints::new(data, &[mount], &[grant.to_path_buf()], &[], &policy)
        .unwrap()
        .unwrap();
    both.take().unwrap();
    let start = ms(t);
    assert!(both.left_out().is_empty(), "{:?}", both.left_out());
    (mount_only, takes(&both, 0), takes(&both, 10), start)
}
