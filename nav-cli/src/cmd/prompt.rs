//! `nav prompt`: the exact request a backend would send for a given state
//! (the episode's start state in the built-in simulator).

use crate::config::NavConfig;
use crate::exit::{CmdResult, internal, runtime, usage};
use clap::Args;
use nav_planner::navigator::episode::{EpisodeSpec, initial_request};
use nav_planner::protocol::ProtocolKind;
use nav_planner::vlm::wire::{self, f32_json};
use nav_planner::vlm::{Part, VlmRequest};
use serde_json::{Value, json};
use std::path::PathBuf;

/// Print the exact request a backend would send for the start state of an
/// episode: with --vlm, the provider's wire-format body; without, the
/// provider-neutral request. Images are summarized unless --with-images.
#[derive(Args, Debug)]
pub struct PromptArgs {
    /// Planner protocol.
    #[arg(long, short, default_value = "objectnav")]
    protocol: ProtocolKind,
    /// Built-in arena (default per protocol).
    #[arg(long)]
    arena: Option<String>,
    /// An arena JSON file.
    #[arg(long, value_name = "PATH")]
    arena_file: Option<PathBuf>,
    /// Render the wire format of this provider: openai, gemini, vertex or anthropic.
    #[arg(long)]
    vlm: Option<String>,
    /// Model id for the wire format.
    #[arg(long)]
    model: Option<String>,
    /// Base URL of an OpenAI-compatible server (compatible servers get
    /// `max_tokens`, OpenAI itself `max_completion_tokens`).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// Send no images.
    #[arg(long)]
    text_only: bool,
    /// Seed (start pose / target draw).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Include image bytes (base64) instead of a size and hash summary.
    #[arg(long)]
    with_images: bool,
    /// Configuration file (TOML).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    experiment: super::experiment::ExperimentArgs,
}

/// Replaces base64 image payloads in a wire body with a short summary.
pub fn redact_images(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, val) in m.iter_mut() {
                match (k.as_str(), &*val) {
                    ("url", Value::String(s)) if s.starts_with("data:") => {
                        let len = s.len();
                        *val = Value::String(format!("data:<{len} bytes redacted>"));
                    }
                    ("data", Value::String(s)) if s.len() > 256 => {
                        let len = s.len();
                        *val = Value::String(format!("<{len} base64 chars redacted>"));
                    }
                    _ => redact_images(val),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(redact_images),
        _ => {}
    }
}

fn neutral(req: &VlmRequest, with_images: bool) -> Value {
    let user: Vec<Value> = req
        .user
        .iter()
        .map(|p| match p {
            Part::Text(t) => json!({"type": "text", "text": t}),
            Part::Image { mime, data, detail } if with_images => {
                use base64::Engine as _;
                json!({"type": "image", "mime": mime, "detail": detail.as_str(),
                       "data": base64::engine::general_purpose::STANDARD.encode(data)})
            }
            Part::Image { mime, data, detail } => {
                json!({"type": "image", "mime": mime, "detail": detail.as_str(), "bytes": data.len()})
            }
        })
        .collect();
    json!({
        "system": req.system,
        "user": user,
        "tools": req.tools,
        "tool_choice": req.tool_choice,
        "json_schema": req.json_schema,
        "temperature": req.temperature.map(f32_json),
        "max_tokens": req.max_tokens,
        "timeout_s": req.timeout.map(|t| t.as_secs_f64()),
        "cache_system": req.cache_system,
    })
}

/// Runs the command.
pub fn run(args: PromptArgs) -> CmdResult {
    let config = NavConfig::load_opt(args.config.as_deref())?;
    let (arena, source) = super::load_arena(args.arena.as_deref(), args.arena_file.as_deref(), args.protocol)?;
    let mut spec = EpisodeSpec::new(arena, source);
    spec.protocol = args.protocol;
    spec.seed = args.seed;
    spec.text_only = args.text_only;
    spec.sim = config.sim.clone();
    spec.grounding = args.experiment.grounding_text(&config)?;
    spec.verbalized_entropy = args.experiment.verbalized_entropy(&config);
    let rt = runtime()?;
    let req = rt.block_on(initial_request(&spec)).map_err(|e| usage(e.to_string()))?;
    let mut body = match args.vlm.as_deref() {
        None => neutral(&req, args.with_images),
        Some(name) => {
            // The same config and options the backend would use (the
            // `[vlm]` section of --config included).
            let cfg = config.backend(Some(name), args.model.as_deref(), args.base_url.as_deref())?;
            wire::request_body(&cfg, &req)
        }
    };
    if !args.with_images {
        redact_images(&mut body);
    }
    crate::exit::print(&serde_json::to_string_pretty(&body).map_err(internal)?)?;
    Ok(0)
}
