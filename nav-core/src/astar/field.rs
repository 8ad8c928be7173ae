//! Dijkstra distance fields under the planner's move model.

use super::open_list::OpenList;
use super::*;

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
