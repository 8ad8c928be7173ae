//! The offline explore planner: frontier exploration through the same seven
//! tools a VLM would call. It sends the robot to the best frontier with
//! `navigate_to_goal(frontier)` (nearest by path, larger openings first,
//! frontiers that recently failed last), reports each new room type it
//! recognises from detections with `report_discovery(room)`, and calls
//! `stop_robot(exploration_complete)` when no frontier is left — after
//! looking again: an empty frontier list is first answered with
//! `observe_scene` (the robot holds still while the map catches up), and
//! exploration ends only when the list is still empty
//! [`OfflineExplorePlanner::CONFIRM_S`] later. One noisy map update (a
//! scan registered against a late pose, a person walking past) must not end
//! a run on a real robot.

use super::prior::SemanticPrior;
use crate::protocol::PlannerReply;
use crate::protocol::explore::{ExploreDecision, ExplorePlanner, ExploreSnapshot};
use async_trait::async_trait;
use nav_core::geometry::Point2;
use nav_safety::ToolCall;
use serde_json::json;

/// See the module docs.
#[derive(Debug, Clone, Default)]
pub struct OfflineExplorePlanner {
    prior: SemanticPrior,
    reported_rooms: Vec<String>,
    recent_goals: Vec<Point2>,
    current: Option<Point2>,
    /// Exploration time at which the frontier list was first seen empty
    /// (since then it has stayed empty).
    empty_since_s: Option<f64>,
}

impl OfflineExplorePlanner {
    /// How long the frontier list must stay empty before exploration is
    /// declared complete, seconds of exploration time.
    pub const CONFIRM_S: f64 = 1.5;

    /// A fresh planner.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl ExplorePlanner for OfflineExplorePlanner {
    fn name(&self) -> String {
        "offline".to_string()
    }

    fn is_instant(&self) -> bool {
        true
    }

    async fn decide(&mut self, snap: &ExploreSnapshot) -> PlannerReply<ExploreDecision> {
        let mut reports = Vec::new();
        let near: Vec<&str> = snap.detections.iter().filter(|d| d.distance_m < 3.0).map(|d| d.label.as_str()).collect();
        if let Some(room) = self.prior.classify(near.iter().copied()) {
            if !self.reported_rooms.contains(&room) {
                let notes = format!("recognised from {}", near.join(", "));
                if let Ok(call) =
                    ToolCall::parse("report_discovery", &json!({"label": room, "notes": notes, "significance": "room"}))
                {
                    reports.push(call);
                }
                self.reported_rooms.push(room);
            }
        }
        let pos = snap.pose.position();
        // the last goal failed (blocked, no progress, unreachable): let it go and remember it
        let failed = snap.previous_result.as_deref().is_some_and(|r| r.contains("\"success\":false"));
        if failed {
            if let Some(c) = self.current.take() {
                self.recent_goals.push(c);
                self.recent_goals.push(c);
            }
        }
        // keep heading for the frontier chosen last time while it is still open (no dithering
        // between equally good frontiers every base period)
        let kept = self.current.and_then(|c| snap.frontiers.iter().find(|f| f.position.distance(c) < 0.7));
        let best = kept.or_else(|| {
            snap.frontiers
                .iter()
                .map(|f| {
                    let repeats = self.recent_goals.iter().filter(|g| g.distance(f.position) < 1.0).count() as f64;
                    let cost = f.path_cost_m.unwrap_or_else(|| pos.distance(f.position))
                        - (f.size as f64 * 0.03).min(1.0)
                        + 4.0 * repeats;
                    (cost, f)
                })
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, f)| f)
        });
        let (action, why) = match best {
            Some(f) => {
                self.empty_since_s = None;
                if self.current.is_none_or(|c| c.distance(f.position) >= 0.7) {
                    self.recent_goals.push(f.position);
                }
                self.current = Some(f.position);
                if self.recent_goals.len() > 6 {
                    self.recent_goals.remove(0);
                }
                (
                    ToolCall::parse(
                        "navigate_to_goal",
                        &json!({"goal_type": "frontier", "frontier_id": f.id, "reason": "nearest unexplored frontier"}),
                    ),
                    format!("frontier {} is the nearest unexplored area", f.id),
                )
            }
            None => {
                self.current = None;
                let since = *self.empty_since_s.get_or_insert(snap.elapsed_s);
                if snap.elapsed_s - since >= Self::CONFIRM_S {
                    (
                        ToolCall::parse("stop_robot", &json!({"reason": "exploration_complete"})),
                        "no frontier left".to_string(),
                    )
                } else {
                    (
                        ToolCall::parse("observe_scene", &json!({"focus": "general"})),
                        "no frontier in the map: holding still to look again".to_string(),
                    )
                }
            }
        };
        let mut decision = ExploreDecision::action(action.unwrap_or_else(|_| crate::protocol::explore::fallback()));
        decision.reports = reports;
        decision.reasoning = why;
        PlannerReply::offline(decision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::explore::ExploreFrontier;
    use nav_core::geometry::Pose2;
    use nav_core::lidar::LaserScan;

    fn snapshot(elapsed_s: f64, frontiers: Vec<ExploreFrontier>) -> ExploreSnapshot {
        ExploreSnapshot {
            pose: Pose2::new(0.0, 0.0, 0.0),
            speed_mps: 0.0,
            distance_traveled_m: 0.0,
            elapsed_s,
            coverage: None,
            scan: LaserScan::full_circle(360, 0.05, 12.0, 2.0),
            scan_age_s: 0.0,
            image: None,
            depth: None,
            hfov_rad: 1.5,
            previous_action: None,
            previous_result: None,
            in_progress: None,
            rejected: Vec::new(),
            memory_text: String::new(),
            frontiers,
            detections: Vec::new(),
            text_only: true,
            sensor_fault: None,
            instruction: None,
        }
    }

    fn frontier() -> ExploreFrontier {
        ExploreFrontier { id: 1, position: Point2::new(2.0, 0.0), path_cost_m: Some(2.0), size: 10 }
    }

    #[tokio::test]
    async fn an_empty_frontier_list_is_confirmed_before_exploration_ends() {
        let mut p = OfflineExplorePlanner::new();
        let tool = |d: &PlannerReply<ExploreDecision>| d.decision.action.name().to_string();
        // empty at 10 s: look again rather than stop
        let d = p.decide(&snapshot(10.0, Vec::new())).await;
        assert_eq!(tool(&d), "observe_scene");
        let d = p.decide(&snapshot(11.0, Vec::new())).await;
        assert_eq!(tool(&d), "observe_scene");
        // a frontier reappears: the wait starts over
        let d = p.decide(&snapshot(11.2, vec![frontier()])).await;
        assert_eq!(tool(&d), "navigate_to_goal");
        let d = p.decide(&snapshot(12.0, Vec::new())).await;
        assert_eq!(tool(&d), "observe_scene");
        // still empty CONFIRM_S later: complete
        let d = p.decide(&snapshot(12.0 + OfflineExplorePlanner::CONFIRM_S, Vec::new())).await;
        assert_eq!(d.decision.action.to_json(), json!({"reason": "exploration_complete"}));
        assert_eq!(tool(&d), "stop_robot");
    }
}
