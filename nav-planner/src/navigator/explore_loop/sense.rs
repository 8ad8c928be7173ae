//! Sensing at the start of a tick: odometry and the scan, a lost link
//! treated as a stopped robot, and the motion of a robot whose `drive`
//! reports none measured from odometry.

use super::state::{LoopState, TickLog, TickView};
use nav_core::geometry::Pose2;
use nav_core::lidar::StampedScan;
use nav_hal::HalError;
use nav_hal::hal::Robot;
use serde_json::json;

/// What this tick sensed.
pub(super) struct Sensed {
    pub(super) pose: Pose2,
    pub(super) speed_mps: f64,
    /// Yaw rate from odometry, rad/s.
    pub(super) angular_rps: f64,
    /// The scan with its stamp, or `None` while sensing fails.
    pub(super) scan: Option<StampedScan>,
    /// Why sensing failed this tick (the source named: a stale topic, a
    /// LiDAR sensor fault, the lost link), if it did.
    pub(super) failure: Option<String>,
    /// The LiDAR answered but is blind (a sensor fault: too few valid
    /// beams); the failure says why.
    pub(super) blind: bool,
}

impl Sensed {
    /// The view a reply is applied with, at loop time `now`.
    pub(super) fn view(&self, now: f64) -> TickView<'_> {
        TickView { now, pose: self.pose, scan: self.scan.as_ref() }
    }

    /// Age of the scan at `now`, s (infinite without one).
    pub(super) fn scan_age(&self, now: f64) -> f64 {
        self.scan.as_ref().map_or(f64::INFINITY, |s| s.age_s(now))
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
    /// (stale, a LiDAR sensor fault, the link lost) goes to the safety
    /// layer, which holds the robot with the failure's own words and
    /// counts the time toward the watchdog tiers (a decision is due once
    /// sensing is back); a stale scan holds it too (the guard's check).
    pub(super) async fn sense<R: Robot + ?Sized>(
        &mut self,
        robot: &mut R,
        now: f64,
        st: &mut LoopState,
        out: &mut TickLog,
    ) -> Sensed {
        let odometry = robot.odometry().await;
        let scanned = robot.scan().await;
        let pose = odometry.as_ref().map_or(self.last_pose, |o| o.pose);
        let speed_mps = odometry.as_ref().map_or(0.0, |o| o.linear);
        let angular_rps = odometry.as_ref().map_or(0.0, |o| o.angular);
        let blind = matches!(scanned, Err(HalError::SensorFault { .. }));
        let failure = match (&odometry, &scanned) {
            (Err(e), _) | (_, Err(e)) => Some(e.to_string()),
            _ => None,
        };
        if let Some(e) = &failure {
            out.events.push(json!({"event": "sensor_error", "error": e}));
        }
        st.safety.sensing(failure.clone(), now);
        let scan = if failure.is_none() { scanned.ok() } else { None };
        let step_m = self.last_pose.distance(pose);
        self.distance += step_m;
        if self.motion_from_odometry {
            st.motion.distance_m += step_m;
            st.motion.duration_s += (now - self.last_now).max(0.0);
        }
        self.last_pose = pose;
        self.last_now = now;
        Sensed { pose, speed_mps, angular_rps, scan, failure, blind }
    }
}
