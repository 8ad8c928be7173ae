//! Frontier detection: free or explored cells with at least one
//! unknown 4-neighbour, grouped into clusters of radius 0.5 m.

use crate::geometry::Point2;
use crate::grid::{CellState, GridPos, OccupancyGrid};
use serde::{Deserialize, Serialize};

/// A cluster of frontier cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrontierCluster {
    /// Mean world position of the member cells.
    pub centroid: Point2,
    /// Number of member cells.
    pub size: usize,
    /// The member cells.
    pub cells: Vec<GridPos>,
}

/// All frontier cells, in row-major order.
pub fn frontier_cells(grid: &OccupancyGrid) -> Vec<GridPos> {
    let mut out = Vec::new();
    for (i, c) in grid.cells().iter().enumerate() {
        if !c.state.is_traversable() {
            continue;
        }
        let p = grid.pos_of(i);
        let unknown_neighbour = [(1, 0), (-1, 0), (0, 1), (0, -1)]
            .iter()
            .any(|(dx, dy)| grid.get(GridPos::new(p.x + dx, p.y + dy)).is_some_and(|n| n.state == CellState::Unknown));
        if unknown_neighbour {
            out.push(p);
        }
    }
    out
}

/// Groups frontier cells greedily: the first unassigned cell (row-major)
/// seeds a cluster that takes every unassigned cell within `radius_m` of
/// it. Clusters are therefore at most `2 · radius_m` across, so their
/// centroids stay near the frontier. Sorted by size, largest first (ties
/// keep discovery order).
///
/// ```
/// use nav_core::frontier::{frontier_cells, cluster_frontiers};
/// use nav_core::grid::{OccupancyGrid, GridPos, CellState};
/// use nav_core::geometry::Point2;
/// let mut g = OccupancyGrid::new(10, 10, 0.1, Point2::new(0.0, 0.0)).unwrap();
/// for x in 0..10 { for y in 0..5 { g.set(GridPos::new(x, y), CellState::Free, 1.0); } }
/// let clusters = cluster_frontiers(&g, &frontier_cells(&g), 0.5);
/// assert_eq!(clusters.iter().map(|c| c.size).sum::<usize>(), 10); // row y = 4
/// ```
pub fn cluster_frontiers(grid: &OccupancyGrid, cells: &[GridPos], radius_m: f64) -> Vec<FrontierCluster> {
    let mut assigned = vec![false; cells.len()];
    let mut clusters = Vec::new();
    let r2 = radius_m * radius_m;
    for i in 0..cells.len() {
        if assigned[i] {
            continue;
        }
        let seed = grid.grid_to_world(cells[i]);
        let mut members = Vec::new();
        let (mut sx, mut sy) = (0.0, 0.0);
        for j in i..cells.len() {
            if assigned[j] {
                continue;
            }
            let p = grid.grid_to_world(cells[j]);
            if p.distance_sq(seed) <= r2 + 1e-12 {
                assigned[j] = true;
                members.push(cells[j]);
                sx += p.x;
                sy += p.y;
            }
        }
        let n = members.len() as f64;
        clusters.push(FrontierCluster { centroid: Point2::new(sx / n, sy / n), size: members.len(), cells: members });
    }
    clusters.sort_by_key(|c| std::cmp::Reverse(c.size));
    clusters
}

/// Frontier clusters of a grid with a 0.5 m radius.
pub fn find_frontiers(grid: &OccupancyGrid) -> Vec<FrontierCluster> {
    cluster_frontiers(grid, &frontier_cells(grid), 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontier_needs_unknown_four_neighbour() {
        let mut g = OccupancyGrid::new(5, 5, 0.1, Point2::new(0.0, 0.0)).unwrap();
        for x in 0..5 {
            for y in 0..5 {
                g.set(GridPos::new(x, y), CellState::Free, 1.0);
            }
        }
        g.set(GridPos::new(2, 2), CellState::Unknown, 0.0);
        let f = frontier_cells(&g);
        assert_eq!(f.len(), 4);
        assert!(f.contains(&GridPos::new(2, 1)));
        assert!(!f.contains(&GridPos::new(1, 1))); // only diagonal to the unknown cell
        // obstacles next to unknown are not frontiers
        g.set(GridPos::new(2, 1), CellState::Obstacle, 1.0);
        assert_eq!(frontier_cells(&g).len(), 3);
    }

    #[test]
    fn clusters_are_bounded_by_radius() {
        let mut g = OccupancyGrid::new(40, 3, 0.1, Point2::new(0.0, 0.0)).unwrap();
        for x in 0..40 {
            g.set(GridPos::new(x, 0), CellState::Free, 1.0);
        }
        let clusters = find_frontiers(&g);
        // a 4 m frontier line splits into clusters each spanning ≤ 1 m
        assert!(clusters.len() >= 4);
        for c in &clusters {
            let xs: Vec<f64> = c.cells.iter().map(|p| g.grid_to_world(*p).x).collect();
            let span = xs.iter().cloned().fold(f64::MIN, f64::max) - xs.iter().cloned().fold(f64::MAX, f64::min);
            assert!(span <= 1.0 + 1e-9);
        }
        assert_eq!(clusters.iter().map(|c| c.size).sum::<usize>(), 40);
    }
}
