//! Motion: no tunnelling, collisions, dead reckoning, velocity and move-to.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use nav_core::action::{Action, DeadReckoning};
use nav_core::geometry::{Point2, Pose2, angle_diff_abs};
use nav_core::time::Clock;
use nav_hal::arena::Arena;
use nav_hal::hal::VelocityCommand;
use nav_hal::sim::{NoiseConfig, OdometryFrame, SimConfig, SimWorld};
use proptest::prelude::*;

const R: f64 = 0.18;

fn world(name: &str) -> SimWorld {
    SimWorld::builtin(name, SimConfig::default()).unwrap()
}

fn empty_arena(half: f64) -> Arena {
    Arena::from_json_str(&format!(
        r#"{{"name": "empty", "bounds": [-{half}, -{half}, {half}, {half}], "start": {{"x": 0.0, "y": 0.0}}}}"#
    ))
    .unwrap()
}

#[test]
fn forward_into_a_wall_stops_at_contact_and_counts_once() {
    // dead_end: the robot faces north toward the top bounds wall at y = 2.5.
    let mut w = world("dead_end");
    let mut collided = 0;
    for _ in 0..10 {
        let out = w.act(Action::Forward);
        if out.collided {
            collided += 1;
        }
    }
    let p = w.ground_truth_pose();
    assert!((2.5 - p.y - R).abs() < 1e-3, "stopped at y = {}", p.y);
    assert!(w.clearance(p.position()) >= R);
    assert_eq!(w.collisions(), collided);
    assert!(collided >= 4, "pushing into the wall keeps colliding");
    // The 0.25 m steps from y = 1.0: 1.25, 1.5, 1.75, 2.0, 2.25 is blocked at 2.32.
    assert!((w.path_length_m() - (2.32 - 1.0)).abs() < 1e-3);
}

#[test]
fn fast_velocity_command_does_not_tunnel() {
    // Face the thin wall at x = 0 and cover 10 m in one substep.
    let cfg = SimConfig { max_linear_mps: 100.0, substep_s: 1.0, ..SimConfig::default() };
    let mut w2 = SimWorld::new(Arena::builtin("dead_end").unwrap(), cfg).unwrap();
    w2.teleport(Pose2::new(-1.0, 1.0, 0.0)).unwrap();
    let out = w2.drive(VelocityCommand { linear: 50.0, angular: 0.0, duration_s: 0.2 }).unwrap();
    assert!(out.collided && out.stopped_early);
    let p = w2.ground_truth_pose();
    assert!(p.x < 0.0 && (p.x + R).abs() < 1e-3, "x = {}", p.x);
    assert_eq!(w2.collisions(), 1);
}

#[test]
fn noise_free_dead_reckoning_is_exact_without_collisions() {
    let mut w = SimWorld::new(empty_arena(50.0), SimConfig::default()).unwrap();
    let mut dr = DeadReckoning::with_pose(Default::default(), w.start_pose());
    let actions = [Action::Forward, Action::TurnLeft, Action::Forward, Action::Forward, Action::TurnRight];
    for (i, a) in actions.iter().cycle().take(200).enumerate() {
        let out = w.act(*a);
        assert!(!out.collided);
        let expect = dr.apply(*a);
        assert_eq!(w.ground_truth_pose(), expect, "step {i}");
        assert_eq!(w.odometry().pose, expect);
        assert_eq!(out.pose, Some(expect));
    }
    assert!(w.odometry().ground_truth);
}

#[test]
fn start_frame_odometry_begins_at_the_origin() {
    let cfg = SimConfig { odometry_frame: OdometryFrame::Start, ..SimConfig::default() };
    let mut w = SimWorld::builtin("simple", cfg).unwrap();
    assert_eq!(w.odometry().pose, Pose2::origin());
    let mut dr = DeadReckoning::default();
    for a in [Action::Forward, Action::TurnLeft, Action::Forward] {
        w.act(a);
        dr.apply(a);
    }
    let (o, e) = (w.odometry().pose, dr.pose());
    assert!(o.distance(e) < 1e-9 && angle_diff_abs(o.yaw, e.yaw) < 1e-9, "{o:?} vs {e:?}");
    // move_to takes targets in the same frame: back to the origin.
    w.move_to(Point2::new(0.0, 0.0)).unwrap();
    assert!(w.ground_truth_pose().position().distance(w.start_pose().position()) <= 0.06);
}

#[test]
fn odometry_noise_drifts_but_truth_does_not() {
    let cfg = SimConfig {
        noise: NoiseConfig { seed: 3, odom_linear_frac: 0.1, odom_angular_frac: 0.1, range_std_m: 0.0 },
        ..SimConfig::default()
    };
    let mut w = SimWorld::new(empty_arena(50.0), cfg.clone()).unwrap();
    let mut dr = DeadReckoning::with_pose(Default::default(), w.start_pose());
    for a in [Action::Forward, Action::TurnLeft].iter().cycle().take(40) {
        w.act(*a);
        dr.apply(*a);
    }
    assert_eq!(w.ground_truth_pose(), dr.pose());
    assert!(w.odometry().pose.distance(dr.pose()) > 1e-3);
    assert!(!w.odometry().ground_truth && !w.capabilities().pose_is_ground_truth);
    // Same seed, same drift.
    let mut w2 = SimWorld::new(empty_arena(50.0), cfg).unwrap();
    for a in [Action::Forward, Action::TurnLeft].iter().cycle().take(40) {
        w2.act(*a);
    }
    assert_eq!(w.odometry().pose, w2.odometry().pose);
}

#[test]
fn clock_advances_with_actions_and_commands() {
    let mut w = world("simple");
    let clock = w.clock();
    w.act(Action::TurnLeft);
    assert_eq!(clock.now_s(), 1.0);
    w.act(Action::Stop);
    assert_eq!(clock.now_s(), 1.0);
    w.drive(VelocityCommand { linear: 0.0, angular: 0.5, duration_s: 2.0 }).unwrap();
    assert!((clock.now_s() - 3.0).abs() < 1e-9);
    assert!((w.odometry().stamp_s - 3.0).abs() < 1e-9);
}

#[test]
fn unicycle_arc_and_ackermann_limits() {
    let mut w = SimWorld::new(empty_arena(20.0), SimConfig::default()).unwrap();
    // Quarter circle of radius 1 m: v = 0.25, ω = 0.25 for 2π s.
    let out = w.drive(VelocityCommand { linear: 0.25, angular: 0.25, duration_s: std::f64::consts::TAU }).unwrap();
    let p = w.ground_truth_pose();
    assert!(!out.collided);
    assert!((p.x - 1.0).abs() < 1e-6 && (p.y - 1.0).abs() < 1e-6, "{p:?}");
    assert!((out.distance_m - std::f64::consts::FRAC_PI_2).abs() < 1e-3);

    let mut car = SimWorld::new(empty_arena(20.0), SimConfig::default().ackermann(0.3)).unwrap();
    // A car cannot turn in place.
    car.drive(VelocityCommand { linear: 0.0, angular: 1.0, duration_s: 1.0 }).unwrap();
    assert_eq!(car.ground_truth_pose(), Pose2::origin());
    // And turns no tighter than 0.3 m: heading change ≤ distance / 0.3.
    let out = car.drive(VelocityCommand { linear: 0.2, angular: 1.5, duration_s: 1.0 }).unwrap();
    let yaw = car.ground_truth_pose().yaw;
    assert!(yaw <= out.distance_m / 0.3 + 1e-5 && yaw > 0.6, "yaw {yaw}");
}

#[test]
fn move_to_reaches_waypoints_and_stops_at_walls() {
    let mut w = world("simple");
    let out = w.move_to(Point2::new(-1.5, 0.5)).unwrap();
    assert!(!out.collided && !out.stopped_early);
    assert!(w.ground_truth_pose().position().distance(Point2::new(-1.5, 0.5)) <= 0.05 + 1e-9);
    assert!((out.distance_m - 2.0).abs() < 0.06);
    // A target beyond a wall: blocked, one collision.
    let mut d = world("dead_end");
    let out = d.move_to(Point2::new(1.5, 1.0)).unwrap();
    assert!(out.collided && out.stopped_early);
    assert_eq!(d.collisions(), 1);
    // Ackermann drive reaches a target ahead on an arc.
    let mut car = SimWorld::new(empty_arena(20.0), SimConfig::default().ackermann(0.3)).unwrap();
    let out = car.move_to(Point2::new(2.0, 1.0)).unwrap();
    assert!(!out.stopped_early, "{out:?}");
    assert!(car.ground_truth_pose().position().distance(Point2::new(2.0, 1.0)) <= 0.05 + 1e-9);
}

#[test]
fn bad_commands_are_rejected() {
    let mut w = world("simple");
    assert!(w.drive(VelocityCommand { linear: f64::NAN, angular: 0.0, duration_s: 1.0 }).is_err());
    assert!(w.drive(VelocityCommand { linear: 0.1, angular: 0.0, duration_s: -1.0 }).is_err());
    assert!(w.move_to(Point2::new(f64::INFINITY, 0.0)).is_err());
    assert!(w.teleport(Pose2::new(-0.5, -0.5, 0.0)).is_err());
    assert!(w.panorama(0).is_err());
    let bad = SimConfig { robot_radius_m: -1.0, ..SimConfig::default() };
    let err = SimWorld::builtin("simple", bad).unwrap_err();
    assert!(err.to_string().contains("robot_radius_m"), "{err}");
    // A robot too wide for the arena's start is refused with the arena error.
    let wide = SimConfig { robot_radius_m: 1.0, ..SimConfig::default() };
    let err = SimWorld::builtin("narrow_corridor", wide).unwrap_err();
    assert!(err.to_string().contains("start"), "{err}");
}

#[test]
fn reset_restores_the_start() {
    let mut w = world("dead_end");
    for _ in 0..8 {
        w.act(Action::Forward);
    }
    w.scan();
    assert!(w.collisions() > 0 && w.coverage() > 0.0);
    w.reset();
    assert_eq!(w.ground_truth_pose(), w.start_pose());
    assert_eq!((w.collisions(), w.path_length_m(), w.coverage()), (0, 0.0, 0.0));
    assert_eq!(w.trajectory().len(), 1);
}

#[derive(Debug, Clone)]
enum Cmd {
    Act(Action),
    Drive(f64, f64, f64),
    MoveTo(f64, f64),
}

fn arb_cmd() -> impl Strategy<Value = Cmd> {
    prop_oneof![
        6 => prop::sample::select(vec![Action::Forward, Action::Forward, Action::TurnLeft, Action::TurnRight]).prop_map(Cmd::Act),
        2 => (-2.0f64..2.0, -3.0f64..3.0, 0.0f64..3.0).prop_map(|(v, w, d)| Cmd::Drive(v, w, d)),
        1 => (-3.0f64..14.0, -3.0f64..10.0).prop_map(|(x, y)| Cmd::MoveTo(x, y)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn noise_free_dead_reckoning_matches_ground_truth(
        actions in prop::collection::vec(prop::sample::select(Action::ALL.to_vec()), 1..120),
        yaw_deg in -180.0f64..180.0,
    ) {
        let mut arena = empty_arena(40.0);
        arena.start.yaw_deg = yaw_deg;
        let mut w = SimWorld::new(arena, SimConfig::default()).unwrap();
        let mut dr = DeadReckoning::with_pose(Default::default(), w.start_pose());
        for a in actions {
            prop_assert!(!w.act(a).collided);
            prop_assert_eq!(w.ground_truth_pose(), dr.apply(a));
            prop_assert_eq!(w.odometry().pose, w.ground_truth_pose());
        }
    }

    #[test]
    fn no_command_sequence_enters_geometry(
        arena in prop::sample::select(vec!["simple", "dead_end", "narrow_corridor", "house_a", "house_b"]),
        ackermann in any::<bool>(),
        cmds in prop::collection::vec(arb_cmd(), 1..60),
    ) {
        let mut cfg = SimConfig { max_linear_mps: 3.0, ..SimConfig::default() };
        if ackermann {
            cfg = cfg.ackermann(0.3);
        }
        let mut w = SimWorld::builtin(arena, cfg).unwrap();
        let mut collisions = 0;
        for c in cmds {
            let collided = match c {
                Cmd::Act(a) => w.act(a).collided,
                Cmd::Drive(v, om, d) => w.drive(VelocityCommand { linear: v, angular: om, duration_s: d }).unwrap().collided,
                Cmd::MoveTo(x, y) => w.move_to(Point2::new(x, y)).unwrap().collided,
            };
            collisions += u32::from(collided);
            let p = w.ground_truth_pose();
            prop_assert!(w.clearance(p.position()) >= R - 1e-9, "inside geometry at {:?}", p);
            prop_assert!(w.arena().in_bounds(p.position()));
            for q in w.trajectory() {
                prop_assert!(w.clearance(q.position()) >= R - 1e-9, "trajectory point {:?} inside geometry", q);
            }
        }
        prop_assert_eq!(w.collisions(), collisions);
    }
}
