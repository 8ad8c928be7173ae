//! The offline objectnav planner: the simulator's ground-truth detections
//! stand in for a VLM's eyes, a household prior (which rooms hold which
//! objects) stands in for its common sense, and — with memory on — a metric
//! map built from LiDAR and odometry, remembered sightings and the DC
//! queue's avoid hints stand in for its memory.
//!
//! Decision rule, in order:
//! 1. the target is in view → `goal_flag = true`, angle toward it;
//! 2. (memory on) the target was seen before → head back along an A* path;
//! 3. otherwise choose a reachable frontier minimizing
//!    `path cost − semantic bonus − size bonus + revisit penalty`, where the
//!    semantic bonus rewards frontiers near objects that share a room type
//!    with the target, and head for a line-of-sight look-ahead point on the
//!    path (the distance goes to the low-level policy as a hint);
//! 4. nothing reachable → turn toward the most open direction.
//!
//! With memory off the map is rebuilt from the current scan at every call
//! and nothing is remembered between calls — the baseline that the seed's
//! memory is meant to beat.

use super::prior::SemanticPrior;
use crate::mapping::{LocalMap, LocalMapConfig, ReachableFrontier};
use crate::protocol::PlannerReply;
use crate::protocol::objectnav::{
    DiscoveredContext, ObjectNavDecision, ObjectNavObservation, ObjectNavPlanner, StepObservation,
};
use async_trait::async_trait;
use nav_core::geometry::{Point2, Pose2};
use nav_core::lidar::{ArcStat, LaserScan, arc_distance};
use nav_hal::hal::Detection;
use serde::{Deserialize, Serialize};

/// Settings of [`OfflineObjectNavPlanner`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OfflineObjectNavConfig {
    /// Use memory (map, sightings, avoid hints) between calls.
    pub memory: bool,
    /// The metric map.
    pub map: LocalMapConfig,
    /// Look-ahead along the path, metres.
    pub lookahead_m: f64,
    /// Bonus (metres of path) for a frontier next to an object that shares
    /// the target's room type, scaled by the prior's affinity.
    pub semantic_bonus_m: f64,
    /// Penalty (metres) for a frontier near a room of another type.
    pub other_room_penalty_m: f64,
    /// Bonus per frontier cell, metres (bigger openings first), capped.
    pub size_bonus_m_per_cell: f64,
    /// Penalty (metres) for frontiers near goals chosen repeatedly.
    pub revisit_penalty_m: f64,
    /// Objects within this distance of a frontier count for it, metres.
    pub semantic_radius_m: f64,
    /// Remember where objects were seen (and return to a seen target).
    pub remember_sightings: bool,
}

impl Default for OfflineObjectNavConfig {
    fn default() -> Self {
        Self {
            memory: true,
            map: LocalMapConfig::default(),
            lookahead_m: 2.0,
            semantic_bonus_m: 4.0,
            other_room_penalty_m: 1.5,
            size_bonus_m_per_cell: 0.05,
            revisit_penalty_m: 3.0,
            semantic_radius_m: 3.0,
            remember_sightings: true,
        }
    }
}

/// An object seen at a world position (odometry frame).
#[derive(Debug, Clone, PartialEq)]
struct Sighting {
    label: String,
    at: Point2,
}

/// See the module docs.
#[derive(Debug, Clone)]
pub struct OfflineObjectNavPlanner {
    config: OfflineObjectNavConfig,
    prior: SemanticPrior,
    map: LocalMap,
    sightings: Vec<Sighting>,
    recent_goals: Vec<Point2>,
    last_scan: Option<(Pose2, LaserScan)>,
    last_plan: Option<(Pose2, f64)>,
}

impl OfflineObjectNavPlanner {
    /// A planner with the given settings; the map is centred on the start.
    pub fn new(config: OfflineObjectNavConfig) -> Result<Self, nav_core::CoreError> {
        let map = LocalMap::new(config.map.clone(), Point2::default())?;
        Ok(Self {
            config,
            prior: SemanticPrior::household(),
            map,
            sightings: Vec::new(),
            recent_goals: Vec::new(),
            last_scan: None,
            last_plan: None,
        })
    }

    fn remember(&mut self, pose: Pose2, detections: &[Detection]) {
        for d in detections {
            if !(d.distance_m.is_finite() && d.bearing_rad.is_finite()) {
                continue;
            }
            let a = pose.yaw + d.bearing_rad;
            // detections measure to the surface: place the sighting a little beyond it
            let r = d.distance_m + 0.2;
            let at = Point2::new(pose.x + r * a.cos(), pose.y + r * a.sin());
            if let Some(s) = self.sightings.iter_mut().find(|s| s.label == d.label && s.at.distance(at) < 1.0) {
                s.at = at;
            } else {
                self.sightings.push(Sighting { label: d.label.clone(), at });
            }
        }
    }

    fn frontier_score(&self, f: &ReachableFrontier, target: &str) -> f64 {
        let c = &self.config;
        let mut score = f.cost_m;
        let mut bonus: f64 = 0.0;
        let mut other: f64 = 0.0;
        for s in &self.sightings {
            if s.at.distance(f.cluster.centroid) > c.semantic_radius_m {
                continue;
            }
            let aff = self.prior.affinity(&s.label, target);
            if aff > 0.0 {
                bonus = bonus.max(aff);
            } else if !self.prior.rooms_for(&s.label).is_empty() {
                other += 1.0;
            }
        }
        score -= c.semantic_bonus_m * bonus;
        if bonus == 0.0 && other > 0.0 {
            score += c.other_room_penalty_m;
        }
        score -= (f.cluster.size as f64 * c.size_bonus_m_per_cell).min(1.5);
        let repeats = self.recent_goals.iter().filter(|g| g.distance(f.entry) < 1.5).count();
        if repeats >= 2 {
            score += c.revisit_penalty_m * (repeats - 1) as f64;
        }
        score
    }

    fn decision(&self, goal_flag: bool, angle_deg: f64, scene: &str, why: String) -> ObjectNavDecision {
        ObjectNavDecision {
            goal_flag,
            angle: angle_deg.clamp(-180.0, 180.0),
            discovered_context: DiscoveredContext { goal_scene_type: scene.to_string(), why },
        }
    }

    /// Heads along an A* path to `to`; returns (angle, distance) or None.
    fn head_for(&mut self, pose: Pose2, to: Point2) -> Option<(f64, f64)> {
        let costs = self.map.costmap();
        let path = self.map.plan(&costs, pose.position(), to);
        if !path.success {
            return None;
        }
        let la = LocalMap::lookahead(&costs, pose.position(), &path, self.config.lookahead_m)?;
        let d = pose.position().distance(la);
        (d > 0.05).then(|| (pose.relative_bearing(la).to_degrees(), d))
    }

    /// Heads for the reachable cell nearest to `to` (an object's centre is
    /// not itself reachable).
    fn head_near(&mut self, pose: Pose2, to: Point2) -> Option<(f64, f64)> {
        let costs = self.map.costmap();
        let field = nav_core::astar::distance_field(&costs, costs.world_to_grid(pose.position()));
        let g = self.map.grid();
        let r = (1.2 / g.resolution()).ceil() as i32;
        let c = g.world_to_grid_unchecked(to);
        let mut best: Option<(Point2, f64)> = None;
        for dy in -r..=r {
            for dx in -r..=r {
                let cell = nav_core::grid::GridPos::new(c.x + dx, c.y + dy);
                let Some(i) = g.index(cell) else { continue };
                if !field[i].is_finite() {
                    continue;
                }
                let p = g.grid_to_world(cell);
                let d = p.distance(to);
                if d <= 1.1 && best.is_none_or(|(_, bd)| d < bd) {
                    best = Some((p, d));
                }
            }
        }
        best.and_then(|(p, _)| self.head_for(pose, p))
    }

    fn most_open_direction(scan: Option<&LaserScan>) -> f64 {
        let Some(scan) = scan else { return 180.0 };
        (0..12)
            .map(|k| {
                let a = nav_core::geometry::normalize_angle((k as f64 * 30.0).to_radians());
                (a, arc_distance(scan, a, 15f64.to_radians(), ArcStat::Percentile(0.1)))
            })
            .filter(|(a, _)| a.abs() > 0.3) // something other than straight on
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map_or(180.0, |(a, _)| a.to_degrees())
    }
}

#[async_trait]
impl ObjectNavPlanner for OfflineObjectNavPlanner {
    fn name(&self) -> String {
        if self.config.memory { "offline".to_string() } else { "offline(memory off)".to_string() }
    }

    fn observe(&mut self, step: &StepObservation<'_>) {
        if let Some(scan) = step.scan {
            if self.config.memory {
                self.map.integrate(step.pose, scan);
            }
            self.last_scan = Some((step.pose, scan.clone()));
        }
        if self.config.memory && self.config.remember_sightings {
            self.remember(step.pose, step.detections);
        }
    }

    async fn plan(&mut self, obs: &ObjectNavObservation<'_>) -> PlannerReply<ObjectNavDecision> {
        let reply = self.plan_inner(obs);
        self.last_plan = Some((obs.pose, reply.decision.angle));
        reply
    }
}

impl OfflineObjectNavPlanner {
    fn plan_inner(&mut self, obs: &ObjectNavObservation<'_>) -> PlannerReply<ObjectNavDecision> {
        let pose = obs.pose;
        let target = obs.target.to_string();
        let room = self.prior.likely_room(&target).unwrap_or("room").to_string();
        if !self.config.memory {
            self.map.clear();
            self.sightings.clear();
            self.recent_goals.clear();
        }
        if let Some(scan) = obs.scan {
            self.map.integrate(pose, scan);
        } else if let Some((p, s)) = self.last_scan.clone() {
            self.map.integrate(p, &s);
        }
        // asked again without having moved: the way we sent the robot is blocked in practice
        // (narrower than the map shows); mark it so the next path goes elsewhere
        if let Some((p, angle)) = self.last_plan {
            if p.distance(pose) < 0.05 {
                let a = p.yaw + angle.to_radians();
                for d in [0.3, 0.4] {
                    let q = Point2::new(p.x + d * a.cos(), p.y + d * a.sin());
                    if let Some(g) = self.map.grid().world_to_grid(q) {
                        self.map.grid_mut().set(g, nav_core::grid::CellState::Obstacle, 0.95);
                    }
                }
            }
        }
        if self.config.remember_sightings {
            self.remember(pose, obs.detections);
        }

        // 1. the target is in view: straight at it when the way is open, else along a path around
        if let Some(t) =
            obs.detections.iter().filter(|d| d.label == target).min_by(|a, b| a.distance_m.total_cmp(&b.distance_m))
        {
            let why = format!("the {target} is visible {:.1} m away", t.distance_m);
            let open = obs.scan.is_none_or(|scan| {
                f64::from(nav_core::lidar::corridor_clearance_dir(scan, t.bearing_rad, 0.22))
                    >= (t.distance_m - 0.8).max(0.3)
            });
            let a = pose.yaw + t.bearing_rad;
            let at = Point2::new(pose.x + (t.distance_m + 0.3) * a.cos(), pose.y + (t.distance_m + 0.3) * a.sin());
            // close and open: straight at it; otherwise along an A* path to a free cell next to it
            let (angle, dist) = if open && t.distance_m <= 1.5 {
                (t.bearing_rad.to_degrees(), t.distance_m)
            } else {
                self.head_near(pose, at).unwrap_or((t.bearing_rad.to_degrees(), t.distance_m))
            };
            let mut reply = PlannerReply::offline(self.decision(true, angle, &room, why));
            reply.distance_hint_m = Some(dist);
            return reply;
        }
        // 2. seen before
        if self.config.memory {
            if let Some(s) = self
                .sightings
                .iter()
                .filter(|s| s.label == target)
                .min_by(|a, b| a.at.distance(pose.position()).total_cmp(&b.at.distance(pose.position())))
                .cloned()
            {
                if let Some((angle, dist)) = self.head_for(pose, s.at) {
                    let why = format!("returning to where the {target} was seen");
                    let mut reply = PlannerReply::offline(self.decision(false, angle, &room, why));
                    reply.distance_hint_m = Some(dist);
                    return reply;
                }
            }
        }
        // 3. the best reachable frontier
        let costs = self.map.costmap();
        let frontiers = self.map.reachable_frontiers(&costs, pose.position());
        let mut ranked: Vec<(f64, &ReachableFrontier)> =
            frontiers.iter().map(|f| (self.frontier_score(f, &target), f)).collect();
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
        let choices: Vec<Point2> = ranked.iter().map(|(_, f)| f.entry).collect();
        for entry in choices.into_iter().take(4) {
            if let Some((angle, dist)) = self.head_for(pose, entry) {
                let near_related = self
                    .sightings
                    .iter()
                    .filter(|s| s.at.distance(entry) < self.config.semantic_radius_m)
                    .find(|s| self.prior.affinity(&s.label, &target) > 0.0)
                    .map(|s| s.label.clone());
                let why = match near_related {
                    Some(l) => format!("unexplored space near the {l}, where a {target} is likely"),
                    None => format!("nearest unexplored opening, looking for the {room}"),
                };
                if self.config.memory {
                    self.recent_goals.push(entry);
                    if self.recent_goals.len() > 8 {
                        self.recent_goals.remove(0);
                    }
                }
                let mut reply = PlannerReply::offline(self.decision(false, angle, &room, why));
                reply.distance_hint_m = Some(dist);
                return reply;
            }
        }
        // 4. nothing reachable: turn toward the most open direction
        let angle = Self::most_open_direction(obs.scan);
        PlannerReply::offline(self.decision(
            false,
            angle,
            "corridor",
            "no reachable frontier; turning to open space".into(),
        ))
    }
}
