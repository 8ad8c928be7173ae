//! Cost before spending (`nav eval --estimate`): the expected model calls,
//! input and output tokens and dollars of an episode, from the real request
//! sizes, without calling a model.
//!
//! Per episode:
//! - **Calls**: a rehearsal of the same episode with the protocol's offline
//!   planner, which the loop calls on the same schedule as a model (objectnav:
//!   at the start and at every STOP while `goal_flag` is false; candidates:
//!   every cycle; explore: every decision). Its planner calls are the
//!   expected decisions; objectnav adds one scene-analysis call per place
//!   period (20 steps) when images are sent, as the VLM scene analyzer does.
//!   Retries of invalid replies and explore's perception sub-calls are not
//!   foreseen (a model that answers validly needs none).
//! - **Input tokens per call**: the episode's real start-of-episode request
//!   (what `nav prompt` prints, [`initial_request`]) counted with tiktoken's
//!   `o200k_base` (system prompt; tool definitions as the JSON of name,
//!   description and parameters; the JSON schema; every user text part) plus
//!   the provider's image formula ([`image_tokens`]). Later requests carry a
//!   little more memory and history text.
//! - **Output tokens per call**: a typical valid reply of the protocol
//!   ([`typical_reply`]).
//! - **Dollars**: the backend's price table ([`BackendConfig::price_table`],
//!   the built-in entries merged with `[vlm.prices]`); `None` for a model
//!   without a price.
//!
//! `examples/token_table.rs` prints docs/PROVIDERS.md's per-decision table
//! with the same counting.

use std::io::Cursor;

use serde::Serialize;
use serde_json::json;
use tiktoken_rs::CoreBPE;

use crate::navigator::StepLog;
use crate::navigator::episode::{EpisodeError, EpisodeSpec, PlannerChoice, initial_request, run_episode};
use crate::protocol::ProtocolKind;
use crate::protocol::scene::scene_request;
use crate::vlm::{BackendConfig, ImageDetail, Part, Provider, Usage, VlmRequest};

/// tiktoken's `o200k_base`, the tokenizer every estimate counts text with.
pub struct TokenCounter {
    bpe: CoreBPE,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenCounter(o200k_base)")
    }
}

impl TokenCounter {
    /// Loads `o200k_base` (built into the binary, no download).
    ///
    /// # Errors
    /// When the built-in vocabulary cannot be parsed (never in a correct build).
    pub fn o200k() -> Result<Self, EpisodeError> {
        let bpe = tiktoken_rs::o200k_base().map_err(|e| EpisodeError::Spec(format!("tokenizer o200k_base: {e}")))?;
        Ok(Self { bpe })
    }

    /// Tokens of `text`.
    pub fn count(&self, text: &str) -> u64 {
        self.bpe.encode_with_special_tokens(text).len() as u64
    }
}

/// The tokens OpenAI bills for tool definitions, by the method of OpenAI's
/// cookbook ("How to count tokens with tiktoken", tool calls, gpt-4o and
/// gpt-4o-mini constants): the API renders the tools as text in the prompt,
/// not as JSON, so `required`, `additionalProperties` and the braces cost
/// nothing and each tool costs 7 tokens, plus `name:description` (a final
/// full stop dropped), 3 for a property list, and per property 3 plus
/// `key:type:description`, each enum value 3 plus its own tokens (an enum
/// 3 less); 12 at the end. A nullable type `["number", "null"]` is rendered
/// as OpenAI prints it, `number | null`.
///
/// [`RequestTokens::tools`] counts the same tools as compact JSON, an upper
/// bound that the explore protocol's strict schemas make about 15 % larger.
pub fn openai_tool_tokens(counter: &TokenCounter, tools: &[crate::vlm::ToolSpec]) -> u64 {
    if tools.is_empty() {
        return 0;
    }
    let trim = |s: &str| s.strip_suffix('.').unwrap_or(s).to_string();
    let mut n: i64 = 12;
    for t in tools {
        n += 7 + counter.count(&format!("{}:{}", t.name, trim(&t.description))) as i64;
        let Some(props) = t.parameters.get("properties").and_then(serde_json::Value::as_object) else { continue };
        if props.is_empty() {
            continue;
        }
        n += 3;
        for (key, p) in props {
            n += 3;
            if let Some(values) = p.get("enum").and_then(serde_json::Value::as_array) {
                n -= 3;
                for v in values {
                    let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                    n += 3 + counter.count(&v) as i64;
                }
            }
            let ty = match p.get("type") {
                Some(serde_json::Value::Array(a)) => {
                    a.iter().filter_map(serde_json::Value::as_str).collect::<Vec<_>>().join(" | ")
                }
                Some(v) => v.as_str().unwrap_or_default().to_string(),
                None => String::new(),
            };
            let desc = p.get("description").and_then(serde_json::Value::as_str).map(trim).unwrap_or_default();
            n += counter.count(&format!("{key}:{ty}:{desc}")) as i64;
        }
    }
    n.max(0) as u64
}

/// One image of a request, as a provider's token formula needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageSize {
    /// MIME type.
    pub mime: String,
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// The detail the request asks for.
    pub detail: ImageDetail,
}

/// What a provider bills for one image: OpenAI `low` a flat 85 (`high` and
/// `auto`: 85 + 170 per 512-px tile after fitting into 2048×2048 and the
/// short side into 768); Anthropic width × height / 750 after fitting the
/// long edge into 1568; Gemini and Vertex 258 (a small image; Google tiles
/// larger ones, so this is a lower bound there).
pub fn image_tokens(provider: Provider, img: &ImageSize) -> u64 {
    let (w, h) = (f64::from(img.width.max(1)), f64::from(img.height.max(1)));
    match provider {
        Provider::OpenAi if img.detail == ImageDetail::Low => 85,
        Provider::OpenAi => {
            let fit = (2048.0 / w.max(h)).min(1.0);
            let (w, h) = (w * fit, h * fit);
            let short = (768.0 / w.min(h)).min(1.0);
            let (w, h) = (w * short, h * short);
            85 + 170 * ((w / 512.0).ceil() * (h / 512.0).ceil()) as u64
        }
        Provider::Anthropic => {
            let fit = (1568.0 / w.max(h)).min(1.0);
            ((w * fit) * (h * fit) / 750.0).ceil() as u64
        }
        Provider::Gemini | Provider::Vertex => 258,
    }
}

/// The token components of one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestTokens {
    /// The system prompt.
    pub system: u64,
    /// Tool definitions (name, description, parameters as JSON) and the JSON
    /// schema.
    pub tools: u64,
    /// Every user text part.
    pub user_text: u64,
    /// The images.
    pub images: Vec<ImageSize>,
}

impl RequestTokens {
    /// Counts `req`'s text with `counter` and measures its images.
    ///
    /// # Errors
    /// An image whose bytes are not a readable picture.
    pub fn measure(counter: &TokenCounter, req: &VlmRequest) -> Result<Self, EpisodeError> {
        let tools: Vec<_> = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
            .collect();
        let mut tool_tokens = if tools.is_empty() { 0 } else { counter.count(&json!(tools).to_string()) };
        if let Some(spec) = &req.json_schema {
            tool_tokens += counter.count(&spec.schema.to_string());
        }
        let mut user_text = 0;
        let mut images = Vec::new();
        for part in &req.user {
            match part {
                Part::Text(t) => user_text += counter.count(t),
                Part::Image { mime, data, detail } => {
                    let (width, height) = image::ImageReader::new(Cursor::new(data))
                        .with_guessed_format()
                        .map_err(|e| EpisodeError::Spec(format!("request image: {e}")))?
                        .into_dimensions()
                        .map_err(|e| EpisodeError::Spec(format!("request image: {e}")))?;
                    images.push(ImageSize { mime: mime.clone(), width, height, detail: *detail });
                }
            }
        }
        Ok(Self { system: counter.count(&req.system), tools: tool_tokens, user_text, images })
    }

    /// The text tokens (system, tools, user text).
    pub fn text(&self) -> u64 {
        self.system + self.tools + self.user_text
    }

    /// The static, cacheable prefix (system prompt and tool definitions).
    pub fn prefix(&self) -> u64 {
        self.system + self.tools
    }

    /// All input tokens as `provider` bills them (text plus its image formula).
    pub fn input(&self, provider: Provider) -> u64 {
        self.text() + self.images.iter().map(|i| image_tokens(provider, i)).sum::<u64>()
    }
}

/// A typical valid reply of each protocol (what output tokens are counted
/// on): the objectnav decision, a candidates decision, and explore's
/// perceive-then-reason text plus one tool call.
pub fn typical_reply(protocol: ProtocolKind) -> String {
    match protocol {
        ProtocolKind::Objectnav => json!({"goal_flag": false, "angle": 60, "discovered_context": {
            "goal_scene_type": "living room",
            "why": "A doorway on the left opens to a sofa area where a TV is likely."}})
        .to_string(),
        ProtocolKind::Candidates => json!({"action": {"type": "MOVE_TO", "target_id": "c1"},
            "fallback": {"if_failed": "EXPLORE", "target_id": "c2"},
            "explanation": "c1 is the goal and the straight path to it is free."})
        .to_string(),
        ProtocolKind::Explore => format!(
            "PERCEIVE: open floor ahead, walls 0.8 m to the left and right. REASON: the corridor continues \
             forward toward frontier 1.\n{}",
            json!({"name": "move_toward", "arguments": {"direction": "forward", "speed": "medium", "duration_s": 3}})
        ),
    }
}

/// A typical scene-analyzer reply.
const TYPICAL_SCENE_REPLY: &str =
    r#"{"place_type": "living room", "objects": ["sofa", "tv"], "description": "A living room with a sofa and a TV."}"#;

/// The expected cost of one episode.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpisodeEstimate {
    /// Arena name.
    pub arena: String,
    /// Protocol.
    pub protocol: String,
    /// Seed.
    pub seed: u64,
    /// Memory on or off.
    pub memory: bool,
    /// Expected planner decisions (the offline rehearsal's planner calls).
    pub decisions: u64,
    /// Expected scene-analysis calls (objectnav with images).
    pub scene_calls: u64,
    /// Expected model calls: decisions plus scene calls.
    pub calls: u64,
    /// Input tokens of one decision request, as the provider bills them.
    pub input_tokens_per_decision: u64,
    /// Expected input tokens.
    pub input_tokens: u64,
    /// Expected output tokens.
    pub output_tokens: u64,
    /// Expected cost, US dollars; `None` when the model has no price.
    pub cost_usd: Option<f64>,
    /// The most calls the episode can make: its whole step budget used, one
    /// decision per step (objectnav) or cycle, each retried once (objectnav)
    /// or with a perception sub-call (explore), plus the scene calls.
    pub max_calls: u64,
    /// `max_calls` priced at the start request's size and a typical reply.
    pub max_cost_usd: Option<f64>,
}

/// The most calls an episode of `spec` with a step budget of `budget` can
/// make (see [`EpisodeEstimate::max_calls`]).
fn max_calls(spec: &EpisodeSpec, budget: u64) -> u64 {
    match spec.protocol {
        ProtocolKind::Objectnav => {
            let period = u64::from(spec.objectnav.memory_config.place_update_period.max(1));
            2 * budget + if spec.text_only { 0 } else { budget.div_ceil(period) }
        }
        ProtocolKind::Candidates => budget,
        ProtocolKind::Explore => 2 * budget,
    }
}

/// Estimates one episode for the model `backend` names: the offline
/// rehearsal for the number of calls, the real start request for their size
/// (see the module docs). `spec` is the episode as it would run with the
/// model (its `planner` and `vlm` are ignored: nothing is called).
///
/// # Errors
/// As [`run_episode`] and [`initial_request`] for a bad spec.
pub async fn estimate_episode(
    spec: &EpisodeSpec,
    backend: &BackendConfig,
    counter: &TokenCounter,
) -> Result<EpisodeEstimate, EpisodeError> {
    let provider = backend.provider;
    let rehearsal_spec = EpisodeSpec { planner: PlannerChoice::Offline, vlm: None, budget: None, ..spec.clone() };
    let rehearsal = run_episode(&rehearsal_spec, &mut StepLog::null(), &mut |_| {}).await?;
    let decision = RequestTokens::measure(counter, &initial_request(spec).await?)?;
    let decisions = u64::from(rehearsal.planner_calls);
    let per_decision_in = decision.input(provider);
    let per_decision_out = counter.count(&typical_reply(spec.protocol));
    let mut input_tokens = decisions * per_decision_in;
    let mut output_tokens = decisions * per_decision_out;
    let mut scene_calls = 0;
    if spec.protocol == ProtocolKind::Objectnav && !spec.text_only {
        let period = u64::from(spec.objectnav.memory_config.place_update_period.max(1));
        scene_calls = u64::from(rehearsal.steps).div_ceil(period);
        let scene = RequestTokens::measure(counter, &scene_probe(spec).await?)?;
        input_tokens += scene_calls * scene.input(provider);
        output_tokens += scene_calls * counter.count(TYPICAL_SCENE_REPLY);
    }
    let usage = Usage { prompt_tokens: input_tokens, completion_tokens: output_tokens, ..Usage::default() };
    let budget = u64::from(spec.max_steps.unwrap_or(spec.arena.criteria.max_steps));
    let most = max_calls(spec, budget);
    let most_usage =
        Usage { prompt_tokens: most * per_decision_in, completion_tokens: most * per_decision_out, ..Usage::default() };
    let prices = backend.price_table();
    Ok(EpisodeEstimate {
        arena: rehearsal.arena,
        protocol: spec.protocol.as_str().to_string(),
        seed: spec.seed,
        memory: spec.memory,
        decisions,
        scene_calls,
        calls: decisions + scene_calls,
        input_tokens_per_decision: per_decision_in,
        input_tokens,
        output_tokens,
        cost_usd: prices.cost(backend.model_id(), &usage),
        max_calls: most,
        max_cost_usd: prices.cost(backend.model_id(), &most_usage),
    })
}

/// The scene analyzer's request for the episode's start frame.
async fn scene_probe(spec: &EpisodeSpec) -> Result<VlmRequest, EpisodeError> {
    use nav_hal::hal::Sensors as _;
    use nav_hal::sim::{SimHal, SimWorld};
    let arena = crate::navigator::episode::seeded_arena(&spec.arena, spec.seed, spec.sim.robot_radius_m)?;
    let mut hal = SimHal::new(SimWorld::new(arena, spec.sim.clone())?);
    let frame = hal.rgb().await?;
    scene_request(&frame.frame, 8.0).ok_or_else(|| EpisodeError::Spec("the start frame could not be encoded".into()))
}

/// A suite's estimate: the episodes and their totals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuiteEstimate {
    /// `provider/model`.
    pub model: String,
    /// One entry per episode.
    pub episodes: Vec<EpisodeEstimate>,
    /// Expected model calls.
    pub calls: u64,
    /// Expected input tokens.
    pub input_tokens: u64,
    /// Expected output tokens.
    pub output_tokens: u64,
    /// Expected cost, US dollars; `None` when the model has no price.
    pub cost_usd: Option<f64>,
    /// The most calls the suite can make.
    pub max_calls: u64,
    /// The cost of `max_calls`, US dollars.
    pub max_cost_usd: Option<f64>,
}

impl SuiteEstimate {
    /// Sums the episodes.
    pub fn new(backend: &BackendConfig, episodes: Vec<EpisodeEstimate>) -> Self {
        let calls = episodes.iter().map(|e| e.calls).sum();
        let input_tokens = episodes.iter().map(|e| e.input_tokens).sum();
        let output_tokens = episodes.iter().map(|e| e.output_tokens).sum();
        let cost_usd = episodes.iter().map(|e| e.cost_usd).sum::<Option<f64>>();
        let max_calls = episodes.iter().map(|e| e.max_calls).sum();
        let max_cost_usd = episodes.iter().map(|e| e.max_cost_usd).sum::<Option<f64>>();
        let model = format!("{}/{}", backend.provider.as_str(), backend.model_id());
        Self { model, episodes, calls, input_tokens, output_tokens, cost_usd, max_calls, max_cost_usd }
    }

    /// A Markdown table per protocol and the total.
    pub fn markdown(&self) -> String {
        use std::fmt::Write as _;
        let dollars = |c: Option<f64>| c.map_or_else(|| "no price".to_string(), |c| format!("${c:.4}"));
        let mut s = String::new();
        let _ = writeln!(s, "Estimate for {} (no model called)\n", self.model);
        let _ = writeln!(
            s,
            "| protocol | episodes | calls | input tokens | output tokens | cost | at most: calls | at most: cost |"
        );
        let _ = writeln!(s, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
        for protocol in ["objectnav", "candidates", "explore"] {
            let eps: Vec<_> = self.episodes.iter().filter(|e| e.protocol == protocol).collect();
            if eps.is_empty() {
                continue;
            }
            let _ = writeln!(
                s,
                "| {protocol} | {} | {} | {} | {} | {} | {} | {} |",
                eps.len(),
                eps.iter().map(|e| e.calls).sum::<u64>(),
                eps.iter().map(|e| e.input_tokens).sum::<u64>(),
                eps.iter().map(|e| e.output_tokens).sum::<u64>(),
                dollars(eps.iter().map(|e| e.cost_usd).sum::<Option<f64>>()),
                eps.iter().map(|e| e.max_calls).sum::<u64>(),
                dollars(eps.iter().map(|e| e.max_cost_usd).sum::<Option<f64>>())
            );
        }
        let _ = writeln!(
            s,
            "| **total** | {} | {} | {} | {} | {} | {} | {} |",
            self.episodes.len(),
            self.calls,
            self.input_tokens,
            self.output_tokens,
            dollars(self.cost_usd),
            self.max_calls,
            dollars(self.max_cost_usd)
        );
        s.push_str(
            "\nExpected calls: the offline planner's decisions on the same schedule (plus objectnav's scene calls), \
             as many as a model that finds its way as well as the stand-in needs; tokens: each episode's real \
             start request (o200k_base + the provider's image formula) and a typical reply (later requests carry \
             a little more history). At most: every episode uses its whole step budget (objectnav: a decision per \
             step, each retried once; explore: a perception sub-call per decision); a model that never finds \
             the target costs somewhere in between. Use --max-cost-usd to cap the real run.\n",
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_formulas_match_the_providers_documentation() {
        let img = |w, h, detail| ImageSize { mime: "image/jpeg".into(), width: w, height: h, detail };
        assert_eq!(image_tokens(Provider::OpenAi, &img(640, 480, ImageDetail::Low)), 85);
        // 1024×768 high: fits, short side 768 → 2×2 tiles
        assert_eq!(image_tokens(Provider::OpenAi, &img(1024, 768, ImageDetail::High)), 85 + 170 * 4);
        assert_eq!(image_tokens(Provider::Anthropic, &img(750, 100, ImageDetail::Low)), 100);
        assert_eq!(image_tokens(Provider::Gemini, &img(4000, 3000, ImageDetail::High)), 258);
        // a degenerate size does not divide by zero
        assert_eq!(image_tokens(Provider::Anthropic, &img(0, 0, ImageDetail::Low)), 1);
    }

    #[test]
    fn counts_text_with_o200k() {
        let c = TokenCounter::o200k().expect("the built-in vocabulary");
        assert_eq!(c.count(""), 0);
        assert_eq!(c.count("hello world"), 2);
    }
}
