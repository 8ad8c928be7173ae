//! [`TargetTracking`]: keeps a low-level policy on a target the camera has
//! lost at close range.
//!
//! A camera mounted high and looking level (MiniWorld's at 1.5 m, a robot's
//! head camera) loses a low object below the bottom of its image well
//! before the robot is within the success distance: a 0.6 m ball leaves
//! MiniWorld's 60° vertical field of view 1.6 m away. The policy then no
//! longer sees what it was walking to and cannot STOP next to it.
//!
//! The wrapper remembers where the target was last seen (its surface point,
//! in the odometry frame) and, while it is out of view, hands the wrapped
//! policy a *remembered* detection of it (`ground_truth: false`), with
//! bearing and distance from the current pose estimate — for a while
//! ([`max_age_steps`](TargetTrackingConfig::max_age_steps)), nearby
//! ([`max_distance_m`](TargetTrackingConfig::max_distance_m)), and only in
//! directions the current scan covers and shows open (a remembered target
//! behind a wall, or out of the scan's view, is left to the planner), or
//! when it is within [`near_m`](TargetTrackingConfig::near_m) anyway.

use super::policy::{LowLevelPolicy, PolicyAction, PolicyGoal, PolicyObservation};
use async_trait::async_trait;
use nav_core::geometry::{Point2, Pose2, angle_diff_abs};
use nav_core::lidar::{ArcStat, LaserScan, arc_distance};
use nav_hal::hal::Detection;
use serde::{Deserialize, Serialize};

/// Settings of [`TargetTracking`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TargetTrackingConfig {
    /// Use the remembered target for at most this many steps after it was
    /// last seen (40).
    pub max_age_steps: u32,
    /// Only while it is at most this far away, metres (3).
    pub max_distance_m: f64,
    /// Within this distance the memory counts even where the scan has no
    /// data, metres (1).
    pub near_m: f64,
    /// A scan return this much nearer than the remembered target in its
    /// direction means something is in between: the memory is not used,
    /// metres (0.3).
    pub occlusion_margin_m: f64,
}

impl Default for TargetTrackingConfig {
    fn default() -> Self {
        Self { max_age_steps: 40, max_distance_m: 3.0, near_m: 1.0, occlusion_margin_m: 0.3 }
    }
}

/// See the [module docs](self).
#[derive(Debug, Clone)]
pub struct TargetTracking<P> {
    inner: P,
    config: TargetTrackingConfig,
    target: String,
    seen: Option<(Point2, u32)>,
    steps: u32,
}

impl<P: LowLevelPolicy> TargetTracking<P> {
    /// Wraps `inner`.
    pub fn new(inner: P, config: TargetTrackingConfig) -> Self {
        Self { inner, config, target: String::new(), seen: None, steps: 0 }
    }

    /// The wrapped policy.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// Where the target was last seen (odometry frame), if it was.
    pub fn last_seen(&self) -> Option<Point2> {
        self.seen.map(|(p, _)| p)
    }

    /// Forgets the sighting (a new episode).
    pub fn forget(&mut self) {
        self.seen = None;
        self.steps = 0;
    }

    /// The remembered detection to hand the policy now, if any.
    fn remembered(&self, pose: Pose2, scan: Option<&LaserScan>) -> Option<Detection> {
        let (at, when) = self.seen?;
        if self.steps.saturating_sub(when) > self.config.max_age_steps {
            return None;
        }
        let distance = pose.position().distance(at);
        if !(distance.is_finite() && distance <= self.config.max_distance_m) {
            return None;
        }
        let bearing = pose.relative_bearing(at);
        if let Some(scan) = scan {
            let covered = scan.effective_beams().any(|(a, _)| angle_diff_abs(a, bearing) <= 2f64.to_radians());
            if !covered && distance > self.config.near_m {
                return None;
            }
            let nearest = f64::from(arc_distance(scan, bearing, 2f64.to_radians(), ArcStat::Min));
            if nearest < distance - self.config.occlusion_margin_m {
                return None;
            }
        }
        Some(Detection {
            label: self.target.clone(),
            bearing_rad: bearing,
            distance_m: distance,
            bbox: None,
            ground_truth: false,
        })
    }
}

#[async_trait]
impl<P: LowLevelPolicy> LowLevelPolicy for TargetTracking<P> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn reset(&mut self, goal: &PolicyGoal, pose: Pose2) {
        if goal.target != self.target {
            self.target = goal.target.clone();
            self.forget();
        }
        self.inner.reset(goal, pose);
    }

    async fn act(&mut self, obs: &PolicyObservation<'_>) -> PolicyAction {
        self.steps += 1;
        let seen = obs
            .detections
            .iter()
            .filter(|d| d.label == self.target && d.distance_m.is_finite() && d.bearing_rad.is_finite())
            .min_by(|a, b| a.distance_m.total_cmp(&b.distance_m));
        if let Some(d) = seen {
            let a = obs.pose.yaw + d.bearing_rad;
            let at = Point2::new(obs.pose.x + d.distance_m * a.cos(), obs.pose.y + d.distance_m * a.sin());
            self.seen = Some((at, self.steps));
            return self.inner.act(obs).await;
        }
        match self.remembered(obs.pose, obs.scan) {
            Some(memory) => {
                let mut detections = obs.detections.to_vec();
                detections.push(memory);
                self.inner.act(&PolicyObservation { detections: &detections, ..*obs }).await
            }
            None => self.inner.act(obs).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::navigator::policy::{HeadingPolicy, PolicyStop};
    use nav_core::action::{Action, StepConfig, step_pose};

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().build().expect("runtime").block_on(f)
    }

    fn goal() -> PolicyGoal {
        PolicyGoal { goal_flag: true, angle_rad: 0.0, target: "ball".into(), distance_hint_m: Some(3.0) }
    }

    /// A scan that covers only a ±37° fan ahead, open (nothing within range).
    fn fan(open_to: f32) -> LaserScan {
        let mut s = LaserScan::full_circle(720, 0.1, 10.0, f32::NAN);
        for i in 0..720 {
            if s.angle(i).abs() <= 37f64.to_radians() {
                s.ranges[i] = open_to;
            }
        }
        s
    }

    #[test]
    fn walks_to_a_target_that_left_the_image_and_stops_next_to_it() {
        let mut p = TargetTracking::new(HeadingPolicy::default(), TargetTrackingConfig::default());
        let cfg = StepConfig::default();
        let mut pose = Pose2::origin();
        p.reset(&goal(), pose);
        let scan = fan(f32::INFINITY);
        let mut actions = Vec::new();
        for _ in 0..30 {
            // the ball's surface is 3 m ahead; the camera loses it nearer than 1.6 m
            let d = 3.0 - pose.x;
            let dets = vec![Detection {
                label: "ball".into(),
                bearing_rad: 0.0,
                distance_m: d,
                bbox: None,
                ground_truth: true,
            }];
            let visible: &[Detection] = if d >= 1.6 { &dets } else { &[] };
            let obs = PolicyObservation { pose, scan: Some(&scan), forward_clearance_m: None, detections: visible };
            match block_on(p.act(&obs)) {
                PolicyAction::Step(a) => {
                    actions.push(a);
                    pose = step_pose(pose, a, &cfg);
                }
                PolicyAction::Done(s) => {
                    assert_eq!(s, PolicyStop::Reached);
                    break;
                }
            }
        }
        assert!(actions.iter().all(|a| *a == Action::Forward), "{actions:?}");
        let left = 3.0 - pose.x;
        assert!(left <= 0.8 + 1e-9 && left > 0.5, "stopped {left} m from the ball");

        // without the wrapper the policy walks on past the point where it lost the ball
        let mut bare = HeadingPolicy::default();
        bare.reset(&goal(), Pose2::origin());
        let obs = PolicyObservation {
            pose: Pose2::new(2.0, 0.0, 0.0),
            scan: Some(&scan),
            forward_clearance_m: None,
            detections: &[],
        };
        assert_eq!(block_on(bare.act(&obs)), PolicyAction::Step(Action::Forward));
    }

    #[test]
    fn memory_is_not_used_behind_a_wall_out_of_view_or_when_old() {
        let cfg = TargetTrackingConfig::default();
        let mut p = TargetTracking::new(HeadingPolicy::default(), cfg.clone());
        p.reset(&goal(), Pose2::origin());
        let seen =
            [Detection { label: "ball".into(), bearing_rad: 0.0, distance_m: 2.0, bbox: None, ground_truth: true }];
        let scan = fan(f32::INFINITY);
        let obs = PolicyObservation {
            pose: Pose2::origin(),
            scan: Some(&scan),
            forward_clearance_m: None,
            detections: &seen,
        };
        block_on(p.act(&obs));
        assert_eq!(p.last_seen(), Some(Point2::new(2.0, 0.0)));
        // open and covered: remembered
        let here = Pose2::new(0.5, 0.0, 0.0);
        let m = p.remembered(here, Some(&scan)).expect("remembered");
        assert!(!m.ground_truth && (m.distance_m - 1.5).abs() < 1e-9 && m.bearing_rad.abs() < 1e-9);
        // a wall 0.6 m ahead: hidden
        let wall = fan(0.6);
        assert!(p.remembered(here, Some(&wall)).is_none());
        // facing away (the direction is outside the fan) and not near: left to the planner
        let away = Pose2::new(0.5, 0.0, std::f64::consts::PI);
        assert!(p.remembered(away, Some(&scan)).is_none());
        // facing away but within near_m: still remembered
        assert!(p.remembered(Pose2::new(1.2, 0.0, std::f64::consts::PI), Some(&scan)).is_some());
        // too far, or too old
        assert!(p.remembered(Pose2::new(-1.5, 0.0, 0.0), Some(&scan)).is_none());
        p.steps += cfg.max_age_steps + 1;
        assert!(p.remembered(here, Some(&scan)).is_none());
        // a new target forgets the old one
        p.reset(&PolicyGoal { target: "box".into(), ..goal() }, here);
        assert_eq!(p.last_seen(), None);
    }
}
