//! `nav run`: one episode in the built-in simulator.

use crate::cmd::experiment::{EpisodeEnd, FeedbackSource, task_instruction};
use crate::config::NavConfig;
use crate::exit::{CmdResult, Exit, episode_error, internal, print, runtime, usage};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use nav_memory::grounding::{EpisodeGrounding, GroundingStore};
use nav_planner::navigator::candidates_loop::WorldModelMode;
use nav_planner::navigator::episode::{COST_LIMIT_END, EpisodeSpec, PerceptionChoice, PlannerChoice, run_episode};
use nav_planner::navigator::{StepLog, read_log};
use nav_planner::offline::VlmNoise;
use nav_planner::protocol::ProtocolKind;
use nav_planner::replay::ReplayVlm;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

/// Where `nav run` reads voice commands from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VoiceSource {
    /// Standard input, one command a line.
    Stdin,
}

/// On or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    /// Enabled.
    On,
    /// Disabled.
    Off,
}

/// Run one episode in the built-in simulator. Defaults: a built-in house,
/// the objectnav protocol, the offline planner (no API key), memory on.
///
/// Built-in arenas: simple, exploration, dead_end, narrow_corridor (the
/// four small test arenas), house_a, house_b, house_c (multi-room houses) and
/// proc_<seed> (a procedurally generated house).
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Built-in arena (default: house_a for objectnav, simple for candidates, exploration for explore).
    #[arg(long)]
    pub arena: Option<String>,
    /// An arena JSON file (format: docs/SIMULATOR.md, "Arenas").
    #[arg(long, value_name = "PATH")]
    pub arena_file: Option<PathBuf>,
    /// Planner protocol.
    #[arg(long, default_value = "objectnav")]
    pub protocol: ProtocolKind,
    /// offline (a stand-in for a model that knows only what a model's
    /// request carries; no network), frontier or map (non-VLM baselines),
    /// or vlm.
    #[arg(long, default_value = "offline")]
    pub planner: PlannerChoice,
    #[command(flatten)]
    pub backend: super::VlmArgs,
    /// Spatial memory for the planner (default: `[objectnav] memory` of
    /// --config, else on).
    #[arg(long, value_enum)]
    pub memory: Option<OnOff>,
    /// Send no images (text-only models, cheaper calls).
    #[arg(long)]
    pub text_only: bool,
    /// Explore only: the exploration memory's session file (rooms, dead
    /// ends, recent actions), loaded at the start when it exists and saved
    /// atomically at the end; YAML, or JSON for a .json name.
    #[arg(long, value_name = "PATH")]
    pub memory_file: Option<PathBuf>,
    /// Noise of the offline VLM stand-in: missed targets, false sightings
    /// and angle error (degrees, std), e.g. miss=0.1,false=0.05,angle=15,seed=7.
    #[arg(long, value_name = "miss=P,false=P,angle=DEG,seed=N")]
    pub vlm_noise: Option<VlmNoise>,
    /// ObjectNav perception stage: sim (the simulator's label buffer, a
    /// perfect detector) or vlm (the model finds the target's box; default
    /// with --planner vlm).
    #[arg(long, value_name = "sim|vlm")]
    pub perception: Option<PerceptionChoice>,
    /// Seed: 0 uses the arena's start and goal; others draw a start (and a target in houses).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Step/cycle budget (default: --config's `[objectnav] max_steps`,
    /// `[candidates] max_cycles` or `[explore] max_decisions` when the file
    /// sets it, else the arena's criteria).
    #[arg(long)]
    pub max_steps: Option<u32>,
    /// Candidates protocol world model: vision (depth-camera frames, 60°
    /// field of view, after a 6 × 60° scan), lidar (a 360° LiDAR) or
    /// ground-truth (default: `[candidates] world_model` of --config, else vision).
    #[arg(long, value_enum)]
    pub world_model: Option<WorldModelArg>,
    /// Write the step log (JSONL, one flushed line per step).
    #[arg(long, value_name = "PATH")]
    pub log: Option<PathBuf>,
    /// Draw the trajectory over the map (.svg or .png).
    #[arg(long, value_name = "PATH")]
    pub plot: Option<PathBuf>,
    /// Print the run summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub record: super::RecordArgs,
    /// Configuration file (TOML).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A set of config values shipped with navkit, applied before --config
    /// and the flags (which override it): llmos, the original LLMos
    /// pipeline's values (docs/CANDIDATES.md, "The LLMos preset").
    #[arg(long, value_enum, value_name = "NAME")]
    pub preset: Option<crate::config::Preset>,
    #[command(flatten)]
    pub experiment: super::experiment::ExperimentArgs,
    /// Episode number for --experiment (default: one after the highest saved episode).
    #[arg(long, value_name = "N")]
    pub episode: Option<u64>,
    /// Per-step feedback for --experiment: a JSON-lines file of grounding_per_step entries, or - to type
    /// `feedback : spatial: kitchen is green` lines on standard input while the run goes.
    #[arg(long, value_name = "FILE|-")]
    pub feedback: Option<PathBuf>,
    /// Explore and objectnav: read voice commands from standard input, one a line — explore, stop,
    /// pause, resume, go home (or home, return home), anything else is said to the planner — and print
    /// the announcements on stderr as `say:` lines. Off by default (--feedback - reads standard input
    /// too, so the two cannot be combined). In explore the simulator's clock runs on during a pause.
    #[arg(long, value_enum, value_name = "stdin")]
    pub voice: Option<VoiceSource>,
}

/// The candidates protocol's world model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WorldModelArg {
    /// Built from depth-camera frames, vision mode (unknown cells cost 50).
    Vision,
    /// Built from a 360° LiDAR (unknown cells cost 50).
    Lidar,
    /// The arena rasterized (unknown cells cost 5).
    GroundTruth,
}

/// Builds the episode spec from arguments and config.
/// `replay` is the model `--replay` asked for, already built.
pub fn build_spec(args: &RunArgs, config: &NavConfig, replay: Option<&Arc<ReplayVlm>>) -> Result<EpisodeSpec, Exit> {
    let (arena, source) = super::load_arena(args.arena.as_deref(), args.arena_file.as_deref(), args.protocol)?;
    let mut spec = EpisodeSpec::new(arena, source);
    spec.protocol = args.protocol;
    spec.planner = args.planner;
    spec.memory = args.memory.map_or(config.objectnav.memory, |m| m == OnOff::On);
    spec.seed = args.seed;
    spec.max_steps = args.max_steps.or_else(|| config.budget(args.protocol));
    spec.text_only = args.text_only;
    if args.memory_file.is_some() && args.protocol != ProtocolKind::Explore {
        return Err(usage("--memory-file is the explore protocol's session file (--protocol explore)"));
    }
    spec.memory_file = args.memory_file.clone();
    spec.vlm_noise = args.vlm_noise.unwrap_or_default();
    spec.perception = args.perception;
    if args.perception == Some(PerceptionChoice::Vlm) && args.planner != PlannerChoice::Vlm {
        return Err(usage("--perception vlm needs a model (--planner vlm --vlm PROVIDER)"));
    }
    if args.vlm_noise.is_some() && args.planner == PlannerChoice::Vlm {
        return Err(usage("--vlm-noise applies to the offline stand-in, not --planner vlm"));
    }
    spec.sim = config.sim.clone();
    spec.objectnav = config.objectnav.clone();
    spec.explore = config.explore.clone();
    spec.candidates = config.candidates.clone();
    if let Some(w) = args.world_model {
        spec.candidates.world_model = match w {
            WorldModelArg::Vision => WorldModelMode::Vision,
            WorldModelArg::Lidar => WorldModelMode::Lidar,
            WorldModelArg::GroundTruth => WorldModelMode::GroundTruth,
        };
    }
    if args.experiment.experiment.is_none() && (args.feedback.is_some() || args.episode.is_some()) {
        return Err(usage("--feedback and --episode need --experiment NAME"));
    }
    if args.voice.is_some() {
        if !matches!(args.protocol, ProtocolKind::Explore | ProtocolKind::Objectnav) {
            return Err(usage("--voice works with --protocol explore or objectnav"));
        }
        if args.feedback.as_deref() == Some(std::path::Path::new("-")) {
            return Err(usage("--voice stdin and --feedback - both read standard input: use --feedback FILE"));
        }
        spec.voice = Some(nav_planner::navigator::voice::VoiceInbox::new());
    }
    spec.grounding = args.experiment.grounding_text(config)?;
    spec.verbalized_entropy = args.experiment.verbalized_entropy(config);
    spec.call_timeout_s = args.backend.timeout;
    if args.planner == PlannerChoice::Vlm {
        spec.vlm = Some(match replay {
            Some(r) => Arc::clone(r) as Arc<dyn nav_planner::vlm::VisionLanguageModel>,
            None => args.backend.build(config)?,
        });
        spec.scene_vlm = args.backend.build_scene(config)?;
        spec.budget = args.backend.budget(config)?;
    } else if args.backend.vlm.is_some() {
        return Err(usage("--vlm needs --planner vlm"));
    } else if args.backend.max_cost_usd.is_some() {
        return Err(usage("--max-cost-usd needs --planner vlm"));
    }
    if let Some(p) = &args.plot {
        crate::plot::check_extension(p)?;
    }
    Ok(spec)
}

/// Refuses an output flag naming one of the run's input files (the step
/// log over the memory file would lose the memory): checked before anything
/// is opened.
fn check_outputs(args: &RunArgs) -> Result<(), Exit> {
    let inputs: Vec<&std::path::Path> = [&args.memory_file, &args.feedback, &args.config, &args.arena_file]
        .into_iter()
        .flatten()
        .map(PathBuf::as_path)
        .filter(|p| *p != std::path::Path::new("-"))
        .collect();
    let outputs = [("--log", &args.log), ("--record", &args.record.record), ("--plot", &args.plot)];
    for (flag, path) in outputs {
        if let Some(p) = path {
            crate::exit::check_output(flag, p, &inputs)?;
        }
    }
    Ok(())
}

/// Runs the command.
pub fn run(args: RunArgs) -> CmdResult {
    check_outputs(&args)?;
    let config = NavConfig::load_layers(args.preset, args.config.as_deref())?;
    config.check_outputs(
        args.config.as_deref(),
        &[
            ("--log", args.log.as_deref()),
            ("--record", args.record.record.as_deref()),
            ("--plot", args.plot.as_deref()),
        ],
    )?;
    let replay = if args.planner == PlannerChoice::Vlm { args.backend.replay_model(&config)? } else { None };
    let mut spec = build_spec(&args, &config, replay.as_ref())?;
    let recording = args.record.open()?;
    let max = u64::from(spec.max_steps.unwrap_or(spec.arena.criteria.max_steps));
    let bar = if args.json || !std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(Some(max), ProgressDrawTarget::hidden())
    } else {
        let b = ProgressBar::new(max);
        b.set_style(
            ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} steps ({elapsed})")
                .map_err(internal)?
                .progress_chars("=> "),
        );
        b.set_message(format!("{} {}", spec.arena.name, spec.protocol));
        b
    };
    let mut log = match &args.log {
        Some(p) => StepLog::create(p).map_err(|e| usage(e.to_string()))?,
        None if args.plot.is_some() => StepLog::memory(),
        None => StepLog::null(),
    };
    let mut record_tap = recording.as_ref().map(|r| {
        r.attach(&mut spec);
        r.step_tap()
    });
    let mut say_tap = spec.voice.is_some().then(super::voice_stdin::say_tap);
    if record_tap.is_some() || say_tap.is_some() {
        log = log.with_tap(move |r| {
            if let Some(t) = record_tap.as_mut() {
                t(r);
            }
            if let Some(t) = say_tap.as_mut() {
                t(r);
            }
        });
    }
    if let Some(inbox) = &spec.voice {
        super::voice_stdin::spawn_stdin(inbox.clone());
    }
    let rt = runtime()?;
    let store = args.experiment.store()?;
    if store.is_some() {
        // a bad save format fails before the episode, not after it
        config.grounding.save_format()?;
    }
    let episode_id = args.episode.unwrap_or_else(|| store.as_ref().map_or(1, GroundingStore::next_episode_id));
    let mut record = EpisodeGrounding::new(episode_id);
    let mut feedback = FeedbackSource::open(args.feedback.as_deref())?;
    let instruction = task_instruction(&spec.arena);
    let mut last_step = 0;
    let mut progress = |step: u64| {
        if let Some(r) = &replay {
            r.set_step(step);
        }
        bar.set_position(step.min(max));
        last_step = step;
        feedback.poll(step, &instruction, &mut record);
    };
    if let Some(r) = &replay {
        // every loop logs its start as step 0 before it asks the model anything
        r.set_step(0);
    }
    let summary = rt.block_on(run_episode(&spec, &mut log, &mut progress));
    bar.finish_and_clear();
    if let Some(r) = &replay {
        crate::exit::diag!("{}", replay_line(r));
    }
    let summary = summary.map_err(episode_error)?;
    if spec.voice.is_some() {
        crate::exit::diag!("say: Run ended: {}.", summary.end.replace('_', " "));
    }
    let grounding_files = match store {
        Some(store) => {
            feedback.finish(last_step, &instruction, &mut record);
            let end = EpisodeEnd { store, record, vlm: spec.vlm.as_deref(), config: &config };
            end.save(&rt)?
        }
        None => Vec::new(),
    };
    // after the grounding generation, whose model call is recorded too
    let recorded = recording.as_ref().map(super::finish_recording).transpose()?;
    let mut plot_error = None;
    if let Some(path) = &args.plot {
        let records = match &args.log {
            Some(p) => read_log(p).map_err(internal)?.0,
            None => log.records().to_vec(),
        };
        let arena = records
            .first()
            .and_then(|r| r.info.get("arena_json"))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_else(|| spec.arena.clone());
        let title = format!(
            "{} | {} | {} | {}",
            summary.arena,
            summary.protocol,
            summary.planner,
            if summary.success { "success" } else { "failure" }
        );
        // a picture that cannot be written fails after the summary is printed
        plot_error = crate::plot::draw(&arena, &records, &title, path).err();
    }
    if args.json {
        print(&serde_json::to_string(&summary).map_err(internal)?)?;
    } else {
        let mut text = summary.report();
        if let Some(p) = &args.plot {
            text.push_str(&format!("\n  picture: {}", p.display()));
        }
        if let Some(p) = &args.log {
            text.push_str(&format!("\n  step log: {}", p.display()));
        }
        if let Some(r) = &recorded {
            text.push_str(&format!("\n  recording: {}", r.line()));
        }
        for p in &grounding_files {
            text.push_str(&format!("\n  grounding: {}", p.display()));
        }
        print(&text)?;
    }
    if let Some(e) = plot_error {
        return Err(e);
    }
    if let Some(e) = &summary.output_error {
        return Err(Exit::Output(e.clone()));
    }
    if let Some(b) = spec.budget.as_ref().filter(|_| summary.end == COST_LIMIT_END) {
        crate::exit::diag!("{}", super::cost_limit_message(b));
        return Ok(super::EXIT_COST_LIMIT);
    }
    Ok(if summary.passed { 0 } else { 1 })
}

/// What a replay did, for standard error: requests answered from the
/// recording, sent live, recorded ones never asked, and the recorded model
/// time and cost that were not spent again.
pub fn replay_line(r: &ReplayVlm) -> String {
    let st = r.stats();
    let book = r.book();
    let mut line = format!(
        "replay: {} of {} request(s) answered from {} ({} recorded call(s) not asked); recorded model time {:.1} s, ${:.4}",
        st.replayed,
        st.requests,
        book.source(),
        st.unused,
        book.recorded_latency_ms() / 1000.0,
        book.recorded_cost_usd()
    );
    if st.live > 0 {
        line.push_str(&format!("; {} sent to the live model after the divergence", st.live));
    }
    line
}
