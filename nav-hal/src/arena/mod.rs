//! Arenas: the worlds the built-in simulator runs.
//!
//! An arena is a JSON file with a name, rectangular bounds (implicitly
//! walls), wall segments, circular obstacles, labelled objects (solid
//! circles the robot can bump into and look for), named room polygons, a
//! start pose, an optional goal and success criteria:
//!
//! ```json
//! {
//!   "name": "tiny",
//!   "bounds": [-2.5, -2.5, 2.5, 2.5],
//!   "walls": [[0.0, 2.5, 0.0, -0.5]],
//!   "obstacles": [{"x": -0.5, "y": -0.5, "r": 0.2}],
//!   "objects": [{"label": "chair", "x": 1.5, "y": 1.5, "r": 0.25}],
//!   "rooms": [{"name": "office", "polygon": [[-2.5, -2.5], [2.5, -2.5], [2.5, 2.5], [-2.5, 2.5]]}],
//!   "start": {"x": -1.5, "y": -1.5, "yaw_deg": 45.0},
//!   "goal": {"object": "chair"},
//!   "criteria": {"max_steps": 100, "max_collisions": 0}
//! }
//! ```
//!
//! Parsing rejects unknown fields; [`Arena::validate`] checks the geometry
//! and names the field at fault (`start: inside wall 3`,
//! `objects[2].r: must be positive`, `goal: unreachable from start`, ...).
//! Built-in arenas live as JSON files in `nav-hal/arenas/` and are
//! embedded in the binary; `proc_<seed>` names a procedurally generated
//! house.

mod builtin;
pub(crate) mod geodesic;
pub mod procedural;
pub(crate) mod scene;
pub mod semantics;
mod validate;

use crate::HalError;
use nav_core::geometry::{Point2, Pose2, Segment};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The robot radius arenas are validated against unless told otherwise
/// (the simulator's default robot: a 0.36 m disc).
pub const DEFAULT_ROBOT_RADIUS_M: f64 = 0.18;
/// Default success distance for ObjectNav goals, metres.
pub const DEFAULT_OBJECT_SUCCESS_M: f64 = 1.0;
/// Default tolerance for point goals, metres.
pub const DEFAULT_POINT_SUCCESS_M: f64 = 0.3;
/// Default step limit (Habitat ObjectNav uses 500).
pub const DEFAULT_MAX_STEPS: u32 = 500;
/// The largest arena file [`Arena::load`] reads (the built-in houses are
/// a few KiB).
pub const MAX_ARENA_BYTES: u64 = 16 << 20;
/// The most walls, obstacles, objects or rooms an arena may list, each (the
/// built-in houses have a few dozen): the simulator casts every ray against
/// every feature, so 500,000 obstacles would make a run crawl for minutes.
pub const MAX_ARENA_FEATURES: usize = 4096;
/// The most points a room polygon may have.
pub const MAX_ROOM_POINTS: usize = 1024;
/// The longest name, object label or room name, in characters (they go
/// into prompts and reports).
pub const MAX_ARENA_NAME_CHARS: usize = 256;
/// The longest `description`, in characters.
pub const MAX_ARENA_DESCRIPTION_CHARS: usize = 4096;

/// A world for the simulator. See the [module docs](self) for the format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arena {
    /// Name (built-ins: `simple`, `house_a`, `proc_7`, ...).
    pub name: String,
    /// Task text for people and prompts, e.g. "Reach the goal at (1.5, 1.5)".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `[xmin, ymin, xmax, ymax]`, metres. The rectangle's edges are walls.
    pub bounds: [f64; 4],
    /// Wall segments `[x1, y1, x2, y2]`, metres (zero thickness).
    #[serde(default)]
    pub walls: Vec<[f64; 4]>,
    /// Unlabelled circular obstacles (furniture, pillars).
    #[serde(default)]
    pub obstacles: Vec<Obstacle>,
    /// Labelled objects: solid circles that are also search targets.
    #[serde(default)]
    pub objects: Vec<ArenaObject>,
    /// Named rooms (polygons). Rooms may be absent; a point outside every
    /// room has no room.
    #[serde(default)]
    pub rooms: Vec<Room>,
    /// Where the robot starts.
    pub start: Start,
    /// The goal: an object label (ObjectNav), a point, or none
    /// (exploration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<Goal>,
    /// Success criteria.
    #[serde(default)]
    pub criteria: Criteria,
}

/// A circular obstacle.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Obstacle {
    /// Centre x, metres.
    pub x: f64,
    /// Centre y, metres.
    pub y: f64,
    /// Radius, metres.
    pub r: f64,
}

/// A labelled object (a solid circle).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArenaObject {
    /// Class label, e.g. `"bed"`, `"tv"`.
    pub label: String,
    /// Centre x, metres.
    pub x: f64,
    /// Centre y, metres.
    pub y: f64,
    /// Radius, metres.
    pub r: f64,
}

impl ArenaObject {
    /// Centre of the object.
    pub fn center(&self) -> Point2 {
        Point2::new(self.x, self.y)
    }
}

/// A named room.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Room {
    /// Room type or name: `kitchen`, `living room`, `bedroom`, `bathroom`,
    /// `corridor`, `office`, ...
    pub name: String,
    /// Polygon vertices `[x, y]`, metres (either orientation).
    pub polygon: Vec<[f64; 2]>,
}

impl Room {
    /// The polygon as points.
    pub fn points(&self) -> Vec<Point2> {
        self.polygon.iter().map(|p| Point2::new(p[0], p[1])).collect()
    }
}

/// The start pose.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Start {
    /// x, metres.
    pub x: f64,
    /// y, metres.
    pub y: f64,
    /// Heading, degrees CCW from +x (REP-103: 90 = "north", +y).
    #[serde(default)]
    pub yaw_deg: f64,
}

impl Start {
    /// The start as a pose (yaw in radians).
    pub fn pose(&self) -> Pose2 {
        Pose2::new(self.x, self.y, self.yaw_deg.to_radians())
    }
}

/// The episode goal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawGoal", into = "RawGoal")]
pub enum Goal {
    /// ObjectNav: reach any object with this label (`{"object": "tv"}`).
    Object {
        /// The object class.
        label: String,
    },
    /// Point goal (`{"x": 1.5, "y": 1.5}`).
    Point {
        /// x, metres.
        x: f64,
        /// y, metres.
        y: f64,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGoal {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    object: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    x: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    y: Option<f64>,
}

impl TryFrom<RawGoal> for Goal {
    type Error = String;
    fn try_from(raw: RawGoal) -> Result<Self, String> {
        match (raw.object, raw.x, raw.y) {
            (Some(label), None, None) => Ok(Goal::Object { label }),
            (None, Some(x), Some(y)) => Ok(Goal::Point { x, y }),
            (Some(_), _, _) => Err("give either \"object\" or \"x\" and \"y\", not both".into()),
            (None, _, _) => Err("expected {\"object\": LABEL} or {\"x\": X, \"y\": Y}".into()),
        }
    }
}

impl From<Goal> for RawGoal {
    fn from(g: Goal) -> Self {
        match g {
            Goal::Object { label } => RawGoal { object: Some(label), x: None, y: None },
            Goal::Point { x, y } => RawGoal { object: None, x: Some(x), y: Some(y) },
        }
    }
}

/// Success criteria of an episode.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Criteria {
    /// Step (cycle) limit.
    pub max_steps: u32,
    /// Collisions allowed; absent = not checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_collisions: Option<u32>,
    /// Success distance, metres; absent = 1.0 for object goals, 0.3 for
    /// point goals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success_distance_m: Option<f64>,
    /// Minimum coverage fraction in `[0, 1]`; absent = not checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_coverage: Option<f64>,
}

impl Default for Criteria {
    fn default() -> Self {
        Self { max_steps: DEFAULT_MAX_STEPS, max_collisions: None, success_distance_m: None, min_coverage: None }
    }
}

/// Where an arena's primitive sits, for messages and ray hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// `walls[i]`.
    Wall(usize),
    /// Edge `k` of the bounds (0 bottom, 1 right, 2 top, 3 left).
    Bounds(usize),
    /// `obstacles[i]`.
    Obstacle(usize),
    /// `objects[i]`.
    Object(usize),
}

impl std::fmt::Display for Feature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Feature::Wall(i) => write!(f, "wall {i}"),
            Feature::Bounds(_) => write!(f, "the bounds"),
            Feature::Obstacle(i) => write!(f, "obstacle {i}"),
            Feature::Object(i) => write!(f, "object {i}"),
        }
    }
}

impl Arena {
    /// Parses and validates an arena from JSON text.
    pub fn from_json_str(text: &str) -> Result<Arena, HalError> {
        Self::from_json_named(text, "<json>")
    }

    /// Parses and validates, naming `origin` (a file name) in errors.
    pub fn from_json_named(text: &str, origin: &str) -> Result<Arena, HalError> {
        let arena = Self::parse_unvalidated(text, origin)?;
        arena.validate().map_err(|e| e.with_origin(origin))?;
        Ok(arena)
    }

    /// Parses without checking the geometry (unknown fields and types are
    /// still errors).
    pub fn parse_unvalidated(text: &str, origin: &str) -> Result<Arena, HalError> {
        let err = |field: &str, message: String| HalError::InvalidArena {
            origin: origin.to_string(),
            field: field.to_string(),
            message,
        };
        if text.trim().is_empty() {
            return Err(err("document", "empty file".into()));
        }
        if !text.trim_start().starts_with('{') {
            return Err(match serde_json::from_str::<serde_json::Value>(text) {
                Err(e) => err("document", format!("not JSON: {e}")),
                Ok(v) => err("document", format!("expected a JSON object, got {}", json_kind(&v))),
            });
        }
        let mut de = serde_json::Deserializer::from_str(text);
        let arena: Arena = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let msg = inner.to_string();
            if inner.is_syntax() || inner.is_eof() {
                return err("document", format!("not JSON: {msg}"));
            }
            // "missing field `start`" is reported at the parent; name the child.
            if let Some(rest) = msg.strip_prefix("missing field `") {
                if let Some(name) = rest.split('`').next() {
                    let field = if path == "." { name.to_string() } else { format!("{path}.{name}") };
                    return err(&field, format!("missing ({msg})"));
                }
            }
            err(if path == "." { "document" } else { &path }, msg)
        })?;
        de.end().map_err(|e| err("document", format!("not JSON: {e}")))?;
        Ok(arena)
    }

    /// Reads, parses and validates an arena file; errors name the file. A
    /// file over [`MAX_ARENA_BYTES`] is an error naming the limit.
    pub fn load(path: impl AsRef<Path>) -> Result<Arena, HalError> {
        let path = path.as_ref();
        let text = nav_core::bounded::open_regular(path)
            .and_then(|f| nav_core::bounded::read_to_string_limited(f, MAX_ARENA_BYTES))
            .map_err(|source| HalError::Io { path: path.to_path_buf(), source })?;
        Self::from_json_named(&text, &path.display().to_string())
    }

    /// Pretty JSON, as the built-in files are written.
    pub fn to_json_pretty(&self) -> String {
        // Serializing plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Writes the arena as pretty JSON.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), HalError> {
        let path = path.as_ref();
        nav_core::bounded::refuse_fifo(path)
            .and_then(|()| std::fs::write(path, self.to_json_pretty() + "\n"))
            .map_err(|source| HalError::Io { path: path.to_path_buf(), source })
    }

    /// A built-in arena by name: one of [`Arena::builtin_names`], or
    /// `proc_<seed>` for [`procedural::generate_house`]`(seed)`.
    pub fn builtin(name: &str) -> Result<Arena, HalError> {
        builtin::load(name)
    }

    /// Names of the built-in arena files (the four test arenas of the
    /// candidates pipeline, then the houses). `proc_<seed>` names are
    /// accepted too but not listed.
    pub fn builtin_names() -> Vec<&'static str> {
        builtin::names()
    }

    /// Checks the geometry against the default robot radius.
    pub fn validate(&self) -> Result<(), HalError> {
        validate::validate(self, DEFAULT_ROBOT_RADIUS_M)
    }

    /// Checks the geometry for a robot disc of `radius_m`.
    pub fn validate_for_radius(&self, radius_m: f64) -> Result<(), HalError> {
        validate::validate(self, radius_m)
    }

    /// The success distance in force: the criteria's, else 1.0 m for an
    /// object goal and 0.3 m for a point goal (and for no goal).
    pub fn success_distance_m(&self) -> f64 {
        self.criteria.success_distance_m.unwrap_or(match self.goal {
            Some(Goal::Object { .. }) => DEFAULT_OBJECT_SUCCESS_M,
            _ => DEFAULT_POINT_SUCCESS_M,
        })
    }

    /// Objects whose label matches the goal's (empty without an object
    /// goal).
    pub fn goal_objects(&self) -> Vec<&ArenaObject> {
        match &self.goal {
            Some(Goal::Object { label }) => self.objects.iter().filter(|o| &o.label == label).collect(),
            _ => Vec::new(),
        }
    }

    /// The distinct object labels, sorted.
    pub fn labels(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.objects.iter().map(|o| o.label.as_str()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The four bounds edges as segments (bottom, right, top, left).
    pub fn bounds_segments(&self) -> [Segment; 4] {
        let [x0, y0, x1, y1] = self.bounds;
        let (a, b, c, d) = (Point2::new(x0, y0), Point2::new(x1, y0), Point2::new(x1, y1), Point2::new(x0, y1));
        [Segment::new(a, b), Segment::new(b, c), Segment::new(c, d), Segment::new(d, a)]
    }

    /// Every wall segment including the bounds, tagged with its feature.
    pub fn all_segments(&self) -> Vec<(Segment, Feature)> {
        let mut v: Vec<(Segment, Feature)> = self
            .walls
            .iter()
            .enumerate()
            .map(|(i, w)| (Segment::new(Point2::new(w[0], w[1]), Point2::new(w[2], w[3])), Feature::Wall(i)))
            .collect();
        v.extend(self.bounds_segments().into_iter().enumerate().map(|(k, s)| (s, Feature::Bounds(k))));
        v
    }

    /// Every solid circle (obstacles, then objects) as `(centre, r, feature)`.
    pub fn all_circles(&self) -> Vec<(Point2, f64, Feature)> {
        let mut v: Vec<(Point2, f64, Feature)> = self
            .obstacles
            .iter()
            .enumerate()
            .map(|(i, o)| (Point2::new(o.x, o.y), o.r, Feature::Obstacle(i)))
            .collect();
        v.extend(self.objects.iter().enumerate().map(|(i, o)| (o.center(), o.r, Feature::Object(i))));
        v
    }

    /// Name of the first room whose polygon contains `p`.
    pub fn room_at(&self, p: Point2) -> Option<&str> {
        self.rooms.iter().find(|r| nav_core::geometry::point_in_polygon(p, &r.points())).map(|r| r.name.as_str())
    }

    /// True when `p` lies inside the bounds rectangle.
    pub fn in_bounds(&self, p: Point2) -> bool {
        let [x0, y0, x1, y1] = self.bounds;
        p.x >= x0 && p.x <= x1 && p.y >= y0 && p.y <= y1
    }
}

impl HalError {
    /// Replaces the origin of an [`HalError::InvalidArena`].
    pub(crate) fn with_origin(self, origin: &str) -> HalError {
        match self {
            HalError::InvalidArena { field, message, .. } => {
                HalError::InvalidArena { origin: origin.to_string(), field, message }
            }
            other => other,
        }
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Builds an [`HalError::InvalidArena`] for `field`.
pub(crate) fn invalid(field: impl Into<String>, message: impl Into<String>) -> HalError {
    HalError::InvalidArena { origin: "<arena>".into(), field: field.into(), message: message.into() }
}
