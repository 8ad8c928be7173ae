//! Cost estimates: a [`PriceTable`] of per-model token prices.
//!
//! The built-in entries are list prices checked in February 2026, plus
//! the ObjectNav planner's reference model `gemini-2.5-flash-lite`. Prices change;
//! override or extend them in the backend config (`[vlm.prices."model"]`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::response::Usage;

/// Prices of one model in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Uncached input tokens.
    pub input_per_mtok: f64,
    /// Output tokens.
    pub output_per_mtok: f64,
    /// Input tokens read from the prompt cache; `None` = the input price.
    #[serde(default)]
    pub cached_input_per_mtok: Option<f64>,
    /// Input tokens written to the prompt cache (Anthropic charges 1.25×);
    /// `None` = the input price.
    #[serde(default)]
    pub cache_write_per_mtok: Option<f64>,
}

impl ModelPrice {
    /// A price with no cache discount.
    pub const fn new(input_per_mtok: f64, output_per_mtok: f64) -> Self {
        Self { input_per_mtok, output_per_mtok, cached_input_per_mtok: None, cache_write_per_mtok: None }
    }

    /// Sets the cached-input price.
    pub const fn with_cached(mut self, per_mtok: f64) -> Self {
        self.cached_input_per_mtok = Some(per_mtok);
        self
    }

    /// Sets the cache-write price.
    pub const fn with_cache_write(mut self, per_mtok: f64) -> Self {
        self.cache_write_per_mtok = Some(per_mtok);
        self
    }

    /// The cost of one call's usage in US dollars. Cached and cache-write
    /// tokens are billed at their own rates; the rest of the prompt at the
    /// input rate.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let special = usage.cached_tokens + usage.cache_write_tokens;
        let plain = usage.prompt_tokens.saturating_sub(special);
        let cached = usage.cached_tokens.min(usage.prompt_tokens);
        let written = usage.cache_write_tokens.min(usage.prompt_tokens - cached);
        (plain as f64 * self.input_per_mtok
            + cached as f64 * self.cached_input_per_mtok.unwrap_or(self.input_per_mtok)
            + written as f64 * self.cache_write_per_mtok.unwrap_or(self.input_per_mtok)
            + usage.completion_tokens as f64 * self.output_per_mtok)
            / 1e6
    }

    fn is_valid(&self) -> bool {
        let ok = |v: f64| v.is_finite() && v >= 0.0;
        ok(self.input_per_mtok)
            && ok(self.output_per_mtok)
            && self.cached_input_per_mtok.is_none_or(ok)
            && self.cache_write_per_mtok.is_none_or(ok)
    }
}

/// Model id → price. Lookups are forgiving: a provider prefix
/// (`openai/gpt-4o-mini` on OpenRouter), a date suffix
/// (`claude-haiku-4-5-20251001`) and `.` versus `-` in versions
/// (`claude-sonnet-4.5`) all find the base entry; the longest matching entry
/// wins (`gpt-4o-mini-2024-07-18` is `gpt-4o-mini`, not `gpt-4o`).
///
/// ```
/// use nav_planner::vlm::{PriceTable, Usage};
/// let prices = PriceTable::builtin();
/// let usage = Usage { prompt_tokens: 1_000, completion_tokens: 100, ..Usage::default() };
/// let cost = prices.cost("openai/gpt-4o-mini-2024-07-18", &usage).ok_or("no price")?;
/// assert!((cost - 0.000_21).abs() < 1e-9);
/// assert!(prices.cost("my-local-llava", &usage).is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PriceTable {
    models: BTreeMap<String, ModelPrice>,
}

impl Default for PriceTable {
    fn default() -> Self {
        Self::builtin()
    }
}

impl PriceTable {
    /// An empty table (no cost estimates).
    pub fn empty() -> Self {
        Self { models: BTreeMap::new() }
    }

    /// The built-in prices (February 2026 list prices and gemini-2.5-flash-lite).
    pub fn builtin() -> Self {
        let entries = [
            // OpenAI: cached input at 50 % off.
            ("gpt-4o", ModelPrice::new(2.50, 10.00).with_cached(1.25)),
            ("gpt-4o-mini", ModelPrice::new(0.15, 0.60).with_cached(0.075)),
            // Anthropic: cache reads at 10 %, cache writes at 125 % of input.
            ("claude-sonnet-4-5", ModelPrice::new(3.00, 15.00).with_cached(0.30).with_cache_write(3.75)),
            ("claude-haiku-4-5", ModelPrice::new(1.00, 5.00).with_cached(0.10).with_cache_write(1.25)),
            // Google: context-cache reads at 25 %.
            ("gemini-2.0-flash", ModelPrice::new(0.10, 0.40).with_cached(0.025)),
            ("gemini-2.5-flash-lite", ModelPrice::new(0.10, 0.40).with_cached(0.025)),
        ];
        Self { models: entries.into_iter().map(|(k, v)| (k.to_string(), v)).collect() }
    }

    /// Adds or replaces one model's price.
    pub fn insert(&mut self, model: impl Into<String>, price: ModelPrice) {
        self.models.insert(model.into(), price);
    }

    /// This table with `overrides` added on top (same ids replaced).
    pub fn merged(mut self, overrides: &BTreeMap<String, ModelPrice>) -> Self {
        for (k, v) in overrides {
            self.models.insert(k.clone(), *v);
        }
        self
    }

    /// Checks every price is finite and non-negative, naming the first bad
    /// model.
    pub fn validate(&self) -> Result<(), String> {
        match self.models.iter().find(|(_, p)| !p.is_valid()) {
            Some((model, _)) => Err(format!("price for `{model}` must be finite and non-negative")),
            None => Ok(()),
        }
    }

    /// The entries, by model id.
    pub fn models(&self) -> &BTreeMap<String, ModelPrice> {
        &self.models
    }

    /// The price for a model id (see the type docs for the matching rules).
    pub fn get(&self, model: &str) -> Option<&ModelPrice> {
        if let Some(p) = self.models.get(model) {
            return Some(p);
        }
        let wanted = normalize(model);
        self.models
            .iter()
            .filter(|(k, _)| {
                let k = normalize(k);
                wanted == k || wanted.strip_prefix(k.as_str()).is_some_and(|rest| rest.starts_with('-'))
            })
            .max_by_key(|(k, _)| k.len())
            .map(|(_, p)| p)
    }

    /// The estimated cost of a call, or `None` for unknown models.
    pub fn cost(&self, model: &str, usage: &Usage) -> Option<f64> {
        self.get(model).map(|p| p.cost(usage))
    }
}

/// Lowercase, provider prefix (`vendor/`) and `models/` stripped, `.` → `-`.
fn normalize(model: &str) -> String {
    let base = model.rsplit('/').next().unwrap_or(model);
    base.to_ascii_lowercase().replace('.', "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(p: u64, c: u64, cached: u64, write: u64) -> Usage {
        Usage { prompt_tokens: p, completion_tokens: c, cached_tokens: cached, cache_write_tokens: write }
    }

    #[test]
    fn seed_003_costs_per_call() {
        // Seed 003 §2.8: ~985 input + 100 output for GPT-4o-mini is $0.000208.
        let t = PriceTable::builtin();
        let c = t.cost("gpt-4o-mini", &usage(985, 100, 0, 0)).unwrap();
        assert!((c - 0.000_207_75).abs() < 1e-12, "{c}");
        // Claude Haiku 4.5, 1,310 input + 100 output: $0.00181.
        let c = t.cost("claude-haiku-4-5-20251001", &usage(1310, 100, 0, 0)).unwrap();
        assert!((c - 0.001_81).abs() < 1e-12, "{c}");
        // Gemini 2.0 Flash, 1,158 + 100: $0.0001558.
        let c = t.cost("models/gemini-2.0-flash-001", &usage(1158, 100, 0, 0)).unwrap();
        assert!((c - 0.000_155_8).abs() < 1e-12, "{c}");
    }

    #[test]
    fn cached_tokens_are_cheaper() {
        let t = PriceTable::builtin();
        let full = t.cost("claude-sonnet-4.5", &usage(1000, 0, 0, 0)).unwrap();
        let cached = t.cost("anthropic/claude-sonnet-4.5", &usage(1000, 0, 500, 0)).unwrap();
        let written = t.cost("claude-sonnet-4-5", &usage(1000, 0, 0, 500)).unwrap();
        assert!((full - 0.003).abs() < 1e-12);
        assert!((cached - (500.0 * 3.0 + 500.0 * 0.3) / 1e6).abs() < 1e-12);
        assert!((written - (500.0 * 3.0 + 500.0 * 3.75) / 1e6).abs() < 1e-12);
        // Inconsistent provider numbers never produce a negative cost.
        assert!(t.cost("gpt-4o", &usage(10, 0, 50, 50)).unwrap() >= 0.0);
    }

    #[test]
    fn longest_prefix_wins_and_unknown_is_none() {
        let t = PriceTable::builtin();
        assert_eq!(t.get("gpt-4o-mini-2024-07-18"), t.get("gpt-4o-mini"));
        assert_eq!(t.get("gpt-4o-2024-08-06"), t.get("gpt-4o"));
        assert!(t.get("gpt-4").is_none());
        assert!(t.get("gpt-4omni").is_none());
        assert!(t.get("llava:7b").is_none());
    }

    #[test]
    fn overrides_merge_and_validate() {
        let mut o = BTreeMap::new();
        o.insert("llava:7b".to_string(), ModelPrice::new(0.0, 0.0));
        o.insert("gpt-4o".to_string(), ModelPrice::new(1.0, 2.0));
        let t = PriceTable::builtin().merged(&o);
        assert_eq!(t.get("llava:7b").unwrap().input_per_mtok, 0.0);
        assert_eq!(t.get("gpt-4o").unwrap().output_per_mtok, 2.0);
        assert!(t.get("gpt-4o-mini").is_some());
        let mut bad = PriceTable::empty();
        bad.insert("x", ModelPrice::new(f64::NAN, 1.0));
        assert_eq!(bad.validate().unwrap_err(), "price for `x` must be finite and non-negative");
        let parsed: PriceTable =
            serde_json::from_str(r#"{"m": {"input_per_mtok": 1, "output_per_mtok": 2, "cached_input_per_mtok": 0.5}}"#)
                .unwrap();
        assert_eq!(parsed.get("m").unwrap().cached_input_per_mtok, Some(0.5));
    }
}
