//! Provider-neutral JSON Schemas of the seven tools.
//!
//! The schemas follow the strictest subset the three providers share, so
//! one definition works with OpenAI `strict: true`, Anthropic strict tool
//! use and Gemini function declarations:
//!
//! - every object has `"additionalProperties": false` and lists **every**
//!   property in `required`;
//! - an optional field is a *nullable* type
//!   (`"type": ["number", "null"]`) whose tool's description says what
//!   `null` means: `move_toward.duration_s` (null = 3 s) and
//!   `navigate_to_goal.frontier_id` / `x` / `y` (null when the goal type
//!   does not use them). [`ToolCall::parse`](super::ToolCall::parse) treats
//!   `null` as absent, so non-strict replies that omit these fields parse too;
//! - numeric ranges are stated in the tool descriptions, not as
//!   `minimum`/`maximum` keywords, which some strict modes reject; the
//!   parser enforces them and rejects out-of-range values by field name;
//! - the texts are short (they are sent with every request): a property has a
//!   description only where its name, type and enum do not say enough.
//!
//! Converting to a provider's wire format is the planner's job: OpenAI
//! wraps each schema as `{"type": "function", "function": {name,
//! description, parameters, "strict": true}}`; Anthropic uses
//! `input_schema`; Gemini's OpenAPI subset wants `"nullable": true` in place
//! of `["T", "null"]` type arrays and string-only enums, so its converter
//! turns `rotate.degrees`'s integer enum into a description of the allowed
//! values. `rotate.degrees` is an integer **enum** of the allowed angles
//! ([`RotateDegrees::ALLOWED`](super::RotateDegrees::ALLOWED)), so strict
//! mode cannot produce `rotate(30)`; where strict mode is unavailable the
//! parser enforces the same values and names them when it refuses one.

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
    pub description: String,
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

fn string_enum(values: impl IntoIterator<Item = &'static str>) -> Value {
    json!({"type": "string", "enum": values.into_iter().collect::<Vec<_>>()})
}

fn directions() -> Value {
    string_enum(Direction::ALL.iter().map(|d| d.as_str()))
}

/// `rotate.degrees`: an integer enum of [`RotateDegrees::ALLOWED`].
fn rotate_degrees() -> Value {
    json!({"type": "integer", "enum": RotateDegrees::ALLOWED})
}

/// The seven tool definitions (in
/// [`ToolCall::NAMES`](crate::tools::ToolCall::NAMES) order), with the
/// default speed tiers (0.08 / 0.12 / 0.18 m/s).
pub fn tool_schemas() -> Vec<ToolSchema> {
    tool_schemas_for(&SpeedConfig::default())
}

/// The seven tool definitions, `move_toward`'s description stating the
/// speed tiers `speeds` the executor will drive at.
///
/// The texts are compact (few tokens per call): a property carries a
/// description only where its name and type do not say enough; the angle
/// convention (clockwise, `rotate` positive = right) is stated once, in the
/// explore system prompt.
pub fn tool_schemas_for(speeds: &SpeedConfig) -> Vec<ToolSchema> {
    let nullable = |ty: &str| json!({"type": [ty, "null"]});
    let string = || json!({"type": "string"});
    vec![
        ToolSchema {
            name: "move_toward",
            description: format!(
                "Move under 2 m for duration_s seconds (1-8, null 3) at slow {}, medium {} or fast {} m/s.",
                speeds.slow_mps, speeds.medium_mps, speeds.fast_mps
            ),
            parameters: object(vec![
                ("direction", directions()),
                ("speed", string_enum(Speed::ALL.iter().map(|s| s.as_str()))),
                ("duration_s", nullable("number")),
            ]),
        },
        ToolSchema {
            name: "navigate_to_goal",
            description: "Planned path over 2 m to frontier_id, map x, y or back (retrace); unused fields null.".into(),
            parameters: object(vec![
                ("goal_type", string_enum(GoalType::ALL.iter().map(|g| g.as_str()))),
                ("frontier_id", nullable("integer")),
                ("x", nullable("number")),
                ("y", nullable("number")),
                ("reason", string()),
            ]),
        },
        ToolSchema {
            name: "rotate",
            description: "Turn.".into(),
            parameters: object(vec![("degrees", rotate_degrees())]),
        },
        ToolSchema {
            name: "stop_robot",
            description: "Stop.".into(),
            parameters: object(vec![("reason", string_enum(StopReason::ALL.iter().map(|r| r.as_str())))]),
        },
        ToolSchema {
            name: "observe_scene",
            description: "Detailed look at the camera view.".into(),
            parameters: object(vec![("focus", string_enum(ObserveFocus::ALL.iter().map(|f| f.as_str())))]),
        },
        ToolSchema {
            name: "check_path_clear",
            description: "LiDAR check of a direction up to distance_m (0.5-5).".into(),
            parameters: object(vec![("direction", directions()), ("distance_m", json!({"type": "number"}))]),
        },
        ToolSchema {
            name: "report_discovery",
            description: "Log a finding; significance room on entering a room.".into(),
            parameters: object(vec![
                ("label", string()),
                ("notes", string()),
                ("significance", string_enum(Significance::ALL.iter().map(|s| s.as_str()))),
            ]),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotate_degrees_is_the_enum_of_allowed_angles() {
        let schemas = tool_schemas();
        let rotate = schemas.iter().find(|s| s.name == "rotate").unwrap();
        let degrees = &rotate.parameters["properties"]["degrees"];
        assert_eq!(degrees["type"], "integer");
        let values: Vec<i64> = degrees["enum"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
        assert_eq!(values, RotateDegrees::ALLOWED.map(i64::from));
        assert!(!values.contains(&30), "strict mode cannot produce rotate(30)");
        // the parser enforces the same set where strict mode is unavailable
        for d in -180..=180 {
            let parsed = ToolCall::parse("rotate", &json!({ "degrees": d })).is_ok();
            assert_eq!(parsed, values.contains(&d), "{d}");
        }
    }
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
                assert!(props[k].get("minimum").is_none());
            }
        }
    }

    #[test]
    fn schemas_snapshot() {
        insta::assert_json_snapshot!(tool_schemas());
    }
}
