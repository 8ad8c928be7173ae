//! Seeded procedural houses for evaluation at scale.
//!
//! [`generate_house`] lays out a rectangular house with a corridor band
//! across it and two to three rooms on each side (always a kitchen, a living
//! room, a bedroom and a bathroom; the rest bedrooms or offices), puts a
//! door from every room onto the corridor (plus some doors between
//! neighbours), furnishes each room from [`ROOM_OBJECTS`] (characteristic
//! objects first, against walls or free-standing, never in front of a
//! door), scatters a little unlabelled clutter, starts the robot in the
//! corridor and picks an ObjectNav goal among the objects placed.
//!
//! Every object kept is reachable (the robot can get within the success
//! distance of it), so the arena is valid and any of its labels can serve
//! as a goal. The same seed always gives the same house.

pub use super::semantics::ROOM_OBJECTS;

use super::geodesic::ConfigGrid;
use super::scene::Scene;
use super::semantics::{ObjectSpec, objects_for_room};
use super::{
    Arena, ArenaObject, Criteria, DEFAULT_OBJECT_SUCCESS_M, DEFAULT_ROBOT_RADIUS_M, Goal, Obstacle, Room, Start,
};
use nav_core::geometry::Point2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The fewest labelled objects a generated house aims for.
pub const MIN_OBJECTS: usize = 12;

/// A rectangular room of the layout.
#[derive(Debug, Clone)]
struct RoomBox {
    kind: &'static str,
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
}

impl RoomBox {
    fn area(&self) -> f64 {
        (self.x1 - self.x0) * (self.y1 - self.y0)
    }
}

/// A doorway: centre and width along a wall, and the wall's orientation.
#[derive(Debug, Clone, Copy)]
struct Door {
    centre: Point2,
}

/// Generates the house for `seed` (named `proc_<seed>`). Deterministic,
/// always valid, goal always reachable.
pub fn generate_house(seed: u64) -> Arena {
    let mut best: Option<Arena> = None;
    for attempt in 0..32u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(attempt));
        let arena = attempt_house(seed, &mut rng);
        let enough = arena.objects.len() >= MIN_OBJECTS;
        if arena.validate().is_ok() {
            if enough {
                return arena;
            }
            if best.as_ref().is_none_or(|b| b.objects.len() < arena.objects.len()) {
                best = Some(arena);
            }
        }
    }
    // Attempts that came out valid but sparse; the first attempt of a fresh
    // layout without clutter is the last resort (valid by construction).
    best.unwrap_or_else(|| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut a = attempt_house(seed, &mut rng);
        a.obstacles.clear();
        a
    })
}

/// Splits `[0, len]` into `k` parts of at least `min` metres, cut positions
/// rounded to 0.1 m.
fn split(rng: &mut ChaCha8Rng, len: f64, k: usize, min: f64) -> Vec<f64> {
    let weights: Vec<f64> = (0..k).map(|_| rng.random_range(1.0..2.0)).collect();
    let total: f64 = weights.iter().sum();
    let spare = len - min * k as f64;
    let mut cuts = vec![0.0];
    let mut acc = 0.0;
    for w in &weights[..k - 1] {
        acc += min + spare * w / total;
        cuts.push((acc * 10.0).round() / 10.0);
    }
    cuts.push(len);
    cuts
}

fn attempt_house(seed: u64, rng: &mut ChaCha8Rng) -> Arena {
    let w = (rng.random_range(9.0f64..14.0) * 2.0).round() / 2.0;
    let h = (rng.random_range(7.0f64..10.0) * 2.0).round() / 2.0;
    let cw = (rng.random_range(1.4f64..1.8) * 10.0).round() / 10.0;
    let yc = ((h - cw) * rng.random_range(0.42..0.58) * 10.0).round() / 10.0;
    let (ctop, k_bottom, k_top) = (yc + cw, rng.random_range(2..=3usize), rng.random_range(2..=3usize));

    // Rooms on both sides of the corridor.
    let mut rooms: Vec<RoomBox> = Vec::new();
    let bottom = split(rng, w, k_bottom, 2.4);
    for p in bottom.windows(2) {
        rooms.push(RoomBox { kind: "", x0: p[0], y0: 0.0, x1: p[1], y1: yc });
    }
    let top = split(rng, w, k_top, 2.4);
    for p in top.windows(2) {
        rooms.push(RoomBox { kind: "", x0: p[0], y0: ctop, x1: p[1], y1: h });
    }
    assign_kinds(rng, &mut rooms);

    // Walls: the two corridor walls with doors, then the partitions.
    let mut walls: Vec<[f64; 4]> = Vec::new();
    let mut doors: Vec<Door> = Vec::new();
    let mut bottom_doors = Vec::new();
    let mut top_doors = Vec::new();
    for r in &rooms {
        let width = if r.kind == "living room" { rng.random_range(1.2..1.8) } else { rng.random_range(0.85..1.1) };
        let width: f64 = (width * 20.0f64).round() / 20.0;
        let margin = 0.3 + width / 2.0;
        let cx = rng.random_range(r.x0 + margin..r.x1 - margin);
        let cx = (cx * 20.0).round() / 20.0;
        if r.y0 == 0.0 {
            bottom_doors.push((cx, width));
            doors.push(Door { centre: Point2::new(cx, yc) });
        } else {
            top_doors.push((cx, width));
            doors.push(Door { centre: Point2::new(cx, ctop) });
        }
    }
    horizontal_wall(&mut walls, yc, 0.0, w, &bottom_doors);
    horizontal_wall(&mut walls, ctop, 0.0, w, &top_doors);
    for (cuts, y0, y1) in [(&bottom, 0.0, yc), (&top, ctop, h)] {
        for &x in &cuts[1..cuts.len() - 1] {
            if rng.random_bool(0.3) {
                let width = 0.9;
                let cy = ((y0 + y1) / 2.0 * 20.0f64).round() / 20.0;
                vertical_wall(&mut walls, x, y0, y1, &[(cy, width)]);
                doors.push(Door { centre: Point2::new(x, cy) });
            } else {
                vertical_wall(&mut walls, x, y0, y1, &[]);
            }
        }
    }

    // The robot starts in the corridor.
    let sx = ((rng.random_range(0.8..w - 0.8)) * 20.0f64).round() / 20.0;
    let start = Start {
        x: sx,
        y: ((yc + ctop) / 2.0 * 100.0f64).round() / 100.0,
        yaw_deg: f64::from(rng.random_range(0..12) * 30),
    };
    let start_p = Point2::new(start.x, start.y);

    // Furniture.
    let mut placed: Vec<(Point2, f64)> = Vec::new();
    let mut objects: Vec<ArenaObject> = Vec::new();
    let corridor = RoomBox { kind: "corridor", x0: 0.0, y0: yc, x1: w, y1: ctop };
    for r in rooms.iter().chain(std::iter::once(&corridor)) {
        let specs = objects_for_room(r.kind);
        for (i, spec) in specs.iter().enumerate() {
            let wanted = if r.kind == "corridor" { rng.random_bool(0.5) } else { i < 2 || rng.random_bool(0.65) };
            if !wanted {
                continue;
            }
            if let Some(p) = place(rng, r, spec, &placed, &doors, start_p, r.kind == "corridor") {
                placed.push((p, spec.r));
                objects.push(ArenaObject { label: spec.label.to_string(), x: round2(p.x), y: round2(p.y), r: spec.r });
            }
        }
    }
    let mut obstacles: Vec<Obstacle> = Vec::new();
    for r in &rooms {
        for _ in 0..rng.random_range(0..=2) {
            let spec = ObjectSpec {
                label: "",
                r: (rng.random_range(0.12f64..0.2) * 100.0).round() / 100.0,
                against_wall: false,
            };
            if let Some(p) = place(rng, r, &spec, &placed, &doors, start_p, false) {
                placed.push((p, spec.r));
                obstacles.push(Obstacle { x: round2(p.x), y: round2(p.y), r: spec.r });
            }
        }
    }

    let mut arena = Arena {
        name: format!("proc_{seed}"),
        description: None,
        bounds: [0.0, 0.0, w, h],
        walls,
        obstacles,
        objects,
        rooms: rooms
            .iter()
            .chain(std::iter::once(&corridor))
            .map(|r| Room {
                name: r.kind.to_string(),
                polygon: vec![[r.x0, r.y0], [r.x1, r.y0], [r.x1, r.y1], [r.x0, r.y1]],
            })
            .collect(),
        start,
        goal: None,
        criteria: Criteria::default(),
    };
    drop_unreachable_objects(&mut arena);

    // Goal: a characteristic object class (first two of a room's list, not the corridor's).
    let mut candidates: Vec<&str> = arena
        .objects
        .iter()
        .map(|o| o.label.as_str())
        .filter(|l| {
            ROOM_OBJECTS.iter().any(|(room, specs)| *room != "corridor" && specs.iter().take(2).any(|s| s.label == *l))
        })
        .collect();
    candidates.sort_unstable();
    candidates.dedup();
    if candidates.is_empty() {
        candidates = arena.labels();
    }
    if !candidates.is_empty() {
        let label = candidates[rng.random_range(0..candidates.len())].to_string();
        arena.description = Some(format!("Find a {label} in a procedurally generated house (seed {seed})."));
        arena.goal = Some(Goal::Object { label });
    }
    arena
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// Bathroom → smallest room, living room → largest, then kitchen and a
/// bedroom, the rest bedrooms or offices.
fn assign_kinds(rng: &mut ChaCha8Rng, rooms: &mut [RoomBox]) {
    let mut order: Vec<usize> = (0..rooms.len()).collect();
    order.sort_by(|&a, &b| rooms[a].area().total_cmp(&rooms[b].area()));
    let n = order.len();
    rooms[order[0]].kind = "bathroom";
    rooms[order[n - 1]].kind = "living room";
    let mut middle: Vec<usize> = order[1..n - 1].to_vec();
    // Shuffle the middle rooms (Fisher–Yates with the seeded RNG).
    for i in (1..middle.len()).rev() {
        let j = rng.random_range(0..=i);
        middle.swap(i, j);
    }
    for (k, &i) in middle.iter().enumerate() {
        rooms[i].kind = match k {
            0 => "kitchen",
            1 => "bedroom",
            _ => {
                if rng.random_bool(0.5) {
                    "office"
                } else {
                    "bedroom"
                }
            }
        };
    }
}

fn horizontal_wall(walls: &mut Vec<[f64; 4]>, y: f64, x0: f64, x1: f64, doors: &[(f64, f64)]) {
    for (a, b) in gaps(x0, x1, doors) {
        walls.push([a, y, b, y]);
    }
}

fn vertical_wall(walls: &mut Vec<[f64; 4]>, x: f64, y0: f64, y1: f64, doors: &[(f64, f64)]) {
    for (a, b) in gaps(y0, y1, doors) {
        walls.push([x, a, x, b]);
    }
}

/// The solid pieces of `[lo, hi]` after cutting out `(centre, width)`
/// doorways.
fn gaps(lo: f64, hi: f64, doors: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut cuts: Vec<(f64, f64)> = doors.iter().map(|&(c, w)| (c - w / 2.0, c + w / 2.0)).collect();
    cuts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = Vec::new();
    let mut cur = lo;
    for (s, e) in cuts {
        if s > cur + 1e-9 {
            out.push((round2(cur), round2(s)));
        }
        cur = cur.max(e);
    }
    if hi > cur + 1e-9 {
        out.push((round2(cur), round2(hi)));
    }
    out
}

/// Finds a spot for an object of `spec` in room `r`: against a random wall
/// or free-standing, clear of other furniture, doorways and the start.
fn place(
    rng: &mut ChaCha8Rng,
    r: &RoomBox,
    spec: &ObjectSpec,
    placed: &[(Point2, f64)],
    doors: &[Door],
    start: Point2,
    corridor: bool,
) -> Option<Point2> {
    let rad = spec.r;
    if r.x1 - r.x0 < 2.0 * rad + 0.1 || r.y1 - r.y0 < 2.0 * rad + 0.1 {
        return None;
    }
    for _ in 0..60 {
        let p = if spec.against_wall || corridor {
            let off = rad + 0.03;
            // In the corridor only the two end walls keep the way free.
            let side = if corridor { 1 + 2 * rng.random_range(0..2) } else { rng.random_range(0..4) };
            match side {
                0 => Point2::new(rng.random_range(r.x0 + off..r.x1 - off), r.y0 + off),
                1 => Point2::new(r.x1 - off, rng.random_range(r.y0 + off..r.y1 - off)),
                2 => Point2::new(rng.random_range(r.x0 + off..r.x1 - off), r.y1 - off),
                _ => Point2::new(r.x0 + off, rng.random_range(r.y0 + off..r.y1 - off)),
            }
        } else {
            let m = rad + 0.55;
            if r.x1 - r.x0 <= 2.0 * m || r.y1 - r.y0 <= 2.0 * m {
                return None;
            }
            Point2::new(rng.random_range(r.x0 + m..r.x1 - m), rng.random_range(r.y0 + m..r.y1 - m))
        };
        let clear_of_furniture = placed.iter().all(|&(q, qr)| p.distance(q) >= rad + qr + 0.1);
        let clear_of_doors = doors.iter().all(|d| p.distance(d.centre) >= rad + 1.0);
        let clear_of_start = p.distance(start) >= rad + DEFAULT_ROBOT_RADIUS_M + 0.4;
        if clear_of_furniture && clear_of_doors && clear_of_start {
            return Some(p);
        }
    }
    None
}

/// Removes objects the robot cannot get within the success distance of.
fn drop_unreachable_objects(arena: &mut Arena) {
    let scene = Scene::from_arena(arena);
    let grid = ConfigGrid::new(&scene, arena.bounds, DEFAULT_ROBOT_RADIUS_M, crate::arena::validate::REACH_CELL_M);
    let reach = grid.reachable_from(Point2::new(arena.start.x, arena.start.y));
    let reachable = |o: &ArenaObject| {
        (0..grid.len()).any(|k| reach[k] && grid.centre_of(k).distance(o.center()) - o.r <= DEFAULT_OBJECT_SUCCESS_M)
    };
    arena.objects.retain(reachable);
}
