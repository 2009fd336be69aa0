//! A recorder whose rules leave out what the project's git ignores: ignored entries are not
//! in the checkpoint (and named as such), and a changed `.gitignore` is followed at the next
//! checkpoint.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use paddock_checkpoint::{Exclusion, Recorder, Rules, Store};

#[test]
fn a_recorder_leaves_ignored_entries_out_and_follows_a_changed_gitignore() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("mount");
    std::fs::create_dir_all(root.join("build")).unwrap();
    std::fs::write(root.join("build/out.o"), "object").unwrap();
    std::fs::write(root.join("a.rs"), "fn main() {}").unwrap();
    std::fs::write(root.join(".gitignore"), "build/\n").unwrap();
    let store = Store::open(&dir.path().join("store")).unwrap();
    let mount = std::fs::File::open(&root).unwrap();
    let rules = Rules {
        vcs_ignored: true,
        ..Rules::default()
    };
    let mut recorder = Recorder::new(mount.as_fd(), rules).unwrap();
    let first = recorder.capture(&store).unwrap();
    let paths = |tree| paddock_checkpoint::recorder::flatten(&store, &tree).unwrap();
    assert!(
        first
            .excluded
            .contains(&(PathBuf::from("build"), Exclusion::VcsIgnored))
    );
    assert!(!paths(first.tree).contains_key(Path::new("build/out.o")));
    assert!(paths(first.tree).contains_key(Path::new("a.rs")));
    std::fs::write(root.join(".gitignore"), "*.rs\n").unwrap();
    let second = recorder.capture(&store).unwrap();
    let seen = paths(second.tree);
    assert!(seen.contains_key(Path::new("build/out.o")), "{seen:?}");
    assert!(!seen.contains_key(Path::new("a.rs")), "{seen:?}");
}
