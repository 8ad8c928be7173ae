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
        // (label, range) of the objects in view
        let seen: Vec<(String, f64)> = match (input.labels, input.depth, input.frame) {
            (Some(labels), Some(depth), Some(frame)) => {
                labels.regions(depth, frame.hfov_rad, 2).into_iter().map(|r| (r.label, r.range_m)).collect()
            }
            _ => Vec::new(),
        };
        if let Some(scan) = input.scan {
            // a corridor: narrow across, long along, whichever way the robot faces, and no
            // furniture right here (rooms seen through its doors do not count)
            let (width, length, parallel) = corridor_shape(scan);
            if width < 1.8 && length > 3.5 && parallel && seen.iter().all(|(_, r)| *r > 2.0) {
                return Some(
                    SceneObservation::new("corridor").with_description("narrow passage with walls on both sides"),
                );
            }
        }
        // the nearby objects vote; with none near, the ones farther in the same view
        let near: Vec<&str> = seen.iter().filter(|(_, r)| *r < 4.0).map(|(l, _)| l.as_str()).collect();
        let labels = if near.is_empty() {
            seen.iter().filter(|(_, r)| *r < 7.0).map(|(l, _)| l.as_str()).collect()
        } else {
            near
        };
        let room = self.prior.classify(labels.iter().copied())?;
        let mut objects: Vec<String> = labels.iter().map(|s| s.to_string()).collect();
        objects.dedup();
        let description = format!("{} with {}", room, objects.join(", "));
        Some(SceneObservation::new(room).with_objects(objects).with_description(description))
    }
}

/// The narrowest width across the robot's position (the median ranges of
/// two opposite 10° arcs, added, over every 10° direction), the length at
/// right angles to it, metres, and whether the walls run parallel (the
/// widths 20° either side are what two parallel walls give, not a piece of
/// furniture on one side).
fn corridor_shape(scan: &nav_core::lidar::LaserScan) -> (f64, f64, bool) {
    let arc = |c: f64| f64::from(arc_distance(scan, c, 5f64.to_radians(), ArcStat::Percentile(0.5))).min(12.0);
    let chord = |c: f64| arc(c) + arc(c + PI);
    let (mut width, mut at) = (f64::INFINITY, 0.0);
    for k in 0..18 {
        let c = f64::from(k) * 10f64.to_radians();
        let w = chord(c);
        if w < width {
            width = w;
            at = c;
        }
    }
    let tilt = 20f64.to_radians();
    let parallel = [at - tilt, at + tilt].iter().all(|c| chord(*c) < width / tilt.cos() + 0.25);
    (width, chord(at + FRAC_PI_2), parallel)
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
