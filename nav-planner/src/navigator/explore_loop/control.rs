//! The control task's side of a tick: the watchdog tier, the command it
//! calls for (the active target, the frontier fallback, the way home), the
//! safety layer's tick (decay, guard, stop arbiter), and the one velocity
//! published.

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
use nav_safety::{GuardedVelocity, SafetyLayer, VelocityTarget, WatchdogTier};
use serde_json::{Value, json};

/// What the control task keeps between ticks.
pub(super) struct Control {
    pursuit: Pursuit,
    /// The LOCAL_NAV tier's frontier goal.
    fallback_goal: Option<Point2>,
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
    /// The control side for a robot with this steering, guarded by
    /// `safety`.
    pub(super) fn new(safety: &SafetyLayer, drive: DriveKind) -> Self {
        Self { pursuit: Pursuit::new(drive, safety.guard()), fallback_goal: None, collisions: 0 }
    }

    /// The safety layer's watchdog tier (the time spent waiting for a
    /// decision, the network's health); a new tier is announced in the
    /// log, and CONTINUE forgets the fallback goal.
    pub(super) fn tier(&mut self, st: &mut LoopState, now: f64, events: &mut Vec<Value>) -> WatchdogTier {
        let update = st.safety.tier(now);
        let tier = update.tier;
        if update.changed {
            events.push(json!({"event": "watchdog", "tier": tier.as_str(), "announcement": tier.announcement()}));
            if tier == WatchdogTier::Continue {
                self.fallback_goal = None;
            }
        }
        tier
    }

    fn steering<'a>(&'a mut self, t: &'a ControlTick<'_>, safety: &'a SafetyLayer) -> Steering<'a> {
        Steering {
            pursuit: &mut self.pursuit,
            scan: t.sensed.scan.as_ref().map(|s| &s.scan),
            guard: safety.guard(),
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
                    Some(g) => self.steering(t, &st.safety).pursue(map, pose, g),
                    None => VelocityTarget::STOP,
                }
            }
            WatchdogTier::ReturnHome => {
                if pose.position().distance(t.home) > t.cfg.goal_tolerance_m {
                    self.steering(t, &st.safety).pursue(map, pose, t.home)
                } else {
                    VelocityTarget::STOP
                }
            }
        }
    }

    /// CONTINUE: follow the active target, closing it when it is done (the
    /// safety layer decays it while a decision is awaited).
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
        let mut steering = self.steering(t, &st.safety);
        match st.active.follow(&mut tick, &mut steering) {
            Following::Command(c) => c,
            Following::Finished => {
                st.finish_active(pose, now);
                VelocityTarget::STOP
            }
        }
    }

    /// The command made safe by the safety layer's tick (decay, guard with
    /// the geofence, stop arbiter). New overrides are logged; a safety stop
    /// of a moving command ends the action in progress (the model hears
    /// why), and the next decision is due at once.
    pub(super) fn guard(
        &mut self,
        command: &VelocityTarget,
        t: &ControlTick<'_>,
        st: &mut LoopState,
        events: &mut Vec<Value>,
    ) -> GuardedVelocity {
        let sensed = t.sensed;
        let out = st.safety.tick(command, sensed.scan.as_ref(), sensed.pose, t.now);
        for o in &out.new_overrides {
            events.push(json!({"event": "safety_override", "kind": o.kind, "code": o.code, "reason": o.reason}));
        }
        if let Some(o) = out.stopped_motion {
            st.motion.safety_stop = Some(o);
            st.finish_active(sensed.pose, t.now);
        }
        out.velocity
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
