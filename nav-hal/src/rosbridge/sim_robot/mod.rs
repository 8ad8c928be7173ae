//! [`RosbridgePeer`]: navkit's simulated robot, a rosbridge v2 server
//! backed by the built-in simulator, for trying navkit without a robot
//! (`nav sim-robot` serves it on `127.0.0.1:9090`, and `nav rosmaster`
//! drives it as it drives a real one) and for tests of
//! [`RosbridgeHal`](super::RosbridgeHal) and of anything built on it.
//! Feature `rosbridge-sim` (`rosbridge-testing`, which the tests enable,
//! implies it and keeps the `rosbridge::testing` path).
//!
//! It speaks the documented rosbridge v2 operations a client uses —
//! `advertise`, `unadvertise`, `publish`, `subscribe`, `unsubscribe`,
//! `call_service` (answering `service_response`), `set_level` — and
//! reports problems with `status` messages, as rosbridge_server does.
//!
//! The simulation runs in real time: a task ticks the [`SimWorld`] at
//! [`PeerConfig::tick_hz`] (50 Hz), integrating the newest `/cmd_vel` Twist
//! for one tick (the simulated base holds a Twist until the next one, or
//! until [`PeerConfig::cmd_vel_timeout_s`]), and publishes `/odom` every
//! tick, `/scan` at 10 Hz (non-finite ranges as `null`, exactly as
//! rosbridge sends them) and the camera topics at [`PeerConfig::camera_hz`]
//! while subscribed (raw `rgb8`, JPEG on `<rgb>/compressed`, `16UC1` depth,
//! image_transport's 16-bit PNG on `<depth>/compressedDepth`). Header
//! stamps are the simulator's clock.
//!
//! Subscriptions honour rosbridge's options: `throttle_rate` (at most one
//! message per period per connection) and `compression` — `png` sends the
//! JSON text PNG-encoded in `{"op":"png","data":BASE64}`, `cbor` a binary
//! frame with `uint8[]` as bytes, both as rosbridge_server does.
//! `/rosapi/topics` lists what the peer serves.
//!
//! For tests, every client message is recorded with its arrival time
//! ([`RosbridgePeer::received`], [`RosbridgePeer::twists`];
//! [`PeerConfig::record_received`] turns it off for a long-running
//! server), and test controls (methods of [`RosbridgePeer`] only, off
//! until called) pause the scan or odometry stream, inject `null` ranges, corrupt
//! the camera images, drop or refuse
//! connections, go silent (a half-open link), freeze the link both ways
//! (messages queue in the socket and are replayed on the thaw), place an
//! obstacle ahead, publish the pause flag and voice commands. [`PeerConfig::nav2`] adds a
//! Nav2 emulation (goals on `/goal_pose`, status, cancel, abort on request).
//!
//! ```
//! use nav_hal::rosbridge::sim_robot::RosbridgePeer;
//! use nav_hal::rosbridge::{RosbridgeConfig, RosbridgeHal};
//! use nav_hal::hal::{Actuators, Sensors, VelocityCommand};
//! use nav_hal::sim::{SimConfig, SimWorld};
//! use std::time::Duration;
//!
//! let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
//! rt.block_on(async {
//!     let peer = RosbridgePeer::start(SimWorld::builtin("simple", SimConfig::default())?).await?;
//!     let mut hal = RosbridgeHal::connect(RosbridgeConfig::new(peer.url())).await?;
//!     hal.wait_for_sensors(Duration::from_secs(5)).await?;
//!     assert_eq!(hal.scan().await?.scan.ranges.len(), 720);
//!     hal.drive(VelocityCommand { linear: 0.1, angular: 0.0, duration_s: 0.05 }).await?;
//!     hal.stop().await?;
//!     tokio::time::sleep(Duration::from_millis(100)).await;
//!     assert_eq!(peer.twists().len(), 6);
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod nav2;
mod protocol;
mod sim;

pub use nav2::{GOAL_TOLERANCE_M as NAV2_GOAL_TOLERANCE_M, Nav2GoalRecord};

use super::config::TopicsConfig;
use super::msg::geometry_msgs::Twist;
use crate::HalError;
use crate::sim::SimWorld;
use nav_core::geometry::Pose2;
use nav_core::time::ManualClock;
use protocol::Connections;
use serde::Serialize;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;
use tokio::task::JoinHandle;

/// Settings of the simulated robot's rosbridge server.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerConfig {
    /// Topic and service names it serves (the HAL's defaults).
    pub topics: TopicsConfig,
    /// Simulation rate, Hz; `/odom` goes out every tick.
    pub tick_hz: f64,
    /// `/scan` rate, Hz.
    pub scan_hz: f64,
    /// Camera rate while subscribed, Hz.
    pub camera_hz: f64,
    /// The simulated base zeroes a Twist older than this; `None` (the
    /// default) holds it forever, the worst case a client must handle.
    pub cmd_vel_timeout_s: Option<f64>,
    /// Serve `<rgb>/compressed` and `<depth>/compressedDepth` (a robot
    /// with image_transport's plugins); `false` serves raw images only.
    pub serve_compressed: bool,
    /// Answer `/rosapi/topics`; `false` acts as a server without rosapi.
    pub rosapi_topics: bool,
    /// Honour `compression` (`png`, `cbor`); `false` answers every
    /// subscription in JSON, as a rosbridge_server older than CBOR support.
    pub compression: bool,
    /// Emulate Nav2 ([`Nav2GoalRecord`], [`RosbridgePeer::nav2_abort`]): `/rosapi/topics`
    /// lists its status topic, goals on the goal topic are driven to by
    /// the peer itself (its Twists take precedence over `cmd_vel` while a
    /// goal runs), with status on the status topic and the cancel service
    /// honoured. Off by default: a robot without Nav2.
    pub nav2: bool,
    /// Keep every client message for [`RosbridgePeer::received`],
    /// [`RosbridgePeer::published`] and [`RosbridgePeer::twists`] (on by
    /// default, for tests). The record grows with every message, so a
    /// server that runs for hours (`nav sim-robot`) turns it off; those
    /// methods then answer empty.
    pub record_received: bool,
}

impl Default for PeerConfig {
    fn default() -> Self {
        Self {
            topics: TopicsConfig::default(),
            tick_hz: 50.0,
            scan_hz: 10.0,
            camera_hz: 2.0,
            cmd_vel_timeout_s: None,
            serve_compressed: true,
            rosapi_topics: true,
            compression: true,
            nav2: false,
            record_received: true,
        }
    }
}

/// How [`RosbridgePeer::set_image_corruption`] breaks camera messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImageCorruption {
    /// Good images.
    #[default]
    None,
    /// Image data without its first half, in well-formed messages: a raw
    /// image too short for its size, a JPEG or PNG without its signature.
    Data,
    /// Broken frames: truncated JSON, `png` messages that hold no PNG,
    /// truncated CBOR frames.
    Frames,
}

/// One message a client sent, as recorded by the peer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReceivedMessage {
    /// Arrival time, s since the peer started ([`RosbridgePeer::now_s`]).
    pub at_s: f64,
    /// Which connection (counting from 1).
    pub connection: u64,
    /// The `op` field (`"?"` when missing).
    pub op: String,
    /// The `topic` or `service` field, if any.
    pub topic: Option<String>,
    /// The whole JSON object.
    pub raw: serde_json::Value,
}

/// The simulation, behind its own lock (the tick task holds it while it
/// renders; connections never wait for it).
#[derive(Debug)]
pub(crate) struct PeerState {
    pub world: SimWorld,
    pub scan_paused: bool,
    pub odom_paused: bool,
    pub null_arc: Option<(f64, f64)>,
    pub image_corruption: ImageCorruption,
    pub nav2: nav2::Nav2Sim,
}

/// Shared by the peer's tasks.
#[derive(Debug)]
pub(crate) struct PeerShared {
    pub config: PeerConfig,
    pub epoch: Instant,
    pub accepting: AtomicBool,
    pub silent: AtomicBool,
    /// While true, connections neither read nor write (a frozen link).
    pub frozen: tokio::sync::watch::Sender<bool>,
    pub conns: Connections,
    /// The simulator's clock (header stamps, `/rosapi/get_time`).
    pub sim_clock: Arc<ManualClock>,
    state: Mutex<PeerState>,
    /// The newest Twist and its arrival time.
    command: Mutex<(Twist, f64)>,
    log: Mutex<Vec<ReceivedMessage>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl PeerShared {
    pub fn state(&self) -> MutexGuard<'_, PeerState> {
        lock(&self.state)
    }

    pub fn log(&self) -> MutexGuard<'_, Vec<ReceivedMessage>> {
        lock(&self.log)
    }

    /// Keeps `m` for [`RosbridgePeer::received`] when
    /// [`PeerConfig::record_received`] is on.
    pub fn record(&self, m: ReceivedMessage) {
        if self.config.record_received {
            self.log().push(m);
        }
    }

    pub fn command(&self) -> (Twist, f64) {
        *lock(&self.command)
    }

    pub fn set_command(&self, twist: Twist, at_s: f64) {
        *lock(&self.command) = (twist, at_s);
    }

    pub fn now_s(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64()
    }
}

/// navkit's simulated robot: a rosbridge v2 server backed by the simulator,
/// for trying navkit without a robot and for tests. See the [module
/// docs](self). Dropping it stops the server and closes every connection.
#[derive(Debug)]
pub struct RosbridgePeer {
    addr: SocketAddr,
    shared: Arc<PeerShared>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for RosbridgePeer {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        self.shared.conns.drop_all();
    }
}

impl RosbridgePeer {
    /// Starts a peer with the default [`PeerConfig`].
    pub async fn start(world: SimWorld) -> Result<Self, HalError> {
        Self::start_with(world, PeerConfig::default()).await
    }

    /// Starts a peer on `127.0.0.1:0` (a free port) serving `world`.
    pub async fn start_with(world: SimWorld, config: PeerConfig) -> Result<Self, HalError> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), world, config).await
    }

    /// Starts a peer listening on `addr` (port 0: a free one) serving
    /// `world`. Fails with [`HalError::Io`] naming the address when it
    /// cannot be bound (the port is in use, the address is not this
    /// machine's), and with [`HalError::InvalidConfig`] on a rate that is
    /// not positive.
    pub async fn start_on(addr: SocketAddr, world: SimWorld, config: PeerConfig) -> Result<Self, HalError> {
        for (field, v) in [("tick_hz", config.tick_hz), ("scan_hz", config.scan_hz), ("camera_hz", config.camera_hz)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(HalError::InvalidConfig {
                    field: field.into(),
                    message: format!("must be positive, got {v}"),
                });
            }
        }
        let io = |source| HalError::Io { path: addr.to_string().into(), source };
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(io)?;
        let addr = listener.local_addr().map_err(io)?;
        let shared = Arc::new(PeerShared {
            config,
            epoch: Instant::now(),
            accepting: AtomicBool::new(true),
            silent: AtomicBool::new(false),
            frozen: tokio::sync::watch::Sender::new(false),
            conns: Connections::default(),
            sim_clock: world.clock(),
            state: Mutex::new(PeerState {
                world,
                scan_paused: false,
                odom_paused: false,
                null_arc: None,
                image_corruption: ImageCorruption::None,
                nav2: nav2::Nav2Sim::default(),
            }),
            command: Mutex::new((Twist::default(), 0.0)),
            log: Mutex::new(Vec::new()),
        });
        let tasks = vec![
            tokio::spawn(protocol::accept_loop(listener, Arc::clone(&shared))),
            tokio::spawn(sim::tick_loop(Arc::clone(&shared))),
        ];
        Ok(Self { addr, shared, tasks })
    }

    /// `ws://ADDRESS:PORT` (`ws://127.0.0.1:PORT` by default).
    pub fn url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Seconds since the peer started (the clock of [`ReceivedMessage::at_s`]).
    pub fn now_s(&self) -> f64 {
        self.shared.now_s()
    }

    /// Every message received so far, in arrival order (none when
    /// [`PeerConfig::record_received`] is off).
    pub fn received(&self) -> Vec<ReceivedMessage> {
        self.shared.log().clone()
    }

    /// The messages published by clients on `topic`: `(arrival s, msg)`.
    pub fn published(&self, topic: &str) -> Vec<(f64, serde_json::Value)> {
        self.shared
            .log()
            .iter()
            .filter(|m| m.op == "publish" && m.topic.as_deref() == Some(topic))
            .map(|m| (m.at_s, m.raw.get("msg").cloned().unwrap_or_default()))
            .collect()
    }

    /// The Twists published on the `cmd_vel` topic: `(arrival s, twist)`
    /// (a message that is not a Twist reads as NaN velocities).
    pub fn twists(&self) -> Vec<(f64, Twist)> {
        let nan = Twist::planar(f64::NAN, f64::NAN);
        self.published(&self.shared.config.topics.cmd_vel)
            .into_iter()
            .map(|(t, m)| (t, serde_json::from_value(m).unwrap_or(nan)))
            .collect()
    }

    /// Forgets the recorded messages.
    pub fn clear_received(&self) {
        self.shared.log().clear();
    }

    /// Open connections.
    pub fn connections(&self) -> usize {
        self.shared.conns.len()
    }

    /// Pauses (`true`) or resumes the `/scan` stream.
    pub fn set_scan_paused(&self, paused: bool) {
        self.shared.state().scan_paused = paused;
    }

    /// Pauses (`true`) or resumes the `/odom` stream.
    pub fn set_odom_paused(&self, paused: bool) {
        self.shared.state().odom_paused = paused;
    }

    /// Makes every beam within `half_width_rad` of `center_rad` (CCW from
    /// the front) read `null` on the wire; `None` stops it.
    pub fn set_null_arc(&self, arc: Option<(f64, f64)>) {
        self.shared.state().null_arc = arc;
    }

    /// Breaks every camera message from now on (or stops, with
    /// [`ImageCorruption::None`]).
    pub fn set_image_corruption(&self, corruption: ImageCorruption) {
        self.shared.state().image_corruption = corruption;
    }

    /// Closes every connection at once, without a close handshake (the
    /// listener keeps accepting unless [`set_accepting`](Self::set_accepting)).
    pub fn drop_connections(&self) {
        self.shared.conns.drop_all();
    }

    /// While `false`, new connections are refused (closed before the
    /// WebSocket handshake): the robot is unreachable.
    pub fn set_accepting(&self, accepting: bool) {
        self.shared.accepting.store(accepting, Ordering::SeqCst);
    }

    /// While `true`, the peer sends nothing at all (no topics, no service
    /// responses) but keeps connections open: a half-open link.
    pub fn set_silent(&self, silent: bool) {
        self.shared.silent.store(silent, Ordering::SeqCst);
    }

    /// While `true`, the link is frozen both ways, like a WiFi drop with
    /// the TCP connection still open: the peer neither reads nor writes,
    /// so the client's messages wait in the socket (and are handled, late,
    /// on the thaw, as rosbridge_server replays them) and nothing reaches
    /// the client. Its simulated base keeps executing the last Twist.
    pub fn set_frozen(&self, frozen: bool) {
        self.shared.frozen.send_replace(frozen);
    }

    /// Publishes `text` (`std_msgs/String`) on the voice command topic to
    /// its subscribers, as an operator's speech-to-text node would.
    pub fn publish_voice_command(&self, text: &str) {
        let topic = self.shared.config.topics.voice_command.clone();
        self.shared.conns.publish(&self.shared, &topic, &serde_json::json!({ "data": text }));
    }

    /// True once a client subscribed to `topic` (e.g. the voice command
    /// topic: a command published before that reaches nobody).
    pub fn has_subscriber(&self, topic: &str) -> bool {
        self.shared.conns.has_subscriber(topic)
    }

    /// The texts clients published on the announcement topic
    /// (`topics.say`), in arrival order.
    pub fn announcements(&self) -> Vec<String> {
        self.published(&self.shared.config.topics.say)
            .into_iter()
            .map(|(_, m)| m.get("data").and_then(serde_json::Value::as_str).unwrap_or_default().to_string())
            .collect()
    }

    /// Publishes the pause flag (`std_msgs/Bool`) to its subscribers.
    pub fn publish_pause(&self, paused: bool) {
        let topic = self.shared.config.topics.pause.clone();
        self.shared.conns.publish(&self.shared, &topic, &serde_json::json!({ "data": paused }));
    }

    /// Moves the robot along its heading so the obstacle straight ahead is
    /// `distance_m` from the LiDAR (the robot's centre), e.g. 0.25 m. Fails
    /// when nothing is ahead within range or the robot would overlap
    /// something. Returns the new true pose.
    pub fn place_obstacle_ahead(&self, distance_m: f64) -> Result<Pose2, HalError> {
        sim::place_obstacle_ahead(&mut self.shared.state().world, distance_m)
    }

    /// Runs `f` on the simulated world (ground truth, teleports, ...).
    pub fn with_world<R>(&self, f: impl FnOnce(&mut SimWorld) -> R) -> R {
        f(&mut self.shared.state().world)
    }

    /// The robot's true pose.
    pub fn pose(&self) -> Pose2 {
        self.shared.state().world.ground_truth_pose()
    }

    /// The goals the Nav2 emulation received, oldest first
    /// ([`PeerConfig::nav2`]).
    pub fn nav2_goals(&self) -> Vec<Nav2GoalRecord> {
        self.shared.state().nav2.goals.clone()
    }

    /// Makes the emulated Nav2 abort its running goal (status 6 on the
    /// status topic, as when its planner finds no path); false if none runs.
    pub fn nav2_abort(&self) -> bool {
        let now = self.shared.now_s();
        let (aborted, status) = {
            let mut st = self.shared.state();
            (st.nav2.end(6, now), st.nav2.status_msg())
        };
        if aborted {
            self.shared.conns.publish(&self.shared, &self.shared.config.topics.nav2_status, &status);
        }
        aborted
    }

    /// The Twist the simulated base is executing.
    pub fn current_command(&self) -> Twist {
        self.shared.command().0
    }
}
