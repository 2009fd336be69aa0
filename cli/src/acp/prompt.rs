//! An editor's prompt as the message the model reads: text as is, resources as text with their
//! URI, images decoded and checked as `run --image` checks a file. The editor is untrusted
//! input: nothing it sends is believed (an image's `mimeType` is checked against its bytes).

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use agent_client_protocol::{Error, ErrorCode};
use paddock::model::{ImageKind, ImagePart};
use paddock_types::text::sanitize;

/// The most images one prompt may carry: Anthropic takes a request of at most 32 MB, which
/// holds eight images at the bound each image has (`MAX_IMAGE_BYTES`, 5 MB as base64).
const MAX_PROMPT_IMAGES: usize = 8;

/// The prompt's content as the message the model reads: text as is, a resource the editor
/// embedded with its URI, a linked one by its URI; images (when `images`, what `initialize`
/// offered) decoded and checked as `run --image` checks a file (format by magic bytes, header,
/// size), at most `MAX_PROMPT_IMAGES`. Audio is refused.
pub(super) fn content(
    blocks: &[ContentBlock],
    images: bool,
) -> Result<(String, Vec<ImagePart>), Error> {
    let mut parts = Vec::new();
    let mut attached = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("[{}]({})", link.name, link.uri))
            }
            ContentBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(text) => {
                    parts.push(format!(
                        "<resource uri=\"{}\">\n{}\n</resource>",
                        text.uri, text.text
                    ));
                }
                _ => {
                    return Err(refused(
                        "paddock takes embedded resources as text only; send a binary file as a resource_link".into(),
                    ));
                }
            },
            ContentBlock::Image(image) if images => {
                if attached.len() == MAX_PROMPT_IMAGES {
                    return Err(refused(format!(
                        "the prompt has more than {MAX_PROMPT_IMAGES} images, the most one prompt may carry; send the others in a later prompt"
                    )));
                }
                attached.push(one_image(&image.data, &image.mime_type, attached.len())?);
            }
            _ => {
                let offered = if images {
                    "text, image, resource and resource_link"
                } else {
                    "text, resource and resource_link (no image: the model new sessions start with takes no images)"
                };
                return Err(refused(format!(
                    "paddock takes {offered} prompt blocks; its promptCapabilities offer no audio"
                )));
            }
        }
    }
    let text = parts.join("\n\n");
    if text.trim().is_empty() {
        return Err(refused(
            "the prompt has no text; send at least one text block".into(),
        ));
    }
    Ok((text, attached))
}

/// Image `index` of a prompt: its bytes decide its format, and a `mimeType` naming another
/// known format is refused rather than believed.
fn one_image(data: &str, mime_type: &str, index: usize) -> Result<ImagePart, Error> {
    let number = index + 1;
    let image = ImagePart::from_base64(data.trim())
        .map_err(|e| refused(format!("image {number} of the prompt was refused: {e}")))?;
    if ImageKind::of_media_type(mime_type.trim()).is_some_and(|said| said != image.kind()) {
        return Err(refused(format!(
            "image {number} of the prompt says mimeType `{}` but its bytes are {}; send its real type",
            sanitize(&paddock_types::text::one_line(mime_type, 80)),
            image.media_type()
        )));
    }
    Ok(image)
}

/// The editor sent what cannot be taken.
fn refused(message: String) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, message)
}
