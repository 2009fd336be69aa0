//! `ProviderConfig`: how to reach one model, as written under `[model]` in a preset.
//!
//! M1 (OpenAI Chat Completions or Anthropic Messages, any compatible base URL), L4 (retry
//! policy and budget), P1 (a preset chooses the model; unknown keys are errors). Times are in
//! milliseconds so tests can use short ones. The API key is never stored here, only the name of
//! the environment variable that holds it.

use super::attempt::RetryPolicy;
use super::price::Price;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// The wire format spoken by the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI Chat Completions; also vLLM, llama.cpp, Ollama, OpenRouter and others.
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

impl std::str::FromStr for ProviderKind {
    type Err = String;

    /// `openai` or `anthropic`, as a preset's `provider` key spells them.
    fn from_str(name: &str) -> Result<ProviderKind, String> {
        match name {
            "openai" => Ok(ProviderKind::Openai),
            "anthropic" => Ok(ProviderKind::Anthropic),
            other => Err(format!(
                "`{other}` is not a provider: use openai (also for vLLM, llama.cpp, Ollama) or \
                 anthropic"
            )),
        }
    }
}

/// Which request field carries the output limit for an OpenAI-compatible server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensField {
    /// `max_completion_tokens` for OpenAI's own API, `max_tokens` for any other base URL.
    Auto,
    /// The current OpenAI name (required by its reasoning models).
    MaxCompletionTokens,
    /// The older name, which every compatible server accepts.
    MaxTokens,
}

/// Whether the model may, must or must not call a tool, sent as `tool_choice` whenever tools
/// are offered. Some servers (llama-cpp-python) drop the tools when it is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (OpenAI's own default).
    Auto,
    /// Every response must call a tool; the loop then ends only by a budget or the user.
    Required,
    /// Tools are described but may not be called.
    None,
}

/// How long a provider keeps what a request asks it to cache (Anthropic's `cache_control`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
pub enum CacheTtl {
    /// No breakpoint is sent: nothing is cached.
    #[serde(rename = "off")]
    Off,
    /// The API's default; a write costs 1.25 times the input price.
    #[serde(rename = "5m")]
    FiveMinutes,
    /// A write costs twice the input price; worth it when turns are more than five minutes apart.
    #[serde(rename = "1h")]
    OneHour,
}

#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    #[serde(rename = "provider")]
    pub kind: ProviderKind,
    pub model: String,
    /// Default: `https://api.openai.com/v1` or `https://api.anthropic.com`.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the API key; none means no key is sent (local servers).
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub extra_headers: BTreeMap<String, String>,
    #[serde(default = "defaults::connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// Time allowed until the response headers arrive.
    #[serde(default = "defaults::request_timeout_ms")]
    pub request_timeout_ms: u64,
    /// Time allowed without a single byte of the streamed body; then the attempt fails.
    #[serde(default = "defaults::idle_timeout_ms")]
    pub idle_timeout_ms: u64,
    /// Wall-clock time one attempt may take from request to end of stream, however steadily it
    /// streams; a stream still going then is cut and the attempt fails (not retried).
    #[serde(default = "defaults::attempt_timeout_ms")]
    pub attempt_timeout_ms: u64,
    /// Retries after the first attempt.
    #[serde(default = "defaults::max_retries")]
    pub max_retries: u32,
    #[serde(default = "defaults::retry_base_ms")]
    pub retry_base_ms: u64,
    #[serde(default = "defaults::retry_max_ms")]
    pub retry_max_ms: u64,
    /// Total time one request may spend waiting between attempts.
    #[serde(default = "defaults::retry_budget_ms")]
    pub retry_budget_ms: u64,
    /// Output limit per response; `DEFAULT_MAX_OUTPUT_TOKENS` when unset (servers' own
    /// defaults are often unlimited).
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    #[serde(default = "defaults::max_tokens_field")]
    pub max_tokens_field: MaxTokensField,
    #[serde(default = "defaults::tool_choice")]
    pub tool_choice: ToolChoice,
    #[serde(default)]
    pub temperature: Option<f32>,
    #[serde(default = "defaults::anthropic_version")]
    pub anthropic_version: String,
    /// Overrides the built-in price table for this model.
    #[serde(default)]
    pub price: Option<Price>,
    /// The model's context window in tokens; unset: the built-in table
    /// (`context::known_window`), else `context::DEFAULT_WINDOW`.
    #[serde(default)]
    pub context_window: Option<u64>,
    /// Compact the history when the next request would pass this fraction of the window
    /// (0.1 to 0.95).
    #[serde(default = "defaults::compact_at", deserialize_with = "fraction")]
    pub compact_at: f64,
    /// Assistant messages (with their calls' results) a compaction keeps verbatim.
    #[serde(default = "defaults::compact_keep")]
    pub compact_keep: u32,
    /// Tool results older than this many assistant messages and larger than `age_bytes` are
    /// sent as a stub naming where the whole result stays readable; 0 turns this off.
    #[serde(default = "defaults::age_after")]
    pub age_after: u32,
    #[serde(default = "defaults::age_bytes")]
    pub age_bytes: u64,
    /// Anthropic: how long what the request's cache breakpoints mark is kept (`"5m"`, `"1h"`),
    /// or `"off"` to send none.
    #[serde(default = "defaults::cache_ttl")]
    pub cache_ttl: CacheTtl,
    /// OpenAI wire: send the session id as `prompt_cache_key`, so its requests reach the same
    /// cache. Unset: only to OpenAI's own API (other servers may refuse an unknown field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<bool>,
    /// Whether the model is sent images (a user's attachments, images tools return); when
    /// not, each image is a text placeholder that says so. Unset: yes for Anthropic and for
    /// OpenAI's own API, no for any other OpenAI-compatible server (many local models take
    /// text only, and refuse a request with an image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vision: Option<bool>,
    /// Anthropic: extended thinking with this many tokens of budget (`thinking.budget_tokens`,
    /// at least 1024 and below the output limit). Unset: the API's default, no thinking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<u32>,
}

mod defaults {
    use super::MaxTokensField;
    pub fn connect_timeout_ms() -> u64 {
        10_000
    }
    pub fn request_timeout_ms() -> u64 {
        120_000
    }
    pub fn idle_timeout_ms() -> u64 {
        90_000
    }
    pub fn attempt_timeout_ms() -> u64 {
        600_000
    }
    pub fn tool_choice() -> super::ToolChoice {
        super::ToolChoice::Auto
    }
    pub fn max_retries() -> u32 {
        4
    }
    pub fn retry_base_ms() -> u64 {
        500
    }
    pub fn retry_max_ms() -> u64 {
        8_000
    }
    pub fn retry_budget_ms() -> u64 {
        60_000
    }
    pub fn max_tokens_field() -> MaxTokensField {
        MaxTokensField::Auto
    }
    pub fn anthropic_version() -> String {
        "2023-06-01".into()
    }
    pub fn compact_at() -> f64 {
        0.8
    }
    pub fn compact_keep() -> u32 {
        4
    }
    pub fn age_after() -> u32 {
        8
    }
    pub fn age_bytes() -> u64 {
        4096
    }
    pub fn cache_ttl() -> super::CacheTtl {
        super::CacheTtl::FiveMinutes
    }
}

/// The output limit sent when the preset sets none (Anthropic requires one; many
/// OpenAI-compatible servers default to unlimited).
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 8192;

impl ProviderConfig {
    /// A configuration with every default, for `kind`, `model` and `base_url`.
    pub fn new(kind: ProviderKind, model: &str, base_url: Option<&str>) -> ProviderConfig {
        ProviderConfig {
            kind,
            model: model.to_owned(),
            base_url: base_url.map(str::to_owned),
            api_key_env: None,
            extra_headers: BTreeMap::new(),
            connect_timeout_ms: defaults::connect_timeout_ms(),
            request_timeout_ms: defaults::request_timeout_ms(),
            idle_timeout_ms: defaults::idle_timeout_ms(),
            attempt_timeout_ms: defaults::attempt_timeout_ms(),
            max_retries: defaults::max_retries(),
            retry_base_ms: defaults::retry_base_ms(),
            retry_max_ms: defaults::retry_max_ms(),
            retry_budget_ms: defaults::retry_budget_ms(),
            max_output_tokens: None,
            max_tokens_field: defaults::max_tokens_field(),
            tool_choice: defaults::tool_choice(),
            temperature: None,
            anthropic_version: defaults::anthropic_version(),
            price: None,
            context_window: None,
            compact_at: defaults::compact_at(),
            compact_keep: defaults::compact_keep(),
            age_after: defaults::age_after(),
            age_bytes: defaults::age_bytes(),
            cache_ttl: defaults::cache_ttl(),
            prompt_cache_key: None,
            vision: None,
            thinking_budget: None,
        }
    }

    /// The base URL without a trailing slash.
    pub fn base_url(&self) -> &str {
        let url = match (&self.base_url, self.kind) {
            (Some(url), _) => url.as_str(),
            (None, ProviderKind::Openai) => "https://api.openai.com/v1",
            (None, ProviderKind::Anthropic) => "https://api.anthropic.com",
        };
        url.trim_end_matches('/')
    }

    /// The output limit of one response: the preset's, else the default.
    pub fn output_limit(&self) -> u32 {
        self.max_output_tokens.unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS)
    }

    /// The price responses are charged at: the preset's, else the table's for this model
    /// (cache writes at the hour price when they are kept an hour); `None` when neither knows
    /// the model, so its responses cost nothing to the budget.
    pub fn price_in_force(&self) -> Option<Price> {
        self.price.or_else(|| {
            let table = super::price::lookup(&self.model)?;
            Some(match self.cache_ttl {
                CacheTtl::OneHour => table.with_hour_writes(),
                _ => table,
            })
        })
    }

    /// Whether the base URL is OpenAI's own API.
    fn openai_itself(&self) -> bool {
        self.base_url()
            .split("://")
            .nth(1)
            .and_then(|rest| rest.split(['/', ':']).next())
            .is_some_and(|host| host.eq_ignore_ascii_case("api.openai.com"))
    }

    /// Whether images are sent to this model, or a placeholder for each (`vision`).
    pub fn accepts_images(&self) -> bool {
        self.vision.unwrap_or_else(|| match self.kind {
            ProviderKind::Anthropic => true,
            ProviderKind::Openai => self.openai_itself(),
        })
    }

    /// Whether `prompt_cache_key` is sent (OpenAI wire): unset, to OpenAI's own API only.
    pub fn sends_cache_key(&self) -> bool {
        self.prompt_cache_key
            .unwrap_or_else(|| self.openai_itself())
    }

    /// The request field for the output limit (OpenAI wire): `Auto` resolved by base URL.
    pub fn max_tokens_field_name(&self) -> &'static str {
        let openai_itself = self.openai_itself();
        match self.max_tokens_field {
            MaxTokensField::Auto if openai_itself => "max_completion_tokens",
            MaxTokensField::Auto | MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        }
    }

    pub fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_retries: self.max_retries,
            base: Duration::from_millis(self.retry_base_ms),
            max: Duration::from_millis(self.retry_max_ms),
            budget: Duration::from_millis(self.retry_budget_ms),
        }
    }

    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }

    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }

    pub fn idle_timeout(&self) -> Duration {
        Duration::from_millis(self.idle_timeout_ms)
    }

    pub fn attempt_timeout(&self) -> Duration {
        Duration::from_millis(self.attempt_timeout_ms)
    }
}

/// `compact_at`: a fraction between 0.1 and 0.95 (the preset parser reports a value outside
/// with its file, line and column).
fn fraction<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    let value = <f64 as serde::Deserialize>::deserialize(deserializer)?;
    if (0.1..=0.95).contains(&value) {
        Ok(value)
    } else {
        Err(serde::de::Error::custom(format!(
            "compact_at must be between 0.1 and 0.95 (a fraction of context_window), not {value}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ProviderConfig, toml::de::Error> {
        toml::from_str(text)
    }

    #[test]
    fn a_minimal_model_section_gets_the_documented_defaults() -> Result<(), toml::de::Error> {
        let config = parse("provider = \"openai\"\nmodel = \"gpt-4.1-mini\"\n")?;
        assert_eq!(
            config,
            ProviderConfig::new(ProviderKind::Openai, "gpt-4.1-mini", None)
        );
        assert_eq!(config.base_url(), "https://api.openai.com/v1");
        Ok(())
    }

    #[test]
    fn a_full_model_section_parses() -> Result<(), toml::de::Error> {
        let config = parse(
            r#"
            provider = "anthropic"
            model = "claude-sonnet-4-5"
            base_url = "http://127.0.0.1:8080/"
            api_key_env = "ANTHROPIC_API_KEY"
            extra_headers = { "anthropic-beta" = "x" }
            idle_timeout_ms = 500
            max_retries = 2
            max_output_tokens = 1024
            price = { input = 1.0, output = 2.0 }
            "#,
        )?;
        assert_eq!(config.kind, ProviderKind::Anthropic);
        assert_eq!(config.base_url(), "http://127.0.0.1:8080");
        assert_eq!(config.idle_timeout(), Duration::from_millis(500));
        assert_eq!(
            config
                .extra_headers
                .get("anthropic-beta")
                .map(String::as_str),
            Some("x")
        );
        assert_eq!(config.price.map(|p| p.output), Some(2.0));
        Ok(())
    }

    #[test]
    fn output_limit_field_and_tool_choice_have_defaults_for_any_server()
    -> Result<(), toml::de::Error> {
        let openai = parse("provider = \"openai\"\nmodel = \"m\"\n")?;
        assert_eq!(openai.output_limit(), DEFAULT_MAX_OUTPUT_TOKENS);
        assert_eq!(openai.max_tokens_field_name(), "max_completion_tokens");
        assert_eq!(openai.tool_choice, ToolChoice::Auto);
        assert_eq!(openai.attempt_timeout(), Duration::from_secs(600));
        let local = parse(
            "provider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:8000/v1\"\n\
             tool_choice = \"required\"\nmax_output_tokens = 300\nattempt_timeout_ms = 5\n",
        )?;
        assert_eq!(local.max_tokens_field_name(), "max_tokens");
        assert_eq!(local.tool_choice, ToolChoice::Required);
        assert_eq!(local.output_limit(), 300);
        let lookalike = parse(
            "provider = \"openai\"\nmodel = \"m\"\nbase_url = \"https://api.openai.com.example/v1\"\n",
        )?;
        assert_eq!(lookalike.max_tokens_field_name(), "max_tokens");
        let forced = parse(
            "provider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://x/v1\"\n\
             max_tokens_field = \"max_completion_tokens\"\ntool_choice = \"none\"\n",
        )?;
        assert_eq!(forced.max_tokens_field_name(), "max_completion_tokens");
        assert_eq!(forced.tool_choice, ToolChoice::None);
        Ok(())
    }

    #[test]
    fn unknown_keys_are_rejected_with_their_name() {
        let err = parse("provider = \"openai\"\nmodel = \"m\"\nidle_timeout = 5\n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("idle_timeout"), "{err}");
    }
}
