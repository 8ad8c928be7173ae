//! Where the planner sent the robot, and what came of it: one
//! [`TriedHeading`] per planner decision, its outcome filled in at the next
//! decision (how far the robot got, which place it reached). The
//! Navigation Context shows the headings already tried from near the
//! robot's position, so a planner does not send it the same blocked or
//! fruitless way twice.

use crate::graph::PlaceId;
use nav_core::geometry::Point2;
use serde::{Deserialize, Serialize};

/// What came of a tried heading, measured at the next planner decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriedOutcome {
    /// Straight-line distance moved (dead reckoning), metres.
    pub moved_m: f64,
    /// The place the robot was in at the next decision.
    pub place: PlaceId,
    /// That place's type (normalized; `unknown` before the first label).
    pub place_type: String,
}

/// One planner decision's heading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriedHeading {
    /// Step of the decision.
    pub step: u64,
    /// Dead-reckoned position it was made at.
    pub from: Point2,
    /// Absolute heading chosen (dead-reckoning frame), radians.
    pub heading: f64,
    /// The place it was made in.
    pub place: PlaceId,
    /// What came of it (`None` while it is the latest decision).
    pub outcome: Option<TriedOutcome>,
}

/// Tried headings kept (oldest dropped first).
pub const MAX_TRIED: usize = 32;
