//! Path following for the explore loop (navigation goals and the watchdog's
//! fallbacks): pure pursuit on an A* path that respects the robot's
//! steering.
//!
//! - A **differential** base steers toward the first path point at least
//!   0.3 m ahead and turns in place while the heading error exceeds 30°.
//! - An **Ackermann** base (the ROSMASTER A1) cannot turn in place: its
//!   yaw rate never exceeds |v| / R (R = the minimum turning radius). Past
//!   30° of heading error it turns on its tightest arc, forward while there
//!   is room ahead and in reverse when the front is blocked (a multi-point
//!   turn), keeping the chosen gear until its own side runs out of room so
//!   it does not chatter between the two. With no room either way it
//!   stops and reports itself [boxed in](Pursuit::boxed_in); the goal
//!   then backs out straight and hands back to the planner.

use nav_core::drive::DriveKind;
use nav_core::geometry::{Point2, Pose2, normalize_angle};
use nav_core::lidar::{ArcStat, LaserScan, arc_distance};
use nav_safety::{ContinuousGuard, VelocityTarget};

/// Heading error beyond which a differential base turns in place and an
/// Ackermann base turns on its tightest arc.
const TURN_IN_PLACE_RAD: f64 = std::f64::consts::FRAC_PI_6;
/// The point pursued lies at least this far along the path, m.
const LOOKAHEAD_M: f64 = 0.3;
/// Steering gain, rad/s per rad of heading error.
const GAIN: f64 = 1.5;
/// Cap on the pursuit yaw rate, rad/s.
const MAX_YAW_RATE: f64 = 0.8;

/// A path follower for one robot. See the module docs.
#[derive(Debug, Clone)]
pub(crate) struct Pursuit {
    drive: DriveKind,
    /// Room a gear needs to be chosen, m (the executor's `reject_m`).
    enter_m: f64,
    /// Room a gear needs to be kept, m (a little above `stop_m`).
    keep_m: f64,
    /// +1 forward, -1 reverse: the gear of the current arc turn.
    gear: f64,
    /// The last [`Self::follow`] found no room to turn either way.
    boxed_in: bool,
}

impl Pursuit {
    /// A follower for a robot with this steering; `guard` supplies the
    /// clearance limits.
    pub(crate) fn new(drive: DriveKind, guard: &ContinuousGuard) -> Self {
        let cl = &guard.config().clearance;
        Self { drive, enter_m: cl.reject_m.max(cl.stop_m), keep_m: cl.stop_m + 0.05, gear: 1.0, boxed_in: false }
    }

    /// True when the last [`Self::follow`] stopped because an Ackermann arc
    /// turn had no room forward or in reverse.
    pub(crate) fn boxed_in(&self) -> bool {
        self.boxed_in
    }

    /// The velocity that follows `path` from `pose` at `speed`; `scan` (the
    /// newest, if any) decides the gear of an Ackermann arc turn.
    pub(crate) fn follow(
        &mut self,
        path: &[Point2],
        pose: Pose2,
        speed: f64,
        scan: Option<&LaserScan>,
        guard: &ContinuousGuard,
    ) -> VelocityTarget {
        self.boxed_in = false;
        let here = pose.position();
        let nearest = path
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.distance(here).total_cmp(&b.1.distance(here)))
            .map_or(0, |(i, _)| i);
        let target = path
            .get(nearest..)
            .and_then(|rest| rest.iter().find(|p| p.distance(here) >= LOOKAHEAD_M))
            .or(path.last())
            .copied()
            .unwrap_or(here);
        let err = normalize_angle(here.bearing_to(target) - pose.yaw);
        match self.drive {
            DriveKind::Ackermann { min_turn_radius_m } if min_turn_radius_m > 0.0 => {
                self.ackermann(err, speed, min_turn_radius_m, scan, guard)
            }
            _ => {
                let angular = (GAIN * err).clamp(-MAX_YAW_RATE, MAX_YAW_RATE);
                let linear = if err.abs() > TURN_IN_PLACE_RAD { 0.0 } else { speed * err.cos().max(0.0) };
                VelocityTarget { linear, angular, duration_s: 0.05 }
            }
        }
    }

    fn ackermann(
        &mut self,
        err: f64,
        speed: f64,
        radius: f64,
        scan: Option<&LaserScan>,
        guard: &ContinuousGuard,
    ) -> VelocityTarget {
        if err.abs() <= TURN_IN_PLACE_RAD {
            self.gear = 1.0;
            let linear = speed * err.cos().max(0.0);
            let max_w = (linear / radius).min(MAX_YAW_RATE);
            let angular = (GAIN * err).clamp(-max_w, max_w);
            return VelocityTarget { linear, angular, duration_s: 0.05 };
        }
        // an arc turn on the tightest radius, yaw toward the target in either gear
        let Some(scan) = scan else { return VelocityTarget::STOP };
        let v = speed.abs();
        if v <= 0.0 {
            return VelocityTarget::STOP;
        }
        let angular = err.signum() * (v / radius).min(MAX_YAW_RATE);
        let linear_for = |gear: f64| gear * (angular.abs() * radius);
        let room = |gear: f64| {
            guard
                .motion_arc(linear_for(gear), angular)
                .map_or(0.0, |(c, h)| f64::from(arc_distance(scan, c, h, ArcStat::Min)))
        };
        if room(self.gear) < self.keep_m {
            if room(-self.gear) >= self.enter_m {
                self.gear = -self.gear;
            } else {
                self.boxed_in = true;
                return VelocityTarget::STOP;
            }
        }
        VelocityTarget { linear: linear_for(self.gear), angular, duration_s: 0.05 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nav_safety::SafetyConfig;
    use proptest::prelude::*;

    fn guard() -> ContinuousGuard {
        ContinuousGuard::new(SafetyConfig::default())
    }

    /// A 360-beam scan: `front` metres within ±60° of the front, 3 m elsewhere.
    fn scan(front: f32, back: f32) -> LaserScan {
        let mut s = LaserScan::full_circle(360, 0.05, 10.0, 3.0);
        for i in 0..s.ranges.len() {
            let a = s.angle(i);
            if a.abs() <= 60f64.to_radians() {
                s.ranges[i] = front;
            } else if normalize_angle(a - std::f64::consts::PI).abs() <= 60f64.to_radians() {
                s.ranges[i] = back;
            }
        }
        s
    }

    const ACKERMANN: DriveKind = DriveKind::Ackermann { min_turn_radius_m: 0.3 };

    #[test]
    fn differential_turns_in_place_when_the_path_is_behind() {
        let g = guard();
        let mut p = Pursuit::new(DriveKind::Differential, &g);
        let path = [Point2::new(0.0, 0.0), Point2::new(-1.0, 0.2)];
        let v = p.follow(&path, Pose2::origin(), 0.12, None, &g);
        assert_eq!(v.linear, 0.0);
        assert!(v.angular > 0.0, "turns left toward a target behind-left: {v:?}");
        let ahead = [Point2::new(0.0, 0.0), Point2::new(1.0, 0.0)];
        let v = p.follow(&ahead, Pose2::origin(), 0.12, None, &g);
        assert!((v.linear - 0.12).abs() < 1e-9 && v.angular.abs() < 1e-9);
    }

    #[test]
    fn ackermann_turns_on_an_arc_forward_then_in_reverse_when_blocked() {
        let g = guard();
        let mut p = Pursuit::new(ACKERMANN, &g);
        let path = [Point2::new(0.0, 0.0), Point2::new(0.0, 1.0)]; // 90° to the left
        let open = scan(3.0, 3.0);
        let v = p.follow(&path, Pose2::origin(), 0.12, Some(&open), &g);
        assert!(v.linear > 0.0 && v.angular > 0.0, "forward arc to the left: {v:?}");
        assert!((v.angular - v.linear / 0.3).abs() < 1e-9, "on the tightest radius");
        // A wall 0.32 m ahead: back up, still turning toward the target.
        let blocked = scan(0.32, 3.0);
        let v = p.follow(&path, Pose2::origin(), 0.12, Some(&blocked), &g);
        assert!(v.linear < 0.0 && v.angular > 0.0, "reverse arc: {v:?}");
        // The reverse gear is kept while the back has room, even once the front clears a little.
        let v = p.follow(&path, Pose2::origin(), 0.12, Some(&scan(0.45, 3.0)), &g);
        assert!(v.linear < 0.0, "no chattering between gears: {v:?}");
        assert!(!p.boxed_in());
        // Boxed in: stop, and say so.
        let v = p.follow(&path, Pose2::origin(), 0.12, Some(&scan(0.32, 0.32)), &g);
        assert_eq!((v.linear, v.angular), (0.0, 0.0));
        assert!(p.boxed_in());
        // No scan, no arc turn (and no claim to be boxed in).
        assert_eq!(p.follow(&path, Pose2::origin(), 0.12, None, &g), VelocityTarget::STOP);
        assert!(!p.boxed_in());
    }

    proptest! {
        /// An Ackermann robot is never asked to turn tighter than its radius.
        #[test]
        fn ackermann_never_exceeds_the_turning_radius(
            tx in -3.0f64..3.0, ty in -3.0f64..3.0, yaw in -3.2f64..3.2,
            front in 0.1f32..4.0, back in 0.1f32..4.0, speed in 0.0f64..0.3,
        ) {
            let g = guard();
            let mut p = Pursuit::new(ACKERMANN, &g);
            let path = [Point2::new(0.0, 0.0), Point2::new(tx, ty)];
            let s = scan(front, back);
            for _ in 0..3 {
                let v = p.follow(&path, Pose2::new(0.0, 0.0, yaw), speed, Some(&s), &g);
                prop_assert!(v.linear.is_finite() && v.angular.is_finite());
                prop_assert!(v.angular.abs() <= v.linear.abs() / 0.3 + 1e-9, "{:?}", v);
                prop_assert!(v.linear.abs() <= speed + 1e-9);
            }
        }
    }
}
