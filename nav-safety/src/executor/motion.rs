//! Translation of `move_toward` and `rotate` into velocity targets.
//!
//! `move_toward` uses this direction table — forward (v, 0),
//! forward_left (v, +0.25), left (0.06, +0.45), forward_right (v, −0.25),
//! right (0.06, −0.45), backward (−v, 0) — where `left`/`right` always run
//! at 0.06 m/s whatever the speed argument. Pre-validation checks the
//! direction's ±30° arc: below 0.5 m the call is refused, below 1.0 m the
//! speed tier is downgraded to slow.
//!
//! On an Ackermann base |ω| cannot exceed |v| / R (R = 0.3 m): the table's
//! sharp `left`/`right` (0.45 rad/s at 0.06 m/s) become the tightest
//! possible arc, 0.2 rad/s. `rotate` becomes an arc at the minimum forward
//! speed (0.06 m/s) on the tightest radius for the time that turns the
//! requested angle — forward when there is room ahead, in reverse (with
//! opposite steering) when only the back is free, refused when neither has
//! the 0.5 m the arc needs. A differential base spins in place.

use super::{ExecutionOutcome, SafetyExecutor, SafetySensors, Target, refuse};
use crate::blocked::BlockedActionMemory;
use crate::guard::{Override, OverrideKind, VelocityTarget, blind_in_arc};
use crate::tools::{DEFAULT_DURATION_S, DURATION_RANGE_S, RotateDegrees, Speed};
use nav_core::drive::DriveKind;
use nav_core::lidar::{ArcStat, Direction, arc_distance};
use serde_json::{Value, json};

/// Refuses and records the action in the blocked-action memory.
fn block(
    blocked: &mut BlockedActionMemory,
    out: ExecutionOutcome,
    now_s: f64,
    code: &str,
    msg: String,
) -> ExecutionOutcome {
    if let Some(k) = &out.key {
        blocked.record_blocked(k, now_s);
    }
    refuse(out, code, msg, true)
}

fn fmt_dist(d: f64) -> String {
    if d.is_finite() { format!("{d:.2}m") } else { "nothing".to_owned() }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

pub(super) fn move_toward(
    ex: &mut SafetyExecutor,
    mut out: ExecutionOutcome,
    sensors: &SafetySensors<'_>,
    direction: Direction,
    speed: Speed,
    duration_s: f64,
) -> ExecutionOutcome {
    let cfg = &ex.config;
    let cl = &cfg.clearance;
    let sp = &cfg.speeds;
    let half = cl.arc_half_width_deg.to_radians();
    let (center, _) = direction.arc();
    let dir = direction.as_str();
    let now = sensors.now_s;
    if let Some(why) = blind_in_arc(sensors.scan, center, half, cl, &format!("in the {dir} direction")) {
        let msg = format!("Command rejected before execution: {why}.");
        return block(&mut ex.blocked, out, now, &format!("no_lidar_readings_{dir}"), msg);
    }
    let clearance = f64::from(arc_distance(sensors.scan, center, half, ArcStat::Min));
    if clearance < cl.reject_m {
        let msg = format!(
            "Command rejected before execution: obstacle {clearance:.2}m away in the {dir} direction (minimum {}m). \
             Consider turning or choosing a different direction.",
            cl.reject_m
        );
        return block(&mut ex.blocked, out, now, &format!("obstacle_at_{clearance:.1}m_{dir}"), msg);
    }
    let sideways = matches!(direction, Direction::Left | Direction::Right);
    let mut used = speed;
    if !sideways && clearance < cl.full_speed_m && speed != Speed::Slow {
        used = Speed::Slow;
        let reason =
            format!("Speed reduced from {speed} to slow: obstacle {clearance:.2}m away in the {dir} direction.");
        out.feedback.safety_override = true;
        out.feedback.add_message(&reason);
        out.adjustments.push(Override {
            kind: OverrideKind::SpeedDowngrade,
            from: speed.mps(sp),
            to: used.mps(sp),
            code: "speed_downgraded".into(),
            reason,
        });
    }
    let v = used.mps(sp);
    let (linear, angular) = match direction {
        Direction::Forward => (v, 0.0),
        Direction::ForwardLeft => (v, sp.diagonal_angular_rad_s),
        Direction::Left => (sp.side_linear_mps, sp.side_angular_rad_s),
        Direction::ForwardRight => (v, -sp.diagonal_angular_rad_s),
        Direction::Right => (sp.side_linear_mps, -sp.side_angular_rad_s),
        Direction::Backward => (-v, 0.0),
    };
    let duration = if duration_s.is_finite() {
        duration_s.clamp(DURATION_RANGE_S.0, DURATION_RANGE_S.1)
    } else {
        DEFAULT_DURATION_S
    };
    let executed = json!({"tool": "move_toward", "direction": dir, "speed": used.as_str(), "duration_s": duration});
    finalize(ex, out, sensors, VelocityTarget { linear, angular, duration_s: duration }, executed, None)
}

pub(super) fn rotate(
    ex: &mut SafetyExecutor,
    out: ExecutionOutcome,
    sensors: &SafetySensors<'_>,
    degrees: RotateDegrees,
) -> ExecutionOutcome {
    let cfg = &ex.config;
    let sp = &cfg.speeds;
    let turn = degrees.yaw_change_rad();
    let sign = turn.signum();
    let base = json!({"tool": "rotate", "degrees": degrees.degrees()});
    match cfg.drive {
        DriveKind::Differential => {
            let w = sp.spin_rad_s.min(sp.max_angular_rad_s);
            let target = VelocityTarget { linear: 0.0, angular: sign * w, duration_s: turn.abs() / w };
            let mut executed = base;
            executed["mode"] = "in_place".into();
            finalize(ex, out, sensors, target, executed, Some(turn))
        }
        DriveKind::Ackermann { min_turn_radius_m } => {
            let v = sp.turn_linear_mps.min(sp.max_linear_mps);
            let radius = min_turn_radius_m.max(v / sp.max_angular_rad_s);
            let w = sign * v / radius;
            let duration = turn.abs() / w.abs();
            let mut room = Vec::with_capacity(2);
            for (linear, mode) in [(v, "forward_arc"), (-v, "reverse_arc")] {
                let Some((c, h)) = ex.guard.motion_arc(linear, w) else { continue };
                let d = f64::from(arc_distance(sensors.scan, c, h, ArcStat::Min));
                room.push(d);
                let sees = blind_in_arc(sensors.scan, c, h, &cfg.clearance, mode).is_none();
                let fenced = ex.geofence.sweep(sensors.pose, linear, w, duration).keepout.is_some();
                if sees && d >= cfg.clearance.reject_m && !fenced {
                    let mut executed = base;
                    executed["mode"] = mode.into();
                    let target = VelocityTarget { linear, angular: w, duration_s: duration };
                    return finalize(ex, out, sensors, target, executed, Some(turn));
                }
            }
            let (ahead, behind) = (room.first().copied().unwrap_or(0.0), room.get(1).copied().unwrap_or(0.0));
            let msg = format!(
                "Command rejected before execution: not enough room for an arc turn (obstacle {} ahead, {} behind, \
                 keepout zones considered; a turn needs {}m). Move to a more open spot first.",
                fmt_dist(ahead),
                fmt_dist(behind),
                cfg.clearance.reject_m
            );
            block(&mut ex.blocked, out, sensors.now_s, "no_room_to_turn", msg)
        }
    }
}

/// Kinematics, geofence, speed limit; then the target and the executed
/// command. `turn` is the heading change of a rotation, whose duration is
/// recomputed when the speed is limited.
fn finalize(
    ex: &mut SafetyExecutor,
    mut out: ExecutionOutcome,
    sensors: &SafetySensors<'_>,
    mut t: VelocityTarget,
    mut executed: Value,
    turn: Option<f64>,
) -> ExecutionOutcome {
    let now = sensors.now_s;
    if let DriveKind::Ackermann { min_turn_radius_m } = ex.config.drive {
        let max_w = ex.config.drive.max_yaw_rate(t.linear);
        if t.angular.abs() > max_w && t.linear != 0.0 {
            let to = max_w.copysign(t.angular);
            out.adjustments.push(Override {
                kind: OverrideKind::Kinematics,
                from: t.angular,
                to,
                code: "steering_limit".into(),
                reason: format!(
                    "Turn rate limited to {to:.2} rad/s by the {min_turn_radius_m}m minimum turning radius."
                ),
            });
            t.angular = to;
        }
    }
    let sweep = ex.geofence.sweep(sensors.pose, t.linear, t.angular, t.duration_s);
    if let Some(zone) = sweep.keepout {
        let after = sweep.enters_after_s.unwrap_or(0.0);
        let msg =
            format!("Command rejected before execution: the path enters keepout zone '{zone}' after {after:.1} s.");
        return block(&mut ex.blocked, out, now, "geofence_violation", msg);
    }
    if let Some((cap, zone)) = sweep.speed_cap {
        if t.linear.abs() > cap && t.linear != 0.0 {
            let k = cap / t.linear.abs();
            let reason = format!("Speed limited to {cap:.2} m/s in slowdown zone '{zone}'.");
            out.adjustments.push(Override {
                kind: OverrideKind::GeofenceSlowdown,
                from: t.linear,
                to: t.linear * k,
                code: "geofence_slowdown".into(),
                reason: reason.clone(),
            });
            out.feedback.safety_override = true;
            out.feedback.add_message(&reason);
            t.linear *= k;
            t.angular *= k;
        }
    }
    let g = ex.guard.guard(&t, sensors.scan, sensors.scan_age_s());
    if let Some(stop) = g.stop() {
        let why = stop.reason.strip_prefix("Movement stopped: ").unwrap_or(&stop.reason);
        let msg = format!("Command rejected before execution: {why}");
        let code = stop.code.clone();
        return block(&mut ex.blocked, out, now, &code, msg);
    }
    for o in g.overrides {
        out.feedback.safety_override = true;
        out.feedback.add_message(&o.reason);
        out.adjustments.push(o);
    }
    t.linear = g.linear;
    t.angular = g.angular;
    if let Some(turn) = turn {
        if t.angular != 0.0 {
            t.duration_s = turn.abs() / t.angular.abs();
        }
    }
    executed["duration_s"] = round3(t.duration_s).into();
    executed["linear_mps"] = round3(t.linear).into();
    executed["angular_rad_s"] = round3(t.angular).into();
    out.feedback.executed_command = Some(executed);
    out.target = Target::Velocity(t);
    out
}
