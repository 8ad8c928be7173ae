//! Per-decision input tokens and cost of each protocol's real request.
//!
//! Builds the start-of-episode request of each protocol exactly as `nav
//! prompt` and the prompt snapshots do (`nav_planner::navigator::episode::
//! initial_request`: objectnav in `house_a`, candidates in `simple`,
//! explore in `exploration`; seed 0, memory on), counts its text with
//! tiktoken's `o200k_base`, adds each provider's image token formula, and
//! prices a decision with the built-in [`PriceTable`]. Prints the Markdown
//! tables of docs/PROVIDERS.md "Per-decision token and cost table".
//!
//! ```text
//! cargo run -p nav-planner --example token_table
//! ```

use std::io::Cursor;

use nav_hal::arena::Arena;
use nav_planner::navigator::episode::{EpisodeSpec, initial_request};
use nav_planner::protocol::ProtocolKind;
use nav_planner::vlm::{ImageDetail, Part, PriceTable, Usage, VlmRequest};
use serde_json::json;
use tiktoken_rs::CoreBPE;

/// Decisions per hour at the seed-001 base rate of one call every 5 s.
const DECISIONS_PER_HOUR: f64 = 0.2 * 3600.0;

/// The three models priced, one per provider.
const MODELS: [(&str, &str); 3] =
    [("OpenAI", "gpt-4o-mini"), ("Gemini", "gemini-2.5-flash-lite"), ("Anthropic", "claude-haiku-4-5")];

/// A typical reply per protocol (what the output tokens are counted on):
/// the objectnav decision, a candidates decision, and explore's
/// perceive-then-reason text plus one tool call.
fn typical_reply(protocol: ProtocolKind) -> String {
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

/// One image of a request.
struct Image {
    mime: String,
    width: u32,
    height: u32,
    detail: ImageDetail,
}

/// OpenAI: `low` is a flat 85 tokens; `high` (and `auto`, assumed high) is
/// 85 + 170 per 512-px tile after fitting into 2048×2048 and scaling the
/// short side down to 768.
fn openai_image_tokens(img: &Image) -> u64 {
    if img.detail == ImageDetail::Low {
        return 85;
    }
    let (mut w, mut h) = (f64::from(img.width), f64::from(img.height));
    let fit = (2048.0 / w.max(h)).min(1.0);
    (w, h) = (w * fit, h * fit);
    let short = (768.0 / w.min(h)).min(1.0);
    (w, h) = (w * short, h * short);
    85 + 170 * ((w / 512.0).ceil() * (h / 512.0).ceil()) as u64
}

/// Anthropic: width × height / 750 (after fitting the long edge into 1568).
fn anthropic_image_tokens(img: &Image) -> u64 {
    let (w, h) = (f64::from(img.width), f64::from(img.height));
    let fit = (1568.0 / w.max(h)).min(1.0);
    ((w * fit) * (h * fit) / 750.0).ceil() as u64
}

/// Gemini: 258 tokens per image (seed 003 §2.8).
fn gemini_image_tokens(_img: &Image) -> u64 {
    258
}

/// The token components of one request.
struct Count {
    system: u64,
    tools: u64,
    user_text: u64,
    images: Vec<Image>,
    output: u64,
}

impl Count {
    /// The static, cacheable prefix: system prompt and tool/schema
    /// definitions.
    fn prefix(&self) -> u64 {
        self.system + self.tools
    }

    fn text(&self) -> u64 {
        self.system + self.tools + self.user_text
    }

    fn input(&self, provider: &str) -> u64 {
        let per_image: fn(&Image) -> u64 = match provider {
            "OpenAI" => openai_image_tokens,
            "Anthropic" => anthropic_image_tokens,
            _ => gemini_image_tokens,
        };
        self.text() + self.images.iter().map(per_image).sum::<u64>()
    }
}

fn count(bpe: &CoreBPE, text: &str) -> u64 {
    bpe.encode_with_special_tokens(text).len() as u64
}

fn measure(bpe: &CoreBPE, req: &VlmRequest, protocol: ProtocolKind) -> Result<Count, Box<dyn std::error::Error>> {
    let tools: Vec<_> = req
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
        .collect();
    let mut tool_tokens = if tools.is_empty() { 0 } else { count(bpe, &serde_json::to_string(&tools)?) };
    if let Some(spec) = &req.json_schema {
        tool_tokens += count(bpe, &serde_json::to_string(&spec.schema)?);
    }
    let mut user_text = 0;
    let mut images = Vec::new();
    for part in &req.user {
        match part {
            Part::Text(t) => user_text += count(bpe, t),
            Part::Image { mime, data, detail } => {
                let (width, height) =
                    image::ImageReader::new(Cursor::new(data)).with_guessed_format()?.into_dimensions()?;
                images.push(Image { mime: mime.clone(), width, height, detail: *detail });
            }
        }
    }
    Ok(Count {
        system: count(bpe, &req.system),
        tools: tool_tokens,
        user_text,
        images,
        output: count(bpe, &typical_reply(protocol)),
    })
}

fn spec(protocol: ProtocolKind, text_only: bool) -> Result<EpisodeSpec, Box<dyn std::error::Error>> {
    let arena = match protocol {
        ProtocolKind::Objectnav => "house_a",
        ProtocolKind::Candidates => "simple",
        ProtocolKind::Explore => "exploration",
    };
    let mut spec = EpisodeSpec::new(Arena::builtin(arena)?, format!("builtin:{arena}"));
    spec.protocol = protocol;
    spec.text_only = text_only;
    Ok(spec)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bpe = tiktoken_rs::o200k_base()?;
    let prices = PriceTable::builtin();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let protocols = [ProtocolKind::Objectnav, ProtocolKind::Explore, ProtocolKind::Candidates];
    let mut rows = Vec::new();
    for protocol in protocols {
        let with_images = runtime.block_on(initial_request(&spec(protocol, false)?))?;
        let text_only = runtime.block_on(initial_request(&spec(protocol, true)?))?;
        rows.push((protocol, measure(&bpe, &with_images, protocol)?, measure(&bpe, &text_only, protocol)?));
    }

    println!("Text tokens (o200k_base) of each protocol's start-of-episode request:\n");
    println!("| protocol | system | tools / schema | user text | text total | images (detail) | text-only total |");
    println!("| --- | ---: | ---: | ---: | ---: | --- | ---: |");
    for (protocol, c, t) in &rows {
        let images: Vec<String> = c
            .images
            .iter()
            .map(|i| {
                format!("{}×{} {} ({})", i.width, i.height, i.mime.trim_start_matches("image/"), i.detail.as_str())
            })
            .collect();
        println!(
            "| {protocol} | {} | {} | {} | {} | {} | {} |",
            c.system,
            c.tools,
            c.user_text,
            c.text(),
            images.join(" + "),
            t.text()
        );
    }

    println!("\nImage tokens per request:\n");
    println!("| protocol | OpenAI (low) | OpenAI (if high) | Anthropic (w·h/750) | Gemini (258 each) |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for (protocol, c, _) in &rows {
        let sum = |f: fn(&Image) -> u64| c.images.iter().map(f).sum::<u64>();
        let high: u64 = c
            .images
            .iter()
            .map(|i| openai_image_tokens(&Image { detail: ImageDetail::High, mime: i.mime.clone(), ..*i }))
            .sum();
        println!(
            "| {protocol} | {} | {high} | {} | {} |",
            sum(openai_image_tokens),
            sum(anthropic_image_tokens),
            sum(gemini_image_tokens)
        );
    }

    println!("\nPer decision (input with images; output = a typical reply) and per hour at 0.2 Hz (720 decisions):\n");
    println!(
        "| protocol | model | input tokens | output tokens | $ / decision | $ / hour | $ / hour, prefix cached | \
         text-only input | text-only $ / hour |"
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (protocol, c, t) in &rows {
        for (provider, model) in MODELS {
            let price = |input: u64, cached: u64| {
                let usage = Usage {
                    prompt_tokens: input,
                    completion_tokens: c.output,
                    cached_tokens: cached,
                    ..Usage::default()
                };
                prices.cost(model, &usage).ok_or_else(|| format!("no built-in price for {model}"))
            };
            let (input, input_text) = (c.input(provider), t.input(provider));
            let (cost, cost_text) = (price(input, 0)?, price(input_text, 0)?);
            let cost_cached = price(input, c.prefix())?;
            println!(
                "| {protocol} | {model} | {input} | {} | ${cost:.6} | ${:.3} | ${:.3} | {input_text} | ${:.3} |",
                c.output,
                cost * DECISIONS_PER_HOUR,
                cost_cached * DECISIONS_PER_HOUR,
                cost_text * DECISIONS_PER_HOUR
            );
        }
    }
    Ok(())
}
