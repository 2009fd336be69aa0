//! Images the user attaches (`run --image PATH`, `/image PATH` in chat): read from the
//! user's own path (the user, not the model, names it), bounded before it is read, and checked
//! as the model layer checks every image (`ImagePart::from_bytes`: format by magic bytes,
//! header, size).

use std::io::Read;
use std::path::Path;

use paddock::model::{ImagePart, MAX_IMAGE_BYTES};
use paddock_types::text::sanitize;

/// The image at `path`, or an error that names the path and what to do.
pub fn read_image(path: &Path) -> Result<ImagePart, String> {
    let shown = path.display().to_string();
    let shown = sanitize(&shown);
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read image {shown}: {e}"))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > MAX_IMAGE_BYTES as u64 {
        return Err(format!(
            "cannot attach {shown}: it is {size} bytes, over the bound of {MAX_IMAGE_BYTES} bytes \
             (5 MB as base64, the most a provider takes); attach a smaller or scaled-down copy"
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_IMAGE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read image {shown}: {e}"))?;
    ImagePart::from_bytes(bytes).map_err(|e| format!("cannot attach {shown}: {e}"))
}

/// What a line about a user message adds for its images.
pub fn attached(images: usize) -> String {
    match images {
        0 => String::new(),
        1 => " [+1 image]".into(),
        n => format!(" [+{n} images]"),
    }
}
