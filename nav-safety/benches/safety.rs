//! nav-safety benchmarks: one `SafetyExecutor::execute` of a `move_toward`
//! and of a `check_path_clear`, and one `ContinuousGuard::guard` tick, on a
//! 720-beam scan of a corridor with a wall ahead.
//!
//! Run: `cargo bench -p nav-safety --bench safety`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use nav_core::geometry::Pose2;
use nav_core::lidar::LaserScan;
use nav_safety::{SafetyConfig, SafetyExecutor, SafetySensors, Target, ToolCall, VelocityTarget};
use std::hint::black_box;

/// A 1.6 m wide corridor (walls at y = ±0.8) closed 1.5 m ahead.
fn corridor() -> LaserScan {
    let mut s = LaserScan::full_circle(720, 0.05, 12.0, 0.0);
    for i in 0..720 {
        let a = s.angle(i);
        let side = 0.8 / a.sin().abs().max(1e-9);
        let front = if a.cos() > 0.0 { 1.5 / a.cos() } else { f64::INFINITY };
        s.ranges[i] = side.min(front) as f32;
    }
    s
}

fn bench(c: &mut Criterion) {
    let scan = corridor();
    let mut ex = SafetyExecutor::new(SafetyConfig::default()).unwrap();
    let sensors = SafetySensors::new(&scan, 0.0, Pose2::origin(), 0.05);
    let mv =
        ToolCall::parse("move_toward", &serde_json::json!({"direction": "forward_left", "speed": "fast"})).unwrap();
    let check =
        ToolCall::parse("check_path_clear", &serde_json::json!({"direction": "forward", "distance_m": 2.0})).unwrap();
    c.bench_function("execute_move_toward_720", |b| b.iter(|| black_box(ex.execute(black_box(&mv), &sensors))));
    c.bench_function("execute_check_path_clear_720", |b| b.iter(|| black_box(ex.execute(black_box(&check), &sensors))));
    let Target::Velocity(v) = ex.execute(&mv, &sensors).target else { panic!("expected a velocity") };
    let guard = ex.guard().clone();
    c.bench_function("guard_tick_720", |b| b.iter(|| black_box(guard.guard(black_box(&v), &scan, 0.05))));
    let straight = VelocityTarget { linear: 0.18, angular: 0.0, duration_s: 3.0 };
    c.bench_function("guard_tick_720_straight", |b| {
        b.iter(|| black_box(guard.guard(black_box(&straight), &scan, 0.05)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
