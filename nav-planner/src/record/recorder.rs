//! The writer thread's side of a recording: the foxglove context with its
//! MCAP file and live server ([`Out`]), and what the recorder remembers
//! between steps ([`Recorder`]: the map, the path, the anchors).

use super::foxglove::{self as fx, Entity, Rgba};
use super::{
    Call, Event, PLANNER_SCHEMA, PLANNER_TOPIC, Readings, RecordError, RecordOptions, RecordStats, STEP_SCHEMA,
    STEP_TOPIC,
};
use crate::navigator::StepRecord;
use ::foxglove::{Context, Encode, McapCompression, McapWriteOptions, McapWriterHandle, PartialMetadata, RawChannel};
use nav_core::geometry::{Point2, Pose2};
use nav_core::local_map::{LocalMap, LocalMapConfig};
use nav_core::raster::RgbFrame;
use nav_hal::hal::Panorama;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Most points the `/scene` path keeps (thinned by half past it).
const MAX_PATH_POINTS: usize = 4096;

/// Where the messages go: one foxglove context of the recording's own
/// (so two recordings in one process never mix) with its sinks.
pub(super) struct Out {
    ctx: Arc<Context>,
    file: Option<(PathBuf, McapWriterHandle<BufWriter<Watched>>)>,
    /// The file's first write failure, when it had one.
    failed: Failure,
    #[cfg(feature = "live")]
    server: Option<(SocketAddr, ::foxglove::WebSocketServerHandle)>,
    channels: HashMap<String, Arc<RawChannel>>,
    messages: BTreeMap<String, u64>,
    buf: Vec<u8>,
    /// Log time of the newest message, ns; messages never go back before it.
    now_ns: u64,
    error: Option<String>,
}

impl Out {
    /// The context with the file and the live server `options` ask for.
    pub(super) fn open(options: &RecordOptions) -> Result<Self, RecordError> {
        let ctx = Context::new();
        let failed = Failure { path: options.file.clone().unwrap_or_default(), ..Failure::default() };
        let file = match &options.file {
            Some(path) => Some((path.clone(), create_file(&ctx, path, &failed)?)),
            None => None,
        };
        #[cfg(feature = "live")]
        let server = match &options.live {
            Some(live) => Some(super::live::serve(&ctx, live)?),
            None => None,
        };
        #[cfg(not(feature = "live"))]
        if let Some(live) = &options.live {
            return Err(RecordError::Live { addr: live.addr, message: "built without the `live` feature".into() });
        }
        Ok(Self {
            ctx,
            file,
            failed,
            #[cfg(feature = "live")]
            server,
            channels: HashMap::new(),
            messages: BTreeMap::new(),
            buf: Vec::new(),
            now_ns: 0,
            error: None,
        })
    }

    /// The live server's address.
    pub(super) fn live_addr(&self) -> Option<SocketAddr> {
        #[cfg(feature = "live")]
        return self.server.as_ref().map(|(a, _)| *a);
        #[cfg(not(feature = "live"))]
        None
    }

    /// The channel of `topic`, declared on first use.
    fn channel(
        &mut self,
        topic: &str,
        make: impl FnOnce(&Arc<Context>) -> Option<Arc<RawChannel>>,
    ) -> Option<Arc<RawChannel>> {
        if let Some(c) = self.channels.get(topic) {
            return Some(Arc::clone(c));
        }
        let c = make(&self.ctx)?;
        self.channels.insert(topic.to_string(), Arc::clone(&c));
        Some(c)
    }

    /// Sends the encoded `self.buf` on `channel` at `ns` (raised to the
    /// newest time written, so log times never decrease).
    fn send(&mut self, channel: &RawChannel, ns: u64) {
        let ns = ns.max(self.now_ns);
        self.now_ns = ns;
        *self.messages.entry(channel.topic().to_string()).or_default() += 1;
        channel.log_with_meta(&self.buf, PartialMetadata::with_log_time(ns));
        if self.file.is_some() && self.failed.flag.load(Ordering::Relaxed) {
            self.drop_file();
        }
    }

    /// After the file's first write failure (a full disk) the recording
    /// stops: the file is closed, so later messages go only to the live
    /// view (the MCAP writer would refuse each one with a warning), and the
    /// failure's cause is what [`Out::close`] reports.
    fn drop_file(&mut self) {
        if let Some((_, handle)) = self.file.take() {
            let _ = handle.close();
        }
        self.error.get_or_insert_with(|| self.failed.cause().unwrap_or_else(|| "a write failed".into()));
    }

    /// Writes the Foxglove message `msg` (Protobuf) on `topic` at `ns`.
    pub(super) fn log<T: Encode>(&mut self, topic: &str, ns: u64, msg: &T) {
        let make = |ctx: &Arc<Context>| {
            ctx.channel_builder(topic)
                .message_encoding(T::get_message_encoding())
                .schema(T::get_schema())
                .build_raw()
                .ok()
        };
        let Some(channel) = self.channel(topic, make) else { return };
        self.buf.clear();
        if msg.encode(&mut self.buf).is_err() {
            return;
        }
        self.send(&channel, ns);
    }

    /// Writes `msg` as JSON on `topic` (schema `schema`, a JSON Schema) at `ns`.
    pub(super) fn json(&mut self, topic: &str, schema: &'static str, schema_json: fn() -> Value, ns: u64, msg: &Value) {
        let make = |ctx: &Arc<Context>| {
            let data = schema_json().to_string().into_bytes();
            ctx.channel_builder(topic)
                .message_encoding("json")
                .schema(::foxglove::Schema::new(schema, "jsonschema", data))
                .build_raw()
                .ok()
        };
        let Some(channel) = self.channel(topic, make) else { return };
        self.buf.clear();
        if serde_json::to_writer(&mut self.buf, msg).is_err() {
            return;
        }
        self.send(&channel, ns);
    }

    /// Closes the file and stops the server.
    fn close(&mut self) -> Result<(Option<PathBuf>, u64), RecordError> {
        #[cfg(feature = "live")]
        if let Some((_, server)) = self.server.take() {
            // stops accepting and closes the viewers' connections, without waiting for them
            server.stop().detach_all();
        }
        let path = match (&self.file, &self.error) {
            (Some((path, _)), _) => path.clone(),
            (None, Some(_)) => self.failed.path.clone(),
            (None, None) => return Ok((None, 0)),
        };
        if let Some((_, handle)) = self.file.take() {
            if let Err(e) = handle.close() {
                // the first failure's cause, not the writer's "another write after a failure"
                let cause = self.failed.cause().unwrap_or_else(|| nav_core::error::error_chain(&e));
                self.error.get_or_insert(cause);
            }
        }
        if let Some(e) = &self.error {
            return Err(RecordError::Write { path, message: e.clone() });
        }
        let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        Ok((Some(path), bytes))
    }
}

/// The first write failure of a recording's file, shared by the file and
/// the recorder.
#[derive(Clone, Default)]
struct Failure {
    /// Set once `cause` holds a failure.
    flag: Arc<AtomicBool>,
    cause: Arc<Mutex<Option<String>>>,
    /// The file's path, for the report after the file is closed.
    path: PathBuf,
}

impl Failure {
    /// The first failure's cause.
    fn cause(&self) -> Option<String> {
        self.cause.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Keeps `r`'s error when it is the first.
    fn note<T>(&self, r: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(e) = &r {
            self.cause.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert_with(|| e.to_string());
            self.flag.store(true, Ordering::Relaxed);
        }
        r
    }
}

/// A recording's file, noting its first write failure: the MCAP writer
/// reports every write after a failure only as "attempted another write
/// after a write method failed", which hides a full disk.
struct Watched {
    file: File,
    failed: Failure,
}

impl Write for Watched {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let r = self.file.write(buf);
        self.failed.note(r)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let r = self.file.flush();
        self.failed.note(r)
    }
}

impl Seek for Watched {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        let r = self.file.seek(pos);
        self.failed.note(r)
    }
}

/// A new MCAP file at `path` (zstd chunks) receiving every channel of `ctx`;
/// its first write failure goes to `failed`.
fn create_file(
    ctx: &Arc<Context>,
    path: &std::path::Path,
    failed: &Failure,
) -> Result<McapWriterHandle<BufWriter<Watched>>, RecordError> {
    if path.extension().and_then(|e| e.to_str()) != Some("mcap") {
        return Err(RecordError::NotMcap { path: path.to_path_buf() });
    }
    let io = |source| RecordError::Create { path: path.to_path_buf(), source };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let file = nav_core::bounded::create_regular(path).map_err(io)?;
    let file = Watched { file, failed: failed.clone() };
    let options = McapWriteOptions::new()
        .compression(Some(McapCompression::Zstd))
        .profile("")
        .library(concat!("navkit ", env!("CARGO_PKG_VERSION")));
    ctx.mcap_writer_with_options(options)
        .create(BufWriter::new(file))
        .map_err(|e| RecordError::Create { path: path.to_path_buf(), source: std::io::Error::other(e) })
}

/// What the recorder remembers between steps.
pub(super) struct Recorder {
    out: Out,
    every: u64,
    steps: u64,
    /// Added to an episode's `t_s` (a later episode in the same file starts after the last).
    base_ns: u64,
    pending: Readings,
    map: Option<LocalMap>,
    /// The map took a scan since it was last written.
    map_dirty: bool,
    last_pose: Option<Pose2>,
    path_points: Vec<(f64, f64)>,
    anchors: BTreeMap<u64, (f64, f64)>,
    planner_calls: u64,
}

impl Recorder {
    pub(super) fn new(out: Out, every: u64) -> Self {
        Self {
            out,
            every,
            steps: 0,
            base_ns: 0,
            pending: Readings::default(),
            map: None,
            map_dirty: false,
            last_pose: None,
            path_points: Vec::new(),
            anchors: BTreeMap::new(),
            planner_calls: 0,
        }
    }

    pub(super) fn handle(&mut self, event: Event) {
        match event {
            Event::Step(r, readings) => self.step(&r, readings),
            Event::Call(c) => self.planner_call(*c),
        }
    }

    /// Writes what is still pending, closes the file and the server.
    pub(super) fn finish(mut self, dropped: u64) -> Result<RecordStats, RecordError> {
        let now = self.out.now_ns;
        self.emit_pending(now);
        let (path, bytes) = self.out.close()?;
        let live = self.out.live_addr();
        Ok(RecordStats {
            path,
            messages: std::mem::take(&mut self.out.messages),
            steps: self.steps,
            bytes,
            dropped,
            live,
            hook_ns: [0; 3],
        })
    }

    /// One step record: the record itself, the poses, then (every
    /// `every` steps) the sensor frames, map and scene since the last one.
    fn step(&mut self, r: &StepRecord, readings: Readings) {
        if r.step == 0 && self.steps > 0 {
            // the next episode in the same file starts one second after the last message
            self.base_ns = self.out.now_ns.saturating_add(1_000_000_000);
            self.reset_episode();
        }
        let Readings { scan, rgb, depth, panorama } = readings;
        self.pending.scan = scan.or(self.pending.scan.take());
        self.pending.rgb = rgb.or(self.pending.rgb.take());
        self.pending.depth = depth.or(self.pending.depth.take());
        self.pending.panorama = panorama.or(self.pending.panorama.take());
        self.steps += 1;
        let ns = self.base_ns.saturating_add(seconds_to_ns(r.t_s));
        let record = serde_json::to_value(r).unwrap_or_default();
        self.out.json(STEP_TOPIC, STEP_SCHEMA, step_schema, ns, &record);
        let pose = r.pose.pose();
        self.out.log("/pose", ns, &fx::pose_in_frame(ns, "odom", pose));
        self.out.log("/tf", ns, &fx::frame_transform(ns, "odom", "base_link", pose));
        if let Some(gt) = r.gt_pose {
            self.out.log("/ground_truth/pose", ns, &fx::pose_in_frame(ns, "world", gt.pose()));
            if self.last_pose.is_none() {
                // where the estimate's frame sits in the simulator's, from the first true pose
                let odom = odom_in_world(gt.pose(), pose);
                self.out.log("/ground_truth/tf", ns, &fx::frame_transform(ns, "world", "odom", odom));
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
        self.pending = Readings::default();
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
            self.out.log("/camera/image", ns, &fx::compressed_image(ns, "camera", "png", png));
        }
        if let Some(png) =
            pending.panorama.as_ref().and_then(stitch).and_then(|s| nav_hal::picture::encode_png(&s).ok())
        {
            self.out.log("/camera/panorama", ns, &fx::compressed_image(ns, "camera", "png", png));
        }
        if let Some(s) = pending.scan {
            self.out.log("/scan", ns, &fx::laser_scan(ns, "base_link", &s.scan));
            self.out.log("/scan/points", ns, &fx::scan_points(ns, "base_link", &s.scan));
        }
        let map = self.map.as_ref().filter(|_| std::mem::take(&mut self.map_dirty));
        if let Some(grid) = map.and_then(|m| fx::grid(ns, "odom", m.grid())) {
            self.out.log("/map", ns, &grid);
        }
    }

    /// Path, anchors, frontiers and candidates as one scene update, and the
    /// anchors, frontiers and candidates as coloured points
    /// (`/scene/points`, which Rerun draws too; the path is `/pose`'s).
    fn emit_scene(&mut self, ns: u64, r: &StepRecord) {
        let mut points: Vec<(f64, f64, f64, Rgba)> = Vec::new();
        let mut entities = vec![Entity::new(ns, "odom", "path").line_strip(&self.path_points, 0.04, BLUE)];
        let mut anchors = Entity::new(ns, "odom", "anchors");
        for (id, &(x, y)) in &self.anchors {
            anchors = anchors.sphere(x, y, 0.2, ORANGE).text(x, y, &format!("a{id}"), ORANGE);
            points.push((x, y, 0.1, ORANGE));
        }
        entities.push(anchors);
        if let Some(map) = &self.map {
            let mut fr = Entity::new(ns, "odom", "frontiers");
            for c in nav_core::frontier::find_frontiers(map.grid()).iter().filter(|c| c.size >= 3) {
                fr = fr.sphere(c.centroid.x, c.centroid.y, 0.15, GREEN);
                points.push((c.centroid.x, c.centroid.y, 0.1, GREEN));
            }
            entities.push(fr);
        }
        if let Some(list) = r.info.get("candidates").and_then(Value::as_array) {
            let mut cands = Entity::new(ns, "odom", "candidates");
            for (label, x, y) in list.iter().filter_map(|c| c.as_str()).filter_map(candidate_position) {
                cands = cands.sphere(x, y, 0.18, PURPLE).text(x, y, label, PURPLE);
                points.push((x, y, 0.1, PURPLE));
            }
            entities.push(cands);
        }
        self.out.log("/scene", ns, &fx::scene_update(entities));
        self.out.log("/scene/points", ns, &fx::colored_points(ns, "odom", &points));
    }

    /// A model call: its kind, the hash replays match on, the canonical
    /// request and the reply as JSON on `/navkit/planner`; the request's
    /// images once each on `/navkit/planner/image`, referenced from the
    /// request by sequence number.
    fn planner_call(&mut self, call: Call) {
        use crate::vlm::Part;
        use crate::vlm::calls::{canonical_request, hash_of};
        self.planner_calls += 1;
        let ns = self.out.now_ns;
        let req = &call.request;
        // the canonical request (what replays match on), with where each image went
        let mut request = canonical_request(req);
        let kind = req.kind.as_str();
        let request_hash = hash_of(&call.backend.model, kind, &request);
        for (i, part) in req.user.iter().enumerate() {
            if let Part::Image { mime, data, .. } = part {
                let format = if mime.contains("png") { "png" } else { "jpeg" };
                self.out.log("/navkit/planner/image", ns, &fx::compressed_image(ns, "planner", format, data.to_vec()));
                let seq = self.out.messages.get("/navkit/planner/image").copied().unwrap_or(0);
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
            "reply": call.reply,
        });
        self.out.json(PLANNER_TOPIC, PLANNER_SCHEMA, planner_schema, ns, &msg);
    }
}

const BLUE: Rgba = [0.1, 0.4, 0.9, 1.0];
const ORANGE: Rgba = [1.0, 0.55, 0.0, 1.0];
const GREEN: Rgba = [0.1, 0.75, 0.2, 0.9];
const PURPLE: Rgba = [0.6, 0.2, 0.8, 1.0];

/// Seconds to nanoseconds; negative or non-finite times are 0.
pub(super) fn seconds_to_ns(t: f64) -> u64 {
    if t.is_finite() && t > 0.0 { (t * 1e9).min(u64::MAX as f64) as u64 } else { 0 }
}

/// The `odom` frame placed in `world` so that the estimate `est` lands on
/// the true pose `gt`.
pub(super) fn odom_in_world(gt: Pose2, est: Pose2) -> Pose2 {
    let yaw = gt.yaw - est.yaw;
    let (s, c) = yaw.sin_cos();
    Pose2::new(gt.x - (c * est.x - s * est.y), gt.y - (s * est.x + c * est.y), yaw)
}

/// The label and position of a candidates-loop line `c1 [subgoal] (1.50, 1.50) score=…`.
pub(super) fn candidate_position(line: &str) -> Option<(&str, f64, f64)> {
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
#[allow(clippy::unwrap_used)]
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
}
