//! [`SafetyConfig`]: every parameter of the safety layer in one serde
//! struct with the SPEC §3 defaults, loadable from TOML.
//!
//! ```
//! use nav_safety::SafetyConfig;
//! let c = SafetyConfig::default();
//! assert_eq!((c.speeds.slow_mps, c.speeds.medium_mps, c.speeds.fast_mps), (0.08, 0.12, 0.18));
//! assert_eq!((c.clearance.stop_m, c.clearance.reject_m, c.clearance.full_speed_m), (0.3, 0.5, 1.0));
//! c.validate()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::error::SafetyError;
use nav_core::drive::DriveKind;
use serde::{Deserialize, Serialize};

/// All parameters of the safety layer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SafetyConfig {
    /// Speed tiers and the direction table.
    pub speeds: SpeedConfig,
    /// Stop / reject / full-speed clearances.
    pub clearance: ClearanceConfig,
    /// Time-to-collision tiers.
    pub ttc: TtcConfig,
    /// Drive kinematics of the base. Not read from configuration files:
    /// it is a property of the robot, which reports it in its HAL
    /// capabilities (the explore loop copies it from there); code that
    /// uses the safety layer on its own sets it directly.
    #[serde(skip)]
    pub drive: DriveKind,
    /// LiDAR freshness.
    pub sensors: SensorConfig,
    /// Blocked-action memory.
    pub blocked: BlockedConfig,
    /// Watchdog tiers and velocity decay.
    pub watchdog: WatchdogConfig,
    /// Network monitor tiers.
    pub network: NetworkConfig,
    /// Geofence zones and sweep horizon.
    pub geofence: GeofenceConfig,
    /// Event triggers.
    pub triggers: TriggerConfig,
    /// VLM call scheduling and frame skipping.
    pub schedule: ScheduleConfig,
}

/// Speed tiers (seed 003 §4.5) and the `move_toward` direction table (seed
/// 003 §3.16).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SpeedConfig {
    /// `creep` tier, m/s (tight spaces, TTC 0.5–1.2 s).
    pub creep_mps: f64,
    /// `slow`, m/s.
    pub slow_mps: f64,
    /// `medium`, m/s.
    pub medium_mps: f64,
    /// `fast`, m/s.
    pub fast_mps: f64,
    /// Hard cap on |linear| whatever is commanded, m/s.
    pub max_linear_mps: f64,
    /// Hard cap on |angular|, rad/s (the base's velocity smoother: 0.5).
    pub max_angular_rad_s: f64,
    /// Angular rate of `forward_left` / `forward_right`, rad/s.
    pub diagonal_angular_rad_s: f64,
    /// Linear speed of `left` / `right`, m/s.
    pub side_linear_mps: f64,
    /// Angular rate of `left` / `right`, rad/s.
    pub side_angular_rad_s: f64,
    /// Forward (or reverse) speed of an Ackermann arc turn for `rotate`, m/s.
    pub turn_linear_mps: f64,
    /// Spin rate of `rotate` on a differential base, rad/s.
    pub spin_rad_s: f64,
}

impl Default for SpeedConfig {
    fn default() -> Self {
        Self {
            creep_mps: 0.05,
            slow_mps: 0.08,
            medium_mps: 0.12,
            fast_mps: 0.18,
            max_linear_mps: 0.18,
            max_angular_rad_s: 0.5,
            diagonal_angular_rad_s: 0.25,
            side_linear_mps: 0.06,
            side_angular_rad_s: 0.45,
            turn_linear_mps: 0.06,
            spin_rad_s: 0.5,
        }
    }
}

/// Clearance thresholds (seeds 001 NFR-4 / 003 §4.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClearanceConfig {
    /// Emergency stop below this distance in the direction of motion, m.
    pub stop_m: f64,
    /// `move_toward` is rejected below this clearance, m.
    pub reject_m: f64,
    /// Full speed at or beyond this; speed is downgraded to slow and
    /// scaled proportionally below it, m.
    pub full_speed_m: f64,
    /// Half width of a direction's arc (seed: ±30°), degrees.
    pub arc_half_width_deg: f64,
    /// Travel distance over which the direction of a curved motion is
    /// taken, m (the checked arc spans the heading and the chord to the
    /// point reached after this distance).
    pub motion_lookahead_m: f64,
    /// Fewer usable beams than this in the direction of motion means the
    /// robot is blind there and must not move that way.
    pub min_valid_beams: usize,
    /// `check_path_clear` calls an obstacle a "wall" when its contiguous
    /// surface is at least this wide, m.
    pub wall_min_width_m: f64,
}

impl Default for ClearanceConfig {
    fn default() -> Self {
        Self {
            stop_m: 0.3,
            reject_m: 0.5,
            full_speed_m: 1.0,
            arc_half_width_deg: 30.0,
            motion_lookahead_m: 0.5,
            min_valid_beams: 1,
            wall_min_width_m: 0.5,
        }
    }
}

/// Time-to-collision tiers (seed 003 §4.4): above `full_s` no limit, then
/// medium, slow, creep, and a stop below `stop_s`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TtcConfig {
    /// Above this TTC the commanded speed is kept, s.
    pub full_s: f64,
    /// Between this and `full_s`: at most medium speed, s.
    pub medium_s: f64,
    /// Between this and `medium_s`: at most slow speed; below it (down to
    /// `stop_s`): creep, s.
    pub slow_s: f64,
    /// Below this TTC: stop, s.
    pub stop_s: f64,
}

impl Default for TtcConfig {
    fn default() -> Self {
        Self { full_s: 5.0, medium_s: 2.0, slow_s: 1.2, stop_s: 0.5 }
    }
}

/// LiDAR freshness.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SensorConfig {
    /// A scan older than this is "sensor loss": no motion, s.
    pub max_scan_age_s: f64,
}

impl Default for SensorConfig {
    fn default() -> Self {
        Self { max_scan_age_s: 5.0 }
    }
}

/// Blocked-action memory (seed 001 FR-8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BlockedConfig {
    /// After this many blocks inside the cooldown the action is suppressed.
    pub max_retries: u32,
    /// Seconds after the last block when an entry is forgotten.
    pub cooldown_s: f64,
}

impl Default for BlockedConfig {
    fn default() -> Self {
        Self { max_retries: 2, cooldown_s: 15.0 }
    }
}

/// Watchdog tiers (seed 001 FR-9) and velocity decay (seed 003 §4.8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WatchdogConfig {
    /// CONTINUE below this many seconds without a VLM response.
    pub continue_s: f64,
    /// STOP_WAIT below this; LOCAL_NAV from here.
    pub stop_wait_s: f64,
    /// LOCAL_NAV below this; RETURN_HOME from here.
    pub local_nav_s: f64,
    /// Velocity decay time constant τ, s.
    pub decay_tau_s: f64,
    /// A decayed |linear| below this is set to zero, m/s.
    pub zero_below_mps: f64,
}

impl Default for WatchdogConfig {
    fn default() -> Self {
        Self { continue_s: 3.0, stop_wait_s: 10.0, local_nav_s: 30.0, decay_tau_s: 2.0, zero_below_mps: 0.01 }
    }
}

/// Network monitor (seed 001 task 3.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetworkConfig {
    /// Number of recent calls kept.
    pub window: usize,
    /// Mean latency above this is "elevated", s.
    pub elevated_latency_s: f64,
    /// No successful call for this long is "degraded", s.
    pub degraded_after_s: f64,
    /// No successful call for this long is "offline", s.
    pub offline_after_s: f64,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        Self { window: 20, elevated_latency_s: 3.0, degraded_after_s: 10.0, offline_after_s: 30.0 }
    }
}

/// What a geofence zone does.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ZoneKind {
    /// The robot must not enter.
    Keepout,
    /// The robot may enter at most at this speed.
    Slowdown {
        /// Speed limit inside the zone, m/s.
        max_speed_mps: f64,
    },
}

/// A zone as written in a config file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZoneConfig {
    /// Human-readable unique name (e.g. `stairs_area`).
    pub name: String,
    /// Keepout or slowdown.
    pub kind: ZoneKind,
    /// Polygon vertices `[x, y]` in the map frame, metres.
    pub polygon: Vec<[f64; 2]>,
}

/// Geofencing (seed 003 §4.9).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GeofenceConfig {
    /// Horizon of the continuous guard's sweep check, s.
    pub horizon_s: f64,
    /// Integration step of sweeps, s.
    pub sample_step_s: f64,
    /// Zones loaded at start.
    pub zones: Vec<ZoneConfig>,
}

impl Default for GeofenceConfig {
    fn default() -> Self {
        Self { horizon_s: 1.0, sample_step_s: 0.05, zones: Vec::new() }
    }
}

/// Event triggers (seed 001 task 5.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TriggerConfig {
    /// A gap at least this wide is a doorway, m.
    pub doorway_min_width_m: f64,
    /// A sector at least this far is open (the summary's CLEAR), m.
    pub open_sector_m: f64,
    /// This many adjacent open sectors make an intersection.
    pub min_adjacent_open: usize,
    /// All three front sectors nearer than this: dead end, m.
    pub dead_end_m: f64,
    /// Moved farther than this since the last call, m.
    pub moved_m: f64,
    /// No trigger within this many seconds of the previous one.
    pub cooldown_s: f64,
}

impl Default for TriggerConfig {
    fn default() -> Self {
        Self {
            doorway_min_width_m: 0.7,
            open_sector_m: 2.0,
            min_adjacent_open: 3,
            dead_end_m: 1.0,
            moved_m: 1.5,
            cooldown_s: 2.0,
        }
    }
}

/// VLM call scheduling (seed 001 Phase 5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScheduleConfig {
    /// Base period between calls without triggers, s.
    pub base_period_s: f64,
    /// VLM call timeout, s (for the caller's HTTP client).
    pub call_timeout_s: f64,
    /// Skip only above this frame similarity.
    pub skip_similarity: f64,
    /// Skip only when the nearest obstacle is farther than this, m.
    pub skip_min_obstacle_m: f64,
    /// Never skip when this long has passed since the last call, s.
    pub max_interval_s: f64,
    /// Text-only (no image) above this similarity.
    pub text_only_similarity: f64,
    /// Text-only only when the nearest obstacle is farther than this, m.
    pub text_only_min_obstacle_m: f64,
    /// Window of the rolling statistics, s.
    pub stats_window_s: f64,
}

impl Default for ScheduleConfig {
    fn default() -> Self {
        Self {
            base_period_s: 5.0,
            call_timeout_s: 8.0,
            skip_similarity: 0.92,
            skip_min_obstacle_m: 2.0,
            max_interval_s: 10.0,
            text_only_similarity: 0.95,
            text_only_min_obstacle_m: 3.0,
            stats_window_s: 60.0,
        }
    }
}

fn bad(field: &str, reason: impl Into<String>) -> SafetyError {
    SafetyError::InvalidConfig { field: field.to_owned(), reason: reason.into() }
}

fn positive(field: &str, v: f64) -> Result<(), SafetyError> {
    if v.is_finite() && v > 0.0 { Ok(()) } else { Err(bad(field, format!("must be a finite number > 0, got {v}"))) }
}

fn ordered(a_name: &str, a: f64, b_name: &str, b: f64) -> Result<(), SafetyError> {
    if a < b { Ok(()) } else { Err(bad(a_name, format!("must be below `{b_name}` ({a} >= {b})"))) }
}

fn unit(field: &str, v: f64) -> Result<(), SafetyError> {
    if (0.0..=1.0).contains(&v) { Ok(()) } else { Err(bad(field, format!("must be in [0, 1], got {v}"))) }
}

impl SafetyConfig {
    /// Checks every value and every ordering the layer relies on.
    pub fn validate(&self) -> Result<(), SafetyError> {
        let s = &self.speeds;
        for (n, v) in [
            ("speeds.creep_mps", s.creep_mps),
            ("speeds.slow_mps", s.slow_mps),
            ("speeds.medium_mps", s.medium_mps),
            ("speeds.fast_mps", s.fast_mps),
            ("speeds.max_linear_mps", s.max_linear_mps),
            ("speeds.max_angular_rad_s", s.max_angular_rad_s),
            ("speeds.diagonal_angular_rad_s", s.diagonal_angular_rad_s),
            ("speeds.side_linear_mps", s.side_linear_mps),
            ("speeds.side_angular_rad_s", s.side_angular_rad_s),
            ("speeds.turn_linear_mps", s.turn_linear_mps),
            ("speeds.spin_rad_s", s.spin_rad_s),
        ] {
            positive(n, v)?;
        }
        ordered("speeds.creep_mps", s.creep_mps, "speeds.slow_mps", s.slow_mps)?;
        ordered("speeds.slow_mps", s.slow_mps, "speeds.medium_mps", s.medium_mps)?;
        ordered("speeds.medium_mps", s.medium_mps, "speeds.fast_mps", s.fast_mps)?;
        if s.fast_mps > s.max_linear_mps {
            return Err(bad("speeds.fast_mps", "must not exceed `speeds.max_linear_mps`"));
        }
        let c = &self.clearance;
        positive("clearance.stop_m", c.stop_m)?;
        ordered("clearance.stop_m", c.stop_m, "clearance.reject_m", c.reject_m)?;
        ordered("clearance.reject_m", c.reject_m, "clearance.full_speed_m", c.full_speed_m)?;
        positive("clearance.full_speed_m", c.full_speed_m)?;
        positive("clearance.arc_half_width_deg", c.arc_half_width_deg)?;
        if c.arc_half_width_deg > 90.0 {
            return Err(bad("clearance.arc_half_width_deg", "must be at most 90"));
        }
        positive("clearance.motion_lookahead_m", c.motion_lookahead_m)?;
        positive("clearance.wall_min_width_m", c.wall_min_width_m)?;
        let t = &self.ttc;
        positive("ttc.stop_s", t.stop_s)?;
        ordered("ttc.stop_s", t.stop_s, "ttc.slow_s", t.slow_s)?;
        ordered("ttc.slow_s", t.slow_s, "ttc.medium_s", t.medium_s)?;
        ordered("ttc.medium_s", t.medium_s, "ttc.full_s", t.full_s)?;
        positive("ttc.full_s", t.full_s)?;
        if let DriveKind::Ackermann { min_turn_radius_m } = self.drive {
            positive("drive.min_turn_radius_m", min_turn_radius_m)?;
        }
        positive("sensors.max_scan_age_s", self.sensors.max_scan_age_s)?;
        positive("blocked.cooldown_s", self.blocked.cooldown_s)?;
        if self.blocked.max_retries == 0 {
            return Err(bad("blocked.max_retries", "must be at least 1"));
        }
        let w = &self.watchdog;
        positive("watchdog.continue_s", w.continue_s)?;
        ordered("watchdog.continue_s", w.continue_s, "watchdog.stop_wait_s", w.stop_wait_s)?;
        ordered("watchdog.stop_wait_s", w.stop_wait_s, "watchdog.local_nav_s", w.local_nav_s)?;
        positive("watchdog.local_nav_s", w.local_nav_s)?;
        positive("watchdog.decay_tau_s", w.decay_tau_s)?;
        if !(w.zero_below_mps.is_finite() && w.zero_below_mps >= 0.0) {
            return Err(bad("watchdog.zero_below_mps", "must be a finite number >= 0"));
        }
        let n = &self.network;
        if n.window == 0 {
            return Err(bad("network.window", "must be at least 1"));
        }
        positive("network.elevated_latency_s", n.elevated_latency_s)?;
        positive("network.degraded_after_s", n.degraded_after_s)?;
        ordered("network.degraded_after_s", n.degraded_after_s, "network.offline_after_s", n.offline_after_s)?;
        positive("network.offline_after_s", n.offline_after_s)?;
        let g = &self.geofence;
        positive("geofence.horizon_s", g.horizon_s)?;
        positive("geofence.sample_step_s", g.sample_step_s)?;
        let tr = &self.triggers;
        positive("triggers.doorway_min_width_m", tr.doorway_min_width_m)?;
        positive("triggers.open_sector_m", tr.open_sector_m)?;
        if tr.min_adjacent_open == 0 || tr.min_adjacent_open > 12 {
            return Err(bad("triggers.min_adjacent_open", "must be in 1..=12"));
        }
        positive("triggers.dead_end_m", tr.dead_end_m)?;
        positive("triggers.moved_m", tr.moved_m)?;
        if !(tr.cooldown_s.is_finite() && tr.cooldown_s >= 0.0) {
            return Err(bad("triggers.cooldown_s", "must be a finite number >= 0"));
        }
        let sc = &self.schedule;
        positive("schedule.base_period_s", sc.base_period_s)?;
        positive("schedule.call_timeout_s", sc.call_timeout_s)?;
        unit("schedule.skip_similarity", sc.skip_similarity)?;
        unit("schedule.text_only_similarity", sc.text_only_similarity)?;
        if !(sc.skip_min_obstacle_m >= 0.0 && sc.text_only_min_obstacle_m >= 0.0) {
            return Err(bad("schedule.skip_min_obstacle_m", "obstacle distances must be >= 0"));
        }
        ordered("schedule.base_period_s", sc.base_period_s, "schedule.max_interval_s", sc.max_interval_s)?;
        positive("schedule.max_interval_s", sc.max_interval_s)?;
        positive("schedule.stats_window_s", sc.stats_window_s)?;
        Ok(())
    }
}
