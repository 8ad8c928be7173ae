//! One module per subcommand.

pub mod eval;
pub mod eval_replay;
pub mod experiment;
pub mod grounding;
#[cfg(feature = "habitat")]
pub mod habitat;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod parse;
pub mod progress;
pub mod prompt;
pub mod replay;
#[cfg(feature = "rosmaster")]
pub mod rosmaster;
pub mod run;
#[cfg(feature = "rosmaster")]
pub mod signals;
#[cfg(feature = "rosmaster")]
pub mod sim_robot;
pub mod voice_stdin;
#[cfg(feature = "habitat")]
pub mod workers;

use crate::config::NavConfig;
use crate::exit::{Exit, usage};
use clap::Args;
use nav_hal::arena::Arena;
use nav_planner::protocol::ProtocolKind;
use nav_planner::record::{DEFAULT_LIVE_ADDR, LiveOptions, RecordError, RecordOptions, RecordStats, Recording};
use nav_planner::replay::{ReplayBook, ReplayVlm};
use nav_planner::vlm::{BackendConfig, CostBudget, VisionLanguageModel, build_backend};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The backend options of the commands that can drive a VLM
/// (`--planner vlm`): provider, model and base URL, each falling back to the
/// config file's `[vlm]` section.
#[derive(Args, Debug, Default)]
pub struct VlmArgs {
    /// VLM provider: openai, gemini, vertex or anthropic (with --planner vlm);
    /// `replay` answers from a recording (--replay).
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
    /// Stop cleanly once the answered model calls cost this many US dollars
    /// (measured usage × the price table; the model needs a price). The
    /// summary so far is printed and nav exits with 4.
    #[arg(long, value_name = "USD", value_parser = parse_usd)]
    pub max_cost_usd: Option<f64>,
    /// Answer every model request with the reply recorded for the same
    /// request: an MCAP recording (--record), a step log (--log) of a run
    /// with a model, or a folder of them. Implies --vlm replay; nothing is
    /// sent or spent. See docs/EVALUATION.md.
    #[arg(long, value_name = "PATH")]
    pub replay: Option<PathBuf>,
    /// With --replay, a request the recording does not hold: `stop` ends the
    /// run (exit 6) naming the step, the request kind and the first lines
    /// that differ; `live` sends it and every later request to the live
    /// model ([vlm] in --config, or the recording's provider with --model
    /// and --base-url).
    #[arg(long, value_enum, default_value_t = ReplayMiss::Stop, value_name = "stop|live")]
    pub replay_miss: ReplayMiss,
}

/// What a replay does with a request its recording does not hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ReplayMiss {
    /// End the run: exit 6 with the divergence.
    #[default]
    Stop,
    /// Send it, and every later request, to the live model.
    Live,
}

/// Exit code of a run or suite that `--max-cost-usd` stopped.
pub const EXIT_COST_LIMIT: i32 = 4;

/// `--max-cost-usd X`: a positive, finite number of US dollars.
pub(crate) fn parse_usd(s: &str) -> Result<f64, String> {
    let x: f64 =
        s.trim().trim_start_matches('$').parse().map_err(|_| format!("{s:?} is not a number of US dollars"))?;
    if x.is_finite() && x > 0.0 { Ok(x) } else { Err(format!("{s} must be a positive number of US dollars")) }
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
        if let Some(replay) = self.replay_model(config)? {
            return Ok(replay);
        }
        let backend = self.backend_config(config)?;
        build_backend(&backend).map(Arc::from).map_err(|e| usage(e.to_string()))
    }

    /// The backend configuration these options name (over `config`'s `[vlm]`).
    pub fn backend_config(&self, config: &NavConfig) -> Result<BackendConfig, Exit> {
        let mut backend = config.backend(self.vlm.as_deref(), self.model.as_deref(), self.base_url.as_deref())?;
        if let Some(t) = self.timeout {
            backend.timeout_s = t;
        }
        Ok(backend)
    }

    /// The recording `--replay` names, when the model is a replay (`--vlm
    /// replay` needs `--replay`; `--replay` goes with no other `--vlm`).
    pub fn replay_path(&self) -> Result<Option<&Path>, Exit> {
        match (self.vlm.as_deref(), self.replay.as_deref()) {
            (Some("replay"), None) => {
                Err(usage("--vlm replay needs --replay PATH (a recording, a step log or a folder)"))
            }
            (Some("replay") | None, Some(p)) => Ok(Some(p)),
            (Some(other), Some(_)) => Err(usage(format!(
                "--replay answers from a recording, not from --vlm {other}; with --replay-miss live a request the \
                 recording does not hold goes to [vlm] of --config or to the recording's provider"
            ))),
            _ if self.replay_miss == ReplayMiss::Live => Err(usage("--replay-miss needs --replay PATH")),
            _ => Ok(None),
        }
    }

    /// Whether the model is a replay (`--replay`).
    pub fn is_replay(&self) -> bool {
        self.replay.is_some() || self.vlm.as_deref() == Some("replay")
    }

    /// The replay `--replay` names (`None` without it), with the live model
    /// behind it for `--replay-miss live`; exit 2 naming the file when it
    /// cannot be replayed.
    pub fn replay_model(&self, config: &NavConfig) -> Result<Option<Arc<ReplayVlm>>, Exit> {
        let Some(path) = self.replay_path()? else { return Ok(None) };
        let book = ReplayBook::load(path).map_err(|e| usage(format!("--replay {e}")))?;
        let mut replay = ReplayVlm::new(book);
        if self.replay_miss == ReplayMiss::Live {
            let live = self.live_model(config, &replay)?;
            replay = replay.with_live(live);
        }
        Ok(Some(Arc::new(replay)))
    }

    /// The live model of `--replay-miss live`: `[vlm]` of the config, or
    /// else the recording's provider and model; `--model`, `--base-url` and
    /// `--timeout` apply.
    pub fn live_model(&self, config: &NavConfig, replay: &ReplayVlm) -> Result<Arc<dyn VisionLanguageModel>, Exit> {
        let recorded = replay.describe();
        let provider = if config.vlm.is_some() { None } else { Some(recorded.provider.as_str()) };
        let mut backend = config.backend(provider, self.model.as_deref(), self.base_url.as_deref())?;
        if self.model.is_none() && config.vlm.is_none() {
            backend.model = Some(recorded.model);
        }
        if let Some(t) = self.timeout {
            backend.timeout_s = t;
        }
        build_backend(&backend).map(Arc::from).map_err(|e| usage(format!("--replay-miss live: {e}")))
    }

    /// The scene analyzer's own backend from the config's `[scene]`
    /// section (`--timeout` applies), or `None`: the planner's model.
    pub fn build_scene(&self, config: &NavConfig) -> Result<Option<Arc<dyn VisionLanguageModel>>, Exit> {
        // a replay answers the scene analyzer's requests too
        if self.is_replay() {
            return Ok(None);
        }
        let Some(mut backend) = config.scene.clone() else { return Ok(None) };
        if let Some(t) = self.timeout {
            backend.timeout_s = t;
        }
        build_backend(&backend).map(|b| Some(Arc::from(b))).map_err(|e| usage(format!("[scene]: {e}")))
    }

    /// The `--max-cost-usd` budget, or `None`. Exit 2 when the model has no
    /// price (its cost could never reach the limit).
    pub fn budget(&self, config: &NavConfig) -> Result<Option<Arc<CostBudget>>, Exit> {
        let Some(limit) = self.max_cost_usd else { return Ok(None) };
        if self.is_replay() {
            return Err(usage("--max-cost-usd does not apply to --replay: a replay sends nothing and spends nothing"));
        }
        let backend = self.backend_config(config)?;
        let model = backend.model_id();
        if backend.price_table().get(model).is_none() {
            return Err(usage(format!(
                "--max-cost-usd: no price for model {model:?}; add [vlm.prices.\"{model}\"] input_per_mtok and \
                 output_per_mtok to --config"
            )));
        }
        CostBudget::new(limit).map(|b| Some(Arc::new(b))).map_err(usage)
    }
}

/// The message for a run or suite that `--max-cost-usd` stopped.
pub fn cost_limit_message(budget: &CostBudget) -> String {
    format!(
        "nav: stopped: --max-cost-usd {} reached (${:.4} spent by answered model calls)",
        budget.limit_usd(),
        budget.spent_usd()
    )
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

/// `--record PATH.mcap`, `--live [ADDR]` and their frame decimation, shared
/// by the commands that run a robot (docs/RECORDING.md).
#[derive(Args, Debug, Default)]
pub struct RecordArgs {
    /// Record the run as MCAP (Foxglove schemas in Protobuf: camera, LiDAR,
    /// poses, map, path/anchors/frontiers/candidates; the step log and every
    /// planner request and reply as JSON); open it in Foxglove or Rerun. See
    /// docs/RECORDING.md.
    #[arg(long, value_name = "PATH.mcap")]
    pub record: Option<std::path::PathBuf>,
    /// Record camera frames, scans, the map and the scene every N steps
    /// (step records, poses and planner calls are always recorded); the
    /// live view too.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub record_every: u32,
    /// Serve the same channels live over the Foxglove WebSocket protocol
    /// at ADDR (default 127.0.0.1:8765): in Foxglove, Open connection →
    /// Foxglove WebSocket → ws://ADDR. A slow viewer loses its oldest
    /// messages; the run never waits for it.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = DEFAULT_LIVE_ADDR)]
    pub live: Option<String>,
    /// Allow --live on an address other than loopback (anyone who can
    /// reach it sees the camera, the map and the model's requests).
    #[arg(long, requires = "live")]
    pub live_any_address: bool,
}

impl RecordArgs {
    /// Opens the recording and the live server when `--record` or `--live`
    /// is given (exit 2 naming the file or the address when it cannot be
    /// created, does not end in `.mcap`, or is not loopback without
    /// `--live-any-address`). The loop waits for the writer when it falls
    /// behind (a simulator's clock waits too).
    pub fn open(&self) -> Result<Option<Recording>, Exit> {
        self.open_with(false)
    }

    /// As [`RecordArgs::open`] for a robot's real-time loop: when the
    /// writer falls behind, the oldest queued frames are dropped (counted
    /// in the report) instead of the loop waiting.
    pub fn open_realtime(&self) -> Result<Option<Recording>, Exit> {
        self.open_with(true)
    }

    fn open_with(&self, realtime: bool) -> Result<Option<Recording>, Exit> {
        if self.record.is_none() && self.live.is_none() {
            return Ok(None);
        }
        let live = match &self.live {
            Some(text) => {
                let addr: SocketAddr =
                    text.parse().map_err(|_| usage(format!("--live {text}: not an address such as 127.0.0.1:8765")))?;
                if !addr.ip().is_loopback() && self.live_any_address {
                    crate::exit::diag!(
                        "warning: --live on {addr}: anyone who can reach this address sees the camera, the map and the model's requests"
                    );
                }
                Some(LiveOptions { any_address: self.live_any_address, ..LiveOptions::new(addr) })
            }
            None => None,
        };
        let options = RecordOptions {
            file: self.record.clone(),
            every: self.record_every,
            live,
            drop_when_behind: realtime,
            ..RecordOptions::default()
        };
        let recording = Recording::start(options).map_err(|e| match e {
            RecordError::Every => usage("--record-every must be at least 1"),
            RecordError::Live { addr, message } if message.ends_with("allow it explicitly") => {
                usage(format!("--live {addr}: {message} with --live-any-address"))
            }
            RecordError::Live { addr, message } => usage(format!("--live {addr}: {message}")),
            e => usage(format!("--record {e}")),
        })?;
        if let Some(addr) = recording.live_addr() {
            crate::exit::diag!("live: ws://{addr} (Foxglove: Open connection, Foxglove WebSocket, ws://{addr})");
        }
        Ok(Some(recording))
    }
}

/// Creates the recording `path`: a bad name or a file that cannot be made
/// is exit 2 naming it.
pub fn create_recording(path: &Path, every: u32) -> Result<Recording, Exit> {
    Recording::create(path, every).map_err(|e| match e {
        RecordError::Every => usage("--record-every must be at least 1"),
        e => usage(format!("--record {e}")),
    })
}

/// Closes a recording; a write failure (a full disk) is exit 3 naming the file.
pub fn finish_recording(r: &Recording) -> Result<RecordStats, Exit> {
    r.finish().map_err(|e| Exit::Output(e.to_string()))
}

/// Opens `path` for reading unless it is a FIFO or a socket (an
/// `InvalidInput` error before it is opened: opening a FIFO that has no
/// writer blocks forever). A device such as `/dev/zero` is opened; its
/// reader's limit ends it.
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    nav_core::bounded::open_regular(path)
}
