//! Discrete actions over a velocity interface: `forward` (0.25 m) and the
//! 30° turns as closed-loop motions on odometry, every Twist checked by a
//! [`MotionGuard`] (docs/ROSMASTER.md, "ObjectNav").
//!
//! - **forward**: drives along the start heading (heading held by a
//!   proportional yaw correction) until the odometry has advanced
//!   `forward_m` along it, slowing down over the last centimetres.
//! - **turn, differential base**: turns in place toward the target yaw.
//! - **turn, Ackermann base** (no turning in place): a two-leg manoeuvre
//!   on the tightest arc. A forward arc steered toward the turn covers half
//!   the angle, then a reverse arc steered the other way covers the rest;
//!   both legs turn the robot the same way, and their displacements nearly
//!   cancel (0.3 m radius, 30°: about 2 cm). When the guard blocks a leg's
//!   direction (a wall ahead or behind) the manoeuvre continues in the other
//!   direction; when both are blocked it ends early, reporting the yaw it
//!   reached.
//!
//! Every control tick reads fresh odometry and a fresh scan, passes the
//! command through the guard and publishes one Twist; the motion ends with
//! the stop burst. A guard halt ends the step early with
//! [`StepOutcome::blocked`] set (no contact); stale sensors, a lost link or
//! the per-action `timeout_s` stop the robot and return the error.

use crate::HalError;
use crate::hal::{MotionGuard, Robot, StepOutcome, VelocityCommand};
use nav_core::action::Action;
use nav_core::drive::DriveKind;
use nav_core::geometry::{Point2, Pose2, normalize_angle};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tokio::time::Instant;

/// How [`RosbridgeHal`](super::RosbridgeHal) carries out discrete actions
/// (`[rosbridge.steps]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StepMotionConfig {
    /// Distance of one `forward`, metres (Habitat: 0.25).
    /// Range: (0, 2].
    pub forward_m: f64,
    /// Angle of one turn, degrees (Habitat: 30).
    /// Range: (0, 180].
    pub turn_deg: f64,
    /// Cruise speed of forward steps and Ackermann turning arcs, m/s
    /// (also capped by `max_linear_mps`).
    /// Range: (0, 1].
    pub speed_mps: f64,
    /// Slowest speed while closing in on the target, m/s.
    /// Range: (0, speed_mps].
    pub min_speed_mps: f64,
    /// Yaw rate of in-place turns (differential bases), rad/s.
    /// Range: (0, 3].
    pub turn_rate_rps: f64,
    /// A forward step ends this close to its distance, metres.
    /// Range: (0, 0.1].
    pub forward_tolerance_m: f64,
    /// A turn ends this close to its angle, degrees.
    /// Range: (0, 10].
    pub turn_tolerance_deg: f64,
    /// Control rate, Hz (one Twist per tick).
    /// Range: [5, 100].
    pub control_hz: f64,
    /// An action that has not finished after this long stops the robot and
    /// fails, seconds.
    /// Range: (0, 120].
    pub timeout_s: f64,
}

impl Default for StepMotionConfig {
    fn default() -> Self {
        Self {
            forward_m: 0.25,
            turn_deg: 30.0,
            speed_mps: 0.12,
            min_speed_mps: 0.03,
            turn_rate_rps: 0.6,
            forward_tolerance_m: 0.003,
            turn_tolerance_deg: 0.5,
            control_hz: 20.0,
            timeout_s: 15.0,
        }
    }
}

impl StepMotionConfig {
    /// Checks the ranges in the field docs; errors name the key under
    /// `steps.`.
    pub fn validate(&self) -> Result<(), HalError> {
        let ranges = [
            ("forward_m", self.forward_m, 0.0, 2.0),
            ("turn_deg", self.turn_deg, 0.0, 180.0),
            ("speed_mps", self.speed_mps, 0.0, 1.0),
            ("min_speed_mps", self.min_speed_mps, 0.0, self.speed_mps),
            ("turn_rate_rps", self.turn_rate_rps, 0.0, 3.0),
            ("forward_tolerance_m", self.forward_tolerance_m, 0.0, 0.1),
            ("turn_tolerance_deg", self.turn_tolerance_deg, 0.0, 10.0),
            ("control_hz", self.control_hz, 4.999, 100.0),
            ("timeout_s", self.timeout_s, 0.0, 120.0),
        ];
        for (field, v, lo, hi) in ranges {
            if !(v.is_finite() && v > lo && v <= hi) {
                return Err(HalError::InvalidConfig {
                    field: format!("steps.{field}"),
                    message: format!("must be within ({lo}, {hi}], got {v}"),
                });
            }
        }
        Ok(())
    }

    /// The step sizes as the capabilities report them.
    pub fn step_config(&self) -> nav_core::action::StepConfig {
        nav_core::action::StepConfig { forward_m: self.forward_m, turn_deg: self.turn_deg }
    }
}

/// What a closed-loop step runs with.
pub(super) struct StepContext<'a> {
    pub config: &'a StepMotionConfig,
    pub drive: DriveKind,
    pub max_linear_mps: f64,
    pub guard: &'a dyn MotionGuard,
    /// Seconds on the clock the scans are stamped with.
    pub now_s: &'a (dyn Fn() -> f64 + Send + Sync),
}

/// The end of one control tick.
enum Tick {
    /// The command went out.
    Sent,
    /// The guard halted it: why.
    Blocked(String),
}

/// The motion being executed.
struct Motion<'a> {
    ctx: &'a StepContext<'a>,
    action: Action,
    start: Pose2,
    started: Instant,
    deadline: Instant,
    interval: tokio::time::Interval,
}

impl Motion<'_> {
    /// Reads the odometry; a failure stops the robot first.
    async fn pose<R: Robot + ?Sized>(&self, robot: &mut R) -> Result<Pose2, HalError> {
        match robot.odometry().await {
            Ok(o) => Ok(o.pose),
            Err(e) => Err(halt(robot, e).await),
        }
    }

    /// Fails with a timeout (after stopping) once the deadline passed.
    async fn check_deadline<R: Robot + ?Sized>(&self, robot: &mut R, progress: String) -> Result<(), HalError> {
        if Instant::now() < self.deadline {
            return Ok(());
        }
        let e = HalError::Timeout {
            what: format!("{} step ({progress}; the robot was stopped)", self.action.as_str()),
            after_s: self.started.elapsed().as_secs_f64(),
        };
        Err(halt(robot, e).await)
    }

    /// One control tick: the guard checks `(linear, angular)` against a
    /// fresh scan, the result is published, then the tick's time is waited
    /// out. A command the guard slows to a standstill counts as blocked.
    async fn tick<R: Robot + ?Sized>(
        &mut self,
        robot: &mut R,
        pose: Pose2,
        linear: f64,
        angular: f64,
    ) -> Result<Tick, HalError> {
        let period = 1.0 / self.ctx.config.control_hz;
        let angular = self.ctx.drive.limit_yaw_rate(linear, angular);
        let command = VelocityCommand { linear, angular, duration_s: period };
        let scan = match robot.scan().await {
            Ok(s) => s,
            Err(e) => return Err(halt(robot, e).await),
        };
        let age = ((self.ctx.now_s)() - scan.stamp_s).max(0.0);
        let verdict = self.ctx.guard.check(&command, &scan, age, pose);
        let crawling = linear.abs() >= 0.01 && verdict.linear.abs() < 0.01;
        if verdict.stopped || crawling {
            let reason = verdict.reason.unwrap_or_else(|| "the safety guard stopped the motion".into());
            robot.stop().await?;
            return Ok(Tick::Blocked(reason));
        }
        let safe = VelocityCommand { linear: verdict.linear, angular: verdict.angular, duration_s: period };
        if let Err(e) = robot.drive(safe).await {
            return Err(halt(robot, e).await);
        }
        self.interval.tick().await;
        Ok(Tick::Sent)
    }

    /// Stops, reads where the robot ended and builds the outcome.
    async fn finish<R: Robot + ?Sized>(&self, robot: &mut R, blocked: Option<String>) -> Result<StepOutcome, HalError> {
        robot.stop().await?;
        let end = robot.odometry().await.map(|o| o.pose).ok();
        let moved_m = end.map_or(0.0, |p| p.position().distance(self.start.position()));
        Ok(StepOutcome { collided: false, moved_m, pose: end, blocked })
    }
}

/// Stops the robot (best effort) and hands back `e`.
async fn halt<R: Robot + ?Sized>(robot: &mut R, e: HalError) -> HalError {
    let _ = robot.stop().await;
    e
}

/// Runs `action` as a closed-loop motion (see the module docs).
pub(super) async fn run<R: Robot + ?Sized>(
    robot: &mut R,
    action: Action,
    ctx: &StepContext<'_>,
) -> Result<StepOutcome, HalError> {
    if action == Action::Stop {
        robot.stop().await?;
        let pose = robot.odometry().await.map(|o| o.pose).ok();
        return Ok(StepOutcome { collided: false, moved_m: 0.0, pose, blocked: None });
    }
    let start = robot.odometry().await?.pose;
    let mut interval = tokio::time::interval(Duration::from_secs_f64(1.0 / ctx.config.control_hz));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(ctx.config.timeout_s);
    let mut motion = Motion { ctx, action, start, started, deadline, interval };
    match action {
        Action::Forward => forward(robot, &mut motion).await,
        Action::TurnLeft | Action::TurnRight => {
            let sign = if action == Action::TurnLeft { 1.0 } else { -1.0 };
            let target = normalize_angle(start.yaw + sign * ctx.config.turn_deg.to_radians());
            match ctx.drive {
                DriveKind::Ackermann { min_turn_radius_m } => {
                    turn_ackermann(robot, &mut motion, target, min_turn_radius_m).await
                }
                DriveKind::Differential => turn_in_place(robot, &mut motion, target).await,
            }
        }
        Action::Stop => unreachable!("handled above"),
    }
}

/// The cruise speed, capped by the HAL's speed limit.
fn cruise(ctx: &StepContext<'_>) -> f64 {
    ctx.config.speed_mps.min(ctx.max_linear_mps)
}

async fn forward<R: Robot + ?Sized>(robot: &mut R, m: &mut Motion<'_>) -> Result<StepOutcome, HalError> {
    let cfg = m.ctx.config;
    let heading = Point2::new(m.start.yaw.cos(), m.start.yaw.sin());
    loop {
        let pose = m.pose(robot).await?;
        let advanced = (pose.position() - m.start.position()).dot(heading);
        let remaining = cfg.forward_m - advanced;
        if remaining <= cfg.forward_tolerance_m {
            return m.finish(robot, None).await;
        }
        m.check_deadline(robot, format!("advanced {advanced:.3} of {:.2} m", cfg.forward_m)).await?;
        let speed = (1.5 * remaining).clamp(cfg.min_speed_mps, cruise(m.ctx));
        let yaw_error = normalize_angle(m.start.yaw - pose.yaw);
        if let Tick::Blocked(reason) = m.tick(robot, pose, speed, 2.0 * yaw_error).await? {
            return m.finish(robot, Some(format!("forward stopped after {advanced:.2} m: {reason}"))).await;
        }
    }
}

async fn turn_in_place<R: Robot + ?Sized>(
    robot: &mut R,
    m: &mut Motion<'_>,
    target: f64,
) -> Result<StepOutcome, HalError> {
    let cfg = m.ctx.config;
    let tolerance = cfg.turn_tolerance_deg.to_radians();
    let min_rate = 0.1f64.min(cfg.turn_rate_rps);
    loop {
        let pose = m.pose(robot).await?;
        let error = normalize_angle(target - pose.yaw);
        if error.abs() <= tolerance {
            return m.finish(robot, None).await;
        }
        let turned = normalize_angle(pose.yaw - m.start.yaw).to_degrees();
        m.check_deadline(robot, format!("turned {turned:.1} of {:.0}°", cfg.turn_deg)).await?;
        let rate = (2.0 * error.abs()).clamp(min_rate, cfg.turn_rate_rps) * error.signum();
        if let Tick::Blocked(reason) = m.tick(robot, pose, 0.0, rate).await? {
            return m.finish(robot, Some(format!("turn stopped after {turned:.1}°: {reason}"))).await;
        }
    }
}

/// The Ackermann two-leg turn (module docs): forward arc for the first
/// half, reverse arc for the rest; a direction the guard blocks is swapped
/// for the other, and when both are blocked the turn ends where it is.
async fn turn_ackermann<R: Robot + ?Sized>(
    robot: &mut R,
    m: &mut Motion<'_>,
    target: f64,
    radius: f64,
) -> Result<StepOutcome, HalError> {
    let cfg = m.ctx.config;
    let tolerance = cfg.turn_tolerance_deg.to_radians();
    let half = cfg.turn_deg.to_radians() / 2.0;
    // +1 forward, -1 reverse; which directions the guard refused
    let mut direction = 1.0;
    let mut blocked = [false, false];
    let mut reasons: Vec<String> = Vec::new();
    loop {
        let pose = m.pose(robot).await?;
        let error = normalize_angle(target - pose.yaw);
        let turned = normalize_angle(pose.yaw - m.start.yaw).to_degrees();
        if error.abs() <= tolerance {
            return m.finish(robot, None).await;
        }
        m.check_deadline(robot, format!("turned {turned:.1} of {:.0}°", cfg.turn_deg)).await?;
        // the first leg ends half-way; after that (or when forward is blocked) reverse
        if direction > 0.0 && error.abs() <= half && !blocked[1] {
            direction = -1.0;
        }
        let speed = (2.0 * radius * error.abs()).clamp(cfg.min_speed_mps, cruise(m.ctx));
        let linear = direction * speed;
        // both legs turn toward the target: ω has the error's sign whatever the direction
        let angular = error.signum() * speed / radius;
        match m.tick(robot, pose, linear, angular).await? {
            Tick::Sent => {}
            Tick::Blocked(reason) => {
                let index = usize::from(direction < 0.0);
                blocked[index] = true;
                reasons.push(reason);
                if blocked[1 - index] {
                    let why = reasons.join("; then ");
                    return m.finish(robot, Some(format!("turn stopped after {turned:.1}°: {why}"))).await;
                }
                direction = -direction;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_habitat_steps_and_bad_values_name_their_key() {
        let c = StepMotionConfig::default();
        c.validate().unwrap();
        assert_eq!((c.forward_m, c.turn_deg), (0.25, 30.0));
        let key = |c: StepMotionConfig| match c.validate() {
            Err(HalError::InvalidConfig { field, .. }) => field,
            other => panic!("expected InvalidConfig, got {other:?}"),
        };
        assert_eq!(key(StepMotionConfig { turn_deg: 0.0, ..c.clone() }), "steps.turn_deg");
        assert_eq!(key(StepMotionConfig { min_speed_mps: 0.5, ..c.clone() }), "steps.min_speed_mps");
        assert_eq!(key(StepMotionConfig { timeout_s: f64::NAN, ..c.clone() }), "steps.timeout_s");
        assert_eq!(key(StepMotionConfig { control_hz: 1.0, ..c }), "steps.control_hz");
        let err = serde_json::from_str::<StepMotionConfig>(r#"{"forward": 0.3}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
    }
}
