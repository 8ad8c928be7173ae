//! What a `report_discovery` tool call says about a discovery: one
//! definition shared by the tool schema and parser (nav-safety), the
//! exploration memory (nav-memory) and the explore loop.
//!
//! ```
//! use nav_core::discovery::Significance;
//! assert_eq!(Significance::parse("room"), Some(Significance::Room));
//! assert_eq!(Significance::parse("Room"), None, "the wire name matches exactly");
//! assert_eq!(Significance::PointOfInterest.to_string(), "point_of_interest");
//! ```

use serde::{Deserialize, Serialize};

/// How important a discovery is (the `significance` of the `report_discovery` tool).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Significance {
    /// A recognizable landmark (added to the current room's objects).
    Landmark,
    /// A new room: the memory creates it (or re-enters it) and makes it
    /// current.
    Room,
    /// An obstacle worth remembering (added to the current room's objects).
    Obstacle,
    /// Anything else of interest (added to the current room's objects).
    PointOfInterest,
}

impl Significance {
    /// Every value, in the tool schema's enum order.
    pub const ALL: &'static [Significance] =
        &[Significance::Landmark, Significance::Room, Significance::Obstacle, Significance::PointOfInterest];

    /// The wire (snake_case) name.
    pub fn as_str(self) -> &'static str {
        match self {
            Significance::Landmark => "landmark",
            Significance::Room => "room",
            Significance::Obstacle => "obstacle",
            Significance::PointOfInterest => "point_of_interest",
        }
    }

    /// Parses the wire name (exact match).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.as_str() == s)
    }
}

impl std::fmt::Display for Significance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_serde_and_parse() {
        for &s in Significance::ALL {
            assert_eq!(Significance::parse(s.as_str()), Some(s));
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.as_str()));
        }
        assert_eq!(Significance::parse("treasure"), None);
    }
}
