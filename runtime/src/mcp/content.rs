//! What an MCP server's tool result becomes for the model (S5): every content block as text,
//! bounded by the tool's output budget, except images, which are kept typed.
//!
//! - text: as sent;
//! - an embedded text resource: its URI and MIME type on a header line, then its text;
//! - a resource link, or an embedded binary resource: a line naming it by URI (and name, type,
//!   size where given), never its contents. paddock does not follow the link: a URI is the
//!   server's word, and reading it (`file:///etc/shadow`) would hand the server paddock's
//!   reach, so it is only ever shown;
//! - an image: decoded and checked (a known image type whose bytes start as that type says,
//!   within [`MAX_IMAGE_BYTES`]) and kept as [`Part::Image`]; [`output_of`] hands the first one
//!   to the model layer as an image (`model::ImagePart`, checked again there), the rest as
//!   placeholder lines. A claim that does not hold (bad base64, a type the bytes contradict,
//!   too large) is a text line saying so;
//! - audio and anything else: a line naming its type.
//!
//! The server is untrusted: each text is cut at the budget, blocks past the budget are
//! counted, not kept, and a URI, name or type is cut to one short line (a newline in a URI
//! cannot start a line of its own).

use base64::Engine;
use rmcp::model::{ContentBlock, ResourceContents};

use paddock_types::text::{one_line, prefix_bytes};

/// The largest image kept (decoded bytes); larger ones are named, not kept.
pub const MAX_IMAGE_BYTES: usize = 5 << 20;
/// How much of a URI, name or MIME type a header line shows.
const LABEL_CHARS: usize = 300;

/// One block of a tool result, as paddock keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Text(String),
    /// An image whose bytes are of the type `mime` names (checked).
    Image { mime: String, bytes: Vec<u8> },
}

impl Part {
    /// The part as text for a model that gets text only.
    pub fn as_text(&self) -> String {
        match self {
            Part::Text(text) => text.clone(),
            Part::Image { mime, bytes } => format!(
                "[image from the MCP server: {mime}, {} bytes; not shown to the model]",
                bytes.len()
            ),
        }
    }
}

/// The blocks of a result, in order, within `budget` bytes of text.
pub fn parts(content: &[ContentBlock], budget: usize) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut used = 0usize;
    let mut left_out = 0usize;
    for block in content {
        if used >= budget {
            left_out += 1;
            continue;
        }
        let part = match block {
            ContentBlock::Text(text) => Part::Text(text.text.clone()),
            ContentBlock::Resource(embedded) => Part::Text(resource(&embedded.resource)),
            ContentBlock::ResourceLink(link) => {
                let mut line = format!(
                    "[resource link: {} <{}>",
                    label(&link.name),
                    label(&link.uri)
                );
                if let Some(mime) = &link.mime_type {
                    line.push_str(&format!(", {}", label(mime)));
                }
                if let Some(size) = link.size {
                    line.push_str(&format!(", {size} bytes"));
                }
                if let Some(description) = &link.description {
                    line.push_str(&format!(": {}", label(description)));
                }
                line.push_str("; not fetched]");
                Part::Text(line)
            }
            ContentBlock::Image(image) => image_part(&image.data, &image.mime_type),
            ContentBlock::Audio(audio) => Part::Text(format!(
                "[audio from the MCP server ({}); not shown]",
                label(&audio.mime_type)
            )),
            other => Part::Text(format!("[{} content not shown]", kind(other))),
        };
        let part = match part {
            Part::Text(text) => Part::Text(cut(text, budget - used)),
            image => image,
        };
        used += match &part {
            Part::Text(text) => text.len() + 1,
            Part::Image { .. } => 0,
        };
        parts.push(part);
    }
    if left_out > 0 {
        parts.push(Part::Text(format!(
            "[{left_out} more content block(s) past the output budget not shown]"
        )));
    }
    parts
}

/// The parts as one text for the model, one part per line.
/// A successful result's output: with an image, the first image that the model layer accepts
/// (as `ImagePart::to_tool_output`, so the pipeline sends it as an image part) captioned by the
/// other parts' text; otherwise the parts' text.
pub fn output_of(parts: &[Part]) -> String {
    let first = parts.iter().enumerate().find_map(|(i, part)| match part {
        Part::Image { bytes, .. } => crate::model::ImagePart::from_bytes(bytes.clone())
            .ok()
            .map(|image| (i, image)),
        Part::Text(_) => None,
    });
    let Some((at, image)) = first else {
        return text_of(parts);
    };
    let caption = parts
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != at)
        .map(|(_, part)| part.as_text())
        .collect::<Vec<_>>()
        .join("\n");
    image.to_tool_output(&caption)
}

pub fn text_of(parts: &[Part]) -> String {
    parts
        .iter()
        .map(Part::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

fn resource(contents: &ResourceContents) -> String {
    match contents {
        ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text,
            ..
        } => {
            let mime = mime_type
                .as_deref()
                .map(|m| format!(" ({})", label(m)))
                .unwrap_or_default();
            format!("[resource <{}>{mime}]\n{text}", label(uri))
        }
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } => format!(
            "[binary resource <{}> ({}, about {} bytes); not shown]",
            label(uri),
            label(mime_type.as_deref().unwrap_or("no type given")),
            blob.len() / 4 * 3
        ),
        _ => "[resource of a kind paddock does not know; not shown]".into(),
    }
}

/// The `type` a block names on the wire, for a kind this version of rmcp adds later.
fn kind(block: &ContentBlock) -> String {
    serde_json::to_value(block)
        .ok()
        .and_then(|v| v["type"].as_str().map(label))
        .unwrap_or_else(|| "other".into())
}

/// An image block kept when its claim holds, else a line saying what was wrong.
fn image_part(data: &str, claimed: &str) -> Part {
    // Base64 is 4 characters per 3 bytes: a larger text is rejected before decoding.
    if data.len() / 4 * 3 > MAX_IMAGE_BYTES {
        return Part::Text(format!(
            "[image from the MCP server ({}) over {MAX_IMAGE_BYTES} bytes; not shown]",
            label(claimed)
        ));
    }
    let bytes = match base64::engine::general_purpose::STANDARD.decode(data.trim()) {
        Ok(bytes) => bytes,
        Err(e) => {
            return Part::Text(format!(
                "[image from the MCP server ({}) that is not valid base64 ({e}); not shown]",
                label(claimed)
            ));
        }
    };
    let mime = claimed.trim().to_ascii_lowercase();
    match sniffed(&bytes) {
        Some(found) if found == mime => Part::Image { mime, bytes },
        found => Part::Text(format!(
            "[content from the MCP server claimed to be an image ({}) but its bytes are {}; \
             not shown]",
            label(claimed),
            found.unwrap_or("not a PNG, JPEG, GIF or WebP image")
        )),
    }
}

/// The image type the bytes start as, of those models accept.
fn sniffed(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// A server-chosen string for one header line.
fn label(text: &str) -> String {
    one_line(text, LABEL_CHARS)
}

/// `text` within `room` bytes, the cut said.
fn cut(text: String, room: usize) -> String {
    if text.len() <= room {
        return text;
    }
    let head = prefix_bytes(&text, room);
    format!(
        "{head}\n[… {} bytes of this block cut: over the output budget]",
        text.len() - head.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ContentBlock, EmbeddedResource, Resource};

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn resources_and_links_become_text_with_their_uri_and_nothing_is_fetched() {
        let embedded = ContentBlock::Resource(EmbeddedResource::new(ResourceContents::text(
            "the notes",
            "demo://notes/1",
        )));
        let link = ContentBlock::ResourceLink(Resource::new(
            "file:///etc/shadow\n[forged line]",
            "shadow",
        ));
        let text = text_of(&parts(&[embedded, link], 4096));
        assert!(
            text.starts_with("[resource <demo://notes/1> (text/plain)]\nthe notes\n"),
            "{text}"
        );
        assert!(text.contains("[resource link: shadow <file:///etc/shadow"), "{text}");
        assert!(!text.contains("\n[forged line]"), "a URI kept to one line: {text}");
        assert!(text.contains("not fetched"), "{text}");
    }

    #[test]
    fn a_huge_resource_and_the_blocks_after_it_stay_within_the_budget() {
        let huge = ContentBlock::Resource(EmbeddedResource::new(ResourceContents::text(
            "x".repeat(1 << 20),
            "demo://huge",
        )));
        let more = ContentBlock::text("after");
        let parts = parts(&[huge, more.clone(), more], 1000);
        let text = text_of(&parts);
        assert!(text.len() < 1200, "{} bytes", text.len());
        assert!(text.contains("bytes of this block cut"), "{text}");
        assert!(text.ends_with("[2 more content block(s) past the output budget not shown]"));
    }

    #[test]
    fn the_first_image_goes_on_as_an_image_captioned_by_the_rest() {
        let png = crate::model::image_tests_png();
        let blocks = [
            ContentBlock::text("before"),
            ContentBlock::image(b64(png), "image/png"),
            ContentBlock::image(b64(png), "image/png"),
        ];
        let output = output_of(&parts(&blocks, 10_000));
        let (image, caption) = crate::model::ImagePart::from_tool_output(&output)
            .expect("an image output")
            .expect("a valid image");
        assert_eq!((image.width(), image.height()), (2, 3));
        assert!(caption.starts_with("before\n[image from the MCP server"), "{caption}");
        let text_only = output_of(&parts(&[ContentBlock::text("just text")], 100));
        assert_eq!(text_only, "just text");
    }

    #[test]
    fn an_image_is_kept_typed_only_when_its_bytes_are_what_it_claims() {
        let real = ContentBlock::image(b64(PNG), "image/png");
        assert_eq!(
            parts(&[real], 100),
            [Part::Image {
                mime: "image/png".into(),
                bytes: PNG.to_vec()
            }]
        );
        let lying = ContentBlock::image(b64(b"#!/bin/sh\nrm -rf /\n"), "image/png");
        let renamed = ContentBlock::image(b64(PNG), "image/jpeg");
        let garbage = ContentBlock::image("not base64 !!!", "image/png");
        for (block, says) in [
            (lying, "not a PNG, JPEG, GIF or WebP image"),
            (renamed, "its bytes are image/png"),
            (garbage, "not valid base64"),
        ] {
            let got = parts(&[block], 1000);
            match &got[..] {
                [Part::Text(text)] => assert!(text.contains(says), "{text}"),
                other => panic!("kept as an image: {other:?}"),
            }
        }
        let big = ContentBlock::image("A".repeat(MAX_IMAGE_BYTES / 3 * 4 + 8), "image/png");
        assert!(text_of(&parts(&[big], 1000)).contains("over 5242880 bytes"));
    }
}
