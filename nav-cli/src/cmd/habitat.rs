//! `nav habitat`: ObjectNav episodes in Habitat-sim, MiniWorld or another
//! simulator behind the navkit bridge (docs/BRIDGE.md), judged by the
//! simulator's own SR / SPL.

use super::run::OnOff;
use crate::config::NavConfig;
use crate::exit::{CmdResult, Exit, internal, runtime, usage};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use nav_hal::bridge::{BridgeCommand, BridgeEndpoint, BridgeHal};
use nav_planner::navigator::StepLog;
use nav_planner::navigator::bridge_run::{BridgeProgress, BridgeRunner};
use nav_planner::navigator::episode::PlannerChoice;
use std::io::IsTerminal;
use std::path::PathBuf;

/// Run ObjectNav episodes in a simulator behind the navkit bridge and print
/// the simulator's SR / SPL with navkit's oscillation statistics.
///
/// From a checkout with the MiniWorld venv (ci/setup-bridge.sh):
///
///   nav habitat --bridge ".venv/bin/python -m navkit_bridge --backend miniworld" --episodes 20
///
/// With Habitat (docs/BRIDGE.md):
///
///   nav habitat --bridge "python -m navkit_bridge --backend habitat --config benchmark/nav/objectnav/objectnav_hm3d.yaml --split val"
///
/// When the command runs the `navkit_bridge` module, nav puts the package on
/// the child's PYTHONPATH: ./nav-hal/bridge when run in a checkout, else the
/// copy built into nav, written once to $XDG_CACHE_HOME/navkit (or
/// ~/.cache/navkit).
#[derive(Args, Debug)]
pub struct HabitatArgs {
    /// The bridge server: a command line to start (quoted, split like a shell) or the address of a
    /// running one (127.0.0.1:PORT or tcp://HOST:PORT, from `python -m navkit_bridge … --listen`).
    #[arg(long, value_name = "CMD|ADDR")]
    pub bridge: String,
    /// Episodes to run (default 20, or the config's [habitat] episodes).
    #[arg(long)]
    pub episodes: Option<u32>,
    /// Backend index of the first episode (default 0).
    #[arg(long)]
    pub first_index: Option<u64>,
    /// offline (no network, the default), frontier or map (baselines) or vlm.
    #[arg(long)]
    pub planner: Option<PlannerChoice>,
    #[command(flatten)]
    pub backend: super::VlmArgs,
    /// Spatial memory for the planner (default on).
    #[arg(long, value_enum)]
    pub memory: Option<OnOff>,
    /// Send no images to the model.
    #[arg(long)]
    pub text_only: bool,
    /// Generate episode k from seed S + k (backends that generate episodes: miniworld, openroom).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Write the step log of every episode (JSONL, one flushed line per step).
    #[arg(long, value_name = "PATH")]
    pub log: Option<PathBuf>,
    /// Copy the bridge server's own log (its stderr) to ours.
    #[arg(long)]
    pub bridge_log: bool,
    /// Print the whole report (every episode and the aggregate) as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// (--record: every episode goes into one file, one after the other.)
    #[command(flatten)]
    pub record: super::RecordArgs,
    /// Configuration file (TOML): [bridge] timeouts and observations, [habitat] run settings,
    /// [objectnav] loop settings, [vlm].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub workers: super::workers::WorkerArgs,
}

/// The directory holding the `navkit_bridge` package for the child's
/// PYTHONPATH: `./nav-hal/bridge` when `nav` runs in a checkout (a
/// developer's edits apply at once), else the copy embedded in this binary,
/// written once to the cache directory ([`cache_root`]) — so a `nav`
/// installed with `cargo install` finds it too, and it always matches the
/// binary's protocol version.
fn bridge_package_dir() -> Option<PathBuf> {
    let here = PathBuf::from("nav-hal/bridge");
    if here.join("navkit_bridge").join("__init__.py").is_file() {
        return Some(std::fs::canonicalize(&here).unwrap_or(here));
    }
    let root = cache_root();
    match nav_hal::bridge::package::install(&root) {
        Ok(dir) => Some(dir),
        Err(e) => {
            tracing::warn!("cannot write the embedded navkit_bridge package under {}: {e}", root.display());
            None
        }
    }
}

/// Where the embedded bridge package is written: `$XDG_CACHE_HOME/navkit`,
/// else `$HOME/.cache/navkit`, else the temporary directory's `navkit`.
fn cache_root() -> PathBuf {
    let absolute = |var: &str| std::env::var_os(var).map(PathBuf::from).filter(|p| p.is_absolute());
    absolute("XDG_CACHE_HOME")
        .or_else(|| absolute("HOME").map(|h| h.join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("navkit")
}

/// Adds the `navkit_bridge` package ([`bridge_package_dir`]) to the child's
/// PYTHONPATH when the command runs that module.
fn with_package_path(mut cmd: BridgeCommand) -> BridgeCommand {
    if !cmd.args.iter().any(|a| a == "navkit_bridge" || a.starts_with("navkit_bridge.")) {
        return cmd;
    }
    if let Some(dir) = bridge_package_dir() {
        let inherited = std::env::var("PYTHONPATH").unwrap_or_default();
        let path =
            if inherited.is_empty() { dir.display().to_string() } else { format!("{}:{inherited}", dir.display()) };
        cmd.env.retain(|(k, _)| k != "PYTHONPATH");
        cmd.env.push(("PYTHONPATH".into(), path));
    }
    cmd
}

/// Runs the command.
pub fn run(args: HabitatArgs) -> CmdResult {
    let config = NavConfig::load_opt(args.config.as_deref())?;
    config.check_outputs(
        args.config.as_deref(),
        &[("--log", args.log.as_deref()), ("--record", args.record.record.as_deref())],
    )?;
    let mut run_cfg = config.habitat.clone();
    if let Some(n) = args.episodes {
        run_cfg.episodes = n;
    }
    if let Some(i) = args.first_index {
        run_cfg.first_index = i;
    }
    if let Some(p) = args.planner {
        run_cfg.planner = p;
    }
    if let Some(m) = args.memory {
        run_cfg.memory = m == OnOff::On;
    }
    if args.seed.is_some() {
        run_cfg.seed = args.seed;
    }
    run_cfg.text_only |= args.text_only;
    args.workers.apply(&mut run_cfg)?;
    let mut runner = BridgeRunner::new(run_cfg.clone())
        .map_err(|e| usage(e.to_string()))?
        .with_loop_config(config.objectnav.clone())
        .with_grounding(config.grounding_text()?)
        .with_call_timeout(args.backend.timeout);
    let recording = args.record.open()?;
    runner = runner.with_sensor_tap(recording.as_ref().map(|r| r.sensor_tap()));
    let budget = if run_cfg.planner == PlannerChoice::Vlm {
        let budget = args.backend.budget(&config)?;
        let model = args.backend.build(&config)?;
        let scene = args.backend.build_scene(&config)?;
        let (model, scene) = match &recording {
            Some(r) => (r.wrap_vlm(model), scene.map(|s| r.wrap_vlm(s))),
            None => (model, scene),
        };
        runner = runner.with_vlm(model).with_scene_vlm(scene).with_budget(budget.clone());
        budget
    } else if args.backend.vlm.is_some() || args.backend.max_cost_usd.is_some() {
        return Err(usage("--vlm and --max-cost-usd need --planner vlm"));
    } else {
        None
    };
    let endpoint = match BridgeEndpoint::parse(&args.bridge).map_err(|e| usage(format!("--bridge: {e}")))? {
        BridgeEndpoint::Command(c) => BridgeEndpoint::Command(with_package_path(c)),
        tcp => tcp,
    };
    let mut bridge_cfg = config.bridge.clone();
    // navkit's objectnav stack sees obstacles through depth (a scan derived from it)
    bridge_cfg.depth = true;
    bridge_cfg.echo_stderr |= args.bridge_log;
    let mut log = match &args.log {
        Some(p) => StepLog::create(p).map_err(|e| usage(e.to_string()))?,
        None => StepLog::null(),
    };
    if let Some(r) = &recording {
        log = log.with_tap(r.step_tap());
    }

    let rt = runtime()?;
    let mut hal = rt.block_on(BridgeHal::connect(&endpoint, bridge_cfg)).map_err(|e| {
        usage(format!(
            "the bridge could not start ({}): {e}",
            match &endpoint {
                BridgeEndpoint::Command(c) => c.display(),
                BridgeEndpoint::Tcp(a) => format!("tcp://{a}"),
            }
        ))
    })?;
    let workers = rt.block_on(args.workers.start(with_package_path))?;
    let mut runner = workers.install(runner);
    let interactive = !args.json && std::io::stderr().is_terminal();
    let bar = if interactive {
        let b = ProgressBar::new(0);
        b.set_style(
            ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} steps ({elapsed})")
                .map_err(internal)?
                .progress_chars("=> "),
        );
        b
    } else {
        ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
    };
    let json = args.json;
    let mut on_progress = |p: BridgeProgress<'_>| match p {
        BridgeProgress::Started { run_index, of, episode } => {
            bar.reset();
            bar.set_length(u64::from(episode.max_steps.unwrap_or(500)));
            bar.set_message(format!(
                "[{}/{of}] {}: find the {}",
                run_index + 1,
                episode.episode_id,
                episode.target_object
            ));
        }
        BridgeProgress::Step { step, .. } => bar.set_position(step),
        BridgeProgress::Finished { of, summary } => {
            let line = summary.line(of);
            if json {
                crate::exit::diag!("{line}");
            } else {
                // a closed or full stdout shows up at the final report's write
                bar.suspend(|| _ = crate::exit::print(&line));
            }
        }
        _ => {}
    };
    let result = rt.block_on(runner.run(&mut hal, &mut log, &mut on_progress));
    bar.finish_and_clear();
    let _ = rt.block_on(hal.close());
    rt.block_on(workers.close());
    let recorded = recording.as_ref().map(super::finish_recording).transpose()?;
    let report = result.map_err(crate::exit::episode_error)?;
    if args.json {
        crate::exit::print(&serde_json::to_string(&report).map_err(internal)?)?;
    } else {
        let mut text = format!("\n{}", report.table());
        if let Some(p) = &args.log {
            text.push_str(&format!("  step log: {}\n", p.display()));
        }
        if let Some(r) = &recorded {
            text.push_str(&format!("  recording: {}\n", r.line()));
        }
        crate::exit::print(text.trim_end_matches('\n'))?;
    }
    if let Some(b) = budget.as_ref().filter(|b| b.reached()) {
        crate::exit::diag!("{}", super::cost_limit_message(b));
        return Ok(super::EXIT_COST_LIMIT);
    }
    match &report.aborted {
        // the bridge or an output failed (a protocol error, a full disk): exit 3, named, not an internal error
        Some(why) => Err(Exit::Output(format!("the run was aborted: {why}"))),
        None => Ok(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checkout_package_joins_pythonpath_for_navkit_bridge_commands() {
        let cmd = BridgeCommand::parse(".venv/bin/python -m navkit_bridge --backend miniworld").unwrap();
        let with = with_package_path(cmd);
        let dir = bridge_package_dir().expect("the checkout or the embedded package");
        let (_, path) = with.env.iter().find(|(k, _)| k == "PYTHONPATH").expect("PYTHONPATH set");
        assert!(path.starts_with(&dir.display().to_string()), "{path}");
        // other commands are left alone
        let other = with_package_path(BridgeCommand::parse("my-sim --serve").unwrap());
        assert!(other.env.is_empty());
    }
}
