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

use nav_hal::arena::Arena;
use nav_planner::navigator::episode::{EpisodeSpec, initial_request};
use nav_planner::navigator::estimate::{ImageSize, RequestTokens, TokenCounter, image_tokens, typical_reply};
use nav_planner::protocol::ProtocolKind;
use nav_planner::vlm::{ImageDetail, PriceTable, Provider, Usage, VlmRequest};

/// Decisions per hour at the seed-001 base rate of one call every 5 s.
const DECISIONS_PER_HOUR: f64 = 0.2 * 3600.0;

/// The three models priced, one per provider.
const MODELS: [(Provider, &str); 3] = [
    (Provider::OpenAi, "gpt-4o-mini"),
    (Provider::Gemini, "gemini-2.5-flash-lite"),
    (Provider::Anthropic, "claude-haiku-4-5"),
];

/// The token components of one request plus the typical reply's output.
struct Count {
    tokens: RequestTokens,
    output: u64,
}

impl Count {
    fn input(&self, provider: Provider) -> u64 {
        self.tokens.input(provider)
    }
}

fn measure(
    counter: &TokenCounter,
    req: &VlmRequest,
    protocol: ProtocolKind,
) -> Result<Count, Box<dyn std::error::Error>> {
    Ok(Count { tokens: RequestTokens::measure(counter, req)?, output: counter.count(&typical_reply(protocol)) })
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
    let bpe = TokenCounter::o200k()?;
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
            .tokens
            .images
            .iter()
            .map(|i| {
                format!("{}×{} {} ({})", i.width, i.height, i.mime.trim_start_matches("image/"), i.detail.as_str())
            })
            .collect();
        println!(
            "| {protocol} | {} | {} | {} | {} | {} | {} |",
            c.tokens.system,
            c.tokens.tools,
            c.tokens.user_text,
            c.tokens.text(),
            images.join(" + "),
            t.tokens.text()
        );
    }

    println!("\nImage tokens per request:\n");
    println!("| protocol | OpenAI (low) | OpenAI (if high) | Anthropic (w·h/750) | Gemini (258 each) |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for (protocol, c, _) in &rows {
        let sum = |p: Provider| c.tokens.images.iter().map(|i| image_tokens(p, i)).sum::<u64>();
        let high: u64 = c
            .tokens
            .images
            .iter()
            .map(|i| image_tokens(Provider::OpenAi, &ImageSize { detail: ImageDetail::High, ..i.clone() }))
            .sum();
        println!(
            "| {protocol} | {} | {high} | {} | {} |",
            sum(Provider::OpenAi),
            sum(Provider::Anthropic),
            sum(Provider::Gemini)
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
            let cost_cached = price(input, c.tokens.prefix())?;
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
