//! Benchmarks: `observe_step` over 10,000 steps and Navigation Context text
//! serialization.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use nav_core::action::Action;
use nav_memory::{MemoryConfig, SceneObservation, SpatialMemory, StepFlags};
use std::hint::black_box;

const TYPES: [&str; 4] = ["kitchen", "hallway", "bedroom", "living room"];

/// A deterministic action/scene script (xorshift, fixed seed).
fn script(n: usize) -> Vec<(Action, Option<SceneObservation>)> {
    let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let action = match s % 10 {
                0..=5 => Action::Forward,
                6 | 7 => Action::TurnLeft,
                _ => Action::TurnRight,
            };
            let scene = (i % 20 == 0).then(|| {
                SceneObservation::new(TYPES[(i / 80) % 4]).with_objects(["table", "chair"]).with_description("a room")
            });
            (action, scene)
        })
        .collect()
}

fn episode(memory: &mut SpatialMemory, steps: &[(Action, Option<SceneObservation>)]) {
    for (i, (a, scene)) in steps.iter().enumerate() {
        memory.observe_step(*a, scene.clone(), StepFlags::default());
        if i % 25 == 0 {
            memory.push_dc(false, "kitchen", "the kitchen is likely to hold the target object");
        }
    }
}

fn bench(c: &mut Criterion) {
    let steps = script(10_000);
    c.bench_function("observe_step_10k_steps", |b| {
        b.iter(|| {
            let mut m = SpatialMemory::new(MemoryConfig::default()).unwrap();
            for (a, scene) in &steps {
                black_box(m.observe_step(*a, scene.clone(), StepFlags::default()));
            }
            m
        })
    });
    let mut m = SpatialMemory::new(MemoryConfig::default()).unwrap();
    episode(&mut m, &script(1_000));
    let ctx = m.context(None);
    c.bench_function("context_to_text_1000_steps", |b| b.iter(|| black_box(&ctx).to_text()));
    c.bench_function("context_build_and_text_1000_steps", |b| b.iter(|| black_box(&m).context(None).to_text()));
}

criterion_group!(benches, bench);
criterion_main!(benches);
