//! The simulator's perception stage: the label buffer as a **perfect
//! detector**. It reports the target exactly when at least two pixel
//! columns of the current view render it (occlusion by walls and nearer
//! objects respected, nothing behind the camera or out of the field of
//! view), with the goal pixel on its nearest visible surface and the range
//! from the depth image. It never reads object positions: only the pixels
//! of this view. Real robots use [`crate::protocol::perception::VlmGoalPerception`]
//! (or an external detector) instead.

use crate::protocol::perception::{GoalPerception, GoalSighting, PerceptionInput, PerceptionNeeds, PerceptionReply};
use async_trait::async_trait;

/// See the [module docs](self).
#[derive(Debug, Clone)]
pub struct LabelBufferPerception {
    /// Detection range, metres: farther targets are "not seen" (a detector
    /// on a 320 × 240 image does not find a chair 15 m away).
    pub max_range_m: f64,
    /// Pixel columns the target must cover to count as seen (1: at least
    /// as permissive as the planner stand-in, which needs 2, so what the
    /// planner saw the perception stage can confirm even in a 16-pixel-wide
    /// bridge image).
    pub min_columns: usize,
}

impl Default for LabelBufferPerception {
    fn default() -> Self {
        Self { max_range_m: 8.0, min_columns: 1 }
    }
}

#[async_trait]
impl GoalPerception for LabelBufferPerception {
    fn name(&self) -> String {
        "label-buffer".to_string()
    }

    fn needs(&self) -> PerceptionNeeds {
        PerceptionNeeds { rgb: true, depth: true, labels: true }
    }

    async fn locate(&mut self, input: &PerceptionInput<'_>) -> PerceptionReply {
        let (Some(labels), Some(depth), Some(frame)) = (input.labels, input.depth, input.frame) else {
            return PerceptionReply::default();
        };
        let sighting = labels
            .regions(depth, frame.hfov_rad, self.min_columns)
            .into_iter()
            .find(|r| r.label == input.target && r.range_m <= self.max_range_m)
            .map(|r| GoalSighting {
                pixel: r.nearest_px,
                bbox: Some(r.bbox),
                bearing_rad: r.bearing_rad,
                range_m: Some(r.range_m),
                below_view: GoalSighting::reaches_bottom(r.bbox, labels.height),
            });
        PerceptionReply { sighting, record: Default::default() }
    }
}
