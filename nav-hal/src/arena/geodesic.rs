//! Geodesic distances for SPL and reachability: shortest paths of the robot
//! *centre* through configuration space (free where the robot disc fits),
//! on a fine grid with 16-connected Dijkstra.
//!
//! 16 neighbours (orthogonal, diagonal and knight moves) bound the grid
//! path's overestimate of the true Euclidean shortest path to about 2.7 %
//! (8 neighbours: 8.2 %). Diagonal and knight moves require the cells they
//! cut through to be free, so paths never squeeze past corners. A
//! continuous query point is joined to the best free cell centre within
//! two cells, so `geodesic(p) ≥ euclidean(p, target region)` always holds.

use super::scene::{Scene, seg_distance};
use nav_core::geometry::Point2;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Free cells of the configuration space on a regular grid.
#[derive(Debug, Clone)]
pub(crate) struct ConfigGrid {
    x0: f64,
    y0: f64,
    cell: f64,
    nx: usize,
    ny: usize,
    free: Vec<bool>,
}

const NEIGHBOURS: [(i64, i64, f64); 16] = [
    (1, 0, 1.0),
    (-1, 0, 1.0),
    (0, 1, 1.0),
    (0, -1, 1.0),
    (1, 1, std::f64::consts::SQRT_2),
    (1, -1, std::f64::consts::SQRT_2),
    (-1, 1, std::f64::consts::SQRT_2),
    (-1, -1, std::f64::consts::SQRT_2),
    (1, 2, 2.236_067_977_499_79),
    (-1, 2, 2.236_067_977_499_79),
    (1, -2, 2.236_067_977_499_79),
    (-1, -2, 2.236_067_977_499_79),
    (2, 1, 2.236_067_977_499_79),
    (-2, 1, 2.236_067_977_499_79),
    (2, -1, 2.236_067_977_499_79),
    (-2, -1, 2.236_067_977_499_79),
];

impl ConfigGrid {
    /// Rasterizes the scene inflated by `radius` over `bounds` with square
    /// cells of `cell` metres. A cell is free when its centre is at least
    /// `radius` from every wall and circle surface.
    pub fn new(scene: &Scene, bounds: [f64; 4], radius: f64, cell: f64) -> Self {
        let [x0, y0, x1, y1] = bounds;
        let nx = (((x1 - x0) / cell).ceil() as usize).max(1);
        let ny = (((y1 - y0) / cell).ceil() as usize).max(1);
        let mut g = Self { x0, y0, cell, nx, ny, free: vec![true; nx * ny] };
        for s in &scene.segs {
            let (lx, hx) = (s.a.x.min(s.b.x) - radius, s.a.x.max(s.b.x) + radius);
            let (ly, hy) = (s.a.y.min(s.b.y) - radius, s.a.y.max(s.b.y) + radius);
            g.block_where(lx, ly, hx, hy, |p| seg_distance(s, p) < radius);
        }
        for c in &scene.circles {
            let rr = c.r + radius;
            g.block_where(c.c.x - rr, c.c.y - rr, c.c.x + rr, c.c.y + rr, |p| p.distance(c.c) < rr);
        }
        g
    }

    fn block_where(&mut self, lx: f64, ly: f64, hx: f64, hy: f64, blocked: impl Fn(Point2) -> bool) {
        let i0 = (((lx - self.x0) / self.cell).floor().max(0.0)) as usize;
        let j0 = (((ly - self.y0) / self.cell).floor().max(0.0)) as usize;
        let i1 = ((((hx - self.x0) / self.cell).ceil()).max(0.0) as usize).min(self.nx);
        let j1 = ((((hy - self.y0) / self.cell).ceil()).max(0.0) as usize).min(self.ny);
        for j in j0..j1 {
            for i in i0..i1 {
                let k = j * self.nx + i;
                if self.free[k] && blocked(self.centre(i, j)) {
                    self.free[k] = false;
                }
            }
        }
    }

    pub fn centre(&self, i: usize, j: usize) -> Point2 {
        Point2::new(self.x0 + (i as f64 + 0.5) * self.cell, self.y0 + (j as f64 + 0.5) * self.cell)
    }

    pub fn len(&self) -> usize {
        self.free.len()
    }

    /// Centre of cell index `k`.
    pub fn centre_of(&self, k: usize) -> Point2 {
        self.centre(k % self.nx, k / self.nx)
    }

    /// Multi-source Dijkstra from every free cell whose centre satisfies
    /// `is_target`: the path length (metres) from each cell to the target
    /// region, `f64::INFINITY` where unreachable.
    pub fn distance_field(&self, is_target: impl Fn(Point2) -> bool) -> Vec<f64> {
        self.dijkstra((0..self.free.len()).filter(|&k| self.free[k] && is_target(self.centre_of(k))))
    }

    /// Dijkstra from the given free cells (distance 0 each).
    fn dijkstra(&self, seeds: impl Iterator<Item = usize>) -> Vec<f64> {
        let mut dist = vec![f64::INFINITY; self.free.len()];
        let mut heap = BinaryHeap::new();
        for k in seeds {
            dist[k] = 0.0;
            heap.push(Reverse((0u64, k)));
        }
        while let Some(Reverse((bits, k))) = heap.pop() {
            let d = f64::from_bits(bits);
            if d > dist[k] {
                continue;
            }
            let (i, j) = ((k % self.nx) as i64, (k / self.nx) as i64);
            for &(dx, dy, w) in &NEIGHBOURS {
                let Some(n) = self.index(i + dx, j + dy) else { continue };
                if !self.free[n] || !self.passable(i, j, dx, dy) {
                    continue;
                }
                let nd = d + w * self.cell;
                if nd < dist[n] {
                    dist[n] = nd;
                    heap.push(Reverse((nd.to_bits(), n)));
                }
            }
        }
        dist
    }

    /// Cells reachable from `p` (joined to its nearby free cells).
    pub fn reachable_from(&self, p: Point2) -> Vec<bool> {
        let near = self.near_free(p);
        self.dijkstra(near.iter().map(|&(k, _)| k)).iter().map(|d| d.is_finite()).collect()
    }

    fn index(&self, i: i64, j: i64) -> Option<usize> {
        (i >= 0 && j >= 0 && (i as usize) < self.nx && (j as usize) < self.ny)
            .then(|| j as usize * self.nx + i as usize)
    }

    fn free_at(&self, i: i64, j: i64) -> bool {
        self.index(i, j).is_some_and(|k| self.free[k])
    }

    /// Diagonal and knight moves must not cut blocked cells.
    fn passable(&self, i: i64, j: i64, dx: i64, dy: i64) -> bool {
        let (sx, sy) = (dx.signum(), dy.signum());
        match (dx.abs(), dy.abs()) {
            (1, 1) => self.free_at(i + dx, j) && self.free_at(i, j + dy),
            (1, 2) => self.free_at(i, j + sy) && self.free_at(i + dx, j + sy),
            (2, 1) => self.free_at(i + sx, j) && self.free_at(i + sx, j + dy),
            _ => true,
        }
    }

    /// Free cells within two cells of `p`, with the straight distance from
    /// `p` to their centre.
    fn near_free(&self, p: Point2) -> Vec<(usize, f64)> {
        if !p.is_finite() {
            return Vec::new();
        }
        let ci = ((p.x - self.x0) / self.cell).floor() as i64;
        let cj = ((p.y - self.y0) / self.cell).floor() as i64;
        let mut out = Vec::new();
        for j in cj - 2..=cj + 2 {
            for i in ci - 2..=ci + 2 {
                if let Some(k) = self.index(i, j).filter(|&k| self.free[k]) {
                    out.push((k, p.distance(self.centre_of(k))));
                }
            }
        }
        out
    }

    /// Geodesic distance from `p` through a precomputed field: the best
    /// nearby free cell's value plus the straight hop to it.
    pub fn lookup(&self, field: &[f64], p: Point2) -> Option<f64> {
        self.near_free(p)
            .into_iter()
            .filter_map(|(k, hop)| field.get(k).filter(|d| d.is_finite()).map(|d| d + hop))
            .min_by(f64::total_cmp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::Arena;

    #[test]
    fn open_room_distance_is_nearly_euclidean() {
        let arena = Arena::builtin("exploration").unwrap();
        let mut a = arena.clone();
        a.obstacles.clear();
        let scene = Scene::from_arena(&a);
        let g = ConfigGrid::new(&scene, a.bounds, 0.18, 0.05);
        let target = Point2::new(1.5, 1.0);
        let field = g.distance_field(|c| c.distance(target) <= 0.05);
        let from = Point2::new(-1.5, -1.0);
        let d = g.lookup(&field, from).unwrap();
        let e = from.distance(target) - 0.05;
        assert!(d >= e, "{d} < {e}");
        assert!(d <= e * 1.03 + 0.1, "{d} vs {e}");
    }
}
