//! The rosbridge HAL's per-message costs: JSON → message → navkit type for
//! a 720-beam scan, a raw 640×480 `rgb8` image (base64), a 640×480 JPEG and
//! a 640×400 `16UC1` depth image; and for the camera transports
//! (`image_wire/...`), the whole receive path from the WebSocket frame to
//! the navkit frame for each transport (raw JSON, rosbridge's `png` and
//! `cbor` compression, `CompressedImage` as CBOR) at 640×480 `rgb8` and
//! `16UC1`, for the simulator's view and for the same view with camera
//! noise; the bytes per frame are printed first.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{Criterion, criterion_group, criterion_main};
use nav_core::lidar::LaserScan as CoreScan;
use nav_core::raster::{Rgb, RgbFrame};
use nav_hal::hal::DepthFrame;
use nav_hal::rosbridge::convert;
use nav_hal::rosbridge::images::{self, Inbound};
use nav_hal::rosbridge::msg::sensor_msgs::{CompressedImage, Image, LaserScan};
use nav_hal::sim::{CameraConfig, SimConfig, SimWorld};
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::time::Duration;

fn picture(w: usize, h: usize) -> RgbFrame {
    let mut f = RgbFrame::new(w, h, Rgb([120, 110, 100]));
    for k in 0..12 {
        let x = (k * w / 12) as i64;
        f.fill_rect(x, 0, x + 20, h as i64 - 1, Rgb([(k * 20) as u8, 200, 60]));
    }
    f.text(20, 20, "KITCHEN", 4, Rgb::WHITE, Some(Rgb::BLACK));
    f
}

fn benches(c: &mut Criterion) {
    let mut scan = CoreScan::full_circle(720, 0.05, 12.0, 2.5);
    for (i, r) in scan.ranges.iter_mut().enumerate() {
        if i % 7 == 0 {
            *r = f32::INFINITY;
        }
    }
    let scan_json = serde_json::to_string(&convert::scan_to_msg(&scan, 1.0, "laser")).unwrap();
    c.bench_function("rosbridge/scan_720_json_to_laserscan", |b| {
        b.iter(|| {
            let msg: LaserScan = serde_json::from_str(black_box(&scan_json)).unwrap();
            convert::scan_from_msg(&msg, 0.0).unwrap()
        })
    });
    let frame = picture(640, 480);
    let raw_json = serde_json::to_string(&convert::image_from_rgb(&frame, 1.0, "cam")).unwrap();
    c.bench_function("rosbridge/rgb8_640x480_json_to_frame", |b| {
        b.iter(|| {
            let msg: Image = serde_json::from_str(black_box(&raw_json)).unwrap();
            convert::rgb_from_image(&msg).unwrap()
        })
    });
    let jpeg: CompressedImage = convert::compressed_from_rgb(&frame, 80, 1.0, "cam").unwrap();
    c.bench_function("rosbridge/jpeg_640x480_decode", |b| {
        b.iter(|| convert::rgb_from_compressed(black_box(&jpeg)).unwrap())
    });
    let depth = DepthFrame {
        width: 640,
        height: 400,
        depth_m: (0..640 * 400).map(|i| 0.5 + (i % 640) as f32 * 0.01).collect(),
        stamp_s: 0.0,
    };
    let depth_msg = convert::image_from_depth(&depth, 1.0, "cam");
    c.bench_function("rosbridge/depth_16uc1_640x400_decode", |b| {
        b.iter(|| convert::depth_from_image(black_box(&depth_msg), 1.0).unwrap())
    });
}

/// One camera frame in each wire form, as rosbridge sends it.
struct Wire {
    /// `(transport, frame bytes, text frame?)`.
    forms: Vec<(&'static str, Vec<u8>, bool)>,
}

impl Wire {
    fn new(raw: &Image, compressed: &CompressedImage) -> Self {
        let publish =
            |msg: serde_json::Value| serde_json::json!({"op": "publish", "topic": "/cam", "msg": msg}).to_string();
        let raw_json = publish(serde_json::to_value(raw).unwrap());
        let png = images::png_wrap(&raw_json).unwrap();
        let cbor = images::cbor_publish("/cam", raw).unwrap();
        let comp_cbor = images::cbor_publish("/cam/compressed", compressed).unwrap();
        let comp_json = publish(serde_json::to_value(compressed).unwrap());
        Self {
            forms: vec![
                ("raw", raw_json.into_bytes(), true),
                ("png", png.into_bytes(), true),
                ("cbor", cbor, false),
                ("compressed_json", comp_json.into_bytes(), true),
                ("compressed", comp_cbor, false),
            ],
        }
    }
}

/// The receive path of the camera socket: frame → message.
fn body(frame: &[u8], text: bool) -> images::Payload {
    let inbound =
        if text { images::decode_text(std::str::from_utf8(frame).unwrap()) } else { images::decode_binary(frame) };
    match inbound.unwrap() {
        Inbound::Publish { msg, .. } => msg,
        other => panic!("{other:?}"),
    }
}

fn decode_rgb(frame: &[u8], text: bool, compressed: bool) -> RgbFrame {
    let msg = body(frame, text);
    if compressed {
        convert::rgb_from_compressed(&msg.into_message::<CompressedImage>().unwrap()).unwrap()
    } else {
        convert::rgb_from_image(&msg.into_message::<Image>().unwrap()).unwrap()
    }
}

fn decode_depth(frame: &[u8], text: bool, compressed: bool) -> DepthFrame {
    let msg = body(frame, text);
    if compressed {
        convert::depth_from_compressed(&msg.into_message::<CompressedImage>().unwrap(), 0.0).unwrap()
    } else {
        convert::depth_from_image(&msg.into_message::<Image>().unwrap(), 0.0).unwrap()
    }
}

/// The simulator's 640×480 view and depth, optionally with camera noise
/// (±6 grey levels, ±4 mm), which is what defeats deflate on a real camera.
fn camera(noise: bool) -> (RgbFrame, DepthFrame) {
    let sim =
        SimConfig { camera: CameraConfig { width: 640, height: 480, ..Default::default() }, ..SimConfig::default() };
    let mut world = SimWorld::builtin("simple", sim).unwrap();
    let (rgb, mut depth) = world.rgbd();
    let mut frame = rgb.frame;
    if noise {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
        let mut bytes = frame.as_bytes().to_vec();
        for b in &mut bytes {
            *b = (i16::from(*b) + rng.random_range(-6..=6)).clamp(0, 255) as u8;
        }
        frame = RgbFrame::from_raw(640, 480, bytes).unwrap();
        for d in &mut depth.depth_m {
            if d.is_finite() {
                *d += rng.random_range(-0.004..=0.004);
            }
        }
    }
    (frame, depth)
}

fn image_transports(c: &mut Criterion) {
    let mut group = c.benchmark_group("rosbridge/image_wire");
    group.sample_size(20).measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    for (scene, noise) in [("sim", false), ("noisy", true)] {
        let (frame, depth) = camera(noise);
        let rgb = Wire::new(
            &convert::image_from_rgb(&frame, 1.0, "cam"),
            &convert::compressed_from_rgb(&frame, 80, 1.0, "cam").unwrap(),
        );
        let d = Wire::new(
            &convert::image_from_depth(&depth, 1.0, "cam"),
            &convert::compressed_depth_from_depth(&depth, 1.0, "cam").unwrap(),
        );
        for (kind, wire) in [("rgb8", &rgb), ("16uc1", &d)] {
            for (transport, bytes, text) in &wire.forms {
                println!("bytes/frame {kind}_640x480_{scene}/{transport}: {}", bytes.len());
                if let Ok(dir) = std::env::var("NAVKIT_WIRE_DIR") {
                    // the frames for nav-hal/benches/rosbridge_wire.py (Python's json and cbor2)
                    let ext = if *text { "json" } else { "cbor" };
                    std::fs::write(format!("{dir}/{kind}_{scene}_{transport}.{ext}"), bytes).unwrap();
                }
                let compressed = transport.starts_with("compressed");
                group.bench_function(format!("{kind}_640x480_{scene}/{transport}"), |b| {
                    if kind == "rgb8" {
                        b.iter(|| decode_rgb(black_box(bytes), *text, compressed))
                    } else {
                        b.iter(|| decode_depth(black_box(bytes), *text, compressed))
                    }
                });
            }
        }
    }
    // frame → `sensor_msgs/Image` only (no pixel conversion), the part
    // Python's json + base64 and cbor2 do in nav-hal/benches/rosbridge_wire.py
    let (frame, _) = camera(true);
    let wire = Wire::new(
        &convert::image_from_rgb(&frame, 1.0, "cam"),
        &convert::compressed_from_rgb(&frame, 80, 1.0, "cam").unwrap(),
    );
    for (transport, bytes, text) in wire.forms.iter().filter(|f| f.0 == "raw" || f.0 == "cbor") {
        group.bench_function(format!("rgb8_640x480_noisy_to_message/{transport}"), |b| {
            b.iter(|| body(black_box(bytes), *text).into_message::<Image>().unwrap())
        });
    }
    group.finish();
}

criterion_group!(rosbridge, benches, image_transports);
criterion_main!(rosbridge);
