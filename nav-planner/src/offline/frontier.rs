//! Classic frontier exploration: always head for the reachable frontier
//! with the cheapest path, no semantics. As an objectnav planner it is the
//! evaluation baseline (it stops when the target comes into view); its
//! [`FrontierPlanner::next_goal`] drives the explore loop's LOCAL_NAV tier.

use super::map_planner::{MapObjectNavConfig, MapObjectNavPlanner};
use crate::protocol::PlannerReply;
use crate::protocol::objectnav::{ObjectNavDecision, ObjectNavObservation, ObjectNavPlanner, StepObservation};
use async_trait::async_trait;
use nav_core::geometry::{Point2, Pose2};
use nav_core::local_map::LocalMap;

/// See the module docs.
#[derive(Debug, Clone)]
pub struct FrontierPlanner {
    inner: MapObjectNavPlanner,
}

impl FrontierPlanner {
    /// The nearest-frontier planner with the given map settings.
    pub fn new(map: nav_core::local_map::LocalMapConfig) -> Result<Self, nav_core::CoreError> {
        let config = MapObjectNavConfig {
            memory: true,
            map,
            semantic_bonus_m: 0.0,
            other_room_penalty_m: 0.0,
            size_bonus_m_per_cell: 0.0,
            revisit_penalty_m: 0.0,
            remember_sightings: false,
            ..MapObjectNavConfig::default()
        };
        Ok(Self { inner: MapObjectNavPlanner::new(config)? })
    }

    /// The nearest reachable frontier entry point of `map` from `pose`.
    pub fn next_goal(map: &LocalMap, pose: Pose2) -> Option<Point2> {
        let costs = map.costmap();
        map.reachable_frontiers(&costs, pose.position()).first().map(|f| f.entry)
    }
}

#[async_trait]
impl ObjectNavPlanner for FrontierPlanner {
    fn name(&self) -> String {
        "frontier".to_string()
    }

    fn observe(&mut self, step: &StepObservation<'_>) {
        self.inner.observe(step);
    }

    async fn plan(&mut self, obs: &ObjectNavObservation<'_>) -> PlannerReply<ObjectNavDecision> {
        let mut reply = self.inner.plan(obs).await;
        if !reply.decision.goal_flag {
            reply.decision.discovered_context.goal_scene_type = "frontier".to_string();
            reply.decision.discovered_context.why = "nearest frontier".to_string();
        }
        reply
    }
}
