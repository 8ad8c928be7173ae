//! `RosbridgeHal`'s Nav2 goals against the rosbridge test peer's Nav2
//! emulation: found through rosapi (`nav2 = "auto"`), the goal on
//! `/goal_pose` followed on the status topic to success, an abort and a
//! cancel are failures with their reason, and without Nav2 (or with
//! `nav2 = "off"`, or in a dry run) goals are refused as `Unsupported` so
//! the caller drives itself.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/rosbridge.rs"]
mod support;

use nav_core::geometry::Pose2;
use nav_hal::HalError;
use nav_hal::hal::{Actuators, NavGoalState, Sensors};
use nav_hal::rosbridge::msg::action_msgs::GoalStatus;
use nav_hal::rosbridge::testing::{NAV2_GOAL_TOLERANCE_M, PeerConfig};
use nav_hal::rosbridge::{Nav2Mode, RosbridgeConfig, RosbridgeHal};
use std::time::Duration;
use support::{eventually, fast_config, peer_with};

async fn connected(config: RosbridgeConfig) -> RosbridgeHal {
    let mut hal = RosbridgeHal::connect(config).await.expect("connects");
    hal.wait_for_sensors(Duration::from_secs(5)).await.expect("scan and odometry arrive");
    hal
}

/// A goal `ahead_m` straight ahead of the robot's odometry pose.
async fn ahead(hal: &mut RosbridgeHal, ahead_m: f64) -> Pose2 {
    let p = hal.odometry().await.unwrap().pose;
    Pose2::new(p.x + ahead_m * p.yaw.cos(), p.y + ahead_m * p.yaw.sin(), p.yaw)
}

/// `start_goal` once detection has answered (it refuses while still looking).
async fn start(hal: &mut RosbridgeHal, goal: Pose2) -> Result<(), HalError> {
    let mut last = None;
    for _ in 0..100 {
        match hal.start_goal(goal).await {
            Err(HalError::Unsupported { what }) if what.contains("still looking") => last = Some(what),
            other => return other,
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("Nav2 detection never answered: {last:?}");
}

async fn state_until_done(hal: &mut RosbridgeHal, secs: f64) -> NavGoalState {
    eventually(secs, async || match hal.goal_state().await.unwrap() {
        NavGoalState::Pending | NavGoalState::Active => None,
        done => Some(done),
    })
    .await
    .expect("the goal ends")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goal_goes_to_nav2_and_succeeds_with_no_cmd_vel_from_the_hal() {
    let peer = peer_with(PeerConfig { nav2: true, ..PeerConfig::default() }).await;
    let mut hal = connected(fast_config(&peer.url())).await;
    let goal = ahead(&mut hal, 0.5).await;
    start(&mut hal, goal).await.unwrap();
    assert_eq!(state_until_done(&mut hal, 10.0).await, NavGoalState::Succeeded);
    let goals = peer.nav2_goals();
    assert_eq!(goals.len(), 1);
    assert_eq!(goals[0].status, GoalStatus::SUCCEEDED);
    assert_eq!(goals[0].frame_id, "odom", "goals carry the odometry's frame");
    assert!(peer.pose().position().distance(goal.position()) <= NAV2_GOAL_TOLERANCE_M + 0.05);
    assert!(peer.twists().is_empty(), "the HAL published no cmd_vel while Nav2 drove");
    let sent = peer.published("/goal_pose");
    assert_eq!(sent.len(), 1);
    assert!((sent[0].1["pose"]["position"]["x"].as_f64().unwrap() - goal.x).abs() < 1e-9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_or_cancelled_goal_is_a_failure_with_its_reason() {
    let peer = peer_with(PeerConfig { nav2: true, ..PeerConfig::default() }).await;
    let mut hal = connected(fast_config(&peer.url())).await;
    let goal = ahead(&mut hal, 0.6).await;
    start(&mut hal, goal).await.unwrap();
    eventually(3.0, async || (hal.goal_state().await.unwrap() == NavGoalState::Active).then_some(())).await.unwrap();
    assert!(peer.nav2_abort());
    match state_until_done(&mut hal, 3.0).await {
        NavGoalState::Failed { code, reason } => {
            assert_eq!(code, "aborted");
            assert!(reason.contains("Nav2 aborted"), "{reason}");
        }
        other => panic!("expected aborted, got {other:?}"),
    }
    start(&mut hal, goal).await.unwrap();
    eventually(3.0, async || (hal.goal_state().await.unwrap() == NavGoalState::Active).then_some(())).await.unwrap();
    hal.cancel_goal().await.unwrap();
    assert!(matches!(hal.goal_state().await.unwrap(), NavGoalState::Failed { code, .. } if code == "canceled"));
    eventually(2.0, async || peer.nav2_goals().last().is_some_and(|g| g.status == GoalStatus::CANCELED).then_some(()))
        .await
        .unwrap();
    assert!(peer.received().iter().any(|m| m.topic.as_deref() == Some("/navigate_to_pose/_action/cancel_goal")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goal_nav2_never_accepts_fails_after_the_accept_timeout() {
    // nav2 = "on" against a robot without Nav2: the goal is sent, nobody takes it
    let peer = peer_with(PeerConfig::default()).await;
    let config = RosbridgeConfig { nav2: Nav2Mode::On, nav2_accept_timeout_s: 0.5, ..fast_config(&peer.url()) };
    let mut hal = connected(config).await;
    let goal = ahead(&mut hal, 0.5).await;
    start(&mut hal, goal).await.unwrap();
    match state_until_done(&mut hal, 3.0).await {
        NavGoalState::Failed { code, reason } => {
            assert_eq!(code, "not_accepted");
            assert!(reason.contains("within 0.5 s") && reason.contains("/goal_pose"), "{reason}");
        }
        other => panic!("expected not_accepted, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_nav2_off_or_in_a_dry_run_goals_are_unsupported() {
    let plain = peer_with(PeerConfig::default()).await;
    let mut hal = connected(fast_config(&plain.url())).await;
    let goal = ahead(&mut hal, 0.5).await;
    match start(&mut hal, goal).await {
        Err(HalError::Unsupported { what }) => {
            assert!(what.contains("Nav2 not found") && what.contains("/navigate_to_pose/_action/status"), "{what}")
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
    let with_nav2 = peer_with(PeerConfig { nav2: true, ..PeerConfig::default() }).await;
    for config in [
        RosbridgeConfig { nav2: Nav2Mode::Off, ..fast_config(&with_nav2.url()) },
        RosbridgeConfig { dry_run: true, ..fast_config(&with_nav2.url()) },
    ] {
        let mut hal = connected(config).await;
        let err = start(&mut hal, goal).await.unwrap_err();
        assert!(matches!(err, HalError::Unsupported { .. }), "{err}");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(with_nav2.published("/goal_pose").is_empty() && with_nav2.nav2_goals().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_cancels_the_goal_nav2_drives_before_the_zero_twists() {
    let peer = peer_with(PeerConfig { nav2: true, ..PeerConfig::default() }).await;
    let mut hal = connected(fast_config(&peer.url())).await;
    let goal = ahead(&mut hal, 0.6).await;
    start(&mut hal, goal).await.unwrap();
    eventually(3.0, async || (hal.goal_state().await.unwrap() == NavGoalState::Active).then_some(())).await.unwrap();
    hal.stop().await.unwrap();
    assert!(matches!(hal.goal_state().await.unwrap(), NavGoalState::Failed { code, .. } if code == "canceled"));
    eventually(2.0, async || peer.nav2_goals().last().is_some_and(|g| g.status == GoalStatus::CANCELED).then_some(()))
        .await
        .unwrap();
    let received = peer.received();
    let cancel = received.iter().position(|m| m.topic.as_deref() == Some("/navigate_to_pose/_action/cancel_goal"));
    let first_zero = received.iter().position(|m| m.op == "publish" && m.topic.as_deref() == Some("/cmd_vel"));
    assert!(cancel.unwrap() < first_zero.unwrap(), "the goal is cancelled before the stop burst");
}
