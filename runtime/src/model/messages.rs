//! The conversation of one request: messages of its own and runs it shares with the
//! history they were derived from, so making (or cloning) a request copies no message. Each
//! message carries a key, unique per content (0: unknown), so a provider may reuse what it
//! serialized for the same key in an earlier request (`body::BodyCache`).

use std::sync::Arc;

use super::types::{Message, ToolDef};

/// A message and its key (0: unknown, never reused by key).
#[derive(Debug, Clone, PartialEq)]
pub struct Keyed {
    pub key: u64,
    pub message: Arc<Message>,
}

impl Keyed {
    /// `message` with key 0.
    pub fn unkeyed(message: Message) -> Keyed {
        Keyed {
            key: 0,
            message: Arc::new(message),
        }
    }
}

/// The messages of a request, in order; see the module doc.
#[derive(Debug, Clone, Default)]
pub struct Messages {
    parts: Vec<Part>,
    len: usize,
}

#[derive(Debug, Clone)]
enum Part {
    One(Keyed),
    /// A run shared with whoever made it (the derived history): never changed once shared.
    Run(Arc<Vec<Keyed>>),
}

impl Part {
    fn slice(&self) -> &[Keyed] {
        match self {
            Part::One(keyed) => std::slice::from_ref(keyed),
            Part::Run(run) => run.as_slice(),
        }
    }
}

impl Messages {
    /// Appends a message of this request's own (key 0).
    pub fn push(&mut self, message: Message) {
        self.push_keyed(Keyed::unkeyed(message));
    }

    pub fn push_keyed(&mut self, keyed: Keyed) {
        self.len += 1;
        self.parts.push(Part::One(keyed));
    }

    /// Appends a shared run of messages without copying them.
    pub fn push_run(&mut self, run: Arc<Vec<Keyed>>) {
        if !run.is_empty() {
            self.len += run.len();
            self.parts.push(Part::Run(run));
        }
    }

    /// Appends all of `other`, sharing what it shares.
    pub fn append(&mut self, other: Messages) {
        self.len += other.len;
        self.parts.extend(other.parts);
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The messages with their keys, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Keyed> {
        self.parts.iter().flat_map(Part::slice)
    }

    /// The messages, in order.
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.iter().map(|k| k.message.as_ref())
    }

    /// The message at `index` with its key.
    pub fn get(&self, mut index: usize) -> Option<&Keyed> {
        for part in &self.parts {
            let slice = part.slice();
            match slice.get(index) {
                Some(keyed) => return Some(keyed),
                None => index -= slice.len(),
            }
        }
        None
    }

    /// The keys, in order.
    pub fn keys(&self) -> Vec<u64> {
        self.iter().map(|k| k.key).collect()
    }

    /// Owned copies of the messages.
    pub fn to_vec(&self) -> Vec<Message> {
        self.messages().cloned().collect()
    }
}

impl PartialEq for Messages {
    fn eq(&self, other: &Messages) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl From<Vec<Message>> for Messages {
    fn from(messages: Vec<Message>) -> Messages {
        messages.into_iter().collect()
    }
}

impl FromIterator<Message> for Messages {
    fn from_iter<I: IntoIterator<Item = Message>>(iter: I) -> Messages {
        let mut messages = Messages::default();
        messages.extend(iter);
        messages
    }
}

impl Extend<Message> for Messages {
    fn extend<I: IntoIterator<Item = Message>>(&mut self, iter: I) {
        for message in iter {
            self.push(message);
        }
    }
}

/// What one model request asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelRequest {
    /// The conversation, each message with its key; shared with the history it came from.
    pub messages: Messages,
    pub tools: Vec<ToolDef>,
    /// Overrides the provider's configured `max_output_tokens` for this request.
    pub max_output_tokens: Option<u32>,
    /// What a provider may route its prompt cache by: the session (OpenAI's `prompt_cache_key`).
    pub cache_key: Option<String>,
    /// How many leading messages an earlier request of the session sent exactly as they are
    /// here: a provider that caches only up to explicit breakpoints (Anthropic) marks their end,
    /// so this request reads what that one wrote.
    pub cached_prefix: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Message {
        Message::User { images: Vec::new(), text: text.into() }
    }

    #[test]
    fn parts_read_as_one_sequence_and_runs_are_shared_not_copied() {
        let run = Arc::new(vec![
            Keyed {
                key: 1,
                message: Arc::new(user("a")),
            },
            Keyed {
                key: 2,
                message: Arc::new(user("b")),
            },
        ]);
        let mut messages = Messages::from(vec![user("sys")]);
        messages.push_run(Arc::clone(&run));
        messages.push_run(Arc::new(Vec::new()));
        messages.push(user("c"));
        assert_eq!(messages.len(), 4);
        assert_eq!(messages.keys(), vec![0, 1, 2, 0]);
        assert_eq!(messages.get(2).map(|k| k.key), Some(2));
        assert_eq!(
            messages.get(3).map(|k| k.message.as_ref()),
            Some(&user("c"))
        );
        assert!(messages.get(4).is_none());
        let copy = messages.clone();
        assert_eq!(copy, messages);
        assert_eq!(Arc::strong_count(&run), 3, "the run is shared, not copied");
        let texts = ["sys", "a", "b", "c"].map(user).to_vec();
        assert_eq!(messages.to_vec(), texts);
        assert_ne!(
            Messages::from(texts),
            messages,
            "keys are part of a request"
        );
    }
}
