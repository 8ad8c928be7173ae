//! The rosbridge HAL's per-message costs: JSON → message → navkit type for
//! a 720-beam scan, a raw 640×480 `rgb8` image (base64), a 640×480 JPEG and
//! a 640×400 `16UC1` depth image.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{Criterion, criterion_group, criterion_main};
use nav_core::lidar::LaserScan as CoreScan;
use nav_core::raster::{Rgb, RgbFrame};
use nav_hal::hal::DepthFrame;
use nav_hal::rosbridge::convert;
use nav_hal::rosbridge::msg::sensor_msgs::{CompressedImage, Image, LaserScan};
use std::hint::black_box;

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

criterion_group!(rosbridge, benches);
criterion_main!(rosbridge);
