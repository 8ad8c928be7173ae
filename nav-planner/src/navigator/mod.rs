//! The Navigator, nav-planner's top layer: the three loops that run a
//! planner over a HAL, and what runs them — episodes in the built-in
//! simulator ([`episode`]), evaluation suites ([`eval`]) and episodes
//! through the simulator bridge (`bridge_run`, feature `sim-bridge`).
//!
//! - [`objectnav_loop::ObjectNavLoop`] — the Place–Anchor memory design's panorama → planner → low-level
//!   policy loop with Place–Anchor memory;
//! - [`explore_loop::ExploreLoop`] — the LLM-driven exploration robot's VLM decision task and 20 Hz
//!   control task with the safety layer, watchdog tiers and pause/resume;
//! - [`candidates_loop::CandidatesLoop`] — the LLMos pipeline's 13-step cycle.
//!
//! All three are generic over the robot (`R: Robot`, so the simulator, a
//! rosbridge robot or a bridge process), take their planner as a trait
//! object (a VLM protocol or an offline planner), read time from an
//! injected [`Clock`](nav_core::time::Clock), and write one flushed
//! [`StepLog`] line per step.
//!
//! [`voice`] parses an operator's spoken commands (explore, stop, pause,
//! resume, go home, free text for the planner) for the explore and
//! ObjectNav loops and turns their step-log events into announcements.
//!
//! [`policy`] is the ObjectNav loop's low-level policy seam and
//! [`pixel_policy::PixelGoalPolicy`] its default implementation; the
//! perception stage it asks is [`crate::protocol::perception::GoalPerception`].

pub mod billing;
#[cfg(feature = "sim-bridge")]
pub mod bridge_run;
pub mod candidates_exec;
pub mod candidates_loop;
pub mod candidates_vision;
pub mod config_check;
pub mod episode;
#[cfg(feature = "estimate")]
pub mod estimate;
pub mod eval;
pub mod explore_loop;
#[cfg(feature = "sim-bridge")]
pub mod external;
pub mod log;
pub mod motion_guard;
pub mod objectnav_loop;
pub mod pixel_policy;
pub mod place_score;
pub mod policy;
pub(crate) mod pursuit;
pub mod voice;

#[doc(inline)]
pub use episode::runner;
pub use log::{
    LogError, MAX_LOG_BYTES, MAX_LOG_LINE_BYTES, MAX_LOG_STEPS, PlannerRecord, PoseRecord, StepLog, StepRecord,
    read_log,
};

use crate::protocol::CallRecord;
use crate::vlm::Usage;
use nav_core::geometry::Pose2;
use nav_hal::HalError;
use nav_memory::MemoryError;
use serde::{Deserialize, Serialize};

/// Why a loop could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NavError {
    /// The robot failed.
    #[error("robot: {0}")]
    Hal(#[from] HalError),
    /// The step log could not be written.
    #[error(transparent)]
    Log(#[from] LogError),
    /// The memory configuration is invalid.
    #[error("memory: {0}")]
    Memory(#[from] MemoryError),
    /// A configuration value is out of its range (the key is named).
    #[error("configuration: {0}")]
    InvalidConfig(#[from] nav_core::config::ConfigError),
    /// Another configuration problem.
    #[error("configuration: {0}")]
    Config(String),
}

/// How many distinct fallback reasons a run summary keeps.
pub const MAX_FALLBACK_REASONS: usize = 5;

/// Counters a loop accumulates for the run summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EpisodeStats {
    /// Steps (actions, control ticks or cycles, per loop).
    pub steps: u32,
    /// Planner invocations (VLM or offline).
    pub planner_calls: u32,
    /// Model calls answered (0 offline).
    pub vlm_calls: u32,
    /// Model calls that failed.
    #[serde(default)]
    pub vlm_failures: u32,
    /// Token usage over all model calls.
    pub usage: Usage,
    /// Estimated cost, US dollars.
    pub cost_usd: f64,
    /// Fallback decisions used.
    pub fallbacks: u32,
    /// ABABA events.
    pub ababa: u32,
    /// STUCK events.
    pub stuck: u32,
    /// Safety overrides (velocity loops).
    pub safety_overrides: u32,
    /// Scene analyses run (objectnav; every trigger, answered or not).
    #[serde(default)]
    pub scene_calls: u32,
    /// Tool calls rejected as invalid (unknown tool, bad arguments).
    #[serde(default)]
    pub invalid_tool_calls: u32,
    /// The first distinct fallback reasons, at most
    /// [`MAX_FALLBACK_REASONS`].
    #[serde(default)]
    pub fallback_reasons: Vec<String>,
    /// Local per-cycle overhead samples (everything but model calls), ms.
    #[serde(skip)]
    pub overhead_ms: Vec<f64>,
    /// Wall-clock duration, ms (filled by the runner).
    pub wall_ms: f64,
}

impl EpisodeStats {
    /// Adds a planner call.
    pub fn add_call(&mut self, r: &CallRecord) {
        self.planner_calls += 1;
        self.add_scene_call(r);
        if let Some(reason) = &r.fallback {
            self.fallbacks += 1;
            self.note_fallback(&format!("planner: {reason}"));
        }
    }

    /// Adds a model call that is not a planner decision (scene analysis).
    pub fn add_scene_call(&mut self, r: &CallRecord) {
        self.vlm_calls += r.vlm_calls;
        self.vlm_failures += r.vlm_failures;
        self.usage += r.usage;
        self.cost_usd += r.cost_usd.unwrap_or(0.0);
    }

    /// Keeps `reason` among the first distinct fallback reasons.
    pub fn note_fallback(&mut self, reason: &str) {
        let reason: String = reason.chars().take(160).collect();
        if self.fallback_reasons.len() < MAX_FALLBACK_REASONS && !self.fallback_reasons.contains(&reason) {
            self.fallback_reasons.push(reason);
        }
    }

    /// Records one cycle's local overhead.
    pub fn record_overhead(&mut self, ms: f64) {
        if ms.is_finite() {
            self.overhead_ms.push(ms.max(0.0));
        }
    }

    /// Median local overhead per cycle, ms.
    pub fn median_overhead_ms(&self) -> Option<f64> {
        let mut v = self.overhead_ms.clone();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(v[v.len() / 2])
    }
}

/// What every loop runs with besides its robot: the clock it reads time
/// from, the step log it writes one line per step to, and the observer it
/// reports to. The three loops share one shape: `XLoop::new(config, …)`
/// validates the configuration and returns `Result<Self, NavError>`, and
/// `run(&mut self, robot, &mut RunContext)` drives one episode.
pub struct RunContext<'a, R: ?Sized> {
    /// The run's clock (simulated time in the simulator, the robot's clock
    /// on hardware).
    pub clock: &'a dyn nav_core::time::Clock,
    /// The step log.
    pub log: &'a mut StepLog,
    /// Ground truth for the log, progress and the run identity.
    pub observer: Observer<'a, R>,
}

impl<'a, R: ?Sized> RunContext<'a, R> {
    /// A context with an observer that reports nothing.
    pub fn new(clock: &'a dyn nav_core::time::Clock, log: &'a mut StepLog) -> Self {
        Self { clock, log, observer: Observer::new() }
    }

    /// Replaces the observer.
    pub fn with_observer(mut self, observer: Observer<'a, R>) -> Self {
        self.observer = observer;
        self
    }
}

/// Reads a robot's true pose for the step log (`None`: not known).
pub type GroundTruthFn<'a, R> = dyn Fn(&R) -> Option<Pose2> + 'a;

/// What a loop reports outward while it runs: ground truth for the log
/// (simulators), progress for a progress bar, and the run identity for
/// step 0.
pub struct Observer<'a, R: ?Sized> {
    gt: Option<&'a GroundTruthFn<'a, R>>,
    progress: Option<&'a mut dyn FnMut(u64)>,
    halt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Run identity written into step 0's `info`.
    pub info: serde_json::Map<String, serde_json::Value>,
}

impl<'a, R: ?Sized> Default for Observer<'a, R> {
    fn default() -> Self {
        Self { gt: None, progress: None, halt: None, info: serde_json::Map::new() }
    }
}

impl<'a, R: ?Sized> Observer<'a, R> {
    /// An observer that reports nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Logs ground-truth poses read with `f` (`None` when it has none).
    pub fn with_ground_truth(mut self, f: &'a GroundTruthFn<'a, R>) -> Self {
        self.gt = Some(f);
        self
    }

    /// Calls `f(step)` after every step.
    pub fn with_progress(mut self, f: &'a mut dyn FnMut(u64)) -> Self {
        self.progress = Some(f);
        self
    }

    /// Ends the run cleanly at the next step once `flag` is true (the
    /// objectnav and candidates loops end `halted`; a spending limit,
    /// [`crate::vlm::CostBudget::flag`], sets it).
    pub fn with_halt(mut self, flag: std::sync::Arc<std::sync::atomic::AtomicBool>) -> Self {
        self.halt = Some(flag);
        self
    }

    /// Whether the run was asked to end (see [`Observer::with_halt`]).
    pub fn halted(&self) -> bool {
        self.halt.as_ref().is_some_and(|f| f.load(std::sync::atomic::Ordering::SeqCst))
    }

    /// Adds a run-identity field to step 0.
    pub fn with_info(mut self, key: &str, value: serde_json::Value) -> Self {
        self.info.insert(key.to_string(), value);
        self
    }

    pub(crate) fn gt_pose(&self, robot: &R) -> Option<Pose2> {
        self.gt.and_then(|f| f(robot))
    }

    pub(crate) fn step(&mut self, _robot: &R, step: u64) {
        if let Some(p) = self.progress.as_mut() {
            p(step);
        }
    }
}
