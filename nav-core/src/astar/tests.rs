use super::planner::MAX_GENERATION;
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

/// The cost rule of [`CostMap::from_grid`] cell by cell, by brute force
/// over every blocking cell: the reference its windowed, table-driven
/// version must equal.
fn brute_force_costs(g: &OccupancyGrid, cfg: &CostMapConfig) -> Vec<f32> {
    let (w, h) = (g.width(), g.height());
    let blocked: Vec<usize> = (0..w * h).filter(|i| g.cells()[*i].state.is_blocking()).collect();
    (0..w * h)
        .map(|i| {
            let base = match g.cells()[i].state {
                CellState::Obstacle | CellState::Wall => return f32::INFINITY,
                CellState::Unknown => cfg.unknown_cost.max(f32::MIN_POSITIVE),
                CellState::Free | CellState::Explored => 1.0,
            };
            let (x, y) = ((i % w) as i64, (i / w) as i64);
            let d2 = blocked.iter().map(|j| ((*j % w) as i64 - x).pow(2) + ((*j / w) as i64 - y).pow(2)).min();
            let Some(d2) = d2 else { return base };
            let d_m = f64::from(((d2 as f64).sqrt() * g.resolution()) as f32);
            if cfg.robot_radius_m > 0.0 && d_m < cfg.robot_radius_m {
                return f32::INFINITY;
            }
            let r = i64::from(cfg.inflation_cells);
            let cheb = blocked.iter().any(|j| ((*j % w) as i64 - x).abs() <= r && ((*j / w) as i64 - y).abs() <= r);
            if r > 0 && cheb { base.max(cfg.inflated_cost(d_m / g.resolution())) } else { base }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn cost_map_equals_the_brute_force_rule(
        w in 1usize..=60, h in 1usize..=60,
        cells in proptest::collection::vec(0u8..40, 3600),
        inflation in 0u32..8, radius in 0.0f64..0.6, unknown_cost in 1.0f32..60.0,
    ) {
        let mut g = open_grid(w, h);
        for (i, cell) in cells.iter().enumerate().take(w * h) {
            let p = g.pos_of(i);
            match cell {
                0 => g.set(p, CellState::Obstacle, 1.0),
                1 => g.set(p, CellState::Wall, 1.0),
                2..=15 => g.set(p, CellState::Unknown, 0.0),
                _ => {}
            }
        }
        let cfg = CostMapConfig { unknown_cost, robot_radius_m: radius, inflation_cells: inflation, near_obstacle_multiplier: 4.0 };
        let m = CostMap::from_grid(&g, &cfg);
        let want = brute_force_costs(&g, &cfg);
        for (i, c) in want.iter().enumerate() {
            prop_assert_eq!(m.cost(g.pos_of(i)), *c, "cell {}", i);
        }
    }
}
