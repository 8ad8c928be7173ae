use super::*;
use crate::geofence::ZoneKind;
use crate::guard::OverrideKind;
use crate::tools::{RotateDegrees, Speed, StopReason};
use nav_core::drive::DriveKind;
use nav_core::lidar::{ArcStat, Direction, arc_distance};
use proptest::prelude::*;
use serde_json::json;
use std::f64::consts::{FRAC_PI_2, PI};

/// 360 beams, one per degree, beam `i` at `-180° + i`.
fn ring() -> LaserScan {
    LaserScan::full_circle(360, 0.05, 12.0, f32::INFINITY)
}

/// Sets the beams from `from` to `to` degrees (CCW, inclusive) to `d`.
fn wall(mut s: LaserScan, from: i32, to: i32, d: f32) -> LaserScan {
    for deg in from..=to {
        s.ranges[(180 + deg).rem_euclid(360) as usize] = d;
    }
    s
}

/// The ROSMASTER A1's executor: Ackermann steering with a 0.3 m turning radius.
fn executor() -> SafetyExecutor {
    SafetyExecutor::new(SafetyConfig { drive: ACKERMANN, ..SafetyConfig::default() }).unwrap()
}

const ACKERMANN: DriveKind = DriveKind::Ackermann { min_turn_radius_m: 0.3 };

fn call(name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::parse(name, &args).unwrap()
}

fn velocity(o: &ExecutionOutcome) -> VelocityTarget {
    match &o.target {
        Target::Velocity(v) => *v,
        other => panic!("expected a velocity target, got {other:?}"),
    }
}

#[test]
fn downgrades_speed_at_0_8_m_clearance() {
    let scan = wall(ring(), -40, 40, 0.8);
    let mut ex = executor();
    let o = ex.execute(
        &call("move_toward", json!({"direction": "forward", "speed": "medium"})),
        &SafetySensors::new(&scan, 0.0, Pose2::origin(), 0.1),
    );
    let v = velocity(&o);
    assert_eq!((v.linear, v.angular, v.duration_s), (0.08, 0.0, 3.0));
    assert!(o.feedback.success && o.feedback.safety_override);
    assert_eq!(o.adjustments[0].kind, OverrideKind::SpeedDowngrade);
    insta::assert_json_snapshot!("downgrade_feedback", o.feedback);
    // At 1.0 m or more: unchanged.
    let scan = wall(ring(), -40, 40, 1.0);
    let o = ex.execute(
        &call("move_toward", json!({"direction": "forward", "speed": "fast"})),
        &SafetySensors::new(&scan, 0.0, Pose2::origin(), 0.1),
    );
    assert_eq!(velocity(&o).linear, 0.18);
    assert!(!o.feedback.safety_override);
}

#[test]
fn rejects_then_suppresses_a_blocked_direction() {
    let scan = wall(ring(), -40, 40, 0.4);
    let mut ex = executor();
    let fwd = call("move_toward", json!({"direction": "forward", "speed": "slow"}));
    let at = |t: f64| SafetySensors::new(&scan, t, Pose2::origin(), t);
    let o1 = ex.execute(&fwd, &at(0.0));
    assert!(o1.is_refused());
    assert_eq!(o1.feedback.stopped_reason.as_deref(), Some("obstacle_at_0.4m_forward"));
    assert_eq!(o1.target, Target::Stop(StopTarget { reason: "obstacle_at_0.4m_forward".into() }));
    insta::assert_json_snapshot!("rejected_feedback", o1.feedback);
    // A different speed is the same action.
    let fast = call("move_toward", json!({"direction": "forward", "speed": "fast"}));
    let o2 = ex.execute(&fast, &at(3.0));
    assert!(o2.is_refused());
    let o3 = ex.execute(&fwd, &at(6.0));
    assert_eq!(o3.feedback.stopped_reason.as_deref(), Some("action_suppressed"));
    insta::assert_json_snapshot!("suppressed_feedback", o3.feedback);
    // Another direction is fine; after the cooldown the direction is tried again.
    let left = call("move_toward", json!({"direction": "backward", "speed": "slow"}));
    assert!(matches!(ex.execute(&left, &at(7.0)).target, Target::Velocity(_)));
    let o4 = ex.execute(&fwd, &at(18.5));
    assert_eq!(o4.feedback.stopped_reason.as_deref(), Some("obstacle_at_0.4m_forward"), "retried after the cooldown");
}

#[test]
fn direction_table_and_ackermann_limits() {
    let scan = ring();
    let s = SafetySensors::new(&scan, 0.0, Pose2::origin(), 0.0);
    let mut ex = executor();
    let mut go = |d: &str, sp: &str| {
        velocity(&ex.execute(&call("move_toward", json!({"direction": d, "speed": sp, "duration_s": 2})), &s))
    };
    let fl = go("forward_left", "fast");
    assert_eq!((fl.linear, fl.angular), (0.18, 0.25));
    let fr = go("forward_right", "medium");
    assert_eq!((fr.linear, fr.angular), (0.12, -0.25));
    let b = go("backward", "slow");
    assert_eq!((b.linear, b.angular), (-0.08, 0.0));
    // left: (0.06, +0.45) limited to 0.06 / 0.3 = 0.2 rad/s.
    let l = go("left", "fast");
    assert!((l.linear - 0.06).abs() < 1e-12 && (l.angular - 0.2).abs() < 1e-12, "{l:?}");
    let r = go("right", "slow");
    assert!((r.angular + 0.2).abs() < 1e-12);
    // A differential base keeps the table's rates.
    let mut diff =
        SafetyExecutor::new(SafetyConfig { drive: DriveKind::Differential, ..SafetyConfig::default() }).unwrap();
    let l = velocity(&diff.execute(&call("move_toward", json!({"direction": "left", "speed": "slow"})), &s));
    assert_eq!((l.linear, l.angular), (0.06, 0.45));
}

#[test]
fn rotate_is_an_arc_on_ackermann() {
    let mut ex = executor();
    let left90 = ToolCall::Rotate { degrees: RotateDegrees::new(-90).unwrap() };
    let open = ring();
    let o = ex.execute(&left90, &SafetySensors::new(&open, 0.0, Pose2::origin(), 0.0));
    let v = velocity(&o);
    // Negative degrees turn left: counter-clockwise, ω > 0; forward arc of radius 0.3 m.
    assert!((v.linear - 0.06).abs() < 1e-12 && (v.angular - 0.2).abs() < 1e-12, "{v:?}");
    assert!((v.duration_s - FRAC_PI_2 / 0.2).abs() < 1e-9);
    assert_eq!(o.feedback.executed_command.as_ref().unwrap()["mode"], "forward_arc");
    // A wall ahead: reverse arc, still turning left.
    let blocked_front = wall(ring(), -60, 60, 0.35);
    let o = ex.execute(
        &ToolCall::Rotate { degrees: RotateDegrees::new(135).unwrap() },
        &SafetySensors::new(&blocked_front, 0.0, Pose2::origin(), 0.0),
    );
    let v = velocity(&o);
    assert!(v.linear < 0.0 && v.angular < 0.0, "right turn in reverse: {v:?}");
    assert!((v.angular * v.duration_s + 135f64.to_radians()).abs() < 1e-9);
    // Boxed in: refused and remembered.
    let boxed = wall(ring(), -180, 180, 0.4);
    let o = ex.execute(&left90, &SafetySensors::new(&boxed, 1.0, Pose2::origin(), 1.0));
    assert_eq!(o.feedback.stopped_reason.as_deref(), Some("no_room_to_turn"));
    assert!(
        o.feedback.safety_message.as_ref().unwrap().contains("obstacle 0.40m ahead, 0.40m behind"),
        "{:?}",
        o.feedback
    );
    assert_eq!(ex.blocked_mut().count(&ActionKey::new("rotate", "-90"), 1.0), 1);
    // Differential: spin in place even when boxed in.
    let mut diff =
        SafetyExecutor::new(SafetyConfig { drive: DriveKind::Differential, ..SafetyConfig::default() }).unwrap();
    let v = velocity(&diff.execute(
        &ToolCall::Rotate { degrees: RotateDegrees::new(180).unwrap() },
        &SafetySensors::new(&boxed, 0.0, Pose2::origin(), 0.0),
    ));
    assert_eq!((v.linear, v.angular), (0.0, -0.5));
    assert!((v.duration_s - PI / 0.5).abs() < 1e-9);
}

#[test]
fn stale_or_missing_lidar_refuses_motion() {
    let scan = ring();
    let mut ex = executor();
    let o = ex.execute(
        &call("move_toward", json!({"direction": "forward", "speed": "slow"})),
        &SafetySensors::new(&scan, 0.0, Pose2::origin(), 6.0),
    );
    assert_eq!(o.feedback.stopped_reason.as_deref(), Some("sensor_loss"));
    assert_eq!(
        o.feedback.safety_message.as_deref(),
        Some("Command rejected before execution: no LiDAR scan for 6.0 s (sensor loss).")
    );
    assert_eq!(ex.blocked_mut().count(&ActionKey::new("move_toward", "forward"), 6.0), 0, "not the direction's fault");
    let o = ex.execute(
        &call("stop_robot", json!({"reason": "uncertain"})),
        &SafetySensors::new(&scan, 0.0, Pose2::origin(), 6.0),
    );
    assert!(o.feedback.success);
    let nan = wall(ring(), -180, 180, f32::NAN);
    let o = ex.execute(
        &call("move_toward", json!({"direction": "left", "speed": "slow"})),
        &SafetySensors::new(&nan, 0.0, Pose2::origin(), 0.0),
    );
    assert_eq!(o.feedback.stopped_reason.as_deref(), Some("no_lidar_readings_left"));
}

#[test]
fn navigation_goals() {
    let scan = ring();
    let mut ex = executor();
    let square = vec![Point2::new(2.0, 2.0), Point2::new(3.0, 2.0), Point2::new(3.0, 3.0), Point2::new(2.0, 3.0)];
    ex.geofence_mut().add_zone("bathroom", ZoneKind::Keepout, square).unwrap();
    let frontiers = [
        FrontierGoal { id: 1, position: Point2::new(4.0, 0.5) },
        FrontierGoal { id: 3, position: Point2::new(2.5, 2.5) },
    ];
    let s = SafetySensors::new(&scan, 0.0, Pose2::origin(), 0.0).with_frontiers(&frontiers);
    let o =
        ex.execute(&call("navigate_to_goal", json!({"goal_type": "frontier", "frontier_id": 1, "reason": "big"})), &s);
    assert_eq!(
        o.target,
        Target::NavGoal(NavGoalTarget { x: 4.0, y: 0.5, goal_type: GoalType::Frontier, frontier_id: Some(1) })
    );
    let o =
        ex.execute(&call("navigate_to_goal", json!({"goal_type": "frontier", "frontier_id": 3, "reason": "r"})), &s);
    assert_eq!(o.feedback.stopped_reason.as_deref(), Some("geofence_violation"));
    assert_eq!(o.feedback.safety_message.as_deref(), Some("Goal is inside keepout zone 'bathroom'"));
    let o = ex
        .execute(&call("navigate_to_goal", json!({"goal_type": "coordinates", "x": 2.2, "y": 2.9, "reason": "r"})), &s);
    assert!(o.is_refused());
    let o =
        ex.execute(&call("navigate_to_goal", json!({"goal_type": "frontier", "frontier_id": 9, "reason": "r"})), &s);
    assert_eq!(
        o.feedback.safety_message.as_deref(),
        Some("Frontier 9 is not in the current frontier list (known: 1, 3).")
    );
    assert!(!o.feedback.safety_override);
    let o = ex.execute(&call("navigate_to_goal", json!({"goal_type": "retrace", "reason": "back"})), &s);
    assert_eq!(o.feedback.stopped_reason.as_deref(), Some("nothing_to_retrace"));
    let o = ex.execute(
        &call("navigate_to_goal", json!({"goal_type": "retrace", "reason": "back"})),
        &s.with_retrace_goal(Point2::new(-1.0, 0.0)),
    );
    assert!(matches!(o.target, Target::NavGoal(NavGoalTarget { x, .. }) if x == -1.0));
}

#[test]
fn velocity_sweeps_respect_zones() {
    let scan = ring();
    let mut ex = executor();
    let rect = |x0: f64, x1: f64| {
        vec![Point2::new(x0, -1.0), Point2::new(x1, -1.0), Point2::new(x1, 1.0), Point2::new(x0, 1.0)]
    };
    ex.geofence_mut().add_zone("stairs", ZoneKind::Keepout, rect(1.0, 2.0)).unwrap();
    ex.geofence_mut().add_zone("rug", ZoneKind::Slowdown { max_speed_mps: 0.05 }, rect(0.2, 1.0)).unwrap();
    let s = SafetySensors::new(&scan, 0.0, Pose2::origin(), 0.0);
    let o = ex.execute(&call("move_toward", json!({"direction": "forward", "speed": "fast", "duration_s": 8})), &s);
    assert_eq!(o.feedback.stopped_reason.as_deref(), Some("geofence_violation"));
    assert!(o.feedback.safety_message.as_ref().unwrap().contains("keepout zone 'stairs'"));
    let o = ex.execute(&call("move_toward", json!({"direction": "forward", "speed": "fast", "duration_s": 2})), &s);
    assert_eq!(velocity(&o).linear, 0.05);
    assert!(o.feedback.safety_override);
    let o = ex.execute(&call("move_toward", json!({"direction": "backward", "speed": "fast", "duration_s": 8})), &s);
    assert_eq!(velocity(&o).linear, -0.18);
}

#[test]
fn finish_fills_feedback_and_remembers_guard_stops() {
    let scan = ring();
    let mut ex = executor();
    let s = SafetySensors::new(&scan, 0.0, Pose2::origin(), 0.0);
    let mut o = ex.execute(&call("move_toward", json!({"direction": "forward", "speed": "medium"})), &s);
    let mut blocked_scan = wall(ring(), -30, 30, 0.28);
    blocked_scan.range_min = 0.05;
    let g = ex.guard().guard(&velocity(&o), &blocked_scan, 0.0);
    let report = MotionReport {
        distance_m: 0.123,
        duration_s: 0.8,
        final_pose: Some(Pose2::new(0.12, 0.0, 0.0)),
        safety_stop: g.stop().cloned(),
        interrupted: None,
    };
    ex.finish(&mut o, &report, 0.9);
    insta::assert_json_snapshot!("stopped_early_feedback", o.feedback);
    assert_eq!(ex.blocked_mut().count(&ActionKey::new("move_toward", "forward"), 1.0), 1);
    // A clean finish.
    let mut o = ex.execute(&call("rotate", json!({"degrees": 45})), &s);
    ex.finish(
        &mut o,
        &MotionReport {
            distance_m: 0.24,
            duration_s: 3.9,
            final_pose: Some(Pose2::new(0.1, -0.1, -PI / 4.0)),
            ..MotionReport::default()
        },
        4.0,
    );
    assert!(o.feedback.success && !o.feedback.stopped_early);
    assert_eq!(o.feedback.new_position.as_ref().unwrap().heading_deg, 315.0);
    assert_eq!(o.feedback.new_position.as_ref().unwrap().heading_cardinal, "SE");
    // A goal that could not be reached is a failure (a goal at x = 1e9).
    let mut o = ex.execute(&call("rotate", json!({"degrees": 45})), &s);
    let unreachable = MotionReport { interrupted: Some("goal_unreachable".into()), ..MotionReport::default() };
    ex.finish(&mut o, &unreachable, 5.0);
    assert!(!o.feedback.success, "an unreachable goal is no success");
    assert_eq!(o.feedback.stopped_reason.as_deref(), Some("goal_unreachable"));
}

#[test]
fn pass_through_tools() {
    let scan = wall(ring(), -30, 30, 1.5);
    let mut ex = executor();
    let s = SafetySensors::new(&scan, 0.0, Pose2::new(1.0, 2.0, 0.0), 0.0);
    let o = ex.execute(&ToolCall::StopRobot { reason: StopReason::NeedToObserve }, &s);
    assert_eq!(o.target, Target::Stop(StopTarget { reason: "need_to_observe".into() }));
    assert!(!o.is_refused());
    let o = ex.execute(&call("observe_scene", json!({"focus": "doorways"})), &s);
    assert!(matches!(o.target, Target::Observe(_)));
    let o = ex
        .execute(&call("report_discovery", json!({"label": "kitchen", "notes": "fridge", "significance": "room"})), &s);
    assert!(matches!(&o.target, Target::Report(r) if r.position == Point2::new(1.0, 2.0) && r.label == "kitchen"));
    let o = ex.execute(&call("check_path_clear", json!({"direction": "forward", "distance_m": 2.0})), &s);
    let j = o.result_json();
    assert_eq!(j["clear"], false);
    assert_eq!(j["obstacle_distance_m"], 1.5);
    assert_eq!(j["obstacle_type"], "wall");
    assert_eq!(ActionKey::of(&o.call), None);
}

fn arb_call() -> impl Strategy<Value = ToolCall> {
    let dir = proptest::sample::select(Direction::ALL.to_vec());
    prop_oneof![
        4 => (dir.clone(), proptest::sample::select(Speed::ALL.to_vec()), 1.0f64..=8.0)
            .prop_map(|(direction, speed, duration_s)| ToolCall::MoveToward { direction, speed, duration_s }),
        2 => proptest::sample::select(RotateDegrees::ALLOWED.to_vec())
            .prop_map(|d| ToolCall::Rotate { degrees: RotateDegrees::new(d.into()).unwrap() }),
        1 => (-5.0f64..5.0, -5.0f64..5.0).prop_map(|(x, y)| ToolCall::NavigateToGoal { goal: GoalSpec::Coordinates { x, y }, reason: String::new() }),
        1 => (dir, 0.5f64..=5.0).prop_map(|(direction, distance_m)| ToolCall::CheckPathClear { direction, distance_m }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    /// Whatever the VLM asks and whatever the LiDAR shows: a velocity
    /// target never exceeds the caps, never heads into an obstacle nearer
    /// than the stop distance, and a `move_toward` never goes toward a
    /// direction whose clearance is below the reject distance.
    #[test]
    fn executor_targets_are_safe(
        call in arb_call(),
        scan in crate::guard::tests::arb_scan(),
        age in 0.0f64..7.0,
        differential in any::<bool>(),
    ) {
        let config = SafetyConfig {
            drive: if differential { DriveKind::Differential } else { ACKERMANN },
            ..SafetyConfig::default()
        };
        let mut ex = SafetyExecutor::new(config.clone()).unwrap();
        let s = SafetySensors::new(&scan, 0.0, Pose2::origin(), age);
        let o = ex.execute(&call, &s);
        let _ = o.result_json();
        if let Target::Velocity(v) = o.target {
            prop_assert!(o.feedback.success);
            prop_assert!(v.linear.abs() <= config.speeds.max_linear_mps + 1e-12);
            prop_assert!(v.angular.abs() <= config.speeds.max_angular_rad_s + 1e-12);
            prop_assert!(v.duration_s.is_finite() && v.duration_s > 0.0);
            if let DriveKind::Ackermann { min_turn_radius_m } = config.drive {
                prop_assert!(v.angular.abs() <= v.linear.abs() / min_turn_radius_m + 1e-12, "{:?}", v);
            }
            if let Some((c, h)) = ex.guard().motion_arc(v.linear, v.angular) {
                prop_assert!(f64::from(arc_distance(&scan, c, h, ArcStat::Min)) >= config.clearance.stop_m);
            }
            if let ToolCall::MoveToward { direction, .. } = call {
                let (c, _) = direction.arc();
                let d = f64::from(arc_distance(&scan, c, config.clearance.arc_half_width_deg.to_radians(), ArcStat::Min));
                prop_assert!(d >= config.clearance.reject_m);
                if d < config.clearance.full_speed_m {
                    prop_assert!(v.linear.abs() <= config.speeds.slow_mps + 1e-12);
                }
            }
            // The guard would not change it.
            let g = ex.guard().guard(&v, &scan, age);
            prop_assert!(g.stop().is_none());
        }
    }
}
