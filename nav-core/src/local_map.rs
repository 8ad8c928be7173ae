//! A robot-centred metric map built from LiDAR and odometry, with the path
//! tools the offline planners and the safety fallbacks share: frontiers,
//! reachability, A* paths and line-of-sight look-ahead points.

use crate::astar::{CostMap, CostMapConfig, GridPlanner, PathResult, PlannerConfig, distance_field_until};
use crate::frontier::{FrontierCluster, find_frontiers};
use crate::geometry::{Point2, Pose2};
use crate::grid::{GridPos, OccupancyGrid, ScanIntegration};
use crate::lidar::LaserScan;
use crate::time::FrozenClock;
use serde::{Deserialize, Serialize};

/// Settings of a [`LocalMap`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LocalMapConfig {
    /// Side of the square map, metres, centred on the start (48); (0, 1000],
    /// and at most 4096 cells per side at `resolution_m`.
    pub size_m: f64,
    /// Cell size, metres (0.1); [0.01, 1].
    pub resolution_m: f64,
    /// Cells closer than this to an obstacle are impassable, metres (robot
    /// radius 0.18 plus a margin); [0, 10].
    pub inflation_m: f64,
    /// Cost of unknown cells for planning (50, as in vision mode);
    /// [1, 1000000].
    pub unknown_cost: f32,
    /// Frontier clusters smaller than this are ignored, cells; 1..=100000.
    pub min_frontier_cells: usize,
    /// How LiDAR updates cells.
    pub integration: ScanIntegration,
}

impl Default for LocalMapConfig {
    fn default() -> Self {
        Self {
            size_m: 48.0,
            resolution_m: 0.1,
            inflation_m: 0.25,
            unknown_cost: 50.0,
            min_frontier_cells: 3,
            integration: ScanIntegration { max_free_range_m: 6.0, ..ScanIntegration::default() },
        }
    }
}

impl LocalMapConfig {
    /// Largest map side in cells (4096² is [`MAX_GRID_CELLS`](crate::grid::MAX_GRID_CELLS)).
    pub const MAX_CELLS_PER_SIDE: f64 = 4096.0;

    /// Checks the ranges in the field docs; errors name the key.
    pub fn validate(&self) -> Result<(), crate::config::ConfigError> {
        use crate::config::{ConfigError, count_in, in_range, in_range_above};
        in_range_above("size_m", self.size_m, 0.0, 1000.0)?;
        in_range("resolution_m", self.resolution_m, 0.01, 1.0)?;
        let cells = self.size_m / self.resolution_m;
        if cells > Self::MAX_CELLS_PER_SIDE {
            return Err(ConfigError::new(
                "size_m",
                format!(
                    "{} m at resolution_m {} is {cells:.0} cells per side, more than {}",
                    self.size_m,
                    self.resolution_m,
                    Self::MAX_CELLS_PER_SIDE
                ),
            ));
        }
        in_range("inflation_m", self.inflation_m, 0.0, 10.0)?;
        in_range("unknown_cost", f64::from(self.unknown_cost), 1.0, 1_000_000.0)?;
        count_in("min_frontier_cells", self.min_frontier_cells, 1, 100_000)?;
        self.integration.validate().map_err(|e| e.under("integration"))
    }
}

/// A reachable frontier with its path cost from the robot.
#[derive(Debug, Clone, PartialEq)]
pub struct ReachableFrontier {
    /// The cluster.
    pub cluster: FrontierCluster,
    /// The member cell nearest (by path) to the robot.
    pub entry: Point2,
    /// Path cost to `entry` in metres (cost-weighted).
    pub cost_m: f64,
}

/// The map plus its planner scratch space.
#[derive(Debug, Clone)]
pub struct LocalMap {
    config: LocalMapConfig,
    grid: OccupancyGrid,
    planner: GridPlanner,
}

impl LocalMap {
    /// An empty (all unknown) map centred on `center`.
    pub fn new(config: LocalMapConfig, center: Point2) -> Result<Self, crate::CoreError> {
        let half = config.size_m / 2.0;
        let grid = OccupancyGrid::covering(
            center.x - half,
            center.y - half,
            center.x + half,
            center.y + half,
            config.resolution_m,
        )?;
        let planner =
            GridPlanner::new(PlannerConfig { max_planning_time_ms: f64::INFINITY, ..PlannerConfig::default() });
        Ok(Self { config, grid, planner })
    }

    /// The occupancy grid.
    pub fn grid(&self) -> &OccupancyGrid {
        &self.grid
    }

    /// Mutable access to the grid (corrections, predictions).
    pub fn grid_mut(&mut self) -> &mut OccupancyGrid {
        &mut self.grid
    }

    /// The settings.
    pub fn config(&self) -> &LocalMapConfig {
        &self.config
    }

    /// Forgets everything (memory-off planners call this every time).
    pub fn clear(&mut self) {
        let (w, h, res, origin) = (self.grid.width(), self.grid.height(), self.grid.resolution(), self.grid.origin());
        if let Ok(g) = OccupancyGrid::new(w, h, res, origin) {
            self.grid = g;
        }
    }

    /// Integrates a scan taken at `pose` and marks the robot's footprint as
    /// explored.
    pub fn integrate(&mut self, pose: Pose2, scan: &LaserScan) {
        self.grid.integrate_scan(pose, scan, &self.config.integration);
        self.grid.mark_footprint(pose.position(), 0.15);
    }

    /// The planning cost map (vision-mode unknown cost, hard inflation).
    pub fn costmap(&self) -> CostMap {
        CostMap::from_grid(
            &self.grid,
            &CostMapConfig {
                unknown_cost: self.config.unknown_cost,
                robot_radius_m: self.config.inflation_m,
                // a wider soft band keeps paths in the middle of doorways and corridors
                inflation_cells: 6,
                near_obstacle_multiplier: 4.0,
            },
        )
    }

    /// Frontier clusters reachable from `from`, cheapest first, each with
    /// the path cost to its nearest member cell.
    pub fn reachable_frontiers(&self, costs: &CostMap, from: Point2) -> Vec<ReachableFrontier> {
        let clusters: Vec<FrontierCluster> =
            find_frontiers(&self.grid).into_iter().filter(|c| c.size >= self.config.min_frontier_cells).collect();
        // flood only until every frontier cell's cost is final: the unknown
        // space beyond them (passable at a high cost) need not be searched
        let mut wanted = vec![false; self.grid.width() * self.grid.height()];
        let mut remaining = 0usize;
        for i in clusters.iter().flat_map(|c| &c.cells).filter_map(|g| self.grid.index(*g)) {
            if !wanted[i] {
                wanted[i] = true;
                remaining += 1;
            }
        }
        if remaining == 0 {
            return Vec::new();
        }
        let field = distance_field_until(costs, &[self.start_cell(costs, from)], |i, _| {
            if wanted[i] {
                remaining -= 1;
            }
            remaining == 0
        });
        let res = self.grid.resolution();
        let mut out: Vec<ReachableFrontier> = clusters
            .into_iter()
            .filter_map(|cluster| {
                let best = cluster
                    .cells
                    .iter()
                    .filter_map(|g| self.grid.index(*g).map(|i| (*g, field[i])))
                    .filter(|(_, d)| d.is_finite())
                    .min_by(|a, b| a.1.total_cmp(&b.1))?;
                Some(ReachableFrontier { entry: self.grid.grid_to_world(best.0), cost_m: best.1 * res, cluster })
            })
            .collect();
        out.sort_by(|a, b| a.cost_m.total_cmp(&b.cost_m));
        out
    }

    /// The cell planning starts from: the robot's cell, or the nearest
    /// passable cell within 0.8 m when the robot's own cell is inflated
    /// (the robot may stand closer to a wall than the planning margin).
    fn start_cell(&self, costs: &CostMap, from: Point2) -> GridPos {
        let c = costs.world_to_grid(from);
        let r = (0.8 / self.grid.resolution()).ceil() as i32;
        costs.nearest_passable(c, r).unwrap_or(c)
    }

    /// An A* path from `from` to `to` on `costs`.
    pub fn plan(&mut self, costs: &CostMap, from: Point2, to: Point2) -> PathResult {
        let s = self.start_cell(costs, from);
        let t = costs.world_to_grid(to);
        self.planner.plan(costs, s, t, &FrozenClock)
    }

    /// True when the straight segment from `a` to `b` crosses only
    /// passable cells of `costs`. The first `skip_m` metres are not checked
    /// (the robot may stand in the inflated band next to a wall).
    pub fn line_of_sight(costs: &CostMap, a: Point2, b: Point2, skip_m: f64) -> bool {
        let d = a.distance(b);
        let step = costs.resolution() * 0.5;
        let n = (d / step).ceil().max(1.0) as usize;
        (0..=n).all(|k| {
            let t = k as f64 / n as f64;
            if t * d < skip_m {
                return true;
            }
            let p = a + (b - a) * t;
            costs.cost(costs.world_to_grid(p)).is_finite()
        })
    }

    /// The farthest point of `path` within `max_m` of path length that the
    /// robot at `from` can reach in a straight line; if none, the first
    /// path point at least one cell away.
    pub fn lookahead(costs: &CostMap, from: Point2, path: &PathResult, max_m: f64) -> Option<Point2> {
        let mut travelled = 0.0;
        let mut last = from;
        let mut best = None;
        let mut first = None;
        let skip = costs.resolution() * 3.0;
        for cell in path.cells.iter().skip(1) {
            let p = costs.grid_to_world(*cell);
            travelled += last.distance(p);
            last = p;
            if travelled > max_m {
                break;
            }
            if first.is_none() && p.distance(from) >= costs.resolution() {
                first = Some(p);
            }
            if Self::line_of_sight(costs, from, p, skip) {
                best = Some(p);
            }
        }
        best.or(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_and_reaches_frontiers_in_a_room() {
        let mut m = LocalMap::new(LocalMapConfig { size_m: 10.0, ..LocalMapConfig::default() }, Point2::default())
            .expect("map");
        // a 4 m × 4 m room with a 1 m door on the east wall
        let mut scan = LaserScan::full_circle(720, 0.05, 12.0, f32::INFINITY);
        for i in 0..720 {
            let a = scan.angle(i);
            let (c, s) = (a.cos(), a.sin());
            let tx = if c.abs() > 1e-9 { 2.0 / c.abs() } else { f64::INFINITY };
            let ty = if s.abs() > 1e-9 { 2.0 / s.abs() } else { f64::INFINITY };
            let t = tx.min(ty);
            let (x, y) = (t * c, t * s);
            let door = x > 1.99 && y.abs() < 0.5;
            scan.ranges[i] = if door { f32::INFINITY } else { t as f32 };
        }
        m.integrate(Pose2::origin(), &scan);
        let costs = m.costmap();
        let fr = m.reachable_frontiers(&costs, Point2::default());
        assert!(!fr.is_empty());
        // the best frontier lies out through the door
        assert!(fr[0].entry.x > 2.0, "{:?}", fr[0].entry);
        let path = m.plan(&costs, Point2::default(), fr[0].entry);
        assert!(path.success);
        let la = LocalMap::lookahead(&costs, Point2::default(), &path, 1.5).expect("lookahead");
        assert!(la.distance(Point2::default()) <= 1.5 + 1e-9);
    }
}
