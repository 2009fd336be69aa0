//! Where a guarded filesystem operation runs (K2): the target checked by `FsGuard` and its
//! parent directory held as a temporary descriptor in the call's table, so the checked place
//! and the changed place are the same directory.

use std::sync::Arc;

use wasmtime::component::Resource;
use wasmtime_wasi::filesystem::{Descriptor, Dir, WasiFilesystemCtxView};
use wasmtime_wasi::p2::bindings::filesystem::types::{self, ErrorCode};
use wasmtime_wasi::p2::{FsError, FsResult};

use crate::fs::guard::{FsGuard, Refusal, Target};

/// wasmtime-wasi's filesystem view plus the call's guard.
pub(crate) struct GuardedView<'a> {
    pub(crate) inner: WasiFilesystemCtxView<'a>,
    pub(crate) guard: Arc<FsGuard>,
}

pub(crate) fn refused(r: Refusal) -> FsError {
    match r {
        Refusal::Protected => ErrorCode::NotPermitted.into(),
        Refusal::Os(code) => ErrorCode::from(std::io::Error::from_raw_os_error(code)).into(),
    }
}

pub(crate) type Fd = Resource<types::Descriptor>;

impl GuardedView<'_> {
    /// The directory behind `fd`.
    pub(crate) fn dir(&self, fd: &Fd) -> FsResult<Dir> {
        match self.inner.table.get(fd)? {
            Descriptor::Dir(d) => Ok(d.clone()),
            Descriptor::File(_) => Err(ErrorCode::NotDirectory.into()),
        }
    }

    /// Checks `path` under `fd` and pushes its held parent as a temporary descriptor with
    /// the same permissions; returns where to run the operation. Drop it with `unpin`.
    pub(crate) fn pin(
        &mut self,
        fd: &Fd,
        path: &str,
        follow: bool,
        holder: bool,
    ) -> FsResult<Pinned> {
        let dir = self.dir(fd)?;
        let target = self
            .guard
            .pinned(&dir.dir, path, follow, holder)
            .map_err(refused)?;
        let Target::Named {
            parent,
            name,
            final_is_symlink,
        } = target
        else {
            return Ok(Pinned {
                own: None,
                at: fd.rep(),
                name: path.to_string(),
                final_is_symlink: false,
            });
        };
        let held = Dir::new(std::fs::File::from(parent), dir.perms, dir.open_mode, true);
        let own = self.inner.table.push(Descriptor::Dir(held))?;
        Ok(Pinned {
            at: own.rep(),
            own: Some(own),
            name: name.to_string_lossy().into_owned(),
            final_is_symlink,
        })
    }

    /// Pins both ends of a rename or link (`holder` for both); neither is left pinned on error.
    pub(crate) fn pin_both(
        &mut self,
        (fd, path, follow): (&Fd, &str, bool),
        (to_fd, to_path): (&Fd, &str),
        holder: bool,
    ) -> FsResult<(Pinned, Pinned)> {
        let from = self.pin(fd, path, follow, holder)?;
        match self.pin(to_fd, to_path, false, holder) {
            Ok(to) => Ok((from, to)),
            Err(e) => self.unpin(from).and(Err(e)),
        }
    }

    pub(crate) fn unpin(&mut self, pinned: Pinned) -> FsResult<()> {
        if let Some(own) = pinned.own {
            self.inner.table.delete(own)?;
        }
        Ok(())
    }
}

/// Where a checked operation runs: the pinned parent (a temporary descriptor, `own`) and a
/// single name, or the caller's own descriptor and path when the path was checked whole.
pub(crate) struct Pinned {
    pub(crate) own: Option<Fd>,
    at: u32,
    pub(crate) name: String,
    pub(crate) final_is_symlink: bool,
}

impl Pinned {
    pub(crate) fn fd(&self) -> Fd {
        Resource::new_borrow(self.at)
    }
}
