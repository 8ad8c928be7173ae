//! Memory parameters and their defaults.

use nav_core::action::StepConfig;
use nav_core::config::{ConfigError, count_in, in_range_above};
use serde::{Deserialize, Serialize};

/// What the STUCK rule counts as "a place" when it looks at the last W
/// steps.
///
/// The STUCK rule is "≤ 1 unique place in the last W = 10 steps".
/// Read literally over place ids this is nearly always true: the scene VLM
/// runs every 20 steps and a switch needs k = 3 agreeing labels, so the place
/// id is constant for at least 60 steps at a time. The hint would fire all
/// the time and tell the planner nothing. [`StuckGranularity::Anchor`] (the
/// default) counts unique (place, anchor) locations instead: a robot crossing
/// a room reaches a new anchor every S forward steps, a robot spinning in
/// place or pinned against a wall (collisions reported through
/// [`StepFlags::collided`](crate::StepFlags::collided)) does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StuckGranularity {
    /// The literal reading over per-step place ids.
    Place,
    /// Unique (place, anchor) locations over the last W steps (default).
    #[default]
    Anchor,
}

/// Caps that keep the Navigation Context text bounded (M recent places,
/// K recent anchors, plus fixed clip lengths).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContextLimits {
    /// M: recent places listed, oldest → newest, current last (5).
    /// Range: 1..=1000.
    pub recent_places: usize,
    /// K: recent anchors listed, oldest → newest, current last (6).
    /// Range: 1..=1000.
    pub recent_anchors: usize,
    /// Localization hint anchors listed, nearest first (3).
    /// Range: 0..=1000.
    pub hints: usize,
    /// Objects of the current place listed (4).
    /// Range: 0..=1000.
    pub objects: usize,
    /// Characters kept of each listed object (20).
    /// Range: 0..=100000.
    pub object_chars: usize,
    /// Characters kept of a place's semantic description (72).
    /// Range: 0..=100000.
    pub description_chars: usize,
    /// Characters kept of a DC record's `why` (48).
    /// Range: 0..=100000.
    pub why_chars: usize,
    /// Characters kept of any place or scene type (20).
    /// Range: 0..=100000.
    pub type_chars: usize,
    /// Characters kept of the optional grounding section (1,500).
    /// Range: 0..=1000000.
    pub grounding_chars: usize,
    /// Anchors within this distance are listed by direction ("Been"),
    /// metres (6).
    /// Range: [0, 1000].
    pub visited_radius_m: f64,
    /// Headings tried from near the robot listed, newest first (6).
    /// Range: 0..=1000.
    pub tried_here: usize,
}

impl Default for ContextLimits {
    fn default() -> Self {
        Self {
            recent_places: 5,
            recent_anchors: 6,
            hints: 3,
            objects: 4,
            object_chars: 20,
            description_chars: 72,
            why_chars: 48,
            type_chars: 20,
            grounding_chars: 1500,
            visited_radius_m: 6.0,
            tried_here: 6,
        }
    }
}

/// All parameters of [`SpatialMemory`](crate::SpatialMemory). Loadable from
/// TOML/JSON; every field has a default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Dead-reckoning step sizes (0.25 m / 30°).
    /// Range: see `StepConfig` (forward (0, 10] m, turn (0, 180]°).
    pub step: StepConfig,
    /// S: forward steps since the last anchor that create a new one (2).
    /// Range: 1..=10000.
    pub anchor_forward_steps: u32,
    /// Place update period: the scene VLM runs every this many steps (20).
    /// Range: 1..=100000.
    pub place_update_period: u32,
    /// k: consecutive agreeing scene labels that confirm a place switch (3).
    /// Range: 1..=1000.
    pub dwell_k: u32,
    /// A doorway crossing asks for a scene analysis only once the robot is
    /// at least this far (straight line, dead reckoning) from where the
    /// latest analysis ran, metres (0.75): passing back through the door
    /// just looked through, or a narrow gap right after a look, shows
    /// nothing new. 0 analyses at every crossing. Range: [0, 1000].
    pub doorway_min_move_m: f64,
    /// N: Discovered-Context queue size (5).
    /// Range: 1..=1000.
    pub dc_capacity: usize,
    /// r: localization radius, metres (1.5).
    /// Range: (0, 1000].
    pub localization_radius_m: f64,
    /// W: STUCK window, steps (10).
    /// Range: 1..=100000.
    pub stuck_window: usize,
    /// What STUCK counts as a place (see [`StuckGranularity`]).
    pub stuck_granularity: StuckGranularity,
    /// REVISIT: localization hints older than the recent anchors needed (2).
    /// Range: 1..=1000.
    pub revisit_min_hints: usize,
    /// Caps of the Navigation Context.
    pub context: ContextLimits,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            step: StepConfig::default(),
            anchor_forward_steps: 2,
            place_update_period: 20,
            dwell_k: 3,
            doorway_min_move_m: 0.75,
            dc_capacity: 5,
            localization_radius_m: 1.5,
            stuck_window: 10,
            stuck_granularity: StuckGranularity::Anchor,
            revisit_min_hints: 2,
            context: ContextLimits::default(),
        }
    }
}

impl ContextLimits {
    /// Checks the ranges in the field docs; errors name the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        count_in("recent_places", self.recent_places, 1, 1000)?;
        count_in("recent_anchors", self.recent_anchors, 1, 1000)?;
        count_in("hints", self.hints, 0, 1000)?;
        count_in("objects", self.objects, 0, 1000)?;
        for (k, v) in [
            ("object_chars", self.object_chars),
            ("description_chars", self.description_chars),
            ("why_chars", self.why_chars),
            ("type_chars", self.type_chars),
        ] {
            count_in(k, v, 0, 100_000)?;
        }
        count_in("tried_here", self.tried_here, 0, 1000)?;
        nav_core::config::in_range("visited_radius_m", self.visited_radius_m, 0.0, 1000.0)?;
        count_in("grounding_chars", self.grounding_chars, 0, 1_000_000)
    }
}

impl MemoryConfig {
    /// Checks every value against the range in its doc comment; the memory
    /// refuses to start on a bad config. Keys are relative to this struct.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.step.validate().map_err(|e| e.under("step"))?;
        count_in("anchor_forward_steps", self.anchor_forward_steps, 1, 10_000)?;
        count_in("place_update_period", self.place_update_period, 1, 100_000)?;
        count_in("dwell_k", self.dwell_k, 1, 1000)?;
        nav_core::config::in_range("doorway_min_move_m", self.doorway_min_move_m, 0.0, 1000.0)?;
        count_in("dc_capacity", self.dc_capacity, 1, 1000)?;
        in_range_above("localization_radius_m", self.localization_radius_m, 0.0, 1000.0)?;
        count_in("stuck_window", self.stuck_window, 1, 100_000)?;
        count_in("revisit_min_hints", self.revisit_min_hints, 1, 1000)?;
        self.context.validate().map_err(|e| e.under("context"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_seed() {
        let c = MemoryConfig::default();
        assert_eq!(c.anchor_forward_steps, 2);
        assert_eq!(c.place_update_period, 20);
        assert_eq!(c.dwell_k, 3);
        assert_eq!(c.dc_capacity, 5);
        assert_eq!(c.localization_radius_m, 1.5);
        assert_eq!(c.stuck_window, 10);
        assert_eq!(c.step.forward_m, 0.25);
        assert_eq!(c.step.turn_deg, 30.0);
        c.validate().unwrap();
    }

    #[test]
    fn partial_config_fills_defaults_and_rejects_typos() {
        let c: MemoryConfig = serde_json::from_str(r#"{"dwell_k": 4, "context": {"why_chars": 40}}"#).unwrap();
        assert_eq!(c.dwell_k, 4);
        assert_eq!(c.context.why_chars, 40);
        assert_eq!(c.context.recent_places, 5);
        assert!(serde_json::from_str::<MemoryConfig>(r#"{"dwel_k": 4}"#).is_err());
    }

    #[test]
    fn bad_values_name_the_field() {
        let c = MemoryConfig { dc_capacity: 0, ..MemoryConfig::default() };
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("dc_capacity"), "{e}");
        let c = MemoryConfig { localization_radius_m: f64::NAN, ..MemoryConfig::default() };
        assert!(c.validate().unwrap_err().to_string().contains("localization_radius_m"));
    }
}
