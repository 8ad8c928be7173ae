//! Pictures of runs: the arena with the trajectory (ground truth), the
//! memory's anchors coloured by place, and the goal, as PNG or SVG by the
//! file extension.

use crate::exit::{Exit, usage};
use nav_core::geometry::{Point2, Pose2};
use nav_hal::arena::Arena;
use nav_hal::picture::MapPicture;
use nav_planner::navigator::StepRecord;
use std::path::Path;

/// Checks that `path` ends in .png or .svg and can be written at the end
/// ([`check_output`](crate::exit::check_output)).
pub fn check_extension(path: &Path) -> Result<(), Exit> {
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("png" | "svg") => {}
        _ => return Err(usage(format!("--plot {}: the file must end in .png or .svg", path.display()))),
    }
    // checked before the run: a FIFO would block the write after it
    crate::exit::check_output("--plot", path, &[])
}

/// Draws a run from its step records.
pub fn draw(arena: &Arena, records: &[StepRecord], title: &str, path: &Path) -> Result<(), Exit> {
    check_extension(path)?;
    // poses come from a file: keep the finite ones and clamp them to the arena (plus a margin), so
    // a pose 80 km away costs a line to the picture's edge, not 80 km of rasterizing
    let [x0, y0, x1, y1] = arena.bounds;
    let margin = 1.0;
    let inside = |p: Point2| Point2::new(p.x.clamp(x0 - margin, x1 + margin), p.y.clamp(y0 - margin, y1 + margin));
    let trajectory: Vec<Point2> = records
        .iter()
        .map(|r| r.gt_pose.unwrap_or(r.pose).pose().position())
        .filter(|p| p.x.is_finite() && p.y.is_finite())
        .map(inside)
        .collect();
    // anchors live in the dead-reckoning frame (start at the origin): map them onto the arena
    let start = arena.start.pose();
    let mut anchors: Vec<(Point2, u32)> = Vec::new();
    let mut last_anchor = None;
    for r in records {
        if let (Some(a), Some(p)) = (r.anchor_id, r.place_id) {
            if last_anchor != Some(a) {
                last_anchor = Some(a);
                let at = to_arena(start, r.pose.pose());
                if at.x.is_finite() && at.y.is_finite() {
                    anchors.push((inside(at), p));
                }
            }
        }
    }
    let mut pic = MapPicture::new(arena).with_trajectory(trajectory).with_title(title);
    if records.iter().any(|r| r.place_id.is_some()) {
        pic = pic.with_anchors(anchors);
    }
    pic.save(path).map_err(|e| match e {
        // writing the picture is output: a full or read-only disk is exit 3
        nav_hal::HalError::Io { .. } => Exit::Output(format!("writing --plot {}: {e}", path.display())),
        e => usage(format!("--plot {}: {e}", path.display())),
    })
}

fn to_arena(start: Pose2, local: Pose2) -> Point2 {
    start.transform_point(local.position())
}
