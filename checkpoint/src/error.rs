//! The one error type of this crate: what went wrong, and where.

use std::path::PathBuf;

use crate::hash::Hash;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("checkpoint store {dir}: {source}")]
    Store {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "checkpoint object {hash} is missing from the store {dir}; the store was changed or \
         cleaned outside paddock, so this checkpoint cannot be restored"
    )]
    Missing { dir: PathBuf, hash: Hash },
    #[error(
        "checkpoint object {hash} in {dir} is damaged ({why}); nothing was restored from it. \
         The store was changed outside paddock: restore from another checkpoint"
    )]
    Damaged {
        dir: PathBuf,
        hash: Hash,
        why: String,
    },
    #[error("cannot read {rel:?} in the mount: {source}")]
    Read {
        rel: PathBuf,
        source: std::io::Error,
    },
}
