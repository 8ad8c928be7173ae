//! Recording a run (feature `record`): an MCAP file that Foxglove, Rerun
//! and other MCAP viewers open without plugins, and (feature `live`) the
//! same channels served live over the Foxglove WebSocket protocol.
//! [`read`] reads a recording back. docs/RECORDING.md lists the channels.
//!
//! Three hooks feed one [`Recording`], none of which changes the run:
//! - the step log's tap ([`StepLog::with_tap`](crate::navigator::StepLog::with_tap),
//!   given [`Recording::step_tap`]) gives every step record — the clock
//!   (`t_s`, simulated time in the simulator), the pose estimate, ground
//!   truth on its own channel, anchors, candidates;
//! - a [`Tapped`](nav_hal::tap::Tapped) robot (given
//!   [`Recording::sensor_tap`]) gives the sensor readings the loop took
//!   (camera, depth, panorama, LiDAR): the newest of each kind goes with
//!   the next step record and is written stamped with that step's time
//!   (every `every` steps);
//! - [`RecordingVlm`] ([`Recording::wrap_vlm`], or [`Recording::runner`]
//!   for a [`Runner`]'s models) wraps the model and writes each request
//!   and reply.
//!
//! The hooks only queue what they are given; a thread of the recording's
//! own encodes the images, keeps the map and writes the file and the live
//! server, so the loop never waits for either while the writer keeps up. The
//! queue is bounded: when the writer falls behind, the hooks wait for it
//! (every frame is written: right for a simulator, whose clock waits too),
//! or with [`RecordOptions::drop_when_behind`] (a robot's real-time loop)
//! the oldest queued sensor frames are dropped instead (never a step record
//! or a model call while any frames are queued), and
//! [`RecordStats::dropped`] counts them. A live viewer that reads slowly or
//! not at all loses its oldest messages in the server's own bounded queue
//! for it ([`LiveOptions::backlog`]); it never holds up the writer.
//!
//! The recorder keeps its own LiDAR map (nav-core's [`LocalMap`](nav_core::local_map::LocalMap), from the
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
#[cfg(feature = "live")]
mod live;
pub mod read;
mod recorder;
mod vlm;

pub use error::RecordError;
pub use vlm::RecordingVlm;

use crate::navigator::StepRecord;
use crate::navigator::runner::Runner;
use crate::vlm::VisionLanguageModel;
use nav_core::lidar::StampedScan;
use nav_hal::hal::{CameraFrame, DepthFrame, Panorama};
use nav_hal::tap::{SensorTap, SharedTap};
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

/// The step log channel `nav replay` reads back.
pub const STEP_TOPIC: &str = "/navkit/step";
/// The step log channel's schema name.
pub const STEP_SCHEMA: &str = "navkit.StepRecord";
/// The model calls' channel ([`read::read_planner_calls`] reads it back).
pub const PLANNER_TOPIC: &str = "/navkit/planner";
/// The model calls' schema name.
pub const PLANNER_SCHEMA: &str = "navkit.PlannerCall";
/// The live server's address when none is given.
pub const DEFAULT_LIVE_ADDR: &str = "127.0.0.1:8765";

/// Where a recording goes and how much of it.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// The MCAP file (must end in `.mcap`; its folder is made when
    /// missing), or none.
    pub file: Option<PathBuf>,
    /// Sensor frames, maps and scenes every this many steps (≥ 1); step
    /// records, poses and model calls always.
    pub every: u32,
    /// Serve the channels live (feature `live`), or not.
    pub live: Option<LiveOptions>,
    /// The most queued step records carrying sensor frames; past it the
    /// hooks wait for the writer, or with
    /// [`RecordOptions::drop_when_behind`] the oldest queued frames are
    /// dropped (and counted).
    pub max_queued_frames: usize,
    /// A robot's real-time loop: never wait for the writer, drop the oldest
    /// queued frames instead. Off (wait: every frame is written) suits a
    /// simulator, whose clock waits too.
    pub drop_when_behind: bool,
}

impl Default for RecordOptions {
    fn default() -> Self {
        Self { file: None, every: 1, live: None, max_queued_frames: 64, drop_when_behind: false }
    }
}

/// The live server (the Foxglove WebSocket protocol).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveOptions {
    /// Address and port to listen on (port 0: any free port, see
    /// [`Recording::live_addr`]).
    pub addr: SocketAddr,
    /// Allow an address other than loopback (anyone who can reach it sees
    /// the camera, the map and the model's requests).
    pub any_address: bool,
    /// Messages queued per viewer before its oldest are dropped.
    pub backlog: usize,
}

impl LiveOptions {
    /// Loopback only, 256 messages per viewer.
    pub fn new(addr: SocketAddr) -> Self {
        Self { addr, any_address: false, backlog: 256 }
    }
}

/// What the recording wrote, for the run report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordStats {
    /// The file, when there is one.
    pub path: Option<PathBuf>,
    /// Messages per topic.
    pub messages: BTreeMap<String, u64>,
    /// Step records written.
    pub steps: u64,
    /// File size, bytes.
    pub bytes: u64,
    /// Queued sensor frames (or, with none queued, records) dropped
    /// because the writer fell behind.
    pub dropped: u64,
    /// The live server's address, when serving.
    pub live: Option<SocketAddr>,
    /// Time the hooks took on the loop's thread per step record (the step
    /// tap and the sensor taps since the step before), ns: median, 99th
    /// percentile and most (of the first [`MAX_HOOK_SAMPLES`] steps).
    pub hook_ns: [u64; 3],
}

/// The most per-step hook times [`RecordStats::hook_ns`] is taken from.
pub const MAX_HOOK_SAMPLES: usize = 1 << 18;

impl RecordStats {
    /// One line for the report: file (or live address), messages, size,
    /// size per step, and what was dropped.
    pub fn line(&self) -> String {
        let total: u64 = self.messages.values().sum();
        let mut text = match &self.path {
            Some(p) => {
                let per_step = if self.steps > 0 { self.bytes as f64 / self.steps as f64 / 1024.0 } else { 0.0 };
                format!(
                    "{} ({} channels, {total} messages, {:.1} KiB, {per_step:.1} KiB/step)",
                    p.display(),
                    self.messages.len(),
                    self.bytes as f64 / 1024.0
                )
            }
            None => format!("{} channels, {total} messages", self.messages.len()),
        };
        if let Some(addr) = self.live {
            text.push_str(&format!("; live on ws://{addr}"));
        }
        if self.dropped > 0 {
            text.push_str(&format!("; {} queued frames dropped (the writer fell behind)", self.dropped));
        }
        if self.steps > 0 {
            let [median, p99, max] = self.hook_ns.map(|ns| ns as f64 / 1000.0);
            text.push_str(&format!("; {median:.0} µs a step in the loop (99%: {p99:.0} µs, most {max:.0} µs)"));
        }
        text
    }
}

/// The newest sensor readings of each kind since the last step record.
#[derive(Default)]
struct Readings {
    scan: Option<StampedScan>,
    rgb: Option<CameraFrame>,
    depth: Option<DepthFrame>,
    panorama: Option<Panorama>,
}

impl Readings {
    fn is_empty(&self) -> bool {
        self.scan.is_none() && self.rgb.is_none() && self.depth.is_none() && self.panorama.is_none()
    }
}

/// One model call as recorded.
struct Call {
    request: crate::vlm::VlmRequest,
    reply: crate::vlm::calls::RecordedReply,
    backend: crate::vlm::BackendInfo,
}

/// What the hooks hand to the writer thread.
enum Event {
    Step(Box<StepRecord>, Readings),
    Call(Box<Call>),
}

/// The queue between the hooks and the writer thread.
#[derive(Default)]
struct Queue {
    readings: Readings,
    events: VecDeque<Event>,
    /// Queued steps that carry frames.
    with_frames: usize,
    closed: bool,
    dropped: u64,
    /// Hook time since the last step record, ns.
    tick_ns: u64,
    /// Hook time per step record, ns.
    hook_samples: Vec<u64>,
}

impl Queue {
    /// Adds `since`'s elapsed time to this step's hook time.
    fn spent(&mut self, since: Instant) {
        self.tick_ns = self.tick_ns.saturating_add(since.elapsed().as_nanos() as u64);
    }
}

struct Shared {
    queue: Mutex<Queue>,
    /// The writer waits here for events.
    wake: Condvar,
    /// Hooks wait here for room (unless dropping).
    room: Condvar,
    max_queued_frames: usize,
    drop_when_behind: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `event`. Past the frame limit the hook waits for the writer
    /// or (dropping) the oldest queued step's frames are dropped; past 64
    /// times the limit of events, the oldest event.
    fn push(&self, event: Event) {
        let limit = self.max_queued_frames.max(1);
        let mut q = self.lock();
        while !self.drop_when_behind && !q.closed && (q.with_frames >= limit || q.events.len() >= 64 * limit) {
            q = self.room.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
        if q.closed {
            return;
        }
        if let Event::Step(_, r) = &event {
            if !r.is_empty() {
                q.with_frames += 1;
            }
        }
        q.events.push_back(event);
        if q.with_frames > self.max_queued_frames.max(1) {
            let oldest = q.events.iter_mut().find_map(|e| match e {
                Event::Step(_, r) if !r.is_empty() => Some(std::mem::take(r)),
                _ => None,
            });
            if oldest.is_some() {
                q.with_frames -= 1;
                q.dropped += 1;
            }
        }
        if q.events.len() > 64 * self.max_queued_frames.max(1) {
            if let Some(Event::Step(_, r)) = q.events.pop_front() {
                q.with_frames -= usize::from(!r.is_empty());
            }
            q.dropped += 1;
        }
        drop(q);
        self.wake.notify_one();
    }

    /// The queued events, waiting for some; `None` once closed and empty.
    fn take(&self) -> Option<(VecDeque<Event>, u64)> {
        let mut q = self.lock();
        while q.events.is_empty() && !q.closed {
            q = self.wake.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
        if q.events.is_empty() {
            return None;
        }
        q.with_frames = 0;
        let dropped = q.dropped;
        let events = std::mem::take(&mut q.events);
        drop(q);
        self.room.notify_all();
        Some((events, dropped))
    }

    fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_all();
        self.room.notify_all();
    }
}

/// The writer thread and its outcome.
struct Inner {
    shared: Arc<Shared>,
    worker: Mutex<Option<JoinHandle<Result<RecordStats, RecordError>>>>,
    outcome: Mutex<Option<Result<RecordStats, String>>>,
    path: Option<PathBuf>,
    live: Option<SocketAddr>,
}

impl Inner {
    fn finish(&self) -> Result<RecordStats, RecordError> {
        let mut outcome = self.outcome.lock().unwrap_or_else(PoisonError::into_inner);
        if outcome.is_none() {
            self.shared.close();
            let worker = self.worker.lock().unwrap_or_else(PoisonError::into_inner).take();
            let result = match worker.map(JoinHandle::join) {
                Some(Ok(r)) => r,
                Some(Err(_)) => Err(self.write_error("the writer thread stopped".into())),
                None => Err(self.write_error("finished twice".into())),
            };
            let hook_ns = percentiles(&mut self.shared.lock().hook_samples);
            *outcome = Some(result.map(|stats| RecordStats { hook_ns, ..stats }).map_err(|e| e.to_string()));
        }
        match outcome.as_ref() {
            Some(Ok(stats)) => Ok(stats.clone()),
            Some(Err(e)) => Err(RecordError::Finished(e.clone())),
            None => Err(self.write_error("no outcome".into())),
        }
    }

    fn write_error(&self, message: String) -> RecordError {
        RecordError::Write { path: self.path.clone().unwrap_or_default(), message }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // the file is completed whenever the last handle goes
        let _ = self.finish();
    }
}

/// A recording shared by the step log tap, the robot tap and the model
/// wrapper. Cloning shares it; the file is finished by
/// [`Recording::finish`] or when the last clone is dropped.
#[derive(Clone)]
pub struct Recording {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recording").field("path", &self.inner.path).field("live", &self.inner.live).finish()
    }
}

impl Recording {
    /// Creates `path` (a `.mcap` file; its folder is made when missing).
    /// Sensor frames, maps and scenes go out every `every` steps (≥ 1);
    /// step records, poses and planner calls always.
    pub fn create(path: &Path, every: u32) -> Result<Self, RecordError> {
        Self::start(RecordOptions { file: Some(path.to_path_buf()), every, ..RecordOptions::default() })
    }

    /// Starts a recording to a file, a live server, or both.
    ///
    /// # Errors
    /// A file name not ending in `.mcap` or that cannot be created, `every`
    /// 0, a live address that is not loopback without
    /// [`LiveOptions::any_address`], or one that cannot be bound (or
    /// feature `live` off).
    pub fn start(options: RecordOptions) -> Result<Self, RecordError> {
        if options.every == 0 {
            return Err(RecordError::Every);
        }
        let out = recorder::Out::open(&options)?;
        let live = out.live_addr();
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            room: Condvar::new(),
            max_queued_frames: options.max_queued_frames,
            drop_when_behind: options.drop_when_behind,
        });
        let mut rec = recorder::Recorder::new(out, u64::from(options.every));
        let queue = Arc::clone(&shared);
        let worker = std::thread::Builder::new()
            .name("navkit-recorder".into())
            .spawn(move || {
                let mut dropped = 0;
                while let Some((events, d)) = queue.take() {
                    dropped = d;
                    for e in events {
                        rec.handle(e);
                    }
                }
                dropped = dropped.max(queue.lock().dropped);
                rec.finish(dropped)
            })
            .map_err(|e| RecordError::Write {
                path: options.file.clone().unwrap_or_default(),
                message: format!("cannot start the writer thread: {e}"),
            })?;
        let inner =
            Inner { shared, worker: Mutex::new(Some(worker)), outcome: Mutex::new(None), path: options.file, live };
        Ok(Self { inner: Arc::new(inner) })
    }

    /// The live server's address (the port it got when asked for port 0).
    pub fn live_addr(&self) -> Option<SocketAddr> {
        self.inner.live
    }

    /// The robot-side hook: give it to [`Tapped`](nav_hal::tap::Tapped).
    pub fn sensor_tap(&self) -> SharedTap {
        Arc::new(Mutex::new(RobotTap(Arc::clone(&self.inner.shared))))
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
        let shared = Arc::clone(&self.inner.shared);
        move |r: &StepRecord| {
            let start = Instant::now();
            let readings = std::mem::take(&mut shared.lock().readings);
            shared.push(Event::Step(Box::new(r.clone()), readings));
            let mut q = shared.lock();
            q.spent(start);
            let tick = std::mem::take(&mut q.tick_ns);
            if q.hook_samples.len() < MAX_HOOK_SAMPLES {
                q.hook_samples.push(tick);
            }
        }
    }

    /// Queues one model call (used by [`RecordingVlm`]).
    fn planner_call(&self, call: Call) {
        self.inner.shared.push(Event::Call(Box::new(call)));
    }

    /// Writes what is still queued, closes the file (and stops the live
    /// server) and returns what it holds; an error names the file and what
    /// failed (a full disk). Later calls return the same.
    pub fn finish(&self) -> Result<RecordStats, RecordError> {
        self.inner.finish()
    }
}

/// The sensor tap's side of a [`Recording`]: keeps the newest reading of
/// each kind for the next step record.
struct RobotTap(Arc<Shared>);

impl SensorTap for RobotTap {
    fn scan(&mut self, scan: &StampedScan) {
        let start = Instant::now();
        let scan = scan.clone();
        let mut q = self.0.lock();
        q.readings.scan = Some(scan);
        q.spent(start);
    }
    fn rgb(&mut self, frame: &CameraFrame) {
        let start = Instant::now();
        let frame = frame.clone();
        let mut q = self.0.lock();
        q.readings.rgb = Some(frame);
        q.spent(start);
    }
    fn depth(&mut self, frame: &DepthFrame) {
        let start = Instant::now();
        let frame = frame.clone();
        let mut q = self.0.lock();
        q.readings.depth = Some(frame);
        q.spent(start);
    }
    fn panorama(&mut self, panorama: &Panorama) {
        let start = Instant::now();
        let panorama = panorama.clone();
        let mut q = self.0.lock();
        q.readings.panorama = Some(panorama);
        q.spent(start);
    }
}

/// Median, 99th percentile and most of `samples` (zeros when empty).
fn percentiles(samples: &mut [u64]) -> [u64; 3] {
    if samples.is_empty() {
        return [0; 3];
    }
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    [at(0.5), at(0.99), at(1.0)]
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use nav_core::geometry::Pose2;
    use serde_json::json;

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
            proptest::prop_assert_eq!(stats.dropped, 0);
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
        assert!(matches!(Recording::create(&dir.path().join("x.jsonl"), 1), Err(RecordError::NotMcap { .. })));
        assert!(matches!(Recording::create(&dir.path().join("x.mcap"), 0), Err(RecordError::Every)));
        let r = Recording::create(&dir.path().join("sub/x.mcap"), 1).unwrap();
        let stats = r.finish().unwrap();
        assert_eq!(stats.steps, 0);
        assert!(stats.bytes > 0);
        assert_eq!(r.finish().unwrap(), stats, "finishing again gives the same");
    }

    #[test]
    fn two_recordings_in_one_process_keep_their_own_channels() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.mcap"), dir.path().join("b.mcap"));
        let (ra, rb) = (Recording::create(&a, 1).unwrap(), Recording::create(&b, 1).unwrap());
        let (mut ta, mut tb) = (ra.step_tap(), rb.step_tap());
        for i in 0..5u64 {
            ta(&StepRecord { step: i, t_s: i as f64, action: "a".into(), ..StepRecord::default() });
            if i < 2 {
                tb(&StepRecord { step: i, t_s: i as f64, action: "b".into(), ..StepRecord::default() });
            }
        }
        assert_eq!((ra.finish().unwrap().steps, rb.finish().unwrap().steps), (5, 2));
        let (sa, sb) = (read::read_steps(&a).unwrap(), read::read_steps(&b).unwrap());
        assert!(sa.len() == 5 && sa.iter().all(|s| s.action == "a"));
        assert!(sb.len() == 2 && sb.iter().all(|s| s.action == "b"));
    }

    #[test]
    fn a_full_queue_drops_the_oldest_frames_and_keeps_every_step() {
        let shared = Shared {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            room: Condvar::new(),
            max_queued_frames: 2,
            drop_when_behind: true,
        };
        let scan = StampedScan {
            stamp_s: 0.0,
            scan: nav_core::lidar::LaserScan {
                angle_min: 0.0,
                angle_increment: 0.1,
                range_min: 0.1,
                range_max: 5.0,
                ranges: vec![1.0; 8],
            },
        };
        for i in 0..10u64 {
            let readings = Readings { scan: Some(scan.clone()), ..Readings::default() };
            shared.push(Event::Step(Box::new(StepRecord { step: i, ..StepRecord::default() }), readings));
        }
        let (events, dropped) = shared.take().unwrap();
        assert_eq!((events.len(), dropped), (10, 8));
        let kept: Vec<u64> = events
            .iter()
            .filter_map(|e| match e {
                Event::Step(r, readings) if !readings.is_empty() => Some(r.step),
                _ => None,
            })
            .collect();
        assert_eq!(kept, vec![8, 9], "the newest frames are kept");
    }
}
