//! The A* local planner of seed 002: a cost map from the occupancy grid
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

use crate::geometry::Point2;
use crate::grid::{CellState, GridPos, OccupancyGrid};
use crate::time::Clock;
use serde::{Deserialize, Serialize, Serializer};
use std::f64::consts::SQRT_2;

/// How the cost map is derived from the grid (seed 002 "Cost Map").
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
    /// seed's behaviour.
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
        let blocked_by_map: Vec<bool> = grid.cells().iter().map(|c| c.state.is_blocking()).collect();
        let mut costs: Vec<f32> = grid
            .cells()
            .iter()
            .map(|c| match c.state {
                CellState::Obstacle | CellState::Wall => f32::INFINITY,
                CellState::Unknown => cfg.unknown_cost.max(f32::MIN_POSITIVE),
                CellState::Free | CellState::Explored => 1.0,
            })
            .collect();
        let need_dt = cfg.inflation_cells > 0 || cfg.robot_radius_m > 0.0;
        if need_dt && blocked_by_map.iter().any(|b| *b) {
            let clearance = grid.clearance_map();
            let infl = i64::from(cfg.inflation_cells);
            for i in 0..w * h {
                if blocked_by_map[i] {
                    continue;
                }
                let d_m = f64::from(clearance[i]);
                if cfg.robot_radius_m > 0.0 && d_m < cfg.robot_radius_m {
                    costs[i] = f32::INFINITY;
                    continue;
                }
                if infl > 0 {
                    let d_cells = d_m / res;
                    // Chebyshev neighbourhood: any obstacle within `infl` cells on both axes.
                    if d_cells <= infl as f64 * SQRT_2 + 1e-3 && chebyshev_near(&blocked_by_map, w, h, i, infl) {
                        costs[i] = costs[i].max(cfg.inflated_cost(d_cells));
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

fn chebyshev_near(blocked: &[bool], w: usize, h: usize, i: usize, r: i64) -> bool {
    let (x, y) = ((i % w) as i64, (i / w) as i64);
    for dy in -r..=r {
        for dx in -r..=r {
            let (nx, ny) = (x + dx, y + dy);
            if nx >= 0 && ny >= 0 && (nx as usize) < w && (ny as usize) < h && blocked[ny as usize * w + nx as usize] {
                return true;
            }
        }
    }
    false
}

/// Octile distance between two cells (the seed's heuristic).
pub fn octile(a: GridPos, b: GridPos) -> f64 {
    let dx = f64::from((a.x - b.x).abs());
    let dy = f64::from((a.y - b.y).abs());
    dx.max(dy) + (SQRT_2 - 1.0) * dx.min(dy)
}

/// Search settings (seed 002 "Movement", "Path to Waypoints").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlannerConfig {
    /// 8-connected search (default true).
    pub allow_diagonal: bool,
    /// Keep every n-th cell of the raw path as a waypoint (3).
    pub waypoint_spacing: usize,
    /// Planning-time budget in milliseconds (100).
    pub max_planning_time_ms: f64,
}

impl Default for PlannerConfig {
    fn default() -> Self {
        Self { allow_diagonal: true, waypoint_spacing: 3, max_planning_time_ms: 100.0 }
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

/// The planner's answer, with the seed's fields.
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

/// Per-cell search flags of [`GridPlanner`], one byte so the table of a
/// 1024×1024 map stays in cache: bits 0..3 the direction (index into
/// [`DIRS`]) of the step that reached the cell, bit 3 [`CLOSED`], bits 4..8
/// the search generation that wrote it (1..=15; 0 = never).
const CLOSED: u8 = 1 << 3;
/// Shift of the generation in a flags byte.
const GEN_SHIFT: u32 = 4;
/// Generations cycle through 1..=15; the table is cleared on wrap-around.
const MAX_GENERATION: u8 = 15;

/// The open list of [`GridPlanner`]: a radix heap on the bits of `f`.
///
/// Non-negative `f64`s order like their bit patterns, and with a
/// consistent heuristic the popped `f` never decreases, which is all a
/// radix heap needs: a key lives in the bucket of the highest bit in which
/// it differs from the last popped key, so a push is one `leading_zeros`
/// and a `Vec` push, and a pop only redistributes the lowest non-empty
/// bucket. Keys equal to the last popped one (bucket 0) pop newest first,
/// which prefers the deeper of equal-`f` cells. A key that rounding puts a
/// few ulps below the last popped one is clamped to it: it is the minimum
/// either way.
#[derive(Debug, Clone)]
struct OpenList {
    last: u64,
    /// Bit `i` set: bucket `i` is not empty.
    occupied: u64,
    buckets: Vec<Vec<(u64, u32)>>,
}

impl Default for OpenList {
    fn default() -> Self {
        Self { last: 0, occupied: 0, buckets: vec![Vec::new(); 64] }
    }
}

impl OpenList {
    /// Bucket of `key`: 0 when equal to `last`, else one plus the index
    /// of the highest differing bit. Both are non-negative `f64`s, so the
    /// sign bit never differs and the bucket is below 64.
    fn bucket(last: u64, key: u64) -> usize {
        (64 - (key ^ last).leading_zeros()) as usize
    }

    fn clear(&mut self) {
        self.last = 0;
        self.occupied = 0;
        for b in &mut self.buckets {
            b.clear();
        }
    }

    fn push(&mut self, f: f64, idx: u32) {
        let key = f.to_bits().max(self.last);
        let b = Self::bucket(self.last, key);
        self.buckets[b].push((key, idx));
        self.occupied |= 1 << b;
    }

    /// Removes an entry with the smallest `f` and returns its cell index.
    fn pop(&mut self) -> Option<u32> {
        if self.occupied & 1 == 0 {
            if self.occupied == 0 {
                return None;
            }
            let i = self.occupied.trailing_zeros() as usize;
            self.occupied &= !(1 << i);
            if let [(key, idx)] = self.buckets[i][..] {
                // a lone entry: it is the minimum, nothing to redistribute
                self.buckets[i].clear();
                self.last = key;
                return Some(idx);
            }
            let mut moved = std::mem::take(&mut self.buckets[i]);
            let last = moved.iter().map(|e| e.0).min()?;
            self.last = last;
            for &(key, idx) in &moved {
                let b = Self::bucket(last, key);
                self.buckets[b].push((key, idx));
                self.occupied |= 1 << b;
            }
            moved.clear();
            self.buckets[i] = moved; // keep its capacity
        }
        let bottom = &mut self.buckets[0];
        let e = bottom.pop()?;
        if bottom.is_empty() {
            self.occupied &= !1;
        }
        Some(e.1)
    }
}

/// A reusable A* planner: it keeps its scratch buffers between calls and
/// resets them with a generation stamp (a full clear of one byte per cell
/// every 15 plans).
#[derive(Debug, Clone, Default)]
pub struct GridPlanner {
    config: PlannerConfig,
    /// Best known cost from the start, per cell (valid when the flags
    /// carry the current generation).
    g: Vec<f64>,
    /// Flags per cell, see [`CLOSED`].
    flags: Vec<u8>,
    generation: u8,
    open: OpenList,
}

/// For each set of passable straight neighbours (bits 0..4 in [`DIRS`]
/// order), the diagonal moves (bits 4..8) that do not cut a corner: a
/// diagonal needs both straight cells it passes between.
const DIAGONALS_ALLOWED: [u32; 16] = {
    let sides: [(usize, usize); 4] = [(0, 2), (0, 3), (1, 2), (1, 3)];
    let mut table = [0u32; 16];
    let mut s = 0;
    while s < 16 {
        let mut k = 0;
        while k < 4 {
            if (s >> sides[k].0) & 1 == 1 && (s >> sides[k].1) & 1 == 1 {
                table[s] |= 1 << (4 + k);
            }
            k += 1;
        }
        s += 1;
    }
    table
};

impl GridPlanner {
    /// A planner with the given settings.
    pub fn new(config: PlannerConfig) -> Self {
        Self { config, ..Self::default() }
    }

    /// The settings.
    pub fn config(&self) -> &PlannerConfig {
        &self.config
    }

    /// Plans from world point `start` to world point `goal`.
    pub fn plan_world(&mut self, map: &CostMap, start: Point2, goal: Point2, clock: &dyn Clock) -> PathResult {
        self.plan(map, map.world_to_grid(start), map.world_to_grid(goal), clock)
    }

    /// Plans from cell `start` to cell `goal`. The start cell may lie in the
    /// inflated zone (the robot is already there) but not on an obstacle.
    pub fn plan(&mut self, map: &CostMap, start: GridPos, goal: GridPos, clock: &dyn Clock) -> PathResult {
        let t0 = clock.now_s();
        let elapsed_ms = |c: &dyn Clock| (c.now_s() - t0) * 1000.0;
        if !map.contains(start) {
            return PathResult::failure(PlanError::OutOfBounds("start"), 0.0);
        }
        if !map.contains(goal) {
            return PathResult::failure(PlanError::OutOfBounds("goal"), 0.0);
        }
        if map.blocked_by_map(start) {
            return PathResult::failure(PlanError::StartBlocked, 0.0);
        }
        if !map.cost(goal).is_finite() {
            return PathResult::failure(PlanError::GoalBlocked, 0.0);
        }
        let n = map.width * map.height;
        if self.flags.len() != n {
            self.g = vec![0.0; n];
            self.flags = vec![0; n];
            self.generation = 0;
        }
        self.generation += 1;
        if self.generation > MAX_GENERATION {
            self.flags.fill(0);
            self.generation = 1;
        }
        let stamp = self.generation << GEN_SHIFT;
        self.open.clear();
        let (w, h) = (map.width as i32, map.height as i32);
        let idx = |p: GridPos| (p.y * w + p.x) as u32;
        // division by the width as a multiply (exact for 32-bit indices)
        let recip = (1u128 << 64) / map.width as u128 + 1;
        let pos = |i: u32| {
            let y = ((u128::from(i) * recip) >> 64) as i32;
            GridPos::new(i as i32 - y * w, y)
        };
        let hscale = f64::from(map.min_cost);
        let budget_ms = self.config.max_planning_time_ms;
        let si = idx(start);
        let gi = idx(goal);
        self.g[si as usize] = 0.0;
        self.flags[si as usize] = stamp;
        self.open.push(octile(start, goal) * hscale, si);
        let diag = self.config.allow_diagonal;
        let wi = map.width as isize;
        let wu = map.width;
        // index offsets of DIRS
        let offsets: [isize; 8] = [1, -1, wi, -wi, wi + 1, -wi + 1, wi - 1, -wi - 1];
        let costs = &map.costs[..];
        let (gs, flags) = (&mut self.g[..], &mut self.flags[..]);
        let mut expansions: u32 = 0;
        let mut found = false;
        while let Some(ci) = self.open.pop() {
            let cu = ci as usize;
            let fl = flags[cu];
            if fl & CLOSED != 0 {
                continue; // a stale duplicate: the cell was expanded with its best g
            }
            flags[cu] = fl | CLOSED;
            if ci == gi {
                found = true;
                break;
            }
            expansions = expansions.wrapping_add(1);
            if expansions & 1023 == 0 && budget_ms.is_finite() && elapsed_ms(clock) > budget_ms {
                return PathResult::failure(PlanError::BudgetExceeded { budget_ms }, elapsed_ms(clock));
            }
            let g = gs[cu];
            let p = pos(ci);
            // the 8 neighbour costs (out of the map = impassable); one bounds
            // test for the whole neighbourhood away from the border
            let mut nc = [f32::INFINITY; 8];
            if p.x > 0 && p.y > 0 && p.x < w - 1 && p.y < h - 1 {
                let below = &costs[cu - wu - 1..cu - wu + 2];
                let row = &costs[cu - 1..cu + 2];
                let above = &costs[cu + wu - 1..cu + wu + 2];
                nc = [row[2], row[0], above[1], below[1], above[2], below[2], above[0], below[0]];
            } else {
                for (c, &(dx, dy)) in nc.iter_mut().zip(&DIRS) {
                    let (nx, ny) = (p.x + dx, p.y + dy);
                    if nx >= 0 && ny >= 0 && nx < w && ny < h {
                        *c = costs[(ny * w + nx) as usize];
                    }
                }
            }
            // passable neighbours as a bit mask, diagonals only when both
            // sides are passable (no corner cutting)
            let mut mask = 0u32;
            for (d, &c) in nc.iter().enumerate() {
                mask |= u32::from(c.is_finite()) << d;
            }
            mask &= 0xf | if diag { DIAGONALS_ALLOWED[(mask & 0xf) as usize] } else { 0 };
            while mask != 0 {
                let d = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                let c = f64::from(nc[d]);
                let step = if d >= 4 { SQRT_2 * c } else { c };
                let ng = g + step;
                let ni = cu.wrapping_add_signed(offsets[d]);
                let fl = flags[ni];
                if fl & !(CLOSED | 7) == stamp && (fl & CLOSED != 0 || ng >= gs[ni]) {
                    continue; // consistent heuristic: closed cells are final
                }
                gs[ni] = ng;
                flags[ni] = stamp | d as u8;
                let q = GridPos::new(p.x + DIRS[d].0, p.y + DIRS[d].1);
                self.open.push(ng + octile(q, goal) * hscale, ni as u32);
            }
        }
        if !found {
            return PathResult::failure(PlanError::NoPath, elapsed_ms(clock));
        }
        let mut cells = Vec::new();
        let mut cur = gi as usize;
        loop {
            cells.push(pos(cur as u32));
            if cur == si as usize {
                break;
            }
            cur = cur.wrapping_add_signed(-offsets[usize::from(self.flags[cur] & 7)]);
        }
        cells.reverse();
        let mut length = 0.0;
        for win in cells.windows(2) {
            let diagonal = win[0].x != win[1].x && win[0].y != win[1].y;
            length += if diagonal { SQRT_2 } else { 1.0 };
        }
        let waypoints = downsample(&cells, self.config.waypoint_spacing.max(1))
            .into_iter()
            .enumerate()
            .map(|(index, p)| {
                let wpt = map.grid_to_world(p);
                PathWaypoint { x: wpt.x, y: wpt.y, gx: p.x, gy: p.y, index }
            })
            .collect();
        PathResult {
            success: true,
            waypoints,
            total_cost: self.g[gi as usize],
            path_length_m: length * map.resolution,
            raw_path_length: cells.len(),
            planning_time_ms: elapsed_ms(clock),
            error: None,
            cells,
        }
    }
}

const DIRS: [(i32, i32); 8] = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1)];

/// Single-source shortest path costs (Dijkstra) from `start` to every cell
/// of the map under the same move model as [`GridPlanner`] (8-connected, no
/// corner cutting). Unreachable or impassable cells get `f64::INFINITY`.
/// One flood answers "how far is each frontier" in one pass.
///
/// ```
/// use nav_core::astar::{CostMap, CostMapConfig, distance_field};
/// use nav_core::grid::{OccupancyGrid, GridPos, CellState};
/// use nav_core::geometry::Point2;
/// let mut g = OccupancyGrid::new(5, 1, 0.1, Point2::new(0.0, 0.0))?;
/// for x in 0..5 { g.set(GridPos::new(x, 0), CellState::Free, 1.0); }
/// let d = distance_field(&CostMap::from_grid(&g, &CostMapConfig::ground_truth()), GridPos::new(0, 0));
/// assert_eq!(d[4], 4.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn distance_field(map: &CostMap, start: GridPos) -> Vec<f64> {
    distance_field_from(map, &[start])
}

/// [`distance_field`] from several sources at once (multi-source Dijkstra):
/// each cell gets the cost of the cheapest path from any source. Sources
/// outside the map or on obstacles are ignored. Reversed, it is each cell's
/// cost *to* the nearest source up to the end cells' own costs (a step pays
/// for the cell it enters) — the field a robot descends to reach a goal
/// region.
pub fn distance_field_from(map: &CostMap, sources: &[GridPos]) -> Vec<f64> {
    distance_field_until(map, sources, |_, _| false)
}

/// [`distance_field_from`] that may stop early. `settled(index, cost)` is
/// called for each cell (row-major index) as its cost becomes final, in
/// nondecreasing cost order; returning `true` ends the search. Cells whose
/// cost was not final by then are `f64::INFINITY`, like unreachable ones.
///
/// A planner that needs the field only up to some cost (the cells a robot
/// can reach next, the cells of a goal set) floods that much of the map
/// instead of all of it: with unknown space passable at a high cost, the
/// full flood spends most of its time far out in the unknown.
///
/// ```
/// use nav_core::astar::{CostMap, CostMapConfig, distance_field_until};
/// use nav_core::grid::{OccupancyGrid, GridPos, CellState};
/// use nav_core::geometry::Point2;
/// let mut g = OccupancyGrid::new(10, 1, 0.1, Point2::new(0.0, 0.0))?;
/// for x in 0..10 { g.set(GridPos::new(x, 0), CellState::Free, 1.0); }
/// let map = CostMap::from_grid(&g, &CostMapConfig::ground_truth());
/// // stop once cell 3 is final: cells up to it are exact, the rest unknown
/// let d = distance_field_until(&map, &[GridPos::new(0, 0)], |i, _| i == 3);
/// assert_eq!((d[3], d[9]), (3.0, f64::INFINITY));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn distance_field_until(
    map: &CostMap,
    sources: &[GridPos],
    mut settled: impl FnMut(usize, f64) -> bool,
) -> Vec<f64> {
    let n = map.width * map.height;
    let mut dist = vec![f64::INFINITY; n];
    let mut done = vec![false; n];
    let w = map.width as i32;
    let h = map.height as i32;
    let mut open = OpenList::default();
    for &start in sources {
        if !map.contains(start) || map.blocked_by_map(start) {
            continue;
        }
        let si = (start.y * w + start.x) as usize;
        dist[si] = 0.0;
        open.push(0.0, si as u32);
    }
    let mut stopped = false;
    while let Some(idx) = open.pop() {
        let cu = idx as usize;
        if done[cu] {
            continue; // a stale duplicate: the cell is final already
        }
        done[cu] = true;
        let g = dist[cu];
        if settled(cu, g) {
            stopped = true;
            break;
        }
        let p = GridPos::new(idx as i32 % w, idx as i32 / w);
        for &(dx, dy) in &DIRS {
            let (nx, ny) = (p.x + dx, p.y + dy);
            if nx < 0 || ny < 0 || nx >= w || ny >= h {
                continue;
            }
            let ni = (ny * w + nx) as usize;
            let c = map.costs[ni];
            if !c.is_finite() || done[ni] {
                continue;
            }
            let step = if dx != 0 && dy != 0 {
                if !map.costs[(p.y * w + nx) as usize].is_finite() || !map.costs[(ny * w + p.x) as usize].is_finite() {
                    continue;
                }
                SQRT_2 * f64::from(c)
            } else {
                f64::from(c)
            };
            let ng = g + step;
            if ng < dist[ni] {
                dist[ni] = ng;
                open.push(ng, ni as u32);
            }
        }
    }
    if stopped {
        for (d, &final_) in dist.iter_mut().zip(&done) {
            if !final_ {
                *d = f64::INFINITY;
            }
        }
    }
    dist
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{FrozenClock, ManualClock};
    use proptest::prelude::*;

    fn open_grid(w: usize, h: usize) -> OccupancyGrid {
        let mut g = OccupancyGrid::new(w, h, 0.1, Point2::new(0.0, 0.0)).unwrap();
        for i in 0..w * h {
            let p = g.pos_of(i);
            g.set(p, CellState::Free, 1.0);
        }
        g
    }

    #[test]
    fn inflation_formula_matches_seed() {
        let c = CostMapConfig::ground_truth();
        // 1 + (2 − 1)·(1 − 1/2) = 1.5 for a cell adjacent to an obstacle
        assert!((c.inflated_cost(1.0) - 1.5).abs() < 1e-6);
        // diagonal neighbour: 1 + (1 − √2/2) ≈ 1.2929
        assert!((c.inflated_cost(SQRT_2) - 1.292_893).abs() < 1e-5);
        assert_eq!(CostMapConfig::vision().unknown_cost, 50.0);
    }

    #[test]
    fn cost_map_values() {
        let mut g = open_grid(5, 5);
        g.set(GridPos::new(2, 2), CellState::Obstacle, 1.0);
        g.set(GridPos::new(0, 0), CellState::Unknown, 0.0);
        let m = CostMap::from_grid(&g, &CostMapConfig::ground_truth());
        assert!(m.cost(GridPos::new(2, 2)).is_infinite());
        assert!((m.cost(GridPos::new(2, 3)) - 1.5).abs() < 1e-6);
        assert!((m.cost(GridPos::new(3, 3)) - 1.292_893).abs() < 1e-5, "{}", m.cost(GridPos::new(3, 3)));
        assert_eq!(m.cost(GridPos::new(4, 4)), 1.0);
        assert_eq!(m.cost(GridPos::new(0, 0)), 5.0);
        let mv = CostMap::from_grid(&g, &CostMapConfig::vision());
        assert_eq!(mv.cost(GridPos::new(0, 0)), 50.0);
    }

    #[test]
    fn straight_path_cost_and_waypoints() {
        let g = open_grid(10, 3);
        let m = CostMap::from_grid(&g, &CostMapConfig::ground_truth());
        let mut p = GridPlanner::new(PlannerConfig::default());
        let r = p.plan(&m, GridPos::new(0, 1), GridPos::new(9, 1), &FrozenClock);
        assert!(r.success);
        assert_eq!(r.raw_path_length, 10);
        assert!((r.total_cost - 9.0).abs() < 1e-9);
        assert!((r.path_length_m - 0.9).abs() < 1e-9);
        let xs: Vec<i32> = r.waypoints.iter().map(|w| w.gx).collect();
        assert_eq!(xs, vec![0, 3, 6, 9]);
        let diag = p.plan(&m, GridPos::new(0, 0), GridPos::new(2, 2), &FrozenClock);
        assert!((diag.total_cost - 2.0 * SQRT_2).abs() < 1e-9);
    }

    #[test]
    fn seed_errors() {
        let mut g = open_grid(10, 10);
        g.set(GridPos::new(9, 9), CellState::Wall, 1.0);
        for y in 0..10 {
            g.set(GridPos::new(5, y), CellState::Wall, 1.0);
        }
        let m = CostMap::from_grid(&g, &CostMapConfig::ground_truth());
        let mut p = GridPlanner::new(PlannerConfig::default());
        let r = p.plan(&m, GridPos::new(0, 0), GridPos::new(9, 9), &FrozenClock);
        assert_eq!(r.error, Some(PlanError::GoalBlocked));
        assert_eq!(r.error.unwrap().to_string(), "goal position is blocked");
        let r = p.plan(&m, GridPos::new(0, 0), GridPos::new(8, 0), &FrozenClock);
        assert_eq!(r.error, Some(PlanError::NoPath));
        assert_eq!(r.error.as_ref().unwrap().to_string(), "no path found");
        let r = p.plan(&m, GridPos::new(0, 0), GridPos::new(80, 0), &FrozenClock);
        assert_eq!(r.error, Some(PlanError::OutOfBounds("goal")));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["error"], "goal position is outside the grid");
        assert_eq!(json["success"], false);
    }

    /// A clock that advances 1 ms every time it is read.
    struct TickingClock(ManualClock);
    impl Clock for TickingClock {
        fn now_s(&self) -> f64 {
            self.0.advance(0.001);
            self.0.now_s()
        }
    }

    #[test]
    fn budget_exceeded_is_a_distinct_error() {
        let g = open_grid(300, 300);
        let m = CostMap::from_grid(&g, &CostMapConfig::ground_truth());
        let mut p = GridPlanner::new(PlannerConfig { max_planning_time_ms: 2.0, ..PlannerConfig::default() });
        let mut g2 = g.clone();
        for y in 1..300 {
            g2.set(GridPos::new(150, y), CellState::Wall, 1.0);
        }
        let m2 = CostMap::from_grid(&g2, &CostMapConfig::ground_truth());
        let r = p.plan(&m2, GridPos::new(0, 299), GridPos::new(299, 299), &TickingClock(ManualClock::new(0.0)));
        assert!(matches!(r.error, Some(PlanError::BudgetExceeded { .. })), "{:?}", r.error);
        // with a frozen clock the same search completes
        let r = p.plan(&m, GridPos::new(0, 0), GridPos::new(299, 299), &FrozenClock);
        assert!(r.success);
    }

    #[test]
    fn hard_inflation_blocks_cells_near_walls() {
        let mut g = open_grid(10, 10);
        g.set(GridPos::new(5, 5), CellState::Wall, 1.0);
        let cfg = CostMapConfig { robot_radius_m: 0.15, ..CostMapConfig::ground_truth() };
        let m = CostMap::from_grid(&g, &cfg);
        assert!(m.cost(GridPos::new(5, 6)).is_infinite()); // 0.1 m away
        assert!(m.cost(GridPos::new(6, 6)).is_infinite()); // 0.141 m away
        assert!(m.cost(GridPos::new(5, 7)).is_finite()); // 0.2 m away
    }

    /// Plain Dijkstra over the same move model.
    fn dijkstra(m: &CostMap, s: GridPos, t: GridPos) -> Option<f64> {
        #[derive(PartialEq)]
        struct N(f64, GridPos);
        impl Eq for N {}
        impl Ord for N {
            fn cmp(&self, o: &Self) -> std::cmp::Ordering {
                o.0.total_cmp(&self.0)
            }
        }
        impl PartialOrd for N {
            fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(o))
            }
        }
        let mut dist = std::collections::HashMap::new();
        let mut heap = std::collections::BinaryHeap::new();
        dist.insert(s, 0.0);
        heap.push(N(0.0, s));
        let mut succ = Vec::new();
        while let Some(N(d, p)) = heap.pop() {
            if p == t {
                return Some(d);
            }
            if d > *dist.get(&p).unwrap_or(&f64::INFINITY) {
                continue;
            }
            m.successors(p, true, &mut succ);
            for &(q, c) in &succ {
                let nd = d + c;
                if nd < *dist.get(&q).unwrap_or(&f64::INFINITY) {
                    dist.insert(q, nd);
                    heap.push(N(nd, q));
                }
            }
        }
        None
    }

    #[test]
    fn a_reused_planner_stays_correct_across_generation_wrap_around() {
        let mut g = open_grid(30, 30);
        for y in 0..25 {
            g.set(GridPos::new(15, y), CellState::Wall, 1.0);
        }
        let m = CostMap::from_grid(&g, &CostMapConfig::ground_truth());
        let mut reused = GridPlanner::new(PlannerConfig::default());
        let s = GridPos::new(2, 2);
        // more plans than there are generations, to different goals, with a
        // failing plan in between: every answer equals a fresh planner's
        for k in 0..(3 * usize::from(MAX_GENERATION) + 2) {
            let t = GridPos::new(16 + (k % 13) as i32, (k % 29) as i32);
            let r = reused.plan(&m, s, t, &FrozenClock);
            let fresh = GridPlanner::new(PlannerConfig::default()).plan(&m, s, t, &FrozenClock);
            assert_eq!(r, fresh, "plan {k}");
            assert!(r.success);
            let blocked = reused.plan(&m, s, GridPos::new(15, 3), &FrozenClock);
            assert_eq!(blocked.error, Some(PlanError::GoalBlocked));
        }
    }

    #[test]
    fn distance_field_agrees_with_astar() {
        let mut g = open_grid(30, 30);
        for y in 0..25 {
            g.set(GridPos::new(15, y), CellState::Wall, 1.0);
        }
        g.set(GridPos::new(3, 3), CellState::Unknown, 0.0);
        let m = CostMap::from_grid(&g, &CostMapConfig::ground_truth());
        let s = GridPos::new(2, 2);
        let field = distance_field(&m, s);
        let mut p = GridPlanner::new(PlannerConfig::default());
        for t in [GridPos::new(29, 0), GridPos::new(20, 10), GridPos::new(3, 3), GridPos::new(14, 29)] {
            let r = p.plan(&m, s, t, &FrozenClock);
            assert!((field[(t.y * 30 + t.x) as usize] - r.total_cost).abs() < 1e-9);
        }
        assert!(field[(5 * 30 + 15) as usize].is_infinite()); // a wall cell
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn astar_matches_dijkstra(
            w in 2usize..=40, h in 2usize..=40,
            cells in proptest::collection::vec(0u8..10, 1600),
            sx in 0usize..40, sy in 0usize..40, tx in 0usize..40, ty in 0usize..40,
            vision in proptest::bool::ANY,
        ) {
            let mut g = open_grid(w, h);
            for (i, cell) in cells.iter().enumerate().take(w * h) {
                let p = g.pos_of(i);
                match cell {
                    0 | 1 => g.set(p, CellState::Obstacle, 1.0),
                    2 => g.set(p, CellState::Unknown, 0.0),
                    3 => g.set(p, CellState::Wall, 1.0),
                    4 => g.set(p, CellState::Explored, 1.0),
                    _ => {}
                }
            }
            let cfg = if vision { CostMapConfig::vision() } else { CostMapConfig::ground_truth() };
            let m = CostMap::from_grid(&g, &cfg);
            let s = GridPos::new((sx % w) as i32, (sy % h) as i32);
            let t = GridPos::new((tx % w) as i32, (ty % h) as i32);
            let mut planner = GridPlanner::new(PlannerConfig::default());
            let r = planner.plan(&m, s, t, &FrozenClock);
            if !m.cost(s).is_finite() {
                prop_assert_eq!(r.error, Some(PlanError::StartBlocked));
                return Ok(());
            }
            if !m.cost(t).is_finite() {
                prop_assert_eq!(r.error, Some(PlanError::GoalBlocked));
                return Ok(());
            }
            match dijkstra(&m, s, t) {
                Some(best) => {
                    prop_assert!(r.success, "A* failed where Dijkstra found {best}");
                    prop_assert!((r.total_cost - best).abs() < 1e-6 * best.max(1.0), "{} vs {}", r.total_cost, best);
                    // never enters an impassable cell; steps are 8-connected
                    for c in &r.cells { prop_assert!(m.cost(*c).is_finite()); }
                    for win in r.cells.windows(2) {
                        prop_assert!((win[0].x - win[1].x).abs() <= 1 && (win[0].y - win[1].y).abs() <= 1);
                    }
                    prop_assert_eq!(r.cells.first(), Some(&s));
                    prop_assert_eq!(r.cells.last(), Some(&t));
                }
                None => prop_assert_eq!(r.error, Some(PlanError::NoPath)),
            }
        }

        #[test]
        fn distance_fields_match_dijkstra_and_stop_exactly(
            w in 2usize..=30, h in 2usize..=30,
            cells in proptest::collection::vec(0u8..10, 900),
            sx in 0usize..30, sy in 0usize..30, stop_at in 0usize..900,
        ) {
            let mut g = open_grid(w, h);
            for (i, cell) in cells.iter().enumerate().take(w * h) {
                let p = g.pos_of(i);
                match cell {
                    0 | 1 => g.set(p, CellState::Obstacle, 1.0),
                    2 | 3 => g.set(p, CellState::Unknown, 0.0),
                    _ => {}
                }
            }
            let m = CostMap::from_grid(&g, &CostMapConfig::vision());
            let s = GridPos::new((sx % w) as i32, (sy % h) as i32);
            let full = distance_field(&m, s);
            // the full field is Dijkstra's cost to every cell
            for (i, &f) in full.iter().enumerate() {
                let t = g.pos_of(i);
                let want = if m.cost(s).is_finite() && m.cost(t).is_finite() { dijkstra(&m, s, t) } else { None };
                match want {
                    Some(best) => prop_assert!((f - best).abs() < 1e-6 * best.max(1.0), "{} vs {}", f, best),
                    None => prop_assert!(f.is_infinite()),
                }
            }
            // stopping at a cell: exact up to its cost, nondecreasing callbacks, infinity beyond
            let stop = stop_at % (w * h);
            let mut last = 0.0;
            let mut ordered = true;
            let part = distance_field_until(&m, &[s], |i, d| {
                ordered &= d >= last && (d - full[i]).abs() < 1e-9;
                last = d;
                i == stop
            });
            prop_assert!(ordered, "callbacks in nondecreasing cost order with final costs");
            for (&p, &f) in part.iter().zip(&full) {
                if f < full[stop] {
                    prop_assert_eq!(p, f);
                } else if f > full[stop] {
                    prop_assert!(p.is_infinite());
                }
            }
        }
    }
}
