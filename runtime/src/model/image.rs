//! Images the model is shown: a user's attachment, an image a tool returned (`read_file` on a
//! PNG, an MCP server's image content). `ImagePart` is the one value for all of them, made only
//! by `ImagePart::from_bytes`, which takes nothing on trust: the format is told by the magic
//! bytes (never a file name), the header must parse (dimensions, the end marker where the
//! format has one), and the size is bounded by `MAX_IMAGE_BYTES`. Each wire format sends it its
//! own way (`openai.rs`, `anthropic.rs`); a model configured as text-only gets `placeholder`.
//! The log keeps an `ImageRef` (hash, type, size) and the bytes in the session's blob store.
//!
//! A tool reaches the host with text only (the WIT `tool-output`), so a plugin returns an
//! image as `IMAGE_OUTPUT_PREFIX`, the image's base64 and, after a newline, its caption
//! (`paddock-sdk`'s `Output::image`); `from_tool_output` reads that back. The host reads no
//! file for it: a plugin can only hand over bytes it could already read, so it cannot make the
//! host show the model a file its grant does not reach.
//!
//! This module decodes no pixels; it checks headers, which is what providers reject on.

use std::fmt;
use std::sync::Arc;

use base64::Engine;
use serde::{Deserialize, Serialize};

/// The largest image sent, in bytes: 3.75 MB, which is 5 MB as base64, Anthropic's limit for
/// one image (OpenAI's is larger). Above it an image is refused with a text that says so.
pub const MAX_IMAGE_BYTES: usize = 3_750_000;

/// How a tool's text output starts when it carries an image (see the module doc). The control
/// character keeps ordinary text from starting this way; the shell's output, sanitized, never
/// does.
pub const IMAGE_OUTPUT_PREFIX: &str = "\u{1}paddock-image;base64,";

/// The formats every provider paddock speaks accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageKind {
    Png,
    Jpeg,
    Gif,
    Webp,
}

impl ImageKind {
    pub fn media_type(self) -> &'static str {
        match self {
            ImageKind::Png => "image/png",
            ImageKind::Jpeg => "image/jpeg",
            ImageKind::Gif => "image/gif",
            ImageKind::Webp => "image/webp",
        }
    }

    fn name(self) -> &'static str {
        match self {
            ImageKind::Png => "PNG",
            ImageKind::Jpeg => "JPEG",
            ImageKind::Gif => "GIF",
            ImageKind::Webp => "WebP",
        }
    }

    /// The kind whose media type is `media_type`.
    pub fn of_media_type(media_type: &str) -> Option<ImageKind> {
        [
            ImageKind::Png,
            ImageKind::Jpeg,
            ImageKind::Gif,
            ImageKind::Webp,
        ]
        .into_iter()
        .find(|k| k.media_type().eq_ignore_ascii_case(media_type))
    }
}

/// The format `bytes` start like, by magic bytes alone.
pub fn sniff(bytes: &[u8]) -> Option<ImageKind> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(ImageKind::Png)
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some(ImageKind::Jpeg)
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some(ImageKind::Gif)
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some(ImageKind::Webp)
    } else {
        None
    }
}

/// Why bytes are not an image paddock sends.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    #[error(
        "not a PNG, JPEG, GIF or WebP image (its first bytes are {0}); only those formats are sent to a model"
    )]
    NotAnImage(String),
    #[error(
        "the image is {bytes} bytes, over the bound of {MAX_IMAGE_BYTES} bytes (5 MB as base64, the most a provider takes); it was not sent. Send a smaller or scaled-down copy"
    )]
    TooLarge { bytes: usize },
    #[error("it starts like a {kind} image but is not one: {why}; it was not sent")]
    Malformed { kind: &'static str, why: String },
    #[error("its image data is not valid base64 ({0}); it was not sent")]
    Base64(String),
}

/// An image as the model is shown it; see the module doc. Cheap to clone (the bytes are
/// shared).
#[derive(Clone, PartialEq, Eq)]
pub struct ImagePart {
    kind: ImageKind,
    width: u32,
    height: u32,
    sha256: String,
    data: Arc<[u8]>,
}

impl fmt::Debug for ImagePart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ImagePart({} {}x{}, {} bytes, sha256 {})",
            self.kind.media_type(),
            self.width,
            self.height,
            self.data.len(),
            self.sha256
        )
    }
}

impl ImagePart {
    /// `bytes` as an image part, checked as the module doc says.
    pub fn from_bytes(bytes: impl Into<Arc<[u8]>>) -> Result<ImagePart, ImageError> {
        let data: Arc<[u8]> = bytes.into();
        let Some(kind) = sniff(&data) else {
            let head: Vec<String> = data.iter().take(8).map(|b| format!("{b:02x}")).collect();
            return Err(ImageError::NotAnImage(if head.is_empty() {
                "none: it is empty".into()
            } else {
                head.join(" ")
            }));
        };
        if data.len() > MAX_IMAGE_BYTES {
            return Err(ImageError::TooLarge { bytes: data.len() });
        }
        let (width, height) = dimensions(kind, &data).map_err(|why| ImageError::Malformed {
            kind: kind.name(),
            why,
        })?;
        Ok(ImagePart {
            kind,
            width,
            height,
            sha256: paddock_types::stamp::sha256_hex(&data),
            data,
        })
    }

    /// A tool's text output read back as an image and its caption, when it carries one
    /// (`IMAGE_OUTPUT_PREFIX`); `None` for ordinary text. The base64 is bounded before it is
    /// decoded.
    pub fn from_tool_output(content: &str) -> Option<Result<(ImagePart, String), ImageError>> {
        let rest = content.strip_prefix(IMAGE_OUTPUT_PREFIX)?;
        let (encoded, caption) = rest.split_once('\n').unwrap_or((rest, ""));
        let encoded = encoded.trim_end_matches('\r');
        Some(ImagePart::from_base64(encoded).map(|image| (image, caption.to_owned())))
    }

    /// An image sent as base64 (a tool's output, an editor's prompt): the text bounded before
    /// it is decoded, then checked as `from_bytes` checks it.
    pub fn from_base64(encoded: &str) -> Result<ImagePart, ImageError> {
        if encoded.len() / 4 * 3 > MAX_IMAGE_BYTES + 3 {
            return Err(ImageError::TooLarge {
                bytes: encoded.len() / 4 * 3,
            });
        }
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|e| ImageError::Base64(e.to_string()))?;
        ImagePart::from_bytes(decoded)
    }

    /// The image as a tool's text output with `caption` (what `from_tool_output` reads back):
    /// how a host-side tool, such as an MCP server's, hands an image through the pipeline,
    /// whose results are text.
    pub fn to_tool_output(&self, caption: &str) -> String {
        format!("{IMAGE_OUTPUT_PREFIX}{}\n{caption}", self.base64())
    }

    pub fn kind(&self) -> ImageKind {
        self.kind
    }

    pub fn media_type(&self) -> &'static str {
        self.kind.media_type()
    }

    pub fn width(&self) -> u32 {
        self.width
    }

    pub fn height(&self) -> u32 {
        self.height
    }

    /// SHA-256 of the bytes, lowercase hex: the image's name in the log and the blob store.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    pub fn bytes(&self) -> &[u8] {
        &self.data
    }

    pub fn base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.data)
    }

    /// `data:<media type>;base64,<data>`, as OpenAI's `image_url` takes it.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type(), self.base64())
    }

    /// The short description of the image, as a text line.
    pub fn describe(&self) -> String {
        format!(
            "{}, {}x{}, {} bytes, sha256 {}",
            self.media_type(),
            self.width,
            self.height,
            self.data.len(),
            &self.sha256[..12]
        )
    }

    /// What a text-only model is sent instead of the image.
    pub fn placeholder(&self) -> String {
        format!(
            "[image not shown ({}): this model is configured as text-only; set `vision = true` \
             under [model] if it accepts images]",
            self.describe()
        )
    }

    /// What the log keeps of the image.
    pub fn reference(&self) -> ImageRef {
        ImageRef {
            media_type: self.media_type().to_owned(),
            sha256: self.sha256.clone(),
            bytes: self.data.len() as u64,
            width: self.width,
            height: self.height,
        }
    }

    /// Rough tokens a provider counts for the image (Anthropic's rule of width×height/750,
    /// at most what its largest image costs), for the context estimate.
    pub fn estimated_tokens(&self) -> u64 {
        (u64::from(self.width) * u64::from(self.height) / 750).clamp(85, 1600)
    }
}

/// An image as the session log holds it: its bytes are the blob `sha256` in the session's
/// `blobs/` directory, never inline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageRef {
    pub media_type: String,
    pub sha256: String,
    pub bytes: u64,
    pub width: u32,
    pub height: u32,
}

/// The wire form of an image part wherever a message is serialized whole (not the log, which
/// keeps `ImageRef`): read back through `from_bytes`, so it is checked again.
#[derive(Serialize, Deserialize)]
struct Wire {
    media_type: String,
    data: String,
}

impl Serialize for ImagePart {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Wire {
            media_type: self.media_type().to_owned(),
            data: self.base64(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for ImagePart {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = Wire::deserialize(d)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(wire.data)
            .map_err(serde::de::Error::custom)?;
        ImagePart::from_bytes(bytes).map_err(serde::de::Error::custom)
    }
}

/// Width and height from the header of an image of `kind`, or what is wrong with it.
fn dimensions(kind: ImageKind, data: &[u8]) -> Result<(u32, u32), String> {
    let (width, height) = match kind {
        ImageKind::Png => png(data)?,
        ImageKind::Jpeg => jpeg(data)?,
        ImageKind::Gif => gif(data)?,
        ImageKind::Webp => webp(data)?,
    };
    if width == 0 || height == 0 {
        return Err(format!("its header says it is {width}x{height} pixels"));
    }
    Ok((width, height))
}

fn be16(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_be_bytes([*data.get(at)?, *data.get(at + 1)?])))
}

fn le16(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_le_bytes([*data.get(at)?, *data.get(at + 1)?])))
}

fn le24(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes([*data.get(at)?, *data.get(at + 1)?, *data.get(at + 2)?, 0]))
}

fn be32(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

/// The first chunk must be a 13-byte `IHDR` with a valid depth and colour type, and the file
/// must end with the `IEND` chunk.
fn png(data: &[u8]) -> Result<(u32, u32), String> {
    if data.get(12..16) != Some(b"IHDR") || be32(data, 8) != Some(13) {
        return Err("its first chunk is not the 13-byte IHDR header".into());
    }
    let (width, height) = (be32(data, 16).unwrap_or(0), be32(data, 20).unwrap_or(0));
    if width > i32::MAX as u32 || height > i32::MAX as u32 {
        return Err(format!("its header says it is {width}x{height} pixels"));
    }
    let (depth, colour) = (data.get(24).copied(), data.get(25).copied());
    let valid = matches!(
        (colour, depth),
        (Some(0), Some(1 | 2 | 4 | 8 | 16))
            | (Some(3), Some(1 | 2 | 4 | 8))
            | (Some(2 | 4 | 6), Some(8 | 16))
    );
    if !valid {
        return Err(format!(
            "its header has bit depth {depth:?} with colour type {colour:?}"
        ));
    }
    let end = data.len().checked_sub(8).and_then(|at| data.get(at..at + 4));
    if end != Some(b"IEND") {
        return Err("it does not end with an IEND chunk (cut short?)".into());
    }
    Ok((width, height))
}

/// Segments are walked to the frame header (SOFn) that carries the size.
fn jpeg(data: &[u8]) -> Result<(u32, u32), String> {
    let mut at = 2;
    loop {
        let Some(&0xff) = data.get(at) else {
            return Err(format!("no segment marker at byte {at}"));
        };
        let mut marker_at = at + 1;
        while data.get(marker_at) == Some(&0xff) {
            marker_at += 1;
        }
        let Some(&marker) = data.get(marker_at) else {
            return Err("it ends before its frame header".into());
        };
        match marker {
            0xc0..=0xc3 | 0xc5..=0xc7 | 0xc9..=0xcb | 0xcd..=0xcf => {
                let height = be16(data, marker_at + 4);
                let width = be16(data, marker_at + 6);
                return match (width, height) {
                    (Some(w), Some(h)) => Ok((w, h)),
                    _ => Err("its frame header is cut short".into()),
                };
            }
            0xd8 | 0x01 | 0xd0..=0xd7 => at = marker_at + 1,
            0xd9 | 0xda => return Err("its scan starts before any frame header".into()),
            _ => {
                let Some(length) = be16(data, marker_at + 1).filter(|&l| l >= 2) else {
                    return Err(format!("segment {marker:#04x} has no valid length"));
                };
                at = marker_at + 1 + length as usize;
            }
        }
    }
}

/// The logical screen's size, and the trailer byte at the end.
fn gif(data: &[u8]) -> Result<(u32, u32), String> {
    let (Some(width), Some(height)) = (le16(data, 6), le16(data, 8)) else {
        return Err("its screen descriptor is cut short".into());
    };
    if data.last() != Some(&0x3b) || data.len() < 14 {
        return Err("it does not end with the GIF trailer (cut short?)".into());
    }
    Ok((width, height))
}

/// The RIFF size must fit the file; the first chunk is VP8, VP8L or VP8X, each with its size.
fn webp(data: &[u8]) -> Result<(u32, u32), String> {
    let riff = u32::from_le_bytes(data.get(4..8).and_then(|b| b.try_into().ok()).unwrap_or([0; 4]));
    if (riff as usize).saturating_add(8) > data.len() || riff < 4 {
        return Err(format!(
            "its RIFF size ({riff}) does not fit its {} bytes",
            data.len()
        ));
    }
    match data.get(12..16) {
        Some(b"VP8X") => match (le24(data, 24), le24(data, 27)) {
            (Some(w), Some(h)) => Ok((w + 1, h + 1)),
            _ => Err("its VP8X header is cut short".into()),
        },
        Some(b"VP8L") => {
            if data.get(20) != Some(&0x2f) {
                return Err("its VP8L signature is missing".into());
            }
            let bits = data
                .get(21..25)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_le_bytes)
                .ok_or("its VP8L header is cut short")?;
            Ok(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1))
        }
        Some(b"VP8 ") => {
            if data.get(23..26) != Some(&[0x9d, 0x01, 0x2a]) {
                return Err("its VP8 start code is missing".into());
            }
            match (le16(data, 26), le16(data, 28)) {
                (Some(w), Some(h)) => Ok((w & 0x3fff, h & 0x3fff)),
                _ => Err("its VP8 header is cut short".into()),
            }
        }
        _ => Err("its first chunk is not VP8, VP8L or VP8X".into()),
    }
}

#[cfg(test)]
#[path = "image_tests.rs"]
pub(crate) mod tests;
