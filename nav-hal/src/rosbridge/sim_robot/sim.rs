//! The peer's real-time simulation: integrates the newest Twist, publishes
//! odometry, scans and camera images.

use super::protocol::Outgoing;
use super::{ImageCorruption, PeerShared};
use crate::HalError;
use crate::hal::VelocityCommand;
use crate::rosbridge::convert;
use crate::rosbridge::images;
use crate::rosbridge::msg::geometry_msgs::Twist;
use crate::rosbridge::msg::sensor_msgs::{CompressedImage, Image};
use crate::sim::SimWorld;
use nav_core::geometry::{Pose2, normalize_angle};
use nav_core::time::Clock;
use std::sync::Arc;
use std::time::Duration;

/// Which camera topics have subscribers, and which want CBOR frames.
#[derive(Debug, Clone, Copy, Default)]
struct Cameras {
    rgb_raw: bool,
    rgb_jpeg: bool,
    depth_raw: bool,
    depth_png: bool,
}

impl Cameras {
    fn any(self) -> bool {
        self.rgb_raw || self.rgb_jpeg || self.depth_raw || self.depth_png
    }
}

/// Ticks the simulation until the peer is dropped (the task is aborted).
pub(crate) async fn tick_loop(shared: Arc<PeerShared>) {
    let cfg = shared.config.clone();
    let dt = 1.0 / cfg.tick_hz;
    let scan_every = (cfg.tick_hz / cfg.scan_hz).round().max(1.0) as u64;
    let camera_every = (cfg.tick_hz / cfg.camera_hz).round().max(1.0) as u64;
    let mut interval = tokio::time::interval(Duration::from_secs_f64(dt));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut tick: u64 = 0;
    loop {
        interval.tick().await;
        tick += 1;
        let t = &cfg.topics;
        let cams = Cameras {
            rgb_raw: shared.conns.has_subscriber(&t.rgb),
            rgb_jpeg: cfg.serve_compressed && shared.conns.has_subscriber(&t.rgb_topic(true)),
            depth_raw: shared.conns.has_subscriber(&t.depth),
            depth_png: cfg.serve_compressed && shared.conns.has_subscriber(&t.depth_topic(true)),
        };
        let out = step(&shared, dt, tick % scan_every == 0, tick % camera_every == 0, cams);
        for o in out {
            shared.conns.publish_outgoing(&shared, &o);
        }
    }
}

fn step(shared: &PeerShared, dt: f64, scan_due: bool, camera_due: bool, cams: Cameras) -> Vec<Outgoing> {
    let topics = &shared.config.topics;
    let now = shared.now_s();
    let (command, command_at_s) = shared.command();
    let expired = shared.config.cmd_vel_timeout_s.is_some_and(|t| now - command_at_s > t);
    let twist = if expired { Twist::default() } else { command };
    let mut st = shared.state();
    // while the emulated Nav2 runs a goal, its controller drives the base
    let mut nav2_changed = false;
    let st_ref = &mut *st;
    let nav2 = if shared.config.nav2 { st_ref.nav2.control(&mut st_ref.world, now, &mut nav2_changed) } else { None };
    let twist = nav2.unwrap_or(twist);
    let before = st.world.odometry().pose;
    let cmd = VelocityCommand { linear: twist.linear.x, angular: twist.angular.z, duration_s: dt };
    let clock = st.world.clock();
    let t0 = clock.now_s();
    if st.world.drive(cmd).is_err() {
        st.world.stop();
    }
    // Simulated time follows real time even when a motion ended early.
    let lag = dt - (clock.now_s() - t0);
    if lag > 0.0 {
        clock.advance(lag);
    }
    let stamp = clock.now_s();
    let after = st.world.odometry().pose;
    let ds = before.position().distance(after.position());
    let forward =
        (after.position() - before.position()).dot(nav_core::geometry::Point2::new(before.yaw.cos(), before.yaw.sin()));
    let v = if forward < 0.0 { -ds / dt } else { ds / dt };
    let w = normalize_angle(after.yaw - before.yaw) / dt;
    let mut out = Vec::new();
    if nav2_changed {
        out.push(Outgoing { topic: topics.nav2_status.clone(), msg: st.nav2.status_msg(), ..Outgoing::default() });
    }
    let odom = convert::odometry_to_msg(after, v, w, stamp);
    if !st.odom_paused {
        out.push(Outgoing { topic: topics.odom.clone(), msg: json(&odom), ..Outgoing::default() });
    }
    if scan_due && !st.scan_paused {
        let mut scan = st.world.scan().scan;
        if let Some((center, half)) = st.null_arc {
            for i in 0..scan.ranges.len() {
                if normalize_angle(scan.angle(i) - center).abs() <= half {
                    scan.ranges[i] = f32::NAN;
                }
            }
        }
        let msg = json(&convert::scan_to_msg(&scan, stamp, "laser"));
        out.push(Outgoing { topic: topics.scan.clone(), msg, ..Outgoing::default() });
    }
    if camera_due && cams.any() {
        let (rgb, d) = st.world.rgbd();
        let corrupt = st.image_corruption;
        drop(st);
        let image = |topic: String, msg: Image| camera_message(shared, topic, msg, corrupt);
        let compressed = |topic: String, msg: Result<CompressedImage, HalError>| {
            msg.ok().map(|m| camera_message(shared, topic, m, corrupt))
        };
        if cams.rgb_raw {
            out.push(image(topics.rgb.clone(), convert::image_from_rgb(&rgb.frame, stamp, "oak_rgb")));
        }
        if cams.rgb_jpeg {
            out.extend(compressed(
                topics.rgb_topic(true),
                convert::compressed_from_rgb(&rgb.frame, 80, stamp, "oak_rgb"),
            ));
        }
        if cams.depth_raw {
            out.push(image(topics.depth.clone(), convert::image_from_depth(&d, stamp, "oak_rgb")));
        }
        if cams.depth_png {
            out.extend(compressed(
                topics.depth_topic(true),
                convert::compressed_depth_from_depth(&d, stamp, "oak_rgb"),
            ));
        }
    }
    out
}

/// Image data (`data` field) that may be cut in half (a corrupt image).
trait ImageData: serde::Serialize {
    fn data_mut(&mut self) -> &mut Vec<u8>;
}

impl ImageData for Image {
    fn data_mut(&mut self) -> &mut Vec<u8> {
        &mut self.data
    }
}

impl ImageData for CompressedImage {
    fn data_mut(&mut self) -> &mut Vec<u8> {
        &mut self.data
    }
}

/// A camera message with its CBOR frame when a subscriber wants one.
fn camera_message<M: ImageData>(shared: &PeerShared, topic: String, mut msg: M, corrupt: ImageCorruption) -> Outgoing {
    if corrupt == ImageCorruption::Data {
        // Without its first half: too short for a raw image's size, no
        // JPEG/PNG signature for a compressed one.
        let data = msg.data_mut();
        data.drain(..data.len() / 2);
    }
    let cbor = if shared.conns.wants_cbor(&topic) { images::cbor_publish(&topic, &msg).ok() } else { None };
    Outgoing { msg: json(&msg), topic, cbor, broken_frame: corrupt == ImageCorruption::Frames }
}

fn json<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or_default()
}

/// See [`RosbridgePeer::place_obstacle_ahead`](super::RosbridgePeer::place_obstacle_ahead).
pub(crate) fn place_obstacle_ahead(world: &mut SimWorld, distance_m: f64) -> Result<Pose2, HalError> {
    if !(distance_m.is_finite() && distance_m > 0.0) {
        return Err(HalError::invalid_command("distance_m", format!("must be positive, got {distance_m}")));
    }
    let scan = world.scan().scan;
    let front = (0..scan.len())
        .min_by(|&a, &b| scan.angle(a).abs().total_cmp(&scan.angle(b).abs()))
        .and_then(|i| scan.obstacle(scan.ranges[i]))
        .ok_or_else(|| HalError::invalid_command("distance_m", "no obstacle straight ahead within LiDAR range"))?;
    let pose = world.ground_truth_pose();
    let shift = f64::from(front) - distance_m;
    let target = Pose2::new(pose.x + shift * pose.yaw.cos(), pose.y + shift * pose.yaw.sin(), pose.yaw);
    world.teleport(target)?;
    Ok(target)
}
