//! The explore loop (LLM-driven exploration with a safety layer): a decision
//! task and a 20 Hz control task. The decision side asks the planner (a VLM
//! or the offline explorer) when the
//! [`CallScheduler`](nav_safety::CallScheduler) says so (event triggers, base
//! period, frame skipping) or when the current action has finished; the
//! planner runs on its own task (inline when it is instant) with one call in
//! flight at a time, and its newest decision wins. The control task is the
//! only velocity publisher: every tick it takes the current target (a timed
//! velocity, a navigation goal followed along an A* path, a stop) or the
//! watchdog tier's command (STOP_WAIT, LOCAL_NAV →
//! [`FrontierPlanner`](crate::offline::FrontierPlanner), RETURN_HOME → back
//! to the start), hands it to nav-safety's
//! [`SafetyLayer`](nav_safety::SafetyLayer) (decay while a decision is
//! awaited, the continuous guard, the stop arbiter) and publishes one
//! velocity command. The loop itself is only orchestration: the safety recipe
//! (executor, guard, watchdog, network monitor, scheduler, triggers, arbiter)
//! is the layer's. An external pause signal (e.g. a voice override) stops
//! motion at the next tick: a real robot gets one stop burst and then nothing
//! until the pause ends.
//!
//! # On a real robot
//!
//! The loop runs unchanged over a real robot's HAL (e.g. rosbridge) with
//! [`Pacing::RealTime`] and a monotonic clock:
//!
//! - Ticks follow absolute 50 ms deadlines, so `cmd_vel` goes out at 20 Hz
//!   on average even when a tick runs long (one late tick is caught up; a
//!   longer stall is skipped, never burst).
//! - A robot whose `drive` publishes one command and returns at once
//!   (zero duration in the [`MotionOutcome`](nav_hal::hal::MotionOutcome))
//!   has its motion measured from odometry: the distance and time an
//!   action's feedback reports come from the poses seen at each tick.
//! - When sensing fails (`Disconnected`, `Stale`), the robot is treated as
//!   stopped: the stop arbiter holds zero velocity, no decision can be
//!   made, and the time counts toward the watchdog tiers, so after a long
//!   outage the loop resumes in LOCAL_NAV or RETURN_HOME, the
//!   watchdog's tiers for a lost link. A blind LiDAR (`SensorFault`) holds the
//!   robot the same way, and a decision that comes due (at most once per
//!   base period) tells the planner the LiDAR is blind and why, with no
//!   frontiers; its reply is not executed.
//! - Path following respects the robot's steering ([`Capabilities::drive`](
//!   nav_hal::hal::Capabilities::drive)): an Ackermann base turns on arcs,
//!   in reverse when the front is blocked, and the safety executor uses
//!   the robot's turning radius.
//! - Once shutdown is signalled, no tick publishes anything but zero
//!   velocity.
//!
//! # Layout
//!
//! - `run`: one run's state and the tick (sense → decide → command →
//!   publish → log → pace);
//! - `sense`: odometry and scan, sensor loss, motion measured from odometry;
//! - `decision`: the planner (inline or on its task) and the one call in
//!   flight;
//! - `schedule`: when a call is due and the snapshot it sends;
//! - `reply`: a reply applied to the loop state;
//! - `active`: the action in progress and how it is followed;
//! - `handoff`: navigation goals handed to the robot's own navigation
//!   stack (Nav2), with the guard and the stop arbiter on top;
//! - `control`: the watchdog tiers' commands, the safety layer's tick, the
//!   velocity published;
//! - `operator`: the operator's voice commands (pause, resume, stop, go
//!   home, explore, an instruction for the planner);
//! - `state`: the loop state a decision changes.

pub(crate) mod active;
mod control;
mod decision;
mod handoff;
mod operator;
mod reply;
mod run;
mod schedule;
mod sense;
mod state;

use super::voice::VoiceInbox;
use super::{EpisodeStats, NavError, RunContext};
use crate::protocol::explore::{ExploreFrontier, ExplorePlanner};
use decision::Decider;
use nav_core::geometry::Pose2;
use nav_core::local_map::{LocalMap, LocalMapConfig};
use nav_hal::hal::Robot;
use nav_memory::{ExplorationMemory, Frontier};
use nav_safety::{SafetyConfig, WatchdogTier};
use run::Run;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// How the control loop relates simulated time to wall time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Pacing {
    /// A real robot: ticks follow absolute deadlines `tick_s` apart (one
    /// late tick is caught up, a longer stall skipped).
    RealTime,
    /// A simulator that advances its own clock: ticks run as fast as the
    /// CPU allows, except while a model call is in flight, when each tick
    /// waits `tick / time_scale` of wall time so the robot keeps moving
    /// during the model's latency as it would in reality (scaled).
    Simulated {
        /// Wall-time speed-up while waiting for a model (1 = real time).
        time_scale: f64,
    },
}

/// Settings of the explore loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExploreLoopConfig {
    /// Control period, seconds (0.05 = 20 Hz).
    /// Range: [0.01, 10] (100 Hz; finer ticks multiply the work per simulated second).
    pub tick_s: f64,
    /// Time budget, seconds of loop time.
    /// Range: (0, 1000000].
    pub max_time_s: f64,
    /// Decision budget (planner calls).
    /// Range: 1..=1000000.
    pub max_decisions: u32,
    /// The safety layer (speeds, clearances, watchdog tiers, triggers…).
    /// Range: see `SafetyConfig`.
    pub safety: SafetyConfig,
    /// The map used for frontiers, navigation goals and the fallbacks.
    /// Range: see `LocalMapConfig`.
    pub map: LocalMapConfig,
    /// Speed when following a path, m/s (medium).
    /// Range: (0, 5].
    pub path_speed_mps: f64,
    /// A navigation goal is reached within this distance, metres.
    /// Range: (0, 10].
    pub goal_tolerance_m: f64,
    /// Pacing (simulated by default).
    /// Range: `time_scale` (0, 1000000].
    pub pacing: Pacing,
    /// End the run when the planner reports exploration complete.
    pub stop_when_complete: bool,
    /// Capture a camera frame for each call (and for frame skipping).
    pub use_camera: bool,
}

impl Default for ExploreLoopConfig {
    fn default() -> Self {
        Self {
            tick_s: 0.05,
            max_time_s: 600.0,
            max_decisions: 150,
            safety: SafetyConfig::default(),
            map: LocalMapConfig::default(),
            path_speed_mps: 0.12,
            goal_tolerance_m: 0.3,
            pacing: Pacing::Simulated { time_scale: 1.0 },
            stop_when_complete: true,
            use_camera: true,
        }
    }
}

/// Signals from outside the loop.
#[derive(Debug, Clone, Default)]
pub struct ExploreSignals {
    /// While set, no decisions are made and the loop leaves the robot to
    /// whoever drives it meanwhile (e.g. a voice override): a real
    /// robot gets one stop burst when the pause begins and no velocity
    /// command until it ends; a simulator keeps stepping at zero velocity.
    pub pause: Arc<AtomicBool>,
    /// Ends the loop; the robot is stopped (zero velocity) before returning.
    pub shutdown: Arc<AtomicBool>,
    /// Voice commands, applied at the next tick and logged as `voice`
    /// events ([`VoiceCommand`](super::voice::VoiceCommand)): `stop` ends
    /// the run ([`ExploreEnd::OperatorStop`]), `pause` and `resume` set and
    /// clear [`pause`](Self::pause), `go home` drives back to the start
    /// (RETURN_HOME, no decisions) and ends [`ExploreEnd::ReturnedHome`],
    /// `explore` resumes a pause or a way home, and free text goes to the
    /// planner's next request.
    pub voice: VoiceInbox,
}

/// How an explore run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExploreEnd {
    /// The planner reported exploration complete.
    Complete,
    /// The time budget ran out.
    TimeLimit,
    /// The decision budget ran out.
    DecisionLimit,
    /// Shut down from outside.
    Shutdown,
    /// The model stopped answering: the watchdog reached RETURN_HOME (no
    /// usable decision for its return-home time) and either brought the robot
    /// home ([`ExploreOutcome::at_home`]) or the time or decision budget ran
    /// out meanwhile. A failure, however much the fallbacks explored.
    ModelUnavailable,
    /// The operator said `stop` (a voice command): not a success.
    OperatorStop,
    /// The operator said `go home` and the robot got back to its start.
    ReturnedHome,
}

impl ExploreEnd {
    /// The name the run summary and the logs give it (as serialized):
    /// `"complete"`, `"time_limit"`, `"decision_limit"`, `"shutdown"`,
    /// `"model_unavailable"`, `"operator_stop"`, `"returned_home"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExploreEnd::Complete => "complete",
            ExploreEnd::TimeLimit => "time_limit",
            ExploreEnd::DecisionLimit => "decision_limit",
            ExploreEnd::Shutdown => "shutdown",
            ExploreEnd::ModelUnavailable => "model_unavailable",
            ExploreEnd::OperatorStop => "operator_stop",
            ExploreEnd::ReturnedHome => "returned_home",
        }
    }
}

/// The result of an explore run.
#[derive(Debug)]
pub struct ExploreOutcome {
    /// How it ended.
    pub end: ExploreEnd,
    /// Counters (steps = control ticks).
    pub stats: EpisodeStats,
    /// The exploration memory at the end.
    pub memory: ExplorationMemory,
    /// Collisions reported by the robot.
    pub collisions: u32,
    /// Highest watchdog tier reached.
    pub worst_tier: WatchdogTier,
    /// The robot ended within the goal tolerance of its start pose.
    pub at_home: bool,
    /// The statistics line of the whole run: every model request the loop
    /// sent (each decision's first and further ones), the mean rate,
    /// triggered and skipped calls, mean latency.
    pub stats_line: String,
}

/// The explore loop. Build it with [`ExploreLoop::new`] and drive a robot
/// with [`ExploreLoop::run`].
pub struct ExploreLoop {
    config: ExploreLoopConfig,
    decider: Decider,
    planner_name: String,
    signals: ExploreSignals,
    /// The memory a run starts from (a saved session), if any.
    memory: Option<ExplorationMemory>,
}

impl ExploreLoop {
    /// A loop around `planner`, with the configuration checked up front
    /// ([`ExploreLoopConfig::validate`]: every range, the safety layer, the
    /// local map). Non-instant planners (VLMs) run on a tokio task, so this
    /// must be called inside a tokio runtime.
    ///
    /// # Errors
    ///
    /// [`NavError::InvalidConfig`] naming the key out of range;
    /// [`NavError::Config`] when a model planner is built outside a tokio
    /// runtime.
    pub fn new(
        config: ExploreLoopConfig,
        planner: Box<dyn ExplorePlanner>,
        signals: ExploreSignals,
    ) -> Result<Self, NavError> {
        config.validate()?;
        let planner_name = planner.name();
        let decider = Decider::new(planner)?;
        Ok(Self { config, decider, planner_name, signals, memory: None })
    }

    /// Starts the next run from `memory` (a session saved with
    /// [`ExplorationMemory::save`], continued: its rooms, dead ends and
    /// recent actions, its time going on) instead of an empty memory.
    /// Positions in it are in the odometry frame of the session that saved
    /// it, so a session continues from the same start pose.
    pub fn with_memory(mut self, memory: ExplorationMemory) -> Self {
        self.memory = Some(memory);
        self
    }

    /// The planner's name.
    pub fn planner_name(&self) -> &str {
        &self.planner_name
    }

    /// Runs until the planner reports completion, a budget runs out, or
    /// shutdown is signalled. The robot is stopped before returning.
    ///
    /// # Errors
    ///
    /// The robot failed (other than a lost link, which the watchdog tiers
    /// handle), the step log could not be written, or the configuration
    /// does not suit the robot (e.g. its turning radius).
    pub async fn run<R: Robot + ?Sized>(
        &mut self,
        robot: &mut R,
        ctx: &mut RunContext<'_, R>,
    ) -> Result<ExploreOutcome, NavError> {
        let result = self.drive(robot, ctx).await;
        // whatever happened, leave the robot stopped (zero velocity; the HAL repeats it as its
        // stop requires)
        robot.stop().await.ok();
        result
    }

    /// Ticks one run to its end.
    async fn drive<R: Robot + ?Sized>(
        &mut self,
        robot: &mut R,
        ctx: &mut RunContext<'_, R>,
    ) -> Result<ExploreOutcome, NavError> {
        let mut run = Run::start(&self.config, robot, ctx.clock).await?;
        if let Some(memory) = self.memory.take() {
            run.resume_memory(memory);
        }
        run.write_start(robot, ctx, &self.planner_name)?;
        let end = loop {
            match run.tick(&mut self.decider, &self.signals, robot, ctx).await {
                Ok(Some(end)) => break end,
                Ok(None) => {}
                Err(e) => {
                    // a goal the robot's own stack drives must not outlive the run
                    run.close_handoff(robot).await;
                    return Err(e);
                }
            }
        };
        run.close_handoff(robot).await;
        Ok(run.finish(end, ctx.clock.now_s()))
    }
}

/// The reachable frontiers shown to the model, cheapest first (at most
/// five, ids 1..).
pub(crate) fn frontier_list(map: &LocalMap, pose: Pose2) -> Vec<ExploreFrontier> {
    let costs = map.costmap();
    map.reachable_frontiers(&costs, pose.position())
        .into_iter()
        // a frontier at the robot's feet is a sensor shadow, not a place to go
        .filter(|f| f.cost_m > 0.6)
        .take(5)
        .enumerate()
        .map(|(i, f)| ExploreFrontier {
            id: i as u32 + 1,
            position: f.entry,
            path_cost_m: Some(f.cost_m),
            size: f.cluster.size,
        })
        .collect()
}

/// The same frontiers as exploration-memory entries (clockwise bearing from
/// the robot's front, as the prompt states every angle, and distance from
/// `pose`), so the memory and the frontier list agree.
pub(crate) fn memory_frontiers(frontiers: &[ExploreFrontier], pose: Pose2) -> impl Iterator<Item = Frontier> + '_ {
    frontiers.iter().map(move |f| Frontier {
        id: f.id,
        direction_deg: nav_core::geometry::clockwise_deg(pose.relative_bearing(f.position)),
        distance_m: pose.position().distance(f.position),
        kind: "frontier".into(),
        width_m: None,
    })
}
