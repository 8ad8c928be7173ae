//! Sensing at the start of a tick: odometry and the scan, a lost link
//! treated as a stopped robot, and the motion of a robot whose `drive`
//! reports none measured from odometry.

use super::state::{LoopState, TickLog, TickView};
use nav_core::geometry::Pose2;
use nav_core::lidar::LaserScan;
use nav_hal::hal::Robot;
use nav_safety::{SafetyConfig, StopArbiter, StopSource};
use serde_json::json;

/// What this tick sensed.
pub(super) struct Sensed {
    pub(super) pose: Pose2,
    pub(super) speed_mps: f64,
    /// Yaw rate from odometry, rad/s.
    pub(super) angular_rps: f64,
    /// The scan, or `None` while sensing fails.
    pub(super) scan: Option<LaserScan>,
    /// Age of the scan, s (infinite without one).
    pub(super) scan_age: f64,
    /// Why sensing failed this tick (the source named: a stale topic, a
    /// LiDAR sensor fault, the lost link), if it did.
    pub(super) failure: Option<String>,
}

impl Sensed {
    /// The view a reply is applied with, at loop time `now`.
    pub(super) fn view(&self, now: f64) -> TickView<'_> {
        TickView { now, pose: self.pose, scan: self.scan.as_ref(), scan_age: self.scan_age }
    }
}

/// The robot's motion between ticks, from odometry.
pub(super) struct Odometer {
    last_pose: Pose2,
    last_now: f64,
    /// Distance travelled since the start, m.
    pub(super) distance: f64,
    /// The last drive reported no motion of its own (a real robot): measure
    /// it from odometry.
    pub(super) motion_from_odometry: bool,
}

impl Odometer {
    /// An odometer at `start` at loop time `t0`.
    pub(super) fn new(start: Pose2, t0: f64) -> Self {
        Self { last_pose: start, last_now: t0, distance: 0.0, motion_from_odometry: false }
    }

    /// Reads odometry and the scan at loop time `now`. A failure of either
    /// (stale, a LiDAR sensor fault, the link lost) holds the robot (the
    /// stop arbiter's sensor-loss source, with the failure's own words),
    /// no decision is asked for (the planner is never offered frontiers
    /// from a blind scan), and the time counts toward the watchdog tiers (a
    /// decision is due once sensing is back); a stale scan holds it too.
    pub(super) async fn sense<R: Robot + ?Sized>(
        &mut self,
        robot: &mut R,
        now: f64,
        safety: &SafetyConfig,
        arbiter: &mut StopArbiter,
        st: &mut LoopState,
        out: &mut TickLog,
    ) -> Sensed {
        let odometry = robot.odometry().await;
        let scanned = robot.scan().await;
        let pose = odometry.as_ref().map_or(self.last_pose, |o| o.pose);
        let speed_mps = odometry.as_ref().map_or(0.0, |o| o.linear);
        let angular_rps = odometry.as_ref().map_or(0.0, |o| o.angular);
        let failure = match (&odometry, &scanned) {
            (Err(e), _) | (_, Err(e)) => Some(e.to_string()),
            _ => None,
        };
        let (scan, scan_age) = match (failure.clone(), scanned) {
            (None, Ok(s)) => {
                let age = (now - s.stamp_s).max(0.0);
                arbiter.update(StopSource::SensorLoss, age > safety.sensors.max_scan_age_s, "scan is stale");
                (Some(s.scan), age)
            }
            (e, _) => {
                // disconnected or stale: treat the robot as stopped; no decision can be made, so the
                // time counts toward the watchdog tiers (and a decision is due once sensing is back)
                let e = e.unwrap_or_default();
                arbiter.request(StopSource::SensorLoss, e.clone());
                out.events.push(json!({"event": "sensor_error", "error": e}));
                st.waiting_since.get_or_insert(now);
                st.after_override = true;
                (None, f64::INFINITY)
            }
        };
        let step_m = self.last_pose.distance(pose);
        self.distance += step_m;
        if self.motion_from_odometry {
            st.motion.distance_m += step_m;
            st.motion.duration_s += (now - self.last_now).max(0.0);
        }
        self.last_pose = pose;
        self.last_now = now;
        Sensed { pose, speed_mps, angular_rps, scan, scan_age, failure }
    }
}
