//! Camera images through the rosbridge test peer: every transport (raw
//! JSON, rosbridge's `png` and `cbor` compression, `CompressedImage`)
//! delivers the simulator's frames, `auto` picks `<topic>/compressed` when
//! rosapi lists it and CBOR otherwise, a server without compression still
//! delivers (in JSON), `throttle_rate` holds, and broken
//! image data is a clear error, never a panic or a lost link.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/rosbridge.rs"]
mod support;

use nav_hal::HalError;
use nav_hal::hal::{CameraFrame, DepthFrame, Sensors};
use nav_hal::rosbridge::testing::{ImageCorruption, PeerConfig, RosbridgePeer};
use nav_hal::rosbridge::{ImageTransport, RosbridgeConfig, RosbridgeHal};
use nav_hal::sim::{SimConfig, SimWorld};
use std::time::Duration;
use support::{eventually, fast_config, peer_with, sleep};

const WAIT: Duration = Duration::from_secs(5);

fn config(url: &str, transport: ImageTransport) -> RosbridgeConfig {
    RosbridgeConfig {
        rgb_transport: transport,
        depth_transport: transport,
        image_rate_hz: 10.0,
        camera_stale_s: 3.0,
        ..fast_config(url)
    }
}

async fn connected(config: RosbridgeConfig) -> RosbridgeHal {
    let mut hal = RosbridgeHal::connect(config).await.expect("connects");
    hal.wait_for_sensors(WAIT).await.expect("scan and odometry arrive");
    hal
}

async fn frames(hal: &mut RosbridgeHal) -> (CameraFrame, DepthFrame) {
    let rgb = eventually(5.0, async || hal.rgb().await.ok()).await.expect("a colour frame arrives");
    let depth = eventually(5.0, async || hal.depth().await.ok()).await.expect("a depth frame arrives");
    (rgb, depth)
}

/// The subscribe operations the peer received for `topic`.
fn subscribes(peer: &RosbridgePeer, topic: &str) -> Vec<serde_json::Value> {
    peer.received()
        .into_iter()
        .filter(|m| m.op == "subscribe" && m.topic.as_deref() == Some(topic))
        .map(|m| m.raw)
        .collect()
}

fn mean_abs_diff(a: &[u8], b: &[u8]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| f64::from(x.abs_diff(*y))).sum::<f64>() / a.len() as f64
}

/// The largest depth difference, m (NaN must stay NaN).
fn depth_error(got: &DepthFrame, want: &DepthFrame) -> f32 {
    assert_eq!((got.width, got.height), (want.width, want.height));
    let mut worst = 0.0f32;
    for (g, w) in got.depth_m.iter().zip(&want.depth_m) {
        let w = if w.is_finite() && *w > 0.0 && *w < 65.535 { *w } else { f32::NAN };
        match (g.is_nan(), w.is_nan()) {
            (true, true) => {}
            (false, false) => worst = worst.max((g - w).abs()),
            _ => return f32::INFINITY,
        }
    }
    worst
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_transport_delivers_the_simulators_frames() {
    let sim = SimConfig {
        camera: nav_hal::sim::CameraConfig { width: 640, height: 480, ..Default::default() },
        ..SimConfig::default()
    };
    let world = SimWorld::builtin("simple", sim).unwrap();
    let peer = RosbridgePeer::start_with(world, PeerConfig { camera_hz: 10.0, ..PeerConfig::default() }).await.unwrap();
    let truth = peer.with_world(|w| w.rgb());
    let true_depth = peer.with_world(|w| w.depth());
    let t = RosbridgeConfig::default().topics;
    let mut bytes_per_frame = Vec::new();
    for (transport, rgb_topic, depth_topic, compression) in [
        (ImageTransport::Raw, t.rgb.clone(), t.depth.clone(), "none"),
        (ImageTransport::Png, t.rgb.clone(), t.depth.clone(), "png"),
        (ImageTransport::Cbor, t.rgb.clone(), t.depth.clone(), "cbor"),
        (ImageTransport::Compressed, t.rgb_topic(true), t.depth_topic(true), "cbor"),
    ] {
        peer.clear_received();
        let mut hal = connected(config(&peer.url(), transport)).await;
        let (rgb, depth) = frames(&mut hal).await;
        assert_eq!((rgb.frame.width(), rgb.frame.height()), (640, 480));
        let diff = mean_abs_diff(rgb.frame.as_bytes(), truth.frame.as_bytes());
        if transport == ImageTransport::Compressed {
            assert!(diff < 8.0, "JPEG is the same picture: mean abs diff {diff}");
        } else {
            assert_eq!(diff, 0.0, "{transport:?} is lossless");
        }
        let err = depth_error(&depth, &true_depth);
        assert!(err <= 0.0006, "{transport:?}: depth within the millimetre rounding, worst {err} m");
        for topic in [&rgb_topic, &depth_topic] {
            let subs = subscribes(&peer, topic);
            assert_eq!(subs.len(), 1, "{transport:?}: one subscribe for {topic}");
            assert_eq!(subs[0]["compression"], compression);
            assert_eq!(subs[0]["throttle_rate"], 100);
            assert_eq!(subs[0]["queue_length"], 1);
        }
        let status = hal.link_status();
        let per_frame = |topic: &str| {
            let st = &status.topics[topic];
            assert!(st.received > 0 && st.bytes > 0, "{topic}: {st:?}");
            st.bytes / st.received
        };
        bytes_per_frame.push((transport, per_frame(&rgb_topic), per_frame(&depth_topic)));
        assert_eq!(status.sessions, 1);
    }
    for (transport, rgb, depth) in &bytes_per_frame {
        println!("{:<10} rgb8 640x480: {rgb:>8} B/frame   16UC1 640x480: {depth:>8} B/frame", transport.as_str());
    }
    let size = |tr: ImageTransport| bytes_per_frame.iter().find(|b| b.0 == tr).map(|b| (b.1, b.2)).unwrap();
    let (raw, cbor, jpeg) = (size(ImageTransport::Raw), size(ImageTransport::Cbor), size(ImageTransport::Compressed));
    assert!(raw.0 > 640 * 480 * 4, "base64 JSON carries 4/3 of the pixel bytes: {}", raw.0);
    assert!(cbor.0 < 640 * 480 * 3 + 1000, "CBOR carries the pixel bytes as they are: {}", cbor.0);
    assert!(jpeg.0 * 5 < cbor.0, "JPEG is several times smaller than raw: {} vs {}", jpeg.0, cbor.0);
    assert!(jpeg.1 < cbor.1, "compressedDepth PNG is smaller than raw depth: {} vs {}", jpeg.1, cbor.1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_takes_compressed_when_listed_and_cbor_otherwise() {
    let t = RosbridgeConfig::default().topics;
    for (serve_compressed, rosapi, want_rgb, want_compression) in [
        (true, true, t.rgb_topic(true), "cbor"),
        (false, true, t.rgb.clone(), "cbor"),
        (true, false, t.rgb.clone(), "cbor"),
    ] {
        let peer_config =
            PeerConfig { camera_hz: 10.0, serve_compressed, rosapi_topics: rosapi, ..PeerConfig::default() };
        let peer = peer_with(peer_config).await;
        let mut hal = connected(config(&peer.url(), ImageTransport::Auto)).await;
        let (rgb, _) = frames(&mut hal).await;
        let subs = subscribes(&peer, &want_rgb);
        assert_eq!(subs.len(), 1, "compressed listed {serve_compressed}, rosapi {rosapi}: subscribes {want_rgb}");
        assert_eq!(subs[0]["compression"], want_compression);
        let truth = peer.with_world(|w| w.rgb());
        if want_rgb == t.rgb {
            assert_eq!(rgb.frame, truth.frame, "the raw image arrives exact");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_compression_answers_json_and_frames_still_arrive() {
    let peer = peer_with(PeerConfig { camera_hz: 10.0, compression: false, ..PeerConfig::default() }).await;
    for transport in [ImageTransport::Cbor, ImageTransport::Png, ImageTransport::Compressed] {
        let mut hal = connected(config(&peer.url(), transport)).await;
        let (rgb, depth) = frames(&mut hal).await;
        let truth = peer.with_world(|w| w.rgb());
        if transport != ImageTransport::Compressed {
            assert_eq!(rgb.frame, truth.frame, "{transport:?} asked, JSON answered: exact");
        }
        assert!(depth_error(&depth, &peer.with_world(|w| w.depth())) <= 0.0006);
        assert!(hal.link_status().topics.values().all(|t| t.rejected == 0), "{transport:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttle_rate_holds_the_image_rate() {
    let peer = peer_with(PeerConfig { camera_hz: 25.0, ..PeerConfig::default() }).await;
    let cfg = RosbridgeConfig { image_rate_hz: 2.0, ..config(&peer.url(), ImageTransport::Cbor) };
    let mut hal = connected(cfg).await;
    let _ = frames(&mut hal).await;
    let topic = hal.config().topics.rgb.clone();
    let before = hal.link_status().topics[&topic].received;
    sleep(3.0).await;
    let got = hal.link_status().topics[&topic].received - before;
    println!("throttle: {got} colour frames in 3 s at image_rate_hz 2 (camera at 25 Hz)");
    assert_eq!(subscribes(&peer, &topic)[0]["throttle_rate"], 500);
    // 25 Hz published, at most 2 Hz delivered: 6 in 3 s (7 with the phase).
    assert!((5..=7).contains(&got), "{got} frames in 3 s at a 2 Hz throttle (the camera runs at 25 Hz)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_images_are_clear_errors_and_the_link_stays_up() {
    let peer = peer_with(PeerConfig { camera_hz: 10.0, ..PeerConfig::default() }).await;
    let transports = [ImageTransport::Raw, ImageTransport::Png, ImageTransport::Cbor, ImageTransport::Compressed];
    for corruption in [ImageCorruption::Data, ImageCorruption::Frames] {
        peer.set_image_corruption(corruption);
        for transport in transports {
            let mut hal = connected(config(&peer.url(), transport)).await;
            let seen = eventually(3.0, async || {
                let err = hal.rgb().await.err()?;
                let status = hal.link_status();
                status.topics.values().any(|t| t.rejected > 0).then_some((err, status))
            })
            .await;
            let (err, status) =
                seen.unwrap_or_else(|| panic!("{transport:?} {corruption:?}: broken images are counted"));
            let reasons: Vec<String> = status.topics.values().filter_map(|t| t.last_error.clone()).collect();
            let case = format!("{transport:?} {corruption:?}: {err} / {reasons:?}");
            if corruption == ImageCorruption::Data {
                assert!(matches!(&err, HalError::Protocol { .. }), "{case}");
                let want =
                    if transport == ImageTransport::Compressed { "cannot decode compressed image" } else { "rgb8" };
                assert!(err.to_string().contains(want), "{case}");
            } else {
                let want = match transport {
                    ImageTransport::Png => "png: cannot decode the PNG",
                    ImageTransport::Raw => "invalid JSON",
                    _ => "invalid CBOR frame",
                };
                assert!(reasons.iter().any(|r| r.contains(want)), "{case}");
            }
            assert!(!case.contains("Elapsed") && !case.contains("Error {"), "no debug renderings: {case}");
            assert!(hal.is_connected() && status.sessions == 1, "{case}: broken images do not drop the link");
            assert!(hal.scan().await.is_ok(), "the LiDAR is unaffected");
        }
    }
    peer.set_image_corruption(ImageCorruption::None);
    let mut hal = connected(config(&peer.url(), ImageTransport::Cbor)).await;
    let (rgb, _) = frames(&mut hal).await;
    assert_eq!(rgb.frame, peer.with_world(|w| w.rgb()).frame, "good images decode again");
}
