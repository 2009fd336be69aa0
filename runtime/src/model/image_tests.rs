use super::*;

/// A real 2x3 RGB PNG (checksums and all).
pub(crate) const PNG_2X3: [u8; 74] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
    0x52, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03, 0x08, 0x02, 0x00, 0x00, 0x00, 0x36,
    0x88, 0x49, 0xd6, 0x00, 0x00, 0x00, 0x11, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8,
    0xcf, 0xc0, 0x00, 0x44, 0x60, 0x02, 0x4e, 0x03, 0x00, 0x3e, 0xd6, 0x05, 0xfb, 0x58, 0x82,
    0xcf, 0x46, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A 1x1 GIF89a.
const GIF_1X1: [u8; 35] = [
    0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00,
    0x00, 0xff, 0xff, 0xff, 0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00,
    0x00, 0x00, 0x01, 0x00, 0x3b,
];

#[test]
fn formats_are_told_by_magic_bytes_and_their_headers_give_the_size() {
    let png = ImagePart::from_bytes(PNG_2X3.to_vec()).unwrap();
    assert_eq!((png.kind(), png.width(), png.height()), (ImageKind::Png, 2, 3));
    assert_eq!(png.sha256(), paddock_types::stamp::sha256_hex(&PNG_2X3));
    assert!(png.data_url().starts_with("data:image/png;base64,iVBORw0KGgo"));
    let gif = ImagePart::from_bytes(GIF_1X1.to_vec()).unwrap();
    assert_eq!((gif.media_type(), gif.width(), gif.height()), ("image/gif", 1, 1));
    // A JPEG: SOI, an APP0 segment, then a baseline frame header of 5x7.
    let mut jpeg = vec![0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00];
    jpeg.extend([0xff, 0xc0, 0x00, 0x11, 0x08, 0x00, 0x07, 0x00, 0x05, 0x03]);
    jpeg.extend([0u8; 20]);
    let jpeg = ImagePart::from_bytes(jpeg).unwrap();
    assert_eq!((jpeg.media_type(), jpeg.width(), jpeg.height()), ("image/jpeg", 5, 7));
    // A WebP with an extended header of 640x480.
    let mut webp = b"RIFF".to_vec();
    webp.extend(22u32.to_le_bytes());
    webp.extend(b"WEBPVP8X");
    webp.extend([10, 0, 0, 0, 0, 0, 0, 0]);
    webp.extend([0x7f, 0x02, 0x00, 0xdf, 0x01, 0x00]);
    let webp = ImagePart::from_bytes(webp).unwrap();
    assert_eq!((webp.media_type(), webp.width(), webp.height()), ("image/webp", 640, 480));
    // The name says nothing: text is not an image whatever it is called.
    assert!(matches!(
        ImagePart::from_bytes(b"hello".to_vec()),
        Err(ImageError::NotAnImage(_))
    ));
}

#[test]
fn garbage_behind_a_magic_number_and_oversized_images_are_refused_with_the_reason() {
    let mut garbage = PNG_2X3[..8].to_vec();
    garbage.extend(b"this is not a png at all, only its signature");
    let error = ImagePart::from_bytes(garbage).unwrap_err();
    assert!(matches!(error, ImageError::Malformed { kind: "PNG", .. }), "{error}");
    assert!(error.to_string().contains("IHDR"), "{error}");
    // Cut short: no IEND at the end.
    let error = ImagePart::from_bytes(PNG_2X3[..60].to_vec()).unwrap_err();
    assert!(error.to_string().contains("IEND"), "{error}");
    let mut big = PNG_2X3.to_vec();
    big.resize(MAX_IMAGE_BYTES + 1, 0);
    let error = ImagePart::from_bytes(big).unwrap_err();
    assert_eq!(error, ImageError::TooLarge { bytes: MAX_IMAGE_BYTES + 1 });
    assert!(error.to_string().contains("3750000"), "{error}");
}

#[test]
fn a_tool_output_carries_an_image_and_its_caption_and_text_stays_text() {
    let png = ImagePart::from_bytes(PNG_2X3.to_vec()).unwrap();
    let content = png.to_tool_output("shot.png: PNG image");
    let (image, caption) = ImagePart::from_tool_output(&content).unwrap().unwrap();
    assert_eq!((image, caption.as_str()), (png, "shot.png: PNG image"));
    assert!(ImagePart::from_tool_output("     1\tplain text").is_none());
    let bad = format!("{IMAGE_OUTPUT_PREFIX}!!!\n");
    assert!(matches!(
        ImagePart::from_tool_output(&bad),
        Some(Err(ImageError::Base64(_)))
    ));
    // The bound holds before decoding.
    let huge = format!("{IMAGE_OUTPUT_PREFIX}{}", "A".repeat(MAX_IMAGE_BYTES / 3 * 4 + 64));
    assert!(matches!(
        ImagePart::from_tool_output(&huge),
        Some(Err(ImageError::TooLarge { .. }))
    ));
}

#[test]
fn an_image_part_serializes_as_base64_and_is_checked_again_when_read() {
    let png = ImagePart::from_bytes(PNG_2X3.to_vec()).unwrap();
    let json = serde_json::to_value(&png).unwrap();
    assert_eq!(json["media_type"], "image/png");
    assert_eq!(serde_json::from_value::<ImagePart>(json).unwrap(), png);
    let forged = serde_json::json!({"media_type": "image/png", "data": "aGVsbG8="});
    assert!(serde_json::from_value::<ImagePart>(forged).is_err());
}
