//! Images as tool results. The WIT result is text, so an image travels as a marked text: the
//! host (`paddock::model::ImagePart::from_tool_output`) reads it back, checks the image itself
//! (format by magic bytes, header, size bound) and shows it to the model as an image; a
//! model configured as text-only is told in words what it cannot see.

/// How an image result starts; the host reads the same prefix.
pub const IMAGE_OUTPUT_PREFIX: &str = "\u{1}paddock-image;base64,";

/// The largest image the host sends on (3.75 MB, which is 5 MB as base64); a larger one is
/// refused with a result that says so, so a tool had better say it first.
pub const MAX_IMAGE_BYTES: usize = 3_750_000;

/// The format `bytes` start like, by magic bytes alone: `Some("PNG")`, `"JPEG"`, `"GIF"`,
/// `"WebP"`, or `None` for anything else.
pub fn image_format(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("PNG")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("JPEG")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("GIF")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("WebP")
    } else {
        None
    }
}

/// `bytes` as the text of an image result, with `caption` (one line the model reads with it).
pub fn image_content(bytes: &[u8], caption: &str) -> String {
    let mut text = String::with_capacity(IMAGE_OUTPUT_PREFIX.len() + bytes.len() / 3 * 4 + 8);
    text.push_str(IMAGE_OUTPUT_PREFIX);
    base64(bytes, &mut text);
    text.push('\n');
    text.push_str(caption);
    text
}

/// Standard base64 with padding.
fn base64(bytes: &[u8], out: &mut String) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> shift) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard_alphabet_with_padding() {
        let mut out = String::new();
        base64(b"paddock!", &mut out);
        assert_eq!(out, "cGFkZG9jayE=");
        assert!(image_content(b"\x89PNG", "x").starts_with(IMAGE_OUTPUT_PREFIX));
        assert_eq!(image_format(b"GIF89a...."), Some("GIF"));
        assert_eq!(image_format(b"hello"), None);
    }
}
