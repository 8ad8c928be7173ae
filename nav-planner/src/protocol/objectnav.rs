//! The objectnav protocol (a VLM planner fed the Place–Anchor memory, over
//! a PixelNav-style low-level policy): panorama + target + Navigation
//! Context in; exactly `{"goal_flag", "angle", "discovered_context":
//! {"goal_scene_type", "why"}}` out. An invalid reply (parse error, missing
//! field, wrong type, angle outside [-180, 180]) gets exactly one retry,
//! then the fallback `{false, 0, "corridor", "fallback"}`; every
//! fallback is counted and logged with its reason.

use super::{CallRecord, DecisionError, PlannerReply, get, get_f64, get_str, type_name};
use crate::protocol::annotate::{encode_jpeg, stitch_panorama};
use crate::protocol::json::extract_json_object;
use crate::protocol::prompts::OBJECTNAV_SYSTEM;
use crate::vlm::{ImageDetail, Part, VisionLanguageModel, VlmRequest};
use async_trait::async_trait;
use nav_core::geometry::{Pose2, normalize_angle};
use nav_core::lidar::{ArcStat, LaserScan, arc_distance};
use nav_hal::hal::{Detection, Panorama};

use nav_memory::NavigationContext;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::fmt::Write as _;
use std::time::Duration;

/// The planner's short note on where to go next and why (the DC record's
/// content).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiscoveredContext {
    /// The scene type to head for (free text, not an enum).
    pub goal_scene_type: String,
    /// One short sentence.
    pub why: String,
}

/// A validated objectnav decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectNavDecision {
    /// True when the target object is visible now.
    pub goal_flag: bool,
    /// Direction to go, degrees relative to the front, positive = left,
    /// in `[-180, 180]`.
    pub angle: f64,
    /// Where to head and why.
    pub discovered_context: DiscoveredContext,
}

impl ObjectNavDecision {
    /// The fallback: `{false, 0, "corridor", "fallback"}`.
    pub fn fallback() -> Self {
        Self {
            goal_flag: false,
            angle: 0.0,
            discovered_context: DiscoveredContext {
                goal_scene_type: "corridor".to_string(),
                why: "fallback".to_string(),
            },
        }
    }

    /// Parses and validates a raw reply (see [`validate_objectnav`]).
    pub fn parse(reply: &str) -> Result<Self, DecisionError> {
        validate_objectnav(&extract_json_object(reply)?)
    }

    /// An offline stand-in's reply text taken as a model's would be: parsed
    /// by [`Self::parse`] (the fallback, with its reason, when invalid), the
    /// text kept as the call's raw reply.
    pub fn from_reply_text(reply: String) -> (Self, CallRecord) {
        let mut record = CallRecord::default();
        let decision = Self::parse(&reply).unwrap_or_else(|e| {
            record.fallback = Some(e.to_string());
            Self::fallback()
        });
        record.raw.push(reply);
        (decision, record)
    }
}

/// Validates a parsed object as an objectnav decision. Extra fields are
/// ignored; a missing field, a wrong type, an empty scene type or an angle
/// outside `[-180, 180]` is invalid.
pub fn validate_objectnav(obj: &Map<String, Value>) -> Result<ObjectNavDecision, DecisionError> {
    let goal_flag = match get(obj, "goal_flag", "goal_flag")? {
        Value::Bool(b) => *b,
        other => {
            return Err(DecisionError::invalid("goal_flag", format!("expected a boolean, got {}", type_name(other))));
        }
    };
    let angle = get_f64(obj, "angle", "angle")?;
    if !(-180.0..=180.0).contains(&angle) {
        return Err(DecisionError::invalid("angle", format!("{angle} is outside [-180, 180]")));
    }
    let dc = match get(obj, "discovered_context", "discovered_context")? {
        Value::Object(m) => m,
        other => {
            return Err(DecisionError::invalid(
                "discovered_context",
                format!("expected an object, got {}", type_name(other)),
            ));
        }
    };
    let goal_scene_type = get_str(dc, "goal_scene_type", "discovered_context.goal_scene_type")?;
    if goal_scene_type.trim().is_empty() {
        return Err(DecisionError::invalid("discovered_context.goal_scene_type", "empty"));
    }
    let why = get_str(dc, "why", "discovered_context.why")?;
    Ok(ObjectNavDecision { goal_flag, angle, discovered_context: DiscoveredContext { goal_scene_type, why } })
}

/// What an objectnav planner sees when it is called.
#[derive(Debug, Clone, Copy)]
pub struct ObjectNavObservation<'a> {
    /// The target object's label.
    pub target: &'a str,
    /// Pose estimate (odometry or dead reckoning).
    pub pose: Pose2,
    /// The panorama (12 × 30° by default), if the robot provides one. A
    /// simulator's views carry depth and a label buffer: only the offline
    /// stand-in and the text-only description read those (what a VLM would
    /// see in the images), never the loop.
    pub panorama: Option<&'a Panorama>,
    /// The current LiDAR scan, if any.
    pub scan: Option<&'a LaserScan>,
    /// The Navigation Context (None with memory off).
    pub context: Option<&'a NavigationContext>,
    /// What the operator said (a voice command that is no control word),
    /// shown once as an `OPERATOR SAYS:` line.
    pub instruction: Option<&'a str>,
}

/// What a planner may learn at every step between calls.
#[derive(Debug, Clone, Copy)]
pub struct StepObservation<'a> {
    /// Pose estimate.
    pub pose: Pose2,
    /// LiDAR scan, if any.
    pub scan: Option<&'a LaserScan>,
}

/// An objectnav planner: a VLM behind [`VlmObjectNavPlanner`] or an
/// offline planner.
#[async_trait]
pub trait ObjectNavPlanner: Send {
    /// Short name for logs and summaries.
    fn name(&self) -> String;
    /// Called every step with what the robot sensed (default: ignored).
    fn observe(&mut self, step: &StepObservation<'_>) {
        let _ = step;
    }
    /// Decides where to go.
    async fn plan(&mut self, obs: &ObjectNavObservation<'_>) -> PlannerReply<ObjectNavDecision>;
}

/// How objectnav requests are built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ObjectNavPromptConfig {
    /// Send no images: describe the panorama in text instead.
    pub text_only: bool,
    /// Image detail for providers that support it.
    pub image_detail: ImageDetail,
    /// Tile size of the stitched panorama, pixels (4 × 3 tiles).
    pub tile_width: usize,
    /// Tile height, pixels.
    pub tile_height: usize,
    /// Sampling temperature.
    pub temperature: f32,
    /// Output token limit.
    pub max_tokens: u32,
    /// Per-call timeout, seconds.
    pub timeout_s: f64,
    /// Ask the provider for JSON matching the schema.
    pub json_schema: bool,
    /// Grounding knowledge (docs/GROUNDING.md) inserted into the system prompt.
    pub grounding: Option<String>,
    /// The verbalized-entropy variant of the system prompt (the model states
    /// its uncertainty before deciding).
    pub verbalized_entropy: bool,
}

impl Default for ObjectNavPromptConfig {
    fn default() -> Self {
        Self {
            text_only: false,
            image_detail: ImageDetail::Low,
            tile_width: 160,
            tile_height: 120,
            temperature: 0.2,
            max_tokens: 300,
            timeout_s: 8.0,
            json_schema: true,
            grounding: None,
            verbalized_entropy: false,
        }
    }
}

/// The JSON Schema of the objectnav decision (strict-mode compatible).
pub fn objectnav_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "goal_flag": {"type": "boolean", "description": "true only if the target is visible now"},
            "angle": {"type": "number", "description": "degrees relative to the front, positive = left, in [-180, 180]"},
            "discovered_context": {
                "type": "object",
                "properties": {
                    "goal_scene_type": {"type": "string"},
                    "why": {"type": "string"}
                },
                "required": ["goal_scene_type", "why"],
                "additionalProperties": false
            }
        },
        "required": ["goal_flag", "angle", "discovered_context"],
        "additionalProperties": false
    })
}

/// The system prompt, with grounding knowledge appended when present.
pub fn system_prompt(grounding: Option<&str>) -> String {
    let options =
        super::grounding::SystemPromptOptions { grounding: grounding.map(str::to_string), verbalized_entropy: false };
    super::grounding::system_prompt(OBJECTNAV_SYSTEM, &options)
}

/// The per-cycle user text: target, Navigation Context and (text-only) a
/// description of the panorama.
pub fn user_text(obs: &ObjectNavObservation<'_>, text_only: bool) -> String {
    let mut s = String::with_capacity(1024);
    let _ = writeln!(s, "TARGET: {}", obs.target);
    if let Some(said) = obs.instruction.and_then(super::instruction::UserInstruction::new) {
        let _ = writeln!(s, "OPERATOR SAYS (follow it if it is safe): {said}");
    }
    s.push('\n');
    match obs.context {
        Some(ctx) => s.push_str(&ctx.to_text()),
        None => s.push_str("NAVIGATION CONTEXT: (memory off)"),
    }
    s.push_str("\n\n");
    if text_only || obs.panorama.is_none() {
        s.push_str(&describe_panorama(obs));
    } else {
        s.push_str(
            "PANORAMA: the image shows 12 views in a 4x3 grid, each labelled with its angle \
             (positive = left of the front).",
        );
    }
    s
}

/// The objects rendered in a panorama's label buffers (a perfect detector:
/// what the labels drawn in the simulator's images show), bearings
/// relative to the robot's front, ranges from each view's depth, nearest
/// first, each instance once (from the view that sees it most centrally).
/// Empty for panoramas without label buffers (real cameras).
pub fn panorama_objects(pano: &Panorama) -> Vec<Detection> {
    let mut out: Vec<(Detection, f64)> = Vec::new();
    for v in &pano.views {
        let (Some(labels), Some(depth)) = (&v.labels, &v.depth) else { continue };
        for r in labels.regions(depth, v.frame.hfov_rad, 2) {
            let bearing = normalize_angle(v.heading_rad + r.bearing_rad);
            let off_axis = r.centre_bearing_rad.abs();
            let det = Detection {
                label: r.label,
                bearing_rad: bearing,
                distance_m: r.range_m,
                bbox: None,
                ground_truth: true,
            };
            // the same instance seen in two overlapping views: same label, nearly the same point
            let at = |d: &Detection| (d.distance_m * d.bearing_rad.cos(), d.distance_m * d.bearing_rad.sin());
            let (x, y) = at(&det);
            match out.iter_mut().find(|(o, _)| {
                let (ox, oy) = at(o);
                o.label == det.label && ((ox - x).powi(2) + (oy - y).powi(2)).sqrt() < 0.3 + 0.1 * det.distance_m
            }) {
                Some((o, off)) if off_axis < *off => {
                    *o = det;
                    *off = off_axis;
                }
                Some(_) => {}
                None => out.push((det, off_axis)),
            }
        }
    }
    let mut dets: Vec<Detection> = out.into_iter().map(|(d, _)| d).collect();
    dets.sort_by(|a, b| a.distance_m.total_cmp(&b.distance_m));
    dets
}

/// A text rendering of what is around the robot, for text-only models: the
/// free distance in each 30° direction and the objects seen there (from the
/// panorama's label buffers, see [`panorama_objects`]).
pub fn describe_panorama(obs: &ObjectNavObservation<'_>) -> String {
    let detections = obs.panorama.map(panorama_objects).unwrap_or_default();
    let mut s = String::from("PANORAMA (text): angle: free distance; objects\n");
    for k in 0..12 {
        let angle = normalize_angle((k as f64 * 30.0).to_radians());
        let deg = angle.to_degrees().round() as i64;
        let free = obs
            .scan
            .map(|scan| arc_distance(scan, angle, 15f64.to_radians(), ArcStat::Percentile(0.1)))
            .filter(|d| d.is_finite());
        let objects: Vec<String> = detections
            .iter()
            .filter(|d| normalize_angle(d.bearing_rad - angle).abs() <= 15f64.to_radians())
            .map(|d| format!("{} {:.1}m", d.label, d.distance_m))
            .collect();
        let _ = write!(s, "  {deg:+}: ");
        match free {
            Some(f) => {
                let _ = write!(s, "{f:.1}m");
            }
            None => s.push('?'),
        }
        if !objects.is_empty() {
            let _ = write!(s, "; {}", objects.join(", "));
        }
        s.push('\n');
    }
    s.trim_end().to_string()
}

/// Builds the request a backend sends for one objectnav decision.
pub fn build_request(obs: &ObjectNavObservation<'_>, cfg: &ObjectNavPromptConfig) -> VlmRequest {
    let options = super::grounding::SystemPromptOptions {
        grounding: cfg.grounding.clone(),
        verbalized_entropy: cfg.verbalized_entropy,
    };
    let mut req = VlmRequest::new(super::grounding::system_prompt(OBJECTNAV_SYSTEM, &options))
        .cache_system(true)
        .temperature(cfg.temperature)
        .max_tokens(cfg.max_tokens)
        .timeout(Duration::from_secs_f64(cfg.timeout_s.max(0.1)));
    if cfg.json_schema {
        req = req.json_schema("objectnav_decision", objectnav_schema(), true);
    }
    if !cfg.text_only {
        if let Some(p) = obs.panorama {
            let stitched = stitch_panorama(p, cfg.tile_width, cfg.tile_height);
            if let Ok(jpeg) = encode_jpeg(&stitched, 80) {
                req = req.image(Part::jpeg(jpeg, cfg.image_detail));
            }
        }
    }
    req.text(user_text(obs, cfg.text_only))
}

/// The objectnav planner backed by a vision-language model.
pub struct VlmObjectNavPlanner<M> {
    vlm: M,
    config: ObjectNavPromptConfig,
}

impl<M: VisionLanguageModel> VlmObjectNavPlanner<M> {
    /// A planner calling `vlm`.
    pub fn new(vlm: M, config: ObjectNavPromptConfig) -> Self {
        Self { vlm, config }
    }

    /// The model.
    pub fn vlm(&self) -> &M {
        &self.vlm
    }
}

#[async_trait]
impl<M: VisionLanguageModel> ObjectNavPlanner for VlmObjectNavPlanner<M> {
    fn name(&self) -> String {
        let info = self.vlm.describe();
        format!("vlm:{}/{}", info.provider, info.model)
    }

    async fn plan(&mut self, obs: &ObjectNavObservation<'_>) -> PlannerReply<ObjectNavDecision> {
        let request = build_request(obs, &self.config);
        let mut record = CallRecord::default();
        let last_error = match super::ask_with_retry(&self.vlm, request, &mut record, ObjectNavDecision::parse).await {
            Ok(d) => return PlannerReply { decision: d, distance_hint_m: None, record },
            Err(e) => e,
        };
        tracing::warn!(reason = %last_error, "objectnav: no usable reply after one retry (an invalid reply or a failed call), using the fallback");
        record.fallback = Some(last_error);
        PlannerReply { decision: ObjectNavDecision::fallback(), distance_hint_m: None, record }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_seed_example() {
        let reply = r#"{
  "goal_flag": true,
  "angle": 15.0,
  "discovered_context": {
    "goal_scene_type": "kitchen",
    "why": "주방은 목표와 연관된 물체가 있을 확률이 높음"
  }
}"#;
        let d = ObjectNavDecision::parse(reply).unwrap();
        assert!(d.goal_flag);
        assert_eq!(d.angle, 15.0);
        assert_eq!(d.discovered_context.goal_scene_type, "kitchen");
    }

    #[test]
    fn rejects_bad_values() {
        let bad = [
            (
                r#"{"goal_flag": "yes", "angle": 0, "discovered_context": {"goal_scene_type": "a", "why": "b"}}"#,
                "goal_flag",
            ),
            (
                r#"{"goal_flag": true, "angle": 181, "discovered_context": {"goal_scene_type": "a", "why": "b"}}"#,
                "angle",
            ),
            (
                r#"{"goal_flag": true, "angle": "15", "discovered_context": {"goal_scene_type": "a", "why": "b"}}"#,
                "angle",
            ),
            (r#"{"goal_flag": true, "angle": 0}"#, "discovered_context"),
            (
                r#"{"goal_flag": true, "angle": 0, "discovered_context": {"why": "b"}}"#,
                "discovered_context.goal_scene_type",
            ),
            (
                r#"{"goal_flag": true, "angle": 0, "discovered_context": {"goal_scene_type": " ", "why": "b"}}"#,
                "discovered_context.goal_scene_type",
            ),
        ];
        for (reply, field) in bad {
            match ObjectNavDecision::parse(reply) {
                Err(DecisionError::Invalid { field: f, .. }) => assert_eq!(f, field, "{reply}"),
                other => panic!("{reply}: {other:?}"),
            }
        }
    }

    fn arb_decision() -> impl Strategy<Value = ObjectNavDecision> {
        (any::<bool>(), -180.0f64..=180.0, "[a-z ]{1,12}", "[a-zA-Z가-힣{} ,.!?\"]{0,40}").prop_filter_map(
            "non-empty scene",
            |(g, a, s, w)| {
                let keep = !s.trim().is_empty();
                keep.then_some(ObjectNavDecision {
                    goal_flag: g,
                    angle: a,
                    discovered_context: DiscoveredContext { goal_scene_type: s, why: w },
                })
            },
        )
    }

    proptest! {
        #[test]
        fn valid_decision_in_noise_parses_back(
            d in arb_decision(),
            prose in "[a-zA-Z .,:!]{0,40}",
            fence in any::<bool>(),
            think in any::<bool>(),
            trailing in any::<bool>(),
        ) {
            let mut json = serde_json::to_string_pretty(&d).unwrap();
            if trailing {
                json = json.replacen("\n}", ",\n}", 1);
            }
            let mut reply = json.clone();
            if fence { reply = format!("```json\n{reply}\n```"); }
            reply = format!("{prose}\n{reply}\nHope this helps {{:}}");
            if think { reply = format!("<think>I should output {{\"angle\": 999}} no</think>{reply}"); }
            let back = ObjectNavDecision::parse(&reply).unwrap();
            prop_assert_eq!(back, d);
        }
    }
}
