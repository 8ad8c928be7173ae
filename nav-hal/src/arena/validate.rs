//! Geometric validation of arenas; every error names the field at fault.

use super::geodesic::ConfigGrid;
use super::scene::Scene;
use super::{
    Arena, Feature, Goal, MAX_ARENA_DESCRIPTION_CHARS, MAX_ARENA_FEATURES, MAX_ARENA_NAME_CHARS, MAX_ROOM_POINTS,
    invalid,
};
use crate::HalError;
use nav_core::geometry::{Point2, polygon_area};
use nav_core::grid::{MAX_GRID_CELLS, cells_covering};

/// Grid cell used for the reachability check, metres.
pub(crate) const REACH_CELL_M: f64 = 0.05;

pub(crate) fn validate(arena: &Arena, radius: f64) -> Result<(), HalError> {
    check(arena, radius).map_err(|e| e.with_origin(&format!("arena {:?}", arena.name)))
}

fn finite(field: &str, values: &[f64]) -> Result<(), HalError> {
    if values.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(invalid(field, "coordinates must be finite numbers"))
    }
}

fn positive_radius(field: &str, r: f64) -> Result<(), HalError> {
    if r.is_finite() && r > 0.0 { Ok(()) } else { Err(invalid(field, format!("must be positive, got {r}"))) }
}

/// A name, label or text of at most `max` characters without control
/// characters (a name goes into prompts and onto the terminal).
fn text(field: &str, value: &str, max: usize) -> Result<(), HalError> {
    let n = value.chars().count();
    if n > max {
        return Err(invalid(field, format!("{n} characters, at most {max}")));
    }
    if value.chars().any(char::is_control) {
        return Err(invalid(field, "must not contain control characters"));
    }
    Ok(())
}

/// A metre value for a message: whole metres, or scientific notation for
/// a value no arena has (`1e300` is not printed as 301 digits).
fn metres(v: f64) -> String {
    if v.abs() < 1e9 { format!("{v:.0}") } else { format!("{v:.1e}") }
}

/// The counts of an arena's lists against [`MAX_ARENA_FEATURES`] and
/// [`MAX_ROOM_POINTS`], and its texts against their limits: checked before
/// anything else looks at them.
fn sizes(arena: &Arena) -> Result<(), HalError> {
    let lists = [
        ("walls", arena.walls.len()),
        ("obstacles", arena.obstacles.len()),
        ("objects", arena.objects.len()),
        ("rooms", arena.rooms.len()),
    ];
    for (field, n) in lists {
        if n > MAX_ARENA_FEATURES {
            return Err(invalid(field, format!("{n} entries, at most {MAX_ARENA_FEATURES}")));
        }
    }
    text("name", &arena.name, MAX_ARENA_NAME_CHARS)?;
    if let Some(d) = &arena.description {
        let n = d.chars().count();
        if n > MAX_ARENA_DESCRIPTION_CHARS {
            return Err(invalid("description", format!("{n} characters, at most {MAX_ARENA_DESCRIPTION_CHARS}")));
        }
    }
    for (i, o) in arena.objects.iter().enumerate() {
        text(&format!("objects[{i}].label"), &o.label, MAX_ARENA_NAME_CHARS)?;
    }
    for (i, r) in arena.rooms.iter().enumerate() {
        text(&format!("rooms[{i}].name"), &r.name, MAX_ARENA_NAME_CHARS)?;
        if r.polygon.len() > MAX_ROOM_POINTS {
            return Err(invalid(
                format!("rooms[{i}].polygon"),
                format!("{} points, at most {MAX_ROOM_POINTS}", r.polygon.len()),
            ));
        }
    }
    if let Some(Goal::Object { label }) = &arena.goal {
        text("goal.object", label, MAX_ARENA_NAME_CHARS)?;
    }
    Ok(())
}

fn check(arena: &Arena, radius: f64) -> Result<(), HalError> {
    if !(radius.is_finite() && radius > 0.0) {
        return Err(invalid("robot radius", format!("must be positive, got {radius}")));
    }
    sizes(arena)?;
    if arena.name.trim().is_empty() {
        return Err(invalid("name", "must not be empty"));
    }
    let [x0, y0, x1, y1] = arena.bounds;
    finite("bounds", &arena.bounds)?;
    if x0 >= x1 {
        return Err(invalid("bounds", format!("xmin must be < xmax (got {x0} and {x1})")));
    }
    if y0 >= y1 {
        return Err(invalid("bounds", format!("ymin must be < ymax (got {y0} and {y1})")));
    }
    let cells = cells_covering(x1 - x0, y1 - y0, REACH_CELL_M);
    if cells > MAX_GRID_CELLS {
        return Err(invalid(
            "bounds",
            format!(
                "{} m × {} m is too large: the reachability check's {REACH_CELL_M} m grid would need {cells} cells, more than {MAX_GRID_CELLS} (about 200 m × 200 m)",
                metres(x1 - x0),
                metres(y1 - y0)
            ),
        ));
    }
    for (i, w) in arena.walls.iter().enumerate() {
        let f = format!("walls[{i}]");
        finite(&f, w)?;
        if (w[2] - w[0]).hypot(w[3] - w[1]) < 1e-9 {
            return Err(invalid(f, "zero length"));
        }
    }
    for (i, o) in arena.obstacles.iter().enumerate() {
        finite(&format!("obstacles[{i}]"), &[o.x, o.y])?;
        positive_radius(&format!("obstacles[{i}].r"), o.r)?;
        if !arena.in_bounds(Point2::new(o.x, o.y)) {
            return Err(invalid(format!("obstacles[{i}]"), "centre outside the bounds"));
        }
    }
    for (i, o) in arena.objects.iter().enumerate() {
        if o.label.trim().is_empty() {
            return Err(invalid(format!("objects[{i}].label"), "must not be empty"));
        }
        finite(&format!("objects[{i}]"), &[o.x, o.y])?;
        positive_radius(&format!("objects[{i}].r"), o.r)?;
        if !arena.in_bounds(o.center()) {
            return Err(invalid(format!("objects[{i}]"), "centre outside the bounds"));
        }
    }
    for (i, r) in arena.rooms.iter().enumerate() {
        if r.name.trim().is_empty() {
            return Err(invalid(format!("rooms[{i}].name"), "must not be empty"));
        }
        if r.polygon.len() < 3 {
            return Err(invalid(format!("rooms[{i}].polygon"), "needs at least 3 points"));
        }
        finite(&format!("rooms[{i}].polygon"), &r.polygon.iter().flatten().copied().collect::<Vec<_>>())?;
        if polygon_area(&r.points()).abs() < 1e-9 {
            return Err(invalid(format!("rooms[{i}].polygon"), "has zero area"));
        }
    }
    let c = &arena.criteria;
    if c.max_steps == 0 {
        return Err(invalid("criteria.max_steps", "must be at least 1"));
    }
    if let Some(d) = c.success_distance_m {
        if !(d.is_finite() && d > 0.0) {
            return Err(invalid("criteria.success_distance_m", format!("must be positive, got {d}")));
        }
    }
    if let Some(m) = c.min_coverage {
        if !(0.0..=1.0).contains(&m) {
            return Err(invalid("criteria.min_coverage", format!("must be within [0, 1], got {m}")));
        }
    }
    let start = arena.start;
    finite("start", &[start.x, start.y, start.yaw_deg])?;
    let sp = Point2::new(start.x, start.y);
    if !arena.in_bounds(sp) {
        return Err(invalid("start", format!("({}, {}) is outside the bounds", start.x, start.y)));
    }
    let scene = Scene::from_arena(arena);
    let (clear, feature) = scene.clearance(sp);
    if clear < radius {
        let what = match feature {
            Some(Feature::Object(i)) => format!("inside object {i} ({:?})", arena.objects[i].label),
            Some(Feature::Bounds(_)) => "too close to the bounds".to_string(),
            Some(f) => format!("inside {f}"),
            None => "in collision".to_string(),
        };
        return Err(invalid(
            "start",
            format!(
                "{what}: the robot disc (radius {radius} m) overlaps it ({} m clearance)",
                if clear.abs() < 1e6 { format!("{clear:.3}") } else { metres(clear) }
            ),
        ));
    }
    match &arena.goal {
        None => Ok(()),
        Some(Goal::Object { label }) => {
            if label.trim().is_empty() {
                return Err(invalid("goal.object", "must not be empty"));
            }
            let targets = arena.goal_objects();
            if targets.is_empty() {
                let known = arena.labels().join(", ");
                return Err(invalid("goal.object", format!("no object labelled {label:?} (objects: {known})")));
            }
            let sd = arena.success_distance_m();
            let ok = |p: Point2| targets.iter().any(|o| p.distance(o.center()) - o.r <= sd);
            reachable(arena, &scene, radius, ok, &format!("within {sd} m of any {label:?}"))
        }
        Some(Goal::Point { x, y }) => {
            finite("goal", &[*x, *y])?;
            let g = Point2::new(*x, *y);
            if !arena.in_bounds(g) {
                return Err(invalid("goal", format!("({x}, {y}) is outside the bounds")));
            }
            let tol = arena.success_distance_m();
            reachable(arena, &scene, radius, |p| p.distance(g) <= tol, &format!("within {tol} m of ({x}, {y})"))
        }
    }
}

fn reachable(
    arena: &Arena,
    scene: &Scene,
    radius: f64,
    target: impl Fn(Point2) -> bool,
    what: &str,
) -> Result<(), HalError> {
    let grid = ConfigGrid::new(scene, arena.bounds, radius, REACH_CELL_M);
    let field = grid.distance_field(target);
    let start = Point2::new(arena.start.x, arena.start.y);
    if grid.lookup(&field, start).is_none() {
        return Err(invalid("goal", format!("unreachable from start: no free path for the robot to {what}")));
    }
    Ok(())
}
