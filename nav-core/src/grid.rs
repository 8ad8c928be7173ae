//! The occupancy grid: cell states with confidence and visit
//! counts, world↔grid transforms, LiDAR ray casting, the run-length text
//! encoding used in prompts, guarded LLM corrections and a Euclidean
//! clearance (distance) transform.

use crate::error::CoreError;
use crate::geometry::{Point2, Pose2};
use crate::lidar::{LaserScan, Reading};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// Cells whose confidence is below this were not observed by a sensor
/// (predictions, LLM guesses): any sensor reading replaces them.
pub const PREDICTION_CEILING: f32 = 0.5;

/// State of one grid cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellState {
    /// Never observed.
    #[default]
    Unknown,
    /// Observed free by a sensor.
    Free,
    /// Physically visited by the robot (ground truth from the visit).
    Explored,
    /// Observed occupied by a sensor.
    Obstacle,
    /// A wall (from a map or the arena boundary).
    Wall,
}

impl CellState {
    /// True for obstacle and wall: impassable for the planner.
    pub fn is_blocking(self) -> bool {
        matches!(self, CellState::Obstacle | CellState::Wall)
    }

    /// True for free and explored.
    pub fn is_traversable(self) -> bool {
        matches!(self, CellState::Free | CellState::Explored)
    }

    /// The one-letter code of the run-length encoding.
    pub fn code(self) -> char {
        match self {
            CellState::Unknown => 'U',
            CellState::Free => 'F',
            CellState::Explored => 'E',
            CellState::Obstacle => 'O',
            CellState::Wall => 'W',
        }
    }

    /// Inverse of [`CellState::code`].
    pub fn from_code(c: char) -> Option<CellState> {
        Some(match c {
            'U' => CellState::Unknown,
            'F' => CellState::Free,
            'E' => CellState::Explored,
            'O' => CellState::Obstacle,
            'W' => CellState::Wall,
            _ => return None,
        })
    }
}

/// One grid cell.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Cell {
    /// What the cell holds.
    pub state: CellState,
    /// Confidence in `state`, `[0, 1]`.
    pub confidence: f32,
    /// How many times the robot has been in this cell.
    pub visits: u32,
}

/// Integer grid coordinates (may lie outside the grid).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GridPos {
    /// Column, growing with world x.
    pub x: i32,
    /// Row, growing with world y.
    pub y: i32,
}

impl GridPos {
    /// Creates a grid position.
    pub const fn new(x: i32, y: i32) -> Self {
        Self { x, y }
    }
}

/// How a LiDAR scan updates the grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScanIntegration {
    /// Confidence given to a cell first seen free; [0, 1].
    pub free_confidence: f32,
    /// Confidence given to a cell where a beam ended on an obstacle; [0, 1].
    pub hit_confidence: f32,
    /// Rays with no return mark free space up to this range (metres);
    /// bounded so a missing return does not claim the whole map; (0, 1000].
    pub max_free_range_m: f32,
}

impl Default for ScanIntegration {
    fn default() -> Self {
        Self { free_confidence: 0.6, hit_confidence: 0.9, max_free_range_m: 4.0 }
    }
}

impl ScanIntegration {
    /// Checks the ranges in the field docs; errors name the key.
    pub fn validate(&self) -> Result<(), crate::config::ConfigError> {
        crate::config::in_range("free_confidence", f64::from(self.free_confidence), 0.0, 1.0)?;
        crate::config::in_range("hit_confidence", f64::from(self.hit_confidence), 0.0, 1.0)?;
        crate::config::in_range_above("max_free_range_m", f64::from(self.max_free_range_m), 0.0, 1000.0)
    }
}

/// The state a correction asserts for a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObservedState {
    /// The cell is free.
    Free,
    /// The cell is occupied.
    Obstacle,
    /// The cell is unknown.
    Unknown,
}

impl From<ObservedState> for CellState {
    fn from(s: ObservedState) -> Self {
        match s {
            ObservedState::Free => CellState::Free,
            ObservedState::Obstacle => CellState::Obstacle,
            ObservedState::Unknown => CellState::Unknown,
        }
    }
}

/// A world-model correction proposed by a VLM (the candidates protocol).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Correction {
    /// World position `[x, y]`, metres.
    pub pos_m: [f64; 2],
    /// The state the model believes the cell has.
    pub observed_state: ObservedState,
    /// The model's confidence, `[0, 1]`.
    pub confidence: f64,
}

/// Guards on the world-model corrections an LLM proposes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CorrectionGuard {
    /// Corrections below this confidence are skipped (0.6); [0, 1].
    pub min_confidence: f64,
    /// Cells above this confidence are never overridden, and applied
    /// confidence is capped here (0.7); [0, 1].
    pub max_override: f64,
}

impl Default for CorrectionGuard {
    fn default() -> Self {
        Self { min_confidence: 0.6, max_override: 0.7 }
    }
}

impl CorrectionGuard {
    /// Checks the ranges in the field docs; errors name the key.
    pub fn validate(&self) -> Result<(), crate::config::ConfigError> {
        crate::config::in_range("min_confidence", self.min_confidence, 0.0, 1.0)?;
        crate::config::in_range("max_override", self.max_override, 0.0, 1.0)
    }
}

/// What happened to a batch of corrections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CorrectionReport {
    /// Corrections written to the grid.
    pub applied: u32,
    /// Skipped: confidence below the minimum (or not a number).
    pub skipped_low_confidence: u32,
    /// Skipped: the cell was physically visited.
    pub skipped_explored: u32,
    /// Skipped: the cell's confidence is above the override cap.
    pub skipped_high_confidence: u32,
    /// Skipped: the position is outside the grid.
    pub skipped_out_of_bounds: u32,
}

/// The most cells any grid in navkit holds (2^24: 192 MiB of
/// [`Cell`]s). Configuration checks derive their limits from it, so no
/// combination of in-range values allocates without bound.
pub const MAX_GRID_CELLS: usize = 1 << 24;

/// Cells of a grid of square `cell_m` cells covering `width_m × height_m`
/// (at least one per side; saturating, so absurd sizes compare as huge).
pub fn cells_covering(width_m: f64, height_m: f64, cell_m: f64) -> usize {
    let side = |len: f64| {
        let n = (len / cell_m).ceil();
        if n.is_finite() && n >= 1.0 {
            n.min(usize::MAX as f64) as usize
        } else if n.is_nan() {
            usize::MAX
        } else {
            1
        }
    };
    side(width_m).saturating_mul(side(height_m))
}

/// A rectangular occupancy grid. Cell `(0, 0)` is the south-west corner;
/// `origin` is the world position of that cell's lower-left corner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OccupancyGrid {
    width: usize,
    height: usize,
    resolution: f64,
    origin: Point2,
    cells: Vec<Cell>,
}

impl OccupancyGrid {
    /// A grid of unknown cells. Fails for a zero size or a non-positive or
    /// non-finite resolution.
    pub fn new(width: usize, height: usize, resolution: f64, origin: Point2) -> Result<Self, CoreError> {
        if width == 0 || height == 0 {
            return Err(CoreError::InvalidGrid(format!("size {width}x{height} must be non-zero")));
        }
        let cells = width.saturating_mul(height);
        if cells > MAX_GRID_CELLS {
            return Err(CoreError::InvalidGrid(format!(
                "size {width}x{height} is {cells} cells, more than {MAX_GRID_CELLS} (use coarser cells)"
            )));
        }
        if !(resolution.is_finite() && resolution > 0.0) {
            return Err(CoreError::InvalidGrid(format!("resolution {resolution} must be positive")));
        }
        if !origin.is_finite() {
            return Err(CoreError::InvalidGrid("origin must be finite".into()));
        }
        Ok(Self { width, height, resolution, origin, cells: vec![Cell::default(); width * height] })
    }

    /// A grid covering the rectangle `[xmin, xmax] × [ymin, ymax]`.
    pub fn covering(xmin: f64, ymin: f64, xmax: f64, ymax: f64, resolution: f64) -> Result<Self, CoreError> {
        if !(xmax > xmin && ymax > ymin) {
            return Err(CoreError::InvalidGrid(format!(
                "bounds [{xmin}, {ymin}, {xmax}, {ymax}] are inverted or empty"
            )));
        }
        if !(resolution.is_finite() && resolution > 0.0) {
            return Err(CoreError::InvalidGrid(format!("resolution {resolution} must be positive")));
        }
        let w = ((xmax - xmin) / resolution).ceil() as usize;
        let h = ((ymax - ymin) / resolution).ceil() as usize;
        Self::new(w, h, resolution, Point2::new(xmin, ymin))
    }

    /// Width in cells.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Height in cells.
    pub fn height(&self) -> usize {
        self.height
    }

    /// Cell size, metres.
    pub fn resolution(&self) -> f64 {
        self.resolution
    }

    /// World position of the lower-left corner of cell `(0, 0)`.
    pub fn origin(&self) -> Point2 {
        self.origin
    }

    /// All cells, row-major from row 0 (south).
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }

    /// True when `p` lies inside the grid.
    pub fn contains(&self, p: GridPos) -> bool {
        p.x >= 0 && p.y >= 0 && (p.x as usize) < self.width && (p.y as usize) < self.height
    }

    /// Linear index of `p`, if inside.
    pub fn index(&self, p: GridPos) -> Option<usize> {
        self.contains(p).then(|| p.y as usize * self.width + p.x as usize)
    }

    /// Grid position of linear index `i`.
    pub fn pos_of(&self, i: usize) -> GridPos {
        GridPos::new((i % self.width) as i32, (i / self.width) as i32)
    }

    /// Grid cell containing world point `p` (may be outside the grid).
    pub fn world_to_grid_unchecked(&self, p: Point2) -> GridPos {
        let gx = ((p.x - self.origin.x) / self.resolution).floor();
        let gy = ((p.y - self.origin.y) / self.resolution).floor();
        let clamp = |v: f64| v.clamp(i32::MIN as f64, i32::MAX as f64) as i32;
        GridPos::new(clamp(gx), clamp(gy))
    }

    /// Grid cell containing world point `p`, if inside the grid.
    pub fn world_to_grid(&self, p: Point2) -> Option<GridPos> {
        if !p.is_finite() {
            return None;
        }
        let g = self.world_to_grid_unchecked(p);
        self.contains(g).then_some(g)
    }

    /// World position of the centre of cell `g`.
    pub fn grid_to_world(&self, g: GridPos) -> Point2 {
        Point2::new(
            self.origin.x + (g.x as f64 + 0.5) * self.resolution,
            self.origin.y + (g.y as f64 + 0.5) * self.resolution,
        )
    }

    /// The cell at `g`, if inside.
    pub fn get(&self, g: GridPos) -> Option<&Cell> {
        self.index(g).map(|i| &self.cells[i])
    }

    /// Mutable cell at `g`, if inside.
    pub fn get_mut(&mut self, g: GridPos) -> Option<&mut Cell> {
        self.index(g).map(move |i| &mut self.cells[i])
    }

    /// State at `g`; outside the grid reads as [`CellState::Wall`].
    pub fn state(&self, g: GridPos) -> CellState {
        self.get(g).map_or(CellState::Wall, |c| c.state)
    }

    /// Sets state and confidence of the cell at `g` (ignored outside).
    pub fn set(&mut self, g: GridPos, state: CellState, confidence: f32) {
        if let Some(c) = self.get_mut(g) {
            c.state = state;
            c.confidence = confidence.clamp(0.0, 1.0);
        }
    }

    /// Records a visit of the robot at world point `p`: the cell becomes
    /// explored with full confidence and its visit count grows.
    pub fn mark_visited(&mut self, p: Point2) {
        if let Some(g) = self.world_to_grid(p) {
            if let Some(c) = self.get_mut(g) {
                c.state = CellState::Explored;
                c.confidence = 1.0;
                c.visits = c.visits.saturating_add(1);
            }
        }
    }

    /// Marks every cell whose centre lies within `radius` of `p` as explored
    /// (the robot's footprint), counting one visit for the centre cell only.
    pub fn mark_footprint(&mut self, p: Point2, radius: f64) {
        self.mark_visited(p);
        if !(radius.is_finite() && radius > 0.0) {
            return;
        }
        let r_cells = (radius / self.resolution).ceil() as i32;
        let c = self.world_to_grid_unchecked(p);
        for dy in -r_cells..=r_cells {
            for dx in -r_cells..=r_cells {
                let g = GridPos::new(c.x + dx, c.y + dy);
                if self.grid_to_world(g).distance(p) <= radius {
                    if let Some(cell) = self.get_mut(g) {
                        if !cell.state.is_blocking() {
                            cell.state = CellState::Explored;
                            cell.confidence = 1.0;
                        }
                    }
                }
            }
        }
    }

    /// Integrates a LiDAR scan taken at `pose` by ray casting: unknown cells
    /// along each beam become free and the end cell of a hit becomes an
    /// obstacle. Sensed obstacles, walls and explored cells are kept (rays
    /// crossing a thin wall's cells at grazing angles would otherwise erode
    /// it); low-confidence guesses (predictions, LLM corrections) are
    /// replaced by what the beam shows.
    pub fn integrate_scan(&mut self, pose: Pose2, scan: &LaserScan, cfg: &ScanIntegration) {
        if !scan.header_is_valid() {
            return;
        }
        let start = self.world_to_grid_unchecked(pose.position());
        for (i, &r) in scan.ranges.iter().enumerate() {
            let (dist, hit) = match scan.classify(r) {
                Reading::Hit(d) => (d.min(scan.range_max), true),
                Reading::NoReturn => (scan.range_max.min(cfg.max_free_range_m), false),
                Reading::TooClose | Reading::Invalid => continue,
            };
            let a = pose.yaw + scan.angle(i);
            let end_w = Point2::new(pose.x + dist as f64 * a.cos(), pose.y + dist as f64 * a.sin());
            let end = self.world_to_grid_unchecked(end_w);
            let too_far = hit && dist > cfg.max_free_range_m.max(0.0) * 3.0;
            self.trace(start, end, |grid, g, last| {
                if last && hit && !too_far {
                    if let Some(c) = grid.get_mut(g) {
                        let weak_wall = c.state == CellState::Wall && c.confidence < PREDICTION_CEILING;
                        if (c.state != CellState::Wall || weak_wall) && c.state != CellState::Explored {
                            c.state = CellState::Obstacle;
                            c.confidence = c.confidence.max(cfg.hit_confidence);
                        }
                    }
                } else if let Some(c) = grid.get_mut(g) {
                    match c.state {
                        CellState::Unknown => {
                            c.state = CellState::Free;
                            c.confidence = cfg.free_confidence;
                        }
                        // low-confidence cells are predictions or LLM guesses: a sensor reading replaces them
                        CellState::Free if c.confidence < cfg.free_confidence => c.confidence = cfg.free_confidence,
                        CellState::Free => c.confidence = (c.confidence + 0.05).min(1.0),
                        CellState::Obstacle | CellState::Wall if c.confidence < PREDICTION_CEILING => {
                            c.state = CellState::Free;
                            c.confidence = cfg.free_confidence;
                        }
                        // A sensed obstacle stays: rays that cross its square are almost always
                        // grazing a thin wall (discretization), not evidence that it is gone. The
                        // grid assumes a static world.
                        CellState::Obstacle | CellState::Explored | CellState::Wall => {}
                    }
                }
            });
        }
    }

    /// Walks the cells of the Bresenham line from `a` to `b`, calling
    /// `f(grid, cell, is_last)`; stops when leaving the grid.
    fn trace(&mut self, a: GridPos, b: GridPos, mut f: impl FnMut(&mut Self, GridPos, bool)) {
        let (mut x, mut y) = (a.x as i64, a.y as i64);
        let (x1, y1) = (b.x as i64, b.y as i64);
        let dx = (x1 - x).abs();
        let dy = -(y1 - y).abs();
        let sx = if x < x1 { 1 } else { -1 };
        let sy = if y < y1 { 1 } else { -1 };
        let mut err = dx + dy;
        let max_steps = (dx - dy + 1).min(1 << 20);
        for _ in 0..max_steps {
            let g = GridPos::new(x as i32, y as i32);
            if !self.contains(g) {
                return;
            }
            let last = x == x1 && y == y1;
            f(self, g, last);
            if last {
                return;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }

    /// Fraction of cells that are no longer unknown (exploration progress).
    pub fn known_fraction(&self) -> f64 {
        let known = self.cells.iter().filter(|c| c.state != CellState::Unknown).count();
        known as f64 / self.cells.len() as f64
    }

    /// Applies VLM corrections through a guard chain:
    /// confidence ≥ min (else skip) → never an explored cell → never a cell
    /// whose confidence exceeds the cap → write with confidence
    /// `min(correction, cap)`.
    pub fn apply_corrections(&mut self, corrections: &[Correction], guard: &CorrectionGuard) -> CorrectionReport {
        let mut rep = CorrectionReport::default();
        for c in corrections {
            if c.confidence.is_nan() || c.confidence < guard.min_confidence {
                rep.skipped_low_confidence += 1;
                continue;
            }
            let Some(g) = self.world_to_grid(Point2::new(c.pos_m[0], c.pos_m[1])) else {
                rep.skipped_out_of_bounds += 1;
                continue;
            };
            let Some(cell) = self.get_mut(g) else {
                rep.skipped_out_of_bounds += 1;
                continue;
            };
            if cell.state == CellState::Explored {
                rep.skipped_explored += 1;
                continue;
            }
            if f64::from(cell.confidence) > guard.max_override {
                rep.skipped_high_confidence += 1;
                continue;
            }
            cell.state = c.observed_state.into();
            cell.confidence = c.confidence.min(guard.max_override) as f32;
            rep.applied += 1;
        }
        rep
    }

    /// The run-length encoding used in prompts: rows from north (highest y)
    /// to south separated by `/`, each row west→east as `<count><code>` runs
    /// with codes U(nknown) F(ree) E(xplored) O(bstacle) W(all).
    ///
    /// ```
    /// use nav_core::grid::{OccupancyGrid, GridPos, CellState};
    /// use nav_core::geometry::Point2;
    /// let mut g = OccupancyGrid::new(4, 2, 0.1, Point2::new(0.0, 0.0)).unwrap();
    /// g.set(GridPos::new(0, 0), CellState::Wall, 1.0);
    /// g.set(GridPos::new(1, 0), CellState::Free, 1.0);
    /// assert_eq!(g.to_rle(), "4U/1W1F2U");
    /// ```
    pub fn to_rle(&self) -> String {
        let mut s = String::with_capacity(self.height * 8);
        for row in (0..self.height).rev() {
            if row + 1 != self.height {
                s.push('/');
            }
            let cells = &self.cells[row * self.width..(row + 1) * self.width];
            let mut run_state = cells[0].state;
            let mut run = 0usize;
            for c in cells {
                if c.state == run_state {
                    run += 1;
                } else {
                    let _ = write!(s, "{run}{}", run_state.code());
                    run_state = c.state;
                    run = 1;
                }
            }
            let _ = write!(s, "{run}{}", run_state.code());
        }
        s
    }

    /// Decodes [`OccupancyGrid::to_rle`] into row-major states (south row
    /// first) for a grid of the given size.
    pub fn decode_rle(rle: &str, width: usize, height: usize) -> Result<Vec<CellState>, CoreError> {
        let rows: Vec<&str> = rle.split('/').collect();
        if rows.len() != height {
            return Err(CoreError::Rle(format!("expected {height} rows, found {}", rows.len())));
        }
        let mut out = vec![CellState::Unknown; width * height];
        for (k, row) in rows.iter().enumerate() {
            let y = height - 1 - k;
            let mut x = 0usize;
            let mut num = 0usize;
            for ch in row.chars() {
                if let Some(d) = ch.to_digit(10) {
                    num = num
                        .checked_mul(10)
                        .and_then(|n| n.checked_add(d as usize))
                        .ok_or_else(|| CoreError::Rle("run length overflow".into()))?;
                } else {
                    let st =
                        CellState::from_code(ch).ok_or_else(|| CoreError::Rle(format!("unknown cell code {ch:?}")))?;
                    if num == 0 || x + num > width {
                        return Err(CoreError::Rle(format!("row {k}: bad run length {num}")));
                    }
                    for c in &mut out[y * width + x..y * width + x + num] {
                        *c = st;
                    }
                    x += num;
                    num = 0;
                }
            }
            if x != width || num != 0 {
                return Err(CoreError::Rle(format!("row {k} covers {x} of {width} cells")));
            }
        }
        Ok(out)
    }

    /// Euclidean distance (metres) from each cell centre to the nearest
    /// obstacle or wall cell centre; `f32::INFINITY` when there is none.
    /// Exact (Felzenszwalb–Huttenlocher), O(cells).
    pub fn clearance_map(&self) -> Vec<f32> {
        self.clearance_window(0, 0, self.width, self.height)
    }

    /// The exact clearance (metres) of the cells in `[x0, x1) × [y0, y1)`
    /// to the blocking cells inside that window, row by row (`(x1 - x0) ×
    /// (y1 - y0)` values; `f32::INFINITY` where the window holds none).
    /// When every blocking cell of the grid lies inside the window, these
    /// are the grid's clearances there: a cost map only needs the cells
    /// near obstacles, and a large map the robot has seen little of then
    /// costs little. The window is clipped to the grid.
    pub fn clearance_window(&self, x0: usize, y0: usize, x1: usize, y1: usize) -> Vec<f32> {
        let w = self.width;
        let (x1, y1) = (x1.min(w), y1.min(self.height));
        let (ww, wh) = (x1.saturating_sub(x0), y1.saturating_sub(y0));
        const INF: f64 = 1e20;
        let mut f: Vec<f64> = Vec::with_capacity(ww * wh);
        for y in y0..y0 + wh {
            f.extend(
                self.cells[y * w + x0..y * w + x0 + ww].iter().map(|c| if c.state.is_blocking() { 0.0 } else { INF }),
            );
        }
        let n = ww.max(wh);
        let (mut buf_f, mut buf_d, mut v, mut z) = (vec![0.0; n], vec![0.0; n], vec![0usize; n], vec![0.0; n + 1]);
        // columns
        for x in 0..ww {
            for y in 0..wh {
                buf_f[y] = f[y * ww + x];
            }
            edt_1d(&buf_f[..wh], &mut buf_d[..wh], &mut v, &mut z);
            for y in 0..wh {
                f[y * ww + x] = buf_d[y];
            }
        }
        // rows
        for y in 0..wh {
            buf_f[..ww].copy_from_slice(&f[y * ww..(y + 1) * ww]);
            edt_1d(&buf_f[..ww], &mut buf_d[..ww], &mut v, &mut z);
            f[y * ww..(y + 1) * ww].copy_from_slice(&buf_d[..ww]);
        }
        f.iter().map(|&d2| if d2 >= INF * 0.5 { f32::INFINITY } else { (d2.sqrt() * self.resolution) as f32 }).collect()
    }

    /// How much of the space around `from` has been observed: the cells
    /// reachable from `from` (4-connected, through free, explored and
    /// unknown cells, never through an obstacle or wall) within `radius_m`
    /// of it, and of those the fraction no longer unknown. Walls bound the
    /// region, so around a robot in a room it is that room's explored share
    /// (plus what a doorway lets through within the radius). `None` when
    /// `from` is off the grid or the region is empty. Work and memory are
    /// bounded by the disc's cell count.
    pub fn explored_fraction_around(&self, from: Point2, radius_m: f64) -> Option<f64> {
        let start = self.world_to_grid(from)?;
        if !(radius_m.is_finite() && radius_m > 0.0) {
            return None;
        }
        let r_cells = (radius_m / self.resolution).ceil() as i32;
        let r2 = i64::from(r_cells) * i64::from(r_cells);
        let side = (2 * r_cells + 1) as usize;
        let mut seen = vec![false; side * side];
        let local = |g: GridPos| ((g.y - start.y + r_cells) as usize) * side + (g.x - start.x + r_cells) as usize;
        let (mut known, mut unknown) = (0u32, 0u32);
        let mut stack = vec![start];
        seen[local(start)] = true;
        while let Some(g) = stack.pop() {
            let state = self.state(g);
            if state.is_blocking() {
                continue;
            }
            if state == CellState::Unknown {
                unknown += 1;
            } else {
                known += 1;
            }
            for (dx, dy) in [(1, 0), (-1, 0), (0, 1), (0, -1)] {
                let n = GridPos::new(g.x + dx, g.y + dy);
                let (ox, oy) = (i64::from(n.x - start.x), i64::from(n.y - start.y));
                if ox * ox + oy * oy > r2 || !self.contains(n) {
                    continue;
                }
                let i = local(n);
                if !seen[i] {
                    seen[i] = true;
                    stack.push(n);
                }
            }
        }
        let total = known + unknown;
        (total > 0).then(|| f64::from(known) / f64::from(total))
    }

    /// Fraction of unknown cells among the cells within `radius_cells`
    /// (Chebyshev) of `g`, counting only cells inside the grid.
    pub fn unknown_fraction_around(&self, g: GridPos, radius_cells: i32) -> f64 {
        let (mut unknown, mut total) = (0u32, 0u32);
        for dy in -radius_cells..=radius_cells {
            for dx in -radius_cells..=radius_cells {
                if let Some(c) = self.get(GridPos::new(g.x + dx, g.y + dy)) {
                    total += 1;
                    if c.state == CellState::Unknown {
                        unknown += 1;
                    }
                }
            }
        }
        if total == 0 { 0.0 } else { f64::from(unknown) / f64::from(total) }
    }
}

/// 1-D squared Euclidean distance transform of a sampled function.
fn edt_1d(f: &[f64], d: &mut [f64], v: &mut [usize], z: &mut [f64]) {
    let n = f.len();
    if n == 0 {
        return;
    }
    let mut k = 0usize;
    v[0] = 0;
    z[0] = f64::NEG_INFINITY;
    z[1] = f64::INFINITY;
    for q in 1..n {
        let mut s;
        loop {
            let p = v[k];
            s = ((f[q] + (q * q) as f64) - (f[p] + (p * p) as f64)) / (2.0 * (q as f64 - p as f64));
            if s <= z[k] && k > 0 {
                k -= 1;
            } else {
                break;
            }
        }
        k += 1;
        v[k] = q;
        z[k] = s;
        z[k + 1] = f64::INFINITY;
    }
    k = 0;
    for (q, dq) in d.iter_mut().enumerate().take(n) {
        while z[k + 1] < q as f64 {
            k += 1;
        }
        let p = v[k];
        let diff = q as f64 - p as f64;
        *dq = diff * diff + f[p];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn grid(w: usize, h: usize) -> OccupancyGrid {
        OccupancyGrid::new(w, h, 0.1, Point2::new(-(w as f64) * 0.05, -(h as f64) * 0.05)).unwrap()
    }

    #[test]
    fn transforms_round_trip_cell_centres() {
        let g = grid(50, 50);
        let p = g.grid_to_world(GridPos::new(10, 20));
        assert_eq!(g.world_to_grid(p), Some(GridPos::new(10, 20)));
        assert!((p.x - (-2.5 + 1.05)).abs() < 1e-9);
        assert_eq!(g.world_to_grid(Point2::new(100.0, 0.0)), None);
        assert_eq!(g.world_to_grid(Point2::new(f64::NAN, 0.0)), None);
    }

    #[test]
    fn explored_fraction_stops_at_walls() {
        // a 2 m x 2 m room (walls at x = ±1, y = ±1) in a 5 m grid, its left half seen
        let mut g = grid(50, 50);
        for i in 0..50 {
            for j in 0..50 {
                let p = g.grid_to_world(GridPos::new(i, j));
                let wall = (p.x.abs() - 1.0).abs() < 0.06 && p.y.abs() <= 1.06
                    || (p.y.abs() - 1.0).abs() < 0.06 && p.x.abs() <= 1.06;
                if wall {
                    g.set(GridPos::new(i, j), CellState::Wall, 1.0);
                } else if p.x < 0.0 && p.x.abs() < 1.0 && p.y.abs() < 1.0 {
                    g.set(GridPos::new(i, j), CellState::Free, 1.0);
                }
            }
        }
        let f = g.explored_fraction_around(Point2::new(-0.5, 0.0), 3.0).unwrap();
        assert!((f - 0.5).abs() < 0.08, "half the room is seen: {f}");
        // everything seen inside: the unknown space beyond the walls does not count
        for i in 0..50 {
            for j in 0..50 {
                let p = g.grid_to_world(GridPos::new(i, j));
                if p.x.abs() < 0.94 && p.y.abs() < 0.94 {
                    g.set(GridPos::new(i, j), CellState::Free, 1.0);
                }
            }
        }
        assert_eq!(g.explored_fraction_around(Point2::new(-0.5, 0.0), 3.0), Some(1.0));
        assert_eq!(g.explored_fraction_around(Point2::new(100.0, 0.0), 3.0), None);
        assert_eq!(g.explored_fraction_around(Point2::new(0.0, 0.0), f64::NAN), None);
    }

    #[test]
    fn rejects_bad_grids() {
        assert!(OccupancyGrid::new(0, 5, 0.1, Point2::default()).is_err());
        assert!(OccupancyGrid::new(5, 5, 0.0, Point2::default()).is_err());
        assert!(OccupancyGrid::covering(1.0, 0.0, 0.0, 1.0, 0.1).is_err());
    }

    #[test]
    fn corrections_follow_the_guard_chain() {
        let mut g = grid(10, 10);
        let p = |gx, gy| {
            let w = g.grid_to_world(GridPos::new(gx, gy));
            [w.x, w.y]
        };
        let (a, b, c, d, e) = (p(1, 1), p(2, 2), p(3, 3), p(4, 4), p(5, 5));
        g.set(GridPos::new(2, 2), CellState::Explored, 1.0);
        g.set(GridPos::new(3, 3), CellState::Free, 0.8);
        g.set(GridPos::new(4, 4), CellState::Free, 0.7);
        let corr = |pos, conf| Correction { pos_m: pos, observed_state: ObservedState::Obstacle, confidence: conf };
        let rep = g.apply_corrections(
            &[
                corr(a, 0.59),          // below 0.6 → skip
                corr(b, 0.9),           // explored → skip
                corr(c, 0.9),           // cell conf 0.8 > 0.7 → skip
                corr(d, 0.95),          // cell conf 0.7 (not > 0.7) → apply, capped at 0.7
                corr(e, 0.65),          // unknown cell → apply at 0.65
                corr([99.0, 0.0], 0.9), // out of bounds
                corr(e, f64::NAN),      // NaN → skip
            ],
            &CorrectionGuard::default(),
        );
        assert_eq!(rep.applied, 2);
        assert_eq!(rep.skipped_low_confidence, 2);
        assert_eq!(rep.skipped_explored, 1);
        assert_eq!(rep.skipped_high_confidence, 1);
        assert_eq!(rep.skipped_out_of_bounds, 1);
        let c4 = g.get(GridPos::new(4, 4)).unwrap();
        assert_eq!(c4.state, CellState::Obstacle);
        assert!((c4.confidence - 0.7).abs() < 1e-6);
        let c5 = g.get(GridPos::new(5, 5)).unwrap();
        assert!((c5.confidence - 0.65).abs() < 1e-6);
        assert_eq!(g.get(GridPos::new(2, 2)).unwrap().state, CellState::Explored);
    }

    #[test]
    fn scan_marks_free_and_hit() {
        let mut g = grid(50, 50);
        let mut scan = LaserScan::full_circle(360, 0.05, 12.0, f32::INFINITY);
        scan.ranges[180] = 1.0; // ahead (angle 0)
        g.integrate_scan(Pose2::origin(), &scan, &ScanIntegration::default());
        let hit = g.world_to_grid(Point2::new(1.0, 0.0)).unwrap();
        assert_eq!(g.state(hit), CellState::Obstacle);
        let mid = g.world_to_grid(Point2::new(0.5, 0.0)).unwrap();
        assert_eq!(g.state(mid), CellState::Free);
        let behind = g.world_to_grid(Point2::new(-1.5, 0.0)).unwrap();
        assert_eq!(g.state(behind), CellState::Free);
        assert!(g.known_fraction() > 0.3);
    }

    #[test]
    fn clearance_is_euclidean() {
        let mut g = grid(20, 20);
        g.set(GridPos::new(10, 10), CellState::Obstacle, 1.0);
        let cl = g.clearance_map();
        let at = |x: i32, y: i32| cl[g.index(GridPos::new(x, y)).unwrap()];
        assert_eq!(at(10, 10), 0.0);
        assert!((at(13, 14) - 0.5).abs() < 1e-6); // 3-4-5 triangle, 0.1 m cells
        let empty = grid(5, 5).clearance_map();
        assert!(empty.iter().all(|d| d.is_infinite()));
    }

    proptest! {
        #[test]
        fn rle_round_trips(w in 1usize..30, h in 1usize..30, seed in proptest::collection::vec(0u8..5, 900)) {
            let mut g = grid(w, h);
            for (i, s) in seed.iter().take(w * h).enumerate() {
                let st = [CellState::Unknown, CellState::Free, CellState::Explored, CellState::Obstacle, CellState::Wall][*s as usize];
                let p = g.pos_of(i);
                g.set(p, st, 1.0);
            }
            let decoded = OccupancyGrid::decode_rle(&g.to_rle(), w, h).unwrap();
            let states: Vec<CellState> = g.cells().iter().map(|c| c.state).collect();
            prop_assert_eq!(decoded, states);
        }

        #[test]
        fn clearance_matches_brute_force(cells in proptest::collection::vec(proptest::bool::weighted(0.1), 144)) {
            let mut g = grid(12, 12);
            for (i, b) in cells.iter().enumerate() {
                if *b { let p = g.pos_of(i); g.set(p, CellState::Wall, 1.0); }
            }
            let cl = g.clearance_map();
            for (i, cli) in cl.iter().enumerate() {
                let p = g.pos_of(i);
                let brute = (0..144).filter(|j| cells[*j]).map(|j| {
                    let q = g.pos_of(j);
                    (((p.x - q.x).pow(2) + (p.y - q.y).pow(2)) as f64).sqrt() * 0.1
                }).fold(f64::INFINITY, f64::min);
                if brute.is_infinite() { prop_assert!(cli.is_infinite()); }
                else { prop_assert!((*cli as f64 - brute).abs() < 1e-5, "{} vs {}", cli, brute); }
            }
        }

        #[test]
        fn clearance_window_matches_the_map_around_every_obstacle(
            cells in proptest::collection::vec(proptest::bool::weighted(0.02), 900),
            margin in 0usize..6,
        ) {
            let mut g = grid(30, 30);
            for (i, b) in cells.iter().enumerate() {
                if *b { let p = g.pos_of(i); g.set(p, CellState::Obstacle, 1.0); }
            }
            let blocked: Vec<usize> = (0..900).filter(|i| cells[*i]).collect();
            let (x0, y0) = (blocked.iter().map(|i| i % 30).min().unwrap_or(0), blocked.iter().map(|i| i / 30).min().unwrap_or(0));
            let (x1, y1) = (blocked.iter().map(|i| i % 30 + 1).max().unwrap_or(0), blocked.iter().map(|i| i / 30 + 1).max().unwrap_or(0));
            let (x0, y0, x1, y1) = (x0.saturating_sub(margin), y0.saturating_sub(margin), x1 + margin, y1 + margin);
            let full = g.clearance_map();
            let win = g.clearance_window(x0, y0, x1, y1);
            let (x1, y1) = (x1.min(30), y1.min(30));
            prop_assert_eq!(win.len(), (x1 - x0) * (y1 - y0));
            for y in y0..y1 {
                for x in x0..x1 {
                    prop_assert_eq!(win[(y - y0) * (x1 - x0) + x - x0], full[y * 30 + x]);
                }
            }
        }
    }
}
