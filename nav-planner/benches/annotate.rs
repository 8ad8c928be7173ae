//! nav-planner image benchmark: what the explore protocol does to every
//! camera frame it sends (seed 001 task 1.2, seed 003 §2.2) — annotate a
//! 640×480 frame (depth at the 7 sample points, heading arrow and cardinal
//! text, sector labels, numbered candidate arrows) and encode it as JPEG
//! quality 80 and base64. The frame is a real simulator view of `house_a`
//! with its aligned depth image. The seed's budget is 15 ms; navkit's goal
//! is < 5 ms.
//!
//! Run: `cargo bench -p nav-planner --bench annotate`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};

use nav_core::geometry::Pose2;
use nav_hal::sim::{CameraConfig, SimConfig, SimWorld};
use nav_planner::protocol::annotate::{Annotation, CandidateArrow, annotate, annotated_jpeg_base64, encode_jpeg};

fn bench_annotate(c: &mut Criterion) {
    let config = SimConfig {
        camera: CameraConfig { width: 640, height: 480, ..CameraConfig::default() },
        ..SimConfig::default()
    };
    let mut world = SimWorld::builtin("house_a", config).unwrap();
    world.teleport(Pose2::new(3.0, 2.9, 2.75)).unwrap();
    let (rgb, depth) = world.rgbd();
    assert_eq!((rgb.frame.width(), rgb.frame.height()), (640, 480));
    let arrows: Vec<CandidateArrow> = (0..5)
        .map(|i| CandidateArrow {
            label: format!("c{}", i + 1),
            bearing_rad: -0.6 + 0.3 * f64::from(i),
            distance_m: 1.0 + f64::from(i) * 0.5,
        })
        .collect();
    let annotation = Annotation {
        depth_m: Some(&depth.depth_m),
        heading_deg: 157.0,
        sector_labels: true,
        candidates: &arrows,
        hfov_rad: rgb.hfov_rad,
    };
    let mut group = c.benchmark_group("annotate_640x480");
    group.bench_function("annotate_only", |b| {
        b.iter(|| {
            let mut f = rgb.frame.clone();
            annotate(&mut f, &annotation);
            black_box(f.as_bytes()[0])
        })
    });
    group.bench_function("jpeg_q80_only", |b| b.iter(|| black_box(encode_jpeg(&rgb.frame, 80).unwrap().len())));
    group.bench_function("annotate_jpeg_q80_base64", |b| {
        b.iter(|| black_box(annotated_jpeg_base64(&rgb.frame, &annotation).unwrap().len()))
    });
    group.finish();
    let b64 = annotated_jpeg_base64(&rgb.frame, &annotation).unwrap();
    eprintln!("annotated 640x480 JPEG q80: {} base64 chars ({} KB)", b64.len(), b64.len() * 3 / 4 / 1024);
}

criterion_group!(benches, bench_annotate);
criterion_main!(benches);
