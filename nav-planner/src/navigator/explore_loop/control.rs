//! The control task's side of a tick: the watchdog tier, the command it
//! calls for (the active target, the frontier fallback, the way home), the
//! continuous guard and the stop arbiter, and the one velocity published.

use super::ExploreLoopConfig;
use super::active::{FollowTick, Following, Steering};
use super::sense::{Odometer, Sensed};
use super::state::LoopState;
use crate::navigator::NavError;
use crate::navigator::pursuit::Pursuit;
use crate::offline::FrontierPlanner;
use nav_core::drive::DriveKind;
use nav_core::geometry::Point2;
use nav_core::local_map::LocalMap;
use nav_hal::HalError;
use nav_hal::hal::{Robot, VelocityCommand};
use nav_safety::{
    ContinuousGuard, GuardedVelocity, Override, OverrideKind, SafetyConfig, StopArbiter, VelocityTarget, WatchdogTier,
};
use serde_json::{Value, json};

/// What the control task keeps between ticks.
pub(super) struct Control {
    guard: ContinuousGuard,
    pursuit: Pursuit,
    /// Holds zero velocity while any stop source asks for it.
    pub(super) arbiter: StopArbiter,
    /// The LOCAL_NAV tier's frontier goal.
    fallback_goal: Option<Point2>,
    /// The tier last written to the log.
    announced_tier: WatchdogTier,
    /// The highest tier reached.
    pub(super) worst_tier: WatchdogTier,
    /// The guard's override codes of the previous tick.
    last_override_codes: Vec<String>,
    /// Collisions the robot reported.
    pub(super) collisions: u32,
}

/// What a tick's command is made from.
pub(super) struct ControlTick<'a> {
    pub(super) cfg: &'a ExploreLoopConfig,
    pub(super) now: f64,
    pub(super) sensed: &'a Sensed,
    /// Where the run started (RETURN_HOME's goal).
    pub(super) home: Point2,
    /// The pause signal as read this tick.
    pub(super) paused: bool,
}

impl Control {
    /// The control side for a robot with this steering.
    pub(super) fn new(safety: &SafetyConfig, drive: DriveKind) -> Self {
        let guard = ContinuousGuard::new(safety.clone());
        let pursuit = Pursuit::new(drive, &guard);
        Self {
            guard,
            pursuit,
            arbiter: StopArbiter::default(),
            fallback_goal: None,
            announced_tier: WatchdogTier::Continue,
            worst_tier: WatchdogTier::Continue,
            last_override_codes: Vec::new(),
            collisions: 0,
        }
    }

    /// The watchdog tier for the time spent waiting for a decision; a new
    /// tier is announced in the log, and CONTINUE forgets the fallback goal.
    pub(super) fn tier(&mut self, st: &mut LoopState, now: f64, events: &mut Vec<Value>) -> WatchdogTier {
        if st.waiting_since.is_none() {
            st.watchdog.record_response(now);
        }
        let tier = st.watchdog.tier(now);
        self.worst_tier = self.worst_tier.max(tier);
        if tier != self.announced_tier {
            events.push(json!({"event": "watchdog", "tier": tier.as_str(), "announcement": tier.announcement()}));
            self.announced_tier = tier;
            if tier == WatchdogTier::Continue {
                self.fallback_goal = None;
            }
        }
        tier
    }

    fn steering<'a>(&'a mut self, t: &'a ControlTick<'_>) -> Steering<'a> {
        Steering {
            pursuit: &mut self.pursuit,
            scan: t.sensed.scan.as_ref(),
            guard: &self.guard,
            speed: t.cfg.path_speed_mps,
        }
    }

    /// The command `tier` calls for (zero while paused).
    pub(super) fn command(
        &mut self,
        tier: WatchdogTier,
        t: &ControlTick<'_>,
        st: &mut LoopState,
        map: &mut LocalMap,
        events: &mut Vec<Value>,
    ) -> VelocityTarget {
        if t.paused {
            return VelocityTarget::STOP;
        }
        let pose = t.sensed.pose;
        match tier {
            WatchdogTier::Continue => self.continue_active(t, st, map, events),
            WatchdogTier::StopWait => VelocityTarget::STOP,
            WatchdogTier::LocalNav => {
                if self.fallback_goal.is_none_or(|g| g.distance(pose.position()) < t.cfg.goal_tolerance_m) {
                    self.fallback_goal = FrontierPlanner::next_goal(map, pose);
                    if let Some(g) = self.fallback_goal {
                        events.push(json!({"event": "local_nav_goal", "x": g.x, "y": g.y}));
                    }
                }
                match self.fallback_goal {
                    Some(g) => self.steering(t).pursue(map, pose, g),
                    None => VelocityTarget::STOP,
                }
            }
            WatchdogTier::ReturnHome => {
                if pose.position().distance(t.home) > t.cfg.goal_tolerance_m {
                    self.steering(t).pursue(map, pose, t.home)
                } else {
                    VelocityTarget::STOP
                }
            }
        }
    }

    /// CONTINUE: follow the active target (closing it when it is done),
    /// decayed while a decision is awaited.
    fn continue_active(
        &mut self,
        t: &ControlTick<'_>,
        st: &mut LoopState,
        map: &mut LocalMap,
        events: &mut Vec<Value>,
    ) -> VelocityTarget {
        let (pose, now) = (t.sensed.pose, t.now);
        if st.active.handed_over() {
            // the robot's own stack drives: the guard judges the motion odometry reports
            let s = t.sensed;
            return VelocityTarget { linear: s.speed_mps, angular: s.angular_rps, duration_s: t.cfg.tick_s };
        }
        let mut tick =
            FollowTick { map, pose, now, tolerance_m: t.cfg.goal_tolerance_m, motion: &mut st.motion, events };
        let command = match st.active.follow(&mut tick, &mut self.steering(t)) {
            Following::Command(c) => c,
            Following::Finished => {
                st.finish_active(pose, now);
                VelocityTarget::STOP
            }
        };
        if st.waiting_since.is_some() { st.watchdog.decay(st.watchdog.elapsed(now), &command) } else { command }
    }

    /// The command made safe: the continuous guard (clearances, TTC,
    /// geofence) and the stop arbiter. New overrides are logged; a safety
    /// stop of a moving command ends the action in progress, and the next
    /// decision is due at once.
    pub(super) fn guard(
        &mut self,
        command: &VelocityTarget,
        t: &ControlTick<'_>,
        st: &mut LoopState,
        events: &mut Vec<Value>,
    ) -> GuardedVelocity {
        let sensed = t.sensed;
        let mut guarded = match (&sensed.scan, &sensed.failure) {
            (Some(scan), _) => {
                self.guard.guard_with_zones(command, scan, sensed.scan_age, sensed.pose, st.executor.geofence())
            }
            (None, failure) => sensing_failed(command, failure.as_deref()),
        };
        self.arbiter.observe_guard(&guarded);
        guarded = self.arbiter.apply(guarded);
        self.log_overrides(&guarded, st, events);
        if guarded.stop().is_some() && (command.linear != 0.0 || command.angular != 0.0) {
            // a safety stop ends the current action; the model hears why
            if let Some(o) = guarded.stop() {
                st.motion.safety_stop = Some(o.clone());
            }
            st.after_override = true;
            st.finish_active(sensed.pose, t.now);
        }
        guarded
    }

    /// Logs overrides when they change (a slowdown near a wall lasts many
    /// ticks), counting each new one.
    fn log_overrides(&mut self, guarded: &GuardedVelocity, st: &mut LoopState, events: &mut Vec<Value>) {
        let codes: Vec<&str> = guarded.overrides.iter().map(|o| o.code.as_str()).collect();
        if codes == self.last_override_codes.iter().map(String::as_str).collect::<Vec<_>>() {
            return;
        }
        for o in &guarded.overrides {
            if !self.last_override_codes.contains(&o.code) {
                st.stats.safety_overrides += 1;
                events.push(json!({"event": "safety_override", "kind": o.kind, "code": o.code, "reason": o.reason}));
            }
        }
        self.last_override_codes = codes.iter().map(|c| c.to_string()).collect();
    }

    /// Publishes the tick's one velocity command and books the motion the
    /// robot reports. A lost link is logged and counted as no motion of
    /// its own (odometry measures it).
    ///
    /// # Errors
    ///
    /// Any other robot failure.
    pub(super) async fn publish<R: Robot + ?Sized>(
        &mut self,
        robot: &mut R,
        command: VelocityCommand,
        st: &mut LoopState,
        odo: &mut Odometer,
        events: &mut Vec<Value>,
    ) -> Result<(), NavError> {
        match robot.drive(command).await {
            Ok(m) => {
                st.motion.distance_m += m.distance_m;
                st.motion.duration_s += m.duration_s;
                odo.motion_from_odometry = m.duration_s <= 0.0;
                if m.collided {
                    self.collisions += 1;
                    events.push(json!({"event": "collision"}));
                }
            }
            Err(e @ (HalError::Disconnected { .. } | HalError::Timeout { .. })) => {
                odo.motion_from_odometry = true;
                events.push(json!({"event": "publish_failed", "error": e.to_string()}));
            }
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }
}

/// Zero velocity while sensing fails, with the failure (naming its
/// source) as a sensor-loss override, also for a zero command, so the stop
/// is logged and counted once per failure.
fn sensing_failed(command: &VelocityTarget, failure: Option<&str>) -> GuardedVelocity {
    let why = failure.unwrap_or("no LiDAR scan");
    GuardedVelocity {
        linear: 0.0,
        angular: 0.0,
        overrides: vec![Override {
            kind: OverrideKind::SensorLoss,
            from: if command.linear.is_finite() { command.linear } else { 0.0 },
            to: 0.0,
            code: "sensor_loss".into(),
            reason: format!("Movement stopped: {why}."),
        }],
        clearance_m: None,
        ttc_s: None,
    }
}

/// The velocity command a tick publishes: the guarded velocity for
/// `tick_s`, or zero when `stopping` (paused, or shut down: once shutdown
/// is signalled, and its own stop may already be out, nothing that moves
/// goes out).
pub(super) fn velocity_command(guarded: &GuardedVelocity, stopping: bool, tick_s: f64) -> VelocityCommand {
    if stopping || (guarded.linear == 0.0 && guarded.angular == 0.0) {
        VelocityCommand { linear: 0.0, angular: 0.0, duration_s: tick_s }
    } else {
        VelocityCommand { linear: guarded.linear, angular: guarded.angular, duration_s: tick_s }
    }
}
