//! The A* search ([`GridPlanner`]).

use super::open_list::OpenList;
use super::*;

/// Per-cell search flags of [`GridPlanner`], one byte so the table of a
/// 1024×1024 map stays in cache: bits 0..3 the direction (index into
/// [`DIRS`]) of the step that reached the cell, bit 3 [`CLOSED`], bits 4..8
/// the search generation that wrote it (1..=15; 0 = never).
pub(super) const CLOSED: u8 = 1 << 3;
/// Shift of the generation in a flags byte.
pub(super) const GEN_SHIFT: u32 = 4;
/// Generations cycle through 1..=15; the table is cleared on wrap-around.
pub(super) const MAX_GENERATION: u8 = 15;

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
