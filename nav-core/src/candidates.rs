//! Candidate generation and scoring: the
//! VLM chooses among a handful of validated subgoals instead of inventing
//! coordinates.
//!
//! Candidate kinds and id prefixes: subgoal `c`, frontier `f`, recovery `r`,
//! waypoint `w`. The number in an id is the candidate's rank after scoring,
//! deduplication and truncation (`c1`, `f2`, `r3`, `w4`).
//!
//! Scoring: `score = 0.4·goal + 0.2·clearance + 0.25·novelty +
//! 0.15·feasibility`, with (all in `[0, 1]`):
//! - `goal` = `1 / (1 + d)`, `d` the candidate's distance to the goal in
//!   metres ("1/distance", kept finite at the goal); 0 without a
//!   goal;
//! - `clearance` = distance to the nearest obstacle in metres, capped at
//!   `clearance_cap_m` (1 m), as the weight assumes metres;
//! - `novelty` = fraction of unknown cells within 3 cells; for frontier
//!   candidates the larger of that and `size / 20` (frontiers also score
//!   by cluster size);
//! - `feasibility` = 1 when the cell is inside the grid and its clearance is
//!   positive, else 0; frontiers multiply it by `1 / (1 + 0.5·r)`, `r` the
//!   distance from the robot (frontiers also score by distance).

use crate::frontier::find_frontiers;
use crate::geometry::{Point2, Pose2};
use crate::grid::{GridPos, OccupancyGrid};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The kind of a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CandidateKind {
    /// A point on the straight line toward the goal, or the goal itself.
    Subgoal,
    /// The centroid of a frontier cluster.
    Frontier,
    /// A safe retreat position, generated when stuck.
    Recovery,
    /// A named topology waypoint.
    Waypoint,
}

impl CandidateKind {
    /// The id prefix.
    pub fn prefix(self) -> char {
        match self {
            CandidateKind::Subgoal => 'c',
            CandidateKind::Frontier => 'f',
            CandidateKind::Recovery => 'r',
            CandidateKind::Waypoint => 'w',
        }
    }

    /// The lowercase name printed in prompts.
    pub fn as_str(self) -> &'static str {
        match self {
            CandidateKind::Subgoal => "subgoal",
            CandidateKind::Frontier => "frontier",
            CandidateKind::Recovery => "recovery",
            CandidateKind::Waypoint => "waypoint",
        }
    }
}

/// The four factors of a candidate's score.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ScoreFactors {
    /// Proximity to the goal.
    pub goal: f64,
    /// Capped clearance in metres.
    pub clearance: f64,
    /// Unknown fraction / cluster size.
    pub novelty: f64,
    /// Reachability.
    pub feasibility: f64,
}

/// A scored subgoal the VLM may choose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// Id such as `c1` or `f2`.
    pub id: String,
    /// Kind of candidate.
    pub kind: CandidateKind,
    /// World position, metres.
    pub position: Point2,
    /// Weighted score.
    pub score: f64,
    /// The factors behind the score.
    pub factors: ScoreFactors,
    /// Short human-readable description.
    pub description: String,
}

impl Candidate {
    /// The prompt line: `c1 [subgoal] (0.50, 1.20) score=0.85 -- 1.0m toward goal`.
    pub fn to_prompt_line(&self) -> String {
        format!(
            "{} [{}] ({:.2}, {:.2}) score={:.2} -- {}",
            self.id,
            self.kind.as_str(),
            self.position.x,
            self.position.y,
            self.score,
            self.description
        )
    }
}

impl fmt::Display for Candidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_prompt_line())
    }
}

/// A named waypoint of a topology map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopologyWaypoint {
    /// Name of the waypoint.
    pub name: String,
    /// World position.
    pub position: Point2,
}

/// Weights and limits of candidate generation (defaults in parentheses).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CandidateConfig {
    /// Weight of goal proximity (0.4); [0, 1].
    pub w_goal: f64,
    /// Weight of clearance (0.2); [0, 1].
    pub w_clearance: f64,
    /// Weight of novelty (0.25); [0, 1].
    pub w_novelty: f64,
    /// Weight of feasibility (0.15); [0, 1].
    pub w_feasibility: f64,
    /// Spacing of subgoals along the goal line, metres (1.0); (0, 100].
    pub subgoal_spacing_m: f64,
    /// Subgoals along the goal line, not counting the goal (3); 0..=100.
    pub max_subgoals: usize,
    /// Frontier clusters considered (3); 0..=100.
    pub max_frontiers: usize,
    /// Outer radius of the recovery ring, metres (1.0); (0, 100].
    pub recovery_radius_m: f64,
    /// Inner radius of the recovery ring, cells (3); 0..=1000.
    pub recovery_inner_cells: i32,
    /// Minimum clearance of a recovery cell, metres (0.1); [0, 10].
    pub recovery_min_clearance_m: f64,
    /// Recovery candidates kept (2); 0..=100.
    pub max_recovery: usize,
    /// Candidates closer than this are deduplicated, metres (0.5); [0, 100].
    pub min_spacing_m: f64,
    /// Maximum number of candidates (5); 1..=100.
    pub max_candidates: usize,
    /// Radius of the novelty window, cells (3); 0..=100.
    pub novelty_radius_cells: i32,
    /// Clearance above this counts as this, metres (1.0); (0, 100].
    pub clearance_cap_m: f64,
}

impl Default for CandidateConfig {
    fn default() -> Self {
        Self {
            w_goal: 0.4,
            w_clearance: 0.2,
            w_novelty: 0.25,
            w_feasibility: 0.15,
            subgoal_spacing_m: 1.0,
            max_subgoals: 3,
            max_frontiers: 3,
            recovery_radius_m: 1.0,
            recovery_inner_cells: 3,
            recovery_min_clearance_m: 0.1,
            max_recovery: 2,
            min_spacing_m: 0.5,
            max_candidates: 5,
            novelty_radius_cells: 3,
            clearance_cap_m: 1.0,
        }
    }
}

impl CandidateConfig {
    /// Checks the ranges in the field docs; errors name the key.
    pub fn validate(&self) -> Result<(), crate::config::ConfigError> {
        use crate::config::{count_in, in_range, in_range_above};
        for (k, v) in [
            ("w_goal", self.w_goal),
            ("w_clearance", self.w_clearance),
            ("w_novelty", self.w_novelty),
            ("w_feasibility", self.w_feasibility),
        ] {
            in_range(k, v, 0.0, 1.0)?;
        }
        in_range_above("subgoal_spacing_m", self.subgoal_spacing_m, 0.0, 100.0)?;
        count_in("max_subgoals", self.max_subgoals, 0, 100)?;
        count_in("max_frontiers", self.max_frontiers, 0, 100)?;
        in_range_above("recovery_radius_m", self.recovery_radius_m, 0.0, 100.0)?;
        count_in("recovery_inner_cells", self.recovery_inner_cells, 0, 1000)?;
        in_range("recovery_min_clearance_m", self.recovery_min_clearance_m, 0.0, 10.0)?;
        count_in("max_recovery", self.max_recovery, 0, 100)?;
        in_range("min_spacing_m", self.min_spacing_m, 0.0, 100.0)?;
        count_in("max_candidates", self.max_candidates, 1, 100)?;
        count_in("novelty_radius_cells", self.novelty_radius_cells, 0, 100)?;
        in_range_above("clearance_cap_m", self.clearance_cap_m, 0.0, 100.0)
    }
}

impl CandidateConfig {
    /// The weighted score of a set of factors.
    pub fn score(&self, f: &ScoreFactors) -> f64 {
        self.w_goal * f.goal
            + self.w_clearance * f.clearance
            + self.w_novelty * f.novelty
            + self.w_feasibility * f.feasibility
    }
}

/// Everything candidate generation looks at.
#[derive(Debug, Clone, Copy)]
pub struct CandidateInput<'a> {
    /// The world model.
    pub grid: &'a OccupancyGrid,
    /// Precomputed [`OccupancyGrid::clearance_map`] of `grid`, if available.
    pub clearance: Option<&'a [f32]>,
    /// The robot's pose.
    pub robot: Pose2,
    /// The goal, if any (exploration has none).
    pub goal: Option<Point2>,
    /// Whether the stuck detector fired.
    pub stuck: bool,
    /// Topology waypoints, if a topology exists.
    pub waypoints: &'a [TopologyWaypoint],
    /// Which cells the local planner can reach from the robot (one flag per
    /// grid cell, row-major), if known: a candidate on any other cell is not
    /// offered, and a frontier cluster is represented by its reachable
    /// member nearest to its centroid (clusters with none are skipped).
    pub reachable: Option<&'a [bool]>,
}

/// Generates, scores, deduplicates and ranks candidates.
///
/// ```
/// use nav_core::candidates::{generate_candidates, CandidateConfig, CandidateInput};
/// use nav_core::grid::{OccupancyGrid, GridPos, CellState};
/// use nav_core::geometry::{Point2, Pose2};
/// let mut g = OccupancyGrid::new(50, 50, 0.1, Point2::new(-2.5, -2.5))?;
/// for i in 0..2500 { let p = g.pos_of(i); g.set(p, CellState::Free, 1.0); }
/// let input = CandidateInput {
///     grid: &g, clearance: None, robot: Pose2::new(-1.5, -1.5, 0.0),
///     goal: Some(Point2::new(1.5, 1.5)), stuck: false, waypoints: &[], reachable: None,
/// };
/// let cands = generate_candidates(&input, &CandidateConfig::default());
/// assert!(!cands.is_empty() && cands.len() <= 5);
/// assert_eq!(cands[0].id, "c1"); // the goal itself scores highest
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn generate_candidates(input: &CandidateInput<'_>, cfg: &CandidateConfig) -> Vec<Candidate> {
    let grid = input.grid;
    let owned;
    let clearance: &[f32] = match input.clearance {
        Some(c) if c.len() == grid.width() * grid.height() => c,
        _ => {
            owned = grid.clearance_map();
            &owned
        }
    };
    let clearance_at = |g: GridPos| grid.index(g).map(|i| clearance[i] as f64);
    let reachable = input.reachable.filter(|r| r.len() == grid.width() * grid.height());
    let can_reach = |g: GridPos| match reachable {
        Some(r) => grid.index(g).is_some_and(|i| r[i]),
        None => true,
    };
    let base_factors = |p: Point2| -> Option<ScoreFactors> {
        let g = grid.world_to_grid(p)?;
        if !can_reach(g) {
            return None;
        }
        let cl = clearance_at(g)?;
        let feasible = cl > 0.0 && !grid.state(g).is_blocking();
        Some(ScoreFactors {
            goal: input.goal.map_or(0.0, |goal| 1.0 / (1.0 + p.distance(goal))),
            clearance: if cl.is_finite() { cl.min(cfg.clearance_cap_m) } else { cfg.clearance_cap_m },
            novelty: grid.unknown_fraction_around(g, cfg.novelty_radius_cells),
            feasibility: if feasible { 1.0 } else { 0.0 },
        })
    };
    let mut all: Vec<Candidate> = Vec::new();
    let mut push = |kind: CandidateKind, position: Point2, factors: ScoreFactors, description: String| {
        all.push(Candidate { id: String::new(), kind, position, score: cfg.score(&factors), factors, description });
    };
    let robot = input.robot.position();

    // Goal-directed subgoals.
    if let Some(goal) = input.goal.filter(|g| g.is_finite()) {
        let dist = robot.distance(goal);
        if dist > 1e-9 && cfg.subgoal_spacing_m > 0.0 {
            let dir = (goal - robot).scale(1.0 / dist);
            for k in 1..=cfg.max_subgoals {
                let along = k as f64 * cfg.subgoal_spacing_m;
                if along >= dist - 1e-9 {
                    break;
                }
                let p = robot + dir.scale(along);
                if let Some(f) = base_factors(p) {
                    push(CandidateKind::Subgoal, p, f, format!("{along:.1}m toward goal"));
                }
            }
        }
        if let Some(f) = base_factors(goal) {
            push(CandidateKind::Subgoal, goal, f, "the goal".to_string());
        }
    }

    // Frontier cluster centroids (top clusters by size, reachable ones only when reachability is known).
    let mut frontiers = 0;
    for cluster in find_frontiers(grid) {
        if frontiers >= cfg.max_frontiers {
            break;
        }
        // snap the centroid onto a traversable (and reachable) member cell when needed
        let mut p = cluster.centroid;
        let usable = |g: GridPos| grid.state(g).is_traversable() && can_reach(g);
        if !grid.world_to_grid(p).is_some_and(usable) {
            let best = cluster.cells.iter().filter(|g| usable(**g)).min_by(|a, b| {
                grid.grid_to_world(**a).distance_sq(p).total_cmp(&grid.grid_to_world(**b).distance_sq(p))
            });
            match best {
                Some(best) => p = grid.grid_to_world(*best),
                None if reachable.is_some() => continue,
                None => {}
            }
        }
        if let Some(mut f) = base_factors(p) {
            f.novelty = f.novelty.max((cluster.size as f64 / 20.0).min(1.0));
            f.feasibility *= 1.0 / (1.0 + 0.5 * robot.distance(p));
            push(CandidateKind::Frontier, p, f, format!("explore unknown ({} frontier cells)", cluster.size));
            frontiers += 1;
        }
    }

    // Recovery ring when stuck.
    if input.stuck {
        let mut ring: Vec<(GridPos, f64, u32)> = Vec::new();
        let res = grid.resolution();
        let outer = (cfg.recovery_radius_m / res).round() as i32;
        let c = grid.world_to_grid_unchecked(robot);
        for dy in -outer..=outer {
            for dx in -outer..=outer {
                let d = f64::from(dx * dx + dy * dy).sqrt();
                if d < f64::from(cfg.recovery_inner_cells) || d > f64::from(outer) {
                    continue;
                }
                let g = GridPos::new(c.x + dx, c.y + dy);
                let Some(cell) = grid.get(g) else { continue };
                if !cell.state.is_traversable() || !can_reach(g) {
                    continue;
                }
                let Some(cl) = clearance_at(g) else { continue };
                if cl > cfg.recovery_min_clearance_m {
                    ring.push((g, cl, cell.visits));
                }
            }
        }
        ring.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)).then(a.0.cmp(&b.0)));
        let mut kept: Vec<Point2> = Vec::new();
        for (g, cl, _) in ring {
            if kept.len() >= cfg.max_recovery {
                break;
            }
            let p = grid.grid_to_world(g);
            // keep the recovery options apart so dedup does not merge them
            if kept.iter().any(|k| k.distance(p) < cfg.min_spacing_m) {
                continue;
            }
            kept.push(p);
            if let Some(f) = base_factors(p) {
                let clearance_text = if cl.is_finite() { format!("{cl:.1}m") } else { "open".to_string() };
                push(CandidateKind::Recovery, p, f, format!("retreat to open space (clearance {clearance_text})"));
            }
        }
    }

    // Topology waypoints.
    for wp in input.waypoints {
        if let Some(f) = base_factors(wp.position) {
            push(CandidateKind::Waypoint, wp.position, f, format!("waypoint {}", wp.name));
        }
    }

    rank(all, cfg)
}

/// Sorts by score (descending), drops any candidate within `min_spacing_m`
/// of a better one, truncates to `max_candidates` and assigns ids.
pub fn rank(mut all: Vec<Candidate>, cfg: &CandidateConfig) -> Vec<Candidate> {
    all.retain(|c| c.score.is_finite() && c.position.is_finite());
    all.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut out: Vec<Candidate> = Vec::with_capacity(cfg.max_candidates);
    for c in all {
        if out.len() >= cfg.max_candidates {
            break;
        }
        if out.iter().any(|k| k.position.distance(c.position) < cfg.min_spacing_m) {
            continue;
        }
        out.push(c);
    }
    for (i, c) in out.iter_mut().enumerate() {
        c.id = format!("{}{}", c.kind.prefix(), i + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::CellState;
    use proptest::prelude::*;

    fn free_grid() -> OccupancyGrid {
        let mut g = OccupancyGrid::new(50, 50, 0.1, Point2::new(-2.5, -2.5)).unwrap();
        for i in 0..2500 {
            let p = g.pos_of(i);
            g.set(p, CellState::Free, 1.0);
        }
        g
    }

    #[test]
    fn score_formula_hand_computed() {
        let cfg = CandidateConfig::default();
        let f = ScoreFactors { goal: 0.5, clearance: 0.8, novelty: 0.2, feasibility: 1.0 };
        // 0.4·0.5 + 0.2·0.8 + 0.25·0.2 + 0.15·1 = 0.2 + 0.16 + 0.05 + 0.15 = 0.56
        assert!((cfg.score(&f) - 0.56).abs() < 1e-12);
    }

    #[test]
    fn subgoals_every_metre_plus_goal() {
        let g = free_grid();
        let input = CandidateInput {
            grid: &g,
            clearance: None,
            robot: Pose2::new(-2.0, 0.0, 0.0),
            goal: Some(Point2::new(2.0, 0.0)),
            stuck: false,
            waypoints: &[],
            reachable: None,
        };
        let cands = generate_candidates(&input, &CandidateConfig { max_candidates: 10, ..CandidateConfig::default() });
        let subs: Vec<f64> = cands.iter().filter(|c| c.kind == CandidateKind::Subgoal).map(|c| c.position.x).collect();
        assert_eq!(subs.len(), 4, "{cands:?}");
        for x in [-1.0, 0.0, 1.0, 2.0] {
            assert!(subs.iter().any(|s| (s - x).abs() < 1e-9));
        }
        // no frontiers on a fully known grid
        assert!(cands.iter().all(|c| c.kind != CandidateKind::Frontier));
        // goal candidate: goal factor 1/(1+0) = 1; clearance none → cap 1.0; novelty 0; feasible
        let goal = cands.iter().find(|c| c.description == "the goal").unwrap();
        assert!((goal.score - (0.4 + 0.2 + 0.0 + 0.15)).abs() < 1e-9);
    }

    #[test]
    fn ids_follow_rank_and_kind() {
        let mut g = free_grid();
        for y in 0..50 {
            for x in 35..50 {
                g.set(GridPos::new(x, y), CellState::Unknown, 0.0);
            }
        }
        let input = CandidateInput {
            grid: &g,
            clearance: None,
            robot: Pose2::new(-2.0, 0.0, 0.0),
            goal: Some(Point2::new(-1.0, 1.5)),
            stuck: true,
            waypoints: &[TopologyWaypoint { name: "door".into(), position: Point2::new(0.0, -2.0) }],
            reachable: None,
        };
        let cands = generate_candidates(&input, &CandidateConfig::default());
        assert!(cands.len() <= 5);
        for (i, c) in cands.iter().enumerate() {
            assert_eq!(c.id, format!("{}{}", c.kind.prefix(), i + 1));
            if i > 0 {
                assert!(cands[i - 1].score >= c.score);
            }
        }
        assert!(cands.iter().any(|c| c.kind == CandidateKind::Frontier));
        assert!(cands[0].to_prompt_line().starts_with(&format!("{} [", cands[0].id)));
    }

    #[test]
    fn stuck_generates_recovery() {
        let g = free_grid();
        let input = CandidateInput {
            grid: &g,
            clearance: None,
            robot: Pose2::new(0.0, 0.0, 0.0),
            goal: None,
            stuck: true,
            waypoints: &[],
            reachable: None,
        };
        let cands = generate_candidates(&input, &CandidateConfig::default());
        let rec: Vec<_> = cands.iter().filter(|c| c.kind == CandidateKind::Recovery).collect();
        assert_eq!(rec.len(), 2);
        for r in rec {
            let d = r.position.distance(Point2::new(0.0, 0.0));
            assert!((0.25..=1.05).contains(&d), "{d}");
        }
    }

    proptest! {
        #[test]
        fn output_respects_count_and_spacing(
            cells in proptest::collection::vec(0u8..4, 2500),
            rx in -2.4f64..2.4, ry in -2.4f64..2.4, gx in -3.0f64..3.0, gy in -3.0f64..3.0,
            stuck in proptest::bool::ANY, has_goal in proptest::bool::ANY,
        ) {
            let mut g = OccupancyGrid::new(50, 50, 0.1, Point2::new(-2.5, -2.5)).unwrap();
            for (i, c) in cells.iter().enumerate() {
                let p = g.pos_of(i);
                let st = [CellState::Free, CellState::Unknown, CellState::Obstacle, CellState::Explored][*c as usize];
                g.set(p, st, 1.0);
            }
            let input = CandidateInput {
                grid: &g, clearance: None, robot: Pose2::new(rx, ry, 0.0),
                goal: has_goal.then_some(Point2::new(gx, gy)), stuck, waypoints: &[], reachable: None,
            };
            let cfg = CandidateConfig::default();
            let cands = generate_candidates(&input, &cfg);
            prop_assert!(cands.len() <= cfg.max_candidates);
            for i in 0..cands.len() {
                for j in i + 1..cands.len() {
                    prop_assert!(cands[i].position.distance(cands[j].position) >= cfg.min_spacing_m);
                }
                prop_assert!(cands[i].score.is_finite());
            }
        }
    }
}
