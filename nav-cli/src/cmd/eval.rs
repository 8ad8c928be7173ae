//! `nav eval`: many episodes in parallel, a progress bar, and a table.

use crate::config::NavConfig;
use crate::exit::{CmdResult, Exit, internal, print, usage};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use nav_hal::arena::Arena;
use nav_planner::navigator::StepLog;
use nav_planner::navigator::episode::{EpisodeSpec, PlannerChoice, RunSummary, run_episode};
use nav_planner::navigator::eval::{EvalConfig, EvalReport, default_suite};
use nav_planner::offline::VlmNoise;
use nav_planner::protocol::ProtocolKind;
use std::collections::VecDeque;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, mpsc};
use std::time::Instant;

/// Run arenas × seeds × configurations in parallel and print a table of SR,
/// SPL, collisions, coverage, ABABA and STUCK, planner/VLM calls and tokens.
///
/// The default suite: objectnav in the built-in houses (seeds 0–4) and
/// --procedural procedurally generated houses, with the frontier baseline
/// and the offline planner with memory off and on; the candidates protocol's
/// offline planner in the four seed-002 arenas; the explore protocol's
/// offline planner in `exploration` and `house_a`.
#[derive(Args, Debug)]
pub struct EvalArgs {
    /// Only these arenas (comma-separated built-in names) instead of the default suite.
    #[arg(long, value_delimiter = ',')]
    arenas: Vec<String>,
    /// Seeds per arena when --arenas is given (0..N).
    #[arg(long, default_value_t = 1)]
    seeds: u64,
    /// Configurations when --arenas is given: PROTOCOL:PLANNER[:on|off], comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "objectnav:offline:on")]
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
    /// Configuration file (TOML).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Noise of the offline VLM stand-in in every objectnav episode:
    /// missed targets, false sightings, angle error (degrees, std), e.g.
    /// miss=0.1,false=0.05,angle=15,seed=7.
    #[arg(long, value_name = "miss=P,false=P,angle=DEG,seed=N")]
    vlm_noise: Option<VlmNoise>,
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
    if planner == PlannerChoice::Vlm {
        return Err(usage("nav eval runs offline planners only (no API keys in batch runs)"));
    }
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
    for s in &mut out {
        s.max_steps = config.budget(s.protocol);
        s.vlm_noise = args.vlm_noise.unwrap_or_default();
    }
    Ok(out)
}

fn suite(args: &EvalArgs, config: &NavConfig) -> Result<Vec<EpisodeSpec>, Exit> {
    let base = EvalConfig {
        sim: config.sim.clone(),
        objectnav: config.objectnav.clone(),
        explore: config.explore.clone(),
        candidates: config.candidates.clone(),
    };
    if args.arenas.is_empty() {
        return default_suite(&base, args.house_seeds, args.procedural).map_err(|e| usage(e.to_string()));
    }
    let mut out = Vec::new();
    for name in &args.arenas {
        let arena = Arena::builtin(name).map_err(|e| usage(e.to_string()))?;
        for c in &args.configs {
            let (protocol, planner, memory) = parse_config(c)?;
            for seed in 0..args.seeds.max(1) {
                out.push(base.spec(arena.clone(), format!("builtin:{name}"), protocol, planner, memory, seed));
            }
        }
    }
    Ok(out)
}

/// Runs episodes from the queue until it is empty, sending each result.
fn worker(q: &Mutex<VecDeque<(usize, EpisodeSpec)>>, tx: &mpsc::Sender<(usize, Result<RunSummary, Exit>)>) {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = tx.send((usize::MAX, Err(internal(e))));
            return;
        }
    };
    loop {
        let next = q.lock().ok().and_then(|mut q| q.pop_front());
        let Some((i, spec)) = next else { break };
        let mut log = StepLog::null();
        let r = rt.block_on(run_episode(&spec, &mut log, &mut |_| {})).map_err(|e| {
            let label = format!("{} {} {} seed {}", spec.arena_source, spec.protocol, spec.planner.as_str(), spec.seed);
            match crate::exit::episode_error(e) {
                Exit::Usage(m) => usage(format!("{label}: {m}")),
                Exit::Internal(m) => internal(format!("{label}: {m}")),
                other => other,
            }
        });
        if tx.send((i, r)).is_err() {
            break;
        }
    }
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
            Exit::Internal(m) | Exit::Output(m) => m,
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
}

impl EpisodeLines {
    fn create(path: &std::path::Path) -> Result<Self, Exit> {
        let file = std::fs::File::create(path).map_err(|e| usage(format!("--jsonl {}: {e}", path.display())))?;
        Ok(Self { file, path: path.to_path_buf() })
    }

    fn write(&mut self, summary: &RunSummary) -> Result<(), Exit> {
        use std::io::Write;
        let mut line = serde_json::to_vec(summary).map_err(internal)?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .and_then(|()| self.file.flush())
            .map_err(|e| crate::exit::write_error(&self.path.display().to_string(), &e))
    }
}

/// Runs the command.
pub fn run(args: EvalArgs) -> CmdResult {
    let config = NavConfig::load_opt(args.config.as_deref())?;
    let all = specs(&args, &config)?;
    let n = all.len();
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get())).max(1);
    let bar = if args.json || !std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(Some(n as u64), ProgressDrawTarget::hidden())
    } else {
        let b = ProgressBar::new(n as u64);
        b.set_style(
            ProgressStyle::with_template("{spinner} eval [{bar:30}] {pos}/{len} episodes ({elapsed}, eta {eta})")
                .map_err(internal)?
                .progress_chars("=> "),
        );
        b
    };
    let started = Instant::now();
    let queue: Arc<Mutex<VecDeque<(usize, EpisodeSpec)>>> = Arc::new(Mutex::new(all.into_iter().enumerate().collect()));
    let (tx, rx) = mpsc::channel::<(usize, Result<RunSummary, Exit>)>();
    let mut handles = Vec::new();
    for _ in 0..jobs.min(n.max(1)) {
        let q = Arc::clone(&queue);
        let tx = tx.clone();
        handles.push(std::thread::spawn(move || worker(&q, &tx)));
    }
    drop(tx);
    let mut lines = match &args.jsonl {
        Some(p) => Some(EpisodeLines::create(p)?),
        None => None,
    };
    let mut results: Vec<Option<RunSummary>> = vec![None; n];
    let mut errors = Vec::new();
    for (i, r) in rx {
        bar.inc(1);
        match r {
            Ok(s) if i < n => {
                if let Some(l) = lines.as_mut() {
                    l.write(&s)?;
                }
                results[i] = Some(s);
            }
            Ok(_) => {}
            Err(e) => errors.push(e),
        }
    }
    for h in handles {
        let _ = h.join();
    }
    bar.finish_and_clear();
    if let Some(e) = failed(errors) {
        return Err(e);
    }
    let summaries: Vec<RunSummary> = results.into_iter().flatten().collect();
    let report = EvalReport::new(summaries, started.elapsed().as_secs_f64(), jobs);
    let md = report.markdown();
    if let Some(p) = &args.markdown {
        std::fs::write(p, &md).map_err(|e| usage(format!("{}: {e}", p.display())))?;
    }
    if args.json {
        print(&serde_json::to_string(&report).map_err(internal)?)?;
    } else {
        print(&md)?;
    }
    Ok(0)
}
