//! The perception stage (the role of a detector/segmenter such as
//! Grounding DINO + SAM): given the current
//! RGB-D view and the target label, find the target's image region and its
//! range from depth. The ObjectNav loop asks it, never the simulator: the
//! low-level policy drives to what it reports, and the episode's final STOP
//! needs its confirmation.
//!
//! [`GoalPerception`] is the seam. Implementations:
//! - [`VlmGoalPerception`] (here): asks any backend for the target's
//!   bounding box in the image — strict JSON, one retry, then "not seen" —
//!   and optionally a VLMnav-style stop check ("is the target within 1 m in
//!   front of you?") before the final STOP;
//! - `offline::LabelBufferPerception`: the simulator's label buffer, a
//!   perfect detector.

use super::json::extract_json_object;
use super::{CallRecord, DecisionError, get, type_name};
use crate::protocol::annotate::encode_jpeg;
use crate::vlm::{ImageDetail, Part, VisionLanguageModel, VlmRequest};
use async_trait::async_trait;
use nav_hal::hal::{CameraFrame, DepthFrame, LabelFrame};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::time::Duration;

/// Where the target is in the current view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoalSighting {
    /// The goal pixel `[x, y]` (the point to drive to).
    pub pixel: [u32; 2],
    /// The target's pixel box `[x_min, y_min, x_max, y_max]`, inclusive,
    /// when known.
    pub bbox: Option<[u32; 4]>,
    /// Bearing of the goal pixel relative to the camera's axis, radians CCW.
    pub bearing_rad: f64,
    /// Distance to the target's nearest visible surface from depth, metres;
    /// `None` when the view has no usable depth there.
    pub range_m: Option<f64>,
    /// The target's region reaches the image's bottom row: it continues
    /// below the field of view (a camera mounted high, a target close by),
    /// so its nearest surface may be nearer than `range_m`. The policy
    /// then takes the range sensor's distance along the target's bearing
    /// when that is shorter.
    pub below_view: bool,
}

impl GoalSighting {
    /// Whether `bbox` (inclusive) reaches the last row of an image `height`
    /// pixels high.
    pub fn reaches_bottom(bbox: [u32; 4], height: usize) -> bool {
        height > 0 && bbox[3] as usize + 1 >= height
    }

    /// The sighting of a target whose box in `frame` is `bbox` (inclusive,
    /// inside the image): its centre as the goal pixel, that column's
    /// bearing, and the range from `depth` inside the box.
    pub fn from_box(bbox: [u32; 4], frame: &CameraFrame, depth: Option<&DepthFrame>) -> Self {
        let pixel = [(bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2];
        let bearing_rad = column_bearing(frame.frame.width(), frame.hfov_rad, f64::from(pixel[0]) + 0.5);
        let range_m = depth.and_then(|d| range_in_box(d, bbox, frame.hfov_rad));
        let below_view = Self::reaches_bottom(bbox, frame.frame.height());
        Self { pixel, bbox: Some(bbox), bearing_rad, range_m, below_view }
    }
}

/// What the perception stage is given.
#[derive(Debug, Clone, Copy)]
pub struct PerceptionInput<'a> {
    /// The target object's label.
    pub target: &'a str,
    /// The current RGB image (looking straight ahead).
    pub frame: Option<&'a CameraFrame>,
    /// The aligned depth image.
    pub depth: Option<&'a DepthFrame>,
    /// The aligned label buffer (simulators only; only the simulator's
    /// perfect detector reads it).
    pub labels: Option<&'a LabelFrame>,
}

/// Which sensors a perception stage reads, so the loop fetches only those.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PerceptionNeeds {
    /// The RGB image.
    pub rgb: bool,
    /// The depth image.
    pub depth: bool,
    /// The label buffer.
    pub labels: bool,
}

/// The answer of the perception stage.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PerceptionReply {
    /// The target, or `None` for "not seen".
    pub sighting: Option<GoalSighting>,
    /// Model calls made (none for a simulator detector).
    pub record: CallRecord,
}

/// A perception stage (see the [module docs](self)).
#[async_trait]
pub trait GoalPerception: Send {
    /// Short name for logs.
    fn name(&self) -> String;
    /// The sensors [`GoalPerception::locate`] reads.
    fn needs(&self) -> PerceptionNeeds;
    /// Looks for the target in the current view.
    async fn locate(&mut self, input: &PerceptionInput<'_>) -> PerceptionReply;
    /// The optional final check before the episode's STOP: `Some(true)`
    /// confirms, `Some(false)` vetoes (the loop re-plans). The default,
    /// `None`, has no check (the range from [`GoalPerception::locate`]
    /// decides alone).
    async fn confirm_stop(&mut self, input: &PerceptionInput<'_>) -> Option<(bool, CallRecord)> {
        let _ = input;
        None
    }
}

/// Distance to the nearest surface inside `bbox` along its ray, metres:
/// the 10th percentile of the finite depths in the box (robust to a few
/// background pixels at the edges), divided by the cosine of the column's
/// bearing. `None` without finite depth there.
pub fn range_in_box(depth: &DepthFrame, bbox: [u32; 4], hfov_rad: f64) -> Option<f64> {
    if depth.width == 0 || depth.height == 0 {
        return None;
    }
    let x1 = (bbox[2] as usize).min(depth.width - 1);
    let y1 = (bbox[3] as usize).min(depth.height - 1);
    let mut v: Vec<(f32, usize)> = Vec::new();
    for y in (bbox[1] as usize)..=y1 {
        for x in (bbox[0] as usize)..=x1 {
            if let Some(d) = depth.at(x, y).filter(|d| d.is_finite() && *d > 0.0) {
                v.push((d, x));
            }
        }
    }
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (z, x) = v[v.len() / 10];
    let b = column_bearing(depth.width, hfov_rad, x as f64 + 0.5);
    Some(f64::from(z) / b.cos().max(1e-6))
}

/// Bearing of pixel column `x` (radians CCW from the axis) for a pinhole
/// camera `width` pixels wide with horizontal field of view `hfov_rad`.
pub fn column_bearing(width: usize, hfov_rad: f64, x: f64) -> f64 {
    let w = width as f64;
    if w <= 0.0 {
        return 0.0;
    }
    let f = (w / 2.0) / (hfov_rad / 2.0).tan().max(1e-6);
    ((w / 2.0 - x) / f).atan()
}

/// A validated perception answer: the target's box, or not seen.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PerceptionAnswer {
    /// Whether the target is in the image.
    pub seen: bool,
    /// Its box in pixels (set exactly when `seen`).
    pub bbox: Option<[u32; 4]>,
}

impl PerceptionAnswer {
    /// Parses a raw reply for an image `width` × `height`: `{"seen": bool,
    /// "bbox": [x_min, y_min, x_max, y_max] | null}`; a seen target needs a
    /// box of non-negative integers (whole-number floats are accepted)
    /// inside the image with `min <= max`. Fences, prose and `<think>`
    /// blocks around the JSON are tolerated.
    pub fn parse(reply: &str, width: usize, height: usize) -> Result<Self, DecisionError> {
        validate_perception(&extract_json_object(reply)?, width, height)
    }
}

/// Validates a parsed perception object (see [`PerceptionAnswer::parse`]).
pub fn validate_perception(
    obj: &Map<String, Value>,
    width: usize,
    height: usize,
) -> Result<PerceptionAnswer, DecisionError> {
    let seen = match get(obj, "seen", "seen")? {
        Value::Bool(b) => *b,
        other => return Err(DecisionError::invalid("seen", format!("expected a boolean, got {}", type_name(other)))),
    };
    if !seen {
        return Ok(PerceptionAnswer { seen: false, bbox: None });
    }
    let arr = match obj.get("bbox") {
        Some(Value::Array(a)) => a,
        Some(other) => {
            return Err(DecisionError::invalid(
                "bbox",
                format!("expected an array of 4 numbers, got {}", type_name(other)),
            ));
        }
        None => return Err(DecisionError::invalid("bbox", "missing (required when seen is true)")),
    };
    if arr.len() != 4 {
        return Err(DecisionError::invalid("bbox", format!("expected 4 numbers, got {}", arr.len())));
    }
    let mut b = [0u32; 4];
    for (i, v) in arr.iter().enumerate() {
        let n = v.as_f64().ok_or_else(|| DecisionError::invalid(format!("bbox[{i}]"), "not a number"))?;
        let limit = if i % 2 == 0 { width } else { height };
        if !(n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n < limit as f64) {
            return Err(DecisionError::invalid(
                format!("bbox[{i}]"),
                format!("{n} is not a pixel index in 0..{limit}"),
            ));
        }
        b[i] = n as u32;
    }
    if b[0] > b[2] || b[1] > b[3] {
        return Err(DecisionError::invalid("bbox", "min corner is beyond the max corner"));
    }
    Ok(PerceptionAnswer { seen: true, bbox: Some(b) })
}

/// The JSON Schema of the perception answer.
pub fn perception_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "seen": {"type": "boolean", "description": "true only if the target object is visible in the image"},
            "bbox": {
                "type": ["array", "null"],
                "items": {"type": "integer"},
                "description": "[x_min, y_min, x_max, y_max] in pixels, inclusive; null when not seen"
            }
        },
        "required": ["seen", "bbox"],
        "additionalProperties": false
    })
}

/// The system prompt of the perception stage.
pub const PERCEPTION_SYSTEM: &str = "\
You are the object detector of an indoor robot. You receive one camera image and the name of a target \
object. Report whether the target is visible in the image and, if it is, its bounding box in pixel \
coordinates (x to the right, y down, origin at the top-left corner).
Output exactly one JSON object and nothing else:
{\"seen\": true, \"bbox\": [x_min, y_min, x_max, y_max]} or {\"seen\": false, \"bbox\": null}";

/// The system prompt of the stop check.
pub const STOP_CHECK_SYSTEM: &str = "\
You check whether an indoor robot has arrived at its target object. You receive one camera image \
looking straight ahead. Answer true only if the target object is clearly visible and within about \
1 metre in front of the robot.
Output exactly one JSON object and nothing else: {\"arrived\": true} or {\"arrived\": false}";

/// Settings of [`VlmGoalPerception`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VlmPerceptionConfig {
    /// Ask the model the stop check before the final STOP.
    pub stop_check: bool,
    /// Image detail for providers that support it.
    pub image_detail: ImageDetail,
    /// Output token limit.
    pub max_tokens: u32,
    /// Per-call timeout, seconds.
    pub timeout_s: f64,
    /// Ask the provider for JSON matching the schema.
    pub json_schema: bool,
}

impl Default for VlmPerceptionConfig {
    fn default() -> Self {
        Self { stop_check: true, image_detail: ImageDetail::Low, max_tokens: 120, timeout_s: 8.0, json_schema: true }
    }
}

/// Builds the perception request for `target` in `frame`.
pub fn build_perception_request(target: &str, frame: &CameraFrame, cfg: &VlmPerceptionConfig) -> VlmRequest {
    let mut req = VlmRequest::new(PERCEPTION_SYSTEM)
        .of_kind(crate::vlm::RequestKind::Perception)
        .cache_system(true)
        .temperature(0.0)
        .max_tokens(cfg.max_tokens)
        .timeout(Duration::from_secs_f64(cfg.timeout_s.max(0.1)));
    if cfg.json_schema {
        req = req.json_schema("goal_perception", perception_schema(), true);
    }
    if let Ok(jpeg) = encode_jpeg(&frame.frame, 85) {
        req = req.image(Part::jpeg(jpeg, cfg.image_detail));
    }
    req.text(format!(
        "TARGET: {target}\nThe image is {} x {} pixels. Is the {target} visible? If so, give its bounding box.",
        frame.frame.width(),
        frame.frame.height()
    ))
}

/// Builds the stop-check request.
pub fn build_stop_check_request(target: &str, frame: &CameraFrame, cfg: &VlmPerceptionConfig) -> VlmRequest {
    let schema = json!({
        "type": "object",
        "properties": {"arrived": {"type": "boolean"}},
        "required": ["arrived"],
        "additionalProperties": false
    });
    let mut req = VlmRequest::new(STOP_CHECK_SYSTEM)
        .of_kind(crate::vlm::RequestKind::StopCheck)
        .cache_system(true)
        .temperature(0.0)
        .max_tokens(cfg.max_tokens)
        .timeout(Duration::from_secs_f64(cfg.timeout_s.max(0.1)));
    if cfg.json_schema {
        req = req.json_schema("stop_check", schema, true);
    }
    if let Ok(jpeg) = encode_jpeg(&frame.frame, 85) {
        req = req.image(Part::jpeg(jpeg, cfg.image_detail));
    }
    req.text(format!("TARGET: {target}\nIs the {target} within about 1 metre in front of the robot?"))
}

/// Parses a stop-check reply: `{"arrived": bool}`.
pub fn parse_stop_check(reply: &str) -> Result<bool, DecisionError> {
    let obj = extract_json_object(reply)?;
    match get(&obj, "arrived", "arrived")? {
        Value::Bool(b) => Ok(*b),
        other => Err(DecisionError::invalid("arrived", format!("expected a boolean, got {}", type_name(other)))),
    }
}

/// The perception stage backed by a vision-language model (see the
/// [module docs](self)). Works with every backend and every robot that has
/// an RGB camera; the range comes from the depth image when there is one.
pub struct VlmGoalPerception<M> {
    vlm: M,
    config: VlmPerceptionConfig,
}

impl<M: VisionLanguageModel> VlmGoalPerception<M> {
    /// A perception stage calling `vlm`.
    pub fn new(vlm: M, config: VlmPerceptionConfig) -> Self {
        Self { vlm, config }
    }

    /// Calls the model at most twice (one retry with the error) and returns
    /// the first reply `parse` accepts, or the last error.
    async fn ask<T>(
        &self,
        request: VlmRequest,
        record: &mut CallRecord,
        parse: impl Fn(&str) -> Result<T, DecisionError>,
    ) -> Result<T, String> {
        super::ask_with_retry(&self.vlm, request, record, parse).await
    }
}

#[async_trait]
impl<M: VisionLanguageModel> GoalPerception for VlmGoalPerception<M> {
    fn name(&self) -> String {
        let info = self.vlm.describe();
        format!("vlm:{}/{}", info.provider, info.model)
    }

    fn needs(&self) -> PerceptionNeeds {
        PerceptionNeeds { rgb: true, depth: true, labels: false }
    }

    /// Asks for the box; an invalid reply after one retry, or a failed
    /// call, is the documented fallback "not seen" (recorded as a
    /// fallback with its reason).
    async fn locate(&mut self, input: &PerceptionInput<'_>) -> PerceptionReply {
        let mut record = CallRecord::default();
        let Some(frame) = input.frame else {
            record.fallback = Some("no camera image".into());
            return PerceptionReply { sighting: None, record };
        };
        let (w, h) = (frame.frame.width(), frame.frame.height());
        let req = build_perception_request(input.target, frame, &self.config);
        match self.ask(req, &mut record, |t| PerceptionAnswer::parse(t, w, h)).await {
            Ok(PerceptionAnswer { bbox: Some(b), .. }) => {
                PerceptionReply { sighting: Some(GoalSighting::from_box(b, frame, input.depth)), record }
            }
            Ok(_) => PerceptionReply { sighting: None, record },
            Err(reason) => {
                tracing::warn!(%reason, "perception: no usable reply after one retry (an invalid reply or a failed call), treating the target as not seen");
                record.fallback = Some(reason);
                PerceptionReply { sighting: None, record }
            }
        }
    }

    /// The stop check, when configured: an invalid reply after one retry
    /// vetoes the STOP (a wrong STOP ends the episode; a wrong veto costs a
    /// re-plan).
    async fn confirm_stop(&mut self, input: &PerceptionInput<'_>) -> Option<(bool, CallRecord)> {
        if !self.config.stop_check {
            return None;
        }
        let frame = input.frame?;
        let mut record = CallRecord::default();
        let req = build_stop_check_request(input.target, frame, &self.config);
        let ok = match self.ask(req, &mut record, parse_stop_check).await {
            Ok(b) => b,
            Err(reason) => {
                record.fallback = Some(reason);
                false
            }
        };
        Some((ok, record))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_seen_and_not_seen() {
        let a = PerceptionAnswer::parse(r#"{"seen": true, "bbox": [10, 20, 30, 40]}"#, 320, 240).unwrap();
        assert_eq!(a, PerceptionAnswer { seen: true, bbox: Some([10, 20, 30, 40]) });
        let a = PerceptionAnswer::parse("```json\n{\"seen\": false, \"bbox\": null}\n```", 320, 240).unwrap();
        assert_eq!(a, PerceptionAnswer { seen: false, bbox: None });
        let a = PerceptionAnswer::parse(r#"{"seen": true, "bbox": [10.0, 20, 30, 40.0]}"#, 320, 240).unwrap();
        assert_eq!(a.bbox, Some([10, 20, 30, 40]));
    }

    #[test]
    fn rejects_bad_boxes_naming_the_field() {
        let bad = [
            (r#"{"seen": "yes"}"#, "seen"),
            (r#"{"seen": true}"#, "bbox"),
            (r#"{"seen": true, "bbox": [1, 2, 3]}"#, "bbox"),
            (r#"{"seen": true, "bbox": [1, 2, 400, 4]}"#, "bbox[2]"),
            (r#"{"seen": true, "bbox": [-1, 2, 3, 4]}"#, "bbox[0]"),
            (r#"{"seen": true, "bbox": [1.5, 2, 3, 4]}"#, "bbox[0]"),
            (r#"{"seen": true, "bbox": [30, 2, 3, 4]}"#, "bbox"),
            (r#"{"seen": true, "bbox": "here"}"#, "bbox"),
        ];
        for (reply, field) in bad {
            match PerceptionAnswer::parse(reply, 320, 240) {
                Err(DecisionError::Invalid { field: f, .. }) => assert_eq!(f, field, "{reply}"),
                other => panic!("{reply}: {other:?}"),
            }
        }
    }

    #[test]
    fn stop_check_parses() {
        assert!(parse_stop_check(r#"{"arrived": true}"#).unwrap());
        assert!(!parse_stop_check(r#"Sure: {"arrived": false}"#).unwrap());
        assert!(parse_stop_check(r#"{"arrived": "yes"}"#).is_err());
    }

    #[test]
    fn range_uses_the_near_surface_along_the_ray() {
        let mut depth = DepthFrame { width: 10, height: 10, depth_m: vec![5.0; 100], stamp_s: 0.0 };
        for y in 4..8 {
            for x in 4..6 {
                depth.depth_m[y * 10 + x] = 1.0;
            }
        }
        let r = range_in_box(&depth, [4, 4, 5, 7], 90f64.to_radians()).unwrap();
        assert!((r - 1.0).abs() < 0.05, "{r}");
        let none = DepthFrame { width: 10, height: 10, depth_m: vec![f32::NAN; 100], stamp_s: 0.0 };
        assert_eq!(range_in_box(&none, [0, 0, 9, 9], 1.0), None);
    }

    proptest! {
        #[test]
        fn parser_never_panics_and_accepts_only_boxes_inside(reply in ".{0,200}", w in 1usize..800, h in 1usize..800) {
            if let Ok(a) = PerceptionAnswer::parse(&reply, w, h) {
                if let Some(b) = a.bbox {
                    prop_assert!(a.seen && b[0] <= b[2] && b[1] <= b[3] && (b[2] as usize) < w && (b[3] as usize) < h);
                } else {
                    prop_assert!(!a.seen);
                }
            }
        }

        #[test]
        fn valid_boxes_round_trip(x0 in 0u32..300, y0 in 0u32..200, dx in 0u32..20, dy in 0u32..40, prose in "[a-zA-Z .,:]{0,30}") {
            let reply = format!("{prose}\n{{\"seen\": true, \"bbox\": [{x0}, {y0}, {}, {}]}}", x0 + dx, y0 + dy);
            let a = PerceptionAnswer::parse(&reply, 320, 240).unwrap();
            prop_assert_eq!(a.bbox, Some([x0, y0, x0 + dx, y0 + dy]));
        }
    }
}
