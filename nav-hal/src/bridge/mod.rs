//! [`BridgeHal`]: a simulator in another process (Habitat-sim, MiniWorld,
//! ...) behind the HAL traits, through the navkit bridge protocol.
//!
//! The protocol (docs/BRIDGE.md) is JSON lines: one request per line on
//! the server's stdin (or a TCP stream), one reply per line on its
//! stdout; the server's stderr is its log. A versioned `hello` handshake
//! comes first, then `reset` / `step` / `panorama` requests with ids and a
//! final `close`. The Python package `navkit_bridge` in
//! `nav-hal/bridge/` is the reference server, with `habitat`,
//! `miniworld` and `openroom` backends.
//!
//! What [`BridgeHal`] adds on top of the wire:
//! - per-request timeouts (a late reply to a timed-out request is
//!   recognised by its id and skipped);
//! - a dead server becomes [`HalError::Disconnected`] naming the exit
//!   status and the child's last stderr lines; every later call fails
//!   fast with the same explanation, while the episode's info, step count
//!   and last observation stay readable for the log;
//! - odometry by action-based dead reckoning from the episode start, or, when
//!   [`BridgeConfig::ground_truth_pose`] is set, the simulator's pose
//!   relative to the episode start, marked `ground_truth`;
//! - clean shutdown ([`BridgeHal::close`]: `close`, wait, then kill), and
//!   a child killed when the `BridgeHal` is dropped.
//!
//! ```no_run
//! use nav_core::action::Action;
//! use nav_hal::bridge::{BridgeConfig, BridgeHal, EpisodeSpec};
//! use nav_hal::hal::{Actuators, Sensors};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let mut hal = BridgeHal::spawn(".venv/bin/python -m navkit_bridge --backend miniworld", BridgeConfig::default()).await?;
//! let episode = hal.reset(&EpisodeSpec::index(0)).await?;
//! println!("find the {}", episode.target_object);
//! let pano = hal.panorama(12).await?;
//! assert_eq!(pano.views.len(), 12);
//! hal.act(Action::Forward).await?;
//! hal.act(Action::Stop).await?;
//! assert!(hal.episode_done());
//! println!("SPL {:?}", hal.episode_metrics().map(|m| m.spl));
//! hal.close().await?;
//! # Ok(()) }
//! ```

mod config;
mod hal_impl;
mod obstacles;
pub mod package;
mod transport;
mod wire;
mod worker;

pub use config::{BridgeCommand, BridgeConfig, BridgeEndpoint, RgbEncoding, split_command_line};
pub use wire::{
    BackendInfo, EpisodeInfo, EpisodeSpec, ObservationOptions, PROTOCOL, SimMetrics, VERSION, WireCapabilities,
};
pub use worker::{BridgeWorker, MAX_TIMEOUTS_IN_A_ROW, WorkerConfig, WorkerInfo, view_json};

use crate::HalError;
use crate::depth_scan::ScanBuilder;
use crate::hal::{CameraFrame, Detection};
use nav_core::action::{Action, DeadReckoning};
use nav_core::geometry::{Point2, Pose2, normalize_angle};
use nav_core::lidar::LaserScan;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::time::{Duration, Instant};
use transport::{LineError, Transport, secs};

/// Agent radius assumed for bumper contacts when the backend reports none, metres.
const DEFAULT_AGENT_RADIUS_M: f64 = 0.18;
/// Contacts farther than this from the robot leave the scan, metres.
const CONTACT_RANGE_M: f64 = 3.0;
/// Contacts remembered per episode (the oldest go first).
const MAX_CONTACTS: usize = 256;
/// Contacts are grown by this in the scan, metres: where the bumper met
/// the obstacle is a guess (straight ahead), and the obstacle is there
/// somewhere near.
const CONTACT_GROWTH_M: f64 = 0.10;
use wire::{HelloReply, Reply, TypedReply, WireImage, WireObservation, protocol};

/// Timing of the last request, for measuring the bridge's own overhead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StepTiming {
    /// From writing the request to having parsed the reply's JSON (image
    /// decoding is lazy and not included).
    pub round_trip: Duration,
    /// What the server reports it spent in the simulator (stepping,
    /// rendering, detections).
    pub backend: Duration,
    /// What the server reports it spent encoding the observation (PNG,
    /// base64) before writing.
    pub encode: Duration,
}

impl StepTiming {
    /// The bridge's overhead: the round trip minus the simulator's own
    /// time (so encoding, the pipe, JSON and parsing).
    pub fn overhead(&self) -> Duration {
        self.round_trip.saturating_sub(self.backend)
    }
}

/// The newest observation, images kept encoded until asked for.
#[derive(Debug)]
struct Latest {
    rgb: Option<WireImage>,
    rgb_decoded: Option<CameraFrame>,
    depth: Option<wire::WireDepth>,
    detections: Vec<Detection>,
    pose: Option<Pose2>,
    hfov_deg: f64,
    stamp_s: f64,
    /// The depth-derived scan of this observation, once computed.
    scan: Option<(LaserScan, Vec<bool>)>,
}

/// A simulator behind the HAL traits through the navkit bridge protocol.
/// See the [module documentation](self).
pub struct BridgeHal {
    transport: Transport,
    config: BridgeConfig,
    backend: BackendInfo,
    next_id: u64,
    started: Instant,
    broken: Option<String>,
    closed: bool,
    episode: Option<EpisodeInfo>,
    done: bool,
    steps: u32,
    metrics: Option<SimMetrics>,
    latest: Option<Latest>,
    panorama_detections: Vec<Vec<Detection>>,
    panorama_headings: Vec<f64>,
    /// A panorama was taken since the last observation (the robot has not
    /// moved since): its detections and scan describe the present.
    panorama_fresh: bool,
    panorama_scan: Option<(LaserScan, Vec<bool>)>,
    /// Where forward steps were blocked (pose-estimate frame).
    contacts: Vec<Point2>,
    /// What depth showed this episode ([`BridgeConfig::remember_obstacles`]).
    seen: obstacles::SeenObstacles,
    dead_reckoning: DeadReckoning,
    start_pose: Option<Pose2>,
    last_timing: Option<StepTiming>,
}

impl std::fmt::Debug for BridgeHal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridgeHal")
            .field("endpoint", &self.transport.endpoint)
            .field("backend", &self.backend.name)
            .field("episode", &self.episode.as_ref().map(|e| &e.episode_id))
            .field("steps", &self.steps)
            .field("done", &self.done)
            .field("broken", &self.broken)
            .finish_non_exhaustive()
    }
}

impl BridgeHal {
    /// Starts a bridge server from a shell-like command line (see
    /// [`split_command_line`]) and performs the handshake.
    pub async fn spawn(command_line: &str, config: BridgeConfig) -> Result<Self, HalError> {
        Self::spawn_command(&BridgeCommand::parse(command_line)?, config).await
    }

    /// Starts a bridge server and performs the handshake.
    pub async fn spawn_command(command: &BridgeCommand, config: BridgeConfig) -> Result<Self, HalError> {
        config.validate()?;
        let transport = Transport::spawn(command, &config)?;
        Self::handshake(transport, config).await
    }

    /// Connects to a bridge server listening at `addr` (`HOST:PORT`, e.g.
    /// one started with `--listen 127.0.0.1:7450`) and performs the
    /// handshake.
    pub async fn attach(addr: &str, config: BridgeConfig) -> Result<Self, HalError> {
        config.validate()?;
        let transport = Transport::connect(addr, &config).await?;
        Self::handshake(transport, config).await
    }

    /// Spawns or attaches, as the endpoint says.
    pub async fn connect(endpoint: &BridgeEndpoint, config: BridgeConfig) -> Result<Self, HalError> {
        match endpoint {
            BridgeEndpoint::Command(c) => Self::spawn_command(c, config).await,
            BridgeEndpoint::Tcp(addr) => Self::attach(addr, config).await,
        }
    }

    async fn handshake(transport: Transport, config: BridgeConfig) -> Result<Self, HalError> {
        let placeholder = BackendInfo {
            name: String::new(),
            version: String::new(),
            simulator: String::new(),
            simulator_version: String::new(),
            server_version: String::new(),
            step: Default::default(),
            width: 0,
            height: 0,
            hfov_deg: 0.0,
            camera_height_m: None,
            agent_radius_m: None,
            capabilities: WireCapabilities::default(),
            observation: ObservationOptions { rgb: "none".into(), depth: false, pose: false, detections: false },
            max_steps: None,
            scenes: Vec::new(),
        };
        let mut hal = Self {
            transport,
            backend: placeholder,
            next_id: wire::FIRST_REQUEST_ID,
            started: Instant::now(),
            broken: None,
            closed: false,
            episode: None,
            done: false,
            steps: 0,
            metrics: None,
            latest: None,
            panorama_detections: Vec::new(),
            panorama_headings: Vec::new(),
            panorama_fresh: false,
            panorama_scan: None,
            contacts: Vec::new(),
            seen: obstacles::SeenObstacles::default(),
            dead_reckoning: DeadReckoning::default(),
            start_pose: None,
            last_timing: None,
            config,
        };
        let mut fields = Map::new();
        fields.insert("protocol".into(), json!(PROTOCOL));
        fields.insert("version".into(), json!(VERSION));
        fields.insert(
            "observation".into(),
            json!({
                "rgb": hal.config.rgb.as_str(),
                "depth": hal.config.depth,
                "pose": hal.config.ground_truth_pose,
                "detections": hal.config.detections,
            }),
        );
        let timeout = secs(hal.config.hello_timeout_s);
        let reply: HelloReply = match hal.request("hello", fields, timeout).await {
            Ok(r) => r,
            Err(e) => {
                hal.transport.shutdown(Duration::from_millis(200)).await;
                return Err(e);
            }
        };
        if reply.protocol != PROTOCOL || reply.version != VERSION {
            hal.transport.shutdown(Duration::from_millis(200)).await;
            return Err(protocol(format!(
                "{} speaks {:?} version {}, this client speaks {PROTOCOL:?} version {VERSION}",
                hal.transport.endpoint, reply.protocol, reply.version
            )));
        }
        for a in Action::ALL {
            if !reply.actions.iter().any(|x| x == a.as_str()) {
                hal.transport.shutdown(Duration::from_millis(200)).await;
                return Err(protocol(format!("the bridge does not offer the action {:?}", a.as_str())));
            }
        }
        // a step of -1 m or 1e300 m would walk dead reckoning off the map
        if let Err(e) = reply.step.validate() {
            hal.transport.shutdown(Duration::from_millis(200)).await;
            return Err(protocol(format!("bridge hello: step.{}: {}", e.key, e.message)));
        }
        if !(reply.camera.hfov_deg.is_finite() && reply.camera.hfov_deg > 0.0 && reply.camera.hfov_deg < 360.0) {
            hal.transport.shutdown(Duration::from_millis(200)).await;
            return Err(protocol(format!(
                "bridge hello: camera.hfov_deg must be in (0, 360), got {}",
                reply.camera.hfov_deg
            )));
        }
        hal.dead_reckoning = DeadReckoning::new(reply.step);
        hal.backend = BackendInfo {
            name: reply.backend.name,
            version: reply.backend.version,
            simulator: reply.backend.simulator,
            simulator_version: reply.backend.simulator_version,
            server_version: reply.server_version,
            step: reply.step,
            width: reply.camera.width,
            height: reply.camera.height,
            hfov_deg: reply.camera.hfov_deg,
            camera_height_m: wire::length(reply.camera.height_m),
            agent_radius_m: wire::length(reply.agent.radius_m),
            capabilities: reply.capabilities,
            observation: reply.observation,
            max_steps: reply.max_steps,
            scenes: reply.scenes,
        };
        Ok(hal)
    }

    /// Who is serving and what was negotiated.
    pub fn backend(&self) -> &BackendInfo {
        &self.backend
    }

    /// The configuration in use.
    pub fn config(&self) -> &BridgeConfig {
        &self.config
    }

    /// The server's command line or `tcp://` address.
    pub fn endpoint(&self) -> &str {
        &self.transport.endpoint
    }

    /// Process id of the spawned server while it runs (`None` when
    /// attached over TCP or after it exited).
    pub fn child_id(&self) -> Option<u32> {
        self.transport.child_id()
    }

    /// The last lines the spawned server wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.transport.stderr.snapshot()
    }

    /// Starts an episode and returns what it is about.
    pub async fn reset(&mut self, episode: &EpisodeSpec) -> Result<EpisodeInfo, HalError> {
        let mut fields = Map::new();
        fields.insert("episode".into(), serde_json::to_value(episode).map_err(|e| protocol(e.to_string()))?);
        let timeout = secs(self.config.reset_timeout_s);
        let reply: wire::ResetReply = self.request("reset", fields, timeout).await?;
        reply.episode.check()?;
        self.episode = Some(reply.episode.clone());
        self.done = false;
        self.steps = 0;
        self.metrics = None;
        self.panorama_detections.clear();
        self.panorama_headings.clear();
        self.contacts.clear();
        self.seen.clear();
        self.dead_reckoning = DeadReckoning::new(self.backend.step);
        self.set_latest(reply.observation)?;
        self.start_pose = self.latest.as_ref().and_then(|l| l.pose);
        Ok(reply.episode)
    }

    /// The current (or last) episode, if any was started. Stays readable
    /// after the server died, for the log.
    pub fn episode(&self) -> Option<&EpisodeInfo> {
        self.episode.as_ref()
    }

    /// True once the episode ended (STOP or the step limit).
    pub fn episode_done(&self) -> bool {
        self.done
    }

    /// The simulator's metrics of the episode that just ended.
    pub fn episode_metrics(&self) -> Option<&SimMetrics> {
        self.metrics.as_ref()
    }

    /// Actions executed in this episode.
    pub fn steps(&self) -> u32 {
        self.steps
    }

    /// Timing of the last request.
    pub fn last_timing(&self) -> Option<StepTiming> {
        self.last_timing
    }

    /// Detections of each view of the last panorama, in view order, with
    /// bearings relative to that view's optical axis (see
    /// [`Sensors::detections_around`](crate::hal::Sensors::detections_around)
    /// for them merged and relative to the robot's front).
    pub fn last_panorama_detections(&self) -> &[Vec<Detection>] {
        &self.panorama_detections
    }

    /// Headings of the last panorama's views, radians CCW from the robot's
    /// front, in view order.
    pub fn last_panorama_headings(&self) -> &[f64] {
        &self.panorama_headings
    }

    /// Where blocked forward steps put contact obstacles in the scan
    /// (pose-estimate frame, this episode), see [`BridgeConfig::bumper`].
    pub fn contacts(&self) -> &[Point2] {
        &self.contacts
    }

    /// Records a blocked forward step at `pose`.
    fn record_contact(&mut self, pose: Pose2) {
        if !self.config.bumper {
            return;
        }
        let reach = self.backend.agent_radius_m.unwrap_or(DEFAULT_AGENT_RADIUS_M) + 0.75 * self.backend.step.forward_m;
        let (s, c) = pose.yaw.sin_cos();
        let at = Point2::new(pose.x + reach * c, pose.y + reach * s);
        if at.x.is_finite() && at.y.is_finite() && !self.contacts.iter().any(|p| p.distance(at) < 0.05) {
            self.contacts.push(at);
            if self.contacts.len() > MAX_CONTACTS {
                self.contacts.remove(0);
            }
        }
    }

    /// Remembers a scan taken at the current pose (with
    /// [`BridgeConfig::remember_obstacles`]), then adds the contacts and the
    /// remembered obstacles within [`CONTACT_RANGE_M`] to it.
    fn overlay_remembered(&mut self, scan: &mut LaserScan, low: &[bool]) {
        let (pose, _) = self.pose_estimate();
        if self.config.remember_obstacles {
            self.seen.add_scan(pose, scan, low);
            let near: Vec<(f64, f64)> = self.seen.near(pose, CONTACT_RANGE_M).collect();
            crate::depth_scan::overlay_points(scan, near);
        }
        // a contact is where the body touched something it could not see: grown by the margin
        // a low object's body reaches past what the camera saw of it
        let near: Vec<(f64, f64)> = self
            .contacts
            .iter()
            .flat_map(|c| obstacles::ring(*c, CONTACT_GROWTH_M))
            .map(|c| (pose.relative_bearing(c), pose.position().distance(c)))
            .filter(|(_, d)| *d <= CONTACT_RANGE_M)
            .collect();
        crate::depth_scan::overlay_points(scan, near);
    }

    /// The scan depth-derived scans use: the configured camera height,
    /// else the backend's.
    fn scan_builder(&self) -> Result<ScanBuilder, HalError> {
        Ok(ScanBuilder::new(&self.config.depth_scan)?.default_camera_height(self.backend.camera_height_m))
    }

    /// Sends a `ping` (no simulator work) and returns its timing: the
    /// transport's bare round trip.
    pub async fn ping(&mut self) -> Result<StepTiming, HalError> {
        let timeout = secs(self.config.step_timeout_s);
        let _: Value = self.request("ping", Map::new(), timeout).await?;
        self.last_timing.ok_or_else(|| protocol("no timing recorded"))
    }

    /// Ends the session: sends `close`, waits up to
    /// [`BridgeConfig::close_timeout_s`] for the server to exit, then kills
    /// it. Calling it again does nothing. Afterwards every request fails
    /// with [`HalError::Disconnected`].
    pub async fn close(&mut self) -> Result<(), HalError> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let wait = secs(self.config.close_timeout_s);
        if self.broken.is_none() {
            let _ = self.request::<Value>("close", Map::new(), wait).await;
        }
        self.transport.shutdown(wait).await;
        if self.broken.is_none() {
            self.broken = Some("the bridge was closed".into());
        }
        Ok(())
    }

    // -- internals ----------------------------------------------------------

    fn disconnected(&self, reason: &str) -> HalError {
        HalError::Disconnected { endpoint: self.transport.endpoint.clone(), reason: reason.to_string() }
    }

    async fn fail(&mut self, op: &str, why: &str) -> HalError {
        let post = self.transport.post_mortem(Duration::from_secs(2)).await;
        let reason = format!("{why} during {op}: {post}");
        self.broken = Some(reason.clone());
        self.disconnected(&reason)
    }

    /// One request and its typed result.
    async fn request<T: DeserializeOwned>(
        &mut self,
        op: &str,
        fields: Map<String, Value>,
        timeout: Duration,
    ) -> Result<T, HalError> {
        if let Some(reason) = &self.broken {
            return Err(self.disconnected(reason));
        }
        let id = self.next_id;
        self.next_id += 1;
        let line = wire::request_line(id, op, fields);
        let start = Instant::now();
        let deadline = tokio::time::Instant::now() + timeout;
        match tokio::time::timeout_at(deadline, self.transport.send(&line)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(self.fail(op, &format!("writing the request failed ({e})")).await),
            Err(_) => {
                return Err(HalError::Timeout {
                    what: format!("bridge {op} (sending)"),
                    after_s: timeout.as_secs_f64(),
                });
            }
        }
        loop {
            let line = match tokio::time::timeout_at(deadline, self.transport.reader.next_message()).await {
                Err(_) => {
                    return Err(HalError::Timeout {
                        what: format!("bridge {op} (request {id})"),
                        after_s: timeout.as_secs_f64(),
                    });
                }
                Ok(Ok(Some(line))) => line,
                Ok(Ok(None)) => return Err(self.fail(op, "the server closed its output").await),
                Ok(Err(LineError::Io(e))) => return Err(self.fail(op, &format!("reading failed ({e})")).await),
                Ok(Err(LineError::TooLong(n))) => {
                    let reason = format!("a reply line exceeded max_reply_bytes ({n} bytes read)");
                    return Err(self.fail(op, &reason).await);
                }
            };
            // Fast path: the reply parsed straight into the result type.
            let (rid, result, error, timing) = match serde_json::from_slice::<TypedReply<T>>(&line) {
                Ok(r) => (r.id, r.result, r.error, r.timing),
                Err(typed_err) => {
                    // Not our shape: a stale reply to another op, an error, or garbage.
                    let reply: Reply = serde_json::from_slice(&line).map_err(|e| {
                        let text = String::from_utf8_lossy(&line[..line.len().min(120)]).into_owned();
                        protocol(format!("bridge {op}: reply is not a JSON reply object ({e}): {text:?}"))
                    })?;
                    if reply.id.as_u64().is_some_and(|rid| wire::is_stale_id(rid, id)) {
                        continue;
                    }
                    if reply.error.is_none() {
                        return Err(protocol(format!("bridge {op}: unexpected reply shape: {typed_err}")));
                    }
                    (reply.id, None, reply.error, reply.timing)
                }
            };
            match rid.as_u64() {
                Some(r) if r == id => {}
                Some(r) if wire::is_stale_id(r, id) => continue, // the late reply to a request that timed out
                _ if rid.is_null() && error.is_some() => {}      // the server could not read our id
                _ => return Err(protocol(format!("bridge {op}: reply id {rid} does not match request {id}"))),
            }
            self.last_timing = Some(wire::timing(start.elapsed(), timing.as_ref()));
            if let Some(err) = error {
                return Err(map_error(op, err));
            }
            return match result {
                Some(r) => Ok(r),
                None => serde_json::from_value(Value::Object(Map::new()))
                    .map_err(|e| protocol(format!("bridge {op}: the reply has no result: {e}"))),
            };
        }
    }

    fn stamp(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    fn set_latest(&mut self, obs: WireObservation) -> Result<(), HalError> {
        let pose = match &obs.pose {
            Some(p) => Some(p.pose()?),
            None => None,
        };
        let detections = wire::detections_of(obs.detections)?;
        self.latest = Some(Latest {
            rgb: obs.rgb,
            rgb_decoded: None,
            depth: obs.depth,
            detections,
            pose,
            hfov_deg: obs.hfov_deg,
            stamp_s: self.stamp(),
            scan: None,
        });
        self.panorama_fresh = false;
        self.panorama_scan = None;
        Ok(())
    }

    /// The pose estimate: dead reckoning, or the ground-truth pose
    /// relative to the episode start.
    fn pose_estimate(&self) -> (Pose2, bool) {
        if self.config.ground_truth_pose {
            if let (Some(start), Some(now)) = (self.start_pose, self.latest.as_ref().and_then(|l| l.pose)) {
                let p = start.inverse_transform_point(now.position());
                return (Pose2::new(p.x, p.y, normalize_angle(now.yaw - start.yaw)), true);
            }
        }
        (self.dead_reckoning.pose(), false)
    }
}

/// Longest error text (kind and message each) of a bridge or worker reply
/// echoed into an error, characters; longer ones are cut with `…`.
pub const MAX_ECHOED_ERROR_CHARS: usize = 500;

fn map_error(op: &str, err: wire::WireError) -> HalError {
    let cut = |t: String| match t.char_indices().nth(MAX_ECHOED_ERROR_CHARS) {
        Some((i, _)) => format!("{}… ({} characters in all)", &t[..i], t.chars().count()),
        None => t,
    };
    let (kind, message) = (cut(err.kind), cut(err.message));
    match kind.as_str() {
        "unsupported" | "unavailable" => HalError::Unsupported { what: format!("bridge {op}: {message}") },
        "bad_request" | "no_episode" | "episode_over" => {
            HalError::InvalidCommand { field: op.to_string(), message: format!("{kind}: {message}") }
        }
        "version" => protocol(format!("bridge version mismatch: {message}")),
        _ => protocol(format!("bridge {op} failed ({kind}): {message}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoed_bridge_errors_are_cut() {
        let long = "x".repeat(5 << 20);
        let e = map_error("step", wire::WireError { kind: "internal".into(), message: long }).to_string();
        assert!(e.len() < 2 * MAX_ECHOED_ERROR_CHARS + 200, "{} bytes", e.len());
        assert!(e.contains("characters in all"), "{}", &e[..200]);
        let short = map_error("step", wire::WireError { kind: "bad_request".into(), message: "no".into() });
        assert!(short.to_string().contains("bad_request: no"));
    }
}
