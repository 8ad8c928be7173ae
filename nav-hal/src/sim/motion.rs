//! Motion with swept collision detection.
//!
//! Every translation is checked as a swept disc against all geometry
//! ([`Scene::sweep`](crate::arena::scene::Scene::sweep)), so no speed or step
//! size can tunnel through a wall. A blocked motion stops at contact
//! (minus a 0.1 mm skin), ends the command and counts one collision.
//! Discrete turns happen in place (a disc cannot collide by turning);
//! velocity commands follow a unicycle, or a car with a minimum turning
//! radius under [`DriveKind::Ackermann`], integrated in small substeps
//! whose chords are swept.

use super::{CONTACT_SKIN_M, SimWorld};
use crate::HalError;
use crate::hal::{MotionOutcome, StepOutcome, VelocityCommand};
use nav_core::action::{Action, step_pose};
use nav_core::drive::DriveKind;
use nav_core::geometry::{Point2, Pose2, normalize_angle};
use rand::Rng;

/// Minimum spacing of trajectory samples during velocity commands, metres.
const TRAJECTORY_SPACING_M: f64 = 0.05;

/// A standard normal sample (Box–Muller) from the seeded generator.
/// At most this many integration steps per motion: a long motion at a
/// fine `substep_s` uses longer steps rather than running without end.
pub const MAX_SUBSTEPS: usize = 200_000;

pub(crate) fn gaussian(rng: &mut impl Rng) -> f64 {
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

impl SimWorld {
    /// Odometry error factors for one command: `(linear, angular)`.
    fn odom_factors(&mut self) -> (f64, f64) {
        let n = self.config.noise;
        let lin = if n.odom_linear_frac > 0.0 { 1.0 + gaussian(&mut self.rng) * n.odom_linear_frac } else { 1.0 };
        let ang = if n.odom_angular_frac > 0.0 { 1.0 + gaussian(&mut self.rng) * n.odom_angular_frac } else { 1.0 };
        (lin, ang)
    }

    /// Executes one discrete action: `forward` moves `step.forward_m` along
    /// the heading (stopping at contact), turns rotate in place, `stop`
    /// does nothing. Advances the clock by `action_time_s` (not for
    /// `stop`).
    pub fn act(&mut self, action: Action) -> StepOutcome {
        self.actions += 1;
        self.velocity = (0.0, 0.0);
        if action == Action::Stop {
            return StepOutcome { collided: false, moved_m: 0.0, pose: Some(self.odom_in_frame()), blocked: None };
        }
        let (lin, ang) = self.odom_factors();
        let cfg = self.config.step;
        let mut outcome = StepOutcome { collided: false, moved_m: 0.0, pose: None, blocked: None };
        match action {
            Action::Forward => {
                let (s, c) = self.pose.yaw.sin_cos();
                let v = Point2::new(c * cfg.forward_m, s * cfg.forward_m);
                match self.scene.sweep(self.pose.position(), v, self.config.robot_radius_m) {
                    None => {
                        self.pose = step_pose(self.pose, action, &cfg);
                        outcome.moved_m = cfg.forward_m;
                    }
                    Some((t, _)) => {
                        let moved = (t * cfg.forward_m - CONTACT_SKIN_M).max(0.0);
                        self.pose = Pose2 { x: self.pose.x + c * moved, y: self.pose.y + s * moved, ..self.pose };
                        outcome.moved_m = moved;
                        outcome.collided = true;
                        self.collisions += 1;
                    }
                }
                self.odom = if lin == 1.0 && !outcome.collided {
                    step_pose(self.odom, action, &cfg)
                } else {
                    let d = outcome.moved_m * lin;
                    let (so, co) = self.odom.yaw.sin_cos();
                    Pose2 { x: self.odom.x + co * d, y: self.odom.y + so * d, ..self.odom }
                };
                self.path_length_m += outcome.moved_m;
            }
            Action::TurnLeft | Action::TurnRight => {
                self.pose = step_pose(self.pose, action, &cfg);
                self.odom = if ang == 1.0 {
                    step_pose(self.odom, action, &cfg)
                } else {
                    let sign = if action == Action::TurnLeft { 1.0 } else { -1.0 };
                    Pose2::new(self.odom.x, self.odom.y, self.odom.yaw + sign * cfg.turn_rad() * ang)
                };
            }
            Action::Stop => {}
        }
        self.trajectory.push(self.pose);
        self.clock.advance(self.config.action_time_s);
        outcome.pose = Some(self.odom_in_frame());
        outcome
    }

    /// Holds a velocity for `duration_s` (clamped to the speed limits and,
    /// for Ackermann steering, to the turning radius), then stops.
    pub fn drive(&mut self, command: VelocityCommand) -> Result<MotionOutcome, HalError> {
        command.validate()?;
        let (v, w) = self.limit(command.linear, command.angular);
        let factors = self.odom_factors();
        let steps = ((command.duration_s / self.config.substep_s).ceil().max(0.0) as usize).min(MAX_SUBSTEPS);
        let dt = if steps > 0 { command.duration_s / steps as f64 } else { 0.0 };
        let mut out = MotionOutcome { distance_m: 0.0, duration_s: 0.0, collided: false, stopped_early: false };
        for _ in 0..steps {
            let (moved, blocked) = self.integrate(v, w, dt, factors);
            out.distance_m += moved;
            out.duration_s += dt;
            if blocked {
                out.collided = true;
                out.stopped_early = true;
                break;
            }
        }
        self.finish_motion(&mut out);
        Ok(out)
    }

    /// Drives to `target` (odometry frame) and stops within
    /// `waypoint_threshold_m`. Differential drive turns in place toward the
    /// target at `rotate_speed_dps`, then drives at `move_speed_mps` while
    /// correcting its heading; Ackermann drive steers on arcs no tighter
    /// than its minimum radius. Gives up (`stopped_early`) after three
    /// times the nominal travel time plus 5 s, or on contact.
    pub fn move_to(&mut self, target: Point2) -> Result<MotionOutcome, HalError> {
        if !target.is_finite() {
            return Err(HalError::invalid_command("target", "must be finite"));
        }
        let goal = self.odom_point_to_arena(target);
        let factors = self.odom_factors();
        let speed = self.config.move_speed_mps.min(self.config.max_linear_mps);
        let rot = self.config.rotate_speed_dps.to_radians().min(self.config.max_angular_rps);
        let dist0 = self.odom.position().distance(goal);
        let turn0 = normalize_angle(self.odom.position().bearing_to(goal) - self.odom.yaw).abs();
        let budget = 3.0 * (dist0 / speed + turn0 / rot) + 5.0;
        let dt = self.config.substep_s.max(budget / MAX_SUBSTEPS as f64);
        let mut out = MotionOutcome { distance_m: 0.0, duration_s: 0.0, collided: false, stopped_early: false };
        loop {
            let here = self.odom.position();
            let d = here.distance(goal);
            if d <= self.config.waypoint_threshold_m {
                break;
            }
            if out.duration_s >= budget {
                out.stopped_early = true;
                break;
            }
            let err = normalize_angle(here.bearing_to(goal) - self.odom.yaw);
            let (v, w) = match self.config.drive {
                DriveKind::Ackermann { .. } => {
                    let v = speed.min(d / dt);
                    (v, 2.0 * err)
                }
                _ => {
                    if err.abs() > 10f64.to_radians() {
                        (0.0, (err / dt).clamp(-rot, rot))
                    } else {
                        (speed.min(d / dt), (2.0 * err).clamp(-rot, rot))
                    }
                }
            };
            let (v, w) = self.limit(v, w);
            let (moved, blocked) = self.integrate(v, w, dt, factors);
            out.distance_m += moved;
            out.duration_s += dt;
            if blocked {
                out.collided = true;
                out.stopped_early = true;
                break;
            }
        }
        self.finish_motion(&mut out);
        Ok(out)
    }

    /// Stops (the simulator never moves between commands, so this only
    /// zeroes the reported velocity).
    pub fn stop(&mut self) {
        self.velocity = (0.0, 0.0);
    }

    fn finish_motion(&mut self, out: &mut MotionOutcome) {
        if out.collided {
            self.collisions += 1;
        }
        self.velocity = (0.0, 0.0);
        if self.trajectory.last() != Some(&self.pose) {
            self.trajectory.push(self.pose);
        }
        self.clock.advance(out.duration_s);
    }

    /// Applies the speed limits and the steering model.
    fn limit(&self, v: f64, w: f64) -> (f64, f64) {
        let v = v.clamp(-self.config.max_linear_mps, self.config.max_linear_mps);
        let w = w.clamp(-self.config.max_angular_rps, self.config.max_angular_rps);
        (v, self.config.drive.limit_yaw_rate(v, w))
    }

    /// One substep of a unicycle: moves along the chord of the arc,
    /// stopping at contact. Returns the distance moved and whether it was
    /// blocked.
    fn integrate(&mut self, v: f64, w: f64, dt: f64, (lin, ang): (f64, f64)) -> (f64, bool) {
        let ds = v * dt;
        let dth = w * dt;
        let yaw = self.pose.yaw;
        let chord = if dth.abs() < 1e-12 {
            Point2::new(ds * yaw.cos(), ds * yaw.sin())
        } else {
            let r = ds / dth;
            Point2::new(r * ((yaw + dth).sin() - yaw.sin()), -r * ((yaw + dth).cos() - yaw.cos()))
        };
        let len = chord.norm();
        let (frac, blocked) = if len < 1e-15 {
            (1.0, false)
        } else {
            match self.scene.sweep(self.pose.position(), chord, self.config.robot_radius_m) {
                None => (1.0, false),
                Some((t, _)) => (((t * len - CONTACT_SKIN_M) / len).max(0.0), true),
            }
        };
        let moved = len * frac;
        let turned = dth * frac;
        let p = self.pose.position() + chord.scale(frac);
        self.pose = Pose2::new(p.x, p.y, yaw + turned);
        // Odometry integrates the same motion with its error factors.
        let od = moved * lin * ds.signum();
        let mid = self.odom.yaw + turned * ang / 2.0;
        self.odom =
            Pose2::new(self.odom.x + od * mid.cos(), self.odom.y + od * mid.sin(), self.odom.yaw + turned * ang);
        self.path_length_m += moved;
        self.velocity = if dt > 0.0 { (moved * ds.signum() / dt, turned / dt) } else { (0.0, 0.0) };
        if self.trajectory.last().is_none_or(|q| q.position().distance(p) >= TRAJECTORY_SPACING_M) {
            self.trajectory.push(self.pose);
        }
        (moved, blocked)
    }
}
