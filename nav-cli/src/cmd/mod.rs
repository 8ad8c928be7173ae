//! One module per subcommand.

pub mod eval;
pub mod experiment;
pub mod grounding;
#[cfg(feature = "habitat")]
pub mod habitat;
pub mod parse;
pub mod prompt;
pub mod replay;
#[cfg(feature = "rosmaster")]
pub mod rosmaster;
pub mod run;
#[cfg(feature = "habitat")]
pub mod workers;

use crate::config::NavConfig;
use crate::exit::{Exit, usage};
use clap::Args;
use nav_hal::arena::Arena;
use nav_planner::protocol::ProtocolKind;
use nav_planner::vlm::{VisionLanguageModel, build_backend};
use std::path::Path;
use std::sync::Arc;

/// The backend options of the commands that can drive a VLM
/// (`--planner vlm`): provider, model and base URL, each falling back to the
/// config file's `[vlm]` section.
#[derive(Args, Debug, Default)]
pub struct VlmArgs {
    /// VLM provider: openai, gemini, vertex or anthropic (with --planner vlm).
    #[arg(long)]
    pub vlm: Option<String>,
    /// Model id (default: the provider's default).
    #[arg(long)]
    pub model: Option<String>,
    /// Base URL (OpenAI-compatible servers: OpenRouter, Ollama, vLLM, llama.cpp).
    #[arg(long)]
    pub base_url: Option<String>,
    /// Deadline of each model call in seconds, retries included (default:
    /// [vlm] timeout_s, 8 s); also the loops' inference timeouts (the
    /// candidates loop's 5 s). Raise it for local models on a CPU.
    #[arg(long, value_name = "SECONDS", value_parser = parse_timeout)]
    pub timeout: Option<f64>,
}

/// `--timeout SECONDS`: a positive, finite number of seconds up to an hour.
pub(crate) fn parse_timeout(s: &str) -> Result<f64, String> {
    let t: f64 = s.trim().parse().map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if t.is_finite() && t > 0.0 && t <= 3600.0 {
        Ok(t)
    } else {
        Err(format!("{s} must be more than 0 and at most 3600 seconds"))
    }
}

impl VlmArgs {
    /// Builds the backend these options (over `config`'s `[vlm]`) name;
    /// exit 2 naming the problem (unknown provider, missing key, …).
    pub fn build(&self, config: &NavConfig) -> Result<Arc<dyn VisionLanguageModel>, Exit> {
        let mut backend = config.backend(self.vlm.as_deref(), self.model.as_deref(), self.base_url.as_deref())?;
        if let Some(t) = self.timeout {
            backend.timeout_s = t;
        }
        build_backend(&backend).map(Arc::from).map_err(|e| usage(e.to_string()))
    }
}

/// The built-in arena a protocol runs on when none is given.
pub fn default_arena(protocol: ProtocolKind) -> &'static str {
    match protocol {
        ProtocolKind::Objectnav => "house_a",
        ProtocolKind::Candidates => "simple",
        ProtocolKind::Explore => "exploration",
    }
}

/// Resolves `--arena NAME` / `--arena-file PATH` (exit 2 with the file's or
/// field's name on a bad arena). Returns the arena and its source label.
pub fn load_arena(name: Option<&str>, file: Option<&Path>, protocol: ProtocolKind) -> Result<(Arena, String), Exit> {
    match (name, file) {
        (Some(_), Some(_)) => Err(usage("give --arena or --arena-file, not both")),
        (_, Some(path)) => Arena::load(path).map(|a| (a, path.display().to_string())).map_err(|e| usage(e.to_string())),
        (name, None) => {
            let name = name.unwrap_or(default_arena(protocol));
            // the error lists the built-in arenas itself
            Arena::builtin(name).map(|a| (a, format!("builtin:{name}"))).map_err(|e| usage(e.to_string()))
        }
    }
}
