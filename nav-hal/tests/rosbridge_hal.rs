//! `RosbridgeHal` against the rosbridge v2 test peer over a real WebSocket
//! on 127.0.0.1: conversions, the one-Twist-per-drive rule, the stop burst,
//! dry runs, staleness, connection loss and reconnects, images, pause,
//! speech, Nav2 goals and the emergency stop.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/rosbridge.rs"]
mod support;

use nav_core::drive::DriveKind;
use nav_core::lidar::{LidarConfig, LidarSummary};
use nav_core::time::Clock;
use nav_hal::HalError;
use nav_hal::hal::{Actuators, Sensors, VelocityCommand};
use nav_hal::rosbridge::testing::PeerConfig;
use nav_hal::rosbridge::{ImageTransport, RosbridgeConfig, RosbridgeHal};
use serde_json::json;
use std::time::Duration;
use support::{eventually, fast_config, peer, peer_with, sleep};

const WAIT: Duration = Duration::from_secs(5);

fn vel(linear: f64, angular: f64) -> VelocityCommand {
    VelocityCommand { linear, angular, duration_s: 0.05 }
}

async fn connected(url: &str, config: RosbridgeConfig) -> RosbridgeHal {
    let mut hal = RosbridgeHal::connect(config).await.unwrap_or_else(|e| panic!("connect {url}: {e}"));
    hal.wait_for_sensors(WAIT).await.expect("scan and odometry arrive");
    hal
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scans_and_odometry_arrive_converted() {
    let peer = peer().await;
    let mut hal = connected(&peer.url(), fast_config(&peer.url())).await;
    let scan = hal.scan().await.unwrap();
    assert_eq!(scan.scan.ranges.len(), 720);
    assert!((scan.scan.angle_min + std::f64::consts::PI).abs() < 1e-6);
    let truth = peer.with_world(|w| w.scan());
    let same =
        scan.scan.ranges.iter().zip(&truth.scan.ranges).filter(|(a, b)| a == b || (a.is_infinite() && b.is_infinite()));
    assert!(same.count() >= 715, "the robot stands still, so the scan matches the simulator's");
    let odom = hal.odometry().await.unwrap();
    let pose = peer.pose();
    assert!((odom.pose.x - pose.x).abs() < 1e-9 && (odom.pose.y - pose.y).abs() < 1e-9);
    assert!(nav_core::geometry::angle_diff_abs(odom.pose.yaw, pose.yaw) < 1e-9, "quaternion → yaw");
    assert!(!odom.ground_truth);
    // Stamps are arrival times on the HAL's clock; header stamps are kept.
    let now = hal.clock().now_s();
    assert!(odom.stamp_s <= now && now - odom.stamp_s < 0.6);
    let status = hal.link_status();
    assert!(status.connected && status.sessions == 1);
    assert!(status.topics["/scan"].received > 0 && status.topics["/scan"].header_stamp_s.is_some());
    let caps = hal.capabilities();
    assert!(caps.velocity && caps.lidar && caps.rgb && caps.depth);
    assert!(!caps.discrete_actions && !caps.move_to && !caps.pose_is_ground_truth);
    assert_eq!(caps.drive, DriveKind::Ackermann { min_turn_radius_m: 0.3 });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn null_ranges_read_as_invalid_and_make_no_phantom_obstacle() {
    let peer = peer().await;
    // A wall 0.6 m ahead; the front ±20° will arrive as null.
    peer.place_obstacle_ahead(0.6).unwrap();
    let mut hal = connected(&peer.url(), fast_config(&peer.url())).await;
    let before = hal.scan().await.unwrap();
    let front_before = LidarSummary::from_scan(&before.scan, &LidarConfig::default()).sector_m(0);
    assert!(front_before < 0.7, "the wall is seen before the nulls: {front_before}");
    peer.set_null_arc(Some((0.0, 20f64.to_radians())));
    let scan = eventually(3.0, async || {
        let s = hal.scan().await.ok()?;
        (s.stamp_s > before.stamp_s && s.scan.ranges.iter().any(|r| r.is_nan())).then_some(s)
    })
    .await
    .expect("a scan with nulls arrives");
    for (i, r) in scan.scan.ranges.iter().enumerate() {
        if scan.scan.angle(i).abs() <= 19f64.to_radians() {
            assert!(r.is_nan(), "beam {i} was null on the wire: an invalid reading (REP-117), got {r}");
            assert!(scan.scan.effective(*r).is_none(), "an invalid reading is not free space either");
        }
    }
    let summary = LidarSummary::from_scan(&scan.scan, &LidarConfig::default());
    let nearest = summary.nearest.expect("side walls still seen");
    assert!(nearest.angle_rad.abs() > 19f64.to_radians(), "no obstacle where the nulls are: {nearest:?}");
    assert!(summary.sector_m(0) >= 0.7, "nulls never read as a near obstacle: {}", summary.sector_m(0));
    assert!(summary.sectors[0].distance_m.is_none_or(|d| d >= 0.7), "no data is not a distance");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drive_publishes_one_twist_and_the_simulated_robot_moves() {
    let peer = peer().await;
    let mut hal = connected(&peer.url(), fast_config(&peer.url())).await;
    let start = peer.pose();
    let out = hal.drive(vel(0.2, 0.0)).await.unwrap();
    assert_eq!((out.distance_m, out.collided), (0.0, false));
    let moved = eventually(3.0, async || (peer.pose().distance(start) > 0.05).then_some(())).await;
    assert!(moved.is_some(), "the simulated base executes the Twist");
    let twists = peer.twists();
    assert_eq!(twists.len(), 1, "one drive call, one Twist");
    assert_eq!((twists[0].1.linear.x, twists[0].1.angular.z), (0.2, 0.0));
    let odom = eventually(2.0, async || hal.odometry().await.ok().filter(|o| o.linear > 0.1)).await;
    assert!(odom.is_some(), "odometry reports the motion");
    // Commands above the caps are clamped.
    hal.drive(vel(5.0, -9.0)).await.unwrap();
    sleep(0.1).await;
    let last = *peer.twists().last().unwrap();
    assert_eq!((last.1.linear.x, last.1.angular.z), (0.3, -1.5));
    let cmd = hal.last_command().unwrap();
    assert!(cmd.published && cmd.linear == 0.3);
    hal.stop().await.unwrap();
    sleep(0.1).await;
    let p = peer.pose();
    sleep(0.2).await;
    assert!(peer.pose().distance(p) < 1e-9, "stopped");
    assert!(hal.drive(vel(f64::NAN, 0.0)).await.is_err(), "non-finite commands are refused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_publishes_exactly_five_zero_twists() {
    let peer = peer().await;
    let mut hal = connected(&peer.url(), fast_config(&peer.url())).await;
    hal.stop().await.unwrap();
    sleep(0.1).await;
    let twists = peer.twists();
    assert_eq!(twists.len(), 5);
    assert!(twists.iter().all(|(_, t)| t.is_zero()));
    // 20 ms apart: four gaps span at least 80 ms on the sender, allow for receive jitter.
    assert!(twists[4].0 - twists[0].0 > 0.04, "spread over time: {:?}", twists.iter().map(|t| t.0).collect::<Vec<_>>());
    let cmd = hal.last_command().unwrap();
    assert!(cmd.published && cmd.linear == 0.0 && cmd.angular == 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_publishes_nothing_on_cmd_vel() {
    let peer = peer().await;
    let config = RosbridgeConfig { dry_run: true, ..fast_config(&peer.url()) };
    let mut hal = connected(&peer.url(), config).await;
    let start = peer.pose();
    hal.drive(vel(0.15, 0.2)).await.unwrap();
    let cmd = hal.last_command().unwrap();
    assert!(!cmd.published && cmd.linear == 0.15 && cmd.angular == 0.2, "the would-be command is kept");
    hal.send_goal(1.0, 1.0, 0.0).await.unwrap();
    hal.stop().await.unwrap();
    hal.emergency_stop().await.unwrap();
    hal.say("dry run").await.unwrap();
    sleep(0.3).await;
    let touching = |t: &str| peer.received().into_iter().filter(|m| m.topic.as_deref() == Some(t)).count();
    assert_eq!(touching("/cmd_vel"), 0, "no advertise, no publish on /cmd_vel");
    assert_eq!(touching("/goal_pose"), 0);
    assert!(peer.twists().is_empty());
    assert_eq!(peer.published("/speech_output").len(), 0, "a dry run publishes nothing, speech neither");
    assert!(peer.pose().distance(start) < 1e-9, "the robot never moved");
    assert!(hal.scan().await.is_ok(), "a dry run still subscribes");
    assert!(peer.received().iter().any(|m| m.op == "subscribe" && m.topic.as_deref() == Some("/scan")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_scan_stream_goes_stale_and_recovers() {
    let peer = peer().await;
    let mut hal = connected(&peer.url(), fast_config(&peer.url())).await;
    peer.set_scan_paused(true);
    let stale = eventually(3.0, async || match hal.scan().await {
        Err(HalError::Stale { what, age_s }) => Some((what, age_s)),
        _ => None,
    })
    .await
    .expect("the scan goes stale");
    assert!(stale.0.contains("/scan") && stale.1 > 0.6, "{stale:?}");
    assert!(hal.odometry().await.is_ok(), "odometry still flows");
    assert!(hal.is_connected(), "staleness is not a disconnect");
    peer.set_scan_paused(false);
    assert!(eventually(3.0, async || hal.scan().await.ok()).await.is_some(), "fresh again after resuming");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_websocket_disconnects_then_reconnects_and_stops_the_robot() {
    let peer = peer().await;
    let mut hal = connected(&peer.url(), fast_config(&peer.url())).await;
    hal.drive(vel(0.1, 0.0)).await.unwrap();
    peer.set_accepting(false);
    peer.drop_connections();
    let err = eventually(3.0, async || match hal.scan().await {
        Err(e @ HalError::Disconnected { .. }) => Some(e),
        _ => None,
    })
    .await
    .expect("Disconnected while the robot is unreachable");
    assert!(err.to_string().contains(&peer.url()), "{err}");
    assert!(matches!(hal.odometry().await, Err(HalError::Disconnected { .. })));
    assert!(matches!(hal.drive(vel(0.1, 0.0)).await, Err(HalError::Disconnected { .. })));
    assert!(matches!(hal.rgb().await, Err(HalError::Disconnected { .. })));
    let before = peer.twists().len();
    sleep(0.3).await;
    assert_eq!(peer.twists().len(), before, "nothing is published while disconnected");
    peer.set_accepting(true);
    hal.wait_for_sensors(WAIT).await.expect("data flows again after the reconnect");
    assert!(hal.link_status().sessions >= 2);
    // The first thing on the new session: the stop burst (the base still held 0.1 m/s).
    sleep(0.3).await;
    for m in peer.received() {
        eprintln!("{:.3} c{} {} {:?}", m.at_s, m.connection, m.op, m.topic);
    }
    let after: Vec<_> = peer.twists().into_iter().skip(before).collect();
    assert!(after.len() >= 5 && after[..5].iter().all(|(_, t)| t.is_zero()), "{after:?}");
    assert!(peer.current_command().is_zero());
    hal.drive(vel(0.05, 0.0)).await.expect("drives again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_half_open_link_is_detected_by_the_probe() {
    let peer = peer().await;
    let mut hal = connected(&peer.url(), fast_config(&peer.url())).await;
    peer.set_silent(true);
    let lost = eventually(3.0, async || (!hal.is_connected()).then_some(())).await;
    assert!(lost.is_some(), "the probe notices a link that answers nothing");
    let reason = hal.link_status().last_error.unwrap();
    assert!(reason.contains("probe") || reason.contains("no reply") || reason.contains("no connection"), "{reason}");
    peer.set_silent(false);
    hal.wait_for_sensors(WAIT).await.expect("reconnects once the peer talks again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_robot_is_disconnected_not_an_error_storm() {
    let peer = peer().await;
    let url = peer.url();
    drop(peer);
    let config = RosbridgeConfig { connect_timeout_s: 0.3, ..fast_config(&url) };
    match RosbridgeHal::connect(config.clone()).await {
        Err(HalError::Disconnected { endpoint, .. }) => assert_eq!(endpoint, url),
        other => panic!("expected Disconnected, got {other:?}"),
    }
    let mut hal = RosbridgeHal::start(config).unwrap();
    assert!(matches!(hal.scan().await, Err(HalError::Disconnected { .. })));
    assert!(matches!(hal.stop().await, Err(HalError::Disconnected { .. })));
    let bad = RosbridgeHal::start(RosbridgeConfig::new("robot:9090"));
    assert!(matches!(bad, Err(HalError::InvalidConfig { ref field, .. }) if field == "url"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn camera_images_decode_raw_and_compressed() {
    let peer = peer().await;
    let raw_cfg = RosbridgeConfig {
        rgb_transport: ImageTransport::Raw,
        depth_transport: ImageTransport::Raw,
        ..fast_config(&peer.url())
    };
    let mut raw = connected(&peer.url(), raw_cfg).await;
    let frame = eventually(4.0, async || raw.rgb().await.ok()).await.expect("raw rgb8 arrives");
    let truth = peer.with_world(|w| w.rgb());
    assert_eq!(frame.frame, truth.frame, "rgb8 is exact");
    assert!((frame.hfov_rad - 69f64.to_radians()).abs() < 1e-12);
    let depth = eventually(4.0, async || raw.depth().await.ok()).await.expect("16UC1 depth arrives");
    let true_depth = peer.with_world(|w| w.depth());
    assert_eq!((depth.width, depth.height), (true_depth.width, true_depth.height));
    let (x, y) = (depth.width / 2, depth.height / 2);
    let (got, want) = (depth.at(x, y).unwrap(), true_depth.at(x, y).unwrap());
    assert!((got - want).abs() <= 0.0006, "millimetres → metres: {got} vs {want}");
    drop(raw);
    let mut jpeg = connected(&peer.url(), fast_config(&peer.url())).await;
    let frame = eventually(4.0, async || jpeg.rgb().await.ok()).await.expect("JPEG arrives");
    assert_eq!((frame.frame.width(), frame.frame.height()), (truth.frame.width(), truth.frame.height()));
    let diff: f64 =
        frame.frame.as_bytes().iter().zip(truth.frame.as_bytes()).map(|(a, b)| f64::from(a.abs_diff(*b))).sum();
    let mean = diff / frame.frame.as_bytes().len() as f64;
    assert!(mean < 8.0, "JPEG decodes to the same picture (mean abs diff {mean})");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_topic_and_speech() {
    let peer = peer().await;
    let hal = RosbridgeHal::connect(fast_config(&peer.url())).await.unwrap();
    assert!(!hal.paused());
    let subscribed = eventually(2.0, async || {
        peer.received().iter().any(|m| m.op == "subscribe" && m.topic.as_deref() == Some("/navkit/pause")).then_some(())
    });
    assert!(subscribed.await.is_some());
    peer.publish_pause(true);
    assert!(eventually(2.0, async || hal.paused().then_some(())).await.is_some());
    peer.publish_pause(false);
    assert!(eventually(2.0, async || (!hal.paused()).then_some(())).await.is_some());
    hal.say("found the kitchen").await.unwrap();
    sleep(0.1).await;
    assert_eq!(
        peer.published("/speech_output"),
        vec![(peer.published("/speech_output")[0].0, json!({"data": "found the kitchen"}))]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn voice_commands_are_queued_in_order_and_announcements_reach_the_say_topic() {
    let peer = peer().await;
    let hal = connected(&peer.url(), fast_config(&peer.url())).await;
    assert!(hal.take_voice_commands().is_empty());
    let subscribed = eventually(2.0, async || peer.has_subscriber("/navkit/voice_command").then_some(()));
    assert!(subscribed.await.is_some());
    peer.publish_voice_command("pause");
    peer.publish_voice_command(&"x".repeat(5000));
    peer.publish_voice_command("Go home");
    let mut got = Vec::new();
    let all = eventually(2.0, async || {
        got.extend(hal.take_voice_commands());
        (got.len() >= 3).then(|| got.clone())
    });
    let all = all.await.expect("three commands arrive");
    assert_eq!(all[0], "pause");
    assert_eq!(all[1].chars().count(), 1000, "a flood of text is cut");
    assert_eq!(all[2], "Go home");
    assert!(hal.take_voice_commands().is_empty(), "each is taken once");
    hal.announce("Paused.").await.unwrap();
    hal.speech_handle().announce("Resuming.").await.unwrap();
    sleep(0.1).await;
    assert_eq!(peer.announcements(), vec!["Paused.".to_string(), "Resuming.".to_string()]);
    assert!(peer.published("/speech_output").is_empty(), "announcements have a topic of their own");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emergency_stop_cancels_goals_latches_and_stops() {
    let peer = peer().await;
    let mut hal = connected(&peer.url(), fast_config(&peer.url())).await;
    hal.send_goal(1.5, -0.5, std::f64::consts::FRAC_PI_2).await.unwrap();
    sleep(0.1).await;
    let goals = peer.published("/goal_pose");
    assert_eq!(goals.len(), 1);
    assert_eq!(goals[0].1["header"]["frame_id"], "map");
    assert_eq!(goals[0].1["pose"]["position"]["x"], 1.5);
    let stop = hal.stop_handle();
    stop.emergency_stop().await.unwrap();
    sleep(0.1).await;
    let cancels = peer.received().into_iter().filter(|m| m.op == "call_service");
    assert!(cancels.into_iter().any(|m| m.topic.as_deref() == Some("/navigate_to_pose/_action/cancel_goal")));
    assert_eq!(peer.twists().len(), 5);
    assert!(hal.is_emergency_stopped());
    match hal.drive(vel(0.1, 0.0)).await {
        Err(HalError::InvalidCommand { message, .. }) => assert!(message.contains("latched")),
        other => panic!("drive must be refused while latched: {other:?}"),
    }
    assert_eq!(peer.twists().len(), 5, "nothing published while latched");
    hal.release_emergency_stop();
    hal.drive(vel(0.1, 0.0)).await.unwrap();
    sleep(0.1).await;
    assert_eq!(peer.twists().len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_sensor_messages_are_rejected_counted_and_never_served() {
    let peer = peer_with(PeerConfig::default()).await;
    let mut hal = connected(&peer.url(), fast_config(&peer.url())).await;
    peer.set_scan_paused(true);
    // Another client publishes broken scans; rosbridge forwards them to the HAL.
    let mut other = support::RawClient::connect(&peer.url()).await;
    let bad = json!({"header": {"stamp": {"sec": 1, "nanosec": 0}, "frame_id": "laser"}, "angle_min": -3.0,
        "angle_max": 3.0, "angle_increment": 0.0, "range_min": 0.05, "range_max": 12.0, "ranges": [1.0, null]});
    for _ in 0..3 {
        other.send(json!({"op": "publish", "topic": "/scan", "msg": bad})).await;
    }
    let rejected = eventually(2.0, async || {
        hal.link_status().topics.get("/scan").filter(|t| t.rejected >= 3).map(|t| t.last_error.clone())
    })
    .await
    .expect("the HAL counts rejected scans");
    assert!(rejected.unwrap().contains("angle_increment"));
    let stale = eventually(3.0, async || match hal.scan().await {
        Err(HalError::Stale { what, .. }) => Some(what),
        _ => None,
    })
    .await
    .expect("a rejected scan never replaces the last good one");
    assert!(stale.contains("rejected"), "{stale}");
}

#[test]
fn the_rosmaster_doc_config_example_parses_and_shows_the_defaults() {
    #[derive(serde::Deserialize)]
    struct File {
        rosbridge: RosbridgeConfig,
    }
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/ROSMASTER.md")).unwrap();
    let start = doc.find("```toml\n[rosbridge]").expect("the TOML example") + "```toml\n".len();
    let end = start + doc[start..].find("```").unwrap();
    let file: File = toml::from_str(&doc[start..end]).unwrap();
    file.rosbridge.validate().unwrap();
    assert_eq!(file.rosbridge, RosbridgeConfig::new("ws://192.168.1.42:9090"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staleness_is_per_source_and_names_the_source() {
    let peer = peer().await;
    let mut hal = connected(&peer.url(), fast_config(&peer.url())).await;
    peer.set_odom_paused(true);
    let stale = eventually(2.0, async || match hal.odometry().await {
        Err(HalError::Stale { what, age_s }) => Some((what, age_s)),
        _ => None,
    })
    .await
    .expect("odometry goes stale");
    assert!(stale.0.contains("/odom") && stale.1 <= 0.6 + 0.2, "{stale:?}");
    assert!(hal.scan().await.is_ok(), "the scan is still fresh: staleness is per source");
    peer.set_odom_paused(false);
    let back = eventually(2.0, async || hal.odometry().await.ok()).await;
    assert!(back.is_some(), "odometry comes back");
    // an all-null scan is a sensor fault naming the LiDAR
    peer.set_null_arc(Some((0.0, 4.0)));
    let fault = eventually(2.0, async || match hal.scan().await {
        Err(e @ HalError::SensorFault { .. }) => Some(e.to_string()),
        _ => None,
    })
    .await
    .expect("an all-null scan is a sensor fault");
    assert!(fault.starts_with("LiDAR /scan: sensor fault: only 0 of 720 beams valid"), "{fault}");
}

/// The connection runs on a runtime of its own. roslibrust's client holds a
/// blocking lock across an await and its receive task takes the same lock:
/// on the caller's runtime, HALs dropped while messages streamed in could
/// block every worker and hang it. Here HALs come and go on a
/// single-threaded runtime, and the link keeps receiving while that
/// runtime's only thread is blocked.
#[test]
fn the_link_runs_apart_from_the_callers_runtime() {
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let peer_thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(async {
            let peer = peer_with(PeerConfig { tick_hz: 100.0, scan_hz: 50.0, ..PeerConfig::default() }).await;
            url_tx.send(peer.url()).unwrap();
            let _ = stop_rx.await;
        });
    });
    let url = url_rx.recv().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        for _ in 0..10 {
            drop(connected(&url, fast_config(&url)).await);
        }
        let hal = connected(&url, fast_config(&url)).await;
        let scans = || hal.link_status().topics["/scan"].received;
        let before = scans();
        // block the caller's only thread: nothing of the caller's runtime runs
        std::thread::sleep(Duration::from_millis(500));
        let after = scans();
        assert!(after >= before + 10, "scans kept arriving while the caller was blocked: {before} → {after}");
    });
    drop(rt);
    stop_tx.send(()).unwrap();
    peer_thread.join().unwrap();
}
