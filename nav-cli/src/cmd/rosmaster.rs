//! `nav rosmaster`: the explore loop on a real robot through
//! rosbridge — the Yahboom ROSMASTER A1 or any ROS 1/2 robot
//! (docs/ROSMASTER.md).
//!
//! It starts a [`RosbridgeHal`] (the `[rosbridge]` section of `--config`,
//! overridden by `--url` and `--dry-run`), waits for the first session and
//! for a scan and odometry, and runs [`ExploreLoop`] in real time (20 Hz
//! control on the HAL's monotonic clock) with the offline explorer or a
//! VLM. Progress lines (decisions, watchdog tiers, safety overrides, link
//! and pause changes) go to stderr, the summary to stdout.
//!
//! Stopping: SIGINT (Ctrl-C) or SIGTERM sets the loop's shutdown signal and
//! at once publishes the stop burst (zero Twists) through a [`StopHandle`]
//! taken before the HAL went to the loop; the loop ends its tick, stops
//! the robot again, and the command exits 0. A second signal exits at once
//! (status 130) after one more stop burst.
//!
//! Voice: commands on the voice command topic (`explore`, `stop`, `pause`,
//! `resume`, `go home`, free text for the planner) steer the run, and
//! announcements go out on the announcement topic (docs/ROSMASTER.md,
//! "Voice"); `--wait-for-voice` holds the robot until `explore`.

mod link;
mod objectnav;
mod progress;
mod voice;

use voice::{final_announcements, forward_voice, speak_announcements};

use super::signals::Signals;
use crate::config::NavConfig;
use crate::exit::{CmdResult, Exit, internal, usage};
use clap::{Args, ValueEnum};
use link::RobotLink;
use nav_core::drive::DriveKind;
use nav_hal::HalError;
use nav_hal::hal::Sensors;
use nav_hal::rosbridge::{Nav2Mode, RosbridgeConfig, RosbridgeHal, StopHandle};
use nav_hal::tap::Tapped;
use nav_planner::navigator::billing::{BackendSummary, backend_line};
use nav_planner::navigator::explore_loop::{
    ExploreEnd, ExploreLoop, ExploreLoopConfig, ExploreOutcome, ExploreSignals, Pacing,
};
use nav_planner::navigator::{NavError, Observer, RunContext, StepLog};
use nav_planner::offline::OfflineExplorePlanner;
use nav_planner::protocol::explore::{ExplorePlanner, ExplorePromptConfig, VlmExplorePlanner};
use nav_planner::record::Recording;
use nav_planner::vlm::{CostBudget, LedgerVlm, VisionLanguageModel};
use progress::Progress;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::watch;

/// How long to wait for the first scan and odometry after connecting.
const SENSOR_WAIT: Duration = Duration::from_secs(10);

/// Who decides where the robot goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RobotPlanner {
    /// The frontier explorer: no network, no API key.
    Offline,
    /// A vision-language model (`--vlm`, or the `[vlm]` section of `--config`).
    Vlm,
}

/// What the robot does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RobotProtocol {
    /// Explore with the 20 Hz control loop and the seven exploration tools.
    Explore,
    /// Find an object (--target) with the ObjectNav loop and
    /// discrete actions; needs --planner vlm.
    Objectnav,
}

/// Explore with a real robot through rosbridge, or find an object
/// (--protocol objectnav --target chair --planner vlm; docs/ROSMASTER.md).
/// Start with --dry-run; Ctrl-C stops the robot (zero velocity) before
/// exiting. Navigation goals go to Nav2 when rosapi lists its
/// NavigateToPose status topic ([rosbridge] nav2 = "auto" | "on" | "off");
/// navkit then publishes no cmd_vel and cancels the goal on any safety stop.
#[derive(Args, Debug)]
pub struct RosmasterArgs {
    /// explore (default) or objectnav (needs --target and --planner vlm).
    #[arg(long, value_enum, default_value = "explore")]
    pub protocol: RobotProtocol,
    /// The object class objectnav looks for, e.g. chair.
    #[arg(long, value_name = "LABEL")]
    pub target: Option<String>,
    /// Step budget of objectnav (default 500, as Habitat).
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u32>,
    /// rosbridge_server's WebSocket URL, ws://HOST:9090 (default: `url` in the
    /// config's [rosbridge] section, else ws://localhost:9090).
    #[arg(long)]
    pub url: Option<String>,
    /// Configuration file (TOML): [rosbridge], [explore], [vlm].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// offline (frontier explorer, no API key) or vlm.
    #[arg(long, value_enum, default_value = "offline")]
    pub planner: RobotPlanner,
    #[command(flatten)]
    pub backend: super::VlmArgs,
    /// Send no images to the model.
    #[arg(long)]
    pub text_only: bool,
    /// Subscribe and plan, but publish nothing on cmd_vel; print what would be sent.
    #[arg(long)]
    pub dry_run: bool,
    /// Time budget in seconds (default: max_time_s of [explore], 600).
    #[arg(long, value_name = "S")]
    pub max_time: Option<f64>,
    /// Write the step log (JSONL, one flushed line per control tick).
    #[arg(long, value_name = "PATH")]
    pub log: Option<PathBuf>,
    /// Explore only: the exploration memory's session file (rooms, dead
    /// ends, recent actions), loaded at the start when it exists and saved
    /// atomically at the end, also after Ctrl-C; YAML, or JSON for a .json name.
    #[arg(long, value_name = "PATH")]
    pub memory_file: Option<PathBuf>,
    /// Connect, then hold the robot still until the operator says "explore"
    /// on the voice command topic ([rosbridge.topics] voice_command, default
    /// /navkit/voice_command, std_msgs/String); "stop" ends without a run.
    #[arg(long)]
    pub wait_for_voice: bool,
    #[command(flatten)]
    pub record: super::RecordArgs,
}

/// Everything resolved from the arguments and the config before connecting.
struct Setup {
    robot: RosbridgeConfig,
    explore: ExploreLoopConfig,
    /// The model behind its ledger (the run's bill), with `--max-cost-usd`'s budget.
    vlm: Option<Arc<LedgerVlm>>,
    budget: Option<Arc<CostBudget>>,
    prompt: ExplorePromptConfig,
    /// Ends the session at the loop's next step: Ctrl-C, `--max-cost-usd`,
    /// or a model link that cannot work (set by the ledger).
    halt: Arc<AtomicBool>,
}

impl Setup {
    /// `recording` (`--record`) sees every model call, under the ledger.
    fn new(args: &RosmasterArgs, config: &NavConfig, recording: Option<&Recording>) -> Result<Self, Exit> {
        let mut robot = config.rosbridge.clone();
        if let Some(url) = &args.url {
            robot.url = url.clone();
        }
        robot.dry_run |= args.dry_run;
        robot.validate().map_err(config_error)?;
        let mut explore = config.explore.clone();
        explore.pacing = Pacing::RealTime;
        // the robot's sensor limits bind the safety layer too: a scan older
        // than the HAL accepts is never driven on, and a direction of motion
        // with too few valid beams (rosbridge's nulls) is a sensor fault
        let sensors = &mut explore.safety.sensors;
        sensors.max_scan_age_s = sensors.max_scan_age_s.min(robot.scan_stale_s);
        let clearance = &mut explore.safety.clearance;
        clearance.min_valid_fraction = clearance.min_valid_fraction.max(robot.scan_min_valid_fraction);
        if let Some(t) = args.max_time {
            if !(t.is_finite() && t > 0.0) {
                return Err(usage(format!("--max-time {t}: must be a number of seconds > 0")));
            }
            explore.max_time_s = t;
        }
        let halt = Arc::new(AtomicBool::new(false));
        let (vlm, budget) = match args.planner {
            RobotPlanner::Vlm => {
                let budget = args.backend.budget(config)?;
                let model = args.backend.build(config)?;
                let ledger = LedgerVlm::shared(match recording {
                    Some(r) => r.wrap_vlm(model),
                    None => model,
                })
                .with_halt(Arc::clone(&halt));
                let ledger = match &budget {
                    Some(b) => ledger.with_budget(Arc::clone(b)),
                    None => ledger,
                };
                (Some(Arc::new(ledger)), budget)
            }
            RobotPlanner::Offline => {
                let b = &args.backend;
                if b.vlm.is_some() || b.model.is_some() || b.base_url.is_some() || b.max_cost_usd.is_some() {
                    return Err(usage("--vlm, --model, --base-url and --max-cost-usd need --planner vlm"));
                }
                (None, None)
            }
        };
        let prompt = ExplorePromptConfig {
            text_only: args.text_only,
            timeout_s: args.backend.timeout.unwrap_or(ExplorePromptConfig::default().timeout_s),
            ..ExplorePromptConfig::default()
        };
        Ok(Self { robot, explore, vlm, budget, prompt, halt })
    }

    fn planner(&self) -> Box<dyn ExplorePlanner> {
        match &self.vlm {
            Some(vlm) => Box::new(VlmExplorePlanner::new(
                Arc::clone(vlm) as Arc<dyn VisionLanguageModel>,
                self.prompt.clone(),
                self.explore.safety.clone(),
            )),
            None => Box::new(OfflineExplorePlanner::new()),
        }
    }
}

/// A bad `[rosbridge]` value (or `--url`), named.
fn config_error(e: HalError) -> Exit {
    match e {
        HalError::InvalidConfig { field, message } => usage(format!("[rosbridge] {field}: {message}")),
        other => usage(format!("rosbridge: {other}")),
    }
}

/// Runs the command.
pub fn run(args: RosmasterArgs) -> CmdResult {
    let config = NavConfig::load_opt(args.config.as_deref())?;
    let recording = args.record.open_realtime()?;
    let setup = Setup::new(&args, &config, recording.as_ref())?;
    let task = objectnav_task(&args, &setup)?;
    // a link in a loop is there, and its load says what is wrong (a link to a file not made yet is not)
    let memory = match args.memory_file.as_deref().filter(|p| nav_memory::ExplorationMemory::file_present(p)) {
        Some(p) => Some(nav_memory::ExplorationMemory::load(p).map_err(|e| usage(format!("--memory-file: {e}")))?),
        None => None,
    };
    let log = match &args.log {
        Some(p) => StepLog::create(p).map_err(|e| usage(e.to_string()))?,
        None => StepLog::null(),
    };
    // two workers: the control loop keeps its 20 Hz while the link and a model call make progress
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(internal)?;
    let result = rt.block_on(session(&args, setup, task, memory, log, recording.as_ref()));
    // a model call may still hang on the network: do not wait for it
    rt.shutdown_background();
    result
}

/// The objectnav task of `--protocol objectnav` (checked before
/// connecting), `None` for explore.
fn objectnav_task(args: &RosmasterArgs, setup: &Setup) -> Result<Option<objectnav::ObjectNavTask>, Exit> {
    if args.protocol == RobotProtocol::Explore {
        if args.target.is_some() || args.max_steps.is_some() {
            return Err(usage("--target and --max-steps need --protocol objectnav"));
        }
        return Ok(None);
    }
    if args.memory_file.is_some() {
        return Err(usage("--memory-file is the explore protocol's session file (--protocol explore)"));
    }
    let target = match args.target.as_deref().map(str::trim) {
        Some(t) if !t.is_empty() => t.to_string(),
        _ => return Err(usage("--protocol objectnav needs --target LABEL (e.g. --target chair)")),
    };
    let max_steps = args.max_steps.unwrap_or(500);
    if !(1..=1_000_000).contains(&max_steps) {
        return Err(usage(format!("--max-steps {max_steps}: must be within 1..=1000000")));
    }
    objectnav::check(setup, args.text_only)?;
    Ok(Some(objectnav::ObjectNavTask { target, max_steps }))
}

/// Connects, explores (or runs objectnav) and reports.
async fn session(
    args: &RosmasterArgs,
    setup: Setup,
    task: Option<objectnav::ObjectNavTask>,
    memory: Option<nav_memory::ExplorationMemory>,
    log: StepLog,
    recording: Option<&Recording>,
) -> CmdResult {
    let url = setup.robot.url.trim().to_string();
    let dry_run = setup.robot.dry_run;
    let connect_timeout = Duration::from_secs_f64(setup.robot.connect_timeout_s.max(0.1));
    crate::exit::diag!("nav rosmaster: connecting to {url} ...");
    let mut hal = RosbridgeHal::start(setup.robot.clone()).map_err(config_error)?;
    // the stop path outlives the loop's borrow of the HAL: signals use it
    let stop = hal.stop_handle();
    let signals = ExploreSignals { shutdown: Arc::clone(&setup.halt), ..ExploreSignals::default() };
    let (interrupted_tx, mut interrupted) = watch::channel(false);
    let watcher = Signals::install()?;
    tokio::spawn(watch_signals(watcher, stop, Arc::clone(&signals.shutdown), interrupted_tx));
    if let Some(b) = setup.budget.clone() {
        // --max-cost-usd ends the session the way Ctrl-C does (the robot is stopped)
        let shutdown = Arc::clone(&signals.shutdown);
        tokio::spawn(async move {
            while !b.reached() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            shutdown.store(true, Ordering::SeqCst);
        });
    }

    let connected = tokio::select! {
        r = hal.wait_connected(connect_timeout) => r,
        _ = interrupted.wait_for(|i| *i) => return Ok(0),
    };
    connected.map_err(|e| {
        usage(format!(
            "cannot reach rosbridge at {url} within {:.0} s: {e}\n  \
             is rosbridge_server running on the robot \
             (ros2 launch rosbridge_server rosbridge_websocket_launch.xml) and port 9090 reachable \
             (nc -vz HOST 9090)? See docs/ROSMASTER.md",
            connect_timeout.as_secs_f64()
        ))
    })?;
    let sensors = tokio::select! {
        r = hal.wait_for_sensors(SENSOR_WAIT) => r,
        _ = interrupted.wait_for(|i| *i) => return Ok(0),
    };
    let topics = &setup.robot.topics;
    sensors.map_err(|e| {
        usage(format!(
            "connected to {url}, but no usable scan and odometry within {} s: {e}\n  \
             check the topic names and types ({} sensor_msgs/LaserScan, {} nav_msgs/Odometry) with \
             `ros2 topic list -t`, or set them in [rosbridge.topics]; see docs/ROSMASTER.md",
            SENSOR_WAIT.as_secs(),
            topics.scan,
            topics.odom
        ))
    })?;
    announce(&mut hal, &setup, dry_run, task.is_none()).await;
    let progress = Progress::new();
    if args.wait_for_voice && !voice::wait_for_explore(&hal, &progress, &mut interrupted).await {
        let stopped = hal.stop_handle().stop().await;
        crate::exit::print(&format!(
            "nav rosmaster: ended (operator_stop) before a run started{}",
            if stopped.is_err() { " (the stop burst failed: use the hardware e-stop)" } else { "" }
        ))?;
        return Ok(0);
    }
    if let Some(task) = &task {
        // objectnav records the step records and the model calls (its sensor reads are not tapped)
        let mut record_tap = recording.map(Recording::step_tap);
        let mut said = progress.announce_tap();
        let log = log.with_tap(move |r| {
            said(r);
            if let Some(t) = record_tap.as_mut() {
                t(r);
            }
        });
        let result = objectnav::run(hal, &setup, task, log, interrupted, &progress).await;
        if let Some(r) = recording.map(super::finish_recording).transpose()? {
            crate::exit::diag!("  recording: {}", r.line());
        }
        return result;
    }

    let clock = hal.clock();
    let speech = hal.speech_handle();
    let mut progress_tap = progress.tap();
    let mut record_tap = recording.map(Recording::step_tap);
    let mut log = log.with_tap(move |r| {
        progress_tap(r);
        if let Some(t) = record_tap.as_mut() {
            t(r);
        }
    });
    let nav_error = |e| match e {
        NavError::Config(m) => usage(m),
        e @ NavError::InvalidConfig(_) => usage(e.to_string()),
        other => internal(other),
    };
    if args.wait_for_voice {
        // the step log's first voice event: the "explore" that started the run
        signals.voice.push(nav_planner::navigator::voice::VoiceCommand::Explore);
    }
    let mut lp = ExploreLoop::new(setup.explore.clone(), setup.planner(), signals.clone()).map_err(nav_error)?;
    if let Some(memory) = memory {
        lp = lp.with_memory(memory);
    }
    let link = RobotLink::new(hal, Arc::clone(&signals.pause), signals.voice.clone(), progress.clone());
    let mut robot = Tapped::new(link, recording.map(Recording::sensor_tap));
    let observer = Observer::new()
        .with_info("robot", json!(url))
        .with_info("dry_run", json!(dry_run))
        .with_info("command", json!("rosmaster"));
    let mut ctx = RunContext::new(&clock, &mut log).with_observer(observer);
    let outcome = lp.run(&mut robot, &mut ctx).await;
    // the recording is closed (and readable) whatever the loop's outcome
    let recorded = recording.map(super::finish_recording).transpose();
    let outcome = outcome.map_err(nav_error)?;
    let said = nav_planner::navigator::voice::announcement(&json!({"event": "end", "end": outcome.end.as_str()}));
    let topic = &setup.robot.topics.say;
    final_announcements(&speech, &progress, dry_run, topic, &said.unwrap_or_default()).await;
    if let Some(failure) = setup.vlm.as_ref().and_then(|l| l.link_failure()) {
        // the loop ended at its next step and stopped the robot
        return Err(Exit::ModelLink(failure.to_string()));
    }
    if let Some(path) = &args.memory_file {
        outcome.memory.save(path).map_err(|e| usage(format!("--memory-file: {e}")))?;
    }
    let model_unavailable = outcome.end == ExploreEnd::ModelUnavailable;
    let mut text = summary(&outcome, lp.planner_name(), &robot, &progress, args);
    if let Some(ledger) = &setup.vlm {
        // calls still in flight are not waited for (the robot has stopped; a hung call may never end)
        text.push_str(&format!("\n  {}", backend_line(&BackendSummary::from_ledger(ledger, ledger.in_flight()))));
    }
    if let Some(r) = recorded? {
        text.push_str(&format!("\n  recording: {}", r.line()));
    }
    crate::exit::print(&text)?;
    match setup.budget.as_ref().filter(|b| b.reached()) {
        Some(b) => {
            crate::exit::diag!("{}", super::cost_limit_message(b));
            Ok(super::EXIT_COST_LIMIT)
        }
        // the model stopped answering: a failed run, even with the robot home
        None if model_unavailable => Ok(1),
        None => Ok(0),
    }
}

/// The lines printed once the robot is ready.
async fn announce(hal: &mut RosbridgeHal, setup: &Setup, dry_run: bool, explore: bool) {
    let c = &setup.robot;
    let scan = hal.scan().await;
    let beams = scan.as_ref().map(|s| s.scan.ranges.len()).unwrap_or(0);
    let pose = hal.odometry().await.map(|o| o.pose).unwrap_or_default();
    let drive = match hal.capabilities().drive {
        DriveKind::Ackermann { min_turn_radius_m } => format!("ackermann (turning radius {min_turn_radius_m} m)"),
        _ => "differential".to_string(),
    };
    crate::exit::diag!(
        "nav rosmaster: connected; {} {beams} beams, {} at ({:.2}, {:.2}, {:.0}°), {drive} drive",
        c.topics.scan,
        c.topics.odom,
        pose.x,
        pose.y,
        pose.yaw.to_degrees()
    );
    if let Err(e) = &scan {
        crate::exit::diag!("nav rosmaster: {e}: the robot holds still until the LiDAR sends valid scans");
    }
    if dry_run {
        crate::exit::diag!(
            "nav rosmaster: DRY RUN: nothing is published on {}; commands are printed instead",
            c.topics.cmd_vel
        );
    }
    let planner = if setup.vlm.is_some() { "vlm" } else { "offline" };
    if !explore {
        return;
    }
    match (c.nav2, hal.nav2_status()) {
        (Nav2Mode::Off, _) => crate::exit::diag!("nav rosmaster: nav2 = \"off\": navkit drives its own paths"),
        _ if dry_run => crate::exit::diag!("nav rosmaster: DRY RUN: no goals go to Nav2; navkit plans its own paths"),
        (Nav2Mode::On, _) => {
            crate::exit::diag!("nav rosmaster: nav2 = \"on\": navigation goals go to Nav2 on {}", c.topics.goal)
        }
        (Nav2Mode::Auto, Some(Ok(()))) => crate::exit::diag!(
            "nav rosmaster: Nav2 found ({}): navigation goals go to Nav2 on {}; navkit publishes no cmd_vel while \
             Nav2 drives and cancels the goal on any safety stop",
            c.topics.nav2_status,
            c.topics.goal
        ),
        (Nav2Mode::Auto, Some(Err(why))) => {
            crate::exit::diag!("nav rosmaster: Nav2 not found ({why}): navkit drives its own paths")
        }
        (Nav2Mode::Auto, None) => {
            crate::exit::diag!("nav rosmaster: still looking for Nav2: navkit drives its own paths meanwhile")
        }
    }
    crate::exit::diag!(
        "nav rosmaster: exploring with the {planner} planner for up to {:.0} s; pause with {} (std_msgs/Bool) or \
         say pause/resume/stop/go home on {} (std_msgs/String), announcements on {}; Ctrl-C stops the robot",
        setup.explore.max_time_s,
        c.topics.pause,
        c.topics.voice_command,
        c.topics.say
    );
}

/// The final report (stdout).
fn summary(
    out: &ExploreOutcome,
    planner: &str,
    robot: &RobotLink,
    progress: &Progress,
    args: &RosmasterArgs,
) -> String {
    let s = &out.stats;
    let link = robot.hal().link_status();
    let topic = |name: &str| link.topics.get(name).map_or(0, |t| t.received);
    let topics = &robot.hal().config().topics;
    let rooms: Vec<&str> = out.memory.rooms().iter().map(|r| r.name.as_str()).collect();
    let mut text = format!(
        "nav rosmaster: ended ({}{}) after {:.1} s, {} control ticks{}\n  \
         planner {planner} | decisions {} | fallbacks {} | invalid tool calls {} | VLM calls {} | tokens {}+{}\n  \
         travelled {:.2} m (odometry) | safety overrides {} | worst watchdog tier {} | collisions reported {}\n  \
         link {}: {} session(s) | {} {} msgs | {} {} msgs\n  \
         rooms: {}",
        out.end.as_str(),
        match (out.end, out.at_home) {
            (ExploreEnd::ModelUnavailable, true) => ", the robot is home",
            (ExploreEnd::ModelUnavailable, false) => ", the robot did not get home",
            _ => "",
        },
        progress.elapsed_s(),
        s.steps,
        if robot.hal().config().dry_run { " (dry run: nothing was published)" } else { "" },
        s.planner_calls,
        s.fallbacks,
        s.invalid_tool_calls,
        s.vlm_calls,
        s.usage.prompt_tokens,
        s.usage.completion_tokens,
        progress.distance_m(),
        s.safety_overrides,
        out.worst_tier.as_str(),
        out.collisions,
        link.endpoint,
        link.sessions,
        topics.scan,
        topic(&topics.scan),
        topics.odom,
        topic(&topics.odom),
        if rooms.is_empty() { "none reported".to_string() } else { rooms.join(", ") },
    );
    text.push_str(&format!("\n  {}", out.stats_line));
    if let Some(p) = &args.log {
        text.push_str(&format!("\n  step log: {}", p.display()));
    }
    text
}

/// What SIGINT/SIGTERM mean to a session: the first sets the shutdown and
/// sends a stop burst at once; the second stops and exits.
async fn watch_signals(
    mut signals: Signals,
    stop: StopHandle,
    shutdown: Arc<AtomicBool>,
    interrupted: watch::Sender<bool>,
) {
    let name = signals.next().await;
    crate::exit::diag!("nav rosmaster: {name}: stopping the robot (zero velocity) and shutting down");
    shutdown.store(true, Ordering::SeqCst);
    let _ = interrupted.send(true);
    if let Err(e) = stop.stop().await {
        crate::exit::diag!("nav rosmaster: stop on {name}: {e}");
    }
    let name = signals.next().await;
    crate::exit::diag!("nav rosmaster: second {name}: exiting now");
    if let Err(e) = stop.stop().await {
        crate::exit::diag!("nav rosmaster: stop on {name}: {e}");
    }
    std::process::exit(130);
}
