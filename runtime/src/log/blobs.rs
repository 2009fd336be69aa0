//! The session's blob store: images the session showed the model, each a file named by the
//! SHA-256 of its bytes under `blobs/` in the session's directory, so the log names them
//! (`ImageRef`) instead of holding them inline. A blob is written once, whole (a temporary
//! file renamed into place), before the event that names it; it is checked against its name
//! and read again as an image (`ImagePart::from_bytes`) whenever it is read back, so a blob
//! changed on disk is refused, never sent.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use crate::model::{ImagePart, ImageRef, MAX_IMAGE_BYTES};

/// The directory under a session's directory that holds its blobs.
pub const BLOBS_DIR: &str = "blobs";

/// A session's blob store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blobs {
    dir: PathBuf,
}

impl Blobs {
    /// The store of the session whose log is `log_path`.
    pub fn of_log(log_path: &Path) -> Blobs {
        let session = log_path.parent().unwrap_or(Path::new("."));
        Blobs {
            dir: session.join(BLOBS_DIR),
        }
    }

    /// Where the blob named `sha256` is (whether or not it exists).
    pub fn path(&self, sha256: &str) -> PathBuf {
        self.dir.join(sha256)
    }

    /// Stores `image` (nothing to do when its blob is there) and returns what the log keeps.
    pub fn put(&self, image: &ImagePart) -> io::Result<ImageRef> {
        let reference = image.reference();
        let path = self.path(image.sha256());
        if path.is_file() {
            return Ok(reference);
        }
        std::fs::create_dir_all(&self.dir)?;
        let mut temp = tempfile::NamedTempFile::new_in(&self.dir)?;
        temp.write_all(image.bytes())?;
        temp.as_file().sync_all()?;
        temp.persist(&path).map_err(|e| e.error)?;
        Ok(reference)
    }

    /// The image `reference` names, read back and checked, or why it cannot be.
    pub fn get(&self, reference: &ImageRef) -> Result<ImagePart, String> {
        let valid_name = reference.sha256.len() == 64
            && reference
                .sha256
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !valid_name {
            return Err(format!("`{}` is not a SHA-256 name", reference.sha256));
        }
        let path = self.path(&reference.sha256);
        let mut bytes = Vec::new();
        std::fs::File::open(&path)
            .and_then(|f| f.take(MAX_IMAGE_BYTES as u64 + 1).read_to_end(&mut bytes))
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if paddock_types::stamp::sha256_hex(&bytes) != reference.sha256 {
            return Err(format!(
                "{} no longer has the bytes the log names (changed on disk)",
                path.display()
            ));
        }
        ImagePart::from_bytes(bytes).map_err(|e| e.to_string())
    }
}

/// What a message says in place of an image that could not be read back.
pub fn missing_image(reference: &ImageRef, why: &str) -> String {
    format!(
        "[paddock: an image ({}, {} bytes, sha256 {}) was here, but it cannot be shown: {why}]",
        reference.media_type, reference.bytes, reference.sha256
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_is_stored_once_by_hash_and_a_changed_blob_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::of_log(&dir.path().join("events.jsonl"));
        let png = ImagePart::from_bytes(crate::model::image_tests_png().to_vec()).unwrap();
        let reference = blobs.put(&png).unwrap();
        assert_eq!(reference.sha256, png.sha256());
        assert!(dir.path().join("blobs").join(png.sha256()).is_file());
        assert_eq!(blobs.put(&png).unwrap(), reference, "written once");
        assert_eq!(blobs.get(&reference).unwrap(), png);
        std::fs::write(blobs.path(png.sha256()), b"tampered").unwrap();
        let error = blobs.get(&reference).unwrap_err();
        assert!(error.contains("changed on disk"), "{error}");
        let forged = ImageRef {
            sha256: "../../etc/passwd".into(),
            ..reference
        };
        assert!(blobs.get(&forged).unwrap_err().contains("not a SHA-256"));
    }
}
