//! Strict parsing of tool-call arguments.
//!
//! Rules: arguments must be a JSON object (or a string holding one — the
//! OpenAI wire format delivers `arguments` as a JSON string); a required
//! field that is absent or `null` is [`SafetyError::MissingField`]; a wrong
//! JSON type is [`SafetyError::WrongType`]; a number outside its range is
//! [`SafetyError::OutOfRange`]; an unknown enum value is
//! [`SafetyError::UnknownEnumValue`]; unknown extra fields are ignored.
//! Integer fields accept integral floats (`90.0`), because some providers
//! (Gemini's protobuf `Struct`) carry every number as a double.

use super::{
    CHECK_DISTANCE_RANGE_M, DEFAULT_DURATION_S, DURATION_RANGE_S, GoalSpec, GoalType, ObserveFocus, RotateDegrees,
    Significance, Speed, StopReason, ToolCall,
};
use crate::error::SafetyError;
use nav_core::lidar::Direction;
use serde_json::{Map, Value};
use std::borrow::Cow;

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn describe(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 40 { format!("{}…", text.chars().take(40).collect::<String>()) } else { text }
}

/// Field access for one tool's argument object.
struct Args<'a> {
    tool: &'a str,
    map: Cow<'a, Map<String, Value>>,
}

impl<'a> Args<'a> {
    fn new(tool: &'a str, args: &'a Value) -> Result<Self, SafetyError> {
        match args {
            Value::Object(m) => Ok(Self { tool, map: Cow::Borrowed(m) }),
            Value::String(s) => match serde_json::from_str::<Value>(s) {
                Ok(Value::Object(m)) => Ok(Self { tool, map: Cow::Owned(m) }),
                _ => {
                    Err(SafetyError::NotAnObject { tool: tool.to_owned(), found: "a string that is not a JSON object" })
                }
            },
            other => Err(SafetyError::NotAnObject { tool: tool.to_owned(), found: type_name(other) }),
        }
    }

    /// The field's value, `None` when absent or null.
    fn get(&self, field: &'static str) -> Option<&Value> {
        self.map.get(field).filter(|v| !v.is_null())
    }

    fn missing(&self, field: &'static str) -> SafetyError {
        SafetyError::MissingField { tool: self.tool.to_owned(), field }
    }

    fn wrong(&self, field: &'static str, expected: &'static str, v: &Value) -> SafetyError {
        SafetyError::WrongType { tool: self.tool.to_owned(), field, expected, found: type_name(v).to_owned() }
    }

    fn opt_str(&self, field: &'static str) -> Result<Option<&str>, SafetyError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(v) => Err(self.wrong(field, "a string", v)),
        }
    }

    fn str(&self, field: &'static str) -> Result<&str, SafetyError> {
        self.opt_str(field)?.ok_or_else(|| self.missing(field))
    }

    fn enum_value<T: Copy>(
        &self,
        field: &'static str,
        parse: fn(&str) -> Option<T>,
        names: impl Iterator<Item = &'static str>,
    ) -> Result<T, SafetyError> {
        let s = self.str(field)?;
        parse(s).ok_or_else(|| SafetyError::UnknownEnumValue {
            tool: self.tool.to_owned(),
            field,
            value: Value::String(s.to_owned()).to_string(),
            allowed: names.collect::<Vec<_>>().join(", "),
        })
    }

    fn opt_number(&self, field: &'static str) -> Result<Option<f64>, SafetyError> {
        match self.get(field) {
            None => Ok(None),
            Some(v @ Value::Number(n)) => {
                n.as_f64().filter(|x| x.is_finite()).map(Some).ok_or_else(|| SafetyError::WrongType {
                    tool: self.tool.to_owned(),
                    field,
                    expected: "a finite number",
                    found: describe(v),
                })
            }
            Some(v) => Err(self.wrong(field, "a number", v)),
        }
    }

    fn number(&self, field: &'static str) -> Result<f64, SafetyError> {
        self.opt_number(field)?.ok_or_else(|| self.missing(field))
    }

    fn in_range(&self, field: &'static str, value: f64, (min, max): (f64, f64)) -> Result<f64, SafetyError> {
        if (min..=max).contains(&value) {
            Ok(value)
        } else {
            Err(SafetyError::OutOfRange { tool: self.tool.to_owned(), field, value, min, max })
        }
    }

    /// An integer, accepting integral floats.
    fn opt_integer(&self, field: &'static str) -> Result<Option<i64>, SafetyError> {
        match self.get(field) {
            None => Ok(None),
            Some(v @ Value::Number(n)) => {
                if let Some(i) = n.as_i64() {
                    return Ok(Some(i));
                }
                match n.as_f64() {
                    Some(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => Ok(Some(x as i64)),
                    _ => Err(SafetyError::WrongType {
                        tool: self.tool.to_owned(),
                        field,
                        expected: "an integer",
                        found: describe(v),
                    }),
                }
            }
            Some(v) => Err(self.wrong(field, "an integer", v)),
        }
    }
}

fn direction(a: &Args<'_>) -> Result<Direction, SafetyError> {
    a.enum_value("direction", Direction::parse, Direction::ALL.iter().map(|d| d.as_str()))
}

impl ToolCall {
    /// Parses one tool call from its name and JSON arguments. Strict: see
    /// the module documentation for the rules. Never panics.
    ///
    /// `navigate_to_goal` additionally requires `frontier_id` when
    /// `goal_type` is `frontier`, and `x` and `y` when it is `coordinates`;
    /// the fields that do not belong to the goal type are ignored.
    pub fn parse(name: &str, args: &Value) -> Result<ToolCall, SafetyError> {
        let tool = match ToolCall::NAMES.iter().find(|&&n| n == name) {
            Some(&n) => n,
            None => {
                return Err(SafetyError::UnknownTool {
                    name: describe(&Value::String(name.to_owned())),
                    expected: ToolCall::NAMES.join(", "),
                });
            }
        };
        let a = Args::new(tool, args)?;
        let call = match tool {
            "move_toward" => {
                let direction = direction(&a)?;
                let speed = a.enum_value("speed", Speed::parse, Speed::ALL.iter().map(|s| s.as_str()))?;
                let duration_s = match a.opt_number("duration_s")? {
                    Some(d) => a.in_range("duration_s", d, DURATION_RANGE_S)?,
                    None => DEFAULT_DURATION_S,
                };
                ToolCall::MoveToward { direction, speed, duration_s }
            }
            "navigate_to_goal" => {
                let goal_type = a.enum_value("goal_type", GoalType::parse, GoalType::ALL.iter().map(|g| g.as_str()))?;
                let goal = match goal_type {
                    GoalType::Frontier => {
                        let id = a.opt_integer("frontier_id")?.ok_or_else(|| a.missing("frontier_id"))?;
                        let id = u32::try_from(id).map_err(|_| SafetyError::OutOfRange {
                            tool: tool.to_owned(),
                            field: "frontier_id",
                            value: id as f64,
                            min: 0.0,
                            max: f64::from(u32::MAX),
                        })?;
                        GoalSpec::Frontier { id }
                    }
                    GoalType::Coordinates => GoalSpec::Coordinates { x: a.number("x")?, y: a.number("y")? },
                    GoalType::Retrace => GoalSpec::Retrace,
                };
                ToolCall::NavigateToGoal { goal, reason: a.str("reason")?.to_owned() }
            }
            "rotate" => {
                let d = a.opt_integer("degrees")?.ok_or_else(|| a.missing("degrees"))?;
                let degrees = RotateDegrees::new(d).ok_or_else(|| SafetyError::UnknownEnumValue {
                    tool: tool.to_owned(),
                    field: "degrees",
                    value: d.to_string(),
                    allowed: RotateDegrees::ALLOWED.map(|x| x.to_string()).join(", "),
                })?;
                ToolCall::Rotate { degrees }
            }
            "stop_robot" => ToolCall::StopRobot {
                reason: a.enum_value("reason", StopReason::parse, StopReason::ALL.iter().map(|r| r.as_str()))?,
            },
            "observe_scene" => ToolCall::ObserveScene {
                focus: a.enum_value("focus", ObserveFocus::parse, ObserveFocus::ALL.iter().map(|f| f.as_str()))?,
            },
            "check_path_clear" => {
                let direction = direction(&a)?;
                let d = a.number("distance_m")?;
                ToolCall::CheckPathClear { direction, distance_m: a.in_range("distance_m", d, CHECK_DISTANCE_RANGE_M)? }
            }
            _ => {
                let label = a.str("label")?;
                if label.trim().is_empty() {
                    return Err(SafetyError::WrongType {
                        tool: tool.to_owned(),
                        field: "label",
                        expected: "a non-empty string",
                        found: "an empty string".to_owned(),
                    });
                }
                let significance =
                    a.enum_value("significance", Significance::parse, Significance::ALL.iter().map(|s| s.as_str()))?;
                ToolCall::ReportDiscovery {
                    label: label.to_owned(),
                    notes: a.opt_str("notes")?.unwrap_or_default().to_owned(),
                    significance,
                }
            }
        };
        Ok(call)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn parses_every_tool() {
        let cases = [
            ("move_toward", json!({"direction": "left", "speed": "fast", "duration_s": 8})),
            ("navigate_to_goal", json!({"goal_type": "frontier", "frontier_id": 2, "reason": "unexplored"})),
            ("navigate_to_goal", json!({"goal_type": "coordinates", "x": 1.5, "y": -2, "reason": "r"})),
            ("navigate_to_goal", json!({"goal_type": "retrace", "reason": "dead end"})),
            ("rotate", json!({"degrees": -90})),
            ("stop_robot", json!({"reason": "exploration_complete"})),
            ("observe_scene", json!({"focus": "floor_surface"})),
            ("check_path_clear", json!({"direction": "backward", "distance_m": 0.5})),
            ("report_discovery", json!({"label": "kitchen", "notes": "fridge", "significance": "room"})),
        ];
        for (name, args) in cases {
            let call = ToolCall::parse(name, &args).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(call.name(), name);
        }
    }

    #[test]
    fn defaults_and_leniencies() {
        let c = ToolCall::parse("move_toward", &json!({"direction": "forward", "speed": "slow", "duration_s": null}))
            .unwrap();
        assert_eq!(c, ToolCall::MoveToward { direction: Direction::Forward, speed: Speed::Slow, duration_s: 3.0 });
        // OpenAI delivers arguments as a JSON string.
        let c = ToolCall::parse("rotate", &json!("{\"degrees\": 45}")).unwrap();
        assert_eq!(c.to_json(), json!({"degrees": 45}));
        // Integral floats for integers; extra fields ignored.
        let c = ToolCall::parse("rotate", &json!({"degrees": 135.0, "why": "x"})).unwrap();
        assert_eq!(c.to_json(), json!({"degrees": 135}));
        let c = ToolCall::parse("report_discovery", &json!({"label": "door", "significance": "landmark"})).unwrap();
        assert_eq!(c.to_json()["notes"], json!(""));
        // Strict-mode nulls for the other goal types' fields.
        let c = ToolCall::parse(
            "navigate_to_goal",
            &json!({"goal_type": "retrace", "frontier_id": null, "x": null, "y": null, "reason": ""}),
        )
        .unwrap();
        assert_eq!(c, ToolCall::NavigateToGoal { goal: GoalSpec::Retrace, reason: String::new() });
    }

    #[test]
    fn errors_name_the_field() {
        let err = |name: &str, args: Value| ToolCall::parse(name, &args).unwrap_err();
        assert_eq!(
            err("move_toward", json!({"direction": "up", "speed": "slow"})),
            SafetyError::UnknownEnumValue {
                tool: "move_toward".into(),
                field: "direction",
                value: "\"up\"".into(),
                allowed: "forward, forward_left, left, forward_right, right, backward".into(),
            }
        );
        assert_eq!(
            err("move_toward", json!({"direction": "left"})),
            SafetyError::MissingField { tool: "move_toward".into(), field: "speed" }
        );
        assert!(matches!(
            err("move_toward", json!({"direction": "left", "speed": "slow", "duration_s": 9})),
            SafetyError::OutOfRange { field: "duration_s", .. }
        ));
        assert!(matches!(
            err("move_toward", json!({"direction": "left", "speed": "slow", "duration_s": "3"})),
            SafetyError::WrongType { field: "duration_s", .. }
        ));
        assert!(matches!(
            err("rotate", json!({"degrees": 30})),
            SafetyError::UnknownEnumValue { field: "degrees", .. }
        ));
        assert!(matches!(err("rotate", json!({"degrees": 45.5})), SafetyError::WrongType { field: "degrees", .. }));
        assert!(matches!(
            err("navigate_to_goal", json!({"goal_type": "frontier", "reason": "r"})),
            SafetyError::MissingField { field: "frontier_id", .. }
        ));
        assert!(matches!(
            err("navigate_to_goal", json!({"goal_type": "frontier", "frontier_id": -1, "reason": "r"})),
            SafetyError::OutOfRange { field: "frontier_id", .. }
        ));
        assert!(matches!(
            err("navigate_to_goal", json!({"goal_type": "coordinates", "x": 1, "reason": "r"})),
            SafetyError::MissingField { field: "y", .. }
        ));
        assert!(matches!(
            err("check_path_clear", json!({"direction": "left", "distance_m": 0.2})),
            SafetyError::OutOfRange { field: "distance_m", .. }
        ));
        assert!(matches!(err("fly", json!({})), SafetyError::UnknownTool { .. }));
        assert!(matches!(err("stop_robot", json!([1])), SafetyError::NotAnObject { .. }));
        assert!(matches!(err("stop_robot", json!("not json")), SafetyError::NotAnObject { .. }));
        assert!(matches!(
            err("report_discovery", json!({"label": " ", "significance": "room"})),
            SafetyError::WrongType { field: "label", .. }
        ));
        let msg = err("move_toward", json!({"direction": "left"})).to_string();
        assert_eq!(msg, "`move_toward`: missing required field `speed`");
    }

    fn arb_call() -> impl Strategy<Value = ToolCall> {
        let dir = proptest::sample::select(Direction::ALL.to_vec());
        let text = "[a-zA-Z0-9 _\\-\"\\\\é]{0,12}";
        prop_oneof![
            (dir.clone(), proptest::sample::select(Speed::ALL.to_vec()), 1.0f64..=8.0)
                .prop_map(|(direction, speed, duration_s)| ToolCall::MoveToward { direction, speed, duration_s }),
            (any::<u32>(), text)
                .prop_map(|(id, r)| ToolCall::NavigateToGoal { goal: GoalSpec::Frontier { id }, reason: r }),
            (-1.0e6f64..1.0e6, -1.0e6f64..1.0e6, text)
                .prop_map(|(x, y, r)| ToolCall::NavigateToGoal { goal: GoalSpec::Coordinates { x, y }, reason: r }),
            text.prop_map(|r| ToolCall::NavigateToGoal { goal: GoalSpec::Retrace, reason: r }),
            proptest::sample::select(RotateDegrees::ALLOWED.to_vec())
                .prop_map(|d| ToolCall::Rotate { degrees: RotateDegrees::new(d.into()).unwrap() }),
            proptest::sample::select(StopReason::ALL.to_vec()).prop_map(|reason| ToolCall::StopRobot { reason }),
            proptest::sample::select(ObserveFocus::ALL.to_vec()).prop_map(|focus| ToolCall::ObserveScene { focus }),
            (dir, 0.5f64..=5.0).prop_map(|(direction, distance_m)| ToolCall::CheckPathClear { direction, distance_m }),
            ("[a-z]{1,8}", text, proptest::sample::select(Significance::ALL.to_vec()))
                .prop_map(|(label, notes, significance)| ToolCall::ReportDiscovery { label, notes, significance }),
        ]
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "[a-z_]{0,10}".prop_map(Value::String),
            proptest::sample::select(vec!["forward", "slow", "frontier", "room", "general", "uncertain"])
                .prop_map(|s| Value::String(s.to_owned())),
        ];
        leaf.prop_recursive(2, 16, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(
                    proptest::sample::select(vec![
                        "direction",
                        "speed",
                        "duration_s",
                        "goal_type",
                        "frontier_id",
                        "x",
                        "y",
                        "reason",
                        "degrees",
                        "focus",
                        "distance_m",
                        "label",
                        "notes",
                        "significance",
                        "other"
                    ]),
                    inner,
                    0..6
                )
                .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        #[test]
        fn to_json_round_trips(call in arb_call()) {
            let back = ToolCall::parse(call.name(), &call.to_json());
            prop_assert_eq!(back, Ok(call.clone()));
            // The command record round-trips through serde too.
            let text = serde_json::to_string(&call).unwrap();
            let again: ToolCall = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(again, call);
        }

        #[test]
        fn parse_never_panics_and_validates(
            name in proptest::sample::select(ToolCall::NAMES.to_vec()),
            args in arb_json(),
        ) {
            if let Ok(call) = ToolCall::parse(name, &args) {
                if let ToolCall::MoveToward { duration_s, .. } = call {
                    prop_assert!((1.0..=8.0).contains(&duration_s));
                }
                if let ToolCall::CheckPathClear { distance_m, .. } = call {
                    prop_assert!((0.5..=5.0).contains(&distance_m));
                }
                prop_assert_eq!(ToolCall::parse(name, &call.to_json()), Ok(call));
            }
        }
    }
}
