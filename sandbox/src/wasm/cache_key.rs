//! The key that authenticates the compiled-code cache (K4): 32 random bytes in `<cache>/key`,
//! created 0600 by this user, and the HMAC-SHA256 every cache entry carries.
//!
//! A `.cwasm` is native code. Anything that can write into the cache directory (a mount that
//! reached it, a program started through `exec`, another tool of the same user) could plant
//! one; without the key it cannot make an entry paddock accepts. The MAC also binds the entry
//! to its name (the wasm's SHA-256 and the engine hash), so a valid entry of another plugin
//! copied under this name is refused too. The key lives in the data directory, which
//! `preset` never lets a mount contain or enter.

use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Bytes of the key and of a MAC.
pub(crate) const KEY_LEN: usize = 32;
pub(crate) const MAC_LEN: usize = 32;

/// Domain separation: a MAC made for anything else never verifies as a cache entry.
const CONTEXT: &[u8] = b"paddock compiled-code cache v1\0";

/// The per-user cache key.
#[derive(Clone)]
pub(crate) struct CacheKey([u8; KEY_LEN]);

impl CacheKey {
    /// Reads `<dir>/key`, creating it (0600, 32 random bytes) when absent. A key file that
    /// is not a plain 0600 file of 32 bytes owned by this user is replaced: a key others
    /// could read or write authenticates nothing.
    pub(crate) fn load_or_create(dir: &Path) -> std::io::Result<CacheKey> {
        crate::fs::private_dir::create_private_dir(dir)?;
        let path = dir.join("key");
        if let Some(key) = read_key(&path)? {
            return Ok(key);
        }
        let mut bytes = [0u8; KEY_LEN];
        getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
        // Written whole to a private temporary file, then linked into place: a concurrent
        // paddock either wins (we read its key) or loses (it reads ours), never half a key.
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(&bytes)?;
        tmp.as_file().sync_all()?;
        match std::fs::hard_link(tmp.path(), &path) {
            Ok(()) => Ok(CacheKey(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_key(&path)?
                .ok_or_else(|| std::io::Error::other("the cache key changed while being read")),
            Err(e) => Err(e),
        }
    }

    /// HMAC-SHA256 over the entry's name and its bytes.
    pub(crate) fn mac(&self, name: &str, compiled: &[u8]) -> [u8; MAC_LEN] {
        let mut mac = self.start(name);
        mac.update(compiled);
        mac.finalize().into_bytes().into()
    }

    /// Constant-time check of `tag` against the entry's name and bytes.
    pub(crate) fn verify(&self, name: &str, compiled: &[u8], tag: &[u8]) -> bool {
        let mut mac = self.start(name);
        mac.update(compiled);
        mac.verify_slice(tag).is_ok()
    }

    fn start(&self, name: &str) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(CONTEXT);
        mac.update(&(name.len() as u64).to_le_bytes());
        mac.update(name.as_bytes());
        mac
    }
}

/// The key at `path`, `None` when it is absent or unfit (then removed, to be recreated).
fn read_key(path: &Path) -> std::io::Result<Option<CacheKey>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path);
    let mut file = match file {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        // A symlink (ELOOP) or anything else odd at the key's name: replace it.
        Err(_) => return discard(path),
    };
    let meta = file.metadata()?;
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let fit = meta.is_file()
        && meta.len() == KEY_LEN as u64
        && meta.permissions().mode() & 0o077 == 0
        && meta.uid() == uid;
    if !fit {
        return discard(path);
    }
    let mut bytes = [0u8; KEY_LEN];
    file.read_exact(&mut bytes)?;
    Ok(Some(CacheKey(bytes)))
}

fn discard(path: &Path) -> std::io::Result<Option<CacheKey>> {
    tracing::warn!(
        "the compiled-code cache key {} is not a private 32-byte file of this user; replacing \
         it (every cached plugin is compiled again)",
        path.display()
    );
    match std::fs::remove_file(path) {
        Ok(()) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_private_stable_and_binds_the_name() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("cache");
        let key = CacheKey::load_or_create(&dir).expect("key");
        let meta = std::fs::metadata(dir.join("key")).expect("key file");
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let dir_mode = std::fs::metadata(&dir).expect("dir").permissions().mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        let again = CacheKey::load_or_create(&dir).expect("key again");
        let tag = key.mac("a", b"code");
        assert!(again.verify("a", b"code", &tag));
        assert!(!again.verify("b", b"code", &tag), "another entry's name");
        assert!(!again.verify("a", b"codf", &tag), "changed bytes");
    }

    #[test]
    fn a_readable_key_is_replaced() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let key = CacheKey::load_or_create(tmp.path()).expect("key");
        let path = tmp.path().join("key");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let fresh = CacheKey::load_or_create(tmp.path()).expect("fresh key");
        let tag = key.mac("a", b"code");
        assert!(!fresh.verify("a", b"code", &tag));
    }
}
