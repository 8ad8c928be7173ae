//! The simulated LiDAR: a full-circle fan of beams starting at −π (like the
//! ROSMASTER's 720-point scanner), ROS `LaserScan` semantics: a beam that
//! hits nothing within `range_max` reads `+inf`.

use serde::{Deserialize, Serialize};

/// LiDAR parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimLidarConfig {
    /// Number of beams over 360° (the ROSMASTER's scanner has 720).
    pub beams: usize,
    /// Minimum valid range, metres.
    pub range_min: f32,
    /// Maximum range, metres; farther returns read `+inf`.
    pub range_max: f32,
}

impl Default for SimLidarConfig {
    fn default() -> Self {
        Self { beams: 720, range_min: 0.05, range_max: 12.0 }
    }
}
