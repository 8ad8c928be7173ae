//! The navkit bridge protocol, version 1: message types and codecs in one
//! place (docs/BRIDGE.md is the reference).

use crate::HalError;
use crate::hal::{CameraFrame, DepthFrame, Detection};
use base64::Engine as _;
use nav_core::action::StepConfig;
use nav_core::geometry::Pose2;
use nav_core::raster::RgbFrame;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// The protocol name sent in `hello`.
pub const PROTOCOL: &str = "navkit-bridge";
/// The protocol version this crate speaks.
pub const VERSION: u32 = 1;

/// Which episode a reset asks for. Every field is optional; an empty spec
/// means "the next episode". How backends read them: `index` selects the
/// i-th episode (Habitat: of the dataset; MiniWorld and openroom: seed
/// `--seed + index`, scene `index mod scenes`), `seed` overrides the
/// generator seed, `id` names a dataset episode, `scene` a scene.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EpisodeSpec {
    /// Episode index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<u64>,
    /// Generator seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Dataset episode id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Scene name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scene: Option<String>,
}

impl EpisodeSpec {
    /// The next episode in the backend's order.
    pub fn next() -> Self {
        Self::default()
    }

    /// Episode number `index` (reproducible: the same index gives the same
    /// episode).
    pub fn index(index: u64) -> Self {
        Self { index: Some(index), ..Self::default() }
    }

    /// The episode generated from `seed`.
    pub fn seed(seed: u64) -> Self {
        Self { seed: Some(seed), ..Self::default() }
    }
}

/// What a reset tells the agent about its task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeInfo {
    /// Unique episode id (e.g. `house-7`, or the Habitat dataset's id).
    pub episode_id: String,
    /// Scene id (a MiniWorld scene name or a Habitat scene file).
    pub scene_id: String,
    /// The ObjectNav target class, e.g. `"red box"` or `"chair"`.
    pub target_object: String,
    /// Index of the episode in the backend's order, when known.
    #[serde(default)]
    pub index: Option<u64>,
    /// Seed the episode was generated from, when it was.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Steps after which the episode ends unsuccessfully.
    #[serde(default)]
    pub max_steps: Option<u32>,
    /// The simulator's success distance, metres.
    #[serde(default)]
    pub success_distance_m: Option<f64>,
}

/// The longest target class a bridge may name, in characters (it goes into
/// every prompt and step record).
pub const MAX_TARGET_CHARS: usize = 256;

impl EpisodeInfo {
    /// The target class is 1 to [`MAX_TARGET_CHARS`] characters and the
    /// success distance, when given, a positive number of metres: errors
    /// name the field.
    pub(crate) fn check(&self) -> Result<(), HalError> {
        let n = self.target_object.chars().count();
        if self.target_object.trim().is_empty() || n > MAX_TARGET_CHARS {
            return Err(protocol(format!(
                "bridge reset: episode.target_object must be 1 to {MAX_TARGET_CHARS} characters, got {n}"
            )));
        }
        if let Some(d) = self.success_distance_m.filter(|d| !(d.is_finite() && *d > 0.0)) {
            return Err(protocol(format!("bridge reset: episode.success_distance_m must be positive metres, got {d}")));
        }
        Ok(())
    }
}

/// The simulator's own end-of-episode metrics (Habitat's `get_metrics()`,
/// or the MiniWorld backend's geometry).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimMetrics {
    /// The agent stopped within the success distance of the target.
    pub success: bool,
    /// Success weighted by path length, in [0, 1].
    pub spl: f64,
    /// Geodesic distance to the goal at the end, metres (`None` when the
    /// simulator could not compute one).
    pub distance_to_goal: Option<f64>,
    /// Every other metric the simulator reported, by its own name
    /// (`path_length_m`, `geodesic_m`, `soft_spl`, ...).
    pub extra: BTreeMap<String, Value>,
}

impl SimMetrics {
    pub(crate) fn from_wire(value: Value) -> Result<Self, HalError> {
        let Value::Object(mut map) = value else {
            return Err(protocol("metrics must be an object"));
        };
        let success = match map.remove("success") {
            Some(Value::Bool(b)) => b,
            Some(Value::Number(n)) => n.as_f64().is_some_and(|v| v > 0.0),
            Some(other) => return Err(protocol(format!("metrics.success must be a boolean, got {other}"))),
            None => return Err(protocol("metrics.success is missing")),
        };
        let spl = match map.remove("spl") {
            // a rounding hair over 1 is 1; 55 is not an SPL
            Some(Value::Number(n)) => match n.as_f64() {
                Some(v) if (0.0..=1.0 + 1e-9).contains(&v) => v.min(1.0),
                _ => return Err(protocol(format!("metrics.spl must be in [0, 1], got {n}"))),
            },
            Some(Value::Null) => 0.0,
            Some(other) => return Err(protocol(format!("metrics.spl must be a number, got {other}"))),
            None => return Err(protocol("metrics.spl is missing")),
        };
        let distance_to_goal = match map.remove("distance_to_goal") {
            Some(Value::Number(n)) => match n.as_f64() {
                Some(d) if d.is_finite() && d >= 0.0 => Some(d),
                _ => {
                    return Err(protocol(format!("metrics.distance_to_goal must be non-negative metres, got {n}")));
                }
            },
            Some(Value::Null) | None => None,
            Some(other) => return Err(protocol(format!("metrics.distance_to_goal must be a number, got {other}"))),
        };
        Ok(Self { success, spl, distance_to_goal, extra: map.into_iter().collect() })
    }
}

/// The server's identity and offer, from the `hello` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackendInfo {
    /// Backend name (`miniworld`, `habitat`, `openroom`, ...).
    pub name: String,
    /// Backend (bridge package) version.
    pub version: String,
    /// The simulator behind it.
    pub simulator: String,
    /// The simulator's version.
    pub simulator_version: String,
    /// Version of the bridge server package.
    pub server_version: String,
    /// Step sizes of the discrete actions.
    pub step: StepConfig,
    /// Camera width, pixels.
    pub width: u32,
    /// Camera height, pixels.
    pub height: u32,
    /// Camera horizontal field of view, degrees.
    pub hfov_deg: f64,
    /// Height of the camera above the floor, metres, when the backend says
    /// (its optical axis is level); used for depth-derived scans.
    #[serde(default)]
    pub camera_height_m: Option<f64>,
    /// Radius of the simulated agent's collision body, metres, when the
    /// backend says.
    #[serde(default)]
    pub agent_radius_m: Option<f64>,
    /// What the server can send.
    pub capabilities: WireCapabilities,
    /// What the server will send, after negotiating with our config.
    pub observation: ObservationOptions,
    /// Step limit of an episode.
    pub max_steps: Option<u32>,
    /// Scene names the backend offers (empty when it does not say).
    pub scenes: Vec<String>,
}

/// What a backend can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct WireCapabilities {
    /// RGB images.
    pub rgb: bool,
    /// Depth images.
    pub depth: bool,
    /// Ground-truth poses.
    pub pose: bool,
    /// Ground-truth detections.
    pub detections: bool,
    /// Panoramas.
    pub panorama: bool,
    /// End-of-episode metrics.
    pub metrics: bool,
}

/// What each observation carries (negotiated in `hello`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservationOptions {
    /// `png`, `raw` or `none`.
    pub rgb: String,
    /// Depth images included.
    pub depth: bool,
    /// Ground-truth pose included.
    pub pose: bool,
    /// Detections included.
    pub detections: bool,
}

#[derive(Debug, Deserialize)]
pub(crate) struct HelloReply {
    pub protocol: String,
    pub version: u32,
    #[serde(default)]
    pub server_version: String,
    pub backend: HelloBackend,
    pub capabilities: WireCapabilities,
    pub actions: Vec<String>,
    pub step: StepConfig,
    pub camera: HelloCamera,
    #[serde(default)]
    pub agent: HelloAgent,
    pub observation: ObservationOptions,
    #[serde(default)]
    pub max_steps: Option<u32>,
    #[serde(default)]
    pub scenes: Vec<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct HelloBackend {
    pub name: String,
    pub version: String,
    pub simulator: String,
    pub simulator_version: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct HelloCamera {
    pub width: u32,
    pub height: u32,
    pub hfov_deg: f64,
    /// Camera height above the floor, metres (optional).
    #[serde(default)]
    pub height_m: Option<f64>,
}

/// The agent's body (optional in the hello reply).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct HelloAgent {
    #[serde(default)]
    pub radius_m: Option<f64>,
}

/// A positive finite length, or `None`.
pub(crate) fn length(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite() && *v > 0.0)
}

/// One reply line, its result skipped (to read the id and error of a
/// reply whose result is not the expected type).
#[derive(Debug, Deserialize)]
pub(crate) struct Reply {
    #[serde(default)]
    pub id: Value,
    #[serde(default)]
    pub error: Option<WireError>,
    #[serde(default)]
    pub timing: Option<Timing>,
}

/// One reply line with its result parsed straight into `T` (no
/// intermediate JSON tree for the megabytes of base64 an observation
/// carries).
#[derive(Debug, Deserialize)]
pub(crate) struct TypedReply<T> {
    #[serde(default)]
    pub id: Value,
    #[serde(default = "Option::default")]
    pub result: Option<T>,
    #[serde(default)]
    pub error: Option<WireError>,
    #[serde(default)]
    pub timing: Option<Timing>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireError {
    pub kind: String,
    pub message: String,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Timing {
    #[serde(default)]
    pub backend_ms: f64,
    #[serde(default)]
    pub encode_ms: f64,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ResetReply {
    pub episode: EpisodeInfo,
    pub observation: WireObservation,
}

#[derive(Debug, Deserialize)]
pub(crate) struct StepReply {
    pub observation: WireObservation,
    pub info: StepInfo,
    pub done: bool,
    #[serde(default)]
    pub metrics: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct StepInfo {
    pub collided: bool,
    pub moved_m: f64,
    #[serde(default)]
    pub steps: u32,
}

#[derive(Debug, Deserialize)]
pub(crate) struct PanoramaReply {
    pub views: Vec<WireView>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireView {
    pub heading_deg: f64,
    #[serde(flatten)]
    pub observation: WireObservation,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireObservation {
    pub hfov_deg: f64,
    #[serde(default)]
    pub rgb: Option<WireImage>,
    #[serde(default)]
    pub depth: Option<WireDepth>,
    #[serde(default)]
    pub detections: Option<Vec<WireDetection>>,
    #[serde(default)]
    pub pose: Option<WirePose>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "encoding", rename_all = "snake_case")]
pub(crate) enum WireImage {
    Png { width: usize, height: usize, data: String },
    Raw { shape: [usize; 3], data: String },
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct WireDepth {
    pub encoding: String,
    pub shape: [usize; 2],
    pub data: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireDetection {
    pub label: String,
    pub bearing_rad: Option<f64>,
    pub distance_m: Option<f64>,
    #[serde(default)]
    pub bbox: Option<[u32; 4]>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WirePose {
    pub x: Option<f64>,
    pub y: Option<f64>,
    pub yaw: Option<f64>,
}

impl WirePose {
    pub fn pose(&self) -> Result<Pose2, HalError> {
        match (self.x, self.y, self.yaw) {
            (Some(x), Some(y), Some(yaw)) => Ok(Pose2::new(x, y, yaw)),
            _ => Err(protocol("pose has a non-finite field")),
        }
    }
}

/// The most detections one view (or observation) may carry: a detector
/// reports tens; thousands would only slow every step that draws or reads
/// them.
pub const MAX_DETECTIONS: usize = 256;

/// The longest detection label, in characters.
pub const MAX_LABEL_CHARS: usize = 128;

/// A view's detections, checked: more than [`MAX_DETECTIONS`] or a label
/// over [`MAX_LABEL_CHARS`] characters is a protocol error naming the
/// count; detections without a bearing or distance are dropped.
pub(crate) fn detections_of(list: Option<Vec<WireDetection>>) -> Result<Vec<Detection>, HalError> {
    let list = list.unwrap_or_default();
    if list.len() > MAX_DETECTIONS {
        return Err(protocol(format!("{} detections in one view, over the limit of {MAX_DETECTIONS}", list.len())));
    }
    if let Some(d) = list.iter().find(|d| d.label.chars().count() > MAX_LABEL_CHARS) {
        return Err(protocol(format!(
            "a detection label of {} characters, over the limit of {MAX_LABEL_CHARS}",
            d.label.chars().count()
        )));
    }
    Ok(list.into_iter().filter_map(WireDetection::into_detection).collect())
}

impl WireDetection {
    /// Detections with a non-finite bearing or distance are dropped.
    pub fn into_detection(self) -> Option<Detection> {
        Some(Detection {
            label: self.label,
            bearing_rad: self.bearing_rad?,
            distance_m: self.distance_m?,
            bbox: self.bbox,
            ground_truth: true,
        })
    }
}

/// The id of a connection's first request (ids count up from it).
pub(crate) const FIRST_REQUEST_ID: u64 = 1;

/// True for the late reply to an earlier request of this connection (one
/// that timed out): an id below `current` that was sent. An id below the
/// first one was never sent: it does not match, and is a protocol error.
pub(crate) fn is_stale_id(reply_id: u64, current: u64) -> bool {
    (FIRST_REQUEST_ID..current).contains(&reply_id)
}

/// Builds a request line: `{"id": id, "op": op, ...fields}` plus newline.
pub(crate) fn request_line(id: u64, op: &str, fields: Map<String, Value>) -> Vec<u8> {
    let mut msg = Map::new();
    msg.insert("id".into(), Value::from(id));
    msg.insert("op".into(), Value::from(op));
    msg.extend(fields);
    let mut line = Value::Object(msg).to_string().into_bytes();
    line.push(b'\n');
    line
}

fn b64(data: &str, what: &str) -> Result<Vec<u8>, HalError> {
    base64::engine::general_purpose::STANDARD.decode(data).map_err(|e| protocol(format!("{what}: bad base64: {e}")))
}

/// Most pixels of all the images of one reply together (a panorama's
/// views), debited view by view before each is decoded.
pub const MAX_REPLY_PIXELS: u64 = 1 << 27;

/// What is left of one reply's pixel budget ([`MAX_REPLY_PIXELS`]); each
/// image is also held to [`MAX_FRAME_PIXELS`](crate::picture::MAX_FRAME_PIXELS).
#[derive(Debug)]
pub(crate) struct PixelBudget {
    left: u64,
}

impl PixelBudget {
    /// The budget of one reply.
    pub fn reply() -> Self {
        Self { left: MAX_REPLY_PIXELS }
    }

    /// Debits a `width` × `height` image, or says which limit it passes.
    fn take(&mut self, width: usize, height: usize) -> Result<(), HalError> {
        let px = crate::picture::check_pixels(width as u64, height as u64, crate::picture::MAX_FRAME_PIXELS)
            .map_err(|e| protocol(format!("rgb: {e}")))?;
        if px > self.left {
            return Err(protocol(format!("rgb: the reply's images are over the limit of {MAX_REPLY_PIXELS} pixels")));
        }
        self.left -= px;
        Ok(())
    }
}

/// Decodes an RGB image, its size checked against `budget` (from its
/// shape, or the PNG's stated and header size) before it is decoded.
pub(crate) fn decode_rgb(
    image: &WireImage,
    hfov_deg: f64,
    stamp_s: f64,
    budget: &mut PixelBudget,
) -> Result<CameraFrame, HalError> {
    let frame = match image {
        WireImage::Png { width, height, data } => {
            budget.take(*width, *height)?;
            let bytes = b64(data, "rgb")?;
            let (hw, hh) = image::ImageReader::with_format(std::io::Cursor::new(&bytes), image::ImageFormat::Png)
                .into_dimensions()
                .map_err(|e| protocol(format!("rgb: bad PNG: {e}")))?;
            if (hw as usize, hh as usize) != (*width, *height) {
                return Err(protocol(format!("rgb: PNG is {hw}x{hh} but the message says {width}x{height}")));
            }
            crate::picture::decode_image_bounded(
                &bytes,
                Some(image::ImageFormat::Png),
                crate::picture::MAX_FRAME_PIXELS,
            )
            .map_err(|e| protocol(format!("rgb: bad PNG: {e}")))?
        }
        WireImage::Raw { shape, data } => {
            let [h, w, c] = *shape;
            if c != 3 {
                return Err(protocol(format!("rgb: raw images must have 3 channels, got {c}")));
            }
            budget.take(w, h)?;
            RgbFrame::from_raw(w, h, b64(data, "rgb")?).map_err(|e| protocol(format!("rgb: {e}")))?
        }
    };
    if !(hfov_deg.is_finite() && hfov_deg > 0.0 && hfov_deg < 180.0) {
        return Err(protocol(format!("hfov_deg must be within (0, 180), got {hfov_deg}")));
    }
    Ok(CameraFrame { frame, hfov_rad: hfov_deg.to_radians(), stamp_s })
}

/// Decodes a depth image (float32 little-endian metres).
pub(crate) fn decode_depth(depth: &WireDepth, stamp_s: f64) -> Result<DepthFrame, HalError> {
    if depth.encoding != "f32le" {
        return Err(protocol(format!("depth: unknown encoding {:?} (expected f32le)", depth.encoding)));
    }
    let [h, w] = depth.shape;
    let bytes = b64(&depth.data, "depth")?;
    if Some(bytes.len()) != w.checked_mul(h).and_then(|n| n.checked_mul(4)) {
        return Err(protocol(format!("depth: {} bytes do not hold {w}x{h} float32 values", bytes.len())));
    }
    let depth_m = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    Ok(DepthFrame { width: w, height: h, depth_m, stamp_s })
}

/// Longest protocol error message, characters: a parser's error quotes a
/// whole string value of the reply (a bridge's 20 MB string went into the
/// message, the report and every step's fallback reason); longer messages
/// keep their start and end.
pub const MAX_PROTOCOL_MESSAGE_CHARS: usize = 2000;

pub(crate) fn protocol(message: impl Into<String>) -> HalError {
    let message = message.into();
    let message = match nav_core::bounded::cut_middle(&message, MAX_PROTOCOL_MESSAGE_CHARS) {
        std::borrow::Cow::Borrowed(_) => message,
        std::borrow::Cow::Owned(cut) => cut,
    };
    HalError::Protocol { message }
}

/// Turns the round-trip time and the server's timing into a report.
pub(crate) fn timing(round_trip: Duration, t: Option<&Timing>) -> super::StepTiming {
    let ms = |v: f64| Duration::from_secs_f64((v.max(0.0) / 1e3).min(1e6));
    let (backend, encode) = t.map_or((Duration::ZERO, Duration::ZERO), |t| (ms(t.backend_ms), ms(t.encode_ms)));
    super::StepTiming { round_trip, backend, encode }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn only_ids_this_connection_sent_are_stale() {
        assert!(is_stale_id(1, 3) && is_stale_id(2, 3));
        assert!(!is_stale_id(0, 3), "id 0 was never sent");
        assert!(!is_stale_id(3, 3) && !is_stale_id(4, 3));
    }

    #[test]
    fn request_lines_are_one_json_object() {
        let mut f = Map::new();
        f.insert("action".into(), json!("forward"));
        let line = request_line(7, "step", f);
        assert_eq!(line.last(), Some(&b'\n'));
        let v: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v, json!({"id": 7, "op": "step", "action": "forward"}));
        let spec = serde_json::to_value(EpisodeSpec::index(3)).unwrap();
        assert_eq!(spec, json!({"index": 3}));
    }

    #[test]
    fn metrics_keep_extras_and_reject_nonsense() {
        let m = SimMetrics::from_wire(json!({"success": true, "spl": 0.5, "distance_to_goal": 0.2, "soft_spl": 0.7}))
            .unwrap();
        assert!(m.success && m.spl == 0.5 && m.distance_to_goal == Some(0.2));
        assert_eq!(m.extra["soft_spl"], json!(0.7));
        let m = SimMetrics::from_wire(json!({"success": 1.0, "spl": null, "distance_to_goal": null})).unwrap();
        assert!(m.success && m.spl == 0.0 && m.distance_to_goal.is_none());
        assert!(SimMetrics::from_wire(json!({"spl": 1})).is_err());
        assert!(SimMetrics::from_wire(json!([1])).is_err());
        // out of range: an SPL of 55 or -1, a negative distance
        for bad in [json!({"success": true, "spl": 55.0}), json!({"success": true, "spl": -1})] {
            assert!(SimMetrics::from_wire(bad).unwrap_err().to_string().contains("metrics.spl"));
        }
        let e = SimMetrics::from_wire(json!({"success": true, "spl": 0.5, "distance_to_goal": -3})).unwrap_err();
        assert!(e.to_string().contains("metrics.distance_to_goal"), "{e}");
        // a rounding hair over 1 is 1
        assert_eq!(SimMetrics::from_wire(json!({"success": true, "spl": 1.0000000001})).unwrap().spl, 1.0);
    }

    #[test]
    fn raw_and_png_images_decode_to_the_same_pixels() {
        let (w, h) = (3usize, 2usize);
        let px: Vec<u8> = (0..(w * h * 3) as u8).collect();
        let raw = WireImage::Raw { shape: [h, w, 3], data: base64::engine::general_purpose::STANDARD.encode(&px) };
        let a = decode_rgb(&raw, 90.0, 0.0, &mut PixelBudget::reply()).unwrap();
        let mut png = Vec::new();
        image::RgbImage::from_raw(w as u32, h as u32, px.clone())
            .unwrap()
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
        let png = WireImage::Png { width: w, height: h, data: base64::engine::general_purpose::STANDARD.encode(&png) };
        let b = decode_rgb(&png, 90.0, 0.0, &mut PixelBudget::reply()).unwrap();
        assert_eq!(a.frame, b.frame);
        assert_eq!(a.frame.as_bytes(), &px[..]);
        assert!((a.hfov_rad - std::f64::consts::FRAC_PI_2).abs() < 1e-12);
        let wrong = WireImage::Raw { shape: [h, w, 3], data: "AAAA".into() };
        assert!(decode_rgb(&wrong, 90.0, 0.0, &mut PixelBudget::reply()).is_err());
        assert!(decode_rgb(&raw, f64::NAN, 0.0, &mut PixelBudget::reply()).is_err());
    }

    #[test]
    fn detections_are_capped_in_count_and_label_length() {
        let det = |label: &str| WireDetection {
            label: label.into(),
            bearing_rad: Some(0.1),
            distance_m: Some(2.0),
            bbox: None,
        };
        let ok: Vec<WireDetection> = (0..MAX_DETECTIONS).map(|_| det("chair")).collect();
        assert_eq!(detections_of(Some(ok)).unwrap().len(), MAX_DETECTIONS);
        let many: Vec<WireDetection> = (0..10_000).map(|_| det("chair")).collect();
        let e = detections_of(Some(many)).unwrap_err().to_string();
        assert!(e.contains("10000 detections") && e.contains("256"), "{e}");
        let long = "x".repeat(MAX_LABEL_CHARS + 1);
        let e = detections_of(Some(vec![det("sofa"), det(&long)])).unwrap_err().to_string();
        assert!(e.contains("129 characters") && e.len() < 200, "{e}");
        let partial = WireDetection { bearing_rad: None, ..det("lamp") };
        assert_eq!(detections_of(Some(vec![partial, det("bed")])).unwrap().len(), 1, "no bearing: dropped");
        assert!(detections_of(None).unwrap().is_empty());
    }

    #[test]
    fn depth_decodes_little_endian_floats() {
        let vals = [1.5f32, f32::INFINITY, f32::NAN, 0.25];
        let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let d = WireDepth {
            encoding: "f32le".into(),
            shape: [2, 2],
            data: base64::engine::general_purpose::STANDARD.encode(&bytes),
        };
        let f = decode_depth(&d, 1.0).unwrap();
        assert_eq!((f.width, f.height), (2, 2));
        assert_eq!(f.at(0, 0), Some(1.5));
        assert!(f.at(0, 1).unwrap().is_nan());
        assert!(decode_depth(&WireDepth { shape: [3, 2], ..d.clone() }, 0.0).is_err());
        assert!(decode_depth(&WireDepth { encoding: "u16".into(), ..d }, 0.0).is_err());
    }

    /// A real 2x2 PNG whose header claims `w` x `h` (its IHDR CRC fixed up).
    fn png_claiming(w: u32, h: u32) -> Vec<u8> {
        let mut png = Vec::new();
        image::RgbImage::new(2, 2).write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png).unwrap();
        png[16..20].copy_from_slice(&w.to_be_bytes());
        png[20..24].copy_from_slice(&h.to_be_bytes());
        let crc = crc32(&png[12..29]);
        png[29..33].copy_from_slice(&crc.to_be_bytes());
        png
    }

    fn crc32(bytes: &[u8]) -> u32 {
        let mut c = !0u32;
        for &b in bytes {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 == 1 { (c >> 1) ^ 0xEDB8_8320 } else { c >> 1 };
            }
        }
        !c
    }

    #[test]
    fn frames_over_the_pixel_budget_are_refused_before_decoding() {
        // 2^32 x 2^32 x 3 wraps to 0 bytes in unchecked arithmetic
        let raw = WireImage::Raw { shape: [1 << 32, 1 << 32, 3], data: String::new() };
        assert!(decode_rgb(&raw, 60.0, 0.0, &mut PixelBudget::reply()).unwrap_err().to_string().contains("limit"));
        // a 13,000 x 13,000 PNG (as its header says), stated truthfully
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        let png = WireImage::Png { width: 13_000, height: 13_000, data: b64(&png_claiming(13_000, 13_000)) };
        assert!(decode_rgb(&png, 60.0, 0.0, &mut PixelBudget::reply()).unwrap_err().to_string().contains("limit"));
        // ... or stated small: the header is read before decoding
        let png = WireImage::Png { width: 2, height: 2, data: b64(&png_claiming(13_000, 13_000)) };
        assert!(
            decode_rgb(&png, 60.0, 0.0, &mut PixelBudget::reply()).unwrap_err().to_string().contains("13000x13000")
        );
        let e =
            crate::picture::decode_image_bounded(&png_claiming(13_000, 13_000), None, crate::picture::MAX_FRAME_PIXELS);
        assert!(e.unwrap_err().to_string().contains("limit"));
        // a reply's frames share one budget
        let mut budget = PixelBudget::reply();
        let per = 4096;
        let fit = (MAX_REPLY_PIXELS / (per * per)) as usize;
        for _ in 0..fit {
            budget.take(per as usize, per as usize).unwrap();
        }
        assert!(budget.take(per as usize, per as usize).unwrap_err().to_string().contains("reply"));
    }

    proptest! {
        /// Any shape from outside: never a panic, and an image over the
        /// frame budget is refused.
        #[test]
        fn random_frame_shapes_are_checked(h in any::<usize>(), w in any::<usize>(), small in 0usize..64, data in "[A-Za-z0-9+/]{0,16}") {
            for (h, w) in [(h, w), (small, w), (h, small), (small, small)] {
                let r = decode_rgb(&WireImage::Raw { shape: [h, w, 3], data: data.clone() }, 60.0, 0.0, &mut PixelBudget::reply());
                let over = (h as u128) * (w as u128) > u128::from(crate::picture::MAX_FRAME_PIXELS);
                prop_assert!(!over || r.is_err());
                let _ = decode_rgb(&WireImage::Png { width: w, height: h, data: data.clone() }, 60.0, 0.0, &mut PixelBudget::reply());
            }
        }

        #[test]
        fn reply_parsing_never_panics(line in "\\PC{0,200}") {
            let _ = serde_json::from_str::<Reply>(&line);
            if let Ok(r) = serde_json::from_str::<TypedReply<Value>>(&line) {
                if let Some(v) = r.result {
                    let _ = serde_json::from_value::<StepReply>(v.clone());
                    let _ = serde_json::from_value::<HelloReply>(v.clone());
                    let _ = SimMetrics::from_wire(v);
                }
            }
        }

        #[test]
        fn bad_base64_is_an_error_not_a_panic(data in "\\PC{0,64}", w in 0usize..5, h in 0usize..5) {
            let _ = decode_rgb(&WireImage::Raw { shape: [h, w, 3], data: data.clone() }, 60.0, 0.0, &mut PixelBudget::reply());
            let _ = decode_rgb(&WireImage::Png { width: w, height: h, data: data.clone() }, 60.0, 0.0, &mut PixelBudget::reply());
            let _ = decode_depth(&WireDepth { encoding: "f32le".into(), shape: [h, w], data }, 0.0);
        }
    }
}
