//! The context window and what paddock does as a session fills it: the built-in
//! table of known models' windows, and the `[model]` settings for compaction and ageing,
//! gathered as one `ContextPolicy`.

use super::config::ProviderConfig;

/// When a large result leaves the context (`log/ageing.rs` does it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ageing {
    /// Results older than this many assistant messages...
    pub after_steps: u64,
    /// ...and larger than this many bytes are sent as a stub.
    pub bytes: usize,
}

/// The window assumed for a model the table does not know and the preset does not describe.
/// A server that refuses a request as too long makes paddock compact and retry once, so a
/// guess that is too large costs one refused request, not the session.
pub const DEFAULT_WINDOW: u64 = 128_000;

/// Known models by name prefix (the longest matching prefix wins), in tokens. Override with
/// `[model] context_window`.
const KNOWN: &[(&str, u64)] = &[
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude-", 200_000),
    ("gemini-1.5", 1_048_576),
    ("gemini-2", 1_048_576),
    ("deepseek-chat", 64_000),
    ("deepseek-coder", 128_000),
    ("llama-3.1", 128_000),
    ("llama-3.2", 128_000),
    ("llama-3.3", 128_000),
    ("qwen2.5-coder", 32_768),
    ("qwen3", 32_768),
    ("mistral-large", 128_000),
    ("codestral", 256_000),
];

/// The table's window for `model` (provider prefixes such as `openai/` are ignored).
pub fn known_window(model: &str) -> Option<u64> {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    KNOWN
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, window)| *window)
}

/// How the loop keeps a session inside its model's window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextPolicy {
    /// Tokens.
    pub window: u64,
    /// Fraction of the window at which the history is compacted.
    pub compact_at: f64,
    /// Assistant messages kept verbatim by a compaction.
    pub keep: u32,
    pub ageing: Option<Ageing>,
}

impl ContextPolicy {
    pub fn of(config: &ProviderConfig) -> ContextPolicy {
        ContextPolicy {
            window: config
                .context_window
                .or_else(|| known_window(&config.model))
                .unwrap_or(DEFAULT_WINDOW),
            compact_at: config.compact_at,
            keep: config.compact_keep.max(1),
            ageing: (config.age_after > 0).then(|| Ageing {
                after_steps: u64::from(config.age_after),
                bytes: usize::try_from(config.age_bytes).unwrap_or(usize::MAX),
            }),
        }
    }

    /// The size, in tokens, past which the next request is compacted first.
    pub fn threshold(&self) -> u64 {
        (self.window as f64 * self.compact_at) as u64
    }
}

/// Whether a model error says the request was longer than the model's context. Servers word
/// it differently; these are the wordings of OpenAI, Anthropic, vLLM, llama.cpp and Ollama.
pub fn is_overflow(status: u16, body: &str) -> bool {
    const WORDS: &[&str] = &[
        "context_length_exceeded",
        "context length",
        "context window",
        "maximum context",
        "prompt is too long",
        "too many tokens",
        "exceeds the available context",
        "input is too long",
        "reduce the length",
    ];
    let body = body.to_ascii_lowercase();
    matches!(status, 400 | 413 | 422) && WORDS.iter().any(|w| body.contains(w))
}

/// The window a refusal states, in tokens, when its wording gives one: OpenAI's and vLLM's
/// "maximum context length is N tokens", Anthropic's "N tokens > M maximum", llama.cpp's
/// "available context size (N tokens)", TGI's "must be <= N".
pub fn revealed_window(body: &str) -> Option<u64> {
    let body = body.to_ascii_lowercase();
    let number_after = |marker: &str| {
        let at = body.find(marker)? + marker.len();
        let digits: String = body[at..]
            .chars()
            .skip_while(|c| *c == ' ')
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse::<u64>().ok().filter(|n| *n > 0)
    };
    const AFTER: &[&str] = &[
        "maximum context length is",
        "available context size (",
        "context window of",
        "must be <=",
    ];
    AFTER.iter().find_map(|m| number_after(m)).or_else(|| {
        // "prompt is too long: 210000 tokens > 200000 maximum"
        let at = body.find(" maximum")?;
        let before = body[..at].rsplit('>').next()?.trim().replace(',', "");
        before.parse::<u64>().ok().filter(|n| *n > 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ProviderKind;

    #[test]
    fn the_table_knows_common_models_and_the_preset_overrides_it() {
        assert_eq!(known_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(known_window("openai/gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(known_window("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(known_window("my-local-model"), None);
        let mut config = ProviderConfig::new(ProviderKind::Openai, "my-local-model", None);
        assert_eq!(ContextPolicy::of(&config).window, DEFAULT_WINDOW);
        config.context_window = Some(8192);
        let policy = ContextPolicy::of(&config);
        assert_eq!(policy.window, 8192);
        assert_eq!(policy.threshold(), 6553);
    }

    #[test]
    fn context_keys_go_through_the_strict_preset_parser() {
        let text = "[model]\nprovider = \"openai\"\nmodel = \"m\"\ncontext_window = 8000\n\
                    compact_at = 0.7\ncompact_keep = 2\nage_after = 3\nage_bytes = 100\n";
        let file = crate::preset::parse("p.toml", text).expect("parses");
        let policy = ContextPolicy::of(file.model.as_ref().expect("model"));
        assert_eq!(policy.threshold(), 5600);
        assert_eq!(policy.keep, 2);
        assert_eq!(
            policy.ageing.map(|a| (a.after_steps, a.bytes)),
            Some((3, 100))
        );
        let bad = text.replace("0.7", "1.5");
        let error = crate::preset::parse("p.toml", &bad)
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("p.toml:5:"), "{error}");
        assert!(error.contains("between 0.1 and 0.95"), "{error}");
        let typo = text.replace("age_after", "age_afer");
        let error = crate::preset::parse("p.toml", &typo)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("p.toml:7:") && error.contains("age_after"),
            "{error}"
        );
    }

    #[test]
    fn overflow_errors_are_recognised_by_status_and_wording() {
        assert!(is_overflow(
            400,
            "This model's maximum context length is 8192 tokens"
        ));
        assert!(is_overflow(
            400,
            "prompt is too long: 210000 tokens > 200000"
        ));
        assert!(!is_overflow(500, "maximum context length"));
        assert!(!is_overflow(400, "invalid tool schema"));
    }

    #[test]
    fn a_refusal_that_states_the_window_reveals_it() {
        let cases = [
            (
                "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
                Some(8192),
            ),
            (
                "prompt is too long: 210000 tokens > 200,000 maximum",
                Some(200_000),
            ),
            (
                "request (5000 tokens) exceeds the available context size (4096 tokens), try increasing it",
                Some(4096),
            ),
            (
                "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 2048. Given: 3000",
                Some(2048),
            ),
            (
                "the request exceeds the available context size, try increasing it",
                None,
            ),
            ("context_length_exceeded", None),
        ];
        for (body, window) in cases {
            assert_eq!(revealed_window(body), window, "{body}");
        }
    }
}
