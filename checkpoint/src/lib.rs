//! Checkpoints of a session's writable mounts (and of the directories its programs may write
//! outside them), and the restore that puts them back.
//!
//! - `store`: content-addressed objects (SHA-256, verified on every read) in the data
//!   directory: file bytes, symlink targets, trees (`tree`, git-like: an unchanged subtree is
//!   shared; a changed one stored as a `delta` from the directory's last tree when smaller),
//!   checkpoint records (`record`); trees and deltas are binary, and those an older paddock
//!   wrote as text are still read (`legacy`);
//! - `recorder`: one mount, checkpoint after checkpoint, costing what changed (the change
//!   `journal` by inotify; a scan of metadata when the journal cannot vouch);
//! - `restore`: a mount put back by descriptor, never outside it, never a protected path
//!   (`rules`), never a change made outside the session unless forced;
//! - `diff`: what changed between two checkpoints, as paths and as a unified diff;
//! - `vcs_ignore`: what the project's git ignores, for presets that leave it out.
//!
//! It knows nothing of sessions or logs: the core decides when to checkpoint and records the
//! ids in the session log.

mod delta;
pub mod diff;
mod error;
mod fsat;
mod hash;
mod journal;
mod legacy;
pub mod record;
pub mod recorder;
pub mod restore;
pub mod rules;
pub mod store;
pub mod tree;
mod vcs_ignore;

pub use error::Error;
pub use hash::Hash;
pub use record::{MountRecord, Record, RootKind};
pub use recorder::{Captured, Method, Recorder};
pub use restore::{Kept, Request, Restored, restore};
pub use rules::{Exclusion, Rules};
pub use store::Store;
