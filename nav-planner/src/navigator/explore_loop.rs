//! The explore loop (seeds 001/003): a decision task and a 20 Hz control
//! task. The decision side asks the planner (a VLM or the offline explorer)
//! when the [`CallScheduler`] says so (event triggers, base period, frame
//! skipping) or when the current action has finished; the planner runs on
//! its own task (inline when it is instant), and its newest decision wins.
//! The control task is the only velocity publisher: every tick it takes the
//! current target (a timed velocity, a navigation goal followed along an A*
//! path, a stop), applies the watchdog tier (CONTINUE with exponential
//! decay, STOP_WAIT, LOCAL_NAV → [`FrontierPlanner`], RETURN_HOME → back to
//! the start), runs the continuous guard and the stop arbiter, and
//! publishes one velocity command. An external pause signal (the seed's
//! voice override) stops motion at the next tick.
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
//!   outage the loop resumes in LOCAL_NAV or RETURN_HOME as the seed
//!   prescribes for a lost link.
//! - Path following respects the robot's steering ([`Capabilities::drive`](
//!   nav_hal::hal::Capabilities::drive)): an Ackermann base turns on arcs,
//!   in reverse when the front is blocked, and the safety executor uses
//!   the robot's turning radius.
//! - Once shutdown is signalled, no tick publishes anything but zero
//!   velocity.

use super::log::{PlannerRecord, StepLog, StepRecord};
use super::pursuit::Pursuit;
use super::{EpisodeStats, NavError, Observer};
use crate::offline::FrontierPlanner;
use crate::protocol::PlannerReply;
use crate::protocol::explore::{ExploreDecision, ExploreFrontier, ExplorePlanner, ExploreSnapshot, decision_json};
use nav_core::geometry::{Point2, Pose2};
use nav_core::lidar::{LaserScan, LidarConfig, LidarSummary};
use nav_core::local_map::{LocalMap, LocalMapConfig};
use nav_core::similarity::Thumbnail;
use nav_core::time::Clock;
use nav_hal::HalError;
use nav_hal::hal::{Robot, VelocityCommand};
use nav_memory::{ActionRecord, ExplorationMemory, Frontier};
use nav_safety::executor::{ExecutionOutcome, MotionReport, Target};
use nav_safety::{
    CallDecision, CallScheduler, ContinuousGuard, EventTriggers, FrontierGoal, NetworkMonitor, SafetyConfig,
    SafetyExecutor, SafetySensors, ScheduleInput, StopArbiter, StopSource, ToolCall, VelocityTarget, Watchdog,
    WatchdogTier,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

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
    /// Range: [0.001, 10].
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
    /// While set, the robot is held still and no decisions are made (the
    /// seed's voice override).
    pub pause: Arc<AtomicBool>,
    /// Ends the loop; the robot is stopped (zero velocity) before returning.
    pub shutdown: Arc<AtomicBool>,
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
    /// Returned home after losing the planner.
    ReturnedHome,
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
}

/// What the control task is doing.
#[derive(Debug, Clone)]
enum Active {
    Idle,
    Velocity { v: VelocityTarget, started_s: f64 },
    Goal { goal: Point2, deadline_s: f64, path: Vec<Point2>, replanned_s: f64, progress: (Point2, f64) },
    Hold { until_s: f64 },
}

/// The decision side: inline for instant planners, a task otherwise.
enum Decider {
    Inline(Box<dyn ExplorePlanner>),
    Task {
        requests: mpsc::Sender<ExploreSnapshot>,
        replies: watch::Receiver<Option<Arc<PlannerReply<ExploreDecision>>>>,
    },
}

/// The loop state a decision changes: the safety layer, the exploration
/// memory, the statistics and the action in progress, with what the model
/// hears about the previous one.
struct LoopState {
    executor: SafetyExecutor,
    watchdog: Watchdog,
    network: NetworkMonitor,
    scheduler: CallScheduler,
    memory: ExplorationMemory,
    stats: EpisodeStats,
    active: Active,
    /// The executed tool call of the action in progress.
    outcome: Option<ExecutionOutcome>,
    /// How the action in progress has moved the robot so far.
    motion: MotionReport,
    prev_action: Option<String>,
    prev_result: Option<String>,
    /// The model called `stop_robot(exploration_complete)`.
    complete: bool,
    /// Since when the loop has been waiting for a decision.
    waiting_since: Option<f64>,
    /// A safety override happened: the next decision is due at once.
    after_override: bool,
}

/// A planner call in progress: when it started and the frontiers its
/// snapshot listed (the ids a `navigate_to_goal` reply refers to).
struct PendingCall {
    started_s: f64,
    frontiers: Vec<FrontierGoal>,
}

impl PendingCall {
    fn new(started_s: f64, snap: &ExploreSnapshot) -> Self {
        Self { started_s, frontiers: snap.frontiers.iter().map(ExploreFrontier::goal).collect() }
    }
}

/// What the current tick knows when a decision arrives.
#[derive(Clone, Copy)]
struct TickView<'a> {
    now: f64,
    pose: Pose2,
    scan: Option<&'a LaserScan>,
    scan_age: f64,
}

/// The explore loop. Build it with [`ExploreLoop::new`] and drive a robot
/// with [`ExploreLoop::run`].
pub struct ExploreLoop {
    config: ExploreLoopConfig,
    decider: Decider,
    planner_name: String,
    signals: ExploreSignals,
}

impl ExploreLoop {
    /// A loop around `planner`. Non-instant planners (VLMs) run on a tokio
    /// task, so this must be called inside a tokio runtime.
    pub fn new(config: ExploreLoopConfig, planner: Box<dyn ExplorePlanner>, signals: ExploreSignals) -> Self {
        let planner_name = planner.name();
        let decider = if planner.is_instant() {
            Decider::Inline(planner)
        } else {
            let (req_tx, mut req_rx) = mpsc::channel::<ExploreSnapshot>(1);
            let (rep_tx, rep_rx) = watch::channel(None);
            let mut planner = planner;
            tokio::spawn(async move {
                while let Some(snap) = req_rx.recv().await {
                    let reply = planner.decide(&snap).await;
                    if rep_tx.send(Some(Arc::new(reply))).is_err() {
                        break;
                    }
                }
            });
            Decider::Task { requests: req_tx, replies: rep_rx }
        };
        Self { config, decider, planner_name, signals }
    }

    /// The planner's name.
    pub fn planner_name(&self) -> &str {
        &self.planner_name
    }

    /// Runs until the planner reports completion, a budget runs out, or
    /// shutdown is signalled. The robot is stopped before returning.
    pub async fn run<R: Robot + ?Sized>(
        &mut self,
        robot: &mut R,
        clock: &dyn Clock,
        log: &mut StepLog,
        observer: &mut Observer<'_, R>,
    ) -> Result<ExploreOutcome, NavError> {
        let result = self.run_inner(robot, clock, log, observer).await;
        // whatever happened, leave the robot stopped
        robot.stop().await.ok();
        result
    }

    #[allow(clippy::too_many_lines)]
    async fn run_inner<R: Robot + ?Sized>(
        &mut self,
        robot: &mut R,
        clock: &dyn Clock,
        log: &mut StepLog,
        observer: &mut Observer<'_, R>,
    ) -> Result<ExploreOutcome, NavError> {
        let mut cfg = self.config.clone();
        let t0 = clock.now_s();
        let caps = robot.capabilities();
        // the robot's own kinematics (differential or Ackermann) bound what the safety layer allows
        cfg.safety.drive = caps.drive;
        let mut watchdog = Watchdog::new(cfg.safety.watchdog.clone());
        // exploration starts now: the tiers count from here, not from the clock's epoch
        watchdog.record_response(t0);
        let mut st = LoopState {
            executor: SafetyExecutor::new(cfg.safety.clone()).map_err(|e| NavError::Config(e.to_string()))?,
            watchdog,
            network: NetworkMonitor::new(cfg.safety.network.clone(), t0),
            scheduler: CallScheduler::new(cfg.safety.schedule.clone()),
            memory: ExplorationMemory::new(0.0),
            stats: EpisodeStats::default(),
            active: Active::Idle,
            outcome: None,
            motion: MotionReport::default(),
            prev_action: None,
            prev_result: None,
            complete: false,
            waiting_since: None,
            after_override: false,
        };
        let guard = ContinuousGuard::new(cfg.safety.clone());
        let mut pursuit = Pursuit::new(caps.drive, &guard);
        let mut arbiter = StopArbiter::default();
        let mut triggers = EventTriggers::new(cfg.safety.triggers.clone());
        let lidar_cfg = LidarConfig::default();
        let start_pose = robot.odometry().await.map(|o| o.pose).unwrap_or_default();
        let mut map =
            LocalMap::new(cfg.map.clone(), start_pose.position()).map_err(|e| NavError::Config(e.to_string()))?;
        let mut in_flight: Option<PendingCall> = None; // the outstanding call
        let mut last_thumb: Option<Thumbnail> = None;
        let mut fallback_goal: Option<Point2> = None;
        let mut collisions = 0u32;
        let mut distance = 0.0;
        let mut last_pose = start_pose;
        let mut last_now = t0;
        // the last drive reported no motion of its own (a real robot): measure it from odometry
        let mut motion_from_odometry = false;
        let mut deadline = tokio::time::Instant::now();
        let mut worst_tier = WatchdogTier::Continue;
        let mut announced_tier = WatchdogTier::Continue;
        let mut tick: u64 = 0;
        let mut last_override_codes: Vec<String> = Vec::new();

        let mut start = StepRecord { action: "start".into(), pose: start_pose.into(), ..StepRecord::default() };
        start.gt_pose = observer.gt_pose(robot).map(Into::into);
        start.info = observer.info.clone();
        start.info.insert("planner".into(), json!(self.planner_name));
        log.write(&start)?;

        let end = loop {
            let now = clock.now_s();
            let elapsed = now - t0;
            if self.signals.shutdown.load(Ordering::SeqCst) {
                break ExploreEnd::Shutdown;
            }
            if elapsed >= cfg.max_time_s {
                break ExploreEnd::TimeLimit;
            }
            if st.complete && cfg.stop_when_complete && matches!(st.active, Active::Idle) {
                break ExploreEnd::Complete;
            }
            let tick_start = Instant::now();
            let mut events: Vec<Value> = Vec::new();
            let mut planner_rec: Option<PlannerRecord> = None;
            st.memory.update_time(elapsed);

            // ---- sense ----
            let odometry = robot.odometry().await;
            let scanned = robot.scan().await;
            let pose = odometry.as_ref().map_or(last_pose, |o| o.pose);
            let speed_mps = odometry.as_ref().map_or(0.0, |o| o.linear);
            let failure = match (&odometry, &scanned) {
                (Err(e), _) | (_, Err(e)) => Some(e.to_string()),
                _ => None,
            };
            let (scan, scan_age) = match (failure, scanned) {
                (None, Ok(s)) => {
                    let age = (now - s.stamp_s).max(0.0);
                    arbiter.update(StopSource::SensorLoss, age > cfg.safety.sensors.max_scan_age_s, "scan is stale");
                    (Some(s.scan), age)
                }
                (e, _) => {
                    // disconnected or stale: treat the robot as stopped; no decision can be made, so the
                    // time counts toward the watchdog tiers (and a decision is due once sensing is back)
                    let e = e.unwrap_or_default();
                    arbiter.request(StopSource::SensorLoss, e.clone());
                    events.push(json!({"event": "sensor_error", "error": e}));
                    st.waiting_since.get_or_insert(now);
                    st.after_override = true;
                    (None, f64::INFINITY)
                }
            };
            let step_m = last_pose.distance(pose);
            distance += step_m;
            if motion_from_odometry {
                st.motion.distance_m += step_m;
                st.motion.duration_s += (now - last_now).max(0.0);
            }
            last_pose = pose;
            last_now = now;
            if let Some(s) = &scan {
                if tick % 2 == 0 {
                    map.integrate(pose, s);
                }
            }
            let paused = self.signals.pause.load(Ordering::SeqCst);

            // ---- decisions: collect a finished call ----
            let finished: Option<PlannerReply<ExploreDecision>> = match &mut self.decider {
                Decider::Task { replies, .. } if in_flight.is_some() => {
                    if replies.has_changed().unwrap_or(false) {
                        replies.borrow_and_update().as_ref().map(|r| (**r).clone())
                    } else {
                        None
                    }
                }
                _ => None,
            };
            if let Some((reply, call)) = finished.zip(in_flight.take()) {
                self.handle_reply(
                    reply,
                    call,
                    &TickView { now, pose, scan: scan.as_ref(), scan_age },
                    &mut st,
                    &mut events,
                    &mut planner_rec,
                );
            }

            // ---- decisions: start a new call ----
            if in_flight.is_none() && !paused && !st.complete && st.stats.planner_calls < cfg.max_decisions {
                if let Some(s) = &scan {
                    let trig = triggers.check(s, pose, now);
                    let idle = matches!(st.active, Active::Idle);
                    let due = idle
                        || !trig.is_empty()
                        || st.after_override
                        || st.scheduler.last_call_s().is_none_or(|t| now - t >= cfg.safety.schedule.base_period_s);
                    if due {
                        let frame = if cfg.use_camera && caps.rgb { robot.rgb().await.ok() } else { None };
                        let thumb = frame.as_ref().map(|f| Thumbnail::from_frame(&f.frame));
                        let similarity = match (&thumb, &last_thumb) {
                            (Some(a), Some(b)) => Some(a.similarity(b)),
                            _ => None,
                        };
                        let nearest = f64::from(LidarSummary::from_scan(s, &lidar_cfg).nearest_m());
                        let decision = if idle {
                            CallDecision::Call { text_only: false, reasons: Vec::new() }
                        } else {
                            st.scheduler.decide(&ScheduleInput {
                                now_s: now,
                                triggers: &trig,
                                similarity,
                                nearest_obstacle_m: nearest,
                                after_override: st.after_override,
                            })
                        };
                        match decision {
                            CallDecision::Call { text_only, reasons } => {
                                if idle {
                                    // keep the scheduler's clock in step with idle-triggered calls
                                    let _ = st.scheduler.decide(&ScheduleInput {
                                        now_s: now,
                                        triggers: &trig,
                                        similarity: None,
                                        nearest_obstacle_m: nearest,
                                        after_override: true,
                                    });
                                }
                                st.after_override = false;
                                triggers.mark_call(pose, now);
                                if thumb.is_some() {
                                    last_thumb = thumb;
                                }
                                let depth = if cfg.use_camera && caps.depth && !text_only {
                                    robot.depth().await.ok()
                                } else {
                                    None
                                };
                                let detections = if caps.detections {
                                    robot.detections().await.unwrap_or_default()
                                } else {
                                    Vec::new()
                                };
                                let frontiers = frontier_list(&map, pose);
                                st.memory.update_frontiers(memory_frontiers(&frontiers, pose));
                                let hfov = frame.as_ref().map_or(std::f64::consts::FRAC_PI_2, |f| f.hfov_rad);
                                let snap = ExploreSnapshot {
                                    pose,
                                    speed_mps,
                                    distance_traveled_m: distance,
                                    elapsed_s: elapsed,
                                    coverage: None,
                                    scan: s.clone(),
                                    scan_age_s: scan_age,
                                    image: frame.map(|f| f.frame),
                                    depth,
                                    hfov_rad: hfov,
                                    previous_action: st.prev_action.clone(),
                                    previous_result: st.prev_result.clone(),
                                    memory_text: st.memory.to_prompt_text(),
                                    frontiers,
                                    detections,
                                    text_only,
                                };
                                events.push(json!({"event": "planner_call", "reasons": reasons}));
                                st.waiting_since.get_or_insert(now);
                                match &mut self.decider {
                                    Decider::Inline(p) => {
                                        let reply = p.decide(&snap).await;
                                        let call = PendingCall::new(now, &snap);
                                        self.handle_reply(
                                            reply,
                                            call,
                                            &TickView { now, pose, scan: scan.as_ref(), scan_age },
                                            &mut st,
                                            &mut events,
                                            &mut planner_rec,
                                        );
                                    }
                                    Decider::Task { requests, .. } => {
                                        let call = PendingCall::new(now, &snap);
                                        if requests.try_send(snap).is_ok() {
                                            in_flight = Some(call);
                                        }
                                    }
                                }
                            }
                            CallDecision::Skip { reason } => {
                                events.push(json!({"event": "call_skipped", "reason": reason}))
                            }
                            CallDecision::Wait => {}
                        }
                    }
                }
            }

            // ---- watchdog: time spent waiting for a decision ----
            if st.waiting_since.is_none() {
                st.watchdog.record_response(now);
            }
            let tier = st.watchdog.tier(now);
            worst_tier = worst_tier.max(tier);
            if tier != announced_tier {
                events.push(json!({"event": "watchdog", "tier": tier.as_str(), "announcement": tier.announcement()}));
                announced_tier = tier;
                if tier == WatchdogTier::Continue {
                    fallback_goal = None;
                }
            }

            // ---- the command for this tick ----
            let mut command = VelocityTarget::STOP;
            if !paused {
                match tier {
                    WatchdogTier::Continue => {
                        let (c, finished) = self.follow_active(
                            &mut st.active,
                            &mut map,
                            pose,
                            now,
                            &mut st.motion,
                            &mut events,
                            (&mut pursuit, scan.as_ref(), &guard),
                        );
                        command = c;
                        if finished {
                            st.finish_active(pose, now);
                        }
                        if st.waiting_since.is_some() {
                            command = st.watchdog.decay(st.watchdog.elapsed(now), &command);
                        }
                    }
                    WatchdogTier::StopWait => {}
                    WatchdogTier::LocalNav => {
                        if fallback_goal.is_none_or(|g| g.distance(pose.position()) < cfg.goal_tolerance_m) {
                            fallback_goal = FrontierPlanner::next_goal(&map, pose);
                            if let Some(g) = fallback_goal {
                                events.push(json!({"event": "local_nav_goal", "x": g.x, "y": g.y}));
                            }
                        }
                        if let Some(g) = fallback_goal {
                            command =
                                pursue(&mut map, pose, g, cfg.path_speed_mps, (&mut pursuit, scan.as_ref(), &guard));
                        }
                    }
                    WatchdogTier::ReturnHome => {
                        if pose.position().distance(start_pose.position()) > cfg.goal_tolerance_m {
                            let follow = (&mut pursuit, scan.as_ref(), &guard);
                            command = pursue(&mut map, pose, start_pose.position(), cfg.path_speed_mps, follow);
                        }
                    }
                }
            }
            let mut guarded = guard.guard_with_zones(
                &command,
                scan.as_ref().unwrap_or(&LaserScan::full_circle(1, 0.05, 1.0, f32::NAN)),
                scan_age,
                pose,
                st.executor.geofence(),
            );
            arbiter.observe_guard(&guarded);
            guarded = arbiter.apply(guarded);
            // log overrides when they change (a slowdown near a wall lasts many ticks)
            let codes: Vec<&str> = guarded.overrides.iter().map(|o| o.code.as_str()).collect();
            if codes != last_override_codes.iter().map(String::as_str).collect::<Vec<_>>() {
                for o in &guarded.overrides {
                    if !last_override_codes.contains(&o.code) {
                        st.stats.safety_overrides += 1;
                        events.push(
                            json!({"event": "safety_override", "kind": o.kind, "code": o.code, "reason": o.reason}),
                        );
                    }
                }
                last_override_codes = codes.iter().map(|c| c.to_string()).collect();
            }
            if guarded.stop().is_some() && (command.linear != 0.0 || command.angular != 0.0) {
                // a safety stop ends the current action; the model hears why
                if let Some(o) = guarded.stop() {
                    st.motion.safety_stop = Some(o.clone());
                }
                st.after_override = true;
                st.finish_active(pose, now);
            }
            let cmd = VelocityCommand { linear: guarded.linear, angular: guarded.angular, duration_s: cfg.tick_s };
            // once shutdown is signalled (its own stop may already be out), publish nothing that moves
            let stopping = paused || self.signals.shutdown.load(Ordering::SeqCst);
            let driven = if stopping || (guarded.linear == 0.0 && guarded.angular == 0.0) {
                robot.drive(VelocityCommand { linear: 0.0, angular: 0.0, duration_s: cfg.tick_s }).await
            } else {
                robot.drive(cmd).await
            };
            match driven {
                Ok(m) => {
                    st.motion.distance_m += m.distance_m;
                    st.motion.duration_s += m.duration_s;
                    motion_from_odometry = m.duration_s <= 0.0;
                    if m.collided {
                        collisions += 1;
                        events.push(json!({"event": "collision"}));
                    }
                }
                Err(e @ (HalError::Disconnected { .. } | HalError::Timeout { .. })) => {
                    motion_from_odometry = true;
                    events.push(json!({"event": "publish_failed", "error": e.to_string()}));
                }
                Err(e) => return Err(e.into()),
            }

            tick += 1;
            st.stats.steps = tick as u32;
            let local_ms = tick_start.elapsed().as_secs_f64() * 1000.0;
            let model_ms = planner_rec.as_ref().map_or(0.0, |p| p.latency_ms);
            st.stats.record_overhead(local_ms - model_ms);
            let record = StepRecord {
                step: tick,
                t_s: clock.now_s() - t0,
                action: planner_rec
                    .as_ref()
                    .and_then(|p| p.parsed.get("tool").and_then(Value::as_str).map(str::to_string))
                    .unwrap_or_else(|| "drive".to_string()),
                pose: pose.into(),
                gt_pose: observer.gt_pose(robot).map(Into::into),
                planner_called: planner_rec.is_some(),
                planner: planner_rec,
                events,
                velocity: Some([guarded.linear, guarded.angular]),
                ..StepRecord::default()
            };
            log.write(&record)?;
            observer.step(robot, tick);

            // ---- pacing ----
            match cfg.pacing {
                Pacing::RealTime => {
                    let period = Duration::from_secs_f64(cfg.tick_s.max(1e-3));
                    deadline += period;
                    let late = tokio::time::Instant::now();
                    if deadline + period < late {
                        // more than a tick behind: skip the missed ticks rather than burst them out
                        deadline = late;
                    }
                    tokio::time::sleep_until(deadline).await;
                }
                Pacing::Simulated { time_scale } => {
                    if in_flight.is_some() {
                        let s = cfg.tick_s / time_scale.max(1e-3);
                        tokio::time::sleep(Duration::from_secs_f64(s)).await;
                    } else {
                        tokio::task::yield_now().await;
                    }
                }
            }
            if tier == WatchdogTier::ReturnHome
                && pose.position().distance(start_pose.position()) <= cfg.goal_tolerance_m
            {
                break ExploreEnd::ReturnedHome;
            }
            if st.stats.planner_calls >= cfg.max_decisions && in_flight.is_none() && matches!(st.active, Active::Idle) {
                break ExploreEnd::DecisionLimit;
            }
        };
        // stop: zero velocity (the HAL repeats it as its stop requires)
        robot.stop().await.ok();
        let _ = st.network.tier(clock.now_s());
        Ok(ExploreOutcome { end, stats: st.stats, memory: st.memory, collisions, worst_tier })
    }

    /// Applies a finished decision: reports → memory, the action → the
    /// safety executor → the active target.
    fn handle_reply(
        &self,
        reply: PlannerReply<ExploreDecision>,
        call: PendingCall,
        tick: &TickView<'_>,
        st: &mut LoopState,
        events: &mut Vec<Value>,
        planner_rec: &mut Option<PlannerRecord>,
    ) {
        let TickView { now, pose, scan, scan_age } = *tick;
        st.stats.add_call(&reply.record);
        let ok = reply.record.fallback.is_none();
        let latency_s = (now - call.started_s).max(reply.record.latency_ms / 1000.0);
        st.network.record_call(now, latency_s, ok);
        st.scheduler.record_latency(now, latency_s);
        *planner_rec = Some(PlannerRecord {
            raw: reply.record.raw.clone(),
            parsed: decision_json(&reply.decision.action),
            fallback: reply.record.fallback.clone(),
            vlm_calls: reply.record.vlm_calls,
            prompt_tokens: reply.record.usage.prompt_tokens,
            completion_tokens: reply.record.usage.completion_tokens,
            latency_ms: reply.record.latency_ms,
        });
        if let Some(reason) = &reply.record.fallback {
            events.push(json!({"event": "fallback", "reason": reason}));
            // a failed call is no response: keep waiting (the watchdog tiers run)
            return;
        }
        st.waiting_since = None;
        st.watchdog.record_response(now);
        let Some(scan) = scan else {
            events.push(json!({"event": "decision_dropped", "reason": "no scan"}));
            return;
        };
        let d = reply.decision;
        for r in &d.reports {
            if let ToolCall::ReportDiscovery { label, notes, significance } = r {
                st.memory.record_discovery(label, notes, *significance, pose.position());
                events.push(json!({"event": "discovery", "label": label, "significance": significance.as_str()}));
            }
        }
        if let Some((p, result)) = &d.perception {
            st.memory.update_after_action(ActionRecord::new(
                p.name(),
                &p.to_json().to_string(),
                result,
                pose.position(),
            ));
        }
        // a new decision replaces the running one
        st.finish_active(pose, now);
        // frontier ids mean the list the model was shown, not today's
        let sensors = SafetySensors::new(scan, now - scan_age, pose, now).with_frontiers(&call.frontiers);
        let exec = st.executor.execute(&d.action, &sensors);
        st.prev_action = Some(format!("{}({})", d.action.name(), d.action.to_json()));
        if exec.feedback.safety_override {
            st.after_override = true;
            events.push(
                json!({"event": "safety_override", "tool": d.action.name(), "message": exec.feedback.safety_message}),
            );
        }
        match &exec.target {
            Target::Velocity(v) => st.active = Active::Velocity { v: *v, started_s: now },
            Target::NavGoal(g) => {
                let goal = Point2::new(g.x, g.y);
                let deadline = now + 15.0 + 3.0 * pose.position().distance(goal) / self.config.path_speed_mps.max(0.01);
                st.active = Active::Goal {
                    goal,
                    deadline_s: deadline,
                    path: Vec::new(),
                    replanned_s: f64::NEG_INFINITY,
                    progress: (pose.position(), now),
                };
            }
            Target::Observe(_) => st.active = Active::Hold { until_s: now + 1.0 },
            Target::Stop(s) => {
                if matches!(
                    d.action,
                    ToolCall::StopRobot { reason: nav_safety::tools::StopReason::ExplorationComplete }
                ) {
                    st.complete = true;
                }
                events.push(json!({"event": "stop", "reason": s.reason}));
                st.active = Active::Idle;
            }
            Target::PathCheck(_) | Target::Report(_) => st.active = Active::Idle,
        }
        st.motion = MotionReport::default();
        st.outcome = Some(exec);
        if matches!(st.active, Active::Idle) {
            // nothing to execute: close the record now
            st.finish_active(pose, now);
        }
    }

    /// The velocity the active target asks for now; finishes targets that
    /// are done.
    #[allow(clippy::too_many_arguments)]
    fn follow_active(
        &self,
        active: &mut Active,
        map: &mut LocalMap,
        pose: Pose2,
        now: f64,
        motion: &mut MotionReport,
        events: &mut Vec<Value>,
        (pursuit, scan, guard): Follow<'_>,
    ) -> (VelocityTarget, bool) {
        let tol = self.config.goal_tolerance_m;
        let speed = self.config.path_speed_mps;
        let done = match active {
            Active::Idle => return (VelocityTarget::STOP, false),
            Active::Velocity { v, started_s } => {
                if now - *started_s >= v.duration_s {
                    true
                } else {
                    return (*v, false);
                }
            }
            Active::Hold { until_s } => {
                if now >= *until_s {
                    true
                } else {
                    return (VelocityTarget::STOP, false);
                }
            }
            Active::Goal { goal, deadline_s, path, replanned_s, progress } => {
                if pose.position().distance(progress.0) > 0.1 {
                    *progress = (pose.position(), now);
                }
                if pose.position().distance(*goal) <= tol {
                    true
                } else if now - progress.1 > 4.0 {
                    motion.interrupted = Some("no_progress".into());
                    events.push(json!({"event": "goal_no_progress"}));
                    true
                } else if now > *deadline_s {
                    motion.interrupted = Some("navigation_timeout".into());
                    events.push(json!({"event": "goal_timeout"}));
                    true
                } else {
                    if now - *replanned_s >= 1.0 || path.is_empty() {
                        *replanned_s = now;
                        let costs = map.costmap();
                        let r = map.plan(&costs, pose.position(), *goal);
                        *path = r.cells.iter().map(|c| costs.grid_to_world(*c)).collect();
                        if !r.success {
                            motion.interrupted = Some("goal_unreachable".into());
                            events.push(json!({"event": "goal_unreachable"}));
                        }
                    }
                    if path.is_empty() {
                        true
                    } else {
                        return (pursuit.follow(path, pose, speed, scan, guard), false);
                    }
                }
            }
        };
        (VelocityTarget::STOP, done)
    }
}

/// Closes the active target: completes the executor's feedback with what
/// the motion achieved and records the action in the exploration memory.
#[allow(clippy::too_many_arguments)]
impl LoopState {
    /// Closes the action in progress: the executor's feedback becomes the
    /// previous result the model hears and an entry of the exploration
    /// memory's recent actions.
    fn finish_active(&mut self, pose: Pose2, now: f64) {
        self.active = Active::Idle;
        let Some(mut out) = self.outcome.take() else { return };
        self.motion.final_pose = Some(pose);
        self.executor.finish(&mut out, &self.motion, now);
        let text = out.result_text();
        let summary = if out.feedback.safety_override {
            format!("safety_override: {}", out.feedback.stopped_reason.clone().unwrap_or_default())
        } else if out.feedback.success {
            format!("success, +{:.2}m", out.feedback.actual_distance_m.unwrap_or(0.0))
        } else {
            format!("failed: {}", out.feedback.stopped_reason.clone().unwrap_or_default())
        };
        self.memory.update_after_action(ActionRecord::new(
            out.call.name(),
            &out.call.to_json().to_string(),
            &summary,
            pose.position(),
        ));
        self.prev_result = Some(text);
        self.motion = MotionReport::default();
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

/// The same frontiers as exploration-memory entries (bearing and distance
/// from `pose`), so the memory section and the frontier list agree.
pub(crate) fn memory_frontiers(frontiers: &[ExploreFrontier], pose: Pose2) -> impl Iterator<Item = Frontier> + '_ {
    frontiers.iter().map(move |f| Frontier {
        id: f.id,
        direction_deg: pose.relative_bearing(f.position).to_degrees(),
        distance_m: pose.position().distance(f.position),
        kind: "frontier".into(),
        width_m: None,
    })
}

/// The path follower with what it needs this tick: the newest scan (for
/// the gear of an Ackermann turn) and the guard (for its clearances).
type Follow<'a> = (&'a mut Pursuit, Option<&'a LaserScan>, &'a ContinuousGuard);

/// A velocity toward `goal` along a fresh A* path (used by the fallbacks).
fn pursue(
    map: &mut LocalMap,
    pose: Pose2,
    goal: Point2,
    speed: f64,
    (pursuit, scan, guard): Follow<'_>,
) -> VelocityTarget {
    let costs = map.costmap();
    let r = map.plan(&costs, pose.position(), goal);
    if !r.success {
        return VelocityTarget::STOP;
    }
    let path: Vec<Point2> = r.cells.iter().map(|c| costs.grid_to_world(*c)).collect();
    pursuit.follow(&path, pose, speed, scan, guard)
}
