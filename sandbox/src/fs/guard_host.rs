//! `wasi:filesystem/types` through the guard (K2): every function delegates to wasmtime-wasi,
//! but each operation that changes the filesystem is first checked by `FsGuard` and then run
//! relative to the parent directory the guard resolved and holds, with a single name (the
//! checked place and the changed place are the same directory). Refusals are `not-permitted`.
//! Intercepted: `open-at` with write/create/truncate, `create-directory-at`,
//! `remove-directory-at`, `unlink-file-at`, `rename-at` and `link-at` (both ends: a hard link to
//! `.git/config`, written through, would bypass), `symlink-at`, `set-times-at`, `set-times`.
//! The rest (reads, stats, streams on open files) passes: a file is only open for writing if
//! its `open-at` passed.

use wasmtime::component::{HasData, Resource};
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    self, ErrorCode, HostDescriptor, HostDirectoryEntryStream,
};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, FsError, FsResult};

use crate::fs::guard_pin::{Fd, GuardedView, refused};
use crate::fs::mode::carry_mode;

/// `HasData` marker for the guarded filesystem.
pub(crate) struct GuardedFs;

impl HasData for GuardedFs {
    type Data<'a> = GuardedView<'a>;
}

/// Runs `$op` with the pinned parent, then drops the temporary descriptor whatever `$op` did.
macro_rules! with_pinned {
    ($self:ident, $pinned:ident, $op:expr) => {{
        let result = $op;
        $self.unpin($pinned)?;
        result
    }};
}

impl types::Host for GuardedView<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<ErrorCode> {
        types::Host::convert_error_code(&mut self.inner, err)
    }

    fn filesystem_error_code(
        &mut self,
        err: Resource<wasmtime::Error>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        types::Host::filesystem_error_code(&mut self.inner, err)
    }
}

impl HostDescriptor for GuardedView<'_> {
    async fn open_at(
        &mut self,
        fd: Fd,
        path_flags: types::PathFlags,
        path: String,
        oflags: types::OpenFlags,
        flags: types::DescriptorFlags,
    ) -> FsResult<Fd> {
        let writes = oflags.intersects(types::OpenFlags::CREATE | types::OpenFlags::TRUNCATE)
            || flags.contains(types::DescriptorFlags::WRITE);
        if !writes {
            return HostDescriptor::open_at(&mut self.inner, fd, path_flags, path, oflags, flags)
                .await;
        }
        let follow = path_flags.contains(types::PathFlags::SYMLINK_FOLLOW);
        let pinned = self.pin(&fd, &path, follow, false)?;
        // A final component that was not a symlink when checked is opened without following
        // one: if something swapped it for a link since, the open fails instead of landing
        // behind it.
        let path_flags = if pinned.final_is_symlink {
            path_flags
        } else {
            // `symlink-follow` is the only path flag there is.
            types::PathFlags::empty()
        };
        let (at, name) = (pinned.fd(), pinned.name.clone());
        with_pinned!(self, pinned, {
            HostDescriptor::open_at(&mut self.inner, at, path_flags, name, oflags, flags).await
        })
    }

    async fn create_directory_at(&mut self, fd: Fd, path: String) -> FsResult<()> {
        let pinned = self.pin(&fd, &path, false, false)?;
        let (at, name) = (pinned.fd(), pinned.name.clone());
        with_pinned!(self, pinned, {
            HostDescriptor::create_directory_at(&mut self.inner, at, name).await
        })
    }

    async fn remove_directory_at(&mut self, fd: Fd, path: String) -> FsResult<()> {
        let pinned = self.pin(&fd, &path, false, true)?;
        let (at, name) = (pinned.fd(), pinned.name.clone());
        with_pinned!(self, pinned, {
            HostDescriptor::remove_directory_at(&mut self.inner, at, name).await
        })
    }

    async fn unlink_file_at(&mut self, fd: Fd, path: String) -> FsResult<()> {
        let pinned = self.pin(&fd, &path, false, false)?;
        let (at, name) = (pinned.fd(), pinned.name.clone());
        with_pinned!(self, pinned, {
            HostDescriptor::unlink_file_at(&mut self.inner, at, name).await
        })
    }

    async fn rename_at(&mut self, fd: Fd, old: String, new_fd: Fd, new: String) -> FsResult<()> {
        let (from, to) = self.pin_both((&fd, &old, false), (&new_fd, &new), true)?;
        let (from_at, from_name, to_at, to_name) =
            (from.fd(), from.name.clone(), to.fd(), to.name.clone());
        if let (Some(_), Some(_), Ok(a), Ok(b)) =
            (&from.own, &to.own, self.dir(&from_at), self.dir(&to_at))
        {
            carry_mode(&a.dir, &from_name, &b.dir, &to_name); // WASI has no modes (L7)
        }
        let result =
            HostDescriptor::rename_at(&mut self.inner, from_at, from_name, to_at, to_name).await;
        self.unpin(from)?;
        self.unpin(to)?;
        result
    }

    async fn link_at(
        &mut self,
        fd: Fd,
        old_flags: types::PathFlags,
        old: String,
        new_fd: Fd,
        new: String,
    ) -> FsResult<()> {
        let follow = old_flags.contains(types::PathFlags::SYMLINK_FOLLOW);
        let (from, to) = self.pin_both((&fd, &old, follow), (&new_fd, &new), false)?;
        let (from_at, from_name, to_at, to_name) =
            (from.fd(), from.name.clone(), to.fd(), to.name.clone());
        let result = HostDescriptor::link_at(
            &mut self.inner,
            from_at,
            old_flags,
            from_name,
            to_at,
            to_name,
        )
        .await;
        self.unpin(from)?;
        self.unpin(to)?;
        result
    }

    async fn symlink_at(&mut self, fd: Fd, target: String, path: String) -> FsResult<()> {
        // The link's name is checked; where it points is checked when something writes
        // through it (open-at follows and resolves it).
        let pinned = self.pin(&fd, &path, false, true)?;
        let (at, name) = (pinned.fd(), pinned.name.clone());
        with_pinned!(self, pinned, {
            HostDescriptor::symlink_at(&mut self.inner, at, target, name).await
        })
    }

    async fn set_times_at(
        &mut self,
        fd: Fd,
        path_flags: types::PathFlags,
        path: String,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        let follow = path_flags.contains(types::PathFlags::SYMLINK_FOLLOW);
        let pinned = self.pin(&fd, &path, follow, false)?;
        let (at, name) = (pinned.fd(), pinned.name.clone());
        with_pinned!(self, pinned, {
            HostDescriptor::set_times_at(&mut self.inner, at, path_flags, name, atim, mtim).await
        })
    }

    async fn set_times(
        &mut self,
        fd: Fd,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        let file = match self.inner.table.get(&fd)? {
            Descriptor::Dir(d) => d.dir.clone(),
            Descriptor::File(f) => f.file.clone(),
        };
        self.guard.check_open(&file).map_err(refused)?;
        HostDescriptor::set_times(&mut self.inner, fd, atim, mtim).await
    }

    // Below: nothing changes by path, or the descriptor was checked when opened.
    async fn advise(
        &mut self,
        fd: Fd,
        offset: types::Filesize,
        len: types::Filesize,
        advice: types::Advice,
    ) -> FsResult<()> {
        HostDescriptor::advise(&mut self.inner, fd, offset, len, advice).await
    }

    async fn sync_data(&mut self, fd: Fd) -> FsResult<()> {
        HostDescriptor::sync_data(&mut self.inner, fd).await
    }

    async fn get_flags(&mut self, fd: Fd) -> FsResult<types::DescriptorFlags> {
        HostDescriptor::get_flags(&mut self.inner, fd).await
    }

    async fn get_type(&mut self, fd: Fd) -> FsResult<types::DescriptorType> {
        HostDescriptor::get_type(&mut self.inner, fd).await
    }

    async fn set_size(&mut self, fd: Fd, size: types::Filesize) -> FsResult<()> {
        HostDescriptor::set_size(&mut self.inner, fd, size).await
    }

    async fn read(
        &mut self,
        fd: Fd,
        len: types::Filesize,
        offset: types::Filesize,
    ) -> FsResult<(Vec<u8>, bool)> {
        HostDescriptor::read(&mut self.inner, fd, len, offset).await
    }

    async fn write(
        &mut self,
        fd: Fd,
        buf: Vec<u8>,
        offset: types::Filesize,
    ) -> FsResult<types::Filesize> {
        HostDescriptor::write(&mut self.inner, fd, buf, offset).await
    }

    async fn read_directory(&mut self, fd: Fd) -> FsResult<Resource<types::DirectoryEntryStream>> {
        HostDescriptor::read_directory(&mut self.inner, fd).await
    }

    async fn sync(&mut self, fd: Fd) -> FsResult<()> {
        HostDescriptor::sync(&mut self.inner, fd).await
    }

    async fn stat(&mut self, fd: Fd) -> FsResult<types::DescriptorStat> {
        HostDescriptor::stat(&mut self.inner, fd).await
    }

    async fn stat_at(
        &mut self,
        fd: Fd,
        path_flags: types::PathFlags,
        path: String,
    ) -> FsResult<types::DescriptorStat> {
        HostDescriptor::stat_at(&mut self.inner, fd, path_flags, path).await
    }

    fn drop(&mut self, fd: Fd) -> wasmtime::Result<()> {
        HostDescriptor::drop(&mut self.inner, fd)
    }

    async fn readlink_at(&mut self, fd: Fd, path: String) -> FsResult<String> {
        HostDescriptor::readlink_at(&mut self.inner, fd, path).await
    }

    fn read_via_stream(
        &mut self,
        fd: Fd,
        offset: types::Filesize,
    ) -> FsResult<Resource<DynInputStream>> {
        HostDescriptor::read_via_stream(&mut self.inner, fd, offset)
    }

    fn write_via_stream(
        &mut self,
        fd: Fd,
        offset: types::Filesize,
    ) -> FsResult<Resource<DynOutputStream>> {
        HostDescriptor::write_via_stream(&mut self.inner, fd, offset)
    }

    fn append_via_stream(&mut self, fd: Fd) -> FsResult<Resource<DynOutputStream>> {
        HostDescriptor::append_via_stream(&mut self.inner, fd)
    }

    async fn is_same_object(&mut self, a: Fd, b: Fd) -> wasmtime::Result<bool> {
        HostDescriptor::is_same_object(&mut self.inner, a, b).await
    }

    async fn metadata_hash(&mut self, fd: Fd) -> FsResult<types::MetadataHashValue> {
        HostDescriptor::metadata_hash(&mut self.inner, fd).await
    }

    async fn metadata_hash_at(
        &mut self,
        fd: Fd,
        path_flags: types::PathFlags,
        path: String,
    ) -> FsResult<types::MetadataHashValue> {
        HostDescriptor::metadata_hash_at(&mut self.inner, fd, path_flags, path).await
    }
}

impl HostDirectoryEntryStream for GuardedView<'_> {
    async fn read_directory_entry(
        &mut self,
        stream: Resource<types::DirectoryEntryStream>,
    ) -> FsResult<Option<types::DirectoryEntry>> {
        HostDirectoryEntryStream::read_directory_entry(&mut self.inner, stream).await
    }

    fn drop(&mut self, stream: Resource<types::DirectoryEntryStream>) -> wasmtime::Result<()> {
        HostDirectoryEntryStream::drop(&mut self.inner, stream)
    }
}
