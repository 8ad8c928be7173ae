//! The A* local planner: a cost map from the occupancy grid
//! (obstacles impassable, unknown cells expensive, one cell of inflation),
//! 8-connected search with the octile heuristic, a planning-time budget and
//! down-sampling to waypoints.
//!
//! ```
//! use nav_core::astar::{CostMap, CostMapConfig, GridPlanner, PlannerConfig};
//! use nav_core::grid::{OccupancyGrid, GridPos, CellState};
//! use nav_core::geometry::Point2;
//! use nav_core::time::FrozenClock;
//!
//! let mut grid = OccupancyGrid::new(20, 20, 0.1, Point2::new(0.0, 0.0))?;
//! for y in 0..15 { grid.set(GridPos::new(10, y), CellState::Wall, 1.0); }
//! let costs = CostMap::from_grid(&grid, &CostMapConfig::ground_truth());
//! let mut planner = GridPlanner::new(PlannerConfig::default());
//! let path = planner.plan(&costs, GridPos::new(2, 2), GridPos::new(18, 2), &FrozenClock);
//! assert!(path.success);
//! assert_eq!(path.waypoints.first().map(|w| (w.gx, w.gy)), Some((2, 2)));
//! assert_eq!(path.waypoints.last().map(|w| (w.gx, w.gy)), Some((18, 2)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Files: this module holds the cost map, the settings and the result
//! types; `planner` the A* search ([`GridPlanner`]), `open_list` its radix
//! heap, `field` the Dijkstra distance fields ([`distance_field`] and
//! friends).

mod field;
mod open_list;
mod planner;
#[cfg(test)]
mod tests;

pub use field::{distance_field, distance_field_from, distance_field_until};
pub use planner::GridPlanner;

use crate::geometry::Point2;
use crate::grid::{CellState, GridPos, OccupancyGrid};
use crate::time::Clock;
use serde::{Deserialize, Serialize, Serializer};
use std::f64::consts::SQRT_2;

/// How the cost map is derived from the grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CostMapConfig {
    /// Cost of an unknown cell: 5 in ground-truth mode, 50 in vision mode.
    pub unknown_cost: f32,
    /// Cells within this many cells (Chebyshev) of an obstacle are inflated.
    pub inflation_cells: u32,
    /// Near-obstacle multiplier of the inflation formula (2.0).
    pub near_obstacle_multiplier: f32,
    /// Cells whose centre is closer than this to an obstacle cell centre
    /// are impassable (hard inflation by the robot's radius). 0 = off, the
    /// LLMos planner's behaviour.
    pub robot_radius_m: f64,
}

impl Default for CostMapConfig {
    fn default() -> Self {
        Self::ground_truth()
    }
}

impl CostMapConfig {
    /// Ground-truth mode: unknown cost 5.
    pub fn ground_truth() -> Self {
        Self { unknown_cost: 5.0, inflation_cells: 1, near_obstacle_multiplier: 2.0, robot_radius_m: 0.0 }
    }

    /// Vision mode: unknown cost 50.
    pub fn vision() -> Self {
        Self { unknown_cost: 50.0, ..Self::ground_truth() }
    }

    /// Inflated cost at distance `d` (cells) from an obstacle:
    /// `1 + (m − 1)·(1 − d / (inflation + 1))`.
    pub fn inflated_cost(&self, d_cells: f64) -> f32 {
        let inflation = f64::from(self.inflation_cells);
        let m = f64::from(self.near_obstacle_multiplier);
        (1.0 + (m - 1.0) * (1.0 - d_cells / (inflation + 1.0))) as f32
    }
}

/// Per-cell traversal costs; `f32::INFINITY` marks impassable cells.
#[derive(Debug, Clone, PartialEq)]
pub struct CostMap {
    width: usize,
    height: usize,
    resolution: f64,
    origin: Point2,
    costs: Vec<f32>,
    blocked_by_map: Vec<bool>,
    min_cost: f32,
}

impl CostMap {
    /// Builds the cost map: obstacle/wall → impassable; unknown →
    /// `unknown_cost`; other states → 1; then every non-blocked cell within
    /// `inflation_cells` (Chebyshev) of an obstacle costs
    /// `max(base, inflated_cost(d))` with `d` the Euclidean distance in
    /// cells; cells closer than `robot_radius_m` become impassable.
    pub fn from_grid(grid: &OccupancyGrid, cfg: &CostMapConfig) -> Self {
        let (w, h) = (grid.width(), grid.height());
        let res = grid.resolution();
        let unknown = cfg.unknown_cost.max(f32::MIN_POSITIVE);
        let mut blocked_by_map = Vec::with_capacity(w * h);
        let mut costs = Vec::with_capacity(w * h);
        // the box around the blocking cells: only cells near an obstacle change cost
        let (mut x0, mut y0, mut x1, mut y1) = (w, h, 0, 0);
        for (i, c) in grid.cells().iter().enumerate() {
            let blocked = c.state.is_blocking();
            if blocked {
                let (x, y) = (i % w, i / w);
                (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x + 1), y1.max(y + 1));
            }
            blocked_by_map.push(blocked);
            costs.push(match c.state {
                CellState::Obstacle | CellState::Wall => f32::INFINITY,
                CellState::Unknown => unknown,
                CellState::Free | CellState::Explored => 1.0,
            });
        }
        let need_dt = cfg.inflation_cells > 0 || cfg.robot_radius_m > 0.0;
        if need_dt && x0 < x1 {
            let infl = i64::from(cfg.inflation_cells);
            // the farthest an obstacle reaches: the robot's radius or the inflation
            let reach_cells = (cfg.robot_radius_m / res).max(infl as f64 * SQRT_2 + 1e-3);
            let margin = if reach_cells.is_finite() { reach_cells.ceil() as usize + 1 } else { w.max(h) };
            let (x0, y0) = (x0.saturating_sub(margin), y0.saturating_sub(margin));
            let (x1, y1) = ((x1 + margin).min(w), (y1 + margin).min(h));
            let clearance = grid.clearance_window(x0, y0, x1, y1);
            let boxes = BoxCounts::new(&blocked_by_map, w, (x0, y0, x1, y1));
            for y in y0..y1 {
                for x in x0..x1 {
                    let i = y * w + x;
                    if blocked_by_map[i] {
                        continue;
                    }
                    let d_m = f64::from(clearance[(y - y0) * (x1 - x0) + (x - x0)]);
                    if cfg.robot_radius_m > 0.0 && d_m < cfg.robot_radius_m {
                        costs[i] = f32::INFINITY;
                        continue;
                    }
                    if infl > 0 {
                        let d_cells = d_m / res;
                        // Chebyshev neighbourhood: any obstacle within `infl` cells on both axes (an
                        // obstacle within `infl` cells straight-line is one; only the corners need a look)
                        let near = d_cells <= infl as f64
                            || (d_cells <= infl as f64 * SQRT_2 + 1e-3 && boxes.any_within(x, y, infl as usize));
                        if near {
                            costs[i] = costs[i].max(cfg.inflated_cost(d_cells));
                        }
                    }
                }
            }
        }
        let min_cost = costs.iter().copied().filter(|c| c.is_finite()).fold(f32::INFINITY, f32::min);
        Self {
            width: w,
            height: h,
            resolution: res,
            origin: grid.origin(),
            costs,
            blocked_by_map,
            min_cost: if min_cost.is_finite() { min_cost } else { 1.0 },
        }
    }

    /// Width in cells.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Height in cells.
    pub fn height(&self) -> usize {
        self.height
    }

    /// Cell size in metres.
    pub fn resolution(&self) -> f64 {
        self.resolution
    }

    /// True when `p` lies inside the map.
    pub fn contains(&self, p: GridPos) -> bool {
        p.x >= 0 && p.y >= 0 && (p.x as usize) < self.width && (p.y as usize) < self.height
    }

    /// Cost of entering cell `p` (`f32::INFINITY` if impassable or outside).
    pub fn cost(&self, p: GridPos) -> f32 {
        if self.contains(p) { self.costs[p.y as usize * self.width + p.x as usize] } else { f32::INFINITY }
    }

    /// The passable cell nearest to `c` (Euclidean, in cells) within `r`
    /// cells on each axis: `c` itself when passable; `None` when none is.
    /// Where planning starts when the robot stands in an inflated cell.
    pub fn nearest_passable(&self, c: GridPos, r: i32) -> Option<GridPos> {
        let mut best: Option<(GridPos, i32)> = None;
        for dy in -r..=r {
            for dx in -r..=r {
                let g = GridPos::new(c.x + dx, c.y + dy);
                let d = dx * dx + dy * dy;
                if self.cost(g).is_finite() && best.is_none_or(|(_, bd)| d < bd) {
                    best = Some((g, d));
                }
            }
        }
        best.map(|(g, _)| g)
    }

    /// All costs, row-major.
    pub fn costs(&self) -> &[f32] {
        &self.costs
    }

    /// Smallest finite cell cost (scales the heuristic so it stays
    /// admissible).
    pub fn min_cost(&self) -> f32 {
        self.min_cost
    }

    /// World centre of cell `p`.
    pub fn grid_to_world(&self, p: GridPos) -> Point2 {
        Point2::new(
            self.origin.x + (p.x as f64 + 0.5) * self.resolution,
            self.origin.y + (p.y as f64 + 0.5) * self.resolution,
        )
    }

    /// Cell containing world point `p` (may be outside).
    pub fn world_to_grid(&self, p: Point2) -> GridPos {
        let c = |v: f64| v.clamp(i32::MIN as f64, i32::MAX as f64) as i32;
        GridPos::new(
            c(((p.x - self.origin.x) / self.resolution).floor()),
            c(((p.y - self.origin.y) / self.resolution).floor()),
        )
    }

    /// The successors of `p` with their step costs: 8-connected, diagonal
    /// steps cost √2 × the entered cell's cost, and a diagonal step may not
    /// cut the corner of an impassable cell. This is the exact move model
    /// of [`GridPlanner`]; benches and tests reuse it for peers.
    pub fn successors(&self, p: GridPos, allow_diagonal: bool, out: &mut Vec<(GridPos, f64)>) {
        out.clear();
        let n = if allow_diagonal { 8 } else { 4 };
        for &(dx, dy) in &DIRS[..n] {
            let q = GridPos::new(p.x + dx, p.y + dy);
            let c = self.cost(q);
            if !c.is_finite() {
                continue;
            }
            if dx != 0 && dy != 0 {
                if !self.cost(GridPos::new(p.x + dx, p.y)).is_finite()
                    || !self.cost(GridPos::new(p.x, p.y + dy)).is_finite()
                {
                    continue;
                }
                out.push((q, SQRT_2 * f64::from(c)));
            } else {
                out.push((q, f64::from(c)));
            }
        }
    }

    fn blocked_by_map(&self, p: GridPos) -> bool {
        !self.contains(p) || self.blocked_by_map[p.y as usize * self.width + p.x as usize]
    }
}

/// Blocking cells counted over a window of the grid (a summed-area
/// table): whether any lies in a square around a cell is four lookups.
struct BoxCounts {
    sums: Vec<u32>,
    x0: usize,
    y0: usize,
    ww: usize,
    wh: usize,
}

impl BoxCounts {
    /// The table of `blocked` (row-major, `w` wide) over `[x0, x1) × [y0, y1)`.
    fn new(blocked: &[bool], w: usize, (x0, y0, x1, y1): (usize, usize, usize, usize)) -> Self {
        let (ww, wh) = (x1 - x0, y1 - y0);
        let mut sums = vec![0u32; (ww + 1) * (wh + 1)];
        for y in 0..wh {
            let mut row = 0u32;
            for x in 0..ww {
                row += u32::from(blocked[(y + y0) * w + x + x0]);
                sums[(y + 1) * (ww + 1) + x + 1] = sums[y * (ww + 1) + x + 1] + row;
            }
        }
        Self { sums, x0, y0, ww, wh }
    }

    /// Whether a counted cell lies within `r` cells of grid cell `(x, y)`
    /// on both axes (the Chebyshev neighbourhood), clipped to the window.
    fn any_within(&self, x: usize, y: usize, r: usize) -> bool {
        let (lx, ly) = ((x - self.x0).saturating_sub(r), (y - self.y0).saturating_sub(r));
        let (hx, hy) = ((x - self.x0 + r + 1).min(self.ww), (y - self.y0 + r + 1).min(self.wh));
        let at = |x: usize, y: usize| self.sums[y * (self.ww + 1) + x];
        at(hx, hy) + at(lx, ly) > at(lx, hy) + at(hx, ly)
    }
}

/// Octile distance between two cells (the search heuristic).
pub fn octile(a: GridPos, b: GridPos) -> f64 {
    let dx = f64::from((a.x - b.x).abs());
    let dy = f64::from((a.y - b.y).abs());
    dx.max(dy) + (SQRT_2 - 1.0) * dx.min(dy)
}

/// Search settings: the moves allowed and how a path becomes waypoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlannerConfig {
    /// 8-connected search (default true).
    pub allow_diagonal: bool,
    /// Keep every n-th cell of the raw path as a waypoint (3); 1..=1000.
    pub waypoint_spacing: usize,
    /// Planning-time budget in milliseconds (100); (0, 3600000].
    pub max_planning_time_ms: f64,
}

impl Default for PlannerConfig {
    fn default() -> Self {
        Self { allow_diagonal: true, waypoint_spacing: 3, max_planning_time_ms: 100.0 }
    }
}

impl PlannerConfig {
    /// Checks the ranges in the field docs; errors name the key.
    pub fn validate(&self) -> Result<(), crate::config::ConfigError> {
        crate::config::count_in("waypoint_spacing", self.waypoint_spacing, 1, 1000)?;
        crate::config::in_range_above("max_planning_time_ms", self.max_planning_time_ms, 0.0, 3_600_000.0)
    }
}

/// Why planning failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The goal cell is impassable.
    #[error("goal position is blocked")]
    GoalBlocked,
    /// The start cell is an obstacle or wall.
    #[error("start position is blocked")]
    StartBlocked,
    /// Start or goal lies outside the grid.
    #[error("{0} position is outside the grid")]
    OutOfBounds(&'static str),
    /// The goal is not reachable from the start.
    #[error("no path found")]
    NoPath,
    /// The planning-time budget ran out before the search finished.
    #[error("planning budget of {budget_ms} ms exceeded")]
    BudgetExceeded {
        /// The budget that was exceeded, milliseconds.
        budget_ms: f64,
    },
}

fn ser_error<S: Serializer>(e: &Option<PlanError>, s: S) -> Result<S::Ok, S::Error> {
    match e {
        Some(e) => s.serialize_str(&e.to_string()),
        None => s.serialize_none(),
    }
}

/// One waypoint of a planned path.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PathWaypoint {
    /// World x of the cell centre, metres.
    pub x: f64,
    /// World y of the cell centre, metres.
    pub y: f64,
    /// Grid column.
    pub gx: i32,
    /// Grid row.
    pub gy: i32,
    /// Index of this waypoint in the list.
    pub index: usize,
}

/// The planner's answer, with LLMos's `PathResult` fields (camelCase in JSON).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PathResult {
    /// True when a path was found.
    pub success: bool,
    /// Down-sampled waypoints, start and goal included.
    pub waypoints: Vec<PathWaypoint>,
    /// Sum of step costs along the path (what A* minimizes).
    pub total_cost: f64,
    /// Geometric length of the raw path, metres.
    pub path_length_m: f64,
    /// Number of cells in the raw path.
    pub raw_path_length: usize,
    /// Time spent planning, milliseconds (per the injected clock).
    pub planning_time_ms: f64,
    /// What went wrong, when `success` is false.
    #[serde(serialize_with = "ser_error")]
    pub error: Option<PlanError>,
    /// Every cell of the raw path, start to goal.
    #[serde(skip)]
    pub cells: Vec<GridPos>,
}

impl PathResult {
    fn failure(e: PlanError, ms: f64) -> Self {
        Self {
            success: false,
            waypoints: Vec::new(),
            total_cost: 0.0,
            path_length_m: 0.0,
            raw_path_length: 0,
            planning_time_ms: ms,
            error: Some(e),
            cells: Vec::new(),
        }
    }
}

/// The eight moves in search order: four straight, then four diagonal.
const DIRS: [(i32, i32); 8] = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1)];

/// Keeps every `spacing`-th cell, always including the first and last.
pub fn downsample(cells: &[GridPos], spacing: usize) -> Vec<GridPos> {
    let spacing = spacing.max(1);
    let mut out: Vec<GridPos> = cells.iter().step_by(spacing).copied().collect();
    if let Some(&last) = cells.last() {
        if out.last() != Some(&last) {
            out.push(last);
        }
    }
    out
}
