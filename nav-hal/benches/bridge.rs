//! The bridge's own per-step overhead.
//!
//! - `bridge_step_openroom_roundtrip`: a full BridgeHal step against the
//!   `openroom` backend (16×12 image, simulator compute in microseconds).
//! - `bridge_step_*_overhead`: per step, the round trip minus the time the
//!   server reports inside the simulator (stepping, rendering, detections):
//!   pipes, JSON, base64 and the client's parsing, measured with
//!   `iter_custom`. The MiniWorld ones (320×240 raw RGB + detections, the
//!   default observation, and the same plus depth) run when the bench's Python (`$NAVKIT_PYTHON`, else
//!   `.venv/bin/python`, else `python3`) imports miniworld.
//! - `bridge_ping_roundtrip`: the bare transport.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use nav_core::action::Action;
use nav_hal::bridge::{BridgeCommand, BridgeConfig, BridgeHal, EpisodeSpec};
use nav_hal::hal::Actuators;
use std::path::PathBuf;
use std::time::Duration;

fn python() -> String {
    if let Ok(p) = std::env::var("NAVKIT_PYTHON") {
        return p;
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    if venv.exists() { venv.to_string_lossy().into_owned() } else { "python3".to_string() }
}

fn command(backend: &str) -> BridgeCommand {
    let pkg = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bridge");
    BridgeCommand::new(python())
        .args(["-m", "navkit_bridge", "--backend", backend, "--max-steps", "100000000", "--log-level", "warning"])
        .env("PYTHONPATH", pkg.to_string_lossy())
}

/// Steps (turning in place, so episodes never end) and sums the overhead.
fn overhead(rt: &tokio::runtime::Runtime, hal: &mut BridgeHal, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        rt.block_on(hal.act(Action::TurnLeft)).unwrap();
        total += hal.last_timing().unwrap().overhead();
    }
    total
}

fn bench_bridge(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut hal = rt.block_on(BridgeHal::spawn_command(&command("openroom"), BridgeConfig::default())).unwrap();
    rt.block_on(hal.reset(&EpisodeSpec::index(0))).unwrap();
    c.bench_function("bridge_step_openroom_roundtrip", |b| {
        b.iter(|| rt.block_on(hal.act(Action::TurnLeft)).unwrap());
    });
    c.bench_function("bridge_step_openroom_overhead", |b| b.iter_custom(|n| overhead(&rt, &mut hal, n)));
    c.bench_function("bridge_ping_roundtrip", |b| {
        b.iter(|| rt.block_on(hal.ping()).unwrap());
    });
    rt.block_on(hal.close()).unwrap();

    let probe = "import pyglet; pyglet.options['headless'] = True; import miniworld";
    if !std::process::Command::new(python()).args(["-c", probe]).output().is_ok_and(|o| o.status.success()) {
        eprintln!("bridge_step_miniworld_overhead skipped: miniworld is not importable by {}", python());
        return;
    }
    let mut group = c.benchmark_group("miniworld");
    group.sample_size(20).measurement_time(Duration::from_secs(20));
    for (name, depth) in [("rgb_detections", false), ("rgb_depth_detections", true)] {
        let config = BridgeConfig { depth, reset_timeout_s: 600.0, ..BridgeConfig::default() };
        let mut hal = rt.block_on(BridgeHal::spawn_command(&command("miniworld"), config)).unwrap();
        rt.block_on(hal.reset(&EpisodeSpec::index(0))).unwrap();
        group.bench_function(format!("bridge_step_miniworld_overhead_{name}"), |b| {
            b.iter_custom(|n| overhead(&rt, &mut hal, n))
        });
        group.bench_function(format!("bridge_step_miniworld_roundtrip_{name}"), |b| {
            b.iter(|| rt.block_on(hal.act(Action::TurnLeft)).unwrap());
        });
        rt.block_on(hal.close()).unwrap();
    }
    group.finish();
}

criterion_group!(benches, bench_bridge);
criterion_main!(benches);
