//! The map-based ObjectNav baseline ([`MapObjectNavPlanner`], `--planner
//! map`): not a stand-in for a VLM but a classic non-VLM planner beside the
//! frontier baseline. It keeps state between calls that no model request
//! carries — a metric map built from LiDAR and odometry, the objects seen
//! in earlier panoramas, the goals it chose — and sees the objects rendered
//! in each panorama's label buffers (a perfect detector: occlusion
//! respected, ranges from depth; never the arena's object list). It answers
//! as JSON text that goes through the protocol's real parser. A household
//! prior (which rooms hold which objects) guides it; [`VlmNoise`] makes it
//! miss targets, see false ones and err in angle.
//!
//! Decision rule, in order:
//! 1. the target is in the panorama within [`MapObjectNavConfig::sight_range_m`]
//!    → `goal_flag = true`, angle toward it (the perception stage and the
//!    low-level policy take it from there);
//! 2. (memory on) the target was seen before, or is in view but farther
//!    → head back along an A* path (`goal_flag = false`);
//! 3. otherwise choose a reachable frontier minimizing
//!    `path cost − semantic bonus − size bonus + revisit penalty`, where the
//!    semantic bonus rewards frontiers near objects that share a room type
//!    with the target, and head for a line-of-sight look-ahead point on the
//!    path (the distance goes to the low-level policy as a hint);
//! 4. nothing reachable → turn toward the most open direction.
//!
//! With memory off the map is rebuilt from the current scan at every call
//! and nothing is remembered between calls.
//!
//! The VLM stand-in that `nav run` uses by default is
//! [`crate::offline::OfflineObjectNavPlanner`]: it knows only what a
//! model's request carries.

use super::prior::SemanticPrior;
use super::vlm_noise::VlmNoise;
use crate::protocol::PlannerReply;
use crate::protocol::objectnav::{
    DiscoveredContext, ObjectNavDecision, ObjectNavObservation, ObjectNavPlanner, StepObservation, panorama_objects,
};
use async_trait::async_trait;
use nav_core::astar::{CostMap, distance_field_until};
use nav_core::geometry::{Point2, Pose2};
use nav_core::grid::GridPos;
use nav_core::lidar::{LaserScan, corridor_clearance_dir};
use nav_core::local_map::{LocalMap, LocalMapConfig, ReachableFrontier};
use nav_hal::hal::Detection;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Settings of [`MapObjectNavPlanner`], the map-based baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MapObjectNavConfig {
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
    /// The target counts as "visible" (`goal_flag`) only this close,
    /// metres: farther, the stand-in heads toward it without the flag.
    pub sight_range_m: f64,
    /// The noise model (none by default).
    pub noise: VlmNoise,
    /// The episode's seed, mixed into the noise.
    pub episode_seed: u64,
}

impl Default for MapObjectNavConfig {
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
            sight_range_m: 5.0,
            noise: VlmNoise::default(),
            episode_seed: 0,
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
pub struct MapObjectNavPlanner {
    config: MapObjectNavConfig,
    prior: SemanticPrior,
    map: LocalMap,
    sightings: Vec<Sighting>,
    recent_goals: Vec<Point2>,
    last_scan: Option<(Pose2, LaserScan)>,
    last_plan: Option<(Pose2, f64)>,
    stalls: u32,
    /// Headings (absolute, radians) already sent from the current stall spot.
    tried: Vec<f64>,
    rng: ChaCha8Rng,
}

/// Calls from the same spot after which the stand-in stops insisting on the
/// target or a path and backs off along the most open direction it has not
/// tried from there (what a model told "you keep asking from here" does).
const ESCAPE_AFTER_STALLS: u32 = 4;

impl MapObjectNavPlanner {
    /// A planner with the given settings; the map is centred on the start.
    pub fn new(config: MapObjectNavConfig) -> Result<Self, nav_core::CoreError> {
        let map = LocalMap::new(config.map.clone(), Point2::default())?;
        let rng = config.noise.rng(config.episode_seed);
        Ok(Self {
            rng,
            config,
            prior: SemanticPrior::household(),
            map,
            sightings: Vec::new(),
            recent_goals: Vec::new(),
            last_scan: None,
            last_plan: None,
            stalls: 0,
            tried: Vec::new(),
        })
    }

    fn remember(&mut self, pose: Pose2, detections: &[Detection]) {
        for d in detections {
            if !(d.distance_m.is_finite() && d.bearing_rad.is_finite()) {
                continue;
            }
            let a = pose.yaw + d.bearing_rad;
            // detections measure to the surface: place the sighting a little beyond it
            let r = d.distance_m + 0.3;
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

    /// Chooses the move the low-level policy will actually make: one of the
    /// twelve 30° headings (turns are quantized) and a straight run of
    /// forward steps that stays in free, reachable cells and in the LiDAR's
    /// free corridor, minimizing the remaining path cost to the goal cells.
    /// Returns `(angle in degrees, distance)` or `None` when no heading makes
    /// progress.
    fn steer(&self, pose: Pose2, costs: &CostMap, goals: &[GridPos], scan: Option<&LaserScan>) -> Option<(f64, f64)> {
        let here = pose.position();
        let r = costs.resolution();
        // (row-major index, passable) of the cell under a point
        let cell = |p: Point2| {
            let g = costs.world_to_grid(p);
            costs.contains(g).then(|| ((g.y as usize) * costs.width() + g.x as usize, costs.cost(g).is_finite()))
        };
        let ring_points = || {
            (1..=4).flat_map(move |k| {
                (0..8).map(move |a| {
                    let ang = f64::from(a) * std::f64::consts::FRAC_PI_4;
                    here + Point2::new(ang.cos(), ang.sin()) * (f64::from(k) * r)
                })
            })
        };
        // Only cells cheaper than where the robot stands can be progress, so
        // the flood from the goal stops once it has passed that value: the
        // robot's own cell's, or (the robot in the inflated band) the first
        // of the surrounding ring's cells to become final, the ring's best.
        let own = cell(here).filter(|c| c.1).map(|c| c.0);
        let ring: Vec<usize> =
            if own.is_some() { Vec::new() } else { ring_points().filter_map(cell).map(|c| c.0).collect() };
        let mut stop_above = f64::INFINITY;
        let mut stopped = false;
        let field = distance_field_until(costs, goals, |i, d| {
            if stop_above.is_infinite() && (own == Some(i) || ring.contains(&i)) {
                stop_above = d;
            }
            stopped = d > stop_above;
            stopped
        });
        let raw = |p: Point2| cell(p).map_or(f64::INFINITY, |(i, _)| field[i]);
        // After an early stop a passable cell without a value costs more than
        // the robot's own: not progress, but not a wall either (a ray goes on).
        let value = |p: Point2| match cell(p) {
            Some((i, _)) if field[i].is_finite() => field[i],
            Some((_, true)) if stopped => f64::MAX,
            _ => f64::INFINITY,
        };
        let mut here_val = raw(here);
        if !here_val.is_finite() {
            here_val = ring_points().map(raw).fold(f64::INFINITY, f64::min);
        }
        if !here_val.is_finite() {
            return None;
        }
        let step = 0.25;
        let mut best: Option<(f64, f64, f64)> = None; // (score, angle_rad, distance)
        for k in -5i32..=6 {
            let rel = f64::from(k) * 30f64.to_radians();
            let heading = pose.yaw + rel;
            let free = scan.map_or(f64::INFINITY, |s| f64::from(corridor_clearance_dir(s, rel, 0.22)));
            for n in 1..=8u32 {
                let d = f64::from(n) * step;
                if d + 0.05 > free {
                    break;
                }
                let p = here + Point2::new(heading.cos(), heading.sin()) * d;
                let v = value(p);
                if !v.is_finite() {
                    break;
                }
                // a small price per 30° of turning: straight runs are preferred when equal
                let score = v * r + 0.05 * f64::from(k.abs());
                if best.is_none_or(|(b, _, _)| score < b) {
                    best = Some((score, rel, d));
                }
            }
        }
        let (score, rel, d) = best?;
        (score < here_val * r - 0.05).then(|| (rel.to_degrees(), d))
    }

    /// The most open direction of the scan, every 30°, at least 45° away
    /// from every heading already tried from this spot: `(angle relative
    /// to the robot in degrees, distance hint)`, or `None` when nothing is
    /// open for at least a step and a half.
    fn escape(&self, pose: Pose2, scan: Option<&LaserScan>) -> Option<(f64, f64)> {
        let scan = scan?;
        let half_width = self.config.map.inflation_m.max(0.1);
        (0..12)
            .map(|k| f64::from(k - 6) * 30f64.to_radians())
            .filter(|rel| {
                let a = pose.yaw + rel;
                self.tried.iter().all(|t| nav_core::geometry::angle_diff_abs(*t, a) >= 45f64.to_radians())
            })
            .map(|rel| (rel, f64::from(corridor_clearance_dir(scan, rel, half_width))))
            .filter(|(_, free)| *free >= 0.4)
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(rel, free)| (rel.to_degrees(), (free - 0.1).min(1.5)))
    }

    /// Heads for the reachable cell nearest to `to` (an object's centre is
    /// not itself reachable) from which `to` is in plain view — never a cell
    /// on the far side of a wall.
    fn head_near(&mut self, pose: Pose2, to: Point2, scan: Option<&LaserScan>) -> Option<(f64, f64)> {
        let costs = self.map.costmap();
        let g = self.map.grid();
        let r = (1.2 / g.resolution()).ceil() as i32;
        let c = g.world_to_grid_unchecked(to);
        let sees = |from: Point2| {
            let d = from.distance(to);
            let n = (d / (g.resolution() * 0.5)).ceil().max(1.0) as usize;
            (0..=n).all(|k| {
                let p = from + (to - from) * (k as f64 / n as f64);
                p.distance(to) < 0.45 || g.world_to_grid(p).is_none_or(|cell| !g.state(cell).is_blocking())
            })
        };
        let mut goals: Vec<GridPos> = Vec::new();
        for dy in -r..=r {
            for dx in -r..=r {
                let cell = GridPos::new(c.x + dx, c.y + dy);
                let p = g.grid_to_world(cell);
                if costs.cost(cell).is_finite() && p.distance(to) <= 1.1 && sees(p) {
                    goals.push(cell);
                }
            }
        }
        if goals.is_empty() {
            return None;
        }
        if goals.iter().any(|cell| g.grid_to_world(*cell).distance(pose.position()) < 0.15) {
            // already next to it: face the target
            return Some((pose.relative_bearing(to).to_degrees(), 0.0));
        }
        self.steer(pose, &costs, &goals, scan)
    }

    fn most_open_direction(scan: Option<&LaserScan>) -> f64 {
        let Some(scan) = scan else { return 180.0 };
        // the 30° direction with the longest free corridor for the robot's width
        (0..12)
            .map(|k| {
                let a = nav_core::geometry::normalize_angle((k as f64 * 30.0).to_radians());
                (a, nav_core::lidar::corridor_clearance_dir(scan, a, 0.22))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map_or(180.0, |(a, _)| a.to_degrees())
    }
}

#[async_trait]
impl ObjectNavPlanner for MapObjectNavPlanner {
    fn name(&self) -> String {
        if self.config.memory { "map".to_string() } else { "map(memory off)".to_string() }
    }

    fn observe(&mut self, step: &StepObservation<'_>) {
        if let Some(scan) = step.scan {
            if self.config.memory {
                self.map.integrate(step.pose, scan);
            }
            self.last_scan = Some((step.pose, scan.clone()));
        }
    }

    /// Decides, adds the noise, writes the reply as JSON text and parses
    /// it with the protocol's own parser (so the loop receives exactly what
    /// a model's reply would give it).
    async fn plan(&mut self, obs: &ObjectNavObservation<'_>) -> PlannerReply<ObjectNavDecision> {
        let mut reply = self.plan_inner(obs);
        if !reply.decision.goal_flag && self.rng.random::<f64>() < self.config.noise.false_sighting {
            // a false sighting: the target "seen" in a random view
            let k = self.rng.random_range(0..12) as f64;
            reply.decision.goal_flag = true;
            reply.decision.angle = nav_core::geometry::normalize_angle((k * 30.0).to_radians()).to_degrees();
            reply.decision.discovered_context.why = format!("the {} is visible (a false sighting)", obs.target);
            reply.distance_hint_m = None;
        }
        let err = self.config.noise.angle_error(&mut self.rng);
        if err != 0.0 {
            reply.decision.angle =
                nav_core::geometry::normalize_angle((reply.decision.angle + err).to_radians()).to_degrees();
        }
        reply.decision.angle = (reply.decision.angle * 10.0).round() / 10.0;
        let text = serde_json::to_string_pretty(&reply.decision).unwrap_or_default();
        let (decision, record) = ObjectNavDecision::from_reply_text(text);
        self.last_plan = Some((obs.pose, decision.angle));
        PlannerReply { decision, distance_hint_m: reply.distance_hint_m, record }
    }
}

impl MapObjectNavPlanner {
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
                self.stalls += 1;
                // at most a few marks per spot, never on cells the robot has stood on
                if self.stalls <= 3 {
                    let a = p.yaw + angle.to_radians();
                    for d in [0.35, 0.45] {
                        let q = Point2::new(p.x + d * a.cos(), p.y + d * a.sin());
                        if let Some(g) = self.map.grid().world_to_grid(q) {
                            let st = self.map.grid().state(g);
                            if st == nav_core::grid::CellState::Free || st == nav_core::grid::CellState::Unknown {
                                self.map.grid_mut().set(g, nav_core::grid::CellState::Obstacle, 0.95);
                            }
                        }
                    }
                }
                self.tried.push(p.yaw + angle.to_radians());
            } else {
                self.stalls = 0;
                self.tried.clear();
            }
        }
        if self.stalls >= ESCAPE_AFTER_STALLS {
            if let Some((angle, dist)) = self.escape(pose, obs.scan) {
                let why = "every way from here was blocked; backing off to the most open side".to_string();
                let mut reply = PlannerReply::offline(self.decision(false, angle, &room, why));
                reply.distance_hint_m = Some(dist);
                return reply;
            }
        }
        // what a model sees in this panorama (minus what the noise makes it miss)
        let mut seen = obs.panorama.map(panorama_objects).unwrap_or_default();
        if seen.iter().any(|d| d.label == target) && self.rng.random::<f64>() < self.config.noise.miss {
            seen.retain(|d| d.label != target);
        }
        if self.config.remember_sightings {
            self.remember(pose, &seen);
        }

        // 1. the target is in view: point at it
        if let Some(t) = seen
            .iter()
            .filter(|d| d.label == target && d.distance_m <= self.config.sight_range_m)
            .min_by(|a, b| a.distance_m.total_cmp(&b.distance_m))
        {
            // asked again and again from the same spot: the approach is blocked; route around to a
            // free cell next to it first (the flag comes back once the robot has moved)
            if self.stalls >= 2 {
                let a = pose.yaw + t.bearing_rad;
                let r = t.distance_m + 0.3;
                let at = Point2::new(pose.x + r * a.cos(), pose.y + r * a.sin());
                if let Some((angle, dist)) = self.head_near(pose, at, obs.scan).filter(|(_, d)| *d > 0.0) {
                    let why =
                        format!("the {target} is {:.1} m away but the way is blocked; going around", t.distance_m);
                    let mut reply = PlannerReply::offline(self.decision(false, angle, &room, why));
                    reply.distance_hint_m = Some(dist);
                    return reply;
                }
            }
            let why = format!("the {target} is visible {:.1} m away", t.distance_m);
            return PlannerReply::offline(self.decision(true, t.bearing_rad.to_degrees(), &room, why));
        }
        // 2. seen before. A remembered sighting the robot now stands next to without seeing it was
        // misplaced (seen past a wall corner, say): forget it.
        let here = pose.position();
        self.sightings.retain(|s| s.label != target || s.at.distance(here) > 1.2);
        // (with memory off the sightings are this panorama's only)
        {
            if let Some(s) = self
                .sightings
                .iter()
                .filter(|s| s.label == target)
                .min_by(|a, b| a.at.distance(pose.position()).total_cmp(&b.at.distance(pose.position())))
                .cloned()
            {
                if let Some((angle, dist)) = self.head_near(pose, s.at, obs.scan) {
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
        let choices: Vec<(Point2, Vec<GridPos>)> =
            ranked.iter().map(|(_, f)| (f.entry, f.cluster.cells.clone())).collect();
        for (entry, cells) in choices.into_iter().take(4) {
            if let Some((angle, dist)) = self.steer(pose, &costs, &cells, obs.scan) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_takes_the_most_open_untried_direction() {
        let mut p = MapObjectNavPlanner::new(MapObjectNavConfig::default()).expect("planner");
        // walls 0.6 m away all around, except openings: 3 m free to the left (+90°), 2 m behind
        let mut scan = LaserScan::full_circle(360, 0.05, 12.0, 0.6);
        for (deg, r) in [(90i32, 3.0f32), (180, 2.0)] {
            for k in -35..=35 {
                let i = ((deg + k + 180).rem_euclid(360)) as usize;
                scan.ranges[i] = r;
            }
        }
        let pose = Pose2::origin();
        let (angle, dist) = p.escape(pose, Some(&scan)).expect("an open side");
        assert!((angle - 90.0).abs() < 1e-9 && (dist - 1.5).abs() < 1e-9, "{angle} {dist}");
        // once the left was tried from here, the next most open side
        p.tried.push(90f64.to_radians());
        let (angle, _) = p.escape(pose, Some(&scan)).expect("the way back");
        assert!((angle.abs() - 180.0).abs() < 1e-9, "{angle}");
        // everything open tried: nothing left
        p.tried.push(180f64.to_radians());
        assert_eq!(p.escape(pose, Some(&scan)), None);
    }
}
