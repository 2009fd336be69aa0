//! Bytes from the other side, within limits. A download is streamed into a private temporary
//! file under the data directory's `downloads/` while it is hashed, refused past its cap, and
//! kept only once its SHA-256 is the one asked for (`Download`, `Verified`): nothing reads it
//! as a plugin before that, and a refused download leaves nothing behind. A small body (a
//! manifest, a token, an error) is read whole through a cap (`read_capped`). One download has
//! an overall deadline (`download_deadline`, `PADDOCK_DOWNLOAD_TIMEOUT_SECS`).

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};

use paddock_sandbox::create_private_dir;
use paddock_types::text::one_line;

use super::{Progress, RemoteError, error_chain};

/// The environment variable that sets the overall deadline of one download, in seconds.
pub const DOWNLOAD_TIMEOUT_VAR: &str = "PADDOCK_DOWNLOAD_TIMEOUT_SECS";
/// The deadline when the variable is unset: 256 MiB (the largest plugin) at under 300 KiB/s.
pub const DEFAULT_DOWNLOAD_TIMEOUT_SECS: u64 = 900;

/// The overall deadline of one download: `PADDOCK_DOWNLOAD_TIMEOUT_SECS`, else 900 s.
pub fn download_deadline() -> Result<Duration, RemoteError> {
    deadline_from(std::env::var_os(DOWNLOAD_TIMEOUT_VAR).as_deref())
}

fn deadline_from(given: Option<&std::ffi::OsStr>) -> Result<Duration, RemoteError> {
    let Some(given) = given else {
        return Ok(Duration::from_secs(DEFAULT_DOWNLOAD_TIMEOUT_SECS));
    };
    let given = given.to_string_lossy();
    match given.trim().parse::<u64>() {
        Ok(secs) if secs > 0 => Ok(Duration::from_secs(secs)),
        _ => Err(RemoteError::Setting(format!(
            "{DOWNLOAD_TIMEOUT_VAR}=`{}` is not a whole number of seconds above 0; set it to \
             e.g. 1800, or unset it for the default {DEFAULT_DOWNLOAD_TIMEOUT_SECS}",
            one_line(&given, 40)
        ))),
    }
}

/// Why a body was not read whole.
#[derive(Debug)]
pub enum BodyError {
    /// Past the cap: reading stopped at `read` bytes (or before, on the announced length).
    TooLarge {
        read: u64,
        announced: Option<u64>,
    },
    Broken(String),
}

/// The body of `response`, read as it arrives and stopped once it passes `cap` bytes (the
/// connection is dropped there); refused before reading when its announced length is over.
pub async fn read_capped(
    mut response: reqwest::Response,
    cap: usize,
) -> Result<Vec<u8>, BodyError> {
    let announced = response.content_length();
    if announced.is_some_and(|n| n > cap as u64) {
        return Err(BodyError::TooLarge { read: 0, announced });
    }
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = cap + 1 - body.len();
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if body.len() > cap {
                    return Err(BodyError::TooLarge {
                        read: body.len() as u64,
                        announced,
                    });
                }
            }
            Ok(None) => return Ok(body),
            Err(e) => return Err(BodyError::Broken(error_chain(&e))),
        }
    }
}

/// A file being downloaded into `downloads/` under the data directory: private (0600), hashed
/// as it is written, capped, and deleted when dropped unless its digest was verified.
pub struct Download {
    file: tempfile::NamedTempFile,
    hasher: Sha256,
    size: u64,
    limit: u64,
    total: Option<u64>,
    what: String,
}

/// A download whose SHA-256 is the expected one; the file goes when this is dropped.
pub struct Verified {
    file: tempfile::NamedTempFile,
    pub sha256: String,
}

impl Verified {
    /// The verified bytes, read through the descriptor they were written and hashed through
    /// (never by name again: nothing that swaps the file in `downloads/` can change what is
    /// installed), and hashed once more as they are read.
    pub fn into_bytes(mut self) -> Result<Vec<u8>, RemoteError> {
        use std::io::{Read, Seek};
        let path = self.file.path().display().to_string();
        let file = self.file.as_file_mut();
        let mut bytes = Vec::new();
        file.rewind()
            .and_then(|()| file.read_to_end(&mut bytes))
            .map_err(|source| RemoteError::Io {
                what: "cannot read",
                path,
                source,
            })?;
        let actual = paddock_types::stamp::sha256_hex(&bytes);
        if actual != self.sha256 {
            return Err(RemoteError::DigestMismatch {
                what: "the download".into(),
                source_of_truth: "the digest it was verified against",
                expected: self.sha256,
                actual,
            });
        }
        Ok(bytes)
    }
}

impl Download {
    /// A new download of `what` (for messages) into `data_dir/downloads`, refused past
    /// `limit` bytes; `total` is what the source announced, if anything.
    pub fn start(
        data_dir: &Path,
        what: &str,
        limit: u64,
        total: Option<u64>,
    ) -> Result<Download, RemoteError> {
        if let Some(total) = total {
            check_size(what, total, limit)?;
        }
        let dir = data_dir.join("downloads");
        create_private_dir(&dir).map_err(|source| RemoteError::Io {
            what: "cannot create",
            path: dir.display().to_string(),
            source,
        })?;
        remove_abandoned(&dir);
        let file = tempfile::Builder::new()
            .prefix("download-")
            .suffix(".part")
            .tempfile_in(&dir)
            .map_err(|source| RemoteError::Io {
                what: "cannot create a file in",
                path: dir.display().to_string(),
                source,
            })?;
        Ok(Download {
            file,
            hasher: Sha256::new(),
            size: 0,
            limit,
            total,
            what: what.to_string(),
        })
    }

    /// Appends `chunk`; refuses (and the file goes) once the limit would be passed.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), RemoteError> {
        let size = self.size + chunk.len() as u64;
        if size > self.limit {
            return Err(check_size(&self.what, size, self.limit).unwrap_err());
        }
        self.hasher.update(chunk);
        self.file
            .write_all(chunk)
            .map_err(|source| RemoteError::Io {
                what: "cannot write",
                path: self.file.path().display().to_string(),
                source,
            })?;
        self.size = size;
        Ok(())
    }

    pub fn progress(&self) -> Progress {
        Progress::Downloading {
            done: self.size,
            total: self.total,
        }
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// The SHA-256 of what was written so far.
    pub fn sha256(&self) -> String {
        hex(&self.hasher.clone().finalize())
    }

    /// The download, if its SHA-256 is `expected` (hex); else an error naming both, and the
    /// file is deleted.
    pub fn finish(
        mut self,
        expected: &str,
        source_of_truth: &'static str,
    ) -> Result<Verified, RemoteError> {
        let actual = self.sha256();
        if actual != expected {
            return Err(RemoteError::DigestMismatch {
                what: self.what,
                source_of_truth,
                expected: expected.to_string(),
                actual,
            });
        }
        self.file.flush().map_err(|source| RemoteError::Io {
            what: "cannot write",
            path: self.file.path().display().to_string(),
            source,
        })?;
        Ok(Verified {
            file: self.file,
            sha256: actual,
        })
    }
}

/// Deletes downloads a killed install left (older than a day: one still running is younger).
fn remove_abandoned(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > std::time::Duration::from_secs(24 * 3600));
        if old && name.starts_with("download-") && name.ends_with(".part") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn check_size(what: &str, size: u64, max: u64) -> Result<(), RemoteError> {
    if size > max {
        return Err(RemoteError::TooLarge {
            what: what.to_string(),
            size,
            max,
            max_mib: max >> 20,
        });
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_download_past_its_limit_or_with_another_digest_is_refused_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let mut big = Download::start(dir.path(), "the layer", 10, None).unwrap();
        big.write(b"12345").unwrap();
        let err = big.write(b"678901").unwrap_err().to_string();
        assert!(err.contains("11 bytes, over the 10 bytes"), "{err}");
        drop(big);
        let announced = Download::start(dir.path(), "the layer", 10, Some(11))
            .err()
            .unwrap();
        assert!(announced.to_string().contains("11 bytes"), "{announced}");

        let mut wrong = Download::start(dir.path(), "the layer", 100, None).unwrap();
        wrong.write(b"abc").unwrap();
        let err = wrong
            .finish(&"0".repeat(64), "the manifest names")
            .err()
            .unwrap();
        let text = err.to_string();
        assert!(
            text.contains(&paddock_types::stamp::sha256_hex(b"abc")),
            "{text}"
        );
        assert!(text.contains(&"0".repeat(64)), "{text}");
        let left: Vec<_> = std::fs::read_dir(dir.path().join("downloads"))
            .unwrap()
            .collect();
        assert!(left.is_empty(), "{left:?}");

        let mut right = Download::start(dir.path(), "the layer", 100, None).unwrap();
        right.write(b"abc").unwrap();
        let ok = right
            .finish(&paddock_types::stamp::sha256_hex(b"abc"), "x")
            .unwrap();
        // Another process swaps the file in `downloads/` for other bytes after the check: what
        // is installed is still what was verified, read through the descriptor.
        let downloaded = std::fs::read_dir(dir.path().join("downloads"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .next()
            .unwrap();
        let swapped = dir.path().join("swapped");
        std::fs::write(&swapped, b"evil").unwrap();
        std::fs::rename(&swapped, &downloaded).unwrap();
        assert_eq!(ok.into_bytes().unwrap(), b"abc");
    }

    #[test]
    fn the_download_deadline_is_900_seconds_unless_set_to_a_positive_whole_number() {
        use std::ffi::OsStr;
        assert_eq!(deadline_from(None).unwrap(), Duration::from_secs(900));
        for (given, ok) in [
            ("2", Some(2)),
            (" 60 ", Some(60)),
            ("0", None),
            ("1.5", None),
            ("x", None),
        ] {
            match (deadline_from(Some(OsStr::new(given))), ok) {
                (Ok(d), Some(secs)) => assert_eq!(d, Duration::from_secs(secs)),
                (Err(e), None) => assert!(e.to_string().contains(DOWNLOAD_TIMEOUT_VAR), "{e}"),
                (found, _) => panic!("{given}: {found:?}"),
            }
        }
    }
}
