//! `nav rosmaster` with Nav2 (issue 17 item 4): the real `nav` binary
//! against the rosbridge test peer with its Nav2 emulation. Goals go to
//! Nav2 (found through rosapi) and navkit publishes no motion while Nav2
//! drives; an abort is a failure in the tool result; a safety stop cancels
//! the goal; without Nav2 navkit drives its own path.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/rosmaster_process.rs"]
#[allow(dead_code)]
mod rosmaster_process;
#[path = "support/vlm_server.rs"]
mod vlm_server;

use nav_hal::rosbridge::msg::action_msgs::GoalStatus;
use nav_hal::rosbridge::msg::geometry_msgs::Twist;
use nav_hal::rosbridge::testing::{Nav2GoalRecord, PeerConfig, RosbridgePeer};
use nav_hal::sim::{SimConfig, SimWorld};
use rosmaster_process::Nav;
use serde_json::Value;
use std::time::{Duration, Instant};
use vlm_server::SilentVlm;

/// One control tick plus scheduling slack on a loaded machine, s.
const SLACK_S: f64 = 0.35;

const DEFAULTS: &str = "[rosbridge]\ndepth_enabled = false\n";

/// A peer serving the `exploration` arena with an Ackermann base (0.3 m
/// turning radius), with or without the Nav2 emulation.
async fn peer(nav2: bool) -> RosbridgePeer {
    let world = SimWorld::builtin("exploration", SimConfig::default().ackermann(0.3)).unwrap();
    RosbridgePeer::start_with(world, PeerConfig { nav2, ..PeerConfig::default() }).await.unwrap()
}

fn zero(t: &Twist) -> bool {
    t.linear.x == 0.0 && t.angular.z == 0.0
}

/// Waits (at most `secs`) until the emulated Nav2 runs a goal and has
/// moved the robot; returns it.
async fn nav2_driving(peer: &RosbridgePeer, nav: &Nav, secs: f64) -> Nav2GoalRecord {
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    loop {
        if let Some(g) = peer.nav2_goals().into_iter().rev().find(|g| g.running() && peer.now_s() - g.accepted_s > 0.5)
        {
            return g;
        }
        assert!(Instant::now() < deadline, "Nav2 never got a goal to drive; stderr:\n{}", nav.stderr());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The Twists navkit published that move the robot while one of `goals` ran.
fn moving_while_nav2_drove(twists: &[(f64, Twist)], goals: &[Nav2GoalRecord], end_s: f64) -> usize {
    twists
        .iter()
        .filter(|(t, tw)| !zero(tw) && goals.iter().any(|g| *t > g.accepted_s && *t < g.ended_s.unwrap_or(end_s)))
        .count()
}

fn named<'a>(events: &'a [Value], name: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    events.iter().filter(move |e| e["event"] == name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goal_from_the_model_is_reached_by_nav2_while_navkit_publishes_no_motion() {
    let peer = peer(true).await;
    let start = peer.pose();
    // the robot starts at the odometry origin facing +y: a goal 0.7 m straight ahead, in open space
    let args = serde_json::json!({"goal_type": "coordinates", "x": 0.0, "y": 0.7, "reason": "straight ahead"});
    let vlm = SilentVlm::start(1000, "navigate_to_goal", args).await;
    let base_url = vlm.base_url();
    let model = ["--planner", "vlm", "--vlm", "openai", "--base-url", &base_url, "--model", "m", "--text-only"];
    let nav = Nav::start_logged(&peer.url(), DEFAULTS, &[&["--max-time", "10"][..], &model[..]].concat());
    let (status, err, events) = nav.finish_logged(40.0).await;
    assert!(status.success(), "exit {status}; stderr:\n{err}");
    let goals = peer.nav2_goals();
    let reached = goals
        .iter()
        .find(|g| g.status == GoalStatus::SUCCEEDED)
        .unwrap_or_else(|| panic!("no goal reached: {goals:?}\n{err}"));
    let took = reached.ended_s.unwrap() - reached.accepted_s;
    let moving = moving_while_nav2_drove(&peer.twists(), &goals, peer.now_s());
    let moved = peer.pose().position().distance(start.position());
    println!(
        "nav2 goal 0.7 m ahead: reached in {took:.1} s, robot moved {moved:.2} m; {} goals sent; {moving} non-zero \
         Twists from navkit while Nav2 drove",
        goals.len()
    );
    assert!((reached.target.x - 0.0).abs() < 1e-9 && (reached.target.y - 0.7).abs() < 1e-9, "{reached:?}");
    assert!((0.5..=0.8).contains(&moved), "Nav2 drove the robot to the goal: {moved:.2} m");
    assert_eq!(moving, 0, "navkit yields cmd_vel while Nav2 drives");
    assert!(named(&events, "nav2_goal_succeeded").count() >= 1, "the loop heard of the success");
    assert!(err.contains("Nav2 reached the goal"), "stderr:\n{err}");
    assert!(goals.iter().all(|g| !g.running()), "no goal outlives the run: {goals:?}");
    assert_eq!(peer.with_world(|w| w.collisions()), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exploring_with_nav2_hands_every_goal_over_and_publishes_no_motion_while_it_drives() {
    // the offline planner replaces goals as the frontiers move, and navkit's guard cancels a goal the emulated
    // Nav2 drives too close to a wall: what is checked is the hand-over, not the emulation's success
    let peer = peer(true).await;
    let nav = Nav::start_logged(&peer.url(), DEFAULTS, &["--max-time", "12"]);
    let (status, err, events) = nav.finish_logged(40.0).await;
    assert!(status.success(), "exit {status}; stderr:\n{err}");
    let goals = peer.nav2_goals();
    let count = |s: i8| goals.iter().filter(|g| g.status == s).count();
    let twists = peer.twists();
    let moving = moving_while_nav2_drove(&twists, &goals, peer.now_s());
    let travelled = peer.with_world(|w| w.path_length_m());
    println!(
        "nav2: {} goals ({} succeeded, {} aborted, {} cancelled); {moving} non-zero Twists from navkit while Nav2 \
         drove; travelled {travelled:.2} m; {} Twists in all",
        goals.len(),
        count(4),
        count(6),
        count(5),
        twists.len()
    );
    for line in err.lines().filter(|l| l.contains("Nav2") || l.contains("decision")) {
        println!("  {line}");
    }
    assert!(!goals.is_empty(), "goals went to Nav2; stderr:\n{err}");
    assert_eq!(moving, 0, "navkit yields cmd_vel while Nav2 drives");
    assert!(travelled > 0.3, "Nav2 moved the robot: {travelled:.2} m");
    assert!(goals.iter().all(|g| g.frame_id == "odom"), "goals in the odometry frame");
    assert!(err.contains("handed to Nav2"), "progress lines:\n{err}");
    assert_eq!(named(&events, "nav2_goal").count(), goals.len(), "one step-log event per goal sent");
    assert_eq!(named(&events, "own_path").count(), 0, "every goal went to Nav2");
    assert!(goals.iter().all(|g| !g.running()), "no goal outlives the run: {goals:?}");
    assert_eq!(peer.with_world(|w| w.collisions()), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nav2_abort_is_a_failure_in_the_tool_result() {
    let peer = peer(true).await;
    let nav = Nav::start_logged(&peer.url(), DEFAULTS, &["--max-time", "6"]);
    nav2_driving(&peer, &nav, 8.0).await;
    assert!(peer.nav2_abort());
    let (status, err, events) = nav.finish_logged(30.0).await;
    assert!(status.success(), "exit {status}; stderr:\n{err}");
    let failed: Vec<&Value> = named(&events, "nav2_goal_failed").collect();
    assert!(!failed.is_empty(), "the abort is noticed; stderr:\n{err}");
    assert_eq!(failed[0]["code"], "aborted");
    assert!(err.contains("Nav2 goal failed (aborted): Nav2 aborted the goal"), "stderr:\n{err}");
    assert_eq!(peer.with_world(|w| w.collisions()), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_safety_stop_cancels_the_nav2_goal() {
    let peer = peer(true).await;
    let nav = Nav::start_logged(&peer.url(), DEFAULTS, &["--max-time", "7"]);
    let goal = nav2_driving(&peer, &nav, 8.0).await;
    // the LiDAR goes blind (every beam `null`): a sensor fault, a stop of the arbiter
    peer.set_null_arc(Some((0.0, 4.0)));
    let fault_at = peer.now_s();
    let pose = peer.pose();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let blind_m = peer.pose().distance(pose);
    let (status, err, events) = nav.finish_logged(30.0).await;
    assert!(status.success(), "exit {status}; stderr:\n{err}");
    let cancel_at = peer
        .received()
        .iter()
        .find(|m| m.at_s > fault_at && m.topic.as_deref() == Some("/navigate_to_pose/_action/cancel_goal"))
        .map(|m| m.at_s)
        .unwrap_or_else(|| panic!("Nav2's cancel service was not called; stderr:\n{err}"));
    let ended = peer.nav2_goals().into_iter().find(|g| g.id == goal.id).unwrap();
    println!(
        "safety stop under Nav2: cancel {:.2} s after the sensor fault, {blind_m:.3} m driven blind",
        cancel_at - fault_at
    );
    assert!(cancel_at - fault_at <= 0.5 + SLACK_S, "cancelled {:.2} s after the fault", cancel_at - fault_at);
    assert_eq!(ended.status, GoalStatus::CANCELED, "the goal was cancelled: {ended:?}");
    assert!(blind_m <= 0.1 + 0.18 * SLACK_S, "{blind_m:.3} m driven blind");
    let cancelled: Vec<&Value> = named(&events, "nav2_goal_cancelled").collect();
    assert!(cancelled.iter().any(|e| e["reason"].as_str().unwrap_or("").contains("sensor fault")), "{cancelled:?}");
    assert!(err.contains("Nav2 goal cancelled: safety stop"), "stderr:\n{err}");
    let after: Vec<(f64, Twist)> = peer.twists().into_iter().filter(|(t, _)| *t > cancel_at).collect();
    assert!(after.iter().all(|(_, t)| zero(t)), "only zero velocity after the stop");
    assert!(!after.is_empty(), "navkit publishes zero velocity itself once the goal is cancelled");
    assert_eq!(peer.with_world(|w| w.collisions()), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_nav2_navkit_follows_its_own_path() {
    let peer = peer(false).await;
    let nav = Nav::start_logged(&peer.url(), DEFAULTS, &["--max-time", "5"]);
    let (status, err, events) = nav.finish_logged(30.0).await;
    assert!(status.success(), "exit {status}; stderr:\n{err}");
    assert!(peer.published("/goal_pose").is_empty(), "no goal was sent");
    assert!(peer.twists().iter().any(|(_, t)| t.linear.x > 0.01), "navkit drove itself; stderr:\n{err}");
    let own: Vec<&Value> = named(&events, "own_path").collect();
    assert_eq!(own.len(), 1, "the reason is logged once: {own:?}");
    assert!(own[0]["reason"].as_str().unwrap().contains("Nav2 not found"), "{own:?}");
    assert!(
        err.contains("navkit follows its own path (unsupported by this robot: Nav2 goals (Nav2 not found"),
        "stderr:\n{err}"
    );
    assert_eq!(peer.with_world(|w| w.collisions()), 0);
}
