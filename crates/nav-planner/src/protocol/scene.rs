//! The scene analyzer (seed 000 §4 "Scene VLM"): the place type, the
//! visible objects and a one-line description, every 20 steps. The memory
//! normalizes the place type (lowercase, punctuation removed, hallway →
//! corridor); [`OfflineSceneAnalyzer`] replaces the VLM's eyes with the
//! simulator's detections and the LiDAR's shape.

use super::{CallRecord, DecisionError, get_str};
use crate::annotate::encode_jpeg;
use crate::offline::prior::SemanticPrior;
use crate::parse::extract_json_object;
use crate::prompts::SCENE_SYSTEM;
use crate::vlm::{ImageDetail, Part, VisionLanguageModel, VlmRequest};
use async_trait::async_trait;
use nav_core::lidar::{ArcStat, LaserScan, arc_distance};
use nav_hal::hal::{CameraFrame, Detection};
use nav_memory::SceneObservation;
use serde_json::Value;
use std::f64::consts::{FRAC_PI_2, PI};
use std::time::Duration;

/// What the analyzer looks at.
#[derive(Debug, Clone, Copy)]
pub struct SceneInput<'a> {
    /// The current camera view, if any.
    pub frame: Option<&'a CameraFrame>,
    /// Detections around the robot (simulators).
    pub detections: &'a [Detection],
    /// The current scan, if any.
    pub scan: Option<&'a LaserScan>,
}

/// A scene analyzer.
#[async_trait]
pub trait SceneAnalyzer: Send {
    /// Short name.
    fn name(&self) -> String;
    /// Classifies the scene; `None` when it cannot tell.
    async fn analyze(&mut self, input: &SceneInput<'_>) -> (Option<SceneObservation>, CallRecord);
}

/// Parses `{"place_type", "objects", "description"}`.
pub fn parse_scene(reply: &str) -> Result<SceneObservation, DecisionError> {
    let obj = extract_json_object(reply)?;
    let place = get_str(&obj, "place_type", "place_type")?;
    if place.trim().is_empty() {
        return Err(DecisionError::invalid("place_type", "empty"));
    }
    let objects: Vec<String> = match obj.get("objects") {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(|s| s.trim().to_lowercase()).take(8).collect(),
        _ => Vec::new(),
    };
    let description = obj.get("description").and_then(Value::as_str).unwrap_or("").trim().to_string();
    Ok(SceneObservation::new(place).with_objects(objects).with_description(description))
}

/// The scene analyzer backed by a VLM.
pub struct VlmSceneAnalyzer<M> {
    vlm: M,
    timeout_s: f64,
}

impl<M: VisionLanguageModel> VlmSceneAnalyzer<M> {
    /// An analyzer calling `vlm` with a per-call timeout.
    pub fn new(vlm: M, timeout_s: f64) -> Self {
        Self { vlm, timeout_s }
    }
}

#[async_trait]
impl<M: VisionLanguageModel> SceneAnalyzer for VlmSceneAnalyzer<M> {
    fn name(&self) -> String {
        let info = self.vlm.describe();
        format!("vlm:{}/{}", info.provider, info.model)
    }

    async fn analyze(&mut self, input: &SceneInput<'_>) -> (Option<SceneObservation>, CallRecord) {
        let mut record = CallRecord::default();
        let Some(jpeg) = input.frame.and_then(|f| encode_jpeg(&f.frame, 80).ok()) else {
            return (None, record);
        };
        let req = VlmRequest::new(SCENE_SYSTEM)
            .cache_system(true)
            .image(Part::jpeg(jpeg, ImageDetail::Low))
            .text("What kind of place is this?")
            .max_tokens(150)
            .temperature(0.0)
            .timeout(Duration::from_secs_f64(self.timeout_s.max(0.1)));
        match self.vlm.complete(req).await {
            Ok(r) => {
                record.add_response(&r);
                match parse_scene(&r.text) {
                    Ok(obs) => (Some(obs), record),
                    Err(e) => {
                        record.errors.push(e.to_string());
                        (None, record)
                    }
                }
            }
            Err(e) => {
                record.add_failure(&e.to_string());
                (None, record)
            }
        }
    }
}

/// Classifies scenes without a model: a corridor when the LiDAR sees walls
/// close on both sides and open space ahead or behind; otherwise the room
/// type the visible objects vote for (semantic prior); `None` when neither
/// applies (no guess is better than a wrong label, the dwell rule waits).
#[derive(Debug, Clone, Default)]
pub struct OfflineSceneAnalyzer {
    prior: SemanticPrior,
}

impl OfflineSceneAnalyzer {
    /// The analyzer with the household prior.
    pub fn new() -> Self {
        Self::default()
    }

    /// The synchronous classification.
    pub fn classify(&self, input: &SceneInput<'_>) -> Option<SceneObservation> {
        let near: Vec<&Detection> = input.detections.iter().filter(|d| d.distance_m < 4.0).collect();
        if let Some(scan) = input.scan {
            let side = |c: f64| arc_distance(scan, c, 0.35, ArcStat::Percentile(0.5));
            let (left, right) = (side(FRAC_PI_2), side(-FRAC_PI_2));
            let along = side(0.0).max(side(PI));
            if left < 1.0 && right < 1.0 && along > 2.5 && near.is_empty() {
                return Some(
                    SceneObservation::new("corridor").with_description("narrow passage with walls on both sides"),
                );
            }
        }
        let labels: Vec<&str> = near.iter().map(|d| d.label.as_str()).collect();
        let room = self.prior.classify(labels.iter().copied())?;
        let mut objects: Vec<String> = labels.iter().map(|s| s.to_string()).collect();
        objects.dedup();
        let description = format!("{} with {}", room, objects.join(", "));
        Some(SceneObservation::new(room).with_objects(objects).with_description(description))
    }
}

#[async_trait]
impl SceneAnalyzer for OfflineSceneAnalyzer {
    fn name(&self) -> String {
        "offline".to_string()
    }

    async fn analyze(&mut self, input: &SceneInput<'_>) -> (Option<SceneObservation>, CallRecord) {
        (self.classify(input), CallRecord::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn det(label: &str, d: f64) -> Detection {
        Detection { label: label.into(), bearing_rad: 0.0, distance_m: d, bbox: None, ground_truth: true }
    }

    #[test]
    fn parses_scene_replies() {
        let s = parse_scene(
            "```json\n{\"place_type\": \"Hallway.\", \"objects\": [\"Shoe Rack\"], \"description\": \"long\"}\n```",
        )
        .unwrap();
        assert_eq!(s.place_type, "Hallway.");
        assert_eq!(s.objects, vec!["shoe rack".to_string()]);
        assert!(parse_scene("{\"objects\": []}").is_err());
    }

    #[test]
    fn offline_votes_by_objects_and_sees_corridors() {
        let a = OfflineSceneAnalyzer::new();
        let dets = [det("fridge", 1.0), det("oven", 2.0)];
        let obs = a.classify(&SceneInput { frame: None, detections: &dets, scan: None }).unwrap();
        assert_eq!(obs.place_type, "kitchen");
        let mut corridor = LaserScan::full_circle(360, 0.05, 12.0, f32::INFINITY);
        for i in 0..360 {
            let ang = corridor.angle(i);
            let s = ang.sin().abs();
            if s > 0.2 {
                corridor.ranges[i] = (0.6 / s) as f32;
            }
        }
        let obs = a.classify(&SceneInput { frame: None, detections: &[], scan: Some(&corridor) }).unwrap();
        assert_eq!(obs.place_type, "corridor");
        assert!(a.classify(&SceneInput { frame: None, detections: &[], scan: None }).is_none());
    }
}
