//! `SafetyConfig` loads from TOML with the SPEC §3 defaults for everything
//! left out, rejects unknown fields, and validates value orderings.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use nav_core::config::ConfigError;
use nav_core::drive::DriveKind;
use nav_safety::config::SafetyConfig;
use nav_safety::geofence::ZoneKind;
use nav_safety::{SafetyError, SafetyExecutor};

#[test]
fn defaults_are_the_spec_values() {
    let c = SafetyConfig::default();
    assert_eq!((c.speeds.slow_mps, c.speeds.medium_mps, c.speeds.fast_mps), (0.08, 0.12, 0.18));
    assert_eq!((c.clearance.stop_m, c.clearance.reject_m, c.clearance.full_speed_m), (0.3, 0.5, 1.0));
    assert_eq!((c.blocked.max_retries, c.blocked.cooldown_s), (2, 15.0));
    assert_eq!((c.watchdog.continue_s, c.watchdog.stop_wait_s, c.watchdog.local_nav_s), (3.0, 10.0, 30.0));
    assert_eq!(c.watchdog.decay_tau_s, 2.0);
    assert_eq!((c.schedule.call_timeout_s, c.schedule.base_period_s), (8.0, 5.0));
    assert_eq!(
        (c.schedule.skip_similarity, c.schedule.skip_min_obstacle_m, c.schedule.max_interval_s),
        (0.92, 2.0, 10.0)
    );
    let t = &c.triggers;
    assert_eq!(
        (t.doorway_min_width_m, t.min_adjacent_open, t.dead_end_m, t.moved_m, t.cooldown_s),
        (0.7, 3, 1.0, 1.5, 2.0)
    );
    assert_eq!((c.ttc.full_s, c.ttc.medium_s, c.ttc.slow_s, c.ttc.stop_s), (5.0, 2.0, 1.2, 0.5));
    assert_eq!(c.sensors.max_scan_age_s, 5.0);
    assert_eq!(c.drive, DriveKind::Differential, "the robot reports its kinematics; the default is the permissive one");
    c.validate().unwrap();
    // The default survives a TOML round trip.
    let text = toml::to_string(&c).unwrap();
    assert_eq!(toml::from_str::<SafetyConfig>(&text).unwrap(), c);
}

#[test]
fn partial_toml_with_zones() {
    let text = r#"
        [speeds]
        fast_mps = 0.15
        max_linear_mps = 0.15

        [watchdog]
        local_nav_s = 120.0

        [[geofence.zones]]
        name = "stairs"
        kind = { type = "keepout" }
        polygon = [[2.0, 2.0], [3.0, 2.0], [3.0, 3.0]]

        [[geofence.zones]]
        name = "rug"
        kind = { type = "slowdown", max_speed_mps = 0.05 }
        polygon = [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]
    "#;
    let c: SafetyConfig = toml::from_str(text).unwrap();
    assert_eq!(c.speeds.fast_mps, 0.15);
    assert_eq!(c.speeds.slow_mps, 0.08, "unset fields keep their defaults");
    assert_eq!(c.watchdog.local_nav_s, 120.0);
    assert_eq!(c.geofence.zones[1].kind, ZoneKind::Slowdown { max_speed_mps: 0.05 });
    let ex = SafetyExecutor::new(c).unwrap();
    assert_eq!(ex.geofence().zones().len(), 2);
}

#[test]
fn unknown_fields_and_bad_values_are_errors() {
    let err = toml::from_str::<SafetyConfig>("[clearance]\nstop_distance = 0.3\n").unwrap_err();
    assert!(err.to_string().contains("stop_distance"), "{err}");
    let err = toml::from_str::<SafetyConfig>("[watchdgo]\ncontinue_s = 1\n").unwrap_err();
    assert!(err.to_string().contains("watchdgo"), "{err}");

    let c: SafetyConfig = toml::from_str("[clearance]\nstop_m = 0.6\n").unwrap();
    assert_eq!(
        c.validate(),
        Err(ConfigError::new("clearance.stop_m", "must be below `clearance.reject_m` (0.6 >= 0.5)"))
    );
    assert_eq!(
        SafetyExecutor::new(c).err(),
        Some(SafetyError::InvalidConfig {
            field: "clearance.stop_m".into(),
            reason: "must be below `clearance.reject_m` (0.6 >= 0.5)".into()
        })
    );
    let c: SafetyConfig = toml::from_str("[speeds]\nslow_mps = -1.0\n").unwrap();
    assert!(
        matches!(SafetyExecutor::new(c), Err(SafetyError::InvalidConfig { field, .. }) if field == "speeds.slow_mps")
    );
    let c: SafetyConfig = toml::from_str("[watchdog]\nstop_wait_s = 40.0\n").unwrap();
    assert!(matches!(c.validate(), Err(ConfigError { key, .. }) if key == "watchdog.stop_wait_s"));
    let c: SafetyConfig = toml::from_str("[speeds]\nfast_mps = -0.1\n").unwrap();
    assert_eq!(c.validate().unwrap_err().to_string(), "speeds.fast_mps: must be in (0, 5] (got -0.1)");
    let c: SafetyConfig = toml::from_str("[geofence]\nsample_step_s = 1e-12\n").unwrap();
    assert_eq!(c.validate().unwrap_err().key, "geofence.sample_step_s");
    let bad_zone =
        "[[geofence.zones]]\nname = \"x\"\nkind = { type = \"keepout\" }\npolygon = [[0.0, 0.0], [1.0, 1.0]]\n";
    let c: SafetyConfig = toml::from_str(bad_zone).unwrap();
    assert_eq!(c.validate().unwrap_err().key, "geofence.zones");
    assert!(matches!(SafetyExecutor::new(c), Err(SafetyError::InvalidZone { name, .. }) if name == "x"));
}
