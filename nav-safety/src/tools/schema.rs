//! Provider-neutral JSON Schemas of the seven tools.
//!
//! The schemas follow the strictest subset the three providers share, so
//! one definition works with OpenAI `strict: true`, Anthropic strict tool
//! use and Gemini function declarations:
//!
//! - every object has `"additionalProperties": false` and lists **every**
//!   property in `required`;
//! - a field the seeds make optional is a *nullable* type
//!   (`"type": ["number", "null"]`) whose description says what `null`
//!   means: `move_toward.duration_s` (null = 3 s) and
//!   `navigate_to_goal.frontier_id` / `x` / `y` (null when the goal type
//!   does not use them). [`ToolCall::parse`](super::ToolCall::parse) treats
//!   `null` as absent, so non-strict replies that omit these fields parse too;
//! - numeric ranges are stated in the descriptions, not as
//!   `minimum`/`maximum` keywords, which some strict modes reject; the
//!   parser enforces them and rejects out-of-range values by field name.
//!
//! Converting to a provider's wire format is the planner's job: OpenAI
//! wraps each schema as `{"type": "function", "function": {name,
//! description, parameters, "strict": true}}`; Anthropic uses
//! `input_schema`; Gemini's OpenAPI subset wants `"nullable": true` in place
//! of `["T", "null"]` type arrays and string-only enums (so `rotate.degrees`
//! becomes an integer with its allowed values in the description).

use super::{GoalType, ObserveFocus, RotateDegrees, Speed, StopReason};
use crate::config::SpeedConfig;
use nav_core::discovery::Significance;
use nav_core::lidar::Direction;
use serde::Serialize;
use serde_json::{Map, Value, json};

/// One tool definition: name, description and JSON Schema of the
/// arguments.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSchema {
    /// Tool name (`move_toward`, …).
    pub name: &'static str,
    /// What the tool does and when to use it.
    pub description: &'static str,
    /// JSON Schema of the argument object.
    pub parameters: Value,
}

fn object(props: Vec<(&str, Value)>) -> Value {
    let required: Vec<Value> = props.iter().map(|(k, _)| Value::from(*k)).collect();
    let properties: Map<String, Value> = props.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn string_enum(values: impl IntoIterator<Item = &'static str>, description: &str) -> Value {
    json!({"type": "string", "enum": values.into_iter().collect::<Vec<_>>(), "description": description})
}

fn directions(description: &str) -> Value {
    string_enum(Direction::ALL.iter().map(|d| d.as_str()), description)
}

/// The seven tool definitions in the seed's order, with the default speed
/// tiers (0.08 / 0.12 / 0.18 m/s).
pub fn tool_schemas() -> Vec<ToolSchema> {
    tool_schemas_for(&SpeedConfig::default())
}

/// The seven tool definitions, the `speed` description stating the tiers
/// `speeds` the executor will drive at.
pub fn tool_schemas_for(speeds: &SpeedConfig) -> Vec<ToolSchema> {
    vec![
        ToolSchema {
            name: "move_toward",
            description: "Move the robot in a direction at a specified speed. Use for short-range navigation \
                          (under 2m). For longer distances, use navigate_to_goal instead.",
            parameters: object(vec![
                ("direction", directions("Direction to move relative to current heading")),
                (
                    "speed",
                    string_enum(
                        Speed::ALL.iter().map(|s| s.as_str()),
                        &format!(
                            "Movement speed: slow ({} m/s, near obstacles), medium ({} m/s, normal), \
                             fast ({} m/s, open space)",
                            speeds.slow_mps, speeds.medium_mps, speeds.fast_mps
                        ),
                    ),
                ),
                (
                    "duration_s",
                    json!({
                        "type": ["number", "null"],
                        "description": "Movement duration in seconds (1.0-8.0); null for the default 3.0",
                    }),
                ),
            ]),
        },
        ToolSchema {
            name: "navigate_to_goal",
            description: "Delegate pathfinding to the local planner for a destination more than 2m away: a \
                          frontier from the sensor summary, map coordinates, or retracing the path already \
                          travelled. The planner avoids obstacles on the way.",
            parameters: object(vec![
                (
                    "goal_type",
                    string_enum(
                        GoalType::ALL.iter().map(|g| g.as_str()),
                        "frontier: go to frontier_id; coordinates: go to (x, y); retrace: go back along the \
                         travelled path",
                    ),
                ),
                (
                    "frontier_id",
                    json!({
                        "type": ["integer", "null"],
                        "description": "Which frontier from the sensor summary (goal_type frontier); otherwise null",
                    }),
                ),
                (
                    "x",
                    json!({
                        "type": ["number", "null"],
                        "description": "Map x coordinate in metres (goal_type coordinates); otherwise null",
                    }),
                ),
                (
                    "y",
                    json!({
                        "type": ["number", "null"],
                        "description": "Map y coordinate in metres (goal_type coordinates); otherwise null",
                    }),
                ),
                ("reason", json!({"type": "string", "description": "Why this goal (logged in exploration memory)"})),
            ]),
        },
        ToolSchema {
            name: "rotate",
            description: "Turn the robot by a fixed angle. On a car-like base the turn is a short arc that needs \
                          some free space ahead or behind; the result reports how far the robot actually moved.",
            parameters: object(vec![(
                "degrees",
                json!({
                    "type": "integer",
                    "enum": RotateDegrees::ALLOWED,
                    "description": "Angle to turn in degrees. Negative = left, positive = right",
                }),
            )]),
        },
        ToolSchema {
            name: "stop_robot",
            description: "Stop the robot intentionally. A reason is required.",
            parameters: object(vec![(
                "reason",
                string_enum(StopReason::ALL.iter().map(|r| r.as_str()), "Why the robot should stop"),
            )]),
        },
        ToolSchema {
            name: "observe_scene",
            description: "Request a detailed, high-resolution analysis of the current camera view with a focus, \
                          e.g. to tell a doorway from a dark wall. Returns a text description.",
            parameters: object(vec![(
                "focus",
                string_enum(ObserveFocus::ALL.iter().map(|f| f.as_str()), "What the analysis should focus on"),
            )]),
        },
        ToolSchema {
            name: "check_path_clear",
            description: "Check with the LiDAR whether a direction is traversable up to a distance. Local sensor \
                          query, no delay. Returns clear, obstacle_distance_m, obstacle_type, traversable_width_m \
                          and a recommendation.",
            parameters: object(vec![
                ("direction", directions("Direction to check relative to current heading")),
                ("distance_m", json!({"type": "number", "description": "How far to check, in metres (0.5-5.0)"})),
            ]),
        },
        ToolSchema {
            name: "report_discovery",
            description: "Announce and log a finding (a room, landmark, obstacle or point of interest) at the \
                          robot's current position.",
            parameters: object(vec![
                (
                    "label",
                    json!({"type": "string", "description": "What was discovered, e.g. \"kitchen\", \"doorway\", \"dead_end\""}),
                ),
                ("notes", json!({"type": "string", "description": "Brief description"})),
                ("significance", string_enum(Significance::ALL.iter().map(|s| s.as_str()), "Kind of discovery")),
            ]),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolCall;

    #[test]
    fn schemas_are_strict_mode_compatible() {
        let schemas = tool_schemas();
        assert_eq!(schemas.iter().map(|s| s.name).collect::<Vec<_>>(), ToolCall::NAMES);
        for s in &schemas {
            let p = &s.parameters;
            assert_eq!(p["type"], "object");
            assert_eq!(p["additionalProperties"], false, "{}", s.name);
            let props = p["properties"].as_object().unwrap();
            let required: Vec<&str> = p["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
            assert_eq!(props.keys().map(String::as_str).collect::<Vec<_>>().len(), required.len());
            for k in props.keys() {
                assert!(required.contains(&k.as_str()), "{}.{k} not required", s.name);
                assert!(props[k]["description"].is_string(), "{}.{k} lacks a description", s.name);
                assert!(props[k].get("minimum").is_none());
            }
        }
    }

    #[test]
    fn schemas_snapshot() {
        insta::assert_json_snapshot!(tool_schemas());
    }
}
