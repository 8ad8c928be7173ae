//! Property (issue 20, item 3): no configuration whose every value lies in
//! its documented range hangs a short run, aborts, or allocates without
//! bound. Each case writes a config with values drawn from the ranges'
//! ends and interiors, runs `nav run --max-steps 3` under an address-space
//! limit and a wall-clock limit, and accepts only a finished episode
//! (exit 0 or 1) or a clear configuration error naming a key (exit 2, for
//! the cross-key limits such as grid and panorama sizes).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use std::fmt::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Wall-clock limit of one short run (a debug build on a loaded 2-core CI
/// machine; a configuration that hangs never gets close to ending).
const WALL_LIMIT: Duration = Duration::from_secs(120);
/// Address-space limit of one run: far above a normal run (~30 MB
/// resident), far below the allocations the grid and image caps prevent.
const ADDRESS_SPACE_BYTES: u64 = 6 << 30;

/// A value of a key: one end of its range or a log-uniform draw inside it.
fn float_in(lo: f64, hi: f64) -> impl Strategy<Value = f64> {
    let (l, h) = (lo.max(1e-6).ln(), hi.ln());
    prop_oneof![Just(lo.max(1e-6)), Just(hi), (l..h).prop_map(f64::exp)]
}

fn count_in(lo: u64, hi: u64) -> impl Strategy<Value = u64> {
    prop_oneof![Just(lo), Just(hi), lo..=hi]
}

/// `(table, key, value)` for every key of a case; `None` keeps the default.
type Entry = (&'static str, &'static str, Option<String>);

fn entry_f(table: &'static str, key: &'static str, lo: f64, hi: f64) -> BoxedStrategy<Entry> {
    proptest::option::of(float_in(lo, hi).prop_map(|v| format!("{v:e}"))).prop_map(move |v| (table, key, v)).boxed()
}

fn entry_n(table: &'static str, key: &'static str, lo: u64, hi: u64) -> BoxedStrategy<Entry> {
    proptest::option::of(count_in(lo, hi).prop_map(|v| v.to_string())).prop_map(move |v| (table, key, v)).boxed()
}

/// The numeric keys whose size drives work or memory, with their
/// documented ranges (nav-cli's config docs).
fn entries() -> Vec<BoxedStrategy<Entry>> {
    vec![
        entry_f("sim", "substep_s", 1e-4, 1.0),
        entry_f("sim", "action_time_s", 0.0, 3600.0),
        entry_f("sim", "geodesic_cell_m", 0.01, 10.0),
        entry_f("sim", "coverage_cell_m", 0.01, 10.0),
        entry_f("sim", "coverage_range_m", 0.01, 1000.0),
        entry_f("sim", "move_speed_mps", 1e-6, 10.0),
        entry_f("sim", "rotate_speed_dps", 1e-6, 3600.0),
        entry_f("sim", "waypoint_threshold_m", 1e-6, 10.0),
        entry_f("sim", "max_linear_mps", 1e-6, 100.0),
        entry_f("sim", "max_angular_rps", 1e-6, 20.0),
        entry_n("sim.lidar", "beams", 4, 10_000),
        entry_f("sim.lidar", "range_max", 1.0, 1000.0),
        entry_n("sim.camera", "width", 2, 4096),
        entry_n("sim.camera", "height", 2, 4096),
        entry_f("sim.camera", "max_depth_m", 0.01, 1000.0),
        entry_f("sim.step", "forward_m", 1e-6, 10.0),
        entry_f("sim.step", "turn_deg", 1e-6, 180.0),
        entry_n("objectnav", "panorama_views", 1, 360),
        entry_n("objectnav", "max_replans_without_motion", 0, 1000),
        entry_f("explore", "tick_s", 0.01, 10.0),
        map_size_and_resolution(),
        entry_f("candidates", "resolution_m", 0.01, 10.0),
        entry_f("candidates", "inflation_m", 0.0, 10.0),
        entry_n("candidates.candidates", "max_candidates", 1, 100),
    ]
}

/// `[explore.map]` size and resolution, drawn together so that most cases
/// stay within the 4096-cells-per-side limit (the rest test its error).
fn map_size_and_resolution() -> BoxedStrategy<Entry> {
    (float_in(1e-3, 1000.0), float_in(0.01, 1.0), any::<bool>())
        .prop_map(|(size, res, within)| {
            let res = if within { res.max(size / 4000.0) } else { res };
            ("explore.map", "size_and_resolution", Some(format!("size_m = {size:e}\nresolution_m = {res:e}")))
        })
        .boxed()
}

fn to_toml(entries: &[Entry]) -> String {
    let mut tables: Vec<(&str, Vec<(&str, &str)>)> = Vec::new();
    for (table, key, value) in entries {
        let Some(v) = value else { continue };
        match tables.iter_mut().find(|(t, _)| t == table) {
            Some((_, keys)) => keys.push((key, v)),
            None => tables.push((table, vec![(key, v)])),
        }
    }
    let mut out = String::new();
    for (table, keys) in tables {
        writeln!(out, "[{table}]").unwrap();
        for (k, v) in keys {
            if k == "size_and_resolution" {
                writeln!(out, "{v}").unwrap();
            } else {
                writeln!(out, "{k} = {v}").unwrap();
            }
        }
    }
    out
}

/// Runs `nav` with `args` under the limits; `(exit code, stderr, seconds)`.
fn run_limited(args: &[&str]) -> (Option<i32>, String, f64) {
    let nav = env!("CARGO_BIN_EXE_nav");
    let limit = format!("--as={ADDRESS_SPACE_BYTES}");
    let mut cmd = if std::path::Path::new("/usr/bin/prlimit").exists() {
        let mut c = Command::new("/usr/bin/prlimit");
        c.arg(limit).arg("--").arg(nav);
        c
    } else {
        Command::new(nav)
    };
    let dir = tempfile::tempdir().unwrap();
    let err_path = dir.path().join("stderr");
    let mut child = cmd
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > WALL_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = std::fs::read_to_string(&err_path).unwrap_or_default();
    let secs = start.elapsed().as_secs_f64();
    match status {
        Some(s) => (s.code(), err, secs),
        None => panic!("{args:?} still running after {WALL_LIMIT:?}\n{err}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_config_within_the_ranges_ends_a_short_run_cleanly(
        entries in entries(),
        protocol in prop_oneof![Just("objectnav"), Just("candidates"), Just("explore")],
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        let text = to_toml(&entries);
        std::fs::write(&path, &text).unwrap();
        let args = ["run", "--protocol", protocol, "--max-steps", "3", "--json", "--config", path.to_str().unwrap()];
        let (code, err, secs) = run_limited(&args);
        let shown = format!("{protocol} with\n{text}\nexit {code:?} after {secs:.1} s\n{err}");
        eprintln!("case: {protocol} exit {code:?} {secs:.1} s {}", err.lines().last().unwrap_or(""));
        match code {
            Some(0 | 1) => {}
            Some(2) => prop_assert!(err.contains("nav: config") && err.contains('['), "{shown}"),
            _ => prop_assert!(false, "not a clean end: {shown}"),
        }
    }
}
