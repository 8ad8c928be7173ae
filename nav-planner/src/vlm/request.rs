//! What a caller asks a vision-language model: [`VlmRequest`] and its parts.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::error::VlmError;
use super::response::RawToolCall;

/// How much image detail the provider should spend tokens on. Only OpenAI
/// honours it (`detail: low` is a fixed 85 tokens for a 640×480 frame,
/// `high` about 765); the other providers ignore it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageDetail {
    /// A fixed, small token cost: enough for navigation decisions.
    Low,
    /// Tiled high-resolution analysis (perception sub-calls).
    High,
    /// Let the provider choose.
    #[default]
    Auto,
}

impl ImageDetail {
    /// The provider wire name: `low`, `high` or `auto`.
    pub fn as_str(self) -> &'static str {
        match self {
            ImageDetail::Low => "low",
            ImageDetail::High => "high",
            ImageDetail::Auto => "auto",
        }
    }
}

/// What a request asks for. Every request a run sends carries one, so a
/// model can answer the kinds it handles and decline the rest
/// ([`VisionLanguageModel::answers`](super::VisionLanguageModel::answers),
/// [`VlmError::Declined`]), and a run counts its requests per kind.
///
/// | kind | sent by | when | declined means |
/// | --- | --- | --- | --- |
/// | `planner` | every protocol's planner | each decision | the run cannot start |
/// | `scene` | the objectnav scene analyzer | first step, doorways, every 20 steps | places stay unnamed |
/// | `perception` | the objectnav perception stage with `perception = vlm` | each step that looks for the target | the target is never seen |
/// | `stop_check` | the same stage | before each STOP | the STOP is not confirmed |
/// | `grounding` | `nav grounding` | once per feedback batch | no grounding |
/// | `tool_follow_up` | the explore planner's `observe_scene` tool | when the model calls it | the tool reports an error |
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RequestKind {
    /// A planner decision (objectnav, explore, candidates).
    #[default]
    Planner,
    /// A scene analysis: what kind of place the camera shows.
    Scene,
    /// A perception query: where the target is in the current view.
    Perception,
    /// A stop check: whether the target is really within reach.
    StopCheck,
    /// Grounding knowledge distilled from feedback.
    Grounding,
    /// A request a tool makes while the planner decides (explore's
    /// `observe_scene`).
    ToolFollowUp,
}

impl RequestKind {
    /// Every kind, in the order above.
    pub const ALL: [RequestKind; 6] = [
        RequestKind::Planner,
        RequestKind::Scene,
        RequestKind::Perception,
        RequestKind::StopCheck,
        RequestKind::Grounding,
        RequestKind::ToolFollowUp,
    ];

    /// The snake_case name (`planner`, `stop_check`, …), as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestKind::Planner => "planner",
            RequestKind::Scene => "scene",
            RequestKind::Perception => "perception",
            RequestKind::StopCheck => "stop_check",
            RequestKind::Grounding => "grounding",
            RequestKind::ToolFollowUp => "tool_follow_up",
        }
    }
}

impl std::fmt::Display for RequestKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One piece of the user message: text or an encoded image. Serialized as
/// `{"type": "text", "content": "…"}` / `{"type": "image", "content": {…}}`.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "content", rename_all = "snake_case")]
pub enum Part {
    /// Plain text.
    Text(String),
    /// An encoded image (JPEG or PNG bytes, not base64).
    Image {
        /// MIME type, e.g. `image/jpeg`.
        mime: String,
        /// The encoded image bytes; backends base64-encode them.
        data: Vec<u8>,
        /// The OpenAI detail level.
        detail: ImageDetail,
    },
}

impl std::fmt::Debug for Part {
    // Image bytes would flood logs and test output; print their size instead.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Part::Text(t) => f.debug_tuple("Text").field(t).finish(),
            Part::Image { mime, data, detail } => {
                f.debug_struct("Image").field("mime", mime).field("bytes", &data.len()).field("detail", detail).finish()
            }
        }
    }
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text(text.into())
    }

    /// A JPEG image part.
    pub fn jpeg(data: Vec<u8>, detail: ImageDetail) -> Self {
        Part::Image { mime: "image/jpeg".into(), data, detail }
    }

    /// A PNG image part.
    pub fn png(data: Vec<u8>, detail: ImageDetail) -> Self {
        Part::Image { mime: "image/png".into(), data, detail }
    }

    /// True for image parts.
    pub fn is_image(&self) -> bool {
        matches!(self, Part::Image { .. })
    }
}

/// A follow-up message appended after the user message: the conversation the
/// explore protocol needs for its perception sub-call (the model's tool call,
/// then the tool's result, then a second completion).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Turn {
    /// What the model said before: reasoning text and/or tool calls.
    Assistant {
        /// Text the model produced, if any.
        text: Option<String>,
        /// The tool calls the model made (ids are echoed in tool results).
        tool_calls: Vec<RawToolCall>,
    },
    /// The result of executing one tool call.
    ToolResult {
        /// The [`RawToolCall::id`] this answers.
        call_id: String,
        /// The tool's name (Gemini matches results by name).
        name: String,
        /// What the tool returned, usually a JSON object serialized as
        /// text.
        content: String,
    },
}

/// A function the model may call. `parameters` is a JSON Schema object; the
/// Gemini backend converts it to Gemini's OpenAPI subset.
///
/// With `strict`, OpenAI requires every property to be listed in `required`
/// and `additionalProperties: false` on every object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Function name (letters, digits, `_`, `-`).
    pub name: String,
    /// What the tool does and when to use it; the model reads this.
    pub description: String,
    /// JSON Schema of the arguments (`{"type": "object", ...}`).
    pub parameters: serde_json::Value,
    /// Ask the provider to enforce the schema exactly.
    pub strict: bool,
}

impl ToolSpec {
    /// A tool with the given name, description and argument schema, strict.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: serde_json::Value) -> Self {
        Self { name: name.into(), description: description.into(), parameters, strict: true }
    }

    /// Sets `strict`.
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }
}

/// Whether and which tools the model must call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides whether to call a tool.
    #[default]
    Auto,
    /// The model must call at least one tool.
    Required,
    /// The model must not call tools.
    None,
    /// The model must call one of these tools (the others stay declared only
    /// where the provider can restrict calls; see each backend).
    Only(Vec<String>),
}

/// A JSON schema the reply text must follow (structured output / JSON mode).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonSchemaSpec {
    /// Schema name (OpenAI requires one; Anthropic uses it as the tool name).
    pub name: String,
    /// The JSON Schema.
    pub schema: serde_json::Value,
    /// Ask the provider to enforce the schema exactly.
    pub strict: bool,
}

/// One completion request. Build it with [`VlmRequest::new`] and the chained
/// setters; every field is public for callers that prefer struct syntax.
///
/// ```
/// use std::time::Duration;
/// use nav_planner::vlm::{ImageDetail, Part, ToolChoice, VlmRequest};
///
/// let req = VlmRequest::new("You steer a robot.")
///     .image(Part::jpeg(vec![0xFF, 0xD8, 0xFF], ImageDetail::Low))
///     .text("Which way to the kitchen?")
///     .temperature(0.2)
///     .max_tokens(200)
///     .timeout(Duration::from_secs(8))
///     .cache_system(true);
/// assert_eq!(req.user.len(), 2);
/// assert_eq!(req.tool_choice, ToolChoice::Auto);
/// req.validate()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VlmRequest {
    /// The system prompt (static across calls; cacheable).
    pub system: String,
    /// The user message, in order.
    pub user: Vec<Part>,
    /// Follow-up turns after the user message (tool calls and results).
    pub turns: Vec<Turn>,
    /// Tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// Whether and which tools must be called.
    pub tool_choice: ToolChoice,
    /// A schema the reply text must follow.
    pub json_schema: Option<JsonSchemaSpec>,
    /// Sampling temperature; `None` uses the provider default.
    pub temperature: Option<f32>,
    /// Maximum output tokens; `None` uses the backend default.
    pub max_tokens: Option<u32>,
    /// Overall deadline for this call, retries included; `None` uses the
    /// backend's configured timeout (default 8 s).
    pub timeout: Option<Duration>,
    /// Mark the system prompt (and tools) for provider prompt caching where
    /// that needs a marker (Anthropic `cache_control`); OpenAI and Gemini
    /// cache long prefixes on their own.
    pub cache_system: bool,
    /// What the request asks for (a planner decision unless set); never
    /// sent to the provider.
    #[serde(default)]
    pub kind: RequestKind,
}

impl VlmRequest {
    /// A request with this system prompt and nothing else.
    pub fn new(system: impl Into<String>) -> Self {
        Self { system: system.into(), ..Self::default() }
    }

    /// Appends a text part to the user message.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.user.push(Part::Text(text.into()));
        self
    }

    /// Appends an image (or any) part to the user message.
    pub fn image(mut self, part: Part) -> Self {
        self.user.push(part);
        self
    }

    /// Appends a part to the user message.
    pub fn part(mut self, part: Part) -> Self {
        self.user.push(part);
        self
    }

    /// Appends a follow-up turn.
    pub fn turn(mut self, turn: Turn) -> Self {
        self.turns.push(turn);
        self
    }

    /// Sets the tools.
    pub fn tools(mut self, tools: Vec<ToolSpec>) -> Self {
        self.tools = tools;
        self
    }

    /// Sets the tool choice.
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = choice;
        self
    }

    /// Requires the reply to follow this JSON schema.
    pub fn json_schema(mut self, name: impl Into<String>, schema: serde_json::Value, strict: bool) -> Self {
        self.json_schema = Some(JsonSchemaSpec { name: name.into(), schema, strict });
        self
    }

    /// Sets the temperature.
    pub fn temperature(mut self, t: f32) -> Self {
        self.temperature = Some(t);
        self
    }

    /// Sets the output token limit.
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// Sets the overall deadline of the call.
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = Some(t);
        self
    }

    /// Sets what the request asks for ([`VlmRequest::kind`]).
    pub fn of_kind(mut self, kind: RequestKind) -> Self {
        self.kind = kind;
        self
    }

    /// Sets [`VlmRequest::cache_system`].
    pub fn cache_system(mut self, cache: bool) -> Self {
        self.cache_system = cache;
        self
    }

    /// The tools the model may call under the tool choice: all of them, or
    /// only the named ones for [`ToolChoice::Only`].
    pub fn callable_tools(&self) -> Vec<&ToolSpec> {
        match &self.tool_choice {
            ToolChoice::Only(names) => self.tools.iter().filter(|t| names.contains(&t.name)).collect(),
            _ => self.tools.iter().collect(),
        }
    }

    /// The user message's text parts, joined by newlines (what a text
    /// model reads; images left out).
    pub fn user_text(&self) -> String {
        let texts: Vec<&str> = self
            .user
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) => Some(t.as_str()),
                Part::Image { .. } => None,
            })
            .collect();
        texts.join("\n")
    }

    /// Number of image parts in the user message.
    pub fn image_count(&self) -> usize {
        self.user.iter().filter(|p| p.is_image()).count()
    }

    /// Checks the request is coherent before anything is sent: a user
    /// message exists, tool names are unique, a required or restricted tool
    /// choice names declared tools, tool results answer earlier tool calls,
    /// and numbers are in range.
    pub fn validate(&self) -> Result<(), VlmError> {
        let bad = |message: String| Err(VlmError::Config { message });
        if self.user.is_empty() {
            return bad("request has no user message parts".into());
        }
        for part in &self.user {
            if let Part::Image { mime, data, .. } = part {
                if data.is_empty() {
                    return bad("image part has no bytes".into());
                }
                if !mime.starts_with("image/") {
                    return bad(format!("image part has MIME type `{mime}`, expected image/*"));
                }
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for tool in &self.tools {
            if tool.name.is_empty() || !tool.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                return bad(format!("tool name `{}` must be non-empty ASCII letters, digits, `_` or `-`", tool.name));
            }
            if !names.insert(tool.name.as_str()) {
                return bad(format!("tool `{}` is declared twice", tool.name));
            }
            if !tool.parameters.is_object() {
                return bad(format!("tool `{}` parameters must be a JSON Schema object", tool.name));
            }
        }
        match &self.tool_choice {
            ToolChoice::Required if self.tools.is_empty() => {
                return bad("tool_choice is `required` but no tools are declared".into());
            }
            ToolChoice::Only(only) => {
                if only.is_empty() {
                    return bad("tool_choice `only` names no tools".into());
                }
                if let Some(missing) = only.iter().find(|n| !names.contains(n.as_str())) {
                    return bad(format!("tool_choice names tool `{missing}` that is not declared"));
                }
            }
            _ => {}
        }
        if let Some(spec) = &self.json_schema {
            if spec.name.is_empty() || !spec.schema.is_object() {
                return bad("json_schema needs a name and a JSON Schema object".into());
            }
        }
        let mut call_ids = std::collections::BTreeSet::new();
        for turn in &self.turns {
            match turn {
                Turn::Assistant { text, tool_calls } => {
                    if text.as_deref().is_none_or(str::is_empty) && tool_calls.is_empty() {
                        return bad("assistant turn has neither text nor tool calls".into());
                    }
                    call_ids.extend(tool_calls.iter().map(|c| c.id.as_str()));
                }
                Turn::ToolResult { call_id, .. } => {
                    if !call_ids.contains(call_id.as_str()) {
                        return bad(format!("tool result answers unknown call id `{call_id}`"));
                    }
                }
            }
        }
        if let Some(t) = self.temperature {
            if !(0.0..=2.0).contains(&t) {
                return bad(format!("temperature {t} is outside [0, 2]"));
            }
        }
        if self.max_tokens == Some(0) {
            return bad("max_tokens must be positive".into());
        }
        if self.timeout.is_some_and(|t| t.is_zero()) {
            return bad("timeout must be positive".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> ToolSpec {
        ToolSpec::new(name, "d", json!({"type": "object", "properties": {}}))
    }

    #[test]
    fn validate_accepts_a_tool_round_trip() {
        let req = VlmRequest::new("s")
            .text("u")
            .tools(vec![tool("a"), tool("b")])
            .tool_choice(ToolChoice::Only(vec!["b".into()]))
            .turn(Turn::Assistant { text: None, tool_calls: vec![RawToolCall::new("c1", "a", json!({}))] })
            .turn(Turn::ToolResult { call_id: "c1".into(), name: "a".into(), content: "{}".into() });
        assert_eq!(req.validate(), Ok(()));
        assert_eq!(req.callable_tools().len(), 1);
    }

    #[test]
    fn validate_names_each_problem() {
        let base = VlmRequest::new("s").text("u");
        let cases = [
            (VlmRequest::new("s"), "no user message"),
            (base.clone().tool_choice(ToolChoice::Required), "no tools are declared"),
            (base.clone().tools(vec![tool("a"), tool("a")]), "declared twice"),
            (base.clone().tools(vec![tool("a b")]), "tool name `a b`"),
            (base.clone().tools(vec![tool("a")]).tool_choice(ToolChoice::Only(vec!["z".into()])), "`z`"),
            (base.clone().temperature(3.0), "temperature 3"),
            (base.clone().max_tokens(0), "max_tokens"),
            (base.clone().image(Part::jpeg(vec![], ImageDetail::Low)), "no bytes"),
            (
                base.clone().turn(Turn::ToolResult { call_id: "x".into(), name: "a".into(), content: String::new() }),
                "unknown call id `x`",
            ),
        ];
        for (req, needle) in cases {
            let err = req.validate().expect_err(needle).to_string();
            assert!(err.contains(needle), "{err:?} should mention {needle:?}");
        }
    }

    #[test]
    fn requests_round_trip_through_serde() {
        let req = VlmRequest::new("s")
            .text("u")
            .image(Part::png(vec![1, 2], ImageDetail::Low))
            .tools(vec![tool("a")])
            .tool_choice(ToolChoice::Only(vec!["a".into()]))
            .turn(Turn::Assistant { text: Some("t".into()), tool_calls: vec![RawToolCall::new("c", "a", json!({}))] })
            .turn(Turn::ToolResult { call_id: "c".into(), name: "a".into(), content: "{}".into() })
            .json_schema("j", json!({"type": "object"}), false)
            .timeout(std::time::Duration::from_millis(1500));
        let text = serde_json::to_string(&req).unwrap();
        assert!(text.contains(r#"{"type":"text","content":"u"}"#), "{text}");
        let back: VlmRequest = serde_json::from_str(&text).unwrap();
        assert_eq!(back, req);
    }

    #[test]
    fn image_debug_hides_bytes() {
        let p = Part::jpeg(vec![7; 1000], ImageDetail::High);
        assert_eq!(format!("{p:?}"), r#"Image { mime: "image/jpeg", bytes: 1000, detail: High }"#);
    }
}
