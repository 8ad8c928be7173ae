//! Discrete actions on the rosbridge robot (issue 14 item 6):
//! `RosbridgeHal::act` as closed-loop motions on odometry under the safety
//! layer's continuous guard, against the rosbridge v2 test peer (the
//! built-in simulator behind a WebSocket, real time). Accuracy is measured
//! on the peer's true pose: turns within ±5° of 30°, forward steps within
//! ±3 cm of 0.25 m, on a differential and on an Ackermann base (0.3 m
//! turning radius, which cannot turn in place); the guard stops a forward
//! into a wall before contact and says why. Run with `--nocapture` for the
//! figures docs/ROSMASTER.md quotes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/rosmaster_process.rs"]
#[allow(dead_code)]
mod rosmaster_process;
#[path = "support/vlm_server.rs"]
mod vlm_server;

use nav_core::action::Action;
use nav_core::drive::DriveKind;
use nav_core::geometry::{Pose2, normalize_angle};
use nav_hal::HalError;
use nav_hal::hal::{Actuators, Sensors};
use nav_hal::rosbridge::testing::RosbridgePeer;
use nav_hal::rosbridge::{RosbridgeConfig, RosbridgeHal};
use nav_hal::sim::{SimConfig, SimWorld};
use nav_planner::navigator::motion_guard::SafetyMotionGuard;
use std::sync::Arc;
use std::time::Duration;
use vlm_server::SilentVlm;

const WAIT: Duration = Duration::from_secs(5);

/// A peer serving the `exploration` arena (open space ahead of the start)
/// and a connected HAL with the safety layer's guard, both with `drive`.
async fn robot(drive: DriveKind) -> (RosbridgePeer, RosbridgeHal) {
    robot_with(drive, |_| {}).await
}

/// As [`robot`], with the HAL's configuration changed by `tune` first.
async fn robot_with(drive: DriveKind, tune: impl FnOnce(&mut RosbridgeConfig)) -> (RosbridgePeer, RosbridgeHal) {
    let sim = SimConfig { drive, ..SimConfig::default() };
    let world = SimWorld::builtin("exploration", sim).unwrap();
    let peer = RosbridgePeer::start(world).await.unwrap();
    let mut config = RosbridgeConfig { drive, ..RosbridgeConfig::new(peer.url()) };
    tune(&mut config);
    let mut hal = RosbridgeHal::connect(config).await.unwrap();
    hal.wait_for_sensors(WAIT).await.unwrap();
    hal.set_motion_guard(Arc::new(SafetyMotionGuard::new(Default::default()).unwrap()));
    (peer, hal)
}

/// Signed yaw change and distance between two true poses.
fn delta(a: Pose2, b: Pose2) -> (f64, f64) {
    (normalize_angle(b.yaw - a.yaw).to_degrees(), a.position().distance(b.position()))
}

/// Runs `action` and returns the true yaw change (°) and displacement (m).
async fn measured(peer: &RosbridgePeer, hal: &mut RosbridgeHal, action: Action) -> (f64, f64) {
    let before = peer.pose();
    let out = hal.act(action).await.unwrap_or_else(|e| panic!("{action:?}: {e}"));
    assert!(out.blocked.is_none() && !out.collided, "{action:?} in open space: {out:?}");
    tokio::time::sleep(Duration::from_millis(100)).await; // whatever the base still coasts
    let after = peer.pose();
    let (yaw, dist) = delta(before, after);
    let reported = out.pose.expect("the pose reached");
    assert!(
        normalize_angle(reported.yaw - after.yaw).abs() < 2f64.to_radians(),
        "the reported yaw {:.1}° is the one reached ({:.1}°)",
        reported.yaw.to_degrees(),
        after.yaw.to_degrees()
    );
    (yaw, dist)
}

async fn check_turns_and_forward(drive: DriveKind, name: &str, max_turn_displacement_m: f64) {
    let (peer, mut hal) = robot(drive).await;
    assert!(hal.capabilities().discrete_actions);
    let mut turn_errors = Vec::new();
    for (action, want) in [(Action::TurnLeft, 30.0), (Action::TurnRight, -30.0)].into_iter().cycle().take(6) {
        let (yaw, dist) = measured(&peer, &mut hal, action).await;
        println!("{name}: {action:?}: turned {yaw:+.2}° (want {want:+.0}°), displaced {:.3} m", dist);
        assert!((yaw - want).abs() <= 5.0, "{name} {action:?}: turned {yaw:.2}°, want {want}° ± 5°");
        assert!(dist <= max_turn_displacement_m, "{name} {action:?}: displaced {dist:.3} m");
        turn_errors.push((yaw - want).abs());
    }
    let mut forward_errors = Vec::new();
    for _ in 0..4 {
        let (yaw, dist) = measured(&peer, &mut hal, Action::Forward).await;
        println!("{name}: forward: {dist:.4} m (want 0.25 m), heading change {yaw:+.2}°");
        assert!((dist - 0.25).abs() <= 0.03, "{name} forward: moved {dist:.3} m, want 0.25 ± 0.03 m");
        forward_errors.push((dist - 0.25).abs());
    }
    let worst = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    println!(
        "{name}: worst turn error {:.2}°, worst forward error {:.1} mm, collisions {}",
        worst(&turn_errors),
        worst(&forward_errors) * 1000.0,
        peer.with_world(|w| w.collisions())
    );
    assert_eq!(peer.with_world(|w| w.collisions()), 0);
    assert!(peer.twists().last().is_some_and(|(_, t)| t.linear.x == 0.0 && t.angular.z == 0.0), "ends stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn differential_base_turns_30_degrees_in_place_and_steps_25_cm() {
    check_turns_and_forward(DriveKind::Differential, "differential", 0.01).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ackermann_base_turns_30_degrees_on_two_arcs_and_steps_25_cm() {
    // forward arc then reverse arc at 0.3 m radius: about 2 cm net displacement
    check_turns_and_forward(DriveKind::Ackermann { min_turn_radius_m: 0.3 }, "ackermann", 0.06).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guard_stops_a_forward_into_a_wall_before_contact() {
    let (peer, mut hal) = robot(DriveKind::Ackermann { min_turn_radius_m: 0.3 }).await;
    // a wall 0.45 m ahead of the LiDAR: one step fits partly, the next none
    peer.place_obstacle_ahead(0.45).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await; // a scan of the new surroundings
    let mut reasons = Vec::new();
    for _ in 0..3 {
        let out = hal.act(Action::Forward).await.unwrap();
        let front = peer.with_world(|w| {
            let s = w.scan().scan;
            (0..s.len()).filter(|&i| s.angle(i).abs() < 0.05).map(|i| s.ranges[i]).fold(f32::INFINITY, f32::min)
        });
        println!(
            "forward toward the wall: moved {:.3} m, wall {front:.3} m ahead, blocked {:?}",
            out.moved_m, out.blocked
        );
        assert!(!out.collided);
        if let Some(why) = out.blocked {
            reasons.push(why);
        }
        assert!(front >= 0.25, "kept clear of the wall: {front:.3} m");
    }
    assert!(!reasons.is_empty(), "the guard stopped at least one step");
    assert!(reasons.iter().all(|r| r.contains("obstacle")), "the reason names the obstacle: {reasons:?}");
    assert_eq!(peer.with_world(|w| w.collisions()), 0, "no contact");
    assert!(peer.twists().last().is_some_and(|(_, t)| t.linear.x == 0.0), "stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_guard_or_with_stale_odometry_no_step_runs_unchecked() {
    // odometry staleness is what is under test: the whole link's 0.1 s quiet limit (which stops the
    // robot too, as a disconnection) could fire first between two scans on a loaded machine
    let (peer, mut hal) = robot_with(DriveKind::Differential, |c| c.link_quiet_s = 1.0).await;
    let config = RosbridgeConfig { drive: DriveKind::Differential, ..RosbridgeConfig::new(peer.url()) };
    let mut bare = RosbridgeHal::connect(config).await.unwrap();
    bare.wait_for_sensors(WAIT).await.unwrap();
    assert!(!bare.capabilities().discrete_actions);
    match bare.act(Action::Forward).await {
        Err(HalError::Unsupported { what }) => assert!(what.contains("motion guard"), "{what}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
    // odometry stops mid-step: the robot is stopped and the error names the topic
    let p = &peer;
    let pause = async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        p.set_odom_paused(true);
    };
    let (result, ()) = tokio::join!(hal.act(Action::Forward), pause);
    match result {
        Err(HalError::Stale { what, .. }) => assert!(what.contains("/odom"), "{what}"),
        other => panic!("expected Stale odometry, got {other:?}"),
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let last = peer.twists().last().map(|(_, t)| *t).unwrap();
    assert!(last.linear.x == 0.0 && last.angular.z == 0.0, "stopped after the failure: {last:?}");
}

/// An objectnav decision that never sees the target (`goal_flag: false`,
/// straight ahead): the scripted model's reply to every request. The
/// perception stage and the scene analyzer cannot parse it and fall back
/// to "not seen" / no place, as with a bad model.
const NEVER_SEEN: &str = r#"{"goal_flag": false, "angle": 0, "discovered_context": {"goal_scene_type": "living room", "why": "open space ahead"}}"#;

/// `nav rosmaster ARGS` to completion (at most `secs`): status, stdout, stderr.
async fn nav_rosmaster(args: &[&str], secs: u64) -> (std::process::ExitStatus, String, String) {
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_nav"))
        .arg("rosmaster")
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(secs), child).await.expect("nav exits in time").unwrap();
    (out.status, String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objectnav_without_a_model_or_in_a_dry_run_is_refused_with_the_reason() {
    let base = ["--url", "ws://127.0.0.1:9", "--protocol", "objectnav"];
    let (status, _, err) = nav_rosmaster(&[&base[..], &["--target", "chair"]].concat(), 30).await;
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("needs --planner vlm") && err.contains("no object detector"), "{err}");
    let (status, _, err) = nav_rosmaster(&base, 30).await;
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("needs --target"), "{err}");
    let vlm = ["--planner", "vlm", "--vlm", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"];
    let (status, _, err) =
        nav_rosmaster(&[&base[..], &["--target", "chair", "--dry-run"], &vlm[..]].concat(), 30).await;
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("cannot --dry-run"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objectnav_runs_the_loop_on_the_robot_with_panoramas_and_guarded_steps() {
    let world = SimWorld::builtin("exploration", SimConfig::default().ackermann(0.3)).unwrap();
    let peer = RosbridgePeer::start(world).await.unwrap();
    let model = SilentVlm::start_text(usize::MAX, NEVER_SEEN).await;
    let base_url = model.base_url();
    let start = peer.pose();
    let url = peer.url();
    let args = [
        "--url",
        &url,
        "--protocol",
        "objectnav",
        "--target",
        "chair",
        "--max-steps",
        "4",
        "--planner",
        "vlm",
        "--vlm",
        "openai",
        "--base-url",
        &base_url,
        "--model",
        "test-model",
    ];
    let (status, out, err) = nav_rosmaster(&args, 240).await;
    println!("{err}\n{out}");
    assert_eq!(status.code(), Some(0), "stderr:\n{err}");
    // a model that never sees the target never ends the episode: the step budget does
    assert!(out.contains("objectnav ended (step_limit)") && out.contains("4 steps"), "{out}");
    let twists = peer.twists();
    assert!(twists.iter().any(|(_, t)| t.linear.x < -0.01), "Ackermann turns reverse on their second arc");
    assert!(twists.iter().any(|(_, t)| t.linear.x > 0.01 && t.angular.z.abs() < 0.05), "forward steps");
    assert!(twists.last().is_some_and(|(_, t)| t.linear.x == 0.0 && t.angular.z == 0.0), "ends stopped");
    assert_eq!(peer.with_world(|w| w.collisions()), 0);
    println!("moved {:.2} m from the start", start.position().distance(peer.pose().position()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ackermann_turn_with_a_wall_ahead_turns_in_reverse() {
    let (peer, mut hal) = robot(DriveKind::Ackermann { min_turn_radius_m: 0.3 }).await;
    // 0.32 m to the wall: the forward arc is refused at once, the reverse arc has room
    peer.place_obstacle_ahead(0.32).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = peer.pose();
    let out = hal.act(Action::TurnLeft).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (yaw, dist) = delta(before, peer.pose());
    println!("turn with a wall ahead: turned {yaw:+.2}°, displaced {dist:.3} m, blocked {:?}", out.blocked);
    assert!(out.blocked.is_none(), "{out:?}");
    assert!((yaw - 30.0).abs() <= 5.0, "turned {yaw:.2}°");
    assert_eq!(peer.with_world(|w| w.collisions()), 0);
    assert!(peer.twists().iter().any(|(_, t)| t.linear.x < -0.01), "reversed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objectnav_pauses_on_voice_and_go_home_without_nav2_stops_where_it_is() {
    let world = SimWorld::builtin("exploration", SimConfig::default()).unwrap();
    let peer = RosbridgePeer::start(world).await.unwrap();
    let model = SilentVlm::start_text(usize::MAX, NEVER_SEEN).await;
    let base_url = model.base_url();
    let args = [
        "--protocol",
        "objectnav",
        "--target",
        "chair",
        "--max-steps",
        "200",
        "--planner",
        "vlm",
        "--vlm",
        "openai",
        "--base-url",
        &base_url,
        "--model",
        "test-model",
    ];
    let nav = rosmaster_process::Nav::start_logged(&peer.url(), "", &args);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !(peer.has_subscriber("/navkit/voice_command") && nav.stderr().contains("objectnav: looking for")) {
        assert!(std::time::Instant::now() < deadline, "objectnav starts; stderr:\n{}", nav.stderr());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    peer.publish_voice_command("pause");
    tokio::time::sleep(Duration::from_secs(1)).await;
    peer.publish_voice_command("go home");
    let (status, err, events) = nav.finish_logged(120.0).await;
    assert_eq!(status.code(), Some(0), "stderr:\n{err}");
    assert!(err.contains("voice on /navkit/voice_command: pause"), "stderr:\n{err}");
    assert!(err.contains("no way back without Nav2"), "stderr:\n{err}");
    let voice: Vec<&str> =
        events.iter().filter(|e| e["event"] == "voice").filter_map(|e| e["command"].as_str()).collect();
    assert!(voice.contains(&"go_home"), "{events:?}");
    let said = peer.announcements();
    for expected in
        ["Pausing after this step.", "Going home.", "I cannot find the way home without a map. Stopped here."]
    {
        assert!(said.iter().any(|s| s == expected), "{expected:?} on /navkit/say: {said:?}");
    }
    assert!(peer.twists().last().is_some_and(|(_, t)| t.linear.x == 0.0 && t.angular.z == 0.0), "ends stopped");
}
