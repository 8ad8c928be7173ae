//! The scene analyzer's offline stand-in: what a scene VLM would say,
//! from the objects rendered in the current view (the simulator's label
//! buffer, ranges from depth) and the LiDAR's shape.

use super::prior::SemanticPrior;
use crate::protocol::CallRecord;
use crate::protocol::perception::PerceptionNeeds;
use crate::protocol::scene::{SceneAnalyzer, SceneInput};
use async_trait::async_trait;
use nav_core::lidar::{ArcStat, arc_distance};
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
        let near: Vec<String> = match (input.labels, input.depth, input.frame) {
            (Some(labels), Some(depth), Some(frame)) => labels
                .regions(depth, frame.hfov_rad, 2)
                .into_iter()
                .filter(|r| r.range_m < 4.0)
                .map(|r| r.label)
                .collect(),
            _ => Vec::new(),
        };
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
        let labels: Vec<&str> = near.iter().map(String::as_str).collect();
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

    fn needs(&self) -> PerceptionNeeds {
        PerceptionNeeds { rgb: true, depth: true, labels: true }
    }

    async fn analyze(&mut self, input: &SceneInput<'_>) -> (Option<SceneObservation>, CallRecord) {
        (self.classify(input), CallRecord::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nav_core::lidar::LaserScan;

    #[test]
    fn offline_votes_by_objects_and_sees_corridors() {
        use nav_core::raster::{Rgb, RgbFrame};
        use nav_hal::hal::{CameraFrame, DepthFrame, LabelFrame};
        let a = OfflineSceneAnalyzer::new();
        // a fridge 1 m and an oven 2 m away in a 20 x 10 view; a bed 6 m away does not count
        let mut labels = LabelFrame { width: 20, height: 10, ids: vec![0; 200], labels: Vec::new() };
        labels.paint_box("fridge", [0, 0, 5, 9]);
        labels.paint_box("oven", [7, 0, 12, 9]);
        labels.paint_box("bed", [14, 0, 19, 9]);
        let mut depth = DepthFrame { width: 20, height: 10, depth_m: vec![1.0; 200], stamp_s: 0.0 };
        for y in 0..10 {
            for x in 7..13 {
                depth.depth_m[y * 20 + x] = 2.0;
            }
            for x in 14..20 {
                depth.depth_m[y * 20 + x] = 6.0;
            }
        }
        let frame = CameraFrame { frame: RgbFrame::new(20, 10, Rgb::BLACK), hfov_rad: 1.0, stamp_s: 0.0 };
        let input = SceneInput { frame: Some(&frame), depth: Some(&depth), labels: Some(&labels), scan: None };
        let obs = a.classify(&input).unwrap();
        assert_eq!(obs.place_type, "kitchen");
        assert!(!obs.objects.contains(&"bed".to_string()));
        let mut corridor = LaserScan::full_circle(360, 0.05, 12.0, f32::INFINITY);
        for i in 0..360 {
            let ang = corridor.angle(i);
            let s = ang.sin().abs();
            if s > 0.2 {
                corridor.ranges[i] = (0.6 / s) as f32;
            }
        }
        let obs = a.classify(&SceneInput { frame: None, depth: None, labels: None, scan: Some(&corridor) }).unwrap();
        assert_eq!(obs.place_type, "corridor");
        assert!(a.classify(&SceneInput { frame: None, depth: None, labels: None, scan: None }).is_none());
    }
}
