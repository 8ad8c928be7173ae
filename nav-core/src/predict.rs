//! The predictive world model of the candidates protocol: guesses
//! the state of unknown cells with four heuristics — wall continuation,
//! corridor continuation, open-space expansion and boundary walls — writes
//! the guesses at low confidence (0.2–0.3, below
//! [`PREDICTION_CEILING`] so any sensor
//! reading replaces them), and later verifies each guess against what the
//! sensors actually saw, counting verified and wrong predictions.
//!
//! ```
//! use nav_core::grid::{OccupancyGrid, GridPos, CellState};
//! use nav_core::geometry::Point2;
//! use nav_core::predict::PredictiveModel;
//! let mut g = OccupancyGrid::new(10, 10, 0.1, Point2::new(0.0, 0.0))?;
//! for x in 0..4 { g.set(GridPos::new(x, 5), CellState::Wall, 1.0); }
//! let mut model = PredictiveModel::default();
//! let report = model.predict(&mut g);
//! assert!(report.wall_continuation >= 1);
//! assert_eq!(g.state(GridPos::new(4, 5)), CellState::Obstacle); // the wall goes on
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::grid::{CellState, GridPos, OccupancyGrid, PREDICTION_CEILING};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which heuristic made a prediction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Heuristic {
    /// A straight run of wall cells continues into unknown space.
    WallContinuation,
    /// A corridor (free cells between two parallel walls) continues.
    Corridor,
    /// An unknown cell mostly surrounded by free cells is free.
    OpenSpace,
    /// Unknown cells on the grid's outer ring are walls.
    BoundaryWall,
}

/// Settings of the predictive model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PredictConfig {
    /// Confidence of wall-continuation guesses (0.3).
    pub wall_confidence: f32,
    /// Confidence of corridor guesses (0.25).
    pub corridor_confidence: f32,
    /// Confidence of open-space guesses (0.2).
    pub open_confidence: f32,
    /// Confidence of boundary-wall guesses (0.3).
    pub boundary_confidence: f32,
    /// How many cells a wall is extended (2).
    pub wall_extension_cells: i32,
    /// A run needs this many observed wall cells to be extended (3).
    pub min_wall_run: i32,
    /// Widest corridor recognised, cells (8).
    pub max_corridor_half_width: i32,
    /// Observed free neighbours (of 8) needed for open space (5).
    pub open_min_free_neighbours: u32,
}

impl Default for PredictConfig {
    fn default() -> Self {
        Self {
            wall_confidence: 0.3,
            corridor_confidence: 0.25,
            open_confidence: 0.2,
            boundary_confidence: 0.3,
            wall_extension_cells: 2,
            min_wall_run: 3,
            max_corridor_half_width: 8,
            open_min_free_neighbours: 5,
        }
    }
}

/// One active prediction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// The predicted state.
    pub state: CellState,
    /// The heuristic that made it.
    pub heuristic: Heuristic,
}

/// New predictions of one pass, by heuristic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PredictReport {
    /// Wall-continuation cells.
    pub wall_continuation: u32,
    /// Corridor cells.
    pub corridor: u32,
    /// Open-space cells.
    pub open_space: u32,
    /// Boundary-wall cells.
    pub boundary_wall: u32,
}

impl PredictReport {
    /// Total new predictions.
    pub fn total(&self) -> u32 {
        self.wall_continuation + self.corridor + self.open_space + self.boundary_wall
    }
}

/// Outcome of verifying predictions against observations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct VerifyReport {
    /// Predictions confirmed by a sensor this pass.
    pub verified: u32,
    /// Predictions contradicted by a sensor this pass.
    pub wrong: u32,
}

/// The predictive model with its active predictions and counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PredictiveModel {
    config: PredictConfig,
    active: BTreeMap<usize, Prediction>,
    /// Predictions confirmed so far.
    pub verified_count: u32,
    /// Predictions contradicted so far.
    pub wrong_count: u32,
}

impl PredictiveModel {
    /// A model with the given settings.
    pub fn new(config: PredictConfig) -> Self {
        Self { config, ..Self::default() }
    }

    /// Active (unverified) predictions, by linear cell index.
    pub fn active(&self) -> &BTreeMap<usize, Prediction> {
        &self.active
    }

    /// Checks active predictions: a cell a sensor has since observed
    /// (confidence at or above the prediction ceiling) verifies or refutes
    /// its prediction, which is then dropped. Cells that became unknown
    /// again (an LLM correction) drop their prediction uncounted.
    pub fn verify(&mut self, grid: &OccupancyGrid) -> VerifyReport {
        let mut rep = VerifyReport::default();
        self.active.retain(|&i, pred| {
            let Some(cell) = grid.cells().get(i) else { return false };
            if cell.state == CellState::Unknown {
                return false;
            }
            if cell.confidence < PREDICTION_CEILING {
                return true;
            }
            let same = match pred.state {
                CellState::Free => cell.state.is_traversable(),
                s => s.is_blocking() == cell.state.is_blocking(),
            };
            if same {
                rep.verified += 1;
            } else {
                rep.wrong += 1;
            }
            false
        });
        self.verified_count += rep.verified;
        self.wrong_count += rep.wrong;
        rep
    }

    /// Runs the four heuristics on the current grid and writes new
    /// predictions into unknown cells.
    pub fn predict(&mut self, grid: &mut OccupancyGrid) -> PredictReport {
        let cfg = self.config;
        let mut proposals: BTreeMap<usize, (CellState, f32, Heuristic)> = BTreeMap::new();
        let observed_blocking = |g: &OccupancyGrid, p: GridPos| {
            g.get(p).is_some_and(|c| c.state.is_blocking() && c.confidence >= PREDICTION_CEILING)
        };
        let observed_free = |g: &OccupancyGrid, p: GridPos| {
            g.get(p).is_some_and(|c| c.state.is_traversable() && c.confidence >= PREDICTION_CEILING)
        };
        let unknown = |g: &OccupancyGrid, p: GridPos| g.get(p).is_some_and(|c| c.state == CellState::Unknown);
        let (w, h) = (grid.width() as i32, grid.height() as i32);
        let dirs = [(1, 0), (-1, 0), (0, 1), (0, -1)];

        // 1. wall continuation
        for y in 0..h {
            for x in 0..w {
                let p = GridPos::new(x, y);
                if !observed_blocking(grid, p) {
                    continue;
                }
                for (dx, dy) in dirs {
                    // p is the end of a run going in direction (dx, dy)?
                    let run_ok =
                        (1..cfg.min_wall_run).all(|k| observed_blocking(grid, GridPos::new(x - k * dx, y - k * dy)));
                    if !run_ok {
                        continue;
                    }
                    for k in 1..=cfg.wall_extension_cells {
                        let q = GridPos::new(x + k * dx, y + k * dy);
                        if !unknown(grid, q) {
                            break;
                        }
                        if let Some(i) = grid.index(q) {
                            proposals.entry(i).or_insert((
                                CellState::Obstacle,
                                cfg.wall_confidence,
                                Heuristic::WallContinuation,
                            ));
                        }
                    }
                }
            }
        }

        // 2. corridor continuation: an unknown cell ahead of a free cell that lies between two walls
        for y in 0..h {
            for x in 0..w {
                let u = GridPos::new(x, y);
                if !unknown(grid, u) {
                    continue;
                }
                for (dx, dy) in dirs {
                    let n = GridPos::new(x - dx, y - dy);
                    if !observed_free(grid, n) {
                        continue;
                    }
                    let (px, py) = (-dy, dx); // perpendicular
                    let wall_within = |sign: i32| {
                        (1..=cfg.max_corridor_half_width).find_map(|k| {
                            let q = GridPos::new(n.x + sign * k * px, n.y + sign * k * py);
                            if observed_blocking(grid, q) {
                                Some(true)
                            } else if observed_free(grid, q) {
                                None
                            } else {
                                Some(false)
                            }
                        }) == Some(true)
                    };
                    if wall_within(1) && wall_within(-1) {
                        if let Some(i) = grid.index(u) {
                            proposals.entry(i).or_insert((
                                CellState::Free,
                                cfg.corridor_confidence,
                                Heuristic::Corridor,
                            ));
                        }
                        break;
                    }
                }
            }
        }

        // 3. open space
        for y in 0..h {
            for x in 0..w {
                let u = GridPos::new(x, y);
                if !unknown(grid, u) {
                    continue;
                }
                let mut free = 0u32;
                for dy in -1..=1 {
                    for dx in -1..=1 {
                        if (dx != 0 || dy != 0) && observed_free(grid, GridPos::new(x + dx, y + dy)) {
                            free += 1;
                        }
                    }
                }
                if free >= cfg.open_min_free_neighbours {
                    if let Some(i) = grid.index(u) {
                        proposals.entry(i).or_insert((CellState::Free, cfg.open_confidence, Heuristic::OpenSpace));
                    }
                }
            }
        }

        // 4. boundary walls
        for y in 0..h {
            for x in 0..w {
                if x != 0 && y != 0 && x != w - 1 && y != h - 1 {
                    continue;
                }
                let u = GridPos::new(x, y);
                if unknown(grid, u) {
                    if let Some(i) = grid.index(u) {
                        proposals.entry(i).or_insert((
                            CellState::Wall,
                            cfg.boundary_confidence,
                            Heuristic::BoundaryWall,
                        ));
                    }
                }
            }
        }

        let mut rep = PredictReport::default();
        for (i, (state, conf, heuristic)) in proposals {
            let p = grid.pos_of(i);
            grid.set(p, state, conf);
            self.active.insert(i, Prediction { state, heuristic });
            match heuristic {
                Heuristic::WallContinuation => rep.wall_continuation += 1,
                Heuristic::Corridor => rep.corridor += 1,
                Heuristic::OpenSpace => rep.open_space += 1,
                Heuristic::BoundaryWall => rep.boundary_wall += 1,
            }
        }
        rep
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Point2;

    fn grid() -> OccupancyGrid {
        OccupancyGrid::new(20, 20, 0.1, Point2::new(0.0, 0.0)).unwrap()
    }

    #[test]
    fn corridor_continues_between_walls() {
        let mut g = grid();
        for x in 2..8 {
            g.set(GridPos::new(x, 8), CellState::Wall, 1.0);
            g.set(GridPos::new(x, 12), CellState::Wall, 1.0);
            for y in 9..12 {
                g.set(GridPos::new(x, y), CellState::Free, 1.0);
            }
        }
        let mut m = PredictiveModel::default();
        let rep = m.predict(&mut g);
        assert!(rep.corridor >= 3, "{rep:?}");
        assert_eq!(g.state(GridPos::new(8, 10)), CellState::Free);
        assert_eq!(g.state(GridPos::new(8, 8)), CellState::Obstacle); // wall continues too
        assert!(g.get(GridPos::new(8, 10)).unwrap().confidence < PREDICTION_CEILING);
    }

    #[test]
    fn open_space_and_boundary() {
        let mut g = grid();
        for x in 5..10 {
            for y in 5..10 {
                g.set(GridPos::new(x, y), CellState::Free, 1.0);
            }
        }
        g.set(GridPos::new(7, 7), CellState::Unknown, 0.0);
        let mut m = PredictiveModel::default();
        let rep = m.predict(&mut g);
        assert_eq!(g.state(GridPos::new(7, 7)), CellState::Free);
        assert!(rep.open_space >= 1);
        assert_eq!(rep.boundary_wall, 76); // 20×20 outer ring
    }

    #[test]
    fn verification_counts() {
        let mut g = grid();
        for x in 0..5 {
            g.set(GridPos::new(x, 10), CellState::Wall, 1.0);
        }
        let mut m = PredictiveModel::default();
        m.predict(&mut g);
        let right = GridPos::new(5, 10); // predicted obstacle
        let wrong = GridPos::new(6, 10); // predicted obstacle
        g.set(right, CellState::Obstacle, 0.9);
        g.set(wrong, CellState::Free, 0.9);
        let rep = m.verify(&g);
        assert_eq!(rep, VerifyReport { verified: 1, wrong: 1 });
        assert_eq!((m.verified_count, m.wrong_count), (1, 1));
        assert!(!m.active().contains_key(&g.index(right).unwrap()));
        // a second verify does not count them again
        assert_eq!(m.verify(&g), VerifyReport::default());
    }

    #[test]
    fn predictions_never_touch_known_cells() {
        let mut g = grid();
        for i in 0..400 {
            let p = g.pos_of(i);
            g.set(p, CellState::Free, 0.9);
        }
        let before = g.clone();
        let rep = PredictiveModel::default().predict(&mut g);
        assert_eq!(rep.total(), 0);
        assert_eq!(g, before);
    }
}
