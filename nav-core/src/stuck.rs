//! Stuck detection of the candidates loop: moved less than 5 cm for 5 cycles.

use crate::geometry::Point2;
use serde::{Deserialize, Serialize};

/// Settings of the stuck detector.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StuckConfig {
    /// Movement below this counts as no movement, metres (0.05); [0, 10].
    pub min_motion_m: f64,
    /// Consecutive still cycles that make the robot stuck (5); ≥ 1.
    pub cycles: u32,
}

impl Default for StuckConfig {
    fn default() -> Self {
        Self { min_motion_m: 0.05, cycles: 5 }
    }
}

impl StuckConfig {
    /// Checks the ranges in the field docs; errors name the key.
    pub fn validate(&self) -> Result<(), crate::config::ConfigError> {
        crate::config::in_range("min_motion_m", self.min_motion_m, 0.0, 10.0)?;
        crate::config::at_least("cycles", self.cycles, 1)
    }
}

/// Counts consecutive cycles without meaningful movement.
///
/// ```
/// use nav_core::stuck::StuckDetector;
/// use nav_core::geometry::Point2;
/// let mut d = StuckDetector::default();
/// d.update(Point2::new(0.0, 0.0));
/// for _ in 0..5 { d.update(Point2::new(0.01, 0.0)); }
/// assert!(d.is_stuck());
/// d.update(Point2::new(1.0, 0.0));
/// assert!(!d.is_stuck());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StuckDetector {
    config: StuckConfig,
    last: Option<Point2>,
    counter: u32,
}

impl StuckDetector {
    /// A detector with the given settings.
    pub fn new(config: StuckConfig) -> Self {
        Self { config, last: None, counter: 0 }
    }

    /// Feeds the position of one cycle; returns whether the robot is stuck.
    pub fn update(&mut self, position: Point2) -> bool {
        if let Some(last) = self.last {
            if position.distance(last) < self.config.min_motion_m {
                self.counter = self.counter.saturating_add(1);
            } else {
                self.counter = 0;
            }
        }
        self.last = Some(position);
        self.is_stuck()
    }

    /// Consecutive still cycles so far.
    pub fn counter(&self) -> u32 {
        self.counter
    }

    /// True once the counter reaches the threshold.
    pub fn is_stuck(&self) -> bool {
        self.counter >= self.config.cycles
    }

    /// Clears the counter (after a successful recovery).
    pub fn reset(&mut self) {
        self.counter = 0;
    }
}
