//! The scene analyzer's offline stand-in: what a scene VLM would say,
//! from the detections in view and the LiDAR's shape.

use super::prior::SemanticPrior;
use crate::protocol::CallRecord;
use crate::protocol::scene::{SceneAnalyzer, SceneInput};
use async_trait::async_trait;
use nav_core::lidar::{ArcStat, arc_distance};
use nav_hal::hal::Detection;
use nav_memory::SceneObservation;
use std::f64::consts::{FRAC_PI_2, PI};

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
    use nav_core::lidar::LaserScan;

    fn det(label: &str, d: f64) -> Detection {
        Detection { label: label.into(), bearing_rad: 0.0, distance_m: d, bbox: None, ground_truth: true }
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
