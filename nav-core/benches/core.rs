//! nav-core benchmarks: our A* against the `pathfinding` crate's `astar` on
//! identical cost maps and move models, the 720-beam LiDAR summary, and
//! candidate generation on a 50×50 grid.
//!
//! Run: `cargo bench -p nav-core --bench core`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use nav_core::astar::{CostMap, CostMapConfig, GridPlanner, PlannerConfig, octile};
use nav_core::candidates::{CandidateConfig, CandidateInput, generate_candidates};
use nav_core::geometry::{Point2, Pose2};
use nav_core::grid::{CellState, GridPos, OccupancyGrid};
use nav_core::lidar::{LaserScan, LidarConfig, LidarSummary};
use nav_core::time::FrozenClock;
use ordered_float::OrderedFloat;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::f64::consts::SQRT_2;
use std::hint::black_box;

fn random_grid(n: usize, density: f64, seed: u64) -> OccupancyGrid {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut g = OccupancyGrid::new(n, n, 0.05, Point2::new(0.0, 0.0)).unwrap();
    for i in 0..n * n {
        let p = g.pos_of(i);
        let st = if rng.random_bool(density) { CellState::Obstacle } else { CellState::Free };
        g.set(p, st, 1.0);
    }
    for p in [GridPos::new(0, 0), GridPos::new(n as i32 - 1, n as i32 - 1)] {
        for dy in -2..=2 {
            for dx in -2..=2 {
                g.set(GridPos::new(p.x + dx, p.y + dy), CellState::Free, 1.0);
            }
        }
    }
    g
}

/// A perfect maze by randomized depth-first search on odd coordinates.
fn maze(n: usize, seed: u64) -> OccupancyGrid {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut g = OccupancyGrid::new(n, n, 0.05, Point2::new(0.0, 0.0)).unwrap();
    for i in 0..n * n {
        let p = g.pos_of(i);
        g.set(p, CellState::Wall, 1.0);
    }
    let cells = (n - 1) / 2;
    let mut visited = vec![false; cells * cells];
    let mut stack = vec![(0usize, 0usize)];
    visited[0] = true;
    g.set(GridPos::new(1, 1), CellState::Free, 1.0);
    while let Some(&(cx, cy)) = stack.last() {
        let mut next = Vec::new();
        for (dx, dy) in [(1i64, 0i64), (-1, 0), (0, 1), (0, -1)] {
            let (nx, ny) = (cx as i64 + dx, cy as i64 + dy);
            if nx >= 0
                && ny >= 0
                && (nx as usize) < cells
                && (ny as usize) < cells
                && !visited[ny as usize * cells + nx as usize]
            {
                next.push((nx as usize, ny as usize));
            }
        }
        if next.is_empty() {
            stack.pop();
            continue;
        }
        let (nx, ny) = next[rng.random_range(0..next.len())];
        visited[ny * cells + nx] = true;
        let (ax, ay) = (2 * cx + 1, 2 * cy + 1);
        let (bx, by) = (2 * nx + 1, 2 * ny + 1);
        g.set(GridPos::new(((ax + bx) / 2) as i32, ((ay + by) / 2) as i32), CellState::Free, 1.0);
        g.set(GridPos::new(bx as i32, by as i32), CellState::Free, 1.0);
        stack.push((nx, ny));
    }
    g
}

fn peer_astar(m: &CostMap, s: GridPos, t: GridPos) -> Option<(Vec<GridPos>, OrderedFloat<f64>)> {
    let h = f64::from(m.min_cost());
    pathfinding::directed::astar::astar(
        &s,
        |&p| {
            // allocation-free successors, same move model as GridPlanner
            let mut out = [(GridPos::default(), OrderedFloat(0.0)); 8];
            let mut n = 0;
            for (dx, dy) in [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1)] {
                let q = GridPos::new(p.x + dx, p.y + dy);
                let c = m.cost(q);
                if !c.is_finite() {
                    continue;
                }
                let step = if dx != 0 && dy != 0 {
                    if !m.cost(GridPos::new(p.x + dx, p.y)).is_finite()
                        || !m.cost(GridPos::new(p.x, p.y + dy)).is_finite()
                    {
                        continue;
                    }
                    SQRT_2 * f64::from(c)
                } else {
                    f64::from(c)
                };
                out[n] = (q, OrderedFloat(step));
                n += 1;
            }
            out.into_iter().take(n)
        },
        |p| OrderedFloat(octile(*p, t) * h),
        |p| *p == t,
    )
}

fn bench_astar(c: &mut Criterion) {
    let cases = [
        ("random_256", random_grid(256, 0.2, 7)),
        ("random_1024", random_grid(1024, 0.2, 11)),
        ("maze_512", maze(513, 3)),
    ];
    let mut group = c.benchmark_group("astar");
    group.sample_size(20);
    for (name, grid) in cases {
        let m = CostMap::from_grid(&grid, &CostMapConfig::ground_truth());
        let n = grid.width() as i32;
        let (s, t) = if name.starts_with("maze") {
            (GridPos::new(1, 1), GridPos::new(n - 2, n - 2))
        } else {
            (GridPos::new(0, 0), GridPos::new(n - 1, n - 1))
        };
        let mut planner =
            GridPlanner::new(PlannerConfig { max_planning_time_ms: f64::INFINITY, ..PlannerConfig::default() });
        let ours = planner.plan(&m, s, t, &FrozenClock);
        let peer = peer_astar(&m, s, t).expect("peer finds a path");
        assert!(ours.success, "{name}: {:?}", ours.error);
        assert!(
            (ours.total_cost - peer.1.0).abs() < 1e-6 * peer.1.0,
            "{name}: cost {} vs pathfinding {}",
            ours.total_cost,
            peer.1.0
        );
        eprintln!("{name}: path cost {:.3} (both), {} cells", ours.total_cost, ours.raw_path_length);
        group.bench_function(format!("navkit/{name}"), |b| {
            b.iter(|| black_box(planner.plan(&m, s, t, &FrozenClock).total_cost))
        });
        group
            .bench_function(format!("pathfinding/{name}"), |b| b.iter(|| black_box(peer_astar(&m, s, t).map(|r| r.1))));
    }
    group.finish();
}

fn bench_lidar(c: &mut Criterion) {
    let mut rng = SmallRng::seed_from_u64(5);
    let mut scan = LaserScan::full_circle(720, 0.05, 12.0, 3.0);
    for (i, r) in scan.ranges.iter_mut().enumerate() {
        *r = if i % 97 == 0 { f32::INFINITY } else { rng.random_range(0.2..6.0) };
    }
    let cfg = LidarConfig::default();
    c.bench_function("lidar_summary_720/text", |b| {
        b.iter(|| black_box(LidarSummary::from_scan(&scan, &cfg).to_text()))
    });
    let room = room_scan();
    c.bench_function("lidar_summary_720_room/text", |b| {
        b.iter(|| black_box(LidarSummary::from_scan(&room, &cfg).to_text()))
    });
}

/// A 720-beam scan of a 4 × 3 m room from (1.2, 1.0), the robot facing +x,
/// with a 0.9 m doorway in the far wall (x = 4, y 1.1–2.0) onto open space
/// up to x = 9: the kind of scan a robot indoors sees, next to the random
/// noise above (which is the worst case: 136 gaps).
fn room_scan() -> LaserScan {
    let mut scan = LaserScan::full_circle(720, 0.05, 12.0, f32::INFINITY);
    let (px, py) = (1.2f64, 1.0f64);
    for (i, r) in scan.ranges.iter_mut().enumerate() {
        let a = -std::f64::consts::PI + i as f64 * std::f64::consts::TAU / 720.0;
        let (dx, dy) = (a.cos(), a.sin());
        let mut t = f64::INFINITY;
        // the walls x = 0, y = 0, y = 3, and x = 4 except the doorway
        if dx < 0.0 {
            t = t.min(-px / dx);
        }
        if dy < 0.0 {
            t = t.min(-py / dy);
        }
        if dy > 0.0 {
            t = t.min((3.0 - py) / dy);
        }
        if dx > 0.0 {
            let tw = (4.0 - px) / dx;
            let y = py + tw * dy;
            t = t.min(if (1.1..=2.0).contains(&y) { (9.0 - px) / dx } else { tw });
        }
        *r = t as f32;
    }
    scan
}

fn bench_candidates(c: &mut Criterion) {
    let mut rng = SmallRng::seed_from_u64(9);
    let mut g = OccupancyGrid::new(50, 50, 0.1, Point2::new(-2.5, -2.5)).unwrap();
    for i in 0..2500 {
        let p = g.pos_of(i);
        let x = p.x;
        let st = if x > 35 {
            CellState::Unknown
        } else if rng.random_bool(0.05) {
            CellState::Obstacle
        } else {
            CellState::Free
        };
        g.set(p, st, 1.0);
    }
    let input = CandidateInput {
        grid: &g,
        clearance: None,
        robot: Pose2::new(-2.0, -2.0, 0.0),
        goal: Some(Point2::new(2.0, 2.0)),
        stuck: true,
        waypoints: &[],
        reachable: None,
    };
    let cfg = CandidateConfig::default();
    c.bench_function("candidates_50x50", |b| b.iter(|| black_box(generate_candidates(&input, &cfg).len())));
}

criterion_group!(benches, bench_astar, bench_lidar, bench_candidates);
criterion_main!(benches);
