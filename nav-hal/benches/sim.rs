//! Simulator speed: a discrete step plus a 720-beam scan, camera renders,
//! detections, geodesic fields and procedural houses.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{Criterion, criterion_group, criterion_main};
use nav_core::action::Action;
use nav_core::geometry::Pose2;
use nav_hal::arena::procedural::generate_house;
use nav_hal::sim::{SimConfig, SimWorld};
use std::hint::black_box;

fn step_with_scan(c: &mut Criterion) {
    for arena in ["simple", "house_a", "house_c"] {
        let mut w = SimWorld::builtin(arena, SimConfig::default()).unwrap();
        let pattern = [Action::Forward, Action::Forward, Action::TurnLeft, Action::Forward, Action::TurnRight];
        let mut i = 0usize;
        c.bench_function(&format!("step_and_scan_720/{arena}"), |b| {
            b.iter(|| {
                if i % 400 == 0 {
                    w.reset();
                }
                let out = w.act(pattern[i % pattern.len()]);
                i += 1;
                let scan = w.scan();
                black_box((out, scan.scan.ranges[0]))
            })
        });
    }
    let mut w = SimWorld::builtin("house_a", SimConfig::default()).unwrap();
    c.bench_function("scan_720_only/house_a", |b| b.iter(|| black_box(w.scan().scan.ranges[360])));
}

fn render(c: &mut Criterion) {
    let mut w = SimWorld::builtin("house_a", SimConfig::default()).unwrap();
    w.teleport(Pose2::new(3.0, 2.9, 2.75)).unwrap();
    c.bench_function("render_rgb_320x240/house_a", |b| b.iter(|| black_box(w.rgb().frame.as_bytes()[0])));
    c.bench_function("render_rgbd_320x240/house_a", |b| b.iter(|| black_box(w.rgbd().1.depth_m[0])));
    c.bench_function("detections/house_a", |b| b.iter(|| black_box(w.detections().len())));
    c.bench_function("panorama_12/house_a", |b| b.iter(|| black_box(w.panorama(12).unwrap().views.len())));
}

fn setup(c: &mut Criterion) {
    let mut group = c.benchmark_group("setup");
    group.sample_size(20);
    group.bench_function("world_and_geodesic_field/house_c", |b| {
        b.iter(|| {
            let w = SimWorld::builtin("house_c", SimConfig::default()).unwrap();
            black_box(w.geodesic_start_to_goal())
        })
    });
    let mut seed = 0u64;
    group.bench_function("generate_house", |b| {
        b.iter(|| {
            seed += 1;
            black_box(generate_house(seed).objects.len())
        })
    });
    group.finish();
}

criterion_group!(benches, step_with_scan, render, setup);
criterion_main!(benches);
