//! Foxglove's well-known message types, JSON-encoded: the schema names and
//! JSON Schemas the channels declare (`jsonschema` encoding) and builders for
//! the messages. Foxglove Studio recognises a channel by its schema name
//! (`foxglove.LaserScan`, …) and draws it without plugins; bytes fields
//! (`data`) are base64 strings, as the JSON encoding of these types requires.
//!
//! The schemas here list the fields navkit writes, with their types; they
//! are written for navkit from the published field lists of the types.

use base64::Engine;
use nav_core::geometry::Pose2;
use nav_core::grid::{CellState, OccupancyGrid};
use serde_json::{Value, json};

/// A Foxglove type navkit records: its schema name and JSON Schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `foxglove.CompressedImage`.
    CompressedImage,
    /// `foxglove.LaserScan`.
    LaserScan,
    /// `foxglove.PoseInFrame`.
    PoseInFrame,
    /// `foxglove.FrameTransform`.
    FrameTransform,
    /// `foxglove.Grid`.
    Grid,
    /// `foxglove.SceneUpdate`.
    SceneUpdate,
}

impl Kind {
    /// The schema name channels declare.
    pub fn name(self) -> &'static str {
        match self {
            Kind::CompressedImage => "foxglove.CompressedImage",
            Kind::LaserScan => "foxglove.LaserScan",
            Kind::PoseInFrame => "foxglove.PoseInFrame",
            Kind::FrameTransform => "foxglove.FrameTransform",
            Kind::Grid => "foxglove.Grid",
            Kind::SceneUpdate => "foxglove.SceneUpdate",
        }
    }

    /// The JSON Schema of the type.
    pub fn schema(self) -> Value {
        let props = match self {
            Kind::CompressedImage => json!({
                "timestamp": time(), "frame_id": string(),
                "data": bytes(), "format": string(),
            }),
            Kind::LaserScan => json!({
                "timestamp": time(), "frame_id": string(), "pose": pose(),
                "start_angle": number(), "end_angle": number(),
                "ranges": numbers(), "intensities": numbers(),
            }),
            Kind::PoseInFrame => json!({"timestamp": time(), "frame_id": string(), "pose": pose()}),
            Kind::FrameTransform => json!({
                "timestamp": time(), "parent_frame_id": string(), "child_frame_id": string(),
                "translation": vector3(), "rotation": quaternion(),
            }),
            Kind::Grid => json!({
                "timestamp": time(), "frame_id": string(), "pose": pose(),
                "column_count": integer(), "cell_size": object("foxglove.Vector2", json!({"x": number(), "y": number()})),
                "row_stride": integer(), "cell_stride": integer(),
                "fields": {"type": "array", "items": object("foxglove.PackedElementField", json!({
                    "name": string(), "offset": integer(), "type": integer(),
                }))},
                "data": bytes(),
            }),
            Kind::SceneUpdate => json!({
                "deletions": {"type": "array", "items": object("foxglove.SceneEntityDeletion", json!({
                    "timestamp": time(), "type": integer(), "id": string(),
                }))},
                "entities": {"type": "array", "items": scene_entity()},
            }),
        };
        let mut schema = object(self.name(), props);
        schema["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
        schema
    }
}

fn object(title: &str, properties: Value) -> Value {
    json!({"title": title, "type": "object", "properties": properties})
}
fn string() -> Value {
    json!({"type": "string"})
}
fn number() -> Value {
    json!({"type": "number"})
}
fn integer() -> Value {
    json!({"type": "integer", "minimum": 0})
}
fn numbers() -> Value {
    json!({"type": "array", "items": number()})
}
fn bytes() -> Value {
    json!({"type": "string", "contentEncoding": "base64"})
}
fn time() -> Value {
    object("time", json!({"sec": integer(), "nsec": {"type": "integer", "minimum": 0, "maximum": 999_999_999}}))
}
fn vector3() -> Value {
    object("foxglove.Vector3", json!({"x": number(), "y": number(), "z": number()}))
}
fn quaternion() -> Value {
    object("foxglove.Quaternion", json!({"x": number(), "y": number(), "z": number(), "w": number()}))
}
fn pose() -> Value {
    object("foxglove.Pose", json!({"position": vector3(), "orientation": quaternion()}))
}
fn color() -> Value {
    object("foxglove.Color", json!({"r": number(), "g": number(), "b": number(), "a": number()}))
}
fn scene_entity() -> Value {
    let primitive = |title: &str, extra: Value| {
        let mut p = json!({"pose": pose(), "color": color()});
        if let (Some(p), Some(e)) = (p.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        json!({"type": "array", "items": object(title, p)})
    };
    object(
        "foxglove.SceneEntity",
        json!({
            "timestamp": time(), "frame_id": string(), "id": string(),
            "lifetime": object("duration", json!({"sec": {"type": "integer"}, "nsec": integer()})),
            "frame_locked": {"type": "boolean"},
            "spheres": primitive("foxglove.SpherePrimitive", json!({"size": vector3()})),
            "lines": primitive("foxglove.LinePrimitive", json!({
                "type": integer(), "thickness": number(), "scale_invariant": {"type": "boolean"},
                "points": {"type": "array", "items": object("foxglove.Point3", json!({"x": number(), "y": number(), "z": number()}))},
            })),
            "texts": primitive("foxglove.TextPrimitive", json!({
                "billboard": {"type": "boolean"}, "font_size": number(),
                "scale_invariant": {"type": "boolean"}, "text": string(),
            })),
        }),
    )
}

/// A `time` value from nanoseconds.
pub fn stamp(ns: u64) -> Value {
    json!({"sec": ns / 1_000_000_000, "nsec": ns % 1_000_000_000})
}

/// A planar pose as a `foxglove.Pose` (z = 0, rotation about z).
pub fn pose_of(p: Pose2) -> Value {
    json!({
        "position": {"x": p.x, "y": p.y, "z": 0.0},
        "orientation": {"x": 0.0, "y": 0.0, "z": (p.yaw / 2.0).sin(), "w": (p.yaw / 2.0).cos()},
    })
}

/// A `foxglove.CompressedImage` (`format` `png` or `jpeg`).
pub fn compressed_image(ns: u64, frame_id: &str, format: &str, data: &[u8]) -> Value {
    json!({
        "timestamp": stamp(ns), "frame_id": frame_id, "format": format,
        "data": base64::engine::general_purpose::STANDARD.encode(data),
    })
}

/// A `foxglove.LaserScan` in `frame_id` (the robot), angles CCW from its
/// front. JSON has no infinities or NaN: a beam without a valid return
/// (non-finite range) is written as range 0, a point at the sensor itself.
pub fn laser_scan(ns: u64, frame_id: &str, scan: &nav_core::lidar::LaserScan) -> Value {
    let n = scan.ranges.len();
    let end = scan.angle_min + scan.angle_increment * n.saturating_sub(1) as f64;
    let ranges: Vec<f64> = scan.ranges.iter().map(|&r| if r.is_finite() { f64::from(r) } else { 0.0 }).collect();
    json!({
        "timestamp": stamp(ns), "frame_id": frame_id, "pose": pose_of(Pose2::new(0.0, 0.0, 0.0)),
        "start_angle": scan.angle_min, "end_angle": end, "ranges": ranges, "intensities": [],
    })
}

/// A `foxglove.PoseInFrame`.
pub fn pose_in_frame(ns: u64, frame_id: &str, p: Pose2) -> Value {
    json!({"timestamp": stamp(ns), "frame_id": frame_id, "pose": pose_of(p)})
}

/// A `foxglove.FrameTransform` placing `child` at `p` in `parent`.
pub fn frame_transform(ns: u64, parent: &str, child: &str, p: Pose2) -> Value {
    let pose = pose_of(p);
    json!({
        "timestamp": stamp(ns), "parent_frame_id": parent, "child_frame_id": child,
        "translation": pose["position"], "rotation": pose["orientation"],
    })
}

/// `foxglove.NumericType` codes used here.
const INT8: u8 = 2;
const UINT8: u8 = 1;

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
pub fn grid(ns: u64, frame_id: &str, grid: &OccupancyGrid) -> Option<Value> {
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
    let field = |name: &str, offset: u32, ty: u8| json!({"name": name, "offset": offset, "type": ty});
    Some(json!({
        "timestamp": stamp(ns), "frame_id": frame_id, "pose": pose_of(corner),
        "column_count": cols, "cell_size": {"x": r, "y": r},
        "row_stride": cols * 5, "cell_stride": 5,
        "fields": [field("occupancy", 0, INT8), field("red", 1, UINT8), field("green", 2, UINT8),
                   field("blue", 3, UINT8), field("alpha", 4, UINT8)],
        "data": base64::engine::general_purpose::STANDARD.encode(&data),
    }))
}

/// An RGBA colour, components in [0, 1].
pub type Color = [f64; 4];

fn color_of(c: Color) -> Value {
    json!({"r": c[0], "g": c[1], "b": c[2], "a": c[3]})
}

/// One `foxglove.SceneEntity` being built.
#[derive(Debug)]
pub struct Entity {
    value: Value,
}

impl Entity {
    /// An empty entity `id` in `frame_id` that lives until replaced.
    pub fn new(ns: u64, frame_id: &str, id: &str) -> Self {
        Self {
            value: json!({
                "timestamp": stamp(ns), "frame_id": frame_id, "id": id,
                "lifetime": {"sec": 0, "nsec": 0}, "frame_locked": false,
                "metadata": [], "arrows": [], "cubes": [], "spheres": [], "cylinders": [],
                "lines": [], "triangles": [], "texts": [], "models": [],
            }),
        }
    }

    fn push(&mut self, key: &str, v: Value) {
        if let Some(a) = self.value[key].as_array_mut() {
            a.push(v);
        }
    }

    /// Adds a line strip through `points` (metres, z = 0.05).
    pub fn line_strip(mut self, points: &[(f64, f64)], thickness: f64, c: Color) -> Self {
        let pts: Vec<Value> = points.iter().map(|&(x, y)| json!({"x": x, "y": y, "z": 0.05})).collect();
        self.push(
            "lines",
            json!({
                "type": 0, "pose": pose_of(Pose2::new(0.0, 0.0, 0.0)), "thickness": thickness,
                "scale_invariant": false, "points": pts, "color": color_of(c), "colors": [], "indices": [],
            }),
        );
        self
    }

    /// Adds a sphere of `diameter` at `(x, y)`.
    pub fn sphere(mut self, x: f64, y: f64, diameter: f64, c: Color) -> Self {
        self.push(
            "spheres",
            json!({"pose": pose_of(Pose2::new(x, y, 0.0)), "size": {"x": diameter, "y": diameter, "z": diameter},
                   "color": color_of(c)}),
        );
        self
    }

    /// Adds a text label at `(x, y)`.
    pub fn text(mut self, x: f64, y: f64, text: &str, c: Color) -> Self {
        self.push(
            "texts",
            json!({"pose": pose_of(Pose2::new(x, y, 0.3)), "billboard": true, "font_size": 14.0,
                   "scale_invariant": true, "color": color_of(c), "text": text}),
        );
        self
    }
}

/// A `foxglove.SceneUpdate` replacing `entities`.
pub fn scene_update(entities: Vec<Entity>) -> Value {
    json!({"deletions": [], "entities": entities.into_iter().map(|e| e.value).collect::<Vec<_>>()})
}

#[cfg(test)]
mod tests {
    use super::*;
    use nav_core::geometry::Point2;
    use nav_core::grid::GridPos;

    #[test]
    fn schemas_name_their_type_and_list_the_fields_written() {
        for kind in [
            Kind::CompressedImage,
            Kind::LaserScan,
            Kind::PoseInFrame,
            Kind::FrameTransform,
            Kind::Grid,
            Kind::SceneUpdate,
        ] {
            let s = kind.schema();
            assert_eq!(s["title"], kind.name());
            assert!(s["properties"].as_object().is_some_and(|p| !p.is_empty()));
        }
        let msg = pose_in_frame(1_500_000_000, "odom", Pose2::new(1.0, 2.0, std::f64::consts::FRAC_PI_2));
        assert_eq!(msg["timestamp"], json!({"sec": 1, "nsec": 500_000_000}));
        let q = &msg["pose"]["orientation"];
        assert!((q["z"].as_f64().unwrap() - 0.5f64.sqrt()).abs() < 1e-12);
        for key in Kind::PoseInFrame.schema()["properties"].as_object().unwrap().keys() {
            assert!(msg.get(key).is_some(), "{key}");
        }
    }

    #[test]
    fn a_grid_message_covers_only_the_known_cells() {
        let mut g = OccupancyGrid::new(10, 8, 0.5, Point2::new(-2.0, -1.0)).unwrap();
        assert!(grid(0, "odom", &g).is_none(), "nothing known, nothing sent");
        g.set(GridPos::new(2, 3), CellState::Free, 1.0);
        g.set(GridPos::new(4, 5), CellState::Obstacle, 1.0);
        let m = grid(0, "odom", &g).unwrap();
        assert_eq!(m["column_count"], 3);
        assert_eq!(m["pose"]["position"]["x"], -1.0);
        assert_eq!(m["pose"]["position"]["y"], 0.5);
        let data = base64::engine::general_purpose::STANDARD.decode(m["data"].as_str().unwrap()).unwrap();
        assert_eq!(data.len(), 3 * 3 * 5);
        assert_eq!(data[0] as i8, 0, "(2, 3) free");
        assert_eq!(data[(2 * 3 + 2) * 5] as i8, 100, "(4, 5) occupied");
        assert_eq!(data[5] as i8, -1, "(3, 3) unknown");
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
        assert_eq!(m["end_angle"], 1.0);
        assert_eq!(m["ranges"], json!([1.0, 0.0, 0.0, 2.0, 0.0]));
    }
}
