//! What a checkpoint leaves out, and so what a restore never writes: protected paths (K2: the
//! inventory of what executes from a working tree, git directories whatever their name, the
//! preset's `protect`), files over the preset's size bound, and what is not a file, a
//! directory or a symlink. The same decision is asked of what a checkpoint records and of
//! what a (possibly tampered) store asks a restore to write.

use std::path::Path;

use paddock_sandbox::Protect;

/// Why an entry of a mount is not in a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exclusion {
    /// A protected path (`.git`, hooks, tool configuration): never captured, never restored.
    Protected,
    /// A directory git would take for a git directory, whatever its name.
    GitDir,
    /// A file over the preset's size bound.
    TooLarge,
    /// A device, FIFO or socket.
    Special,
    /// Ignored by the project's VCS (`.gitignore`), and the preset leaves those out.
    VcsIgnored,
}

impl Exclusion {
    pub fn describe(self) -> &'static str {
        match self {
            Exclusion::Protected => "protected path",
            Exclusion::GitDir => "git directory",
            Exclusion::TooLarge => "over the size bound",
            Exclusion::Special => "not a file, directory or symlink",
            Exclusion::VcsIgnored => "ignored by the project's VCS (.gitignore)",
        }
    }
}

/// The exclusions in force for one mount.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    pub protect: Protect,
    /// Files larger than this are left out (and left alone by a restore).
    pub max_file_bytes: Option<u64>,
    /// Leave out what git would ignore (each directory's `.gitignore`, `.git/info/exclude`).
    pub vcs_ignored: bool,
}

impl Rules {
    /// Is `rel` (relative to the mount's root) a protected path?
    pub fn protected(&self, rel: &Path) -> bool {
        self.protect.covers(rel)
    }

    /// Is a directory at `rel` holding these names a git directory the grant does not open?
    pub fn git_dir(&self, rel: &Path, has: impl Fn(&str) -> bool) -> bool {
        paddock_sandbox::is_git_dir(has) && !self.protect.opens(rel)
    }

    pub fn too_large(&self, size: u64) -> bool {
        self.max_file_bytes.is_some_and(|max| size > max)
    }
}
