//! navkit's values as Foxglove's well-known messages (the `foxglove`
//! crate's types, Protobuf-encoded): Foxglove recognises a channel by its
//! schema name (`foxglove.LaserScan`, …) and draws it without plugins, and
//! Rerun turns these Protobuf schemas into its own archetypes.

use foxglove::messages::{
    Color, CompressedImage, FrameTransform, Grid, LaserScan, LinePrimitive, PackedElementField, Point3, PointCloud,
    Pose, PoseInFrame, Quaternion, SceneEntity, SceneUpdate, SpherePrimitive, TextPrimitive, Timestamp, Vector2,
    Vector3, line_primitive, packed_element_field::NumericType,
};
use nav_core::geometry::Pose2;
use nav_core::grid::{CellState, OccupancyGrid};

/// A message time from nanoseconds (seconds past what the format holds
/// are clamped).
pub fn stamp(ns: u64) -> Timestamp {
    let sec = u32::try_from(ns / 1_000_000_000).unwrap_or(u32::MAX);
    Timestamp::new(sec, (ns % 1_000_000_000) as u32)
}

/// A planar pose as a `foxglove.Pose` at height `z` (rotation about z).
pub fn pose_at(p: Pose2, z: f64) -> Pose {
    let (s, c) = (p.yaw / 2.0).sin_cos();
    Pose { position: Some(Vector3 { x: p.x, y: p.y, z }), orientation: Some(Quaternion { x: 0.0, y: 0.0, z: s, w: c }) }
}

/// A planar pose as a `foxglove.Pose` (z = 0).
pub fn pose_of(p: Pose2) -> Pose {
    pose_at(p, 0.0)
}

/// A `foxglove.CompressedImage` (`format` `png` or `jpeg`).
pub fn compressed_image(ns: u64, frame_id: &str, format: &str, data: Vec<u8>) -> CompressedImage {
    CompressedImage { timestamp: Some(stamp(ns)), frame_id: frame_id.into(), data: data.into(), format: format.into() }
}

/// A `foxglove.LaserScan` in `frame_id` (the robot), angles CCW from its
/// front. A beam without a valid return (non-finite range) is written as
/// range 0, a point at the sensor itself, as viewers draw any number given.
pub fn laser_scan(ns: u64, frame_id: &str, scan: &nav_core::lidar::LaserScan) -> LaserScan {
    let n = scan.ranges.len();
    let end = scan.angle_min + scan.angle_increment * n.saturating_sub(1) as f64;
    LaserScan {
        timestamp: Some(stamp(ns)),
        frame_id: frame_id.into(),
        pose: Some(pose_of(Pose2::new(0.0, 0.0, 0.0))),
        start_angle: scan.angle_min,
        end_angle: end,
        ranges: scan.ranges.iter().map(|&r| if r.is_finite() { f64::from(r) } else { 0.0 }).collect(),
        intensities: Vec::new(),
    }
}

/// The most points [`scan_points`] keeps of a scan.
pub const MAX_SCAN_POINTS: usize = 180;

/// The returns of `scan` as a `foxglove.PointCloud` in `frame_id` (FLOAT32
/// `x`, `y`, `z`; beams without a valid return left out; at most
/// [`MAX_SCAN_POINTS`] evenly spaced beams, the full scan being `/scan`'s):
/// the scan as points, which Rerun draws (it has no LaserScan of its own).
pub fn scan_points(ns: u64, frame_id: &str, scan: &nav_core::lidar::LaserScan) -> PointCloud {
    let stride = scan.ranges.len().div_ceil(MAX_SCAN_POINTS).max(1);
    let mut data = Vec::with_capacity(scan.ranges.len() / stride * 12 + 12);
    for (i, &r) in scan.ranges.iter().enumerate().step_by(stride) {
        if r.is_finite() && r > 0.0 {
            let a = scan.angle_min + scan.angle_increment * i as f64;
            let (x, y) = (f64::from(r) * a.cos(), f64::from(r) * a.sin());
            for v in [x as f32, y as f32, 0.0f32] {
                data.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    let field =
        |name: &str, offset: u32| PackedElementField { name: name.into(), offset, r#type: NumericType::Float32 as i32 };
    PointCloud {
        timestamp: Some(stamp(ns)),
        frame_id: frame_id.into(),
        pose: Some(pose_of(Pose2::new(0.0, 0.0, 0.0))),
        point_stride: 12,
        fields: vec![field("x", 0), field("y", 4), field("z", 8)],
        data: data.into(),
    }
}

/// Coloured points at height `z` as a `foxglove.PointCloud` in `frame_id`
/// (FLOAT32 `x`, `y`, `z`, UINT8 `red`, `green`, `blue`, `alpha`).
pub fn colored_points(ns: u64, frame_id: &str, points: &[(f64, f64, f64, Rgba)]) -> PointCloud {
    let mut data = Vec::with_capacity(points.len() * 16);
    for &(x, y, z, c) in points {
        for v in [x as f32, y as f32, z as f32] {
            data.extend_from_slice(&v.to_le_bytes());
        }
        data.extend(c.map(|v| (v.clamp(0.0, 1.0) * 255.0).round() as u8));
    }
    let field =
        |name: &str, offset: u32, ty: NumericType| PackedElementField { name: name.into(), offset, r#type: ty as i32 };
    PointCloud {
        timestamp: Some(stamp(ns)),
        frame_id: frame_id.into(),
        pose: Some(pose_of(Pose2::new(0.0, 0.0, 0.0))),
        point_stride: 16,
        fields: vec![
            field("x", 0, NumericType::Float32),
            field("y", 4, NumericType::Float32),
            field("z", 8, NumericType::Float32),
            field("red", 12, NumericType::Uint8),
            field("green", 13, NumericType::Uint8),
            field("blue", 14, NumericType::Uint8),
            field("alpha", 15, NumericType::Uint8),
        ],
        data: data.into(),
    }
}

/// A `foxglove.PoseInFrame`.
pub fn pose_in_frame(ns: u64, frame_id: &str, p: Pose2) -> PoseInFrame {
    PoseInFrame { timestamp: Some(stamp(ns)), frame_id: frame_id.into(), pose: Some(pose_of(p)) }
}

/// A `foxglove.FrameTransform` placing `child` at `p` in `parent`.
pub fn frame_transform(ns: u64, parent: &str, child: &str, p: Pose2) -> FrameTransform {
    let pose = pose_of(p);
    FrameTransform {
        timestamp: Some(stamp(ns)),
        parent_frame_id: parent.into(),
        child_frame_id: child.into(),
        translation: pose.position,
        rotation: pose.orientation,
    }
}

/// The cell's occupancy (ROS convention: -1 unknown, 0 free, 100 occupied)
/// and its colour.
fn cell_value(state: CellState) -> (i8, [u8; 4]) {
    match state {
        CellState::Unknown => (-1, [128, 128, 128, 0]),
        CellState::Free => (0, [235, 235, 235, 200]),
        CellState::Explored => (0, [200, 230, 200, 200]),
        CellState::Obstacle => (100, [40, 40, 40, 255]),
        CellState::Wall => (100, [0, 0, 0, 255]),
    }
}

/// The part of `grid` holding known cells as a `foxglove.Grid` in
/// `frame_id`, or `None` when nothing is known yet. Each cell packs an INT8
/// `occupancy` (-1 / 0 / 100) and UINT8 `red`, `green`, `blue`, `alpha`.
pub fn grid(ns: u64, frame_id: &str, grid: &OccupancyGrid) -> Option<Grid> {
    let (w, h) = (grid.width(), grid.height());
    let known = |i: usize| grid.cells()[i].state != CellState::Unknown;
    let (mut x0, mut y0, mut x1, mut y1) = (usize::MAX, usize::MAX, 0, 0);
    for i in (0..w * h).filter(|&i| known(i)) {
        let (x, y) = (i % w, i / w);
        (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x), y1.max(y));
    }
    if x0 == usize::MAX {
        return None;
    }
    let cols = x1 - x0 + 1;
    let mut data = Vec::with_capacity(cols * (y1 - y0 + 1) * 5);
    for y in y0..=y1 {
        for x in x0..=x1 {
            let (occ, rgba) = cell_value(grid.cells()[y * w + x].state);
            data.extend_from_slice(&occ.to_le_bytes());
            data.extend_from_slice(&rgba);
        }
    }
    let r = grid.resolution();
    let origin = grid.origin();
    let corner = Pose2::new(origin.x + x0 as f64 * r, origin.y + y0 as f64 * r, 0.0);
    let field =
        |name: &str, offset: u32, ty: NumericType| PackedElementField { name: name.into(), offset, r#type: ty as i32 };
    Some(Grid {
        timestamp: Some(stamp(ns)),
        frame_id: frame_id.into(),
        pose: Some(pose_of(corner)),
        column_count: cols as u32,
        cell_size: Some(Vector2 { x: r, y: r }),
        row_stride: (cols * 5) as u32,
        cell_stride: 5,
        fields: vec![
            field("occupancy", 0, NumericType::Int8),
            field("red", 1, NumericType::Uint8),
            field("green", 2, NumericType::Uint8),
            field("blue", 3, NumericType::Uint8),
            field("alpha", 4, NumericType::Uint8),
        ],
        data: data.into(),
    })
}

/// An RGBA colour, components in [0, 1].
pub type Rgba = [f64; 4];

fn color_of(c: Rgba) -> Color {
    Color { r: c[0], g: c[1], b: c[2], a: c[3] }
}

/// One `foxglove.SceneEntity` being built.
#[derive(Debug)]
pub struct Entity {
    value: SceneEntity,
}

impl Entity {
    /// An empty entity `id` in `frame_id` that lives until replaced.
    pub fn new(ns: u64, frame_id: &str, id: &str) -> Self {
        Self {
            value: SceneEntity {
                timestamp: Some(stamp(ns)),
                frame_id: frame_id.into(),
                id: id.into(),
                ..SceneEntity::default()
            },
        }
    }

    /// Adds a line strip through `points` (metres, z = 0.05).
    pub fn line_strip(mut self, points: &[(f64, f64)], thickness: f64, c: Rgba) -> Self {
        self.value.lines.push(LinePrimitive {
            r#type: line_primitive::Type::LineStrip as i32,
            pose: Some(pose_of(Pose2::new(0.0, 0.0, 0.0))),
            thickness,
            scale_invariant: false,
            points: points.iter().map(|&(x, y)| Point3 { x, y, z: 0.05 }).collect(),
            color: Some(color_of(c)),
            colors: Vec::new(),
            indices: Vec::new(),
        });
        self
    }

    /// Adds a sphere of `diameter` at `(x, y)`.
    pub fn sphere(mut self, x: f64, y: f64, diameter: f64, c: Rgba) -> Self {
        self.value.spheres.push(SpherePrimitive {
            pose: Some(pose_of(Pose2::new(x, y, 0.0))),
            size: Some(Vector3 { x: diameter, y: diameter, z: diameter }),
            color: Some(color_of(c)),
        });
        self
    }

    /// Adds a text label at `(x, y)`, 0.3 m up.
    pub fn text(mut self, x: f64, y: f64, text: &str, c: Rgba) -> Self {
        self.value.texts.push(TextPrimitive {
            pose: Some(pose_at(Pose2::new(x, y, 0.0), 0.3)),
            billboard: true,
            font_size: 14.0,
            scale_invariant: true,
            color: Some(color_of(c)),
            text: text.into(),
        });
        self
    }
}

/// A `foxglove.SceneUpdate` replacing `entities`.
pub fn scene_update(entities: Vec<Entity>) -> SceneUpdate {
    SceneUpdate { deletions: Vec::new(), entities: entities.into_iter().map(|e| e.value).collect() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nav_core::geometry::Point2;
    use nav_core::grid::GridPos;

    #[test]
    fn poses_turn_about_z_and_times_split_into_seconds() {
        let msg = pose_in_frame(1_500_000_000, "odom", Pose2::new(1.0, 2.0, std::f64::consts::FRAC_PI_2));
        assert_eq!(msg.timestamp, Some(Timestamp::new(1, 500_000_000)));
        let q = msg.pose.unwrap().orientation.unwrap();
        assert!((q.z - 0.5f64.sqrt()).abs() < 1e-12 && (q.w - 0.5f64.sqrt()).abs() < 1e-12);
        assert_eq!(stamp(u64::MAX).sec(), u32::MAX);
    }

    #[test]
    fn a_grid_message_covers_only_the_known_cells() {
        let mut g = OccupancyGrid::new(10, 8, 0.5, Point2::new(-2.0, -1.0)).unwrap();
        assert!(grid(0, "odom", &g).is_none(), "nothing known, nothing sent");
        g.set(GridPos::new(2, 3), CellState::Free, 1.0);
        g.set(GridPos::new(4, 5), CellState::Obstacle, 1.0);
        let m = grid(0, "odom", &g).unwrap();
        assert_eq!(m.column_count, 3);
        let corner = m.pose.unwrap().position.unwrap();
        assert_eq!((corner.x, corner.y), (-1.0, 0.5));
        assert_eq!(m.data.len(), 3 * 3 * 5);
        assert_eq!(m.data[0] as i8, 0, "(2, 3) free");
        assert_eq!(m.data[(2 * 3 + 2) * 5] as i8, 100, "(4, 5) occupied");
        assert_eq!(m.data[5] as i8, -1, "(3, 3) unknown");
    }

    #[test]
    fn scans_carry_no_non_finite_numbers() {
        let scan = nav_core::lidar::LaserScan {
            angle_min: -1.0,
            angle_increment: 0.5,
            range_min: 0.1,
            range_max: 10.0,
            ranges: vec![1.0, f32::INFINITY, f32::NAN, 2.0, f32::NEG_INFINITY],
        };
        let m = laser_scan(0, "base_link", &scan);
        assert_eq!(m.end_angle, 1.0);
        assert_eq!(m.ranges, vec![1.0, 0.0, 0.0, 2.0, 0.0]);
    }
}
