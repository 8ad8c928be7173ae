//! Coverage: the fraction of free floor the robot's sensors have seen.
//!
//! The floor is a grid of square cells (default 0.1 m). A cell is *free*
//! when its centre is outside every circle and farther than half a cell
//! diagonal from every wall, and it is connected (4-neighbour) to the start
//! cell, so sealed pockets never count against the robot. Each LiDAR scan
//! or camera image marks the cells inside the fan of its rays (grouped into
//! wedges of at most 1°, each as far as its shortest ray, capped at the
//! coverage range) as seen.

use crate::arena::scene::{Scene, seg_distance};
use nav_core::geometry::{Point2, normalize_angle};
use std::f64::consts::{PI, TAU};

const WEDGE_RAD: f64 = PI / 180.0;

#[derive(Debug, Clone)]
pub(crate) struct Coverage {
    x0: f64,
    y0: f64,
    cell: f64,
    nx: usize,
    ny: usize,
    free: Vec<bool>,
    seen: Vec<bool>,
    total: usize,
    count: usize,
    /// Origin and range of the fans recorded in `mask`.
    last: Option<(Point2, f64)>,
    /// One bit per degree of world heading already integrated from `last`.
    mask: [u64; 6],
}

impl Coverage {
    pub fn new(scene: &Scene, bounds: [f64; 4], cell: f64, start: Point2) -> Self {
        let [x0, y0, x1, y1] = bounds;
        let nx = (((x1 - x0) / cell).ceil() as usize).max(1);
        let ny = (((y1 - y0) / cell).ceil() as usize).max(1);
        let half_diag = cell * std::f64::consts::FRAC_1_SQRT_2;
        let mut open = vec![true; nx * ny];
        let centre = |i: usize, j: usize| Point2::new(x0 + (i as f64 + 0.5) * cell, y0 + (j as f64 + 0.5) * cell);
        let cell_range = |lo: f64, hi: f64, origin: f64, n: usize| {
            let a = (((lo - origin) / cell).floor().max(0.0)) as usize;
            let b = ((((hi - origin) / cell).ceil()).max(0.0) as usize).min(n);
            a..b
        };
        for s in &scene.segs {
            for j in cell_range(s.a.y.min(s.b.y) - cell, s.a.y.max(s.b.y) + cell, y0, ny) {
                for i in cell_range(s.a.x.min(s.b.x) - cell, s.a.x.max(s.b.x) + cell, x0, nx) {
                    if seg_distance(s, centre(i, j)) <= half_diag {
                        open[j * nx + i] = false;
                    }
                }
            }
        }
        for c in &scene.circles {
            for j in cell_range(c.c.y - c.r, c.c.y + c.r, y0, ny) {
                for i in cell_range(c.c.x - c.r, c.c.x + c.r, x0, nx) {
                    if centre(i, j).distance(c.c) < c.r {
                        open[j * nx + i] = false;
                    }
                }
            }
        }
        // Keep the component connected to the start.
        let si = ((start.x - x0) / cell).floor();
        let sj = ((start.y - y0) / cell).floor();
        let mut free = vec![false; nx * ny];
        if si >= 0.0 && sj >= 0.0 && (si as usize) < nx && (sj as usize) < ny && open[sj as usize * nx + si as usize] {
            let mut stack = vec![sj as usize * nx + si as usize];
            free[stack[0]] = true;
            while let Some(k) = stack.pop() {
                let (i, j) = (k % nx, k / nx);
                let mut visit = |n: usize| {
                    if open[n] && !free[n] {
                        free[n] = true;
                        stack.push(n);
                    }
                };
                if i > 0 {
                    visit(k - 1);
                }
                if i + 1 < nx {
                    visit(k + 1);
                }
                if j > 0 {
                    visit(k - nx);
                }
                if j + 1 < ny {
                    visit(k + nx);
                }
            }
        } else {
            free = open;
        }
        let total = free.iter().filter(|f| **f).count();
        Self { x0, y0, cell, nx, ny, seen: vec![false; nx * ny], free, total, count: 0, last: None, mask: [0; 6] }
    }

    /// Fraction of free cells seen, in `[0, 1]`.
    pub fn fraction(&self) -> f64 {
        if self.total == 0 { 0.0 } else { self.count as f64 / self.total as f64 }
    }

    /// Area of the free cells seen, m².
    pub fn seen_area_m2(&self) -> f64 {
        self.count as f64 * self.cell * self.cell
    }

    /// Number of free cells.
    #[cfg(test)]
    pub fn free_cells(&self) -> usize {
        self.total
    }

    /// Forgets everything seen.
    pub fn clear(&mut self) {
        self.seen.fill(false);
        self.count = 0;
        self.last = None;
        self.mask = [0; 6];
    }

    /// Marks the fan of rays (angles ascending, relative to `yaw`, with
    /// their hit distances) seen from `origin`, up to `range`.
    pub fn integrate(&mut self, origin: Point2, yaw: f64, angles: &[f64], dist: &[f64], range: f64) {
        let n = angles.len().min(dist.len());
        if n < 2 || !origin.is_finite() || !yaw.is_finite() {
            return;
        }
        let full = angles[0] + TAU - angles[n - 1] <= 1.5 * WEDGE_RAD;
        if self.last != Some((origin, range)) {
            self.last = Some((origin, range));
            self.mask = [0; 6];
        }
        let bins = self.bins(yaw + angles[0], if full { TAU } else { angles[n - 1] - angles[0] });
        if bins.iter().all(|&b| self.mask[b / 64] & (1 << (b % 64)) != 0) {
            return; // nothing new from the same spot
        }
        let reach = |d: f64| if d.is_finite() { d.min(range) } else { range };
        let point = |a: f64, r: f64| {
            let (s, c) = (yaw + a).sin_cos();
            Point2::new(origin.x + r * c, origin.y + r * s)
        };
        let mut i = 0;
        while i + 1 < n {
            let mut j = i + 1;
            while j + 1 < n && angles[j + 1] - angles[i] <= WEDGE_RAD {
                j += 1;
            }
            let r = dist[i..=j].iter().map(|&d| reach(d)).fold(f64::INFINITY, f64::min);
            self.mark_triangle(origin, point(angles[i], r), point(angles[j], r));
            i = j;
        }
        if full {
            let r = reach(dist[n - 1]).min(reach(dist[0]));
            self.mark_triangle(origin, point(angles[n - 1], r), point(angles[0] + TAU, r));
        }
        for b in bins {
            self.mask[b / 64] |= 1 << (b % 64);
        }
    }

    /// Degree bins whose centre lies within `[start, start + span]`.
    fn bins(&self, start: f64, span: f64) -> Vec<usize> {
        let s = normalize_angle(start).to_degrees().rem_euclid(360.0);
        let e = s + span.to_degrees();
        let first = (s - 0.5).ceil() as i64;
        let last = (e - 0.5).floor() as i64;
        (first..=last.min(first + 359)).map(|b| b.rem_euclid(360) as usize).collect()
    }

    /// Marks free cells whose centre lies inside triangle `abc`.
    fn mark_triangle(&mut self, a: Point2, b: Point2, c: Point2) {
        let g = |p: Point2| Point2::new((p.x - self.x0) / self.cell - 0.5, (p.y - self.y0) / self.cell - 0.5);
        let (a, b, c) = (g(a), g(b), g(c));
        let ymin = a.y.min(b.y).min(c.y).ceil().max(0.0);
        let ymax = a.y.max(b.y).max(c.y).floor().min(self.ny as f64 - 1.0);
        if ymin > ymax {
            return;
        }
        for j in ymin as usize..=ymax as usize {
            let y = j as f64;
            let (mut xl, mut xr) = (f64::INFINITY, f64::NEG_INFINITY);
            for (p, q) in [(a, b), (b, c), (c, a)] {
                let (lo, hi) = if p.y <= q.y { (p, q) } else { (q, p) };
                if y < lo.y || y > hi.y {
                    continue;
                }
                if hi.y - lo.y < 1e-12 {
                    xl = xl.min(lo.x.min(hi.x));
                    xr = xr.max(lo.x.max(hi.x));
                } else {
                    let x = lo.x + (y - lo.y) * (hi.x - lo.x) / (hi.y - lo.y);
                    xl = xl.min(x);
                    xr = xr.max(x);
                }
            }
            let i0 = xl.ceil().max(0.0);
            let i1 = xr.floor().min(self.nx as f64 - 1.0);
            if i0 > i1 {
                continue;
            }
            let row = j * self.nx;
            for i in i0 as usize..=i1 as usize {
                let k = row + i;
                if self.free[k] && !self.seen[k] {
                    self.seen[k] = true;
                    self.count += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::Arena;

    #[test]
    fn a_full_scan_in_an_empty_room_sees_the_disc() {
        let mut a = Arena::builtin("exploration").unwrap();
        a.obstacles.clear();
        let scene = Scene::from_arena(&a);
        let mut cov = Coverage::new(&scene, a.bounds, 0.1, Point2::new(0.0, 0.0));
        assert_eq!(cov.free_cells(), 2500 - 4 * 50 + 4);
        let angles: Vec<f64> = (0..720).map(|i| -PI + i as f64 * TAU / 720.0).collect();
        let dist = vec![f64::INFINITY; 720];
        cov.integrate(Point2::new(0.0, 0.0), 0.0, &angles, &dist, 1.0);
        // A 1 m disc holds about π·100 cell centres.
        let seen = cov.fraction() * cov.free_cells() as f64;
        assert!((seen - PI * 100.0).abs() < 12.0, "{seen}");
        let before = cov.fraction();
        cov.integrate(Point2::new(0.0, 0.0), 1.0, &angles, &dist, 1.0);
        assert_eq!(cov.fraction(), before);
    }
}
