//! `nav eval`: many episodes in parallel, a progress bar, and a table.

use super::eval_replay::{EpisodeReplay, ReplaySetup, ReplayTally, Replayed};
use super::progress::Progress;
use crate::config::NavConfig;
use crate::exit::{CmdResult, Exit, internal, print, usage};
use clap::Args;
use nav_hal::arena::Arena;
use nav_planner::navigator::StepLog;
use nav_planner::navigator::episode::{
    COST_LIMIT_END, EpisodeError, EpisodeSpec, PlannerChoice, RunSummary, run_episode,
};
use nav_planner::navigator::estimate::{EpisodeEstimate, SuiteEstimate, TokenCounter, estimate_episode};
use nav_planner::navigator::eval::{
    EpisodeKey, EvalConfig, EvalReport, default_suite, default_suite_len, house_suite, house_suite_len, shard,
};
use nav_planner::offline::VlmNoise;
use nav_planner::protocol::ProtocolKind;
use nav_planner::vlm::CostBudget;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, mpsc};
use std::time::Instant;

/// Run arenas × seeds × configurations in parallel and print a table of SR,
/// SPL, collisions, coverage, ABABA and STUCK, planner/VLM calls and tokens.
///
/// The default suite: objectnav in the built-in houses (seed values 0 to 4) and
/// --procedural procedurally generated houses, with the frontier baseline
/// and the offline stand-in with memory off and on (the map baseline:
/// `--configs objectnav:map:on`); the candidates protocol's
/// offline planner in the four test arenas; the explore protocol's
/// offline planner in `exploration` and `house_a`.
///
/// On a cluster: `--shard K/N --jsonl shard-K.jsonl` in each array task,
/// then `nav eval merge shard-*.jsonl` (docs/EVALUATION.md).
///
/// With a model: `--planner vlm --vlm PROVIDER [--model ID]` runs every
/// configuration of the suite with the model (one job unless --jobs says
/// otherwise); `--estimate` first prints the expected calls, tokens and
/// dollars without calling it; `--max-cost-usd X` stops the suite cleanly
/// when the measured cost reaches X (finished episodes are kept; exit 4).
///
/// Progress goes to stderr: a bar at a terminal (none with --json), and
/// when stderr is not a terminal (CI, a cluster job's log) one line per
/// finished episode, or per 5 % of a suite of more than 20 episodes.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EvalArgs {
    /// `nav eval merge`: one table from the JSON lines of shards or runs.
    #[command(subcommand)]
    command: Option<EvalCommand>,
    /// Only these arenas (comma-separated built-in names) instead of the default suite.
    #[arg(long, value_delimiter = ',')]
    arenas: Vec<String>,
    /// Seeds per arena when --arenas is given (0..N; at least 1).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    seeds: u64,
    /// Configurations, PROTOCOL:PLANNER[:on|off], comma-separated: with
    /// --arenas, run in those arenas (default objectnav:offline:on);
    /// without, run instead of the default suite in its houses (the
    /// built-in houses × --house-seeds and --procedural houses), e.g.
    /// `--configs objectnav:map:on` for the map baseline.
    #[arg(long, value_delimiter = ',')]
    configs: Vec<String>,
    /// Procedurally generated houses in the default suite.
    #[arg(long, default_value_t = 50)]
    procedural: u64,
    /// Seeds per built-in house in the default suite.
    #[arg(long, default_value_t = 5)]
    house_seeds: u64,
    /// Parallel jobs (default: the number of CPUs).
    #[arg(long)]
    jobs: Option<usize>,
    /// Print all summaries and aggregates as one JSON object.
    #[arg(long)]
    json: bool,
    /// Also write each episode's summary to this file as it finishes (JSON
    /// lines, one flushed line per episode, in completion order): an
    /// interrupted run or a full disk loses only the episodes in flight.
    #[arg(long, value_name = "PATH")]
    jsonl: Option<PathBuf>,
    /// Also write the Markdown report to this file.
    #[arg(long, value_name = "PATH")]
    markdown: Option<PathBuf>,
    /// Run only the K-th of N disjoint, deterministic slices of the suite
    /// (1-based: a SLURM array task or Kubernetes completion index + 1);
    /// the N slices together are the whole suite, once.
    #[arg(long, value_name = "K/N")]
    shard: Option<Shard>,
    /// With --jsonl: keep the episodes that file already holds, run only the
    /// missing ones and append them (a re-queued job continues).
    #[arg(long, requires = "jsonl")]
    resume: bool,
    /// Configuration file (TOML).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A set of config values shipped with navkit, applied before --config
    /// and the flags (which override it): llmos, the original LLMos
    /// pipeline's values (docs/CANDIDATES.md, "The LLMos preset").
    #[arg(long, value_enum, value_name = "NAME")]
    preset: Option<crate::config::Preset>,
    /// Run every configuration of the suite with this planner instead of
    /// its own: offline, frontier, map or vlm (a model: needs --vlm or a
    /// [vlm] section).
    #[arg(long)]
    planner: Option<PlannerChoice>,
    /// Send no images to the model.
    #[arg(long)]
    text_only: bool,
    /// Print the expected model calls, input/output tokens and dollars of
    /// the suite's model episodes (an offline rehearsal of each episode and
    /// its real request sizes) without calling the model.
    #[arg(long)]
    estimate: bool,
    #[command(flatten)]
    backend: super::VlmArgs,
    /// Noise of the offline VLM stand-in in every objectnav episode:
    /// missed targets, false sightings, angle error (degrees, std), e.g.
    /// miss=0.1,false=0.05,angle=15,seed=7.
    #[arg(long, value_name = "miss=P,false=P,angle=DEG,seed=N")]
    vlm_noise: Option<VlmNoise>,
    /// Record every episode as MCAP in this folder, one file per episode
    /// named after it (`builtin_house_a-objectnav-offline-memon-seed0.mcap`;
    /// docs/RECORDING.md).
    #[arg(long, value_name = "DIR")]
    record_dir: Option<PathBuf>,
    /// With --record-dir: camera frames, scans, maps and scenes every N steps.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    record_every: u32,
}

/// `nav eval` subcommands.
#[derive(clap::Subcommand, Debug)]
enum EvalCommand {
    /// Merge the JSON lines of shards (or interrupted runs) into the table
    /// a single `nav eval` prints; an episode found twice counts once.
    Merge(MergeArgs),
}

/// `nav eval merge FILES…`.
#[derive(Args, Debug)]
struct MergeArgs {
    /// JSON-lines files written by `nav eval --jsonl`.
    #[arg(required = true, value_name = "FILES")]
    files: Vec<PathBuf>,
    /// Print all summaries and aggregates as one JSON object.
    #[arg(long)]
    json: bool,
    /// Also write the Markdown report to this file.
    #[arg(long, value_name = "PATH")]
    markdown: Option<PathBuf>,
}

/// `--shard K/N`: the K-th (1-based) of N slices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shard {
    index: usize,
    count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("expected K/N with 1 <= K <= N (e.g. 2/8), got {s:?}");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let index: usize = k.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Self { index, count })
    }
}

/// Largest JSON line read back from a `--jsonl` file (one episode summary
/// is a few KiB).
const MAX_SUMMARY_LINE_BYTES: u64 = 1 << 20;

/// The summaries in a `--jsonl` file; a line that is not a summary, or a
/// summary with a value out of its range (an SPL outside [0, 1]), is bad
/// input naming the file and line, and so is a path that is not a regular
/// file (a FIFO with no writer would block forever). A missing file is
/// empty with `missing_ok`.
fn read_summaries(path: &std::path::Path, missing_ok: bool) -> Result<Vec<RunSummary>, Exit> {
    let (summaries, cut) = read_summaries_to_cut(path, missing_ok)?;
    match cut {
        Some(cut) => Err(usage(format!("{}, line {}: not an episode summary: {}", path.display(), cut.line, cut.why))),
        None => Ok(summaries),
    }
}

/// Whether the file at `path` ends with a newline (false when unreadable).
fn ends_with_newline(path: &std::path::Path) -> bool {
    use std::io::{Read, Seek};
    let mut last = [0u8; 1];
    std::fs::File::open(path)
        .and_then(|mut f| f.seek(std::io::SeekFrom::End(-1)).and_then(|_| f.read_exact(&mut last)))
        .is_ok_and(|()| last[0] == b'\n')
}

/// A last line cut off by a kill or a power loss (no newline at its end, or
/// NUL bytes in it): where it starts, so `--resume` can drop it.
struct CutLine {
    line: usize,
    offset: u64,
    why: String,
}

/// [`read_summaries`], with a last line that was cut off returned apart
/// instead of failing the file (any other bad line is an error).
fn read_summaries_to_cut(path: &std::path::Path, missing_ok: bool) -> Result<(Vec<RunSummary>, Option<CutLine>), Exit> {
    let file = match super::open_regular(path) {
        Ok(f) => f,
        Err(e) if missing_ok && e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), None)),
        Err(e) => return Err(usage(format!("{}: {e}", path.display()))),
    };
    let mut reader = std::io::BufReader::new(file);
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let mut offset = 0u64;
    for line in 1.. {
        buf.clear();
        let n = nav_core::bounded::read_line_limited(&mut reader, MAX_SUMMARY_LINE_BYTES, &mut buf)
            .map_err(|e| usage(format!("{}, line {line}: {e}", path.display())))?;
        if n == 0 {
            break;
        }
        let start = offset;
        offset += n as u64;
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<RunSummary>(&buf) {
            Ok(s) => {
                check_summary(&s).map_err(|e| usage(format!("{}, line {line}: {e}", path.display())))?;
                out.push(s);
            }
            Err(e) => {
                let cut_off = !buf.ends_with(b"\n") || buf.contains(&0);
                let last = std::io::BufRead::fill_buf(&mut reader).is_ok_and(|rest| rest.iter().all(|b| *b == 0));
                if cut_off && last {
                    return Ok((out, Some(CutLine { line, offset: start, why: e.to_string() })));
                }
                return Err(usage(format!("{}, line {line}: not an episode summary: {e}", path.display())));
            }
        }
    }
    Ok((out, None))
}

/// The ranges a summary's values must lie in (what an episode can
/// produce): a named arena, no more criteria passed than judged, SPL and
/// coverage in [0, 1], lengths, times and costs finite and not negative.
fn check_summary(s: &RunSummary) -> Result<(), String> {
    // a name of only spaces or invisible characters (a zero-width space) names nothing
    let visible =
        |name: &str| name.chars().any(|c| !c.is_whitespace() && !c.is_control() && !nav_core::bounded::is_invisible(c));
    for (what, name) in [("arena", &s.arena), ("planner", &s.planner)] {
        if !visible(name) {
            // spelled out: printed as they are, such names look empty
            let spelled: String = name.chars().map(|c| c.escape_unicode().to_string()).collect();
            return Err(format!("the {what} name \"{spelled}\" has no visible character"));
        }
    }
    if let Err(e) = s.protocol.parse::<nav_planner::protocol::ProtocolKind>() {
        return Err(format!("protocol: {e}"));
    }
    if s.total_count == 0 {
        return Err("total_count is 0 (every episode is judged on at least its collisions)".into());
    }
    if s.passed_count > s.total_count {
        return Err(format!("passed_count {} is more than total_count {}", s.passed_count, s.total_count));
    }
    if s.passed != (s.passed_count == s.total_count) {
        return Err(format!(
            "passed is {} but {} of {} criteria passed (passed means all of them)",
            s.passed, s.passed_count, s.total_count
        ));
    }
    let unit = [("spl", s.spl), ("coverage", s.coverage)];
    if let Some((k, v)) = unit.iter().find(|(_, v)| !(0.0..=1.0).contains(v)) {
        return Err(format!("{k} {v} is outside [0, 1]"));
    }
    let positive = [("path_length_m", s.path_length_m), ("wall_ms", s.wall_ms), ("cost_usd", s.cost_usd)];
    let optional = [("geodesic_m", s.geodesic_m), ("median_overhead_ms", s.median_overhead_ms)];
    let all = positive.into_iter().chain(optional.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))));
    for (k, v) in all {
        if !(v.is_finite() && v >= 0.0) {
            return Err(format!("{k} {v} is not a finite, non-negative number"));
        }
    }
    Ok(())
}

/// The summaries with every episode once (the first line found wins); warns
/// with the number of duplicates dropped.
fn once_each(all: Vec<RunSummary>) -> Vec<RunSummary> {
    let mut seen = std::collections::HashSet::new();
    let n = all.len();
    let out: Vec<RunSummary> = all.into_iter().filter(|s| seen.insert(EpisodeKey::of_summary(s))).collect();
    if out.len() < n {
        crate::exit::diag!("nav: warning: {} episode(s) found more than once; each counted once", n - out.len());
    }
    out
}

/// `nav eval merge`: one report from many JSON-lines files.
fn merge(args: &MergeArgs) -> CmdResult {
    if let Some(m) = &args.markdown {
        let inputs: Vec<&std::path::Path> = args.files.iter().map(PathBuf::as_path).collect();
        crate::exit::check_output("--markdown", m, &inputs)?;
    }
    let mut all = Vec::new();
    for path in &args.files {
        all.extend(read_summaries(path, false)?);
    }
    let summaries = once_each(all);
    let wall_s = summaries.iter().map(|s| s.wall_ms).sum::<f64>() / 1000.0;
    report(EvalReport::new(summaries, wall_s, args.files.len()), args.json, args.markdown.as_deref())
}

/// Writes the `--markdown` report (a FIFO made during the run is still
/// refused, not waited on); a failed write is exit 3 naming the file.
fn write_markdown(path: &std::path::Path, md: &str) -> Result<(), Exit> {
    nav_core::bounded::refuse_fifo(path)
        .and_then(|()| std::fs::write(path, md))
        .map_err(|e| crate::exit::write_error(&path.display().to_string(), &e))
}

/// Prints (and optionally writes) a finished report.
fn report(report: EvalReport, json: bool, markdown: Option<&std::path::Path>) -> CmdResult {
    let md = report.markdown();
    if let Some(p) = markdown {
        write_markdown(p, &md)?;
    }
    if json {
        print(&serde_json::to_string(&report).map_err(internal)?)?;
    } else {
        print(&md)?;
    }
    Ok(0)
}

fn parse_config(s: &str) -> Result<(ProtocolKind, PlannerChoice, bool), Exit> {
    let parts: Vec<&str> = s.split(':').collect();
    let bad = || usage(format!("--configs {s:?}: expected PROTOCOL:PLANNER[:on|off]"));
    let protocol: ProtocolKind = parts.first().ok_or_else(bad)?.parse().map_err(|e: String| usage(e))?;
    let planner: PlannerChoice = parts.get(1).ok_or_else(bad)?.parse().map_err(|e: String| usage(e))?;
    let memory = match parts.get(2).copied().unwrap_or("on") {
        "on" => true,
        "off" => false,
        _ => return Err(bad()),
    };
    Ok((protocol, planner, memory))
}

fn specs(args: &EvalArgs, config: &NavConfig) -> Result<Vec<EpisodeSpec>, Exit> {
    if config.is_set(&["objectnav", "memory"]) {
        return Err(usage(
            "config: [objectnav] memory: nav eval runs memory on and off per configuration \
             (--configs PROTOCOL:PLANNER:on|off); remove the key",
        ));
    }
    let mut out = suite(args, config)?;
    if let Some(p) = args.planner {
        // one episode per configuration left once the planners are the same
        let mut seen = std::collections::HashSet::new();
        out.retain_mut(|s| {
            s.planner = p;
            seen.insert(EpisodeKey::of_spec(s))
        });
    }
    let uses_model = out.iter().any(|s| s.planner == PlannerChoice::Vlm);
    let model_flags =
        args.backend.vlm.is_some() || args.backend.max_cost_usd.is_some() || args.backend.replay.is_some();
    if !uses_model && (args.estimate || model_flags) {
        return Err(usage(
            "--estimate, --vlm, --max-cost-usd and --replay need --planner vlm (or PROTOCOL:vlm configurations)",
        ));
    }
    if args.estimate && args.backend.is_replay() {
        return Err(usage("--estimate prices a live model; a --replay spends nothing"));
    }
    // --estimate calls nothing, so it needs no credentials; a replay finds each episode's own recording
    let model = if uses_model && !args.estimate && !args.backend.is_replay() {
        Some(args.backend.build(config)?)
    } else {
        None
    };
    let budget = if uses_model { args.backend.budget(config)? } else { None };
    for s in &mut out {
        s.max_steps = config.budget(s.protocol);
        s.call_timeout_s = args.backend.timeout;
        s.vlm_noise = args.vlm_noise.unwrap_or_default();
        if s.planner == PlannerChoice::Vlm {
            s.vlm.clone_from(&model);
            s.budget.clone_from(&budget);
            s.text_only = args.text_only;
        }
    }
    Ok(out)
}

/// The most episodes one suite may hold. A suite is built whole before its
/// first episode runs (in every shard, which then runs its slice), at about
/// 2 KiB an episode and 11 ms a procedural house, so the count is checked
/// first: `--seeds` of four billion is a message, not an allocation failure.
pub const MAX_SUITE_EPISODES: u64 = 100_000;

/// The suite's size before it is built: exit 2 naming the options when it
/// is over [`MAX_SUITE_EPISODES`].
fn check_suite_len(args: &EvalArgs) -> Result<(), Exit> {
    let (n, options) = if !args.arenas.is_empty() {
        let configs = args.configs.len().max(1) as u64;
        let n = (args.arenas.len() as u64).saturating_mul(configs).saturating_mul(args.seeds.max(1));
        (n, "--arenas × --configs × --seeds")
    } else if !args.configs.is_empty() {
        (
            house_suite_len(args.house_seeds, args.procedural, args.configs.len()),
            "--configs, --house-seeds and --procedural",
        )
    } else {
        (default_suite_len(args.house_seeds, args.procedural), "--house-seeds and --procedural")
    };
    if n > MAX_SUITE_EPISODES {
        return Err(usage(format!(
            "the suite would hold {n} episodes, more than {MAX_SUITE_EPISODES}: lower {options} (or split the work into several suites)"
        )));
    }
    Ok(())
}

fn suite(args: &EvalArgs, config: &NavConfig) -> Result<Vec<EpisodeSpec>, Exit> {
    check_suite_len(args)?;
    let base = EvalConfig {
        sim: config.sim.clone(),
        objectnav: config.objectnav.clone(),
        explore: config.explore.clone(),
        candidates: config.candidates.clone(),
    };
    if args.arenas.is_empty() && args.configs.is_empty() {
        return default_suite(&base, args.house_seeds, args.procedural).map_err(|e| usage(e.to_string()));
    }
    if args.arenas.is_empty() {
        let configs = args.configs.iter().map(|c| parse_config(c)).collect::<Result<Vec<_>, Exit>>()?;
        return house_suite(&base, args.house_seeds, args.procedural, &configs).map_err(|e| usage(e.to_string()));
    }
    let default_configs = [String::from("objectnav:offline:on")];
    let configs = if args.configs.is_empty() { &default_configs[..] } else { &args.configs[..] };
    let mut out = Vec::new();
    for name in &args.arenas {
        let arena = Arena::builtin(name).map_err(|e| usage(e.to_string()))?;
        for c in configs {
            let (protocol, planner, memory) = parse_config(c)?;
            for seed in 0..args.seeds.max(1) {
                out.push(base.spec(arena.clone(), format!("builtin:{name}"), protocol, planner, memory, seed));
            }
        }
    }
    Ok(out)
}

/// What one episode of a suite gave: its summary (none when its replay
/// stopped or had no recording) and, with `--replay`, how the replay went.
type Episode = (Option<RunSummary>, Option<EpisodeReplay>);

/// Runs one episode, recorded into `record`'s folder when given, answered
/// from its recording when `replay` is given, and labels its error with
/// the episode.
fn run_one(
    rt: &tokio::runtime::Runtime,
    spec: &EpisodeSpec,
    record: Option<&(PathBuf, u32)>,
    replay: Option<&ReplaySetup>,
) -> Result<Episode, Exit> {
    let replay_model = match replay.filter(|_| spec.planner == PlannerChoice::Vlm) {
        Some(setup) => match setup.model_for(&recording_name(spec)).map_err(|e| label_error(spec, e))? {
            Some(m) => Some(m),
            None => return Ok((None, Some(EpisodeReplay::missing()))),
        },
        None => None,
    };
    let mut run_spec = spec.clone();
    if let Some(m) = &replay_model {
        run_spec.vlm = Some(Arc::clone(m) as Arc<dyn nav_planner::vlm::VisionLanguageModel>);
    }
    let recording = match record {
        Some((dir, every)) => Some(super::create_recording(&dir.join(recording_name(spec)), *every)?),
        None => None,
    };
    let mut log = StepLog::null();
    if let Some(r) = &recording {
        r.attach(&mut run_spec);
        log = log.with_tap(r.step_tap());
    }
    if let Some(m) = &replay_model {
        // every loop logs its start as step 0 before it asks the model anything
        m.set_step(0);
    }
    let mut progress = |step: u64| {
        if let Some(m) = &replay_model {
            m.set_step(step);
        }
    };
    let summary = rt.block_on(run_episode(&run_spec, &mut log, &mut progress));
    if let Some(r) = &recording {
        super::finish_recording(r)?;
    }
    match (summary, &replay_model) {
        (Ok(s), Some(m)) => Ok((Some(s), Some(EpisodeReplay::of(m, Replayed::of(m))))),
        (Ok(s), None) => Ok((Some(s), None)),
        (Err(EpisodeError::ReplayDiverged(d)), Some(m)) => {
            Ok((None, Some(EpisodeReplay::of(m, Replayed::Diverged { step: d.step, finished: false }))))
        }
        (Err(e), _) => Err(label_error(spec, crate::exit::episode_error(e))),
    }
}

/// The file an episode's recording goes to: arena source, protocol,
/// planner, memory and seed (what tells episodes of a suite apart), with
/// anything but letters, digits, `-` and `_` as `_`.
pub(crate) fn recording_name(spec: &EpisodeSpec) -> String {
    let memory = if spec.memory { "on" } else { "off" };
    let name =
        format!("{}-{}-{}-mem{memory}-seed{}", spec.arena_source, spec.protocol, spec.planner.as_str(), spec.seed);
    let safe: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    format!("{safe}.mcap")
}

/// Estimates one episode (nothing is called).
fn estimate_one(rt: &tokio::runtime::Runtime, spec: &EpisodeSpec, est: &Estimator) -> Result<EpisodeEstimate, Exit> {
    rt.block_on(estimate_episode(spec, &est.backend, &est.counter))
        .map_err(|e| label_error(spec, crate::exit::episode_error(e)))
}

fn label_error(spec: &EpisodeSpec, e: Exit) -> Exit {
    let label = format!("{} {} {} seed {}", spec.arena_source, spec.protocol, spec.planner.as_str(), spec.seed);
    match e {
        Exit::Usage(m) => usage(format!("{label}: {m}")),
        Exit::Internal(m) => internal(format!("{label}: {m}")),
        other => other,
    }
}

/// The queue of a pool: episodes with their index; `stop` ends the taking
/// of new ones (a reached --max-cost-usd).
struct Queue {
    episodes: Mutex<VecDeque<(usize, EpisodeSpec)>>,
    stop: Option<Arc<CostBudget>>,
}

impl Queue {
    fn next(&self) -> Option<(usize, EpisodeSpec)> {
        if self.stop.as_ref().is_some_and(|b| b.reached()) {
            return None;
        }
        self.episodes.lock().ok().and_then(|mut q| q.pop_front())
    }

    fn left(&self) -> usize {
        self.episodes.lock().map_or(0, |q| q.len())
    }
}

/// Runs `job` on the queue's episodes in `jobs` threads (one current-thread
/// runtime each) and hands every result to `each` as it finishes.
fn pool<T: Send + 'static>(
    queue: &Arc<Queue>,
    jobs: usize,
    job: impl Fn(&tokio::runtime::Runtime, &EpisodeSpec) -> Result<T, Exit> + Send + Sync + 'static,
    mut each: impl FnMut(usize, Result<T, Exit>) -> Result<(), Exit>,
) -> Result<(), Exit> {
    let job = Arc::new(job);
    let (tx, rx) = mpsc::channel::<(usize, Result<T, Exit>)>();
    let mut handles = Vec::new();
    for _ in 0..jobs.max(1) {
        let (q, tx, job) = (Arc::clone(queue), tx.clone(), Arc::clone(&job));
        handles.push(std::thread::spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = tx.send((usize::MAX, Err(internal(e))));
                    return;
                }
            };
            while let Some((i, spec)) = q.next() {
                if tx.send((i, job(&rt, &spec))).is_err() {
                    break;
                }
            }
        }));
    }
    drop(tx);
    let mut outcome = Ok(());
    for (i, r) in rx {
        if outcome.is_ok() {
            outcome = each(i, r);
            if outcome.is_err() {
                // the first failure (a full disk under --jsonl) stops the suite: no new episode starts
                if let Ok(mut q) = queue.episodes.lock() {
                    q.clear();
                }
            }
        }
    }
    for h in handles {
        let _ = h.join();
    }
    outcome
}

/// What `--estimate` needs: the backend it prices for and the tokenizer.
struct Estimator {
    backend: nav_planner::vlm::BackendConfig,
    counter: TokenCounter,
}

/// The episodes that could not run as one failure: bad input (exit 2) when
/// any of them was bad input, else internal (exit 3). Messages are
/// de-duplicated.
fn failed(errors: Vec<Exit>) -> Option<Exit> {
    let n = errors.len();
    let mut bad_input = false;
    let mut messages: Vec<String> = Vec::new();
    for e in errors {
        let m = match e {
            Exit::Usage(m) => {
                bad_input = true;
                m
            }
            Exit::Internal(m) | Exit::Output(m) | Exit::ModelLink(m) | Exit::ReplayDiverged(m) => m,
            Exit::StdoutClosed => continue,
        };
        if !messages.contains(&m) {
            messages.push(m);
        }
    }
    if n == 0 {
        return None;
    }
    let msg = format!("{n} episode(s) could not run: {}", messages.join("; "));
    Some(if bad_input { usage(msg) } else { internal(msg) })
}

/// `--jsonl PATH`: one finished episode's summary per line, written whole
/// and flushed as each episode completes, so an interrupted or failed
/// evaluation keeps every finished episode.
struct EpisodeLines {
    file: std::fs::File,
    path: PathBuf,
    /// The file's length after its last whole line.
    whole: u64,
}

impl EpisodeLines {
    /// A new file, or (`append`, for --resume) the existing one continued.
    fn open(path: &std::path::Path, append: bool) -> Result<Self, Exit> {
        let mut options = std::fs::OpenOptions::new();
        if append {
            options.append(true).create(true);
        } else {
            options.write(true).create(true).truncate(true);
        }
        let mut file = nav_core::bounded::refuse_fifo(path)
            .and_then(|()| options.open(path))
            .map_err(|e| usage(format!("--jsonl {}: {e}", path.display())))?;
        let mut whole = file.metadata().map_or(0, |m| m.len());
        if append && whole > 0 && !ends_with_newline(path) {
            // a whole last line without its newline: the next line must not be glued to it
            use std::io::Write;
            file.write_all(b"\n").map_err(|e| crate::exit::write_error(&path.display().to_string(), &e))?;
            whole += 1;
        }
        Ok(Self { file, path: path.to_path_buf(), whole })
    }

    /// Appends one summary line. When that fails (`ENOSPC`) the file is cut
    /// back to its last whole line, so `nav eval merge` and `--resume` can
    /// still read it, and the error (exit 3) stops the suite.
    fn write(&mut self, summary: &RunSummary) -> Result<(), Exit> {
        use std::io::Write;
        let mut line = serde_json::to_vec(summary).map_err(internal)?;
        line.push(b'\n');
        match self.file.write_all(&line).and_then(|()| self.file.flush()) {
            Ok(()) => {
                self.whole += line.len() as u64;
                Ok(())
            }
            Err(e) => {
                let cut = match self.file.set_len(self.whole) {
                    Ok(()) => "the file is cut back to its last whole line".to_string(),
                    Err(c) => format!("the file could not be cut back to its last whole line: {c}"),
                };
                Err(Exit::Output(format!(
                    "writing {}: {e} ({cut}; the suite stopped: no further episode was started)",
                    self.path.display()
                )))
            }
        }
    }
}

/// How a suite's episode is named in progress lines.
fn episode_label(spec: &EpisodeSpec) -> String {
    let memory = if spec.memory { "on" } else { "off" };
    format!("{} {} {} memory {memory} seed {}", spec.arena_source, spec.protocol, spec.planner.as_str(), spec.seed)
}

/// `--estimate`: the expected cost of the suite's model episodes.
fn estimate(args: &EvalArgs, config: &NavConfig, all: Vec<EpisodeSpec>, jobs: usize) -> CmdResult {
    let all: Vec<EpisodeSpec> = all.into_iter().filter(|s| s.planner == PlannerChoice::Vlm).collect();
    let backend = args.backend.backend_config(config)?;
    let est = Arc::new(Estimator { backend: backend.clone(), counter: TokenCounter::o200k().map_err(internal)? });
    let n = all.len();
    let mut progress = Progress::new("eval --estimate", n, args.json)?;
    let labels: Vec<String> = all.iter().map(episode_label).collect();
    let queue = Arc::new(Queue { episodes: Mutex::new(all.into_iter().enumerate().collect()), stop: None });
    let mut results: Vec<Option<EpisodeEstimate>> = vec![None; n];
    let mut errors = Vec::new();
    pool(
        &queue,
        jobs.min(n.max(1)),
        move |rt, spec| estimate_one(rt, spec, &est),
        |i, r| {
            let label = labels.get(i).map_or("?", String::as_str);
            progress.finished(&match &r {
                Ok(e) => format!("{label}: {} calls expected", e.calls),
                Err(_) => format!("{label}: could not be estimated"),
            });
            match r {
                Ok(e) if i < n => results[i] = Some(e),
                Ok(_) => {}
                Err(e) => errors.push(e),
            }
            Ok(())
        },
    )?;
    progress.finish();
    if let Some(e) = failed(errors) {
        return Err(e);
    }
    let suite = SuiteEstimate::new(&backend, results.into_iter().flatten().collect());
    if args.json {
        print(&serde_json::to_string(&suite).map_err(internal)?)?;
    } else {
        print(&suite.markdown())?;
    }
    Ok(0)
}

/// `--resume`: the episodes of `suite` the `--jsonl` file at `path`
/// already holds, with merge's checks: each line checked, every episode
/// once, and episodes of another suite (or another shard) ignored with a
/// warning naming how many.
fn resumed(path: &std::path::Path, suite: &[EpisodeSpec]) -> Result<Vec<RunSummary>, Exit> {
    let keys: std::collections::HashSet<EpisodeKey> = suite.iter().map(EpisodeKey::of_spec).collect();
    let (all, cut) = read_summaries_to_cut(path, true)?;
    if let Some(cut) = cut {
        // a run killed mid-write: its last line is dropped, and the file cut back to the lines before it so
        // the episodes run now follow whole lines
        let file = std::fs::OpenOptions::new().write(true).open(path);
        file.and_then(|f| f.set_len(cut.offset))
            .map_err(|e| crate::exit::write_error(&path.display().to_string(), &e))?;
        crate::exit::diag!(
            "nav: warning: --resume {}: line {} was cut off ({}); dropped, that episode runs again",
            path.display(),
            cut.line,
            cut.why
        );
    }
    let all = once_each(all);
    let n = all.len();
    let ours: Vec<RunSummary> = all.into_iter().filter(|s| keys.contains(&EpisodeKey::of_summary(s))).collect();
    if ours.len() < n {
        crate::exit::diag!(
            "nav: warning: --resume {}: {} episode(s) are not in this suite; ignored (not counted, not run)",
            path.display(),
            n - ours.len()
        );
    }
    Ok(ours)
}

/// Runs the command.
pub fn run(args: EvalArgs) -> CmdResult {
    if let Some(EvalCommand::Merge(m)) = &args.command {
        return merge(m);
    }
    if let Some(m) = &args.markdown {
        crate::exit::check_output("--markdown", m, &args.jsonl.iter().map(PathBuf::as_path).collect::<Vec<_>>())?;
    }
    let config = NavConfig::load_layers(args.preset, args.config.as_deref())?;
    config.check_outputs(
        args.config.as_deref(),
        &[("--jsonl", args.jsonl.as_deref()), ("--markdown", args.markdown.as_deref())],
    )?;
    let mut all = specs(&args, &config)?;
    if let Some(s) = args.shard {
        all = shard(all, s.index, s.count);
    }
    let uses_model = all.iter().any(|s| s.planner == PlannerChoice::Vlm);
    // a model suite runs one episode at a time unless told otherwise (rate limits, a readable bill)
    let default_jobs = if uses_model { 1 } else { std::thread::available_parallelism().map_or(2, |n| n.get()) };
    let jobs = args.jobs.unwrap_or(default_jobs).max(1);
    if args.estimate {
        return estimate(
            &args,
            &config,
            all,
            args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get())),
        );
    }
    // --resume: the episodes the --jsonl file already holds are done
    let done = match (&args.jsonl, args.resume) {
        (Some(p), true) => resumed(p, &all)?,
        _ => Vec::new(),
    };
    let finished: std::collections::HashSet<EpisodeKey> = done.iter().map(EpisodeKey::of_summary).collect();
    all.retain(|s| !finished.contains(&EpisodeKey::of_spec(s)));
    let budget = all.iter().find_map(|s| s.budget.clone());
    let n = all.len();
    let mut progress = Progress::new("eval", n, args.json)?;
    let labels: Vec<String> = all.iter().map(episode_label).collect();
    let started = Instant::now();
    let queue = Arc::new(Queue { episodes: Mutex::new(all.into_iter().enumerate().collect()), stop: budget.clone() });
    let mut lines = match &args.jsonl {
        Some(p) => Some(EpisodeLines::open(p, args.resume)?),
        None => None,
    };
    let mut results: Vec<Option<RunSummary>> = vec![None; n];
    let mut errors = Vec::new();
    let mut cut_short = 0usize;
    // checked before any episode runs: a --record-dir that is a file failed every episode with
    // "File exists"
    if let Some(d) = &args.record_dir {
        if d.exists() && !d.is_dir() {
            return Err(usage(format!("--record-dir {}: not a directory", d.display())));
        }
        std::fs::create_dir_all(d).map_err(|e| usage(format!("--record-dir {}: {e}", d.display())))?;
    }
    let record = args.record_dir.clone().map(|d| (d, args.record_every));
    let replay = ReplaySetup::of(&args.backend, &config)?.map(Arc::new);
    let mut tally = replay.as_ref().map(|r| ReplayTally { source: r.dir.display().to_string(), ..Default::default() });
    let mut replays: Vec<Option<EpisodeReplay>> = vec![None; n];
    let job_replay = replay.clone();
    let job = move |rt: &tokio::runtime::Runtime, spec: &EpisodeSpec| {
        run_one(rt, spec, record.as_ref(), job_replay.as_deref())
    };
    pool(&queue, jobs.min(n.max(1)), job, |i, r| {
        let label = labels.get(i).map_or("?", String::as_str);
        progress.finished(&match &r {
            Ok((Some(s), _)) if s.end == COST_LIMIT_END => format!("{label}: cut short by --max-cost-usd"),
            Ok((Some(s), _)) => format!("{label}: {}", if s.passed { "passed" } else { "failed" }),
            Ok((None, Some(EpisodeReplay { outcome: Replayed::Missing, .. }))) => format!("{label}: no recording"),
            Ok((None, _)) => format!("{label}: replay diverged"),
            Err(_) => format!("{label}: could not run"),
        });
        let r = match r {
            Ok((summary, replayed)) => {
                if let Some(slot) = replays.get_mut(i) {
                    *slot = replayed;
                }
                match summary {
                    Some(s) => Ok(s),
                    None => return Ok(()),
                }
            }
            Err(e) => Err(e),
        };
        match r {
            // an episode the spending limit ended is not a result (a --resume runs it again)
            Ok(s) if s.end == COST_LIMIT_END => cut_short += 1,
            Ok(s) if i < n => {
                if let Some(l) = lines.as_mut() {
                    l.write(&s)?;
                }
                results[i] = Some(s);
            }
            Ok(_) => {}
            // the model cannot be reached: every further episode would fail the same way, so the suite stops
            Err(e @ Exit::ModelLink(_)) => return Err(e),
            // output that cannot be written (a recording on a full disk): every further episode would
            // run in full (paying a model) and fail the same way at its end, so the suite stops too
            Err(Exit::Output(m)) => {
                return Err(Exit::Output(format!("{m} (the suite stopped: no further episode was started)")));
            }
            Err(e) => errors.push(e),
        }
        Ok(())
    })?;
    progress.finish();
    if let Some(e) = failed(errors) {
        return Err(e);
    }
    let mut summaries = done;
    let resumed = summaries.len();
    summaries.extend(results.into_iter().flatten());
    let finished_now = summaries.len() - resumed;
    if let Some(t) = tally.as_mut() {
        for (label, r) in labels.iter().zip(replays) {
            if let Some(r) = r {
                t.add(label, r);
            }
        }
        t.replay_wall_s = started.elapsed().as_secs_f64();
    }
    let report_ = EvalReport::new(summaries, started.elapsed().as_secs_f64(), jobs);
    match &tally {
        Some(t) if args.json => {
            let mut v = serde_json::to_value(&report_).map_err(internal)?;
            v["replay"] = serde_json::to_value(t).map_err(internal)?;
            print(&v.to_string())?;
            if let Some(p) = &args.markdown {
                write_markdown(p, &report_.markdown())?;
            }
        }
        _ => {
            report(report_, args.json, args.markdown.as_deref())?;
        }
    }
    if let Some(t) = &tally {
        if args.json {
            crate::exit::diag!("{}", t.lines());
        } else {
            print(&format!("\n{}", t.lines()))?;
        }
    }
    match budget.filter(|b| b.reached()) {
        Some(b) => {
            crate::exit::diag!(
                "{}: {finished_now} episode(s) finished (in the table), {cut_short} cut short, {} not started",
                super::cost_limit_message(&b),
                queue.left()
            );
            Ok(super::EXIT_COST_LIMIT)
        }
        None if tally.as_ref().is_some_and(|t| t.stopped() > 0) => Ok(6),
        // a folder of another suite (or an empty one) replays nothing: not a success
        None if tally.as_ref().is_some_and(ReplayTally::all_missing) => Err(usage(format!(
            "--replay {}: no recording of any episode of this suite; nothing was replayed (is it the folder \
             --record-dir wrote for this suite?)",
            tally.as_ref().map_or_else(String::new, |t| t.source.clone())
        ))),
        None => Ok(0),
    }
}
