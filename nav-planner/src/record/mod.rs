//! Recording a run (feature `record`): an MCAP file that Foxglove (and
//! other MCAP viewers) open without plugins, and that [`read`] reads back.
//! docs/RECORDING.md lists the channels.
//!
//! Three hooks feed one [`Recording`], none of which changes the run:
//! - the step log's tap ([`StepLog::with_tap`](crate::navigator::StepLog::with_tap),
//!   given [`Recording::step_tap`]) gives every step record — the clock
//!   (`t_s`, simulated time in the simulator), the pose estimate, ground
//!   truth on its own channel, anchors, candidates;
//! - a [`Tapped`](nav_hal::tap::Tapped) robot (given
//!   [`Recording::sensor_tap`]) gives the sensor readings the loop took
//!   (camera, panorama, LiDAR), kept until the step they belong to is
//!   logged and then written stamped with that step's time (every
//!   `every` steps);
//! - [`RecordingVlm`] ([`Recording::wrap_vlm`], or [`Recording::runner`]
//!   for a [`Runner`]'s models) wraps the model and writes each request
//!   and reply.
//!
//! The recorder keeps its own LiDAR map (nav-core's [`LocalMap`], from the
//! recorded scans at the logged pose estimates) for the `/map` grid and the
//! frontiers; it is output only and never reaches the loop.
//!
//! Recording an episode of the [`Runner`] on any robot:
//!
//! ```
//! use nav_hal::arena::Arena;
//! use nav_hal::sim::{SimConfig, SimHal, SimWorld};
//! use nav_hal::tap::Tapped;
//! use nav_planner::navigator::StepLog;
//! use nav_planner::navigator::runner::{Runner, SimJudge, Task};
//! use nav_planner::record::{Recording, read};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("run.mcap");
//! let recording = Recording::create(&path, 1)?;
//! let arena = Arena::builtin("house_a")?;
//! // the robot hands every reading the loop takes to the recording
//! let sim = SimHal::new(SimWorld::new(arena.clone(), SimConfig::default())?);
//! let mut robot = Tapped::new(sim, Some(recording.sensor_tap()));
//! // the runner's models (none here: the offline planner) are wrapped
//! let runner = recording.runner(Runner::new(Task::of_arena(&arena)).max_steps(20));
//! // the step log hands over every step record
//! let mut log = StepLog::null().with_tap(recording.step_tap());
//! let summary = runner.run(&mut robot, Some(&SimJudge), &mut log).await?;
//! drop(log);
//! let stats = recording.finish()?;
//! assert!(stats.messages["/camera/panorama"] > 0 && stats.messages["/scene"] > 0);
//! let steps = read::read_steps(&path)?;
//! assert_eq!(steps.len() as u64, stats.steps);
//! assert!(steps.len() >= summary.steps as usize);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod foxglove;
pub mod read;
mod vlm;

pub use error::RecordError;
pub use vlm::RecordingVlm;

use crate::navigator::StepRecord;
use crate::navigator::runner::Runner;
use crate::vlm::VisionLanguageModel;
use foxglove::{Entity, Kind};
use nav_core::geometry::{Point2, Pose2};
use nav_core::lidar::StampedScan;
use nav_core::local_map::{LocalMap, LocalMapConfig};
use nav_core::raster::RgbFrame;
use nav_hal::hal::{CameraFrame, DepthFrame, Panorama};
use nav_hal::tap::{SensorTap, SharedTap};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// The step log channel `nav replay` reads back.
pub const STEP_TOPIC: &str = "/navkit/step";
/// The step log channel's schema name.
pub const STEP_SCHEMA: &str = "navkit.StepRecord";
/// The model calls' channel ([`read::read_planner_calls`] reads it back).
pub const PLANNER_TOPIC: &str = "/navkit/planner";
/// The model calls' schema name.
pub const PLANNER_SCHEMA: &str = "navkit.PlannerCall";
/// Most points the `/scene` path keeps (thinned by half past it).
const MAX_PATH_POINTS: usize = 4096;

/// What the recording wrote, for the run report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordStats {
    /// The file.
    pub path: PathBuf,
    /// Messages per topic.
    pub messages: BTreeMap<String, u64>,
    /// Step records written.
    pub steps: u64,
    /// File size, bytes.
    pub bytes: u64,
}

impl RecordStats {
    /// One line for the report: file, messages, size and size per step.
    pub fn line(&self) -> String {
        let total: u64 = self.messages.values().sum();
        let per_step = if self.steps > 0 { self.bytes as f64 / self.steps as f64 / 1024.0 } else { 0.0 };
        format!(
            "{} ({} channels, {total} messages, {:.1} KiB, {per_step:.1} KiB/step)",
            self.path.display(),
            self.messages.len(),
            self.bytes as f64 / 1024.0
        )
    }
}

/// Sensor readings since the last step record.
#[derive(Default)]
struct Pending {
    scan: Option<StampedScan>,
    rgb: Option<CameraFrame>,
    depth: Option<DepthFrame>,
    panorama: Option<Panorama>,
}

/// The MCAP writer and what it remembers between steps.
struct Recorder {
    writer: Option<mcap::Writer<BufWriter<File>>>,
    path: PathBuf,
    every: u64,
    schemas: HashMap<&'static str, u16>,
    channels: HashMap<String, u16>,
    stats: RecordStats,
    /// Log time of the newest message, ns; messages never go back before it.
    now_ns: u64,
    /// Added to an episode's `t_s` (a later episode in the same file starts after the last).
    base_ns: u64,
    pending: Pending,
    map: Option<LocalMap>,
    /// The map took a scan since it was last written.
    map_dirty: bool,
    last_pose: Option<Pose2>,
    path_points: Vec<(f64, f64)>,
    anchors: BTreeMap<u64, (f64, f64)>,
    planner_calls: u64,
    error: Option<String>,
}

/// A recording shared by the step log tap, the robot tap and the model
/// wrapper. Cloning shares the file.
#[derive(Clone)]
pub struct Recording {
    inner: Arc<Mutex<Recorder>>,
}

impl Recording {
    /// Creates `path` (a `.mcap` file; its folder is made when missing).
    /// Sensor frames, maps and scenes go out every `every` steps (≥ 1);
    /// step records, poses and planner calls always.
    pub fn create(path: &Path, every: u32) -> Result<Self, RecordError> {
        if path.extension().and_then(|e| e.to_str()) != Some("mcap") {
            return Err(RecordError::NotMcap { path: path.to_path_buf() });
        }
        if every == 0 {
            return Err(RecordError::Every);
        }
        let io = |source| RecordError::Create { path: path.to_path_buf(), source };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let file = File::create(path).map_err(io)?;
        let writer = mcap::WriteOptions::new()
            .compression(Some(mcap::Compression::Zstd))
            .profile("")
            .library(concat!("navkit ", env!("CARGO_PKG_VERSION")))
            .create(BufWriter::new(file))
            .map_err(|e| RecordError::Create { path: path.to_path_buf(), source: std::io::Error::other(e) })?;
        let rec = Recorder {
            writer: Some(writer),
            path: path.to_path_buf(),
            every: u64::from(every),
            schemas: HashMap::new(),
            channels: HashMap::new(),
            stats: RecordStats { path: path.to_path_buf(), ..RecordStats::default() },
            now_ns: 0,
            base_ns: 0,
            pending: Pending::default(),
            map: None,
            map_dirty: false,
            last_pose: None,
            path_points: Vec::new(),
            anchors: BTreeMap::new(),
            planner_calls: 0,
            error: None,
        };
        Ok(Self { inner: Arc::new(Mutex::new(rec)) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recorder> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The robot-side hook: give it to [`Tapped`](nav_hal::tap::Tapped).
    pub fn sensor_tap(&self) -> SharedTap {
        Arc::new(Mutex::new(RobotTap(self.clone())))
    }

    /// `model` wrapped so that its calls are recorded.
    pub fn wrap_vlm(&self, model: Arc<dyn VisionLanguageModel>) -> Arc<dyn VisionLanguageModel> {
        Arc::new(RecordingVlm::new(model, self.clone()))
    }

    /// `runner` with its models (planner and scene analyzer) wrapped so
    /// that their calls are recorded. The robot's readings and the step
    /// records come through [`Recording::sensor_tap`] and
    /// [`Recording::step_tap`] (see the module example).
    pub fn runner(&self, mut runner: Runner) -> Runner {
        let spec = runner.spec_mut();
        spec.vlm = spec.vlm.take().map(|v| self.wrap_vlm(v));
        spec.scene_vlm = spec.scene_vlm.take().map(|v| self.wrap_vlm(v));
        runner
    }

    /// Routes a simulator episode's sensor readings and model calls into
    /// this recording.
    pub fn attach(&self, spec: &mut crate::navigator::episode::EpisodeSpec) {
        spec.sensor_tap = Some(self.sensor_tap());
        spec.vlm = spec.vlm.take().map(|v| self.wrap_vlm(v));
        spec.scene_vlm = spec.scene_vlm.take().map(|v| self.wrap_vlm(v));
    }

    /// The step-log-side hook: give it to `StepLog::with_tap`.
    pub fn step_tap(&self) -> impl FnMut(&StepRecord) + Send + 'static {
        let me = self.clone();
        move |r: &StepRecord| me.lock().step(r)
    }

    /// Writes one planner call (used by [`RecordingVlm`]).
    fn planner_call(&self, call: PlannerCall<'_>) {
        self.lock().planner_call(call);
    }

    /// Writes what is still pending, closes the file and returns what it
    /// holds; an error names the file and what failed (a full disk).
    pub fn finish(&self) -> Result<RecordStats, RecordError> {
        let mut rec = self.lock();
        let now = rec.now_ns;
        rec.emit_pending(now);
        if let Some(mut w) = rec.writer.take() {
            if let Err(e) = w.finish() {
                rec.fail(&nav_core::error::error_chain(&e));
            }
        }
        if let Some(e) = &rec.error {
            return Err(RecordError::Write { path: rec.path.clone(), message: e.clone() });
        }
        rec.stats.bytes = std::fs::metadata(&rec.path).map(|m| m.len()).unwrap_or(0);
        Ok(rec.stats.clone())
    }
}

/// The sensor tap's side of a [`Recording`].
struct RobotTap(Recording);

impl SensorTap for RobotTap {
    fn scan(&mut self, scan: &StampedScan) {
        self.0.lock().pending.scan = Some(scan.clone());
    }
    fn rgb(&mut self, frame: &CameraFrame) {
        self.0.lock().pending.rgb = Some(frame.clone());
    }
    fn depth(&mut self, frame: &DepthFrame) {
        self.0.lock().pending.depth = Some(frame.clone());
    }
    fn panorama(&mut self, panorama: &Panorama) {
        self.0.lock().pending.panorama = Some(panorama.clone());
    }
}

/// One model call as recorded.
struct PlannerCall<'a> {
    request: &'a crate::vlm::VlmRequest,
    reply: Result<&'a crate::vlm::VlmResponse, &'a crate::vlm::VlmError>,
    backend: crate::vlm::BackendInfo,
}

impl Recorder {
    fn fail(&mut self, e: &str) {
        if self.error.is_none() {
            self.error = Some(e.to_string());
        }
        // dropping the writer finishes what it can
        self.writer = None;
    }

    /// The channel of `topic`, declared (with its schema) on first use.
    fn channel(&mut self, topic: &str, schema: &'static str, schema_json: impl FnOnce() -> Value) -> Option<u16> {
        if let Some(&id) = self.channels.get(topic) {
            return Some(id);
        }
        let w = self.writer.as_mut()?;
        let sid = match self.schemas.get(schema) {
            Some(&s) => s,
            None => match w.add_schema(schema, "jsonschema", schema_json().to_string().as_bytes()) {
                Ok(s) => {
                    self.schemas.insert(schema, s);
                    s
                }
                Err(e) => {
                    self.fail(&nav_core::error::error_chain(&e));
                    return None;
                }
            },
        };
        match w.add_channel(sid, topic, "json", &BTreeMap::new()) {
            Ok(id) => {
                self.channels.insert(topic.to_string(), id);
                Some(id)
            }
            Err(e) => {
                self.fail(&nav_core::error::error_chain(&e));
                None
            }
        }
    }

    /// Writes `msg` on `topic` at `ns` (raised to the newest time written,
    /// so log times never decrease).
    fn write(&mut self, topic: &str, schema: &'static str, schema_json: impl FnOnce() -> Value, ns: u64, msg: &Value) {
        let Some(id) = self.channel(topic, schema, schema_json) else { return };
        let ns = ns.max(self.now_ns);
        self.now_ns = ns;
        let count = self.stats.messages.entry(topic.to_string()).or_default();
        *count += 1;
        let header =
            mcap::records::MessageHeader { channel_id: id, sequence: *count as u32, log_time: ns, publish_time: ns };
        let data = msg.to_string();
        let written = match self.writer.as_mut() {
            Some(w) => w.write_to_known_channel(&header, data.as_bytes()),
            None => Ok(()),
        };
        if let Err(e) = written {
            self.fail(&nav_core::error::error_chain(&e));
        }
    }

    fn foxglove(&mut self, topic: &str, kind: Kind, ns: u64, msg: &Value) {
        self.write(topic, kind.name(), || kind.schema(), ns, msg);
    }

    /// One step record: the record itself, the poses, then (every
    /// `every` steps) the sensor frames, map and scene since the last one.
    fn step(&mut self, r: &StepRecord) {
        if r.step == 0 && self.stats.steps > 0 {
            // the next episode in the same file starts one second after the last message
            self.base_ns = self.now_ns.saturating_add(1_000_000_000);
            self.reset_episode();
        }
        self.stats.steps += 1;
        let ns = self.base_ns.saturating_add(seconds_to_ns(r.t_s));
        let record = serde_json::to_value(r).unwrap_or_default();
        self.write(STEP_TOPIC, STEP_SCHEMA, step_schema, ns, &record);
        let pose = r.pose.pose();
        self.foxglove("/pose", Kind::PoseInFrame, ns, &foxglove::pose_in_frame(ns, "odom", pose));
        self.foxglove("/tf", Kind::FrameTransform, ns, &foxglove::frame_transform(ns, "odom", "base_link", pose));
        if let Some(gt) = r.gt_pose {
            let msg = foxglove::pose_in_frame(ns, "world", gt.pose());
            self.foxglove("/ground_truth/pose", Kind::PoseInFrame, ns, &msg);
            if self.last_pose.is_none() {
                // where the estimate's frame sits in the simulator's, from the first true pose
                let odom = odom_in_world(gt.pose(), pose);
                let msg = foxglove::frame_transform(ns, "world", "odom", odom);
                self.foxglove("/ground_truth/tf", Kind::FrameTransform, ns, &msg);
            }
        }
        self.remember(r, pose);
        if r.step % self.every == 0 {
            self.emit_pending(ns);
            self.emit_scene(ns, r);
        }
        self.last_pose = Some(pose);
    }

    fn reset_episode(&mut self) {
        self.pending = Pending::default();
        self.map = None;
        self.map_dirty = false;
        self.last_pose = None;
        self.path_points.clear();
        self.anchors.clear();
    }

    /// Path, anchors and the LiDAR map from this step.
    fn remember(&mut self, r: &StepRecord, pose: Pose2) {
        if self.path_points.last().is_none_or(|&(x, y)| (x - pose.x).hypot(y - pose.y) > 0.02) {
            self.path_points.push((pose.x, pose.y));
            if self.path_points.len() > MAX_PATH_POINTS {
                let thinned = self.path_points.iter().step_by(2).copied().collect();
                self.path_points = thinned;
            }
        }
        for e in &r.events {
            match e["anchor"].as_u64() {
                Some(id) if e["event"] == "anchor_created" => _ = self.anchors.insert(id, (pose.x, pose.y)),
                _ => {}
            }
        }
        // the scan was read before this step's motion: at the last pose; a
        // robot without LiDAR maps from its depth camera (the camera's field of view)
        let depth_scan = match (&self.pending.scan, &self.pending.depth, &self.pending.rgb) {
            (None, Some(d), Some(rgb)) => {
                nav_hal::depth_scan::depth_to_scan(d, rgb.hfov_rad, 0.0, &Default::default()).ok()
            }
            _ => None,
        };
        let scan = self.pending.scan.as_ref().map(|s| &s.scan).or(depth_scan.as_ref());
        if let (Some(scan), Some(at)) = (scan, self.last_pose.or(Some(pose))) {
            let map = match &mut self.map {
                Some(m) => m,
                None => match LocalMap::new(LocalMapConfig::default(), Point2::new(at.x, at.y)) {
                    Ok(m) => self.map.insert(m),
                    Err(_) => return,
                },
            };
            map.integrate(at, scan);
            self.map_dirty = true;
        }
    }

    /// The sensor frames since the last step, stamped `ns`.
    fn emit_pending(&mut self, ns: u64) {
        let pending = std::mem::take(&mut self.pending);
        if let Some(png) = pending.rgb.and_then(|f| nav_hal::picture::encode_png(&f.frame).ok()) {
            let msg = foxglove::compressed_image(ns, "camera", "png", &png);
            self.foxglove("/camera/image", Kind::CompressedImage, ns, &msg);
        }
        if let Some(png) =
            pending.panorama.as_ref().and_then(stitch).and_then(|s| nav_hal::picture::encode_png(&s).ok())
        {
            let msg = foxglove::compressed_image(ns, "camera", "png", &png);
            self.foxglove("/camera/panorama", Kind::CompressedImage, ns, &msg);
        }
        if let Some(s) = pending.scan {
            self.foxglove("/scan", Kind::LaserScan, ns, &foxglove::laser_scan(ns, "base_link", &s.scan));
        }
        let map = self.map.as_ref().filter(|_| std::mem::take(&mut self.map_dirty));
        if let Some(grid) = map.and_then(|m| foxglove::grid(ns, "odom", m.grid())) {
            self.foxglove("/map", Kind::Grid, ns, &grid);
        }
    }

    /// Path, anchors, frontiers and candidates as one scene update.
    fn emit_scene(&mut self, ns: u64, r: &StepRecord) {
        let mut entities = vec![Entity::new(ns, "odom", "path").line_strip(&self.path_points, 0.04, BLUE)];
        let mut anchors = Entity::new(ns, "odom", "anchors");
        for (id, &(x, y)) in &self.anchors {
            anchors = anchors.sphere(x, y, 0.2, ORANGE).text(x, y, &format!("a{id}"), ORANGE);
        }
        entities.push(anchors);
        if let Some(map) = &self.map {
            let mut fr = Entity::new(ns, "odom", "frontiers");
            for c in nav_core::frontier::find_frontiers(map.grid()).iter().filter(|c| c.size >= 3) {
                fr = fr.sphere(c.centroid.x, c.centroid.y, 0.15, GREEN);
            }
            entities.push(fr);
        }
        if let Some(list) = r.info.get("candidates").and_then(Value::as_array) {
            let mut cands = Entity::new(ns, "odom", "candidates");
            for (label, x, y) in list.iter().filter_map(|c| c.as_str()).filter_map(candidate_position) {
                cands = cands.sphere(x, y, 0.18, PURPLE).text(x, y, label, PURPLE);
            }
            entities.push(cands);
        }
        self.foxglove("/scene", Kind::SceneUpdate, ns, &foxglove::scene_update(entities));
    }

    /// A model call: request and reply as JSON on `/navkit/planner`, the
    /// request's images once each on `/navkit/planner/image`, referenced
    /// from the request by sequence number.
    fn planner_call(&mut self, call: PlannerCall<'_>) {
        use crate::vlm::Part;
        use crate::vlm::calls::{RecordedReply, canonical_request, hash_of};
        self.planner_calls += 1;
        let ns = self.now_ns;
        let req = call.request;
        // the canonical request (what replays match on), with where each image went
        let mut request = canonical_request(req);
        let kind = req.kind.as_str();
        let request_hash = hash_of(&call.backend.model, kind, &request);
        for (i, part) in req.user.iter().enumerate() {
            if let Part::Image { mime, data, .. } = part {
                let format = if mime.contains("png") { "png" } else { "jpeg" };
                let msg = foxglove::compressed_image(ns, "planner", format, data);
                self.foxglove("/navkit/planner/image", Kind::CompressedImage, ns, &msg);
                let seq = self.stats.messages.get("/navkit/planner/image").copied().unwrap_or(0);
                if let Some(p) = request.get_mut("user").and_then(|u| u.get_mut(i)).and_then(Value::as_object_mut) {
                    p.insert("topic".into(), json!("/navkit/planner/image"));
                    p.insert("sequence".into(), json!(seq));
                }
            }
        }
        let msg = json!({
            "call": self.planner_calls,
            "backend": {"provider": call.backend.provider, "model": call.backend.model},
            "kind": kind,
            "request_hash": request_hash,
            "request": request,
            "reply": RecordedReply::of(call.reply),
        });
        self.write(PLANNER_TOPIC, PLANNER_SCHEMA, planner_schema, ns, &msg);
    }
}

const BLUE: foxglove::Color = [0.1, 0.4, 0.9, 1.0];
const ORANGE: foxglove::Color = [1.0, 0.55, 0.0, 1.0];
const GREEN: foxglove::Color = [0.1, 0.75, 0.2, 0.9];
const PURPLE: foxglove::Color = [0.6, 0.2, 0.8, 1.0];

/// Seconds to nanoseconds; negative or non-finite times are 0.
fn seconds_to_ns(t: f64) -> u64 {
    if t.is_finite() && t > 0.0 { (t * 1e9).min(u64::MAX as f64) as u64 } else { 0 }
}

/// The `odom` frame placed in `world` so that the estimate `est` lands on
/// the true pose `gt`.
fn odom_in_world(gt: Pose2, est: Pose2) -> Pose2 {
    let yaw = gt.yaw - est.yaw;
    let (s, c) = yaw.sin_cos();
    Pose2::new(gt.x - (c * est.x - s * est.y), gt.y - (s * est.x + c * est.y), yaw)
}

/// The label and position of a candidates-loop line `c1 [subgoal] (1.50, 1.50) score=…`.
fn candidate_position(line: &str) -> Option<(&str, f64, f64)> {
    let label = line.split_whitespace().next()?;
    let inner = line.split_once('(')?.1.split_once(')')?.0;
    let (x, y) = inner.split_once(',')?;
    Some((label, x.trim().parse().ok()?, y.trim().parse().ok()?))
}

/// A panorama's views side by side, left to right in order of heading.
fn stitch(p: &Panorama) -> Option<RgbFrame> {
    let h = p.views.iter().map(|v| v.frame.frame.height()).max()?;
    let w: usize = p.views.iter().map(|v| v.frame.frame.width()).sum();
    let mut out = RgbFrame::new(w, h, nav_core::raster::Rgb([0, 0, 0]));
    let mut x0 = 0;
    for v in &p.views {
        let f = &v.frame.frame;
        for y in 0..f.height() {
            for x in 0..f.width() {
                if let Some(c) = f.get(x as i64, y as i64) {
                    out.put((x0 + x) as i64, y as i64, c);
                }
            }
        }
        x0 += f.width();
    }
    Some(out)
}

fn step_schema() -> Value {
    json!({"title": STEP_SCHEMA, "type": "object",
           "description": "One line of navkit's step log (docs/RECORDING.md)",
           "properties": {"step": {"type": "integer"}, "t_s": {"type": "number"}, "action": {"type": "string"},
                          "pose": {"type": "object"}, "planner_called": {"type": "boolean"}}})
}

fn planner_schema() -> Value {
    json!({"title": PLANNER_SCHEMA, "type": "object",
           "description": "One model call: the request the model got and its reply",
           "properties": {"call": {"type": "integer"}, "backend": {"type": "object"},
                          "request": {"type": "object"}, "reply": {"type": "object"}}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_lines_give_label_and_position() {
        let line = "c1 [subgoal] (1.50, -0.25) score=0.98 -- the goal";
        assert_eq!(candidate_position(line), Some(("c1", 1.5, -0.25)));
        assert_eq!(candidate_position("f4 [frontier] no position"), None);
        assert_eq!(candidate_position(""), None);
    }

    #[test]
    fn the_odom_frame_puts_the_first_estimate_on_the_first_true_pose() {
        let gt = Pose2::new(1.0, 4.25, 0.5);
        for est in [Pose2::new(0.0, 0.0, 0.0), Pose2::new(0.3, -0.2, -1.0)] {
            let odom = odom_in_world(gt, est);
            let p = odom.transform_point(est.position());
            assert!((p.x - gt.x).abs() < 1e-12 && (p.y - gt.y).abs() < 1e-12, "{p:?}");
            assert!((odom.yaw + est.yaw - gt.yaw).abs() < 1e-12);
        }
    }

    #[test]
    fn times_are_never_negative() {
        assert_eq!(seconds_to_ns(1.5), 1_500_000_000);
        assert_eq!(seconds_to_ns(-1.0), 0);
        assert_eq!(seconds_to_ns(f64::NAN), 0);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        /// Whatever times, poses, events and candidate texts the steps carry
        /// (NaN, negative, going back, a new episode), the file reads back
        /// with every step, in order, and log times that never decrease.
        #[test]
        fn any_steps_give_a_readable_file_with_ordered_times(
            steps in proptest::collection::vec(
                (proptest::prelude::any::<f64>(), -50.0f64..50.0, -50.0f64..50.0, 0u64..4, ".{0,30}"),
                1..40,
            ),
            every in 1u32..4,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("p.mcap");
            let rec = Recording::create(&path, every).unwrap();
            let mut tap = rec.step_tap();
            let mut written = Vec::new();
            for (i, (t, x, y, restart, text)) in steps.iter().enumerate() {
                let step = if *restart == 0 { 0 } else { i as u64 };
                let mut r = StepRecord { step, t_s: *t, action: "forward".into(), ..StepRecord::default() };
                r.pose = Pose2::new(*x, *y, 0.3).into();
                r.events.push(json!({"event": "anchor_created", "anchor": i}));
                r.info.insert("candidates".into(), json!([text, format!("c1 ({x}, {y}) {text}")]));
                tap(&r);
                written.push(serde_json::from_value::<StepRecord>(serde_json::to_value(&r).unwrap()).unwrap());
            }
            let stats = rec.finish().unwrap();
            proptest::prop_assert_eq!(stats.steps, steps.len() as u64);
            let bytes = std::fs::read(&path).unwrap();
            let mut last = 0;
            for m in mcap::MessageStream::new(&bytes).unwrap() {
                let m = m.unwrap();
                proptest::prop_assert!(m.log_time >= last);
                last = m.log_time;
            }
            proptest::prop_assert_eq!(read::read_steps(&path).unwrap(), written);
        }
    }

    #[test]
    fn a_recording_must_end_in_mcap_and_record_every_step_or_more() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Recording::create(&dir.path().join("x.jsonl"), 1).is_err());
        assert!(Recording::create(&dir.path().join("x.mcap"), 0).is_err());
        let r = Recording::create(&dir.path().join("sub/x.mcap"), 1).unwrap();
        let stats = r.finish().unwrap();
        assert_eq!(stats.steps, 0);
        assert!(stats.bytes > 0);
    }
}
