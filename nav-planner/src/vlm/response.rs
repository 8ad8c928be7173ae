//! What a vision-language model answered: [`VlmResponse`], [`RawToolCall`], [`Usage`].

use serde::{Deserialize, Serialize};

/// One function call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawToolCall {
    /// The provider's call id (synthesized as `call_N` where the provider
    /// has none, as Gemini often does); echoed back in tool results.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as parsed JSON. When a provider's argument text is not
    /// valid JSON it is kept verbatim as a JSON string, so the protocol's
    /// parser can repair or reject it with a precise message.
    pub arguments: serde_json::Value,
    /// The opaque `thoughtSignature` Gemini attached to this call's part.
    /// Gemini 3 rejects a replayed `functionCall` without it, so the Gemini
    /// codec echoes it in follow-up turns; other providers have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
}

impl RawToolCall {
    /// A tool call with these fields (and no thought signature).
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: serde_json::Value) -> Self {
        Self { id: id.into(), name: name.into(), arguments, thought_signature: None }
    }

    /// Sets the Gemini thought signature.
    pub fn with_thought_signature(mut self, signature: impl Into<String>) -> Self {
        self.thought_signature = Some(signature.into());
        self
    }
}

/// Token accounting for one call, as the provider reported it for the
/// attempt that succeeded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// All input tokens, cached ones included.
    pub prompt_tokens: u64,
    /// Output tokens, thinking tokens included where the provider bills them.
    pub completion_tokens: u64,
    /// Input tokens served from the provider's prompt cache (a subset of
    /// `prompt_tokens`, billed at the cached rate).
    pub cached_tokens: u64,
    /// Input tokens written to the prompt cache on this call (Anthropic
    /// `cache_creation_input_tokens`; a subset of `prompt_tokens`).
    pub cache_write_tokens: u64,
}

impl Usage {
    /// The most tokens one call may report in any field: no model reads or
    /// writes ten million tokens in one call, so more (or a negative or
    /// malformed count) is a broken or hostile reply, rejected as an invalid
    /// response rather than counted (a wrapped total would blind
    /// `--max-cost-usd`).
    pub const MAX_CALL_TOKENS: u64 = 10_000_000;

    /// Prompt plus completion tokens (saturating).
    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }

    /// Whether every count is at most [`MAX_CALL_TOKENS`](Self::MAX_CALL_TOKENS).
    pub fn is_plausible(&self) -> bool {
        [self.prompt_tokens, self.completion_tokens, self.cached_tokens, self.cache_write_tokens]
            .iter()
            .all(|&n| n <= Self::MAX_CALL_TOKENS)
    }

    /// Tokens an image is counted as when a reply reports no usage: the
    /// most a provider bills for one image at navkit's sizes (Anthropic's
    /// ceiling; OpenAI's high detail at 640 × 480 is 765, Gemini's 258).
    pub const ESTIMATED_IMAGE_TOKENS: u64 = 1_600;

    /// A deliberately high estimate of what `request` and `response`
    /// cost, for a reply that reports no prompt tokens: four characters of
    /// text (system prompt, user text, earlier turns, tool definitions)
    /// a token, [`ESTIMATED_IMAGE_TOKENS`](Self::ESTIMATED_IMAGE_TOKENS) an
    /// image, and the reply's text and tool arguments at four characters a
    /// token (at least one).
    pub fn estimate(request: &crate::vlm::VlmRequest, response: &VlmResponse) -> Self {
        let chars = |s: &str| s.chars().count() as u64;
        let text = Self::request_text_chars(request);
        let images = request.image_count() as u64 * Self::ESTIMATED_IMAGE_TOKENS;
        let reply = chars(&response.text) + json_chars(&response.tool_calls);
        Self {
            prompt_tokens: text.div_ceil(4).saturating_add(images),
            completion_tokens: reply.div_ceil(4).max(1),
            ..Self::default()
        }
    }
}

impl Usage {
    /// Characters of text `request` sends: system prompt, user text,
    /// earlier turns and tool definitions.
    pub fn request_text_chars(request: &crate::vlm::VlmRequest) -> u64 {
        request.system.chars().count() as u64
            + request.user_text().chars().count() as u64
            + json_chars(&request.turns)
            + json_chars(&request.tools)
    }

    /// The fewest prompt tokens a real count of `request` can be: its text
    /// at eight characters a token (tokenizers take three to five), at
    /// least one. A reply that reports fewer is billed on
    /// [`estimate`](Self::estimate).
    pub fn prompt_floor(request: &crate::vlm::VlmRequest) -> u64 {
        (Self::request_text_chars(request) / 8).max(1)
    }
}

/// Length of `v`'s JSON text in characters (0 when it does not serialize).
fn json_chars<T: Serialize + ?Sized>(v: &T) -> u64 {
    serde_json::to_string(v).map_or(0, |s| s.chars().count() as u64)
}

/// Sums saturate: totals never wrap.
impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Self) {
        self.prompt_tokens = self.prompt_tokens.saturating_add(rhs.prompt_tokens);
        self.completion_tokens = self.completion_tokens.saturating_add(rhs.completion_tokens);
        self.cached_tokens = self.cached_tokens.saturating_add(rhs.cached_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(rhs.cache_write_tokens);
    }
}

/// A successful completion.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VlmResponse {
    /// The reply text (text parts joined; empty when the model only called
    /// tools). In JSON mode this is the JSON document.
    pub text: String,
    /// Tool calls in the order the model made them.
    pub tool_calls: Vec<RawToolCall>,
    /// Token accounting.
    pub usage: Usage,
    /// Wall time of the whole call, retries and back-off included.
    pub latency_ms: f64,
    /// The model id the provider reports (or the configured one).
    pub model: String,
    /// The provider's finish / stop reason, verbatim (`stop`, `tool_calls`,
    /// `STOP`, `end_turn`, `max_tokens`, …).
    pub finish_reason: Option<String>,
    /// A refusal the provider reported next to usable output. A refusal that
    /// leaves nothing usable is returned as [`VlmError::Refused`] instead.
    ///
    /// [`VlmError::Refused`]: super::VlmError::Refused
    pub refusal: Option<String>,
    /// Estimated cost in US dollars from the backend's price table; `None`
    /// when the model has no price entry.
    pub cost_usd: Option<f64>,
    /// HTTP attempts made (1 when the first succeeded).
    pub attempts: u32,
    /// True when the reply of a priced model carried no token usage and
    /// `usage` (and so `cost_usd`) is navkit's estimate from the request
    /// instead (see [`Usage::estimate`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub usage_estimated: bool,
}

impl VlmResponse {
    /// A reply carrying only text.
    pub fn from_text(text: impl Into<String>) -> Self {
        Self { text: text.into(), attempts: 1, ..Self::default() }
    }

    /// A reply carrying only tool calls.
    pub fn from_tool_calls(tool_calls: Vec<RawToolCall>) -> Self {
        Self { tool_calls, attempts: 1, ..Self::default() }
    }

    /// Sets the usage.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// Sets the finish reason.
    pub fn with_finish_reason(mut self, reason: impl Into<String>) -> Self {
        self.finish_reason = Some(reason.into());
        self
    }

    /// The first tool call, if any.
    pub fn first_tool_call(&self) -> Option<&RawToolCall> {
        self.tool_calls.first()
    }
}
