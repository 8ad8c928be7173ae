//! The rosbridge v2 test peer at the protocol level, with a raw WebSocket
//! client: the documented ops, `service_response` and `status` replies,
//! `null` ranges on the wire, rates, and the simulation behind it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/rosbridge.rs"]
mod support;

use nav_hal::rosbridge::msg::sensor_msgs::LaserScan;
use nav_hal::rosbridge::testing::PeerConfig;
use serde_json::{Value, json};
use support::{RawClient, eventually, peer, peer_with, sleep};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribe_delivers_scans_with_null_for_non_finite_ranges() {
    let peer = peer().await;
    peer.set_null_arc(Some((0.0, 0.1)));
    let mut c = RawClient::connect(&peer.url()).await;
    c.send(json!({"op": "subscribe", "topic": "/scan", "type": "sensor_msgs/LaserScan"})).await;
    let text = c.next_text_on(3.0, "/scan").await.expect("a scan arrives");
    assert!(text.contains("null"), "non-finite ranges travel as the JSON null literal");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["op"], "publish");
    let scan: LaserScan = serde_json::from_value(v["msg"].clone()).unwrap();
    assert_eq!(scan.ranges.len(), 720);
    assert!(scan.ranges[360].is_nan(), "the front beam was nulled (read back as invalid)");
    assert!(v["msg"]["header"]["stamp"]["sec"].is_i64() && v["msg"]["header"]["stamp"]["nanosec"].is_u64());
    // Unsubscribing stops the stream.
    c.send(json!({"op": "unsubscribe", "topic": "/scan"})).await;
    sleep(0.1).await;
    assert!(c.next_text_on(0.4, "/scan").await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odometry_outpaces_scans() {
    let peer = peer().await;
    let mut c = RawClient::connect(&peer.url()).await;
    c.send(json!({"op": "subscribe", "topic": "/scan"})).await;
    c.send(json!({"op": "subscribe", "topic": "/odom"})).await;
    let (mut scans, mut odoms) = (0, 0);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(1000);
    while tokio::time::Instant::now() < deadline {
        match c.next_matching(0.5, |v| v["op"] == "publish").await {
            Some(v) if v["topic"] == "/scan" => scans += 1,
            Some(v) if v["topic"] == "/odom" => odoms += 1,
            _ => {}
        }
    }
    assert!(scans >= 3, "scans flow: {scans}");
    assert!(odoms > 2 * scans, "odometry (50 Hz) outpaces the scan (10 Hz): {odoms} vs {scans}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_service_answers_with_the_request_id() {
    let peer = peer().await;
    let mut c = RawClient::connect(&peer.url()).await;
    c.send(json!({"op": "call_service", "service": "/rosapi/get_time", "id": "call-1", "args": {}})).await;
    let r = c.next_matching(2.0, |v| v["op"] == "service_response").await.unwrap();
    assert_eq!((r["id"].as_str(), r["result"].as_bool()), (Some("call-1"), Some(true)));
    assert!(r["values"]["time"]["sec"].is_i64());
    c.send(json!({"op": "call_service", "service": "/nope", "id": "call-2"})).await;
    let r = c.next_matching(2.0, |v| v["op"] == "service_response").await.unwrap();
    assert_eq!((r["id"].as_str(), r["result"].as_bool()), (Some("call-2"), Some(false)));
    assert!(r["values"].as_str().unwrap().contains("does not exist"));
    c.send(json!({"op": "call_service", "service": "/navigate_to_pose/_action/cancel_goal", "id": 7, "args": {}}))
        .await;
    let r = c.next_matching(2.0, |v| v["op"] == "service_response").await.unwrap();
    assert_eq!((r["id"].as_i64(), r["values"]["return_code"].as_i64()), (Some(7), Some(0)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_messages_get_status_errors() {
    let peer = peer().await;
    let mut c = RawClient::connect(&peer.url()).await;
    let is_status = |v: &Value| v["op"] == "status";
    c.send_text("{not json".into()).await;
    let s = c.next_matching(2.0, is_status).await.unwrap();
    assert_eq!(s["level"], "error");
    assert!(s["msg"].as_str().unwrap().contains("invalid JSON"));
    c.send(json!({"op": "frobnicate", "id": "x"})).await;
    let s = c.next_matching(2.0, is_status).await.unwrap();
    assert_eq!((s["level"].as_str(), s["id"].as_str()), (Some("warning"), Some("x")));
    c.send(json!({"op": "publish", "topic": "/cmd_vel", "msg": {"linear": {"x": "fast"}}})).await;
    let s = c.next_matching(2.0, is_status).await.unwrap();
    assert!(s["msg"].as_str().unwrap().contains("Twist"));
    c.send(json!({"op": "subscribe"})).await;
    assert!(c.next_matching(2.0, is_status).await.unwrap()["msg"].as_str().unwrap().contains("topic"));
    assert!(peer.current_command().is_zero(), "a bad Twist never moves the robot");
    let ops: Vec<String> = peer.received().into_iter().map(|m| m.op).collect();
    assert_eq!(ops, vec!["?", "frobnicate", "publish", "subscribe"], "everything is recorded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn published_twists_drive_the_simulated_robot_and_are_recorded() {
    let peer = peer().await;
    let start = peer.pose();
    let mut c = RawClient::connect(&peer.url()).await;
    c.send(json!({"op": "advertise", "topic": "/cmd_vel", "type": "geometry_msgs/Twist"})).await;
    c.send(json!({"op": "publish", "topic": "/cmd_vel", "msg": {"linear": {"x": 0.2, "y": 0, "z": 0}, "angular": {"x": 0, "y": 0, "z": 0}}})).await;
    let moved = eventually(3.0, async || (peer.pose().distance(start) > 0.05).then_some(())).await;
    assert!(moved.is_some(), "the base holds the Twist");
    let twists = peer.twists();
    assert_eq!(twists.len(), 1);
    assert_eq!(twists[0].1.linear.x, 0.2);
    assert!(twists[0].0 > 0.0 && twists[0].0 <= peer.now_s());
    assert_eq!(peer.with_world(|w| w.collisions()), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_base_timeout_zeroes_an_old_twist_when_configured() {
    let peer = peer_with(PeerConfig { cmd_vel_timeout_s: Some(0.2), ..PeerConfig::default() }).await;
    let mut c = RawClient::connect(&peer.url()).await;
    c.send(json!({"op": "publish", "topic": "/cmd_vel", "msg": {"linear": {"x": 0.2}}})).await;
    sleep(0.5).await;
    let p = peer.pose();
    sleep(0.2).await;
    assert!(peer.pose().distance(p) < 1e-9, "the Twist expired");
    assert!(p.distance(peer.with_world(|w| w.start_pose())) > 0.01, "but it moved first");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_obstacle_can_be_placed_ahead_and_pause_is_published() {
    let peer = peer().await;
    let pose = peer.place_obstacle_ahead(0.25).unwrap();
    assert!(pose.distance(peer.with_world(|w| w.start_pose())) > 0.1);
    let mut c = RawClient::connect(&peer.url()).await;
    c.send(json!({"op": "subscribe", "topic": "/scan"})).await;
    c.send(json!({"op": "subscribe", "topic": "/navkit/pause", "type": "std_msgs/Bool"})).await;
    let v = c.next_matching(3.0, |v| v["topic"] == "/scan").await.unwrap();
    let scan: LaserScan = serde_json::from_value(v["msg"].clone()).unwrap();
    assert!((scan.ranges[360] - 0.25).abs() < 1e-3, "front range {}", scan.ranges[360]);
    peer.publish_pause(true);
    let v = c.next_matching(2.0, |v| v["topic"] == "/navkit/pause").await.unwrap();
    assert_eq!(v["msg"], json!({"data": true}));
    assert!(peer.place_obstacle_ahead(-1.0).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_can_be_dropped_refused_and_silenced() {
    let peer = peer().await;
    let mut c = RawClient::connect(&peer.url()).await;
    c.send(json!({"op": "subscribe", "topic": "/odom"})).await;
    assert!(c.next_matching(2.0, |v| v["topic"] == "/odom").await.is_some());
    assert_eq!(peer.connections(), 1);
    peer.set_silent(true);
    // Drain what was in flight; at 50 Hz odometry a 150 ms gap only comes from silence.
    let mut drained = 0;
    while c.next_matching(0.15, |_| true).await.is_some() {
        drained += 1;
        assert!(drained < 100, "messages keep coming while silent");
    }
    assert!(c.next_matching(0.3, |v| v["topic"] == "/odom").await.is_none(), "silent: nothing arrives");
    peer.set_silent(false);
    assert!(c.next_matching(2.0, |v| v["topic"] == "/odom").await.is_some());
    peer.set_accepting(false);
    peer.drop_connections();
    assert!(c.wait_closed(2.0).await, "the connection is gone");
    assert_eq!(peer.connections(), 0);
    assert!(tokio_tungstenite::connect_async(peer.url()).await.is_err(), "refused while not accepting");
    peer.set_accepting(true);
    let _again = RawClient::connect(&peer.url()).await;
}

/// The product path (`nav sim-robot`): the simulated robot under its own
/// module, on an address of the caller's choice, without the tests' record
/// of client messages; a taken port is an I/O error naming the address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulated_robot_binds_a_given_address_and_can_keep_no_record() {
    use nav_hal::HalError;
    use nav_hal::rosbridge::sim_robot::{PeerConfig, RosbridgePeer};
    use nav_hal::sim::{SimConfig, SimWorld};
    use std::net::SocketAddr;
    let world = || SimWorld::builtin("exploration", SimConfig::default()).unwrap();
    let quiet = PeerConfig { record_received: false, ..PeerConfig::default() };
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let peer = RosbridgePeer::start_on(any, world(), quiet.clone()).await.unwrap();
    assert!(peer.addr().ip().is_loopback() && peer.addr().port() != 0);
    assert_eq!(peer.url(), format!("ws://{}", peer.addr()));
    let start = peer.pose();
    let mut c = RawClient::connect(&peer.url()).await;
    c.send(json!({"op": "publish", "topic": "/cmd_vel", "msg": {"linear": {"x": 0.2}}})).await;
    let moved = eventually(3.0, async || (peer.pose().distance(start) > 0.05).then_some(())).await;
    assert!(moved.is_some(), "Twists drive it");
    assert!(peer.received().is_empty() && peer.twists().is_empty(), "nothing was recorded");
    // the same address again: taken
    match RosbridgePeer::start_on(peer.addr(), world(), quiet).await {
        Err(HalError::Io { path, source }) => {
            assert_eq!(path.to_str(), Some(peer.addr().to_string().as_str()));
            assert_eq!(source.kind(), std::io::ErrorKind::AddrInUse);
        }
        other => panic!("expected an I/O error naming the address, got {other:?}"),
    }
}
