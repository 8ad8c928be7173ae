//! [`SafetyConfig`]: every parameter of the safety layer in one serde
//! struct with its defaults, loadable from TOML.
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
use nav_core::config::{ConfigError, below, count_in, in_range, in_range_above};
use nav_core::drive::DriveKind;
use nav_core::geometry::{Point2, polygon_area};
use serde::{Deserialize, Serialize};

/// One day in seconds: the upper bound of the long timeouts.
const DAY_S: f64 = 86_400.0;

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

/// Speed tiers and the `move_toward` direction table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SpeedConfig {
    /// `creep` tier, m/s (tight spaces, TTC 0.5–1.2 s).
    /// Range: (0, 5], below `slow_mps`.
    pub creep_mps: f64,
    /// `slow`, m/s.
    /// Range: (0, 5], below `medium_mps`.
    pub slow_mps: f64,
    /// `medium`, m/s.
    /// Range: (0, 5], below `fast_mps`.
    pub medium_mps: f64,
    /// `fast`, m/s.
    /// Range: (0, 5], at most `max_linear_mps`.
    pub fast_mps: f64,
    /// Hard cap on |linear| whatever is commanded, m/s.
    /// Range: (0, 5].
    pub max_linear_mps: f64,
    /// Hard cap on |angular|, rad/s (the base's velocity smoother: 0.5).
    /// Range: (0, 10].
    pub max_angular_rad_s: f64,
    /// Angular rate of `forward_left` / `forward_right`, rad/s.
    /// Range: (0, 10].
    pub diagonal_angular_rad_s: f64,
    /// Linear speed of `left` / `right`, m/s.
    /// Range: (0, 5].
    pub side_linear_mps: f64,
    /// Angular rate of `left` / `right`, rad/s.
    /// Range: (0, 10].
    pub side_angular_rad_s: f64,
    /// Forward (or reverse) speed of an Ackermann arc turn for `rotate`, m/s.
    /// Range: (0, 5].
    pub turn_linear_mps: f64,
    /// Spin rate of `rotate` on a differential base, rad/s.
    /// Range: (0, 10].
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

/// Clearance thresholds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClearanceConfig {
    /// Emergency stop below this distance in the direction of motion, m.
    /// Range: (0, 10], below `reject_m`.
    pub stop_m: f64,
    /// `move_toward` is rejected below this clearance, m.
    /// Range: below `full_speed_m`.
    pub reject_m: f64,
    /// Full speed at or beyond this; speed is downgraded to slow and
    /// scaled proportionally below it, m.
    /// Range: (0, 20].
    pub full_speed_m: f64,
    /// Half width of a direction's arc (±30°), degrees.
    /// Range: (0, 90].
    pub arc_half_width_deg: f64,
    /// Travel distance over which the direction of a curved motion is
    /// taken, m (the checked arc spans the heading and the chord to the
    /// point reached after this distance).
    /// Range: (0, 10].
    pub motion_lookahead_m: f64,
    /// Fewer usable beams than this in the direction of motion means the
    /// robot is blind there and must not move that way.
    /// Range: 0..=100000.
    pub min_valid_beams: usize,
    /// Fewer valid readings than this fraction of the beams in the
    /// direction of motion is a sensor fault there (REP-117: NaN is
    /// invalid; rosbridge sends every non-finite range as `null`, read as
    /// NaN): the robot must not move that way. 0 checks only
    /// `min_valid_beams` (scanners that see a narrow field, such as a
    /// depth camera's scan); `nav rosmaster` raises it to
    /// `[rosbridge] scan_min_valid_fraction` (0.5).
    /// Range: [0, 1].
    pub min_valid_fraction: f64,
    /// `check_path_clear` calls an obstacle a "wall" when its contiguous
    /// surface is at least this wide, m.
    /// Range: (0, 10].
    pub wall_min_width_m: f64,
    /// Half width of the corridor a **straight reverse** sweeps, m: the
    /// robot's half width plus a margin. Backing straight out checks this
    /// corridor behind the robot instead of the ±30° arc, so a box beside
    /// the robot (outside its swept path) does not block the way back out.
    /// Range: (0, 5].
    pub reverse_corridor_half_width_m: f64,
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
            min_valid_fraction: 0.0,
            wall_min_width_m: 0.5,
            reverse_corridor_half_width_m: 0.2,
        }
    }
}

/// Time-to-collision tiers: above `full_s` no limit, then
/// medium, slow, creep, and a stop below `stop_s`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TtcConfig {
    /// Above this TTC the commanded speed is kept, s.
    /// Range: (0, 60].
    pub full_s: f64,
    /// Between this and `full_s`: at most medium speed, s.
    /// Range: below `full_s`.
    pub medium_s: f64,
    /// Between this and `medium_s`: at most slow speed; below it (down to
    /// `stop_s`): creep, s.
    /// Range: below `medium_s`.
    pub slow_s: f64,
    /// Below this TTC: stop, s.
    /// Range: (0, 60], below `slow_s`.
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
    /// Range: (0, 3600].
    pub max_scan_age_s: f64,
}

impl Default for SensorConfig {
    fn default() -> Self {
        Self { max_scan_age_s: 5.0 }
    }
}

/// Blocked-action memory: directions that keep failing are suppressed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BlockedConfig {
    /// After this many blocks inside the cooldown the action is suppressed.
    /// Range: 1..=1000.
    pub max_retries: u32,
    /// Seconds after the last block when an entry is forgotten.
    /// Range: (0, 86400].
    pub cooldown_s: f64,
}

impl Default for BlockedConfig {
    fn default() -> Self {
        Self { max_retries: 2, cooldown_s: 15.0 }
    }
}

/// Watchdog tiers (what the robot does while no VLM response arrives) and
/// velocity decay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WatchdogConfig {
    /// CONTINUE below this many seconds without a VLM response.
    /// Range: (0, 3600], below `stop_wait_s`.
    pub continue_s: f64,
    /// STOP_WAIT below this; LOCAL_NAV from here.
    /// Range: below `local_nav_s`.
    pub stop_wait_s: f64,
    /// LOCAL_NAV below this; RETURN_HOME from here.
    /// Range: (0, 86400].
    pub local_nav_s: f64,
    /// Velocity decay time constant τ, s.
    /// Range: (0, 3600].
    pub decay_tau_s: f64,
    /// A decayed |linear| below this is set to zero, m/s.
    /// Range: [0, 5].
    pub zero_below_mps: f64,
}

impl Default for WatchdogConfig {
    fn default() -> Self {
        Self { continue_s: 3.0, stop_wait_s: 10.0, local_nav_s: 30.0, decay_tau_s: 2.0, zero_below_mps: 0.01 }
    }
}

/// Network monitor (API health from the time since the last successful
/// call and the mean latency).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetworkConfig {
    /// Number of recent calls kept.
    /// Range: 1..=10000.
    pub window: usize,
    /// Mean latency above this is "elevated", s.
    /// Range: (0, 3600].
    pub elevated_latency_s: f64,
    /// No successful call for this long is "degraded", s.
    /// Range: (0, 86400], below `offline_after_s`.
    pub degraded_after_s: f64,
    /// No successful call for this long is "offline", s.
    /// Range: (0, 86400].
    pub offline_after_s: f64,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        Self { window: 20, elevated_latency_s: 3.0, degraded_after_s: 10.0, offline_after_s: 30.0 }
    }
}

/// What is wrong with a zone, if anything: an empty name, fewer than three
/// vertices, a non-finite vertex, zero area, or a slowdown speed that is
/// not a finite number ≥ 0. The one check behind both
/// [`SafetyConfig::validate`] and [`crate::geofence::Geofence::add_zone`].
pub(crate) fn zone_problem(name: &str, kind: ZoneKind, polygon: &[Point2]) -> Option<&'static str> {
    if name.trim().is_empty() {
        return Some("the name is empty");
    }
    if polygon.len() < 3 {
        return Some("a polygon needs at least 3 vertices");
    }
    if !polygon.iter().all(|p| p.is_finite()) {
        return Some("a vertex is not finite");
    }
    if polygon_area(polygon).abs() < 1e-9 {
        return Some("the polygon has zero area");
    }
    match kind {
        ZoneKind::Slowdown { max_speed_mps } if !(max_speed_mps.is_finite() && max_speed_mps >= 0.0) => {
            Some("max_speed_mps must be a finite number >= 0")
        }
        _ => None,
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

/// Geofencing (keep-out zones).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GeofenceConfig {
    /// Horizon of the continuous guard's sweep check, s.
    /// Range: (0, 60].
    pub horizon_s: f64,
    /// Integration step of sweeps, s.
    /// Range: [0.001, 10].
    pub sample_step_s: f64,
    /// Zones loaded at start.
    /// Range: valid polygons (at least 3 vertices, unique names).
    pub zones: Vec<ZoneConfig>,
}

impl Default for GeofenceConfig {
    fn default() -> Self {
        Self { horizon_s: 1.0, sample_step_s: 0.05, zones: Vec::new() }
    }
}

/// Event triggers (events that call the VLM at once).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TriggerConfig {
    /// A gap at least this wide is a doorway, m.
    /// Range: (0, 20].
    pub doorway_min_width_m: f64,
    /// A sector at least this far is open (the summary's CLEAR), m.
    /// Range: (0, 100].
    pub open_sector_m: f64,
    /// This many adjacent open sectors make an intersection.
    /// Range: 1..=12.
    pub min_adjacent_open: usize,
    /// All three front sectors nearer than this: dead end, m.
    /// Range: (0, 100].
    pub dead_end_m: f64,
    /// Moved farther than this since the last call, m.
    /// Range: (0, 1000].
    pub moved_m: f64,
    /// No trigger within this many seconds of the previous one.
    /// Range: [0, 3600].
    pub cooldown_s: f64,
    /// A scene trigger (doorway, intersection, dead end) that fired re-arms
    /// only once its condition has gone away *and* the robot is this far
    /// from where it fired, m: a condition that flickers as the robot
    /// drives past one opening calls once, not at every flicker.
    /// Range: [0, 100].
    pub rearm_m: f64,
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
            rearm_m: 2.0,
        }
    }
}

/// How decisions are timed ([`ScheduleConfig::mode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleMode {
    /// Event triggers, the base period as a fallback, frame skipping, a
    /// call at once when the robot has nothing to do, and no base-period
    /// call while a navigation goal is making progress (up to the backstop).
    #[default]
    Adaptive,
    /// One call every `base_period_s` and nothing else: no triggers, no
    /// skipping, always with the image; between calls the action in progress
    /// runs out and the robot then waits for the next tick. The fixed-rate
    /// loop adaptive scheduling is measured against.
    Fixed,
}

/// VLM call scheduling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScheduleConfig {
    /// `adaptive` (the default) or `fixed` (one call every base period).
    pub mode: ScheduleMode,
    /// Base period between calls without triggers, s.
    /// Range: (0, 3600], below `max_interval_s`.
    pub base_period_s: f64,
    /// VLM call timeout, s (for the caller's HTTP client).
    /// Range: (0, 3600].
    pub call_timeout_s: f64,
    /// Skip only above this frame similarity.
    /// Range: [0, 1].
    pub skip_similarity: f64,
    /// Skip only when the nearest obstacle is farther than this, m.
    /// Range: [0, 100].
    pub skip_min_obstacle_m: f64,
    /// Never skip when this long has passed since the last call, s.
    /// Range: (0, 86400].
    pub max_interval_s: f64,
    /// While a navigation goal is making progress, base-period calls wait
    /// this long after the last call instead of `max_interval_s`, s: the
    /// model's plan is being carried out (scene triggers still call).
    /// Range: [`max_interval_s`, 86400].
    pub goal_max_interval_s: f64,
    /// Text-only (no image) above this similarity.
    /// Range: [0, 1].
    pub text_only_similarity: f64,
    /// Text-only only when the nearest obstacle is farther than this, m.
    /// Range: [0, 100].
    pub text_only_min_obstacle_m: f64,
    /// Window of the rolling statistics (and the period of the stats
    /// line), s.
    /// Range: (0, 86400].
    pub stats_window_s: f64,
    /// After the safety layer refuses a tool call (or a decision cannot be
    /// acted on), no new decision for this long, s: the model is not asked
    /// again on the next tick.
    /// Range: [0, 3600].
    pub refusal_cooldown_s: f64,
}

impl Default for ScheduleConfig {
    fn default() -> Self {
        Self {
            mode: ScheduleMode::Adaptive,
            base_period_s: 5.0,
            call_timeout_s: 8.0,
            skip_similarity: 0.92,
            skip_min_obstacle_m: 2.0,
            max_interval_s: 10.0,
            goal_max_interval_s: 15.0,
            text_only_similarity: 0.95,
            text_only_min_obstacle_m: 3.0,
            stats_window_s: 60.0,
            refusal_cooldown_s: 2.0,
        }
    }
}

impl From<ConfigError> for SafetyError {
    fn from(e: ConfigError) -> Self {
        SafetyError::InvalidConfig { field: e.key, reason: e.message }
    }
}

impl SafetyConfig {
    /// Checks every value against the range in its doc comment and every
    /// ordering the layer relies on; keys are relative to this struct
    /// (`speeds.fast_mps`).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.check_speeds().map_err(|e| e.under("speeds"))?;
        self.check_clearance_and_ttc()?;
        if let DriveKind::Ackermann { min_turn_radius_m } = self.drive {
            in_range_above("drive.min_turn_radius_m", min_turn_radius_m, 0.0, 10.0)?;
        }
        in_range_above("sensors.max_scan_age_s", self.sensors.max_scan_age_s, 0.0, 3600.0)?;
        count_in("blocked.max_retries", self.blocked.max_retries, 1, 1000)?;
        in_range_above("blocked.cooldown_s", self.blocked.cooldown_s, 0.0, DAY_S)?;
        self.check_timing()?;
        let g = &self.geofence;
        in_range_above("geofence.horizon_s", g.horizon_s, 0.0, 60.0)?;
        in_range("geofence.sample_step_s", g.sample_step_s, 0.001, 10.0)?;
        let mut names = std::collections::HashSet::new();
        for z in &g.zones {
            let polygon: Vec<Point2> = z.polygon.iter().map(|&[x, y]| Point2::new(x, y)).collect();
            let problem = if names.insert(z.name.as_str()) {
                zone_problem(&z.name, z.kind, &polygon)
            } else {
                Some("duplicate zone name")
            };
            if let Some(reason) = problem {
                return Err(ConfigError::new("geofence.zones", format!("zone {:?}: {reason}", z.name)));
            }
        }
        let tr = &self.triggers;
        in_range_above("triggers.doorway_min_width_m", tr.doorway_min_width_m, 0.0, 20.0)?;
        in_range_above("triggers.open_sector_m", tr.open_sector_m, 0.0, 100.0)?;
        count_in("triggers.min_adjacent_open", tr.min_adjacent_open, 1, 12)?;
        in_range_above("triggers.dead_end_m", tr.dead_end_m, 0.0, 100.0)?;
        in_range_above("triggers.moved_m", tr.moved_m, 0.0, 1000.0)?;
        in_range("triggers.cooldown_s", tr.cooldown_s, 0.0, 3600.0)?;
        in_range("triggers.rearm_m", tr.rearm_m, 0.0, 100.0)?;
        Ok(())
    }

    fn check_speeds(&self) -> Result<(), ConfigError> {
        let s = &self.speeds;
        for (k, v, hi) in [
            ("creep_mps", s.creep_mps, 5.0),
            ("slow_mps", s.slow_mps, 5.0),
            ("medium_mps", s.medium_mps, 5.0),
            ("fast_mps", s.fast_mps, 5.0),
            ("max_linear_mps", s.max_linear_mps, 5.0),
            ("max_angular_rad_s", s.max_angular_rad_s, 10.0),
            ("diagonal_angular_rad_s", s.diagonal_angular_rad_s, 10.0),
            ("side_linear_mps", s.side_linear_mps, 5.0),
            ("side_angular_rad_s", s.side_angular_rad_s, 10.0),
            ("turn_linear_mps", s.turn_linear_mps, 5.0),
            ("spin_rad_s", s.spin_rad_s, 10.0),
        ] {
            in_range_above(k, v, 0.0, hi)?;
        }
        below("creep_mps", s.creep_mps, "slow_mps", s.slow_mps)?;
        below("slow_mps", s.slow_mps, "medium_mps", s.medium_mps)?;
        below("medium_mps", s.medium_mps, "fast_mps", s.fast_mps)?;
        if s.fast_mps > s.max_linear_mps {
            return Err(ConfigError::new(
                "fast_mps",
                format!("must not exceed `max_linear_mps` ({} > {})", s.fast_mps, s.max_linear_mps),
            ));
        }
        Ok(())
    }

    fn check_clearance_and_ttc(&self) -> Result<(), ConfigError> {
        let c = &self.clearance;
        in_range_above("clearance.stop_m", c.stop_m, 0.0, 10.0)?;
        below("clearance.stop_m", c.stop_m, "clearance.reject_m", c.reject_m)?;
        below("clearance.reject_m", c.reject_m, "clearance.full_speed_m", c.full_speed_m)?;
        in_range_above("clearance.full_speed_m", c.full_speed_m, 0.0, 20.0)?;
        in_range_above("clearance.arc_half_width_deg", c.arc_half_width_deg, 0.0, 90.0)?;
        in_range_above("clearance.motion_lookahead_m", c.motion_lookahead_m, 0.0, 10.0)?;
        in_range_above("clearance.reverse_corridor_half_width_m", c.reverse_corridor_half_width_m, 0.0, 5.0)?;
        count_in("clearance.min_valid_beams", c.min_valid_beams, 0, 100_000)?;
        in_range("clearance.min_valid_fraction", c.min_valid_fraction, 0.0, 1.0)?;
        in_range_above("clearance.wall_min_width_m", c.wall_min_width_m, 0.0, 10.0)?;
        let t = &self.ttc;
        in_range_above("ttc.stop_s", t.stop_s, 0.0, 60.0)?;
        below("ttc.stop_s", t.stop_s, "ttc.slow_s", t.slow_s)?;
        below("ttc.slow_s", t.slow_s, "ttc.medium_s", t.medium_s)?;
        below("ttc.medium_s", t.medium_s, "ttc.full_s", t.full_s)?;
        in_range_above("ttc.full_s", t.full_s, 0.0, 60.0)
    }

    fn check_timing(&self) -> Result<(), ConfigError> {
        let w = &self.watchdog;
        in_range_above("watchdog.continue_s", w.continue_s, 0.0, 3600.0)?;
        below("watchdog.continue_s", w.continue_s, "watchdog.stop_wait_s", w.stop_wait_s)?;
        below("watchdog.stop_wait_s", w.stop_wait_s, "watchdog.local_nav_s", w.local_nav_s)?;
        in_range_above("watchdog.local_nav_s", w.local_nav_s, 0.0, DAY_S)?;
        in_range_above("watchdog.decay_tau_s", w.decay_tau_s, 0.0, 3600.0)?;
        in_range("watchdog.zero_below_mps", w.zero_below_mps, 0.0, 5.0)?;
        let n = &self.network;
        count_in("network.window", n.window, 1, 10_000)?;
        in_range_above("network.elevated_latency_s", n.elevated_latency_s, 0.0, 3600.0)?;
        in_range_above("network.degraded_after_s", n.degraded_after_s, 0.0, DAY_S)?;
        below("network.degraded_after_s", n.degraded_after_s, "network.offline_after_s", n.offline_after_s)?;
        in_range_above("network.offline_after_s", n.offline_after_s, 0.0, DAY_S)?;
        let sc = &self.schedule;
        in_range_above("schedule.base_period_s", sc.base_period_s, 0.0, 3600.0)?;
        in_range_above("schedule.call_timeout_s", sc.call_timeout_s, 0.0, 3600.0)?;
        in_range("schedule.skip_similarity", sc.skip_similarity, 0.0, 1.0)?;
        in_range("schedule.text_only_similarity", sc.text_only_similarity, 0.0, 1.0)?;
        in_range("schedule.skip_min_obstacle_m", sc.skip_min_obstacle_m, 0.0, 100.0)?;
        in_range("schedule.text_only_min_obstacle_m", sc.text_only_min_obstacle_m, 0.0, 100.0)?;
        below("schedule.base_period_s", sc.base_period_s, "schedule.max_interval_s", sc.max_interval_s)?;
        in_range_above("schedule.max_interval_s", sc.max_interval_s, 0.0, DAY_S)?;
        in_range("schedule.goal_max_interval_s", sc.goal_max_interval_s, sc.max_interval_s, DAY_S)?;
        in_range_above("schedule.stats_window_s", sc.stats_window_s, 0.0, DAY_S)?;
        in_range("schedule.refusal_cooldown_s", sc.refusal_cooldown_s, 0.0, 3600.0)
    }
}
