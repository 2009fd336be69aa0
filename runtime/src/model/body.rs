//! The request body (issue 13): a long session's request is mostly the history it sent last
//! time. Where the wire format sends one JSON value per history message (OpenAI) and the
//! request carries each message's key (`ModelRequest::keys`, from the log's derived history),
//! each message is serialized once and its bytes reused while its key stays in place; the rest
//! of the body is serialized as usual and the messages spliced in. Without keys, or for a wire
//! format that merges messages (Anthropic's turns), the body is serialized whole.

use std::sync::{Mutex, PoisonError};

use bytes::Bytes;

use super::config::ProviderConfig;
use super::http::Wire;
use super::types::ModelRequest;

/// Serialized history messages of the previous request, by position: (key, bytes).
#[derive(Default)]
pub(crate) struct BodyCache {
    messages: Mutex<Vec<(u64, Bytes)>>,
}

impl BodyCache {
    /// The body of `request`, byte for byte the JSON `W::body` describes (the `messages` key
    /// comes last).
    pub fn body<W: Wire>(
        &self,
        config: &ProviderConfig,
        request: &ModelRequest,
    ) -> serde_json::Result<Vec<u8>> {
        let whole = || serde_json::to_vec(&W::body(config, request));
        if request.keys.len() != request.messages.len() || request.messages.is_empty() {
            return whole();
        }
        let frame = ModelRequest {
            messages: Vec::new(),
            tools: request.tools.clone(),
            max_output_tokens: request.max_output_tokens,
            keys: Vec::new(),
        };
        let mut value = W::body(config, &frame);
        let Some(object) = value.as_object_mut() else {
            return whole();
        };
        if object.remove("messages").is_none() {
            return whole();
        }
        let head = serde_json::to_vec(&value)?;
        let mut cache = self.messages.lock().unwrap_or_else(PoisonError::into_inner);
        let mut next = Vec::with_capacity(request.messages.len());
        for (i, (message, &key)) in request.messages.iter().zip(&request.keys).enumerate() {
            let reused = cache
                .get(i)
                .filter(|(cached, _)| key != 0 && *cached == key)
                .map(|(_, bytes)| bytes.clone());
            let bytes = match reused {
                Some(bytes) => bytes,
                None => match W::message(message) {
                    Some(json) => Bytes::from(serde_json::to_vec(&json)?),
                    None => return whole(),
                },
            };
            next.push((key, bytes));
        }
        let size = head.len() + next.iter().map(|(_, b)| b.len() + 1).sum::<usize>() + 16;
        let mut body = Vec::with_capacity(size);
        body.extend_from_slice(&head[..head.len() - 1]);
        if head.len() > 2 {
            body.push(b',');
        }
        body.extend_from_slice(b"\"messages\":[");
        for (i, (_, bytes)) in next.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(bytes);
        }
        body.extend_from_slice(b"]}");
        *cache = next;
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ProviderKind;
    use crate::model::openai::OpenAi;
    use crate::model::types::{Message, ToolCall, ToolDef, ToolResult};

    fn request(history: usize) -> ModelRequest {
        let mut messages = vec![Message::System { text: "sys".into() }];
        let mut keys = vec![0];
        for i in 0..history {
            messages.push(Message::Assistant {
                text: format!("step {i} \"quoted\""),
                tool_calls: vec![ToolCall {
                    id: format!("c{i}"),
                    name: "read_file".into(),
                    arguments: String::new(),
                }],
            });
            messages.push(Message::Tool(ToolResult {
                call_id: format!("c{i}"),
                content: "line\n".repeat(i),
                is_error: false,
            }));
            keys.extend([2 * i as u64 + 1, 2 * i as u64 + 2]);
        }
        ModelRequest {
            messages,
            tools: vec![ToolDef {
                name: "read_file".into(),
                description: "Read".into(),
                parameters: serde_json::json!({"type": "object"}),
            }],
            max_output_tokens: None,
            keys,
        }
    }

    #[test]
    fn the_spliced_body_is_the_whole_body_and_cached_messages_are_reused() {
        let config = ProviderConfig::new(ProviderKind::Openai, "m", Some("http://127.0.0.1:1/v1"));
        let cache = BodyCache::default();
        for history in [1, 2, 5, 3] {
            let request = request(history);
            let spliced: serde_json::Value =
                serde_json::from_slice(&cache.body::<OpenAi>(&config, &request).unwrap()).unwrap();
            assert_eq!(
                spliced,
                OpenAi::body(&config, &request),
                "history {history}"
            );
        }
        // A key seen before is not serialized again: a changed message under the same key
        // shows its old bytes (keys are unique per content; this proves the reuse).
        let mut changed = request(3);
        changed.messages[1] = Message::User {
            text: "other".into(),
        };
        let body = String::from_utf8(cache.body::<OpenAi>(&config, &changed).unwrap()).unwrap();
        assert!(body.contains("step 0") && !body.contains("other"), "{body}");
        changed.keys[1] = 99;
        let body = String::from_utf8(cache.body::<OpenAi>(&config, &changed).unwrap()).unwrap();
        assert!(body.contains("other"), "{body}");
    }
}
