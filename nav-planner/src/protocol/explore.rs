//! The explore protocol (LLM-driven exploration of a real robot, with a
//! safety layer the model cannot bypass): native tool calling with the seven
//! tools (`strict: true`, `additionalProperties: false`), the five-section
//! system prompt with the perceive-then-reason instruction, the dynamic
//! context block (state, 12-sector LiDAR text, gaps, affordance scores,
//! previous action result, exploration memory) and the annotated camera
//! image. A cycle allows at most one perception sub-call (`observe_scene` or
//! `check_path_clear`); the follow-up call may only use action tools.

use super::{CallRecord, DecisionError, PlannerReply};
use crate::protocol::annotate::{Annotation, annotate, encode_jpeg, fit_within};
use crate::protocol::json::extract_json_object;
use crate::protocol::prompts::EXPLORE_SYSTEM;
use crate::vlm::{ImageDetail, Part, ToolChoice, ToolSpec, Turn, VisionLanguageModel, VlmRequest};
use async_trait::async_trait;
use nav_core::geometry::{Point2, Pose2, cardinal, clockwise_deg, compass_deg, normalize_angle_deg};
use nav_core::lidar::{AffordanceScores, LaserScan, LidarConfig, LidarSummary};
use nav_core::raster::RgbFrame;
use nav_hal::hal::{DepthFrame, Detection};
use nav_safety::config::SpeedConfig;
use nav_safety::executor::{Feedback, check_path};
use nav_safety::{FrontierGoal, SafetyConfig, ToolCall, tool_schemas_for};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::time::Duration;

/// The seven tools as provider-neutral specs (strict schemas), with the
/// default speed tiers.
pub fn tool_specs() -> Vec<ToolSpec> {
    tool_specs_for(&SpeedConfig::default())
}

/// The seven tools as provider-neutral specs, `move_toward.speed` stating
/// the tiers in `speeds`.
pub fn tool_specs_for(speeds: &SpeedConfig) -> Vec<ToolSpec> {
    tool_schemas_for(speeds)
        .into_iter()
        .map(|s| ToolSpec::new(s.name, s.description, s.parameters).with_strict(true))
        .collect()
}

/// The largest image sent to the model, pixels (width, height): the
/// robot camera's 640 × 480; larger camera frames are scaled down after annotation.
pub const MAX_IMAGE_SIZE: (usize, usize) = (640, 480);

/// Names of the four action tools.
pub const ACTION_TOOLS: [&str; 4] = ["move_toward", "navigate_to_goal", "rotate", "stop_robot"];

/// A frontier the robot can go to, as shown to the model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ExploreFrontier {
    /// Id the model may name in `navigate_to_goal`.
    pub id: u32,
    /// Entry point in the odometry frame.
    pub position: Point2,
    /// Path cost from the robot, metres (None when not computed).
    pub path_cost_m: Option<f64>,
    /// Size of the frontier cluster, cells.
    pub size: usize,
}

impl ExploreFrontier {
    /// The executor's view of it.
    pub fn goal(&self) -> FrontierGoal {
        FrontierGoal { id: self.id, position: self.position }
    }
}

/// Frontiers listed in the prompt: the cheapest in each direction, at most
/// this many (ids of the others stay valid for `navigate_to_goal`).
const SHOWN_FRONTIERS: usize = 3;

/// One cycle's sensor snapshot and memory, owned so a decision can run on
/// another task while the control loop keeps driving.
#[derive(Debug, Clone)]
pub struct ExploreSnapshot {
    /// Pose from odometry, relative to the start.
    pub pose: Pose2,
    /// Current forward speed, m/s.
    pub speed_mps: f64,
    /// Distance travelled so far, metres.
    pub distance_traveled_m: f64,
    /// Exploration time so far, seconds.
    pub elapsed_s: f64,
    /// Coverage estimate in `[0, 1]`, when known.
    pub coverage: Option<f64>,
    /// The latest scan.
    pub scan: LaserScan,
    /// Age of the scan, seconds.
    pub scan_age_s: f64,
    /// Camera frame (annotated before sending), if any.
    pub image: Option<RgbFrame>,
    /// Depth aligned with the frame, if any.
    pub depth: Option<DepthFrame>,
    /// Horizontal field of view of the camera, radians.
    pub hfov_rad: f64,
    /// The last finished action and its result as one line (the action
    /// result's fields), e.g. `move_toward(forward, medium, 3.0s) → success,
    /// moved 0.36m in 3.0s`.
    pub previous_action: Option<String>,
    /// That action's result as feedback JSON (for planners
    /// that read it; the prompt shows `previous_action`).
    pub previous_result: Option<String>,
    /// The action still running when the snapshot was taken, e.g.
    /// `navigate_to_goal(frontier 2)`.
    pub in_progress: Option<String>,
    /// Tool calls of the previous reply that were rejected as invalid
    /// (unknown tool, bad arguments), one line each with the reason
    /// ([`rejected_line`]); the prompt shows them after the previous action.
    pub rejected: Vec<String>,
    /// The exploration memory's prompt text.
    pub memory_text: String,
    /// Known frontiers (ids the model may name in `navigate_to_goal`).
    pub frontiers: Vec<ExploreFrontier>,
    /// Detections in view (simulators only; offline planners use them).
    pub detections: Vec<Detection>,
    /// Send no image this cycle (frame skipping's text-only mode).
    pub text_only: bool,
    /// The LiDAR is blind (a sensor fault: too few valid beams), and why;
    /// `scan` is then empty and `frontiers` too, and the prompt says so.
    pub sensor_fault: Option<String>,
    /// What the operator said (a voice command that is no control word),
    /// shown once as an `OPERATOR SAYS:` line; already cleaned and bounded
    /// ([`UserInstruction`](super::instruction::UserInstruction)).
    pub instruction: Option<String>,
}

impl ExploreSnapshot {
    /// The dynamic context block (section 6 of the prompt), compact
    /// (few tokens): one state line, the LiDAR sectors with equal neighbours
    /// merged, the two nearest gaps, the feasibility scores on one line,
    /// the three cheapest frontiers (once), the previous action and its result on one line, and
    /// the exploration memory. Every angle is clockwise, as the system
    /// prompt states: bearings from the robot's front in `[0, 360)`, the
    /// heading as a compass.
    pub fn context_text(&self, lidar: &LidarConfig) -> String {
        let mut s = String::with_capacity(1200);
        let yaw = self.pose.yaw.to_degrees();
        let _ = write!(
            s,
            "STATE: ({:.1}, {:.1}) m, heading {:.0}° {}, {:.2} m/s{}, traveled {:.1} m",
            self.pose.x,
            self.pose.y,
            compass_deg(yaw),
            cardinal(yaw),
            self.speed_mps.abs(),
            if self.speed_mps < -0.005 { " backward" } else { "" },
            self.distance_traveled_m
        );
        if let Some(c) = self.coverage {
            let _ = write!(s, ", coverage {:.0}%", c * 100.0);
        }
        s.push('\n');
        if let Some(fault) = &self.sensor_fault {
            let _ = writeln!(
                s,
                "LIDAR BLIND: {fault}. No distances, no frontiers; the robot is held still until valid scans return."
            );
        } else {
            s.push_str(&LidarSummary::from_scan(&self.scan, lidar).to_compact_text(2));
            s.push('\n');
            s.push_str(&AffordanceScores::from_scan(&self.scan).to_compact_text());
            s.push('\n');
        }
        if self.frontiers.is_empty() {
            if self.sensor_fault.is_none() {
                s.push_str("FRONTIERS: none reachable\n");
            }
        } else {
            s.push_str("FRONTIERS: ");
            // one per direction: a farther frontier within 15° of a listed one adds nothing
            let mut shown: Vec<f64> = Vec::new();
            for f in &self.frontiers {
                let d = self.pose.position().distance(f.position);
                let b = clockwise_deg(self.pose.relative_bearing(f.position));
                let near = |a: &f64| normalize_angle_deg(a - b).abs() < 15.0;
                if shown.len() >= SHOWN_FRONTIERS || shown.iter().any(near) {
                    continue;
                }
                if !shown.is_empty() {
                    s.push_str(", ");
                }
                shown.push(b);
                let _ = write!(s, "#{} {:.1}m {:.0}°", f.id, d, b);
            }
            s.push('\n');
        }
        match &self.previous_action {
            Some(a) => {
                let _ = writeln!(s, "PREVIOUS ACTION: {a}");
            }
            None => s.push_str("PREVIOUS ACTION: none\n"),
        }
        for r in &self.rejected {
            let _ = writeln!(s, "REJECTED: {r}");
        }
        if let Some(a) = &self.in_progress {
            let _ = writeln!(s, "IN PROGRESS: {a}");
        }
        if let Some(said) = &self.instruction {
            // bounded again: a snapshot may be built by hand
            let said = super::instruction::UserInstruction::new(said);
            if let Some(said) = said {
                let _ = writeln!(s, "OPERATOR SAYS (follow it if it is safe): {said}");
            }
        }
        s.push_str(&self.memory_text);
        s
    }

    /// The annotated camera image as JPEG (quality 80), if there is a frame.
    pub fn annotated_jpeg(&self) -> Option<Vec<u8>> {
        let frame = self.image.as_ref()?;
        annotated_frame_jpeg(frame, self.depth.as_ref(), self.pose.yaw.to_degrees(), self.hfov_rad).ok()
    }
}

/// A camera frame as the explore model sees it: the seven depth values
/// (when `depth` matches the frame's size) and the heading arrow drawn on
/// it, fitted within [`MAX_IMAGE_SIZE`], JPEG quality 80. `heading_deg` is
/// counter-clockwise from east.
///
/// # Errors
///
/// The encoder failed.
pub fn annotated_frame_jpeg(
    frame: &RgbFrame,
    depth: Option<&nav_hal::hal::DepthFrame>,
    heading_deg: f64,
    hfov_rad: f64,
) -> Result<Vec<u8>, super::annotate::AnnotateError> {
    let mut f = frame.clone();
    let depth = depth.filter(|d| d.width == f.width() && d.height == f.height());
    annotate(
        &mut f,
        &Annotation {
            depth_m: depth.map(|d| d.depth_m.as_slice()),
            heading_deg,
            sector_labels: false,
            candidates: &[],
            hfov_rad,
        },
    );
    encode_jpeg(&fit_within(&f, MAX_IMAGE_SIZE.0, MAX_IMAGE_SIZE.1), 80)
}

/// How explore requests are built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExplorePromptConfig {
    /// Never send images.
    pub text_only: bool,
    /// Detail of the routine image (low: 85 tokens on OpenAI).
    pub image_detail: ImageDetail,
    /// Temperature.
    pub temperature: f32,
    /// Output token limit.
    pub max_tokens: u32,
    /// Per-call timeout, seconds (8).
    pub timeout_s: f64,
    /// LiDAR summary thresholds.
    pub lidar: LidarConfig,
    /// Grounding knowledge (docs/GROUNDING.md) inserted into the system prompt.
    pub grounding: Option<String>,
    /// The verbalized-entropy variant of the system prompt (the model states
    /// its uncertainty before deciding).
    pub verbalized_entropy: bool,
}

impl Default for ExplorePromptConfig {
    fn default() -> Self {
        Self {
            text_only: false,
            image_detail: ImageDetail::Low,
            temperature: 0.2,
            max_tokens: 400,
            timeout_s: 8.0,
            lidar: LidarConfig::default(),
            grounding: None,
            verbalized_entropy: false,
        }
    }
}

/// The line that opens a cycle's text when no camera image is attached
/// (text-only mode, or no frame yet).
pub const NO_IMAGE_NOTE: &str = "NO CAMERA IMAGE THIS CYCLE: decide from the text; observe_scene can look.";

/// Builds the first request of a cycle: system prompt, the seven tools with
/// `tool_choice = required`, the annotated image and the context block; the
/// speeds the model is told are the defaults (see [`build_request_for`]).
pub fn build_request(snap: &ExploreSnapshot, cfg: &ExplorePromptConfig) -> VlmRequest {
    build_request_for(snap, cfg, &SpeedConfig::default())
}

/// [`build_request`] telling the model the speed tiers in `speeds` (the
/// executor's), in the system prompt and the `move_toward` schema.
pub fn build_request_for(snap: &ExploreSnapshot, cfg: &ExplorePromptConfig, speeds: &SpeedConfig) -> VlmRequest {
    let req = VlmRequest::new(super::grounding::system_prompt(
        EXPLORE_SYSTEM,
        &super::grounding::SystemPromptOptions {
            grounding: cfg.grounding.clone(),
            verbalized_entropy: cfg.verbalized_entropy,
        },
    ))
    .cache_system(true)
    .tools(tool_specs_for(speeds))
    .tool_choice(ToolChoice::Required)
    .temperature(cfg.temperature)
    .max_tokens(cfg.max_tokens)
    .timeout(Duration::from_secs_f64(cfg.timeout_s.max(0.1)));
    let jpeg = if cfg.text_only || snap.text_only { None } else { snap.annotated_jpeg() };
    match jpeg {
        Some(jpeg) => req.image(Part::jpeg(jpeg, cfg.image_detail)).text(snap.context_text(&cfg.lidar)),
        // the system prompt promises an annotated image; say plainly when there is none
        None => req.text(format!("{NO_IMAGE_NOTE}\n{}", snap.context_text(&cfg.lidar))),
    }
}

/// A validated explore decision: at most one action, plus any discoveries
/// reported alongside it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExploreDecision {
    /// The action tool call (or the fallback `stop_robot`; the first
    /// `report_discovery` when the reply only reported discoveries, which
    /// leaves the action in progress running).
    pub action: ToolCall,
    /// `report_discovery` calls made in the same cycle.
    pub reports: Vec<ToolCall>,
    /// The perception sub-call and its result, if one was made.
    pub perception: Option<(ToolCall, String)>,
    /// The model's reasoning text (logged, never executed).
    pub reasoning: String,
    /// Tool calls of the reply that were rejected as invalid (unknown tool,
    /// bad arguments), each as the result the model hears
    /// ([`Feedback::rejected_call`]).
    pub rejected: Vec<Feedback>,
}

impl ExploreDecision {
    /// A decision with just an action.
    pub fn action(action: ToolCall) -> Self {
        Self { action, reports: Vec::new(), perception: None, reasoning: String::new(), rejected: Vec::new() }
    }
}

/// The fallback decision: `stop_robot(uncertain)`.
pub fn fallback() -> ToolCall {
    ToolCall::parse("stop_robot", &json!({"reason": "uncertain"})).unwrap_or_else(|_| unreachable_stop())
}

fn unreachable_stop() -> ToolCall {
    // `stop_robot(uncertain)` always parses; this keeps the code panic-free.
    ToolCall::StopRobot { reason: nav_safety::tools::StopReason::Uncertain }
}

/// `{"tool": name, "arguments": {...}}` for logs and `nav parse`.
pub fn decision_json(call: &ToolCall) -> Value {
    json!({ "tool": call.name(), "arguments": call.to_json() })
}

/// An explore planner: a VLM behind [`VlmExplorePlanner`] or the offline
/// explorer.
#[async_trait]
pub trait ExplorePlanner: Send {
    /// Short name for logs.
    fn name(&self) -> String;
    /// True when decisions are computed locally and immediately (the
    /// control loop then runs them inline, deterministically).
    fn is_instant(&self) -> bool {
        false
    }
    /// Called at every control tick with the newest sensor data (default:
    /// ignored).
    fn observe(&mut self, pose: Pose2, scan: &LaserScan) {
        let _ = (pose, scan);
    }
    /// Decides the next action.
    async fn decide(&mut self, snap: &ExploreSnapshot) -> PlannerReply<ExploreDecision>;
}

/// One line for a rejected call in the next prompt:
/// `rotate({"degrees":30}) → <why, what to do instead>`.
pub fn rejected_line(f: &Feedback) -> String {
    let mut args = f.original_command.clone().unwrap_or(Value::Null);
    let tool = args.as_object_mut().and_then(|m| m.remove("tool"));
    let tool = tool.as_ref().and_then(Value::as_str).unwrap_or("?");
    let args = if args.as_object().is_some_and(|m| m.is_empty()) { String::new() } else { args.to_string() };
    format!("{tool}({args}) → {}", f.safety_message.as_deref().unwrap_or("invalid"))
}

/// Splits a response's tool calls into typed calls, recording invalid ones
/// (in `record.errors`, and as their rejection feedback in `rejected`).
fn typed_calls(
    calls: &[crate::vlm::RawToolCall],
    record: &mut CallRecord,
    rejected: &mut Vec<Feedback>,
) -> Vec<(String, ToolCall)> {
    let mut out = Vec::new();
    for c in calls {
        let args = match &c.arguments {
            Value::String(s) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
            v => v.clone(),
        };
        match ToolCall::parse(&c.name, &args) {
            Ok(t) => out.push((c.id.clone(), t)),
            Err(e) => {
                record.errors.push(format!("{}: {e}", c.name));
                rejected.push(Feedback::rejected_call(&c.name, &args, &e));
            }
        }
    }
    out
}

/// The fallback reason of a reply without a usable action: the rejected
/// calls' reasons when there are any.
fn no_action_reason(default: &str, rejected: &[Feedback]) -> String {
    if rejected.is_empty() {
        return default.to_string();
    }
    let why: Vec<String> = rejected.iter().map(rejected_line).collect();
    format!("invalid tool call: {}", why.join("; "))
}

/// The explore planner backed by a vision-language model.
pub struct VlmExplorePlanner<M> {
    vlm: M,
    config: ExplorePromptConfig,
    safety: SafetyConfig,
}

impl<M: VisionLanguageModel> VlmExplorePlanner<M> {
    /// A planner calling `vlm`; `safety` answers `check_path_clear` locally.
    pub fn new(vlm: M, config: ExplorePromptConfig, safety: SafetyConfig) -> Self {
        Self { vlm, config, safety }
    }

    /// Runs a perception tool: `check_path_clear` from the snapshot's scan
    /// (no model call), `observe_scene` as a secondary high-detail call.
    async fn perceive(&self, call: &ToolCall, snap: &ExploreSnapshot, record: &mut CallRecord) -> String {
        match call {
            ToolCall::CheckPathClear { direction, distance_m } => {
                let r = check_path(&self.safety, &snap.scan, snap.scan_age_s, *direction, *distance_m);
                serde_json::to_string(&r).unwrap_or_default()
            }
            ToolCall::ObserveScene { focus } => {
                let fitted = snap.image.as_ref().map(|f| fit_within(f, MAX_IMAGE_SIZE.0, MAX_IMAGE_SIZE.1));
                let Some(jpeg) = fitted.and_then(|f| encode_jpeg(&f, 85).ok()) else {
                    return json!({"error": "no camera image available"}).to_string();
                };
                let req = VlmRequest::new(
                    "You describe what an indoor robot's camera shows, briefly and factually, in at most 3 sentences.",
                )
                .of_kind(crate::vlm::RequestKind::ToolFollowUp)
                .image(Part::jpeg(jpeg, ImageDetail::High))
                .text(format!("Focus on: {focus}. Mention doorways, obstacles and their approximate directions."))
                .max_tokens(200)
                .timeout(Duration::from_secs_f64(self.config.timeout_s.max(0.1)));
                match self.vlm.complete(req).await {
                    Ok(r) => {
                        record.add_response(&r);
                        json!({"description": r.text.trim()}).to_string()
                    }
                    Err(e) => {
                        record.add_failure(&e.to_string());
                        json!({"error": e.to_string()}).to_string()
                    }
                }
            }
            _ => String::new(),
        }
    }
}

#[async_trait]
impl<M: VisionLanguageModel> ExplorePlanner for VlmExplorePlanner<M> {
    fn name(&self) -> String {
        let info = self.vlm.describe();
        format!("vlm:{}/{}", info.provider, info.model)
    }

    async fn decide(&mut self, snap: &ExploreSnapshot) -> PlannerReply<ExploreDecision> {
        let mut record = CallRecord::default();
        let request = build_request_for(snap, &self.config, &self.safety.speeds);
        let mut decision = ExploreDecision::action(fallback());
        let resp = match self.vlm.complete(request.clone()).await {
            Ok(r) => r,
            Err(e) => {
                let e = e.to_string();
                record.add_failure(&e);
                record.fallback = Some(e);
                return PlannerReply { decision, distance_hint_m: None, record };
            }
        };
        record.add_response(&resp);
        decision.reasoning = resp.text.trim().to_string();
        let calls = typed_calls(&resp.tool_calls, &mut record, &mut decision.rejected);
        decision.reports = calls.iter().filter(|(_, c)| c.is_communication()).map(|(_, c)| c.clone()).collect();
        if let Some((_, a)) = calls.iter().find(|(_, c)| c.is_action()) {
            decision.action = a.clone();
            return PlannerReply { decision, distance_hint_m: None, record };
        }
        // only discoveries: an answered call, not a failed one; the action in progress goes on
        if !calls.iter().any(|(_, c)| c.is_perception()) {
            if let Some(report) = decision.reports.first() {
                decision.action = report.clone();
                return PlannerReply { decision, distance_hint_m: None, record };
            }
        }
        // One perception sub-call, then action tools only.
        let Some((id, perception)) = calls.iter().find(|(_, c)| c.is_perception()).cloned() else {
            let reason =
                if resp.tool_calls.is_empty() { "the model called no tool" } else { "no valid action tool call" };
            record.fallback = Some(no_action_reason(reason, &decision.rejected));
            return PlannerReply { decision, distance_hint_m: None, record };
        };
        let result = self.perceive(&perception, snap, &mut record).await;
        let raw_call = resp
            .tool_calls
            .iter()
            .find(|c| c.id == id)
            .cloned()
            .unwrap_or_else(|| crate::vlm::RawToolCall::new(id.clone(), perception.name(), perception.to_json()));
        let follow_up = request
            .turn(Turn::Assistant {
                text: Some(resp.text.clone()).filter(|t| !t.is_empty()),
                tool_calls: vec![raw_call],
            })
            .turn(Turn::ToolResult { call_id: id, name: perception.name().to_string(), content: result.clone() })
            .tool_choice(ToolChoice::Only(ACTION_TOOLS.iter().map(|s| s.to_string()).collect()));
        decision.perception = Some((perception, result));
        match self.vlm.complete(follow_up).await {
            Ok(r2) => {
                record.add_response(&r2);
                if !r2.text.trim().is_empty() {
                    decision.reasoning = format!("{}\n{}", decision.reasoning, r2.text.trim()).trim().to_string();
                }
                let calls2 = typed_calls(&r2.tool_calls, &mut record, &mut decision.rejected);
                decision.reports.extend(calls2.iter().filter(|(_, c)| c.is_communication()).map(|(_, c)| c.clone()));
                match calls2.into_iter().find(|(_, c)| c.is_action()) {
                    Some((_, a)) => decision.action = a,
                    None => {
                        record.fallback =
                            Some(no_action_reason("no action tool after the perception sub-call", &decision.rejected));
                    }
                }
            }
            Err(e) => {
                let e = e.to_string();
                record.add_failure(&e);
                record.fallback = Some(e);
            }
        }
        if record.fallback.is_some() {
            tracing::warn!(reason = ?record.fallback, "explore: using stop_robot(uncertain)");
        }
        PlannerReply { decision, distance_hint_m: None, record }
    }
}

/// Parses one raw reply for `nav parse --protocol explore`: a tool call in
/// any common shape — `{"name", "arguments"}`, `{"tool", "arguments"}`, an
/// OpenAI message or response with `tool_calls` (arguments as a JSON
/// string), an Anthropic `tool_use` block or message, or a Gemini
/// `functionCall` part or response. The first action tool wins; otherwise
/// the first valid tool.
pub fn parse_reply(reply: &str) -> Result<ToolCall, DecisionError> {
    let obj = Value::Object(extract_json_object(reply)?);
    let mut found: Vec<(String, Value)> = Vec::new();
    collect_calls(&obj, &mut found, 0);
    if found.is_empty() {
        return Err(DecisionError::NoToolCall("no tool call found in the reply".into()));
    }
    let mut first_err = None;
    let mut first_ok = None;
    for (name, args) in found {
        let args = match args {
            Value::String(s) => match serde_json::from_str::<Value>(&s) {
                Ok(v) => v,
                Err(e) => {
                    first_err.get_or_insert(DecisionError::invalid(format!("{name}.arguments"), e.to_string()));
                    continue;
                }
            },
            Value::Null => json!({}),
            v => v,
        };
        match ToolCall::parse(&name, &args) {
            Ok(call) if call.is_action() => return Ok(call),
            Ok(call) => {
                first_ok.get_or_insert(call);
            }
            Err(e) => {
                first_err.get_or_insert(DecisionError::invalid(name, e.to_string()));
            }
        }
    }
    first_ok.ok_or_else(|| first_err.unwrap_or_else(|| DecisionError::NoToolCall("no valid tool call".into())))
}

fn collect_calls(v: &Value, out: &mut Vec<(String, Value)>, depth: usize) {
    if depth > 8 {
        return;
    }
    match v {
        Value::Object(m) => {
            let name = m.get("name").or_else(|| m.get("tool")).and_then(Value::as_str);
            let args =
                m.get("arguments").or_else(|| m.get("args")).or_else(|| m.get("input")).or_else(|| m.get("parameters"));
            if let Some(name) = name {
                if args.is_some() || m.get("type").and_then(Value::as_str) == Some("tool_use") {
                    out.push((name.to_string(), args.cloned().unwrap_or(Value::Null)));
                    return;
                }
            }
            for key in ["function", "functionCall", "function_call"] {
                if let Some(inner) = m.get(key) {
                    collect_calls(inner, out, depth + 1);
                }
            }
            for key in ["tool_calls", "content", "parts", "choices", "candidates", "message"] {
                if let Some(inner) = m.get(key) {
                    collect_calls(inner, out, depth + 1);
                }
            }
        }
        Value::Array(a) => {
            for x in a {
                collect_calls(x, out, depth + 1);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camera_frames_go_to_the_model_at_most_640_by_480() {
        let snap = ExploreSnapshot {
            pose: Pose2::origin(),
            speed_mps: 0.0,
            distance_traveled_m: 0.0,
            elapsed_s: 0.0,
            coverage: None,
            scan: LaserScan::full_circle(360, 0.05, 12.0, 2.0),
            scan_age_s: 0.0,
            image: Some(RgbFrame::new(1280, 720, nav_core::raster::Rgb([90, 90, 90]))),
            depth: None,
            hfov_rad: 1.5,
            previous_action: None,
            previous_result: None,
            in_progress: None,
            rejected: Vec::new(),
            memory_text: String::new(),
            frontiers: Vec::new(),
            detections: Vec::new(),
            text_only: false,
            sensor_fault: None,
            instruction: None,
        };
        let jpeg = snap.annotated_jpeg().unwrap();
        let img = image::load_from_memory(&jpeg).unwrap();
        assert_eq!((img.width(), img.height()), (640, 360));
        let lidar = LidarConfig::default();
        assert!(!snap.context_text(&lidar).contains("OPERATOR SAYS"), "no line without an instruction");
        // a snapshot built by hand is cleaned and bounded all the same
        let said = format!("look\u{7}left {}", "x".repeat(500));
        let snap = ExploreSnapshot { instruction: Some(said), image: None, ..snap };
        let text = snap.context_text(&lidar);
        let line = text.lines().find(|l| l.starts_with("OPERATOR SAYS")).expect("the operator's line");
        let said = line.split_once(": ").unwrap().1;
        assert!(said.starts_with("look left x") && said.chars().count() == 200, "{line}");
    }

    #[test]
    fn parses_common_shapes() {
        let shapes = [
            r#"{"name": "move_toward", "arguments": {"direction": "left", "speed": "slow", "duration_s": 2}}"#,
            r#"{"tool": "move_toward", "arguments": "{\"direction\": \"left\", \"speed\": \"slow\", \"duration_s\": 2}"}"#,
            r#"{"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "move_toward", "arguments": "{\"direction\":\"left\",\"speed\":\"slow\",\"duration_s\":2}"}}]}"#,
            r#"{"content": [{"type": "text", "text": "I see a door"}, {"type": "tool_use", "id": "t", "name": "move_toward", "input": {"direction": "left", "speed": "slow", "duration_s": 2}}]}"#,
            r#"{"candidates": [{"content": {"parts": [{"functionCall": {"name": "move_toward", "args": {"direction": "left", "speed": "slow", "duration_s": 2}}}]}}]}"#,
        ];
        for s in shapes {
            let call = parse_reply(s).unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(call.name(), "move_toward", "{s}");
        }
    }

    #[test]
    fn prefers_actions_and_rejects_bad_args() {
        let both = r#"{"tool_calls": [{"function": {"name": "report_discovery", "arguments": {"label": "kitchen", "notes": "n", "significance": "room"}}}, {"function": {"name": "rotate", "arguments": {"degrees": 90}}}]}"#;
        assert_eq!(parse_reply(both).unwrap().name(), "rotate");
        assert!(parse_reply(r#"{"name": "rotate", "arguments": {"degrees": 33}}"#).is_err());
        assert!(parse_reply(r#"{"name": "fly", "arguments": {}}"#).is_err());
        assert!(parse_reply("hello").is_err());
        assert_eq!(fallback().name(), "stop_robot");
    }
}
