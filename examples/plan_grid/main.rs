//! Plans across a built-in grid with walls and prints the path as a map.
//!
//! Run: `cargo run -p navkit-examples --example plan_grid`
use nav_core::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut grid = OccupancyGrid::new(40, 20, 0.1, Point2::new(0.0, 0.0))?;
    for i in 0..grid.width() * grid.height() {
        let p = grid.pos_of(i);
        grid.set(p, CellState::Free, 1.0);
    }
    for y in 0..15 {
        grid.set(GridPos::new(13, y), CellState::Wall, 1.0);
    }
    for y in 5..20 {
        grid.set(GridPos::new(26, y), CellState::Wall, 1.0);
    }
    let costs = CostMap::from_grid(&grid, &CostMapConfig::ground_truth());
    let mut planner = GridPlanner::new(PlannerConfig::default());
    let start = Point2::new(0.25, 0.25);
    let goal = Point2::new(3.85, 1.85);
    let path = planner.plan_world(&costs, start, goal, &FrozenClock);
    if !path.success {
        return Err(format!("planning failed: {:?}", path.error).into());
    }
    for row in (0..grid.height() as i32).rev() {
        let line: String = (0..grid.width() as i32)
            .map(|x| {
                let p = GridPos::new(x, row);
                if path.waypoints.iter().any(|w| w.gx == x && w.gy == row) {
                    '*'
                } else if path.cells.contains(&p) {
                    '.'
                } else if grid.state(p).is_blocking() {
                    '#'
                } else {
                    ' '
                }
            })
            .collect();
        println!("|{line}|");
    }
    println!("path: {} waypoints, {:.2} m, cost {:.2}", path.waypoints.len(), path.path_length_m, path.total_cost);
    Ok(())
}
