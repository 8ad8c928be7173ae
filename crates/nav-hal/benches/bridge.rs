//! The bridge's own per-step overhead: BridgeHal stepping the `openroom`
//! backend (a 16×12 image; the simulator's compute is microseconds), and
//! the bare `ping` round trip.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{Criterion, criterion_group, criterion_main};
use nav_core::action::Action;
use nav_hal::bridge::{BridgeCommand, BridgeConfig, BridgeHal, EpisodeSpec};
use nav_hal::hal::Actuators;
use std::path::PathBuf;

fn python() -> String {
    std::env::var("NAVKIT_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

fn bench_bridge(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let pkg = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bridge");
    let cmd = BridgeCommand::new(python())
        .args(["-m", "navkit_bridge", "--backend", "openroom", "--max-steps", "100000000"])
        .env("PYTHONPATH", pkg.to_string_lossy());
    let mut hal = rt.block_on(BridgeHal::spawn_command(&cmd, BridgeConfig::default())).unwrap();
    rt.block_on(hal.reset(&EpisodeSpec::index(0))).unwrap();
    c.bench_function("bridge_step_openroom_roundtrip", |b| {
        b.iter(|| rt.block_on(hal.act(Action::TurnLeft)).unwrap());
    });
    c.bench_function("bridge_ping_roundtrip", |b| {
        b.iter(|| rt.block_on(hal.ping()).unwrap());
    });
    rt.block_on(hal.close()).unwrap();
}

criterion_group!(benches, bench_bridge);
criterion_main!(benches);
