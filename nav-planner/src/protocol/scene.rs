//! The scene analyzer (a scene VLM): the place type, the
//! visible objects and a one-line description, every 20 steps. The memory
//! normalizes the place type (lowercase, punctuation removed, hallway →
//! corridor). The offline stand-in is
//! [`crate::offline::OfflineSceneAnalyzer`].

use super::{CallRecord, DecisionError, get_str};
use crate::protocol::annotate::encode_jpeg;
use crate::protocol::json::extract_json_object;
use crate::protocol::prompts::SCENE_SYSTEM;
use crate::vlm::{ImageDetail, Part, RequestKind, VisionLanguageModel, VlmRequest};
use async_trait::async_trait;
use nav_core::lidar::LaserScan;
use nav_core::raster::RgbFrame;
use nav_hal::hal::{CameraFrame, DepthFrame, LabelFrame};
use nav_memory::SceneObservation;
use serde_json::Value;
use std::time::Duration;

/// What the analyzer looks at.
#[derive(Debug, Clone, Copy)]
pub struct SceneInput<'a> {
    /// The current camera view, if any.
    pub frame: Option<&'a CameraFrame>,
    /// Its depth image, when the analyzer asked for it.
    pub depth: Option<&'a DepthFrame>,
    /// Its label buffer (simulators; only the offline stand-in reads it).
    pub labels: Option<&'a LabelFrame>,
    /// The current scan, if any.
    pub scan: Option<&'a LaserScan>,
}

/// A scene analyzer.
#[async_trait]
pub trait SceneAnalyzer: Send {
    /// Short name.
    fn name(&self) -> String;
    /// The view data [`SceneAnalyzer::analyze`] reads (default: the RGB image).
    fn needs(&self) -> super::perception::PerceptionNeeds {
        super::perception::PerceptionNeeds { rgb: true, ..Default::default() }
    }
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

/// The scene analyzer's request for one camera frame (`None` when the
/// frame cannot be encoded as JPEG).
pub fn scene_request(frame: &RgbFrame, timeout_s: f64) -> Option<VlmRequest> {
    let jpeg = encode_jpeg(frame, 80).ok()?;
    Some(
        VlmRequest::new(SCENE_SYSTEM)
            .of_kind(RequestKind::Scene)
            .cache_system(true)
            .image(Part::jpeg(jpeg, ImageDetail::Low))
            .text("What kind of place is this?")
            .max_tokens(150)
            .temperature(0.0)
            .timeout(Duration::from_secs_f64(timeout_s.max(0.1))),
    )
}

#[async_trait]
impl<M: VisionLanguageModel> SceneAnalyzer for VlmSceneAnalyzer<M> {
    fn name(&self) -> String {
        let info = self.vlm.describe();
        format!("vlm:{}/{}", info.provider, info.model)
    }

    async fn analyze(&mut self, input: &SceneInput<'_>) -> (Option<SceneObservation>, CallRecord) {
        let mut record = CallRecord::default();
        let Some(req) = input.frame.and_then(|f| scene_request(&f.frame, self.timeout_s)) else {
            return (None, record);
        };
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
