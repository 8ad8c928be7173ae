//! `validate()` of the three loop configurations: every numeric field
//! against the range its doc comment states, children checked with their
//! field name as key prefix (`safety.speeds.fast_mps`). `nav --config`
//! calls these when it reads the file, and [`run_episode`] before it
//! builds anything, so a bad value is a [`ConfigError`] naming the key,
//! never a failure deep inside a loop.
//!
//! [`run_episode`]: crate::navigator::episode::run_episode

use crate::navigator::candidates_loop::CandidatesLoopConfig;
use crate::navigator::explore_loop::{ExploreLoopConfig, Pacing};
use crate::navigator::objectnav_loop::ObjectNavLoopConfig;
use nav_core::config::{ConfigError, count_in, in_range, in_range_above};

/// Largest step, cycle or decision budget a config may ask for.
pub const MAX_BUDGET: u32 = 1_000_000;

impl ObjectNavLoopConfig {
    /// Checks the ranges in the field docs; errors name the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        count_in("max_steps", self.max_steps, 1, MAX_BUDGET)?;
        self.memory_config.validate().map_err(|e| e.under("memory_config"))?;
        count_in("panorama_views", self.panorama_views, 1, 360)?;
        self.doorway.validate().map_err(|e| e.under("doorway"))?;
        count_in("max_replans_without_motion", self.max_replans_without_motion, 0, 1000)
    }
}

impl ExploreLoopConfig {
    /// Checks the ranges in the field docs; errors name the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        in_range("tick_s", self.tick_s, 0.01, 10.0)?;
        in_range_above("max_time_s", self.max_time_s, 0.0, 1_000_000.0)?;
        count_in("max_decisions", self.max_decisions, 1, MAX_BUDGET)?;
        self.safety.validate().map_err(|e| e.under("safety"))?;
        self.map.validate().map_err(|e| e.under("map"))?;
        in_range_above("path_speed_mps", self.path_speed_mps, 0.0, 5.0)?;
        in_range_above("goal_tolerance_m", self.goal_tolerance_m, 0.0, 10.0)?;
        if let Pacing::Simulated { time_scale } = self.pacing {
            in_range_above("pacing.time_scale", time_scale, 0.0, 1_000_000.0)?;
        }
        Ok(())
    }
}

impl CandidatesLoopConfig {
    /// Checks the ranges in the field docs; errors name the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        count_in("max_cycles", self.max_cycles, 1, MAX_BUDGET)?;
        in_range("resolution_m", self.resolution_m, 0.01, 10.0)?;
        in_range_above("inference_timeout_s", self.inference_timeout_s, 0.0, 3600.0)?;
        in_range_above("goal_tolerance_m", self.goal_tolerance_m, 0.0, 10.0)?;
        self.candidates.validate().map_err(|e| e.under("candidates"))?;
        self.stuck.validate().map_err(|e| e.under("stuck"))?;
        self.corrections.validate().map_err(|e| e.under("corrections"))?;
        self.planner.validate().map_err(|e| e.under("planner"))?;
        in_range("inflation_m", self.inflation_m, 0.0, 10.0)?;
        self.integration.validate().map_err(|e| e.under("integration"))?;
        self.camera.validate().map_err(|e| e.under("camera"))?;
        self.bridge.validate().map_err(|e| e.under("bridge"))?;
        in_range("waypoint_spacing_m", self.waypoint_spacing_m, 0.0, 100.0)?;
        count_in("max_stuck_counter", self.max_stuck_counter, 0, MAX_BUDGET)?;
        in_range("explore_until_known", self.explore_until_known, 0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn defaults_are_valid() {
        ObjectNavLoopConfig::default().validate().unwrap();
        ExploreLoopConfig::default().validate().unwrap();
        CandidatesLoopConfig::default().validate().unwrap();
    }

    #[test]
    fn nested_keys_carry_the_path() {
        let mut c = ExploreLoopConfig::default();
        c.safety.speeds.fast_mps = -0.1;
        assert_eq!(c.validate().unwrap_err().to_string(), "safety.speeds.fast_mps: must be in (0, 5] (got -0.1)");
        let mut o = ObjectNavLoopConfig::default();
        o.memory_config.dwell_k = 0;
        assert_eq!(o.validate().unwrap_err().key, "memory_config.dwell_k");
        let c = CandidatesLoopConfig { resolution_m: 1e-6, ..CandidatesLoopConfig::default() };
        assert_eq!(c.validate().unwrap_err().key, "resolution_m");
        let c = ExploreLoopConfig { tick_s: 0.0, ..ExploreLoopConfig::default() };
        assert_eq!(c.validate().unwrap_err().key, "tick_s");
    }

    proptest! {
        #[test]
        fn explore_validate_never_panics(tick in proptest::num::f64::ANY, speed in proptest::num::f64::ANY,
                                         size in proptest::num::f64::ANY, res in proptest::num::f64::ANY) {
            let mut c = ExploreLoopConfig { tick_s: tick, path_speed_mps: speed, ..ExploreLoopConfig::default() };
            c.map.size_m = size;
            c.map.resolution_m = res;
            let ok = c.validate().is_ok();
            prop_assert!(!ok || (tick.is_finite() && tick > 0.0 && size / res <= 10_000.0));
        }
    }
}
