//! The candidates protocol (the LLMos navigation pipeline; see
//! docs/CANDIDATES.md): the model chooses among scored
//! candidates and answers `{action, fallback, world_model_update?,
//! explanation}`. Parsing strips code fences and `<think>` blocks, extracts
//! the first balanced JSON object from prose, removes trailing commas,
//! validates, and falls back to the free-form normalizer with its
//! synonym table; anything else becomes the STOP fallback.

use super::{CallRecord, DecisionError, PlannerReply, type_name};
use crate::protocol::annotate::{encode_png, render_world_model};
use crate::protocol::json::extract_json_object;
use crate::protocol::prompts::CANDIDATES_SYSTEM;
use crate::vlm::{ImageDetail, Part, VisionLanguageModel, VlmRequest};
use async_trait::async_trait;
use nav_core::candidates::Candidate;
use nav_core::geometry::{Point2, Pose2};
use nav_core::grid::{Correction, ObservedState, OccupancyGrid};
use nav_core::raster::RgbFrame;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt::Write as _;
use std::time::Duration;

/// The five action types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ActionType {
    /// Go to a candidate or coordinate.
    MoveTo,
    /// Explore a frontier.
    Explore,
    /// Turn to a heading.
    RotateTo,
    /// Follow the nearest wall.
    FollowWall,
    /// Stop.
    Stop,
}

impl ActionType {
    /// Parses the exact schema name (`MOVE_TO`, …).
    pub fn from_schema(s: &str) -> Option<Self> {
        Some(match s {
            "MOVE_TO" => ActionType::MoveTo,
            "EXPLORE" => ActionType::Explore,
            "ROTATE_TO" => ActionType::RotateTo,
            "FOLLOW_WALL" => ActionType::FollowWall,
            "STOP" => ActionType::Stop,
            _ => return None,
        })
    }

    /// The synonym table (case-insensitive): move/go/go_to/navigate/
    /// moveto → MOVE_TO; explore/scan → EXPLORE; rotate/rotate_to/turn →
    /// ROTATE_TO; follow_wall/wall_follow → FOLLOW_WALL; stop/halt/wait →
    /// STOP. Schema names are accepted in any case too.
    pub fn from_synonym(s: &str) -> Option<Self> {
        let k = s.trim().to_ascii_lowercase().replace(['-', ' '], "_");
        Some(match k.as_str() {
            "move_to" | "move" | "go" | "go_to" | "navigate" | "moveto" => ActionType::MoveTo,
            "explore" | "scan" => ActionType::Explore,
            "rotate_to" | "rotate" | "turn" => ActionType::RotateTo,
            "follow_wall" | "wall_follow" => ActionType::FollowWall,
            "stop" | "halt" | "wait" => ActionType::Stop,
            _ => return None,
        })
    }
}

/// The fallback action types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FallbackType {
    /// Explore instead.
    Explore,
    /// Rotate (the executor turns 90°).
    RotateTo,
    /// Stop.
    Stop,
}

/// The chosen action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateAction {
    /// Action type.
    #[serde(rename = "type")]
    pub kind: ActionType,
    /// Candidate id (`c1`, `f2`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_id: Option<String>,
    /// A novel coordinate `[x, y]`, metres.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_m: Option<[f64; 2]>,
    /// Heading for ROTATE_TO, degrees.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub yaw_deg: Option<f64>,
}

/// What to do if the action fails.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FallbackAction {
    /// Fallback type.
    pub if_failed: FallbackType,
    /// Optional candidate for the fallback.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_id: Option<String>,
}

/// Corrections to the world model proposed by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorldModelUpdate {
    /// The corrections, applied through the grid's guard chain.
    pub corrections: Vec<Correction>,
}

/// A validated candidates decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateDecision {
    /// The action.
    pub action: CandidateAction,
    /// The fallback.
    pub fallback: FallbackAction,
    /// Optional world-model corrections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub world_model_update: Option<WorldModelUpdate>,
    /// Why (non-empty).
    pub explanation: String,
}

/// How a reply became a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParsePath {
    /// It matched the schema directly.
    Strict,
    /// The free-form normalizer rewrote it.
    Normalized,
}

impl CandidateDecision {
    /// The fallback: STOP / STOP / `"Fallback: <reason>"`.
    pub fn fallback(reason: &str) -> Self {
        Self {
            action: CandidateAction { kind: ActionType::Stop, target_id: None, target_m: None, yaw_deg: None },
            fallback: FallbackAction { if_failed: FallbackType::Stop, target_id: None },
            world_model_update: None,
            explanation: format!("Fallback: {reason}"),
        }
    }

    /// Parses a raw reply: extract the JSON object, validate it directly,
    /// and when that fails try the free-form normalizer and validate again.
    pub fn parse(reply: &str) -> Result<(Self, ParsePath), DecisionError> {
        let obj = extract_json_object(reply)?;
        match validate_candidate(&obj) {
            Ok(d) => Ok((d, ParsePath::Strict)),
            // when the normalizer recognises the reply, its validation error names what is
            // really missing (a fallback, an explanation); otherwise the strict error does
            Err(strict_err) => match normalize(&obj) {
                Ok(n) => validate_candidate(&n).map(|d| (d, ParsePath::Normalized)),
                Err(_) => Err(strict_err),
            },
        }
    }

    /// Checks that referenced candidate ids exist.
    pub fn check_targets(&self, known_ids: &[&str]) -> Result<(), DecisionError> {
        for (field, id) in
            [("action.target_id", &self.action.target_id), ("fallback.target_id", &self.fallback.target_id)]
        {
            if let Some(id) = id {
                if !known_ids.contains(&id.as_str()) {
                    return Err(DecisionError::invalid(field, format!("unknown candidate {id:?}")));
                }
            }
        }
        Ok(())
    }
}

fn obj_field<'a>(obj: &'a Map<String, Value>, key: &str, path: &str) -> Result<&'a Map<String, Value>, DecisionError> {
    match obj.get(key) {
        Some(Value::Object(m)) => Ok(m),
        Some(other) => Err(DecisionError::invalid(path, format!("expected an object, got {}", type_name(other)))),
        None => Err(DecisionError::invalid(path, "missing")),
    }
}

fn opt_str(obj: &Map<String, Value>, key: &str, path: &str) -> Result<Option<String>, DecisionError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_string())),
        Some(Value::String(_)) => Err(DecisionError::invalid(path, "empty")),
        Some(other) => Err(DecisionError::invalid(path, format!("expected a string, got {}", type_name(other)))),
    }
}

fn opt_num(obj: &Map<String, Value>, key: &str, path: &str) -> Result<Option<f64>, DecisionError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => {
            n.as_f64().filter(|v| v.is_finite()).map(Some).ok_or_else(|| DecisionError::invalid(path, "not finite"))
        }
        Some(other) => Err(DecisionError::invalid(path, format!("expected a number, got {}", type_name(other)))),
    }
}

fn point(v: &Value, path: &str) -> Result<[f64; 2], DecisionError> {
    match v {
        Value::Array(a) if a.len() == 2 => {
            let x = a[0].as_f64().filter(|v| v.is_finite());
            let y = a[1].as_f64().filter(|v| v.is_finite());
            match (x, y) {
                (Some(x), Some(y)) => Ok([x, y]),
                _ => Err(DecisionError::invalid(path, "expected two finite numbers")),
            }
        }
        _ => Err(DecisionError::invalid(path, "expected a 2-element array [x, y]")),
    }
}

/// Strict validation against the decision schema (extra fields ignored).
pub fn validate_candidate(obj: &Map<String, Value>) -> Result<CandidateDecision, DecisionError> {
    let action = obj_field(obj, "action", "action")?;
    let kind_s = match action.get("type") {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(DecisionError::invalid("action.type", format!("expected a string, got {}", type_name(other))));
        }
        None => return Err(DecisionError::invalid("action.type", "missing")),
    };
    let kind = ActionType::from_schema(kind_s).ok_or_else(|| {
        DecisionError::invalid(
            "action.type",
            format!("{kind_s:?} is not one of MOVE_TO, EXPLORE, ROTATE_TO, FOLLOW_WALL, STOP"),
        )
    })?;
    let target_id = opt_str(action, "target_id", "action.target_id")?;
    let target_m = match action.get("target_m") {
        None | Some(Value::Null) => None,
        Some(v) => Some(point(v, "action.target_m")?),
    };
    let yaw_deg = opt_num(action, "yaw_deg", "action.yaw_deg")?;
    if kind == ActionType::MoveTo && target_id.is_none() && target_m.is_none() {
        return Err(DecisionError::invalid("action", "MOVE_TO requires target_id or target_m"));
    }
    if kind == ActionType::RotateTo && yaw_deg.is_none() {
        return Err(DecisionError::invalid("action.yaw_deg", "ROTATE_TO requires yaw_deg"));
    }
    let fb = obj_field(obj, "fallback", "fallback")?;
    let if_failed = match fb.get("if_failed") {
        Some(Value::String(s)) => match s.as_str() {
            "EXPLORE" => FallbackType::Explore,
            "ROTATE_TO" => FallbackType::RotateTo,
            "STOP" => FallbackType::Stop,
            _ => {
                return Err(DecisionError::invalid(
                    "fallback.if_failed",
                    format!("{s:?} is not one of EXPLORE, ROTATE_TO, STOP"),
                ));
            }
        },
        Some(other) => {
            return Err(DecisionError::invalid(
                "fallback.if_failed",
                format!("expected a string, got {}", type_name(other)),
            ));
        }
        None => return Err(DecisionError::invalid("fallback.if_failed", "missing")),
    };
    let fb_target = opt_str(fb, "target_id", "fallback.target_id")?;
    let world_model_update = match obj.get("world_model_update") {
        None | Some(Value::Null) => None,
        Some(Value::Object(w)) => {
            let list = match w.get("corrections") {
                Some(Value::Array(a)) => a,
                None | Some(Value::Null) => &Vec::new(),
                Some(other) => {
                    return Err(DecisionError::invalid(
                        "world_model_update.corrections",
                        format!("expected an array, got {}", type_name(other)),
                    ));
                }
            };
            let mut corrections = Vec::with_capacity(list.len());
            for (i, c) in list.iter().enumerate() {
                let path = format!("world_model_update.corrections[{i}]");
                let Value::Object(c) = c else {
                    return Err(DecisionError::invalid(path, "expected an object"));
                };
                let pos_m = point(c.get("pos_m").unwrap_or(&Value::Null), &format!("{path}.pos_m"))?;
                let observed_state = match c.get("observed_state").and_then(Value::as_str) {
                    Some("free") => ObservedState::Free,
                    Some("obstacle") => ObservedState::Obstacle,
                    Some("unknown") => ObservedState::Unknown,
                    _ => {
                        return Err(DecisionError::invalid(
                            format!("{path}.observed_state"),
                            "expected \"free\", \"obstacle\" or \"unknown\"",
                        ));
                    }
                };
                let confidence = opt_num(c, "confidence", &format!("{path}.confidence"))?
                    .ok_or_else(|| DecisionError::invalid(format!("{path}.confidence"), "missing"))?;
                if !(0.0..=1.0).contains(&confidence) {
                    return Err(DecisionError::invalid(
                        format!("{path}.confidence"),
                        format!("{confidence} is outside [0, 1]"),
                    ));
                }
                corrections.push(Correction { pos_m, observed_state, confidence });
            }
            Some(WorldModelUpdate { corrections })
        }
        Some(other) => {
            return Err(DecisionError::invalid(
                "world_model_update",
                format!("expected an object, got {}", type_name(other)),
            ));
        }
    };
    let explanation = match obj.get("explanation") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Value::String(_)) => return Err(DecisionError::invalid("explanation", "empty")),
        Some(other) => {
            return Err(DecisionError::invalid("explanation", format!("expected a string, got {}", type_name(other))));
        }
        None => return Err(DecisionError::invalid("explanation", "missing")),
    };
    Ok(CandidateDecision {
        action: CandidateAction { kind, target_id, target_m, yaw_deg },
        fallback: FallbackAction { if_failed, target_id: fb_target },
        world_model_update,
        explanation,
    })
}

/// The free-form normalizer: rewrites common variations into the schema.
/// The action may be a string or an object, its type under `type`,
/// `action`, `name` or `command` (synonym table, any case); the target
/// under `target_id`, `target`, `subgoal` or `candidate` (a string becomes
/// `target_id`, a 2-element array `target_m`); the heading under `yaw_deg`,
/// `yaw`, `angle`, `heading`, `degrees` or `rotation`; the explanation under
/// `explanation`, `reason`, `reasoning` or `rationale`; a fallback given as
/// a string or under `if_failed` has its name mapped the same way.
///
/// A *free-form* reply — its action a plain string (`"navigate"`) or no
/// `action` key at all (`{"command": "halt", …}`) — that has no `fallback`
/// gets the default fallback STOP, as LLMos's `normalizeLLMResponse` does.
/// A *structured* reply (an `action` object) is never completed: a missing
/// fallback stays missing and validation rejects it; a missing explanation
/// stays missing in either shape.
pub fn normalize(obj: &Map<String, Value>) -> Result<Map<String, Value>, DecisionError> {
    const TYPE_KEYS: [&str; 4] = ["type", "action", "name", "command"];
    const TARGET_KEYS: [&str; 4] = ["target_id", "target", "subgoal", "candidate"];
    const YAW_KEYS: [&str; 6] = ["yaw_deg", "yaw", "angle", "heading", "degrees", "rotation"];
    const WHY_KEYS: [&str; 4] = ["explanation", "reason", "reasoning", "rationale"];

    // Where the action lives: an object under "action", a string under "action", or the top level.
    let (action_obj, action_str): (Option<&Map<String, Value>>, Option<&str>) = match obj.get("action") {
        Some(Value::Object(m)) => (Some(m), None),
        Some(Value::String(s)) => (None, Some(s.as_str())),
        _ => (None, None),
    };
    let scope = action_obj.unwrap_or(obj);
    let type_str = action_str
        .or_else(|| TYPE_KEYS.iter().find_map(|k| scope.get(*k).and_then(Value::as_str)))
        .ok_or_else(|| DecisionError::invalid("action.type", "no action type found"))?;
    let kind = ActionType::from_synonym(type_str)
        .ok_or_else(|| DecisionError::invalid("action.type", format!("unrecognised action {type_str:?}")))?;
    let mut action = Map::new();
    action.insert("type".into(), serde_json::to_value(kind).unwrap_or(Value::Null));
    let find = |keys: &[&str]| keys.iter().find_map(|k| scope.get(*k).or_else(|| obj.get(*k)));
    if let Some(t) = find(&TARGET_KEYS) {
        match t {
            Value::String(s) => {
                action.insert("target_id".into(), Value::String(s.clone()));
            }
            Value::Array(a) if a.len() == 2 => {
                action.insert("target_m".into(), Value::Array(a.clone()));
            }
            _ => {}
        }
    }
    if let Some(m) = scope.get("target_m").or_else(|| obj.get("target_m")) {
        action.insert("target_m".into(), m.clone());
    }
    if let Some(y) = find(&YAW_KEYS).filter(|v| v.is_number()) {
        action.insert("yaw_deg".into(), y.clone());
    }
    let mut out = Map::new();
    out.insert("action".into(), Value::Object(action));
    // the fallback: only its name is mapped; a missing or invalid one stays so and fails validation
    let fallback_name = |s: &str| match ActionType::from_synonym(s) {
        Some(ActionType::Explore) => "EXPLORE".to_string(),
        Some(ActionType::RotateTo) => "ROTATE_TO".to_string(),
        Some(ActionType::Stop) => "STOP".to_string(),
        _ => s.to_string(),
    };
    match obj.get("fallback") {
        Some(Value::Object(f)) => {
            let mut f = f.clone();
            if let Some(Value::String(s)) = f.get("if_failed").cloned() {
                f.insert("if_failed".into(), Value::String(fallback_name(&s)));
            }
            out.insert("fallback".into(), Value::Object(f));
        }
        Some(Value::String(s)) => {
            out.insert("fallback".into(), serde_json::json!({ "if_failed": fallback_name(s) }));
        }
        Some(other) => {
            out.insert("fallback".into(), other.clone());
        }
        // free-form: the default fallback; structured: left missing for validation to reject
        None if action_obj.is_none() => {
            out.insert("fallback".into(), serde_json::json!({ "if_failed": "STOP" }));
        }
        None => {}
    }
    if let Some(w) = obj.get("world_model_update") {
        out.insert("world_model_update".into(), w.clone());
    }
    if let Some(why) = WHY_KEYS.iter().find_map(|k| obj.get(*k).or_else(|| scope.get(*k))) {
        out.insert("explanation".into(), why.clone());
    }
    Ok(out)
}

/// The robot's mode as printed in the STATE block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NavMode {
    /// Heading for a goal.
    Navigating,
    /// No goal: exploring.
    Exploring,
    /// Stuck: recovering.
    Recovering,
    /// The goal was reached.
    GoalReached,
}

impl NavMode {
    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            NavMode::Navigating => "navigating",
            NavMode::Exploring => "exploring",
            NavMode::Recovering => "recovering",
            NavMode::GoalReached => "goal_reached",
        }
    }
}

/// The previous cycle's action and what came of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastAction {
    /// E.g. `MOVE_TO c1`.
    pub action: String,
    /// E.g. `moved`, `blocked`, `collision`.
    pub result: String,
    /// One line of details.
    pub details: String,
}

/// One line of the HISTORY block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// Cycle number.
    pub cycle: u32,
    /// E.g. `MOVE_TO c1`.
    pub action: String,
    /// E.g. `planned`, `blocked`.
    pub result: String,
}

/// The size of the robot's topology graph, for the
/// `[WAYPOINTS: N waypoints, N edges]` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopologySummary {
    /// Waypoints (anchors) in the graph.
    pub waypoints: usize,
    /// Undirected edges between them.
    pub edges: usize,
}

/// Everything one candidates cycle shows the model (LLMos's
/// `NavigationFrame`).
#[derive(Debug, Clone, Copy)]
pub struct CandidateFrame<'a> {
    /// Cycle number.
    pub cycle: u32,
    /// The goal in words.
    pub goal_text: &'a str,
    /// The goal position, if any.
    pub goal: Option<Point2>,
    /// Goal tolerance, metres.
    pub goal_tolerance_m: f64,
    /// The robot's pose.
    pub pose: Pose2,
    /// The mode.
    pub mode: NavMode,
    /// Consecutive stuck cycles, when stuck.
    pub stuck_cycles: Option<u32>,
    /// The previous action.
    pub last_action: Option<&'a LastAction>,
    /// The world model.
    pub grid: &'a OccupancyGrid,
    /// The scored candidates.
    pub candidates: &'a [Candidate],
    /// Known objects (`label (x, y)`).
    pub objects: &'a [String],
    /// The topology the robot has built (the `[WAYPOINTS: …]` line), if any.
    pub topology: Option<TopologySummary>,
    /// Recent decisions, newest first.
    pub history: &'a [HistoryEntry],
    /// The camera view, if any.
    pub camera: Option<&'a RgbFrame>,
    /// Send a rendered top-down map of the world model.
    pub map_image: bool,
}

/// The user message layout.
pub fn frame_text(f: &CandidateFrame<'_>) -> String {
    let mut s = String::with_capacity(2048);
    let _ = writeln!(s, "=== CYCLE {} ===", f.cycle);
    let _ = writeln!(s, "GOAL: {}", f.goal_text);
    s.push('\n');
    s.push_str("STATE:\n");
    let _ = writeln!(s, "  position: ({:.2}, {:.2})", f.pose.x, f.pose.y);
    let _ = writeln!(s, "  heading: {:.0} degrees", heading_deg(f.pose.yaw));
    let _ = writeln!(s, "  mode: {}", f.mode.as_str());
    if let Some(n) = f.stuck_cycles {
        let _ = writeln!(s, "  STUCK for {n} cycles");
    }
    s.push('\n');
    match f.last_action {
        Some(a) => {
            let _ = writeln!(s, "LAST ACTION: {} -> {}", a.action, a.result);
            if !a.details.is_empty() {
                let _ = writeln!(s, "  {}", a.details);
            }
        }
        None => s.push_str("LAST ACTION: none\n"),
    }
    s.push('\n');
    let g = f.grid;
    s.push_str("WORLD MODEL:\n");
    let _ = writeln!(s, "  grid: {}x{} @ {}m", g.width(), g.height(), g.resolution());
    let _ = writeln!(s, "  origin: ({:.2}, {:.2})", g.origin().x, g.origin().y);
    let _ = writeln!(s, "  exploration: {:.0}%", g.known_fraction() * 100.0);
    let _ = writeln!(s, "  robot: ({:.2}, {:.2}) heading {:.0} degrees", f.pose.x, f.pose.y, heading_deg(f.pose.yaw));
    if let Some(goal) = f.goal {
        let _ = writeln!(s, "  goal: ({:.2}, {:.2}) +/- {:.1}m", goal.x, goal.y, f.goal_tolerance_m);
    }
    let _ = writeln!(s, "  occupancy: {}", g.to_rle());
    if !f.objects.is_empty() || f.topology.is_some() {
        s.push('\n');
    }
    if !f.objects.is_empty() {
        let _ = writeln!(s, "OBJECTS: {}", f.objects.join(", "));
    }
    if let Some(t) = f.topology {
        let _ = writeln!(s, "WAYPOINTS: {} waypoints, {} edges", t.waypoints, t.edges);
    }
    s.push_str("\nCANDIDATES:\n");
    if f.candidates.is_empty() {
        s.push_str("  (none)\n");
    }
    for c in f.candidates {
        let _ = writeln!(s, "  {}", c.to_prompt_line());
    }
    s.push_str("\nHISTORY:\n");
    if f.history.is_empty() {
        s.push_str("  (none)\n");
    }
    for h in f.history {
        let _ = writeln!(s, "  cycle {}: {} -> {}", h.cycle, h.action, h.result);
    }
    s.push_str("\nRespond with a JSON navigation decision:");
    s
}

/// A heading in whole degrees, never "-0".
fn heading_deg(yaw: f64) -> f64 {
    yaw.to_degrees().round() + 0.0
}

/// How candidates requests are built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CandidatePromptConfig {
    /// Send no images.
    pub text_only: bool,
    /// Image detail.
    pub image_detail: ImageDetail,
    /// Output token limit (512).
    pub max_tokens: u32,
    /// Temperature (0.3).
    pub temperature: f32,
    /// Per-call timeout, seconds (the loop's own inference timeout, 5 s, also applies).
    pub timeout_s: f64,
    /// Map image size, pixels.
    pub map_size_px: usize,
    /// Grounding knowledge (docs/GROUNDING.md) inserted into the system prompt.
    pub grounding: Option<String>,
    /// The verbalized-entropy variant of the system prompt (the model states
    /// its uncertainty before deciding).
    pub verbalized_entropy: bool,
    /// Ask the server for output constrained to the decision schema
    /// ([`candidates_schema`]); a server that offers no structured output
    /// gets the schema's instructions only (the backend's capability
    /// fallback).
    pub json_schema: bool,
}

impl Default for CandidatePromptConfig {
    fn default() -> Self {
        Self {
            text_only: false,
            image_detail: ImageDetail::Low,
            max_tokens: 512,
            temperature: 0.3,
            timeout_s: 15.0,
            map_size_px: 400,
            grounding: None,
            verbalized_entropy: false,
            json_schema: true,
        }
    }
}

/// The most world-model corrections one decision may carry under the
/// decision schema ([`candidates_schema`]).
pub const MAX_SCHEMA_CORRECTIONS: usize = 4;

/// The JSON Schema of a candidates decision for a frame offering the
/// candidates `ids`, in the subset every constrained decoder takes (OpenAI's
/// strict mode, llama.cpp's grammar, vLLM, Gemini's response schema):
/// every field listed and required, an unused one `null`, and nullable
/// fields as `anyOf` with `{"type": "null"}` (llama-cpp-python's grammar
/// drops the `items` and `properties` of a `"type": [T, "null"]`).
///
/// The action is one of four shapes (`anyOf`), so a reply in shape is a
/// valid decision: MOVE_TO or EXPLORE a listed candidate (its id an enum of
/// `ids`), MOVE_TO or EXPLORE a point `[x, y]` (exactly two numbers),
/// ROTATE_TO a heading, or EXPLORE, FOLLOW_WALL or STOP without a target.
/// The fallback's type is an enum and its target a listed id or `null`;
/// world-model corrections (at most [`MAX_SCHEMA_CORRECTIONS`] a decision,
/// so a small model cannot spend its output budget on them) carry `pos_m`
/// as exactly two numbers. A server
/// that constrains its output to this schema leaves even a tiny model only
/// the choice.
pub fn candidates_schema(ids: &[&str]) -> Value {
    use serde_json::json;
    let null = || json!({"type": "null"});
    let or_null = |schema: Value| json!({"anyOf": [schema, {"type": "null"}]});
    let point = || json!({"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2});
    let id = (!ids.is_empty()).then(|| json!({"type": "string", "enum": ids}));
    let action = |types: &[&str], target_id: Value, target_m: Value, yaw_deg: Value| {
        json!({
            "type": "object",
            "properties": {
                "type": {"type": "string", "enum": types},
                "target_id": target_id,
                "target_m": target_m,
                "yaw_deg": yaw_deg,
            },
            "required": ["type", "target_id", "target_m", "yaw_deg"],
            "additionalProperties": false,
        })
    };
    let mut actions = Vec::with_capacity(4);
    if let Some(id) = &id {
        actions.push(action(&["MOVE_TO", "EXPLORE"], id.clone(), null(), null()));
    }
    actions.push(action(&["MOVE_TO", "EXPLORE"], null(), point(), null()));
    actions.push(action(&["ROTATE_TO"], null(), null(), json!({"type": "number"})));
    actions.push(action(&["EXPLORE", "FOLLOW_WALL", "STOP"], null(), null(), null()));
    let correction = json!({
        "type": "object",
        "properties": {
            "pos_m": point(),
            "observed_state": {"type": "string", "enum": ["free", "obstacle", "unknown"]},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["pos_m", "observed_state", "confidence"],
        "additionalProperties": false,
    });
    json!({
        "type": "object",
        "properties": {
            "action": {"anyOf": actions},
            "fallback": {
                "type": "object",
                "properties": {
                    "if_failed": {"type": "string", "enum": ["EXPLORE", "ROTATE_TO", "STOP"]},
                    "target_id": id.map_or_else(null, or_null),
                },
                "required": ["if_failed", "target_id"],
                "additionalProperties": false,
            },
            "world_model_update": or_null(json!({
                "type": "object",
                "properties": {
                    "corrections": {"type": "array", "items": correction, "maxItems": MAX_SCHEMA_CORRECTIONS},
                },
                "required": ["corrections"],
                "additionalProperties": false,
            })),
            "explanation": {"type": "string"},
        },
        "required": ["action", "fallback", "world_model_update", "explanation"],
        "additionalProperties": false,
    })
}

/// Builds the request for one candidates cycle: map image and camera frame
/// (each with its caption), then the frame text.
pub fn build_request(f: &CandidateFrame<'_>, cfg: &CandidatePromptConfig) -> VlmRequest {
    let mut req = VlmRequest::new(super::grounding::system_prompt(
        CANDIDATES_SYSTEM,
        &super::grounding::SystemPromptOptions {
            grounding: cfg.grounding.clone(),
            verbalized_entropy: cfg.verbalized_entropy,
        },
    ))
    .cache_system(true)
    .temperature(cfg.temperature)
    .max_tokens(cfg.max_tokens)
    .timeout(Duration::from_secs_f64(cfg.timeout_s.max(0.1)));
    if cfg.json_schema {
        let ids: Vec<&str> = f.candidates.iter().map(|c| c.id.as_str()).collect();
        req = req.json_schema("navigation_decision", candidates_schema(&ids), true);
    }
    if !cfg.text_only {
        if f.map_image {
            let map = render_world_model(f.grid, f.pose, f.goal, f.candidates, cfg.map_size_px);
            if let Ok(png) = encode_png(&map) {
                req = req
                    .image(Part::png(png, cfg.image_detail))
                    .text("[Above: Top-down map of the arena. Green=robot, Red=goal, Blue/Orange=candidates]");
            }
        }
        if let Some(cam) = f.camera {
            if let Ok(jpeg) = crate::protocol::annotate::encode_jpeg(cam, 80) {
                req = req.image(Part::jpeg(jpeg, cfg.image_detail)).text("[Above: Current camera view from the robot]");
            }
        }
    }
    req.text(frame_text(f))
}

/// A candidates planner: a VLM behind [`VlmCandidatePlanner`] or the
/// offline chooser.
#[async_trait]
pub trait CandidatePlanner: Send {
    /// Short name for logs.
    fn name(&self) -> String;
    /// Chooses the next action.
    async fn decide(&mut self, frame: &CandidateFrame<'_>) -> PlannerReply<CandidateDecision>;
}

/// The candidates planner backed by a vision-language model.
pub struct VlmCandidatePlanner<M> {
    vlm: M,
    config: CandidatePromptConfig,
}

impl<M: VisionLanguageModel> VlmCandidatePlanner<M> {
    /// A planner calling `vlm`.
    pub fn new(vlm: M, config: CandidatePromptConfig) -> Self {
        Self { vlm, config }
    }
}

#[async_trait]
impl<M: VisionLanguageModel> CandidatePlanner for VlmCandidatePlanner<M> {
    fn name(&self) -> String {
        let info = self.vlm.describe();
        format!("vlm:{}/{}", info.provider, info.model)
    }

    async fn decide(&mut self, frame: &CandidateFrame<'_>) -> PlannerReply<CandidateDecision> {
        let mut record = CallRecord::default();
        let reason = match self.vlm.complete(build_request(frame, &self.config)).await {
            Ok(resp) => {
                record.add_response(&resp);
                let ids: Vec<&str> = frame.candidates.iter().map(|c| c.id.as_str()).collect();
                match CandidateDecision::parse(&resp.text) {
                    Ok((d, _)) => match d.check_targets(&ids) {
                        Ok(()) => return PlannerReply { decision: d, distance_hint_m: None, record },
                        Err(e) => e.to_string(),
                    },
                    Err(e) => e.to_string(),
                }
            }
            Err(e) => {
                let e = e.to_string();
                record.add_failure(&e);
                e
            }
        };
        tracing::warn!(%reason, "candidates: using the STOP fallback");
        record.errors.push(reason.clone());
        record.fallback = Some(reason.clone());
        PlannerReply { decision: CandidateDecision::fallback(&reason), distance_hint_m: None, record }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn strict_seed_shape() {
        let reply = r#"{"action": {"type": "MOVE_TO", "target_id": "c1"}, "fallback": {"if_failed": "EXPLORE", "target_id": "f2"},
            "world_model_update": {"corrections": [{"pos_m": [1.0, 2.0], "observed_state": "obstacle", "confidence": 0.8}]},
            "explanation": "c1 is on the way"}"#;
        let (d, path) = CandidateDecision::parse(reply).unwrap();
        assert_eq!(path, ParsePath::Strict);
        assert_eq!(d.action.kind, ActionType::MoveTo);
        assert_eq!(d.world_model_update.as_ref().unwrap().corrections[0].pos_m, [1.0, 2.0]);
        assert!(d.check_targets_ok());
    }

    impl CandidateDecision {
        fn check_targets_ok(&self) -> bool {
            self.check_targets(&["c1", "f2"]).is_ok() && self.check_targets(&["c1"]).is_err()
        }
    }

    #[test]
    fn normalizer_synonyms() {
        let cases = [
            (r#"{"action": "go_to", "target": "c2", "fallback": "scan", "reason": "closer"}"#, ActionType::MoveTo),
            (
                r#"{"action": {"type": "scan"}, "fallback": {"if_failed": "halt"}, "reasoning": "look"}"#,
                ActionType::Explore,
            ),
            (r#"{"command": "turn", "angle": 90, "fallback": "stop", "rationale": "wall"}"#, ActionType::RotateTo),
            (r#"{"action": "wall_follow", "fallback": "rotate", "explanation": "hug"}"#, ActionType::FollowWall),
            (r#"{"action": "halt", "fallback": "wait", "explanation": "done"}"#, ActionType::Stop),
            (
                r#"{"action": {"type": "Move", "target": [1, 2]}, "fallback": "turn", "explanation": "x"}"#,
                ActionType::MoveTo,
            ),
        ];
        for (reply, kind) in cases {
            let (d, path) = CandidateDecision::parse(reply).unwrap_or_else(|e| panic!("{reply}: {e}"));
            assert_eq!(path, ParsePath::Normalized, "{reply}");
            assert_eq!(d.action.kind, kind, "{reply}");
        }
    }

    #[test]
    fn the_normalizer_completes_only_free_form_replies() {
        // seed 002 validation: a valid fallback, a non-empty explanation, and for a structured
        // reply (an action object) a fallback at all
        let bad = [
            (
                r#"{"action": {"type": "STOP"}, "fallback": {"if_failed": "MOVE_TO"}, "explanation": "x"}"#,
                "fallback.if_failed",
            ),
            (r#"{"action": "go_to", "target": "c2", "fallback": "go", "reason": "x"}"#, "fallback.if_failed"),
            (r#"{"action": {"type": "STOP"}, "fallback": {"if_failed": "STOP"}, "explanation": ""}"#, "explanation"),
            (r#"{"action": "halt", "fallback": "stop", "reason": "  "}"#, "explanation"),
            (r#"{"action": "halt", "fallback": "stop"}"#, "explanation"),
            (r#"{"action": {"type": "STOP"}, "explanation": "x"}"#, "fallback"),
            (r#"{"action": {"type": "go_to", "target": "c2"}, "reason": "closer"}"#, "fallback"),
            (r#"{"action": {"type": "MOVE_TO", "target_id": "c2"}, "explanation": "closer"}"#, "fallback"),
        ];
        for (reply, field) in bad {
            let e = CandidateDecision::parse(reply).expect_err(reply).to_string();
            assert!(e.contains(field), "{reply}: {e}");
        }
    }

    #[test]
    fn a_reply_in_the_schemas_shape_is_valid() {
        // what a schema-constrained server returns: every field, the unused ones null
        let reply = r#"{"action": {"type": "MOVE_TO", "target_id": "c2", "target_m": null, "yaw_deg": null},
            "fallback": {"if_failed": "EXPLORE", "target_id": null}, "world_model_update": null,
            "explanation": "c2 leads to the goal"}"#;
        let (d, path) = CandidateDecision::parse(reply).unwrap();
        assert_eq!(path, ParsePath::Strict);
        assert_eq!(d.action.target_id.as_deref(), Some("c2"));
        assert_eq!(d.fallback.if_failed, FallbackType::Explore);
    }

    /// Every object in `schema` lists all its properties as required and
    /// allows no others (OpenAI's strict mode), and no `type` is a list
    /// (llama-cpp-python's grammar drops the siblings of one).
    fn assert_strict(schema: &Value, path: &str) {
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            let required: Vec<&str> =
                schema["required"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
            assert!(props.keys().all(|k| required.contains(&k.as_str())), "{path}: every field required");
            assert_eq!(schema["additionalProperties"], false, "{path}");
            props.iter().for_each(|(k, v)| assert_strict(v, &format!("{path}.{k}")));
        }
        assert!(!schema.get("type").is_some_and(Value::is_array), "{path}: a type list");
        schema.get("items").into_iter().for_each(|i| assert_strict(i, &format!("{path}[]")));
        for (i, branch) in schema.get("anyOf").and_then(Value::as_array).into_iter().flatten().enumerate() {
            assert_strict(branch, &format!("{path}|{i}"));
        }
    }

    /// The first value a schema allows (enums their first, arrays of two).
    fn instance(schema: &Value) -> Value {
        if let Some(first) = schema.get("enum").and_then(|e| e.get(0)) {
            return first.clone();
        }
        match schema["type"].as_str() {
            Some("number") => Value::from(1.5),
            Some("array") => Value::from(vec![1.0, -2.0]),
            _ => Value::Null,
        }
    }

    #[test]
    fn every_reply_in_the_schemas_shape_is_valid() {
        let ids = ["c1", "f2"];
        for schema in [candidates_schema(&ids), candidates_schema(&[])] {
            assert_strict(&schema, "");
            let branches = schema["properties"]["action"]["anyOf"].as_array().unwrap();
            let fallback = &schema["properties"]["fallback"]["properties"];
            for branch in branches {
                for kind in branch["properties"]["type"]["enum"].as_array().unwrap() {
                    let mut action = Map::new();
                    for (k, v) in branch["properties"].as_object().unwrap() {
                        action.insert(k.clone(), instance(v));
                    }
                    action.insert("type".into(), kind.clone());
                    let fb_target = fallback["target_id"].get("anyOf").map_or(Value::Null, |a| instance(&a[0]));
                    let reply = serde_json::json!({
                        "action": action,
                        "fallback": {"if_failed": "ROTATE_TO", "target_id": fb_target},
                        "world_model_update": {"corrections": [{"pos_m": [0.5, 1.0], "observed_state": "free", "confidence": 0.5}]},
                        "explanation": "in shape",
                    });
                    let (d, path) =
                        CandidateDecision::parse(&reply.to_string()).unwrap_or_else(|e| panic!("{reply}: {e}"));
                    assert_eq!(path, ParsePath::Strict);
                    d.check_targets(&ids).unwrap();
                }
            }
        }
        let schema = candidates_schema(&ids);
        let kinds: std::collections::BTreeSet<&str> = schema["properties"]["action"]["anyOf"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|b| b["properties"]["type"]["enum"].as_array().unwrap().iter().filter_map(Value::as_str))
            .collect();
        assert_eq!(kinds.len(), 5, "every action type has a shape: {kinds:?}");
        let corrections = &schema["properties"]["world_model_update"]["anyOf"][0]["properties"]["corrections"];
        assert_eq!((corrections["items"]["properties"]["pos_m"]["minItems"].as_u64()), Some(2));
        assert_eq!((corrections["items"]["properties"]["pos_m"]["maxItems"].as_u64()), Some(2));
        assert_eq!(corrections["maxItems"].as_u64(), Some(MAX_SCHEMA_CORRECTIONS as u64));
    }

    #[test]
    fn free_form_replies_get_the_default_stop_fallback() {
        let cases = [
            (r#"{"action": "navigate", "candidate": "c2", "reasoning": "closer"}"#, ActionType::MoveTo),
            (r#"{"action": "halt", "reason": "done"}"#, ActionType::Stop),
            (r#"{"action": "scan", "rationale": "unknown room"}"#, ActionType::Explore),
            (r#"{"action": "rotate", "rotation": -90, "explanation": "wall"}"#, ActionType::RotateTo),
            (r#"{"command": "turn", "degrees": 45, "reason": "look"}"#, ActionType::RotateTo),
            (r#"{"action": "go_to", "target": [1.5, -2], "reason": "open"}"#, ActionType::MoveTo),
        ];
        for (reply, kind) in cases {
            let (d, path) = CandidateDecision::parse(reply).unwrap_or_else(|e| panic!("{reply}: {e}"));
            assert_eq!(path, ParsePath::Normalized, "{reply}");
            assert_eq!(d.action.kind, kind, "{reply}");
            assert_eq!(d.fallback, FallbackAction { if_failed: FallbackType::Stop, target_id: None }, "{reply}");
        }
        let (d, _) =
            CandidateDecision::parse(r#"{"action": "navigate", "candidate": "c2", "reasoning": "why"}"#).unwrap();
        assert_eq!(d.action.target_id.as_deref(), Some("c2"));
        assert_eq!(d.explanation, "why");
        // a fallback the reply gives is kept (and mapped), not replaced by the default
        let (d, _) = CandidateDecision::parse(r#"{"action": "halt", "fallback": "scan", "reason": "x"}"#).unwrap();
        assert_eq!(d.fallback.if_failed, FallbackType::Explore);
    }

    #[test]
    fn invalid_replies() {
        let bad = [
            r#"{"action": {"type": "MOVE_TO"}, "fallback": {"if_failed": "STOP"}, "explanation": "x"}"#,
            r#"{"action": {"type": "ROTATE_TO"}, "fallback": {"if_failed": "STOP"}, "explanation": "x"}"#,
            r#"{"action": {"type": "FLY"}, "fallback": {"if_failed": "STOP"}, "explanation": "x"}"#,
            r#"{"action": {"type": "STOP"}, "fallback": {"if_failed": "STOP"}, "world_model_update": {"corrections": [{"pos_m": [1], "observed_state": "free", "confidence": 0.7}]}, "explanation": "x"}"#,
            r#"{"action": {"type": "STOP"}, "fallback": {"if_failed": "STOP"}, "world_model_update": {"corrections": [{"pos_m": [1, 1], "observed_state": "free", "confidence": 1.7}]}, "explanation": "x"}"#,
            "no json",
        ];
        for reply in bad {
            assert!(CandidateDecision::parse(reply).is_err(), "{reply}");
        }
        let fb = CandidateDecision::fallback("parse error");
        assert_eq!(fb.action.kind, ActionType::Stop);
        assert_eq!(fb.explanation, "Fallback: parse error");
    }

    fn arb_decision() -> impl Strategy<Value = CandidateDecision> {
        let kind = prop_oneof![
            Just(ActionType::MoveTo),
            Just(ActionType::Explore),
            Just(ActionType::RotateTo),
            Just(ActionType::FollowWall),
            Just(ActionType::Stop)
        ];
        let fb = prop_oneof![Just(FallbackType::Explore), Just(FallbackType::RotateTo), Just(FallbackType::Stop)];
        (
            kind,
            fb,
            "[cfrw][1-5]",
            -180.0f64..180.0,
            "[a-zA-Z가-힣{}\\[\\] ,.]{1,40}",
            proptest::option::of((-5.0f64..5.0, -5.0f64..5.0, 0.0f64..=1.0)),
        )
            .prop_filter("non-blank explanation", |t| !t.4.trim().is_empty())
            .prop_map(|(kind, fb, id, yaw, why, corr)| CandidateDecision {
                action: CandidateAction {
                    kind,
                    target_id: (kind == ActionType::MoveTo).then(|| id.clone()),
                    target_m: None,
                    yaw_deg: (kind == ActionType::RotateTo).then_some(yaw),
                },
                fallback: FallbackAction { if_failed: fb, target_id: None },
                world_model_update: corr.map(|(x, y, c)| WorldModelUpdate {
                    corrections: vec![Correction { pos_m: [x, y], observed_state: ObservedState::Free, confidence: c }],
                }),
                explanation: why,
            })
    }

    /// The synonyms per action type.
    const SYNONYMS: [(&str, ActionType); 19] = [
        ("move", ActionType::MoveTo),
        ("go", ActionType::MoveTo),
        ("go_to", ActionType::MoveTo),
        ("navigate", ActionType::MoveTo),
        ("moveto", ActionType::MoveTo),
        ("move_to", ActionType::MoveTo),
        ("explore", ActionType::Explore),
        ("scan", ActionType::Explore),
        ("rotate", ActionType::RotateTo),
        ("rotate_to", ActionType::RotateTo),
        ("turn", ActionType::RotateTo),
        ("follow_wall", ActionType::FollowWall),
        ("wall_follow", ActionType::FollowWall),
        ("stop", ActionType::Stop),
        ("halt", ActionType::Stop),
        ("wait", ActionType::Stop),
        ("MOVE_TO", ActionType::MoveTo),
        ("ROTATE_TO", ActionType::RotateTo),
        ("STOP", ActionType::Stop),
    ];

    /// A free-form reply: a string action in random case, the target, heading and explanation
    /// under any of their keys, maybe a fallback (a name), maybe under a top-level `command`.
    fn arb_free_form() -> impl Strategy<Value = (String, ActionType, Option<FallbackType>, String, f64, String)> {
        let fb = proptest::option::of(prop_oneof![
            Just(("explore", FallbackType::Explore)),
            Just(("scan", FallbackType::Explore)),
            Just(("turn", FallbackType::RotateTo)),
            Just(("halt", FallbackType::Stop)),
            Just(("STOP", FallbackType::Stop)),
        ]);
        (
            0..SYNONYMS.len(),
            any::<bool>(),
            prop_oneof![Just("target"), Just("target_id"), Just("subgoal"), Just("candidate")],
            "[cfrw][1-5]",
            prop_oneof![Just("yaw"), Just("yaw_deg"), Just("angle"), Just("degrees"), Just("rotation")],
            -180i32..=180,
            prop_oneof![Just("explanation"), Just("reason"), Just("reasoning"), Just("rationale")],
            "[a-zA-Z가-힣\\\\\"{} ,.]{0,30}[a-z]",
            fb,
            (any::<bool>(), any::<bool>()),
        )
            .prop_map(|(i, upper, tk, id, yk, yaw, wk, why, fb, (command, fence))| {
                let (word, kind) = SYNONYMS[i];
                let word = if upper { word.to_ascii_uppercase() } else { word.to_string() };
                let mut m = Map::new();
                m.insert(if command { "command" } else { "action" }.into(), Value::String(word));
                m.insert(tk.into(), Value::String(id.clone()));
                m.insert(yk.into(), Value::from(yaw));
                m.insert(wk.into(), Value::String(why.clone()));
                if let Some((name, _)) = fb {
                    m.insert("fallback".into(), Value::String(name.into()));
                }
                let text = serde_json::to_string(&Value::Object(m)).unwrap_or_default();
                let text = if fence { format!("Sure.\n```json\n{text}\n```") } else { text };
                (text, kind, fb.map(|f| f.1), id, f64::from(yaw), why)
            })
    }

    proptest! {
        #[test]
        fn free_form_replies_normalize(
            (reply, kind, fb, id, yaw, why) in arb_free_form()
        ) {
            let (d, path) = CandidateDecision::parse(&reply).map_err(|e| TestCaseError::fail(format!("{reply}: {e}")))?;
            prop_assert_eq!(path, ParsePath::Normalized);
            prop_assert_eq!(d.action.kind, kind);
            prop_assert_eq!(d.action.target_id.as_deref(), Some(id.as_str()));
            prop_assert_eq!(d.action.yaw_deg, Some(yaw));
            prop_assert_eq!(d.fallback.if_failed, fb.unwrap_or(FallbackType::Stop));
            prop_assert_eq!(d.explanation, why);
        }

        #[test]
        fn structured_replies_without_a_fallback_stay_invalid(
            i in 0..SYNONYMS.len(),
            id in "[cfrw][1-5]",
            yaw in -180i32..=180,
            why_key in prop_oneof![Just("explanation"), Just("reason")],
        ) {
            let reply = serde_json::json!({
                "action": {"type": SYNONYMS[i].0, "target_id": id, "yaw_deg": yaw},
                why_key: "a reason",
            })
            .to_string();
            let e = CandidateDecision::parse(&reply).err().map(|e| e.to_string()).unwrap_or_default();
            prop_assert!(e.starts_with("fallback"), "{}: {}", reply, e);
        }

        #[test]
        fn valid_decision_in_noise_parses_back(d in arb_decision(), prose in "[a-zA-Z .,:!]{0,30}", fence in any::<bool>(), think in any::<bool>(), trailing in any::<bool>()) {
            let mut json = serde_json::to_string(&d).unwrap();
            if trailing { json = format!("{},}}", &json[..json.len() - 1]); }
            let mut reply = json;
            if fence { reply = format!("```json\n{reply}\n```"); }
            reply = format!("{prose} {reply} done.");
            if think { reply = format!("<think>{{\"action\": {{\"type\": \"STOP\"}}}}</think>{reply}"); }
            let (back, path) = CandidateDecision::parse(&reply).unwrap();
            prop_assert_eq!(path, ParsePath::Strict);
            prop_assert_eq!(back, d);
        }

        #[test]
        fn arbitrary_text_never_panics(s in ".*") {
            let _ = CandidateDecision::parse(&s);
        }
    }
}
