//! The seven explore tools as
//! typed values: [`ToolCall`] parsed strictly from a VLM's tool-call
//! arguments, serialized back with [`ToolCall::to_json`], and described to a
//! VLM by [`tool_schemas`].
//!
//! ```
//! use nav_safety::tools::{Speed, ToolCall};
//! use nav_core::lidar::Direction;
//! let call = ToolCall::parse("move_toward", &serde_json::json!({"direction": "forward_left", "speed": "slow"}))?;
//! assert_eq!(call, ToolCall::MoveToward { direction: Direction::ForwardLeft, speed: Speed::Slow, duration_s: 3.0 });
//! assert_eq!(ToolCall::parse("move_toward", &call.to_json())?, call);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod parse;
mod schema;

pub use schema::{ToolSchema, tool_schemas, tool_schemas_for};

use crate::config::SpeedConfig;
use nav_core::discovery::Significance;
use nav_core::lidar::Direction;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// Declares a string enum of a tool argument: variants, their wire names,
/// `ALL`, `as_str`, `parse` and serde as the wire name.
macro_rules! wire_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $var:ident => $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vm])* #[serde(rename = $s)] $var),+
        }
        impl $name {
            /// Every value, in the schema's enum order.
            pub const ALL: &'static [$name] = &[$($name::$var),+];
            /// The wire name.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$var => $s),+ }
            }
            /// Parses the wire name (exact match).
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($s => Some($name::$var),)+ _ => None }
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

wire_enum! {
    /// `move_toward` speed.
    Speed {
        /// `speeds.slow_mps` (0.08 m/s by default): near obstacles, tight spaces.
        Slow => "slow",
        /// `speeds.medium_mps` (0.12 m/s by default): normal exploration.
        Medium => "medium",
        /// `speeds.fast_mps` (0.18 m/s by default): open corridors.
        Fast => "fast",
    }
}

impl Speed {
    /// Metres per second under a speed configuration.
    pub fn mps(self, speeds: &SpeedConfig) -> f64 {
        match self {
            Speed::Slow => speeds.slow_mps,
            Speed::Medium => speeds.medium_mps,
            Speed::Fast => speeds.fast_mps,
        }
    }
}

wire_enum! {
    /// `navigate_to_goal` goal kind.
    GoalType {
        /// A frontier from the sensor summary (`frontier_id`).
        Frontier => "frontier",
        /// Map coordinates (`x`, `y`).
        Coordinates => "coordinates",
        /// Back along the path already travelled.
        Retrace => "retrace",
    }
}

wire_enum! {
    /// `stop_robot` reason.
    StopReason {
        /// An obstacle was seen.
        ObstacleDetected => "obstacle_detected",
        /// Nothing left to explore.
        ExplorationComplete => "exploration_complete",
        /// Stop to look.
        NeedToObserve => "need_to_observe",
        /// The user asked.
        UserRequested => "user_requested",
        /// The model is unsure.
        Uncertain => "uncertain",
    }
}

wire_enum! {
    /// `observe_scene` focus.
    ObserveFocus {
        /// Everything.
        General => "general",
        /// Doorways and openings.
        Doorways => "doorways",
        /// Obstacles.
        Obstacles => "obstacles",
        /// Objects.
        Objects => "objects",
        /// The floor.
        FloorSurface => "floor_surface",
    }
}

/// A `rotate` angle: one of −180, −135, −90, −45, 45, 90, 135, 180 degrees.
/// **Negative turns left** (counter-clockwise) and positive
/// turns right.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct RotateDegrees(i16);

impl RotateDegrees {
    /// The allowed values in the schema's enum order.
    pub const ALLOWED: [i16; 8] = [-180, -135, -90, -45, 45, 90, 135, 180];

    /// The angle if it is one of [`Self::ALLOWED`].
    pub fn new(degrees: i64) -> Option<Self> {
        Self::ALLOWED.iter().copied().find(|&d| i64::from(d) == degrees).map(RotateDegrees)
    }

    /// The angle in degrees (negative = left).
    pub fn degrees(self) -> i16 {
        self.0
    }

    /// The heading change in radians, counter-clockwise positive (REP-103):
    /// the negation of [`Self::degrees`].
    pub fn yaw_change_rad(self) -> f64 {
        -f64::from(self.0).to_radians()
    }
}

impl<'de> Deserialize<'de> for RotateDegrees {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = i64::deserialize(d)?;
        RotateDegrees::new(v).ok_or_else(|| serde::de::Error::custom(format!("{v} is not an allowed rotate angle")))
    }
}

/// Where `navigate_to_goal` should go.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GoalSpec {
    /// A frontier by its id in the sensor summary.
    Frontier {
        /// Frontier id.
        id: u32,
    },
    /// Map coordinates, metres.
    Coordinates {
        /// x in the map frame.
        x: f64,
        /// y in the map frame.
        y: f64,
    },
    /// Back along the travelled path.
    Retrace,
}

impl GoalSpec {
    /// The `goal_type` of this goal.
    pub fn goal_type(self) -> GoalType {
        match self {
            GoalSpec::Frontier { .. } => GoalType::Frontier,
            GoalSpec::Coordinates { .. } => GoalType::Coordinates,
            GoalSpec::Retrace => GoalType::Retrace,
        }
    }
}

/// One parsed explore tool call.
///
/// Build it with [`ToolCall::parse`] from a VLM reply; the constructors of
/// the typed fields make most invalid calls unrepresentable, and the
/// executor re-checks the numeric fields (`duration_s`, `distance_m`) that
/// a caller could still set out of range.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCall {
    /// Move in a direction at a speed for a duration.
    MoveToward {
        /// One of the six directions.
        direction: Direction,
        /// Speed tier.
        speed: Speed,
        /// Seconds, in [1, 8]; 3 when the VLM omits it.
        duration_s: f64,
    },
    /// Hand a longer-range goal to the local planner.
    NavigateToGoal {
        /// The goal.
        goal: GoalSpec,
        /// Why (logged in exploration memory).
        reason: String,
    },
    /// Turn by a fixed angle (negative = left).
    Rotate {
        /// The angle.
        degrees: RotateDegrees,
    },
    /// Halt intentionally.
    StopRobot {
        /// Why.
        reason: StopReason,
    },
    /// Ask for a detailed look at the camera image.
    ObserveScene {
        /// What to look at.
        focus: ObserveFocus,
    },
    /// Ask the LiDAR whether a direction is traversable.
    CheckPathClear {
        /// Direction to check.
        direction: Direction,
        /// How far, metres, in [0.5, 5].
        distance_m: f64,
    },
    /// Announce and log a finding.
    ReportDiscovery {
        /// What was found ("kitchen", "doorway", …).
        label: String,
        /// A brief description (empty when omitted).
        notes: String,
        /// How significant.
        significance: Significance,
    },
}

/// Default `duration_s` of `move_toward`.
pub const DEFAULT_DURATION_S: f64 = 3.0;
/// Allowed range of `duration_s`.
pub const DURATION_RANGE_S: (f64, f64) = (1.0, 8.0);
/// Allowed range of `check_path_clear` `distance_m`.
pub const CHECK_DISTANCE_RANGE_M: (f64, f64) = (0.5, 5.0);

impl ToolCall {
    /// The seven tool names, in definition order.
    pub const NAMES: [&'static str; 7] = [
        "move_toward",
        "navigate_to_goal",
        "rotate",
        "stop_robot",
        "observe_scene",
        "check_path_clear",
        "report_discovery",
    ];

    /// The tool name.
    pub fn name(&self) -> &'static str {
        match self {
            ToolCall::MoveToward { .. } => "move_toward",
            ToolCall::NavigateToGoal { .. } => "navigate_to_goal",
            ToolCall::Rotate { .. } => "rotate",
            ToolCall::StopRobot { .. } => "stop_robot",
            ToolCall::ObserveScene { .. } => "observe_scene",
            ToolCall::CheckPathClear { .. } => "check_path_clear",
            ToolCall::ReportDiscovery { .. } => "report_discovery",
        }
    }

    /// True for the four action tools (they command motion or its absence).
    pub fn is_action(&self) -> bool {
        matches!(
            self,
            ToolCall::MoveToward { .. }
                | ToolCall::NavigateToGoal { .. }
                | ToolCall::Rotate { .. }
                | ToolCall::StopRobot { .. }
        )
    }

    /// True for the two perception tools (`observe_scene`,
    /// `check_path_clear`).
    pub fn is_perception(&self) -> bool {
        matches!(self, ToolCall::ObserveScene { .. } | ToolCall::CheckPathClear { .. })
    }

    /// True for the communication tool (`report_discovery`).
    pub fn is_communication(&self) -> bool {
        matches!(self, ToolCall::ReportDiscovery { .. })
    }

    /// The arguments as short prompt text, values only, e.g.
    /// `forward, medium, 3.0s`, `frontier 2`, `x 1.5, y -2.0`, `90`,
    /// `right, 2.0m`, `kitchen, room` (a navigation goal's reason and a
    /// discovery's notes are left out: the model wrote them, the memory
    /// keeps them).
    ///
    /// ```
    /// use nav_safety::tools::ToolCall;
    /// let call = ToolCall::parse("move_toward", &serde_json::json!({"direction": "left", "speed": "slow"}))?;
    /// assert_eq!(call.summary(), "move_toward(left, slow, 3.0s)");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn args_text(&self) -> String {
        match self {
            ToolCall::MoveToward { direction, speed, duration_s } => {
                format!("{}, {speed}, {duration_s:.1}s", direction.as_str())
            }
            ToolCall::NavigateToGoal { goal, .. } => match goal {
                GoalSpec::Frontier { id } => format!("frontier {id}"),
                GoalSpec::Coordinates { x, y } => format!("x {x:.1}, y {y:.1}"),
                GoalSpec::Retrace => "retrace".to_string(),
            },
            ToolCall::Rotate { degrees } => degrees.degrees().to_string(),
            ToolCall::StopRobot { reason } => reason.to_string(),
            ToolCall::ObserveScene { focus } => focus.to_string(),
            ToolCall::CheckPathClear { direction, distance_m } => format!("{}, {distance_m:.1}m", direction.as_str()),
            ToolCall::ReportDiscovery { label, significance, .. } => {
                let label: String = label.chars().filter(|c| !c.is_control()).take(40).collect();
                format!("{label}, {}", significance.as_str())
            }
        }
    }

    /// The call as one short line, `name(args)` with [`Self::args_text`].
    pub fn summary(&self) -> String {
        format!("{}({})", self.name(), self.args_text())
    }

    /// The arguments as a JSON object (only the fields that are set), such
    /// that `ToolCall::parse(self.name(), &self.to_json())` gives `self`.
    pub fn to_json(&self) -> Value {
        match self {
            ToolCall::MoveToward { direction, speed, duration_s } => {
                json!({"direction": direction.as_str(), "speed": speed.as_str(), "duration_s": duration_s})
            }
            ToolCall::NavigateToGoal { goal, reason } => {
                let mut m = Map::new();
                m.insert("goal_type".into(), goal.goal_type().as_str().into());
                match goal {
                    GoalSpec::Frontier { id } => {
                        m.insert("frontier_id".into(), (*id).into());
                    }
                    GoalSpec::Coordinates { x, y } => {
                        m.insert("x".into(), json!(x));
                        m.insert("y".into(), json!(y));
                    }
                    GoalSpec::Retrace => {}
                }
                m.insert("reason".into(), reason.clone().into());
                Value::Object(m)
            }
            ToolCall::Rotate { degrees } => json!({"degrees": degrees.degrees()}),
            ToolCall::StopRobot { reason } => json!({"reason": reason.as_str()}),
            ToolCall::ObserveScene { focus } => json!({"focus": focus.as_str()}),
            ToolCall::CheckPathClear { direction, distance_m } => {
                json!({"direction": direction.as_str(), "distance_m": distance_m})
            }
            ToolCall::ReportDiscovery { label, notes, significance } => {
                json!({"label": label, "notes": notes, "significance": significance.as_str()})
            }
        }
    }

    /// The command record: `{"tool": name, …arguments}` (the
    /// `original_command` / `executed_command` of the feedback).
    pub fn to_command_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("tool".into(), self.name().into());
        if let Value::Object(args) = self.to_json() {
            m.extend(args);
        }
        Value::Object(m)
    }
}

/// Serialized as the command record `{"tool": …, …arguments}`.
impl Serialize for ToolCall {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_command_json().serialize(s)
    }
}

/// Deserialized from the command record `{"tool": …, …arguments}` with the
/// same strict rules as [`ToolCall::parse`].
impl<'de> Deserialize<'de> for ToolCall {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut v = Value::deserialize(d)?;
        let name = match v.as_object_mut().and_then(|m| m.remove("tool")) {
            Some(Value::String(s)) => s,
            _ => return Err(serde::de::Error::custom("a tool call record needs a string field `tool`")),
        };
        ToolCall::parse(&name, &v).map_err(serde::de::Error::custom)
    }
}
