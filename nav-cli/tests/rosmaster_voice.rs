//! `nav rosmaster`'s voice end to end: the real `nav` binary against the
//! rosbridge v2 test peer, commands published as `std_msgs/String` on
//! `/navkit/voice_command`, announcements read back from `/navkit/say`. A
//! run waiting for "explore" holds the robot until it is said; "pause"
//! holds it still (one stop burst, then nothing) until "resume"; "stop"
//! ends the run (`operator_stop`) at zero velocity; "go home" drives back
//! to the start and ends `returned_home`; free text reaches the step log.
//! Every command is a `voice` step-log event.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/rosmaster_process.rs"]
#[allow(dead_code)]
mod rosmaster_process;

use nav_hal::rosbridge::msg::geometry_msgs::Twist;
use nav_hal::rosbridge::testing::{PeerConfig, RosbridgePeer};
use nav_hal::sim::{SimConfig, SimWorld};
use rosmaster_process::Nav;
use serde_json::Value;
use std::time::{Duration, Instant};

/// One control tick plus scheduling slack on a loaded machine, s.
const SLACK_S: f64 = 0.35;

const DEFAULTS: &str = "[rosbridge]\ndepth_enabled = false\n";

const VOICE: &str = "/navkit/voice_command";

/// A peer serving the `exploration` arena with a differential base.
async fn peer() -> RosbridgePeer {
    let world = SimWorld::builtin("exploration", SimConfig::default()).unwrap();
    RosbridgePeer::start_with(world, PeerConfig::default()).await.unwrap()
}

fn zero(t: &Twist) -> bool {
    t.linear.x == 0.0 && t.angular.z == 0.0
}

/// Waits (at most `secs`) until `done` holds, else panics with stderr.
async fn until(nav: &Nav, secs: f64, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    while !done() {
        assert!(Instant::now() < deadline, "{what} within {secs} s; stderr:\n{}", nav.stderr());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the peer has just received a Twist that moves the robot.
async fn moving(peer: &RosbridgePeer, nav: &Nav, secs: f64) -> f64 {
    let mut at = 0.0;
    until(nav, secs, "the robot moves", || {
        let now = peer.now_s();
        match peer.twists().iter().rev().find(|(t, tw)| now - t < 0.15 && !zero(tw)) {
            Some((t, _)) => {
                at = *t;
                true
            }
            None => false,
        }
    })
    .await;
    at
}

/// The time from `since` until the last non-zero Twist (0 if none after it).
fn last_motion_after(twists: &[(f64, Twist)], since: f64) -> f64 {
    twists.iter().filter(|(t, tw)| *t >= since && !zero(tw)).map(|(t, _)| t - since).fold(0.0, f64::max)
}

fn voice_events(events: &[Value]) -> Vec<String> {
    events.iter().filter(|e| e["event"] == "voice").map(|e| e["command"].as_str().unwrap_or("").to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn voice_starts_pauses_resumes_and_stops_a_run_and_every_step_is_announced() {
    let peer = peer().await;
    let nav = Nav::start_logged(&peer.url(), DEFAULTS, &["--max-time", "60", "--wait-for-voice"]);
    until(&nav, 15.0, "nav waits for explore", || {
        peer.has_subscriber(VOICE) && nav.stderr().contains("waiting for \"explore\"")
    })
    .await;
    // held still while waiting, whatever else is said
    peer.publish_voice_command("resume");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(peer.twists().iter().all(|(_, t)| zero(t)), "no motion before \"explore\"");

    peer.publish_voice_command("  Explore ");
    moving(&peer, &nav, 10.0).await;
    peer.publish_voice_command("pause");
    let paused_at = peer.now_s();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let twists = peer.twists();
    let late = last_motion_after(&twists, paused_at);
    assert!(late <= SLACK_S, "still moving {late:.2} s after \"pause\"; stderr:\n{}", nav.stderr());
    let held = twists.iter().filter(|(t, _)| *t > paused_at + SLACK_S + 0.2).count();
    assert_eq!(held, 0, "nothing is published while paused");
    peer.publish_voice_command("Resume");
    moving(&peer, &nav, 6.0).await;
    peer.publish_voice_command("look for the kitchen\u{7}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    peer.publish_voice_command("STOP");
    let (status, err, events) = nav.finish_logged(10.0).await;
    assert_eq!(status.code(), Some(0), "stderr:\n{err}");
    assert!(err.contains("voice on /navkit/voice_command: pause"), "stderr:\n{err}");
    let trailing = peer.twists().iter().rev().take_while(|(_, t)| zero(t)).count();
    assert!(trailing >= 5, "the last Twists are zero: {trailing}");

    assert_eq!(voice_events(&events), ["explore", "pause", "resume", "instruction", "stop"], "{events:?}");
    let instruction = events.iter().find(|e| e["command"] == "instruction").unwrap();
    assert_eq!(instruction["text"], "look for the kitchen");
    assert!(events.iter().any(|e| e["event"] == "paused") && events.iter().any(|e| e["event"] == "resumed"));
    assert!(!events.iter().any(|e| e["event"] == "watchdog"), "a pause is no model failure: {events:?}");

    let said = peer.announcements();
    for expected in [
        "Ready. Say explore to start.",
        "Waiting. Say explore to start.",
        "Exploring.",
        "Paused. Say resume to continue.",
        "Resuming.",
        "Understood.",
        "Stopping.",
        "Run ended: operator stop.",
    ] {
        assert!(said.iter().any(|s| s == expected), "{expected:?} on /navkit/say: {said:?}");
    }
    assert_eq!(said.last().map(String::as_str), Some("Run ended: operator stop."), "{said:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_home_drives_back_to_the_start_and_ends_the_run() {
    let peer = peer().await;
    let start = peer.pose();
    let nav = Nav::start_logged(&peer.url(), DEFAULTS, &["--max-time", "90"]);
    until(&nav, 30.0, "the robot gets 0.8 m away", || peer.pose().position().distance(start.position()) > 0.8).await;
    peer.publish_voice_command("go home");
    let (status, err, events) = nav.finish_logged(60.0).await;
    assert_eq!(status.code(), Some(0), "stderr:\n{err}");
    let home = peer.pose().position().distance(start.position());
    assert!(home < 0.5, "{home:.2} m from the start; stderr:\n{err}");
    assert!(voice_events(&events).contains(&"go_home".to_string()), "{events:?}");
    let said = peer.announcements();
    assert!(
        said.iter().any(|s| s == "Going home.") && said.iter().any(|s| s == "Run ended: returned home."),
        "{said:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_voice_topic_is_a_usage_error_naming_the_key() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("ws://127.0.0.1:{port}");
    let toml = "[rosbridge.topics]\nsay = \"navkit say\"\n";
    let (status, _, err) = Nav::start(&url, toml, &[]).finish(15.0).await;
    assert_eq!(status.code(), Some(2), "stderr:\n{err}");
    assert!(err.contains("[rosbridge.topics] say"), "the key is named:\n{err}");
    let toml = "[rosbridge.topics]\nvoice_command = \"\"\n";
    let (status, _, err) = Nav::start(&url, toml, &[]).finish(15.0).await;
    assert_eq!(status.code(), Some(2), "stderr:\n{err}");
    assert!(err.contains("[rosbridge.topics] voice_command"), "the key is named:\n{err}");
}
