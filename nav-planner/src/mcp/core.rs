//! The robot behind the server: its safety layer, maps and memory, the
//! action in progress, and the 20 Hz control tick that is the only
//! velocity publisher (the same recipe as the explore loop's control task).

use super::McpConfig;
use super::context::ContextMemory;
use crate::navigator::explore_loop::active::{Active, FollowTick, Following, GoalRun, Steering};
use crate::navigator::explore_loop::{frontier_list, memory_frontiers};
use crate::navigator::pursuit::Pursuit;
use nav_core::geometry::{Point2, Pose2};
use nav_core::lidar::StampedScan;
use nav_core::local_map::LocalMap;
use nav_core::time::Clock;
use nav_hal::HalError;
use nav_hal::hal::{Robot, VelocityCommand};
use nav_memory::{ActionRecord, ExplorationMemory};
use nav_safety::executor::{ExecutionOutcome, MotionReport, Target};
use nav_safety::{GuardedVelocity, SafetyLayer, SafetySensors, ToolCall, VelocityTarget, WatchdogTier};
use std::sync::Arc;

/// At most this many points of the travelled path are kept (older ones
/// are thinned out, so a server that runs for days stays bounded).
const MAX_PATH_POINTS: usize = 4096;

/// What a tool call did: the text the client gets back, and whether it is
/// an error (the safety layer refused it).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReply {
    /// The tool result's text.
    pub text: String,
    /// The feedback record (or path check) as JSON.
    pub json: serde_json::Value,
    /// The safety layer refused the call (`isError` in the result).
    pub refused: bool,
}

/// The robot with its safety layer. See the [module docs](self).
pub(crate) struct RobotCore {
    pub(crate) robot: Box<dyn Robot>,
    clock: Arc<dyn Clock>,
    cfg: McpConfig,
    pub(crate) safety: SafetyLayer,
    pub(crate) memory: ExplorationMemory,
    pub(crate) map: LocalMap,
    pursuit: Pursuit,
    pub(crate) active: Active,
    /// The executed call of the action in progress.
    pub(crate) outcome: Option<ExecutionOutcome>,
    motion: MotionReport,
    /// The last finished action and its result, for the next tool result.
    pub(crate) previous: Option<String>,
    pub(crate) t0: f64,
    pub(crate) pose: Pose2,
    pub(crate) speed_mps: f64,
    pub(crate) angular_rps: f64,
    pub(crate) scan: Option<StampedScan>,
    pub(crate) sensing_failure: Option<String>,
    pub(crate) path: Vec<Point2>,
    pub(crate) collisions: u32,
    pub(crate) ticks: u64,
    pub(crate) tier: WatchdogTier,
    pub(crate) last_guarded: Option<GuardedVelocity>,
    /// When the last motion tool call came, robot time.
    pub(crate) last_motion_call_s: Option<f64>,
    /// Distance travelled since the start, m.
    pub(crate) distance_m: f64,
    /// When odometry was last read, robot time.
    last_sense_s: f64,
    /// The Navigation Context's memory (none if it could not be set up).
    context: Option<ContextMemory>,
}

impl RobotCore {
    /// The core for `robot` at `clock`'s time: the safety layer for its
    /// steering, the local map around its start pose.
    pub(crate) async fn new(
        mut robot: Box<dyn Robot>,
        clock: Arc<dyn Clock>,
        mut cfg: McpConfig,
    ) -> Result<Self, super::McpError> {
        let caps = robot.capabilities();
        if !caps.velocity || !caps.lidar {
            return Err(super::McpError::Robot(
                "the robot must take velocity commands and have a LiDAR (the safety layer's guard needs it)".into(),
            ));
        }
        cfg.safety.drive = caps.drive;
        let t0 = clock.now_s();
        let safety = SafetyLayer::new(cfg.safety.clone(), t0).map_err(|e| super::McpError::Config(e.to_string()))?;
        let start = robot.odometry().await.map(|o| o.pose).map_err(|e| super::McpError::Robot(e.to_string()))?;
        let map =
            LocalMap::new(cfg.map.clone(), start.position()).map_err(|e| super::McpError::Config(e.to_string()))?;
        let pursuit = Pursuit::new(caps.drive, safety.guard());
        Ok(Self {
            robot,
            clock,
            cfg,
            safety,
            memory: ExplorationMemory::new(0.0),
            map,
            pursuit,
            active: Active::Idle,
            outcome: None,
            motion: MotionReport::default(),
            previous: None,
            t0,
            pose: start,
            speed_mps: 0.0,
            angular_rps: 0.0,
            scan: None,
            sensing_failure: None,
            path: vec![start.position()],
            collisions: 0,
            ticks: 0,
            tier: WatchdogTier::Continue,
            last_guarded: None,
            last_motion_call_s: None,
            distance_m: 0.0,
            last_sense_s: t0,
            context: ContextMemory::new(start),
        })
    }

    /// The robot's time now, s.
    pub(crate) fn now(&self) -> f64 {
        self.clock.now_s()
    }

    /// The server's settings.
    pub(crate) fn config(&self) -> &McpConfig {
        &self.cfg
    }

    /// Reads odometry and the scan; a failure holds the robot (the safety
    /// layer's sensing check).
    async fn sense(&mut self, now: f64) {
        let odometry = self.robot.odometry().await;
        let scanned = self.robot.scan().await;
        let failure = match (&odometry, &scanned) {
            (Err(e), _) | (_, Err(e)) => Some(e.to_string()),
            _ => None,
        };
        if let Ok(o) = &odometry {
            let step = self.pose.distance(o.pose);
            let dt = now - self.last_sense_s;
            // a robot whose odometry carries no velocity (the simulator's) has it measured
            let (measured_v, measured_w) = if dt > 1e-6 {
                let ahead =
                    (o.pose.x - self.pose.x) * self.pose.yaw.cos() + (o.pose.y - self.pose.y) * self.pose.yaw.sin();
                (step.copysign(ahead) / dt, nav_core::geometry::normalize_angle(o.pose.yaw - self.pose.yaw) / dt)
            } else {
                (0.0, 0.0)
            };
            self.distance_m += step;
            self.pose = o.pose;
            self.speed_mps = if o.linear != 0.0 { o.linear } else { measured_v };
            self.angular_rps = if o.angular != 0.0 { o.angular } else { measured_w };
            self.last_sense_s = now;
            self.note_path();
            if let Some(c) = self.context.as_mut() {
                c.follow(o.pose);
            }
        }
        self.safety.sensing(failure.clone(), now);
        self.sensing_failure = failure;
        self.scan = if self.sensing_failure.is_none() { scanned.ok() } else { None };
        if let Some(s) = &self.scan {
            if self.ticks.is_multiple_of(2) {
                self.map.integrate(self.pose, &s.scan);
            }
        }
    }

    /// Adds the pose to the travelled path (every 5 cm), thinning it when
    /// it grows past its bound.
    fn note_path(&mut self) {
        let p = self.pose.position();
        if self.path.last().is_none_or(|q| q.distance(p) >= 0.05) {
            self.path.push(p);
            if self.path.len() > MAX_PATH_POINTS {
                let thinned: Vec<Point2> = self.path.iter().step_by(2).copied().collect();
                self.path = thinned;
            }
        }
    }

    /// One control tick: sense, the watchdog tier, the command (the action
    /// in progress in CONTINUE, zero in every other tier: over MCP the
    /// robot never drives on its own), the safety layer's tick (decay,
    /// guard, stop arbiter) and the one velocity published.
    ///
    /// # Errors
    ///
    /// The robot failed other than by a lost link (which holds it).
    pub(crate) async fn tick(&mut self) -> Result<(), HalError> {
        let now = self.now();
        self.sense(now).await;
        self.memory.update_time(now - self.t0);
        self.tier = self.safety.tier(now).tier;
        let command = match self.tier {
            WatchdogTier::Continue => self.follow(now),
            _ => VelocityTarget::STOP,
        };
        let out = self.safety.tick(&command, self.scan.as_ref(), self.pose, now);
        for o in &out.new_overrides {
            tracing::info!(code = %o.code, "safety override: {}", o.reason);
        }
        if let Some(o) = out.stopped_motion {
            self.motion.safety_stop = Some(o);
            self.finish_active();
        }
        let v = out.velocity;
        let cmd = VelocityCommand { linear: v.linear, angular: v.angular, duration_s: self.cfg.tick_s };
        self.last_guarded = Some(v);
        self.ticks += 1;
        match self.robot.drive(cmd).await {
            Ok(m) => {
                self.motion.distance_m += m.distance_m;
                self.motion.duration_s += if m.duration_s > 0.0 { m.duration_s } else { self.cfg.tick_s };
                if m.collided {
                    self.collisions += 1;
                    tracing::warn!("collision reported by the robot");
                }
                Ok(())
            }
            Err(HalError::Disconnected { .. } | HalError::Timeout { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// CONTINUE: the velocity the action in progress asks for, closing it
    /// when it is done.
    fn follow(&mut self, now: f64) -> VelocityTarget {
        let mut events = Vec::new();
        let mut tick = FollowTick {
            map: &mut self.map,
            pose: self.pose,
            now,
            tolerance_m: self.cfg.goal_tolerance_m,
            motion: &mut self.motion,
            events: &mut events,
        };
        let mut steering = Steering {
            pursuit: &mut self.pursuit,
            scan: self.scan.as_ref().map(|s| &s.scan),
            guard: self.safety.guard(),
            speed: self.cfg.path_speed_mps,
        };
        let following = self.active.follow(&mut tick, &mut steering);
        for e in events {
            tracing::info!(event = %e, "navigation goal");
        }
        match following {
            Following::Command(c) => c,
            Following::Finished => {
                self.finish_active();
                VelocityTarget::STOP
            }
        }
    }

    /// Closes the action in progress: its feedback completed, the memory's
    /// recent actions and dead ends updated, its result kept for the next
    /// tool result.
    pub(crate) fn finish_active(&mut self) {
        self.active = Active::Idle;
        let Some(mut out) = self.outcome.take() else { return };
        let now = self.now();
        self.motion.final_pose = Some(self.pose);
        self.safety.finish(&mut out, &self.motion, now);
        let summary = out.feedback.memory_summary();
        let p = self.pose.position();
        self.memory.update_after_action(ActionRecord::new(out.call.name(), &out.call.args_text(), &summary, p));
        if out.feedback.safety_override && !out.feedback.success {
            if let ToolCall::MoveToward { direction, .. } = &out.call {
                let deg = nav_core::geometry::compass_deg((self.pose.yaw + direction.arc().0).to_degrees());
                self.memory.record_dead_end(deg, "blocked", p);
            }
        }
        self.previous = Some(format!("{} → {}", out.call.summary(), out.result_line()));
        self.motion = MotionReport::default();
    }

    /// Executes one tool call through the safety layer at robot time: a
    /// motion call replaces the action in progress (its result closes
    /// first) and restarts the watchdog's count; `stop_robot` stops at once;
    /// the others leave the motion alone.
    pub(crate) async fn call(&mut self, call: &ToolCall) -> ToolReply {
        let now = self.now();
        let moves =
            matches!(call, ToolCall::MoveToward { .. } | ToolCall::Rotate { .. } | ToolCall::NavigateToGoal { .. });
        let stop = matches!(call, ToolCall::StopRobot { .. });
        if moves || stop {
            // the client answered: a response for the watchdog and the network monitor
            self.safety.call_finished(now, 0.0, true);
            self.last_motion_call_s = Some(now);
            self.finish_active();
        }
        let Some(scan) = self.scan.clone() else {
            let why = self.sensing_failure.clone().unwrap_or_else(|| "no LiDAR scan yet".into());
            if stop {
                self.robot.stop().await.ok();
                return self.reply_text(format!("Stopped. (Sensing: {why}.)"), false);
            }
            if moves {
                self.safety.call_started(self.pose, now);
            }
            return self.reply_text(format!("Refused: the robot cannot sense ({why}); it is held still."), moves);
        };
        // frontier ids mean the list the exploration memory shows now (computed for navigation only:
        // it plans over the whole map)
        let navigate = matches!(call, ToolCall::NavigateToGoal { .. });
        let listed = if navigate { frontier_list(&self.map, self.pose) } else { Vec::new() };
        let frontiers: Vec<_> = listed.iter().map(|f| f.goal()).collect();
        // `retrace`: back to where the path was a metre or more from here
        let retrace = self.path.iter().rev().find(|p| p.distance(self.pose.position()) > 1.0).copied();
        let mut sensors = SafetySensors::from_stamped(&scan, self.pose, now).with_frontiers(&frontiers);
        if let Some(r) = retrace {
            sensors = sensors.with_retrace_goal(r);
        }
        let exec = self.safety.execute(call, &sensors);
        let reply = self.reply(&exec);
        if call.is_perception() {
            let line = exec.result_line();
            let at = self.pose.position();
            self.memory.update_after_action(ActionRecord::new(call.name(), &call.args_text(), &line, at));
        }
        match exec.target.clone() {
            Target::Velocity(v) => self.start(Active::Velocity { v, started_s: now }, exec),
            Target::NavGoal(g) => {
                let goal = GoalRun::new(Point2::new(g.x, g.y), self.pose, now, self.cfg.path_speed_mps);
                self.start(Active::Goal(goal), exec);
            }
            Target::Stop(_) => {
                if stop {
                    self.robot.stop().await.ok();
                }
                self.start(Active::Idle, exec);
            }
            Target::Report(r) => {
                self.memory.record_discovery(&r.label, &r.notes, r.significance, r.position);
                if r.significance == nav_core::discovery::Significance::Room {
                    if let Some(c) = self.context.as_mut() {
                        c.report_room(&r.label);
                    }
                }
            }
            // perception leaves the motion in progress alone
            Target::Observe(_) | Target::PathCheck(_) => {}
        }
        if moves {
            // from now on the robot waits for the client's next motion call: the watchdog counts
            self.safety.call_started(self.pose, now);
        }
        if navigate {
            self.memory.update_frontiers(memory_frontiers(&listed, self.pose));
        }
        reply
    }

    /// The exploration memory as the explore model reads it, with the
    /// frontiers of the map as it is now (the ids `navigate_to_goal` takes).
    pub(crate) fn memory_text(&mut self) -> String {
        let listed = frontier_list(&self.map, self.pose);
        self.memory.update_frontiers(memory_frontiers(&listed, self.pose));
        self.memory.prompt_text(nav_memory::PromptParts::default())
    }

    /// Makes an executed call the action in progress (closing it at once
    /// when there is nothing to drive).
    fn start(&mut self, active: Active, exec: ExecutionOutcome) {
        self.active = active;
        self.motion = MotionReport::default();
        self.outcome = Some(exec);
        if self.active.is_idle() {
            self.finish_active();
        }
    }

    /// The tool result of an executed call: the result line, the previous
    /// action's result, the feedback record.
    fn reply(&self, exec: &ExecutionOutcome) -> ToolReply {
        let mut text = format!("{}: {}", exec.call.summary(), exec.result_line());
        if let Some(p) = &self.previous {
            text.push_str(&format!("\nprevious action: {p}"));
        }
        text.push_str(&format!("\nresult: {}", exec.result_text()));
        ToolReply { text, json: exec.result_json(), refused: exec.is_refused() }
    }

    fn reply_text(&self, text: String, refused: bool) -> ToolReply {
        ToolReply { json: serde_json::json!({"success": !refused, "message": text}), text, refused }
    }

    /// The Navigation Context as text.
    pub(crate) fn navigation_context(&self) -> String {
        self.context.as_ref().map_or_else(|| "NAVIGATION CONTEXT: unavailable".to_owned(), ContextMemory::text)
    }

    /// Stops at once (zero velocity now, nothing in progress), naming why.
    pub(crate) async fn halt(&mut self, why: &str) {
        self.finish_active();
        tracing::info!("robot stopped: {why}");
        self.robot.stop().await.ok();
    }
}
