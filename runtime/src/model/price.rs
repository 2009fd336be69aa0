//! Price table and cost of a response, from its token usage.
//!
//! B3 needs a cost per response to enforce `max_cost_usd`; the issue asks for a per-model
//! table that a preset may override (`[model.price]`). Prices are USD per million tokens as the
//! vendors published them when this table was written; they change, which is why the preset can
//! override them. A model not in the table has no cost (`None`), never a guessed one.

use super::types::Usage;
use serde::Deserialize;

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Prompt tokens read from the cache; defaults to `input`.
    #[serde(default)]
    pub cache_read: Option<f64>,
    /// Prompt tokens written to the cache; defaults to `input`.
    #[serde(default)]
    pub cache_write: Option<f64>,
}

impl Price {
    const fn new(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Price {
        Price {
            input,
            output,
            cache_read: Some(cache_read),
            cache_write: Some(cache_write),
        }
    }

    /// The price when cache writes are kept an hour: Anthropic bills them at twice the input
    /// price (the table's `cache_write` is the five-minute price, 1.25 times).
    pub fn with_hour_writes(self) -> Price {
        Price {
            cache_write: Some(self.input * 2.0),
            ..self
        }
    }

    /// The cost of `usage` at this price.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cache_read_tokens + usage.cache_write_tokens;
        let plain = usage.input_tokens.saturating_sub(cached);
        let per_token = |per_million: f64, tokens: u64| per_million * tokens as f64 / 1e6;
        per_token(self.input, plain)
            + per_token(
                self.cache_read.unwrap_or(self.input),
                usage.cache_read_tokens,
            )
            + per_token(
                self.cache_write.unwrap_or(self.input),
                usage.cache_write_tokens,
            )
            + per_token(self.output, usage.output_tokens)
    }
}

/// Model-name prefixes and their prices. The longest matching prefix wins, so dated snapshots
/// (`gpt-4.1-mini-2025-04-14`, `claude-sonnet-4-20250514`) find their family.
const TABLE: &[(&str, Price)] = &[
    ("gpt-5", Price::new(1.25, 10.0, 0.125, 1.25)),
    ("gpt-5-mini", Price::new(0.25, 2.0, 0.025, 0.25)),
    ("gpt-5-nano", Price::new(0.05, 0.40, 0.005, 0.05)),
    ("gpt-4.1", Price::new(2.0, 8.0, 0.50, 2.0)),
    ("gpt-4.1-mini", Price::new(0.40, 1.60, 0.10, 0.40)),
    ("gpt-4.1-nano", Price::new(0.10, 0.40, 0.025, 0.10)),
    ("gpt-4o", Price::new(2.50, 10.0, 1.25, 2.50)),
    ("gpt-4o-mini", Price::new(0.15, 0.60, 0.075, 0.15)),
    ("o3", Price::new(2.0, 8.0, 0.50, 2.0)),
    ("o4-mini", Price::new(1.10, 4.40, 0.275, 1.10)),
    ("claude-opus-4", Price::new(15.0, 75.0, 1.50, 18.75)),
    ("claude-opus-4-5", Price::new(5.0, 25.0, 0.50, 6.25)),
    ("claude-sonnet-4", Price::new(3.0, 15.0, 0.30, 3.75)),
    ("claude-3-7-sonnet", Price::new(3.0, 15.0, 0.30, 3.75)),
    ("claude-haiku-4-5", Price::new(1.0, 5.0, 0.10, 1.25)),
    ("claude-3-5-haiku", Price::new(0.80, 4.0, 0.08, 1.0)),
];

/// The built-in price of `model`, if the table knows it.
pub fn lookup(model: &str) -> Option<Price> {
    TABLE
        .iter()
        .filter(|(prefix, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, price)| *price)
}

/// The cost of `usage` for `model`: the preset's override if any, else the table.
pub fn cost(model: &str, overridden: Option<&Price>, usage: &Usage) -> Option<f64> {
    overridden
        .copied()
        .or_else(|| lookup(model))
        .map(|price| price.cost(usage))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, read: u64, write: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: read,
            cache_write_tokens: write,
        }
    }

    #[test]
    fn dated_snapshots_use_the_longest_matching_family() {
        assert_eq!(
            lookup("gpt-4.1-mini-2025-04-14").map(|p| p.input),
            Some(0.40)
        );
        assert_eq!(lookup("gpt-4.1-2025-04-14").map(|p| p.input), Some(2.0));
        assert_eq!(
            lookup("claude-opus-4-5-20251101").map(|p| p.output),
            Some(25.0)
        );
        assert_eq!(lookup("llama-3.1-8b"), None);
    }

    #[test]
    fn cached_prompt_tokens_are_charged_at_cache_prices() {
        let price = Price::new(2.0, 8.0, 0.5, 2.5);
        let cost = price.cost(&usage(1_000_000, 1_000_000, 400_000, 100_000));
        // 500k plain * 2 + 400k * 0.5 + 100k * 2.5 + 1M * 8
        assert!((cost - (1.0 + 0.2 + 0.25 + 8.0)).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn claude_cache_reads_cost_a_tenth_and_writes_a_quarter_more_or_double_for_an_hour() {
        let sonnet = lookup("claude-sonnet-4-5").expect("in the table");
        let read = sonnet.cost(&usage(1_000_000, 0, 1_000_000, 0));
        let write = sonnet.cost(&usage(1_000_000, 0, 0, 1_000_000));
        let plain = sonnet.cost(&usage(1_000_000, 0, 0, 0));
        assert!((read / plain - 0.1).abs() < 1e-9, "{read} {plain}");
        assert!((write / plain - 1.25).abs() < 1e-9, "{write} {plain}");
        let hour = sonnet
            .with_hour_writes()
            .cost(&usage(1_000_000, 0, 0, 1_000_000));
        assert!((hour / plain - 2.0).abs() < 1e-9, "{hour} {plain}");
        let gpt = lookup("gpt-5-mini").expect("in the table");
        let cached = gpt.cost(&usage(1_000_000, 0, 1_000_000, 0));
        assert!((cached / gpt.cost(&usage(1_000_000, 0, 0, 0)) - 0.1).abs() < 1e-9);
    }

    #[test]
    fn preset_override_wins_and_unknown_models_have_no_cost() {
        let mine = Price {
            input: 1.0,
            output: 1.0,
            cache_read: None,
            cache_write: None,
        };
        let u = usage(1_000_000, 0, 0, 0);
        assert_eq!(cost("gpt-4o", Some(&mine), &u), Some(1.0));
        assert_eq!(cost("my-local-model", None, &u), None);
    }
}
