//! [`RosbridgeHal`]: the HAL traits over a ROS graph, and [`StopHandle`].

use super::config::{Nav2Mode, RosbridgeConfig};
use super::convert;
use super::link::{self, Connect, Request, RosbridgeConnector};
use super::msg::action_msgs::GoalStatus;
use super::msg::geometry_msgs::{Point, Pose, PoseStamped, Quaternion, Twist};
use super::msg::std_msgs::Header;
use super::nav2::{nav2_goal_state, nav2_usable};
use super::runtime::LinkRuntime;
use super::state::{LastCommand, LinkStatus, Nav2Goal, RawImage, Sample, Shared};
use crate::HalError;
use crate::clock::MonotonicClock;
use crate::hal::{
    Actuators, CameraFrame, Capabilities, DepthFrame, MotionGuard, MotionOutcome, NavGoalState, Odometry, Panorama,
    PanoramaView, Sensors, StampedScan, StepOutcome, VelocityCommand,
};
use async_trait::async_trait;
use nav_core::action::Action;
use nav_core::geometry::Pose2;
use nav_core::time::Clock;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tracing::{info, warn};

const LOG: &str = "nav_hal::rosbridge";

/// Sends requests to the connection task; shared by [`RosbridgeHal`] and
/// [`StopHandle`].
#[derive(Debug, Clone)]
struct Commands {
    config: Arc<RosbridgeConfig>,
    shared: Arc<Shared>,
    tx: mpsc::Sender<Request>,
    /// Where the connection task runs; closed when the last handle is gone.
    _runtime: Arc<LinkRuntime>,
}

impl Commands {
    /// Longest time a request may wait: a stop burst queued ahead plus its
    /// own publishes.
    fn budget(&self) -> Duration {
        let c = &self.config;
        let n = f64::from(c.stop_repeats);
        RosbridgeConfig::secs(
            c.publish_timeout_s * (2.0 * n + 2.0) + c.stop_interval_s * 2.0 * n + c.probe_timeout_s + 0.5,
        )
    }

    async fn request(&self, what: &str, make: impl FnOnce(link::Reply) -> Request) -> Result<(), HalError> {
        self.shared.ensure_connected()?;
        let (tx, rx) = oneshot::channel();
        if self.tx.send(make(tx)).await.is_err() {
            return Err(self.shared.disconnected_error());
        }
        let budget = self.budget();
        match tokio::time::timeout(budget, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(self.shared.disconnected_error()),
            Err(_) => Err(HalError::Timeout { what: what.to_string(), after_s: budget.as_secs_f64() }),
        }
    }

    /// `Disconnected` while the link is unhealthy (nothing received for
    /// `link_quiet_s`): a frozen socket would queue the command and the
    /// server replay it, stale, when the link thaws. The first time, one
    /// zero Twist goes out instead: in a frozen socket it queues behind the
    /// last command, so a replay on the thaw ends at rest.
    async fn withhold_if_unhealthy(&self) -> Result<(), HalError> {
        self.shared.ensure_connected()?;
        let Some(error) = self.shared.link_unhealthy(self.config.link_quiet_s) else {
            self.shared.data().withholding = false;
            return Ok(());
        };
        let first = !std::mem::replace(&mut self.shared.data().withholding, true);
        if let HalError::Disconnected { reason, .. } = &error {
            self.shared.warn_limited("unhealthy", reason);
        }
        if first && self.request("zero velocity", |tx| Request::Twist(Twist::default(), tx)).await.is_ok() {
            self.record(0.0, 0.0, true);
        }
        Err(error)
    }

    fn record(&self, linear: f64, angular: f64, published: bool) {
        let at_s = self.shared.now_s();
        self.shared.data().last_command = Some(LastCommand { linear, angular, at_s, published });
    }

    async fn stop(&self) -> Result<(), HalError> {
        if self.config.dry_run {
            self.shared.ensure_connected()?;
            info!(target: LOG, "dry run: would publish {} zero Twists on {}", self.config.stop_repeats, self.config.topics.cmd_vel);
            self.record(0.0, 0.0, false);
            return Ok(());
        }
        self.cancel_nav2_goal().await;
        self.request("stop", Request::Stop).await?;
        self.record(0.0, 0.0, true);
        Ok(())
    }

    /// Before a stop: a goal Nav2 still drives is cancelled first (its
    /// controller would override the zero Twists). Best effort.
    async fn cancel_nav2_goal(&self) {
        let open = {
            let mut d = self.shared.data();
            let running = d.nav2.goal.as_ref().is_some_and(|g| g.status < GoalStatus::CANCELING);
            if running && d.goal_sent {
                if let Some(g) = &mut d.nav2.goal {
                    g.status = GoalStatus::CANCELING;
                }
            }
            running && d.goal_sent
        };
        if open {
            match self.request("cancel Nav2 goals", Request::CancelGoals).await {
                Ok(()) => self.shared.data().goal_sent = false,
                Err(e) => warn!(target: LOG, "cancelling the Nav2 goal before stopping failed: {e}"),
            }
        }
    }

    async fn say(&self, text: &str) -> Result<(), HalError> {
        self.publish_text("say", &self.config.topics.speech, text, Request::Say).await
    }

    async fn announce(&self, text: &str) -> Result<(), HalError> {
        self.publish_text("announce", &self.config.topics.say, text, Request::Announce).await
    }

    /// Publishes `text` as a `std_msgs/String` on `topic` through the
    /// request `make` builds (`what` names it in a timeout); in a dry run
    /// it is only logged.
    async fn publish_text(
        &self,
        what: &str,
        topic: &str,
        text: &str,
        make: fn(String, link::Reply) -> Request,
    ) -> Result<(), HalError> {
        if self.config.dry_run {
            self.shared.ensure_connected()?;
            info!(target: LOG, "dry run: would {what} {text:?} on {topic}");
            return Ok(());
        }
        let text = text.to_string();
        self.request(what, |tx| make(text, tx)).await
    }

    async fn emergency_stop(&self) -> Result<(), HalError> {
        self.shared.latched.store(true, Ordering::SeqCst);
        warn!(target: LOG, "emergency stop (latched until release_emergency_stop)");
        let goal_sent = std::mem::take(&mut self.shared.data().goal_sent);
        if goal_sent && !self.config.dry_run {
            if let Err(e) = self.request("cancel Nav2 goals", Request::CancelGoals).await {
                warn!(target: LOG, "cancelling Nav2 goals failed: {e}");
            }
        }
        self.stop().await
    }
}

/// A cheap clone of the HAL's stop path, for a Ctrl-C handler or a
/// watchdog task while the navigator holds the HAL itself.
///
/// It shares the HAL's connection task: stops go out in order with the
/// drive commands, never interleaved.
#[derive(Debug, Clone)]
pub struct StopHandle {
    commands: Commands,
}

impl StopHandle {
    /// Publishes the stop burst (zero Twists, repeated so one lost message
    /// does not leave the robot moving).
    pub async fn stop(&self) -> Result<(), HalError> {
        self.commands.stop().await
    }

    /// Latches the emergency stop (drive commands are refused until
    /// [`RosbridgeHal::release_emergency_stop`]), cancels any Nav2 goal
    /// this HAL sent, and publishes the stop burst.
    pub async fn emergency_stop(&self) -> Result<(), HalError> {
        self.commands.emergency_stop().await
    }

    /// True while a session with the robot is up.
    pub fn is_connected(&self) -> bool {
        self.commands.shared.is_connected()
    }
}

/// A cheap clone of the HAL's operator paths — speech and announcements
/// out (`std_msgs/String`), voice commands and the pause flag in — for
/// another task while the navigator holds the HAL itself, so the control
/// loop never waits on them.
#[derive(Debug, Clone)]
pub struct SpeechHandle {
    commands: Commands,
}

impl SpeechHandle {
    /// Publishes `text` on the speech topic; only logged in a dry run.
    pub async fn say(&self, text: &str) -> Result<(), HalError> {
        self.commands.say(text).await
    }

    /// Publishes `text` on the announcement topic (`topics.say`); only
    /// logged in a dry run.
    pub async fn announce(&self, text: &str) -> Result<(), HalError> {
        self.commands.announce(text).await
    }

    /// As [`RosbridgeHal::take_voice_commands`] (they share one queue).
    pub fn take_voice_commands(&self) -> Vec<String> {
        self.commands.shared.data().voice.drain(..).collect()
    }

    /// As [`RosbridgeHal::paused`].
    pub fn paused(&self) -> bool {
        self.commands.shared.data().paused
    }
}

/// A ROS robot (the ROSMASTER A1, or any ROS 1/2 robot) through rosbridge.
/// See the [module docs](super) for the topics, timing and safety rules.
#[derive(Debug)]
pub struct RosbridgeHal {
    commands: Commands,
    rgb_cache: Option<(f64, CameraFrame)>,
    guard: Option<Arc<dyn MotionGuard>>,
}

impl RosbridgeHal {
    /// Starts the connection task for `config.url` and returns at once; the
    /// HAL answers [`HalError::Disconnected`] until the first session is up
    /// (see [`wait_connected`](Self::wait_connected)). The connection runs
    /// on a small runtime of its own (its threads are named
    /// `navkit-rosbridge`), so the HAL works from any tokio runtime,
    /// single-threaded ones included, and keeps its timing however busy the
    /// caller's runtime is.
    pub fn start(config: RosbridgeConfig) -> Result<Self, HalError> {
        config.validate()?;
        let connector = RosbridgeConnector::new(config.url.trim(), RosbridgeConfig::secs(config.connect_timeout_s));
        Self::start_with(connector, config)
    }

    /// [`start`](Self::start) with another roslibrust backend.
    pub fn start_with<C: Connect>(connector: C, config: RosbridgeConfig) -> Result<Self, HalError> {
        config.validate()?;
        let config = Arc::new(config);
        let shared = Arc::new(Shared::new(connector.endpoint()));
        let (tx, rx) = mpsc::channel(64);
        let runtime = LinkRuntime::spawn(link::run(connector, Arc::clone(&config), Arc::clone(&shared), rx))?;
        Ok(Self {
            commands: Commands { config, shared, tx, _runtime: Arc::new(runtime) },
            rgb_cache: None,
            guard: None,
        })
    }

    /// [`start`](Self::start), then waits up to `connect_timeout_s` for the
    /// first session.
    pub async fn connect(config: RosbridgeConfig) -> Result<Self, HalError> {
        let timeout = RosbridgeConfig::secs(config.connect_timeout_s);
        let hal = Self::start(config)?;
        hal.wait_connected(timeout).await?;
        Ok(hal)
    }

    /// Waits until a session is up; `Disconnected` (with the last
    /// connection error) after `timeout`.
    pub async fn wait_connected(&self, timeout: Duration) -> Result<(), HalError> {
        let mut rx = self.commands.shared.subscribe_connected();
        match tokio::time::timeout(timeout, rx.wait_for(|c| *c)).await {
            Ok(Ok(_)) => Ok(()),
            _ => Err(self.commands.shared.disconnected_error()),
        }
    }

    /// Waits until a fresh scan and odometry have arrived (what a control
    /// loop needs before its first cycle) and, with `nav2 = "auto"`, until
    /// the Nav2 detection has answered (or the timeout has passed). A scan that arrives but is a
    /// [`HalError::SensorFault`] counts as arrived: the topics work, and
    /// the control loop holds the robot still until the LiDAR recovers.
    pub async fn wait_for_sensors(&mut self, timeout: Duration) -> Result<(), HalError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let scan = match self.scan().await {
                Err(HalError::SensorFault { .. }) => Ok(()),
                other => other.map(|_| ()),
            };
            let nav2_answered = self.commands.config.nav2 == Nav2Mode::Off
                || self.commands.config.dry_run
                || self.commands.shared.data().nav2.available.is_some();
            let last = match (scan, self.odometry().await) {
                // the sensors are there; give Nav2's detection (one service call) the same time
                (Ok(_), Ok(_)) if nav2_answered || tokio::time::Instant::now() >= deadline => return Ok(()),
                (Ok(_), Ok(_)) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
                (Err(e), _) | (_, Err(e)) => e,
            };
            if tokio::time::Instant::now() >= deadline {
                return Err(last);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Whether Nav2 is there in this session (`[rosbridge] nav2 = "auto"`):
    /// `None` until detection has answered (and with `nav2 = "off"`), else
    /// `Ok` or why not.
    pub fn nav2_status(&self) -> Option<Result<(), String>> {
        self.commands.shared.data().nav2.available.clone()
    }

    /// Installs the safety check every Twist of a discrete action passes
    /// through (`nav rosmaster` installs the safety layer's continuous
    /// guard). Without one, [`act`](Actuators::act) is refused: the HAL
    /// never drives a closed-loop motion unguarded.
    pub fn set_motion_guard(&mut self, guard: Arc<dyn MotionGuard>) {
        self.guard = Some(guard);
    }

    /// The configuration in use.
    pub fn config(&self) -> &RosbridgeConfig {
        &self.commands.config
    }

    /// The clock of every `stamp_s` this HAL returns (arrival times).
    /// Share it with the safety layer so ages are computed on one clock.
    pub fn clock(&self) -> MonotonicClock {
        self.commands.shared.clock
    }

    /// True while a session with the robot is up.
    pub fn is_connected(&self) -> bool {
        self.commands.shared.is_connected()
    }

    /// Connection state and per-topic statistics.
    pub fn link_status(&self) -> LinkStatus {
        self.commands.shared.status()
    }

    /// The newest value of the pause topic (`false` until one arrives; kept
    /// across reconnects).
    pub fn paused(&self) -> bool {
        self.commands.shared.data().paused
    }

    /// The newest velocity command issued through this HAL (in a dry run:
    /// what would have been published).
    pub fn last_command(&self) -> Option<LastCommand> {
        self.commands.shared.data().last_command
    }

    /// A handle that can stop the robot from another task.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle { commands: self.commands.clone() }
    }

    /// Publishes `text` on the speech topic (`std_msgs/String`); in a dry
    /// run it is only logged (a dry run publishes nothing).
    pub async fn say(&self, text: &str) -> Result<(), HalError> {
        self.commands.say(text).await
    }

    /// Publishes `text` on the announcement topic (`topics.say`,
    /// `std_msgs/String`); in a dry run it is only logged.
    pub async fn announce(&self, text: &str) -> Result<(), HalError> {
        self.commands.announce(text).await
    }

    /// The voice commands received on `topics.voice_command` since the
    /// last call, oldest first, as sent (cut at 1000 characters; at most
    /// the newest 32 are kept). Kept across reconnects until taken.
    pub fn take_voice_commands(&self) -> Vec<String> {
        self.commands.shared.data().voice.drain(..).collect()
    }

    /// A handle that publishes on the speech topic from another task.
    pub fn speech_handle(&self) -> SpeechHandle {
        SpeechHandle { commands: self.commands.clone() }
    }

    /// Sends a Nav2 goal on the goal topic (`/goal_pose`,
    /// `geometry_msgs/PoseStamped` in `goal_frame`). Nav2 then drives the
    /// robot and publishes `cmd_vel` itself: the caller's control loop must
    /// stop calling [`drive`](Actuators::drive) until the goal is done.
    /// Logged, not sent, in a dry run.
    pub async fn send_goal(&self, x: f64, y: f64, yaw: f64) -> Result<(), HalError> {
        for (field, v) in [("x", x), ("y", y), ("yaw", yaw)] {
            if !v.is_finite() {
                return Err(HalError::invalid_command(field, format!("must be finite, got {v}")));
            }
        }
        let c = &self.commands;
        if c.shared.is_latched() {
            return Err(latched_error("send_goal"));
        }
        if c.config.dry_run {
            c.shared.ensure_connected()?;
            info!(target: LOG, "dry run: would send Nav2 goal ({x:.2}, {y:.2}, {:.0}°) on {}", yaw.to_degrees(), c.config.topics.goal);
            return Ok(());
        }
        let goal = PoseStamped {
            header: Header { stamp: convert::time_from_s(0.0), frame_id: c.config.goal_frame.clone() },
            pose: Pose { position: Point { x, y, z: 0.0 }, orientation: Quaternion::from_yaw(yaw) },
        };
        c.request("send Nav2 goal", |tx| Request::Goal(goal, tx)).await?;
        c.shared.data().goal_sent = true;
        Ok(())
    }

    /// Cancels every Nav2 NavigateToPose goal (the action's cancel service);
    /// a goal handed over counts as cancelled from now on.
    pub async fn cancel_goals(&self) -> Result<(), HalError> {
        if self.commands.config.dry_run {
            return self.commands.shared.ensure_connected();
        }
        if let Some(goal) = &mut self.commands.shared.data().nav2.goal {
            goal.status = goal.status.max(GoalStatus::CANCELING);
        }
        self.commands.request("cancel Nav2 goals", Request::CancelGoals).await?;
        self.commands.shared.data().goal_sent = false;
        Ok(())
    }

    /// Latches the emergency stop, cancels any Nav2 goal this HAL sent and
    /// publishes the stop burst. Drive commands and goals are refused until
    /// [`release_emergency_stop`](Self::release_emergency_stop).
    pub async fn emergency_stop(&self) -> Result<(), HalError> {
        self.commands.emergency_stop().await
    }

    /// Accepts drive commands again after an emergency stop.
    pub fn release_emergency_stop(&self) {
        info!(target: LOG, "emergency stop released");
        self.commands.shared.latched.store(false, Ordering::SeqCst);
    }

    /// True while the emergency stop is latched.
    pub fn is_emergency_stopped(&self) -> bool {
        self.commands.shared.is_latched()
    }

    /// The newest sample in `slot` if fresh enough, else why not.
    fn fresh<T: Clone>(
        &self,
        topic: &str,
        limit_s: f64,
        slot: impl FnOnce(&super::state::Data) -> Option<Sample<T>>,
    ) -> Result<Sample<T>, HalError> {
        let shared = &self.commands.shared;
        shared.ensure_connected()?;
        let now = shared.now_s();
        let d = shared.data();
        match slot(&d) {
            Some(s) if now - s.received_s <= limit_s => Ok(s),
            Some(s) => Err(HalError::Stale {
                what: format!("{topic}{}", Shared::rejection_note(&d, topic)),
                age_s: now - s.received_s,
            }),
            None => Err(HalError::Stale {
                what: format!("{topic} (no message since connecting{})", Shared::rejection_note(&d, topic)),
                age_s: d.connected_at_s.map_or(0.0, |t| (now - t).max(0.0)),
            }),
        }
    }

    /// One left turn of a panorama; a blocked turn fails it.
    async fn panorama_turn(&mut self) -> Result<(), HalError> {
        let out = self.act(Action::TurnLeft).await?;
        match out.blocked {
            Some(why) => Err(HalError::invalid_command("panorama", format!("turn blocked: {why}"))),
            None => Ok(()),
        }
    }

    /// A colour image that arrived after now (the robot has stopped), within
    /// `camera_stale_s`.
    async fn fresh_frame(&mut self) -> Result<CameraFrame, HalError> {
        let since = self.commands.shared.now_s();
        let deadline = since + self.commands.config.camera_stale_s;
        loop {
            match self.rgb().await {
                Ok(f) if f.stamp_s > since => return Ok(f),
                Ok(_) | Err(HalError::Stale { .. }) if self.commands.shared.now_s() < deadline => {}
                Ok(f) => {
                    return Err(HalError::Stale {
                        what: format!("{} (no frame since the robot stopped)", self.config().topics.rgb),
                        age_s: self.commands.shared.now_s() - f.stamp_s,
                    });
                }
                Err(e) => return Err(e),
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn rejected(&self, topic: &str, e: &HalError) {
        self.commands.shared.rejected(topic, e);
    }
}

fn latched_error(what: &str) -> HalError {
    HalError::invalid_command(what, "the emergency stop is latched; call release_emergency_stop() first")
}

#[async_trait]
impl Sensors for RosbridgeHal {
    /// Velocity commands, LiDAR and the enabled cameras; discrete actions
    /// (closed-loop on odometry, `[rosbridge.steps]`) once a motion guard
    /// is installed and not in a dry run; no move-to (see
    /// [`RosbridgeHal::send_goal`]); odometry is an estimate.
    fn capabilities(&self) -> Capabilities {
        let c = &self.commands.config;
        let discrete = self.guard.is_some() && !c.dry_run;
        Capabilities {
            discrete_actions: discrete,
            step: discrete.then(|| c.steps.step_config()),
            velocity: true,
            move_to: false,
            lidar: true,
            rgb: c.rgb_enabled,
            depth: c.depth_enabled,
            panorama: discrete && c.rgb_enabled,
            detections: false,
            pose_is_ground_truth: false,
            drive: c.drive,
        }
    }

    /// The newest `/odom`, stamped with its arrival time on
    /// [`RosbridgeHal::clock`]; `Stale` past `odom_stale_s`.
    async fn odometry(&mut self) -> Result<Odometry, HalError> {
        let c = Arc::clone(&self.commands.config);
        Ok(self.fresh(&c.topics.odom, c.odom_stale_s, |d| d.odom.clone())?.value)
    }

    /// The newest `/scan` (`null` ranges read as NaN, invalid), stamped
    /// with its arrival time; `Stale` past `scan_stale_s`; `SensorFault`
    /// when fewer than `scan_min_valid_fraction` of its beams are valid.
    async fn scan(&mut self) -> Result<StampedScan, HalError> {
        let c = Arc::clone(&self.commands.config);
        let scan = self.fresh(&c.topics.scan, c.scan_stale_s, |d| d.scan.clone())?.value;
        let fault = self.commands.shared.data().scan_fault.clone();
        match fault {
            Some(message) => {
                let what = format!("LiDAR {}", c.topics.scan);
                self.commands.shared.warn_limited("scan fault", &format!("{what}: sensor fault: {message}"));
                Err(HalError::SensorFault { what, message })
            }
            None => Ok(scan),
        }
    }

    /// The newest colour image, decoded now (raw `rgb8`/`bgr8`/... or
    /// JPEG/PNG); `Stale` past `camera_stale_s`.
    async fn rgb(&mut self) -> Result<CameraFrame, HalError> {
        let c = Arc::clone(&self.commands.config);
        if !c.rgb_enabled {
            return Err(HalError::unsupported("rgb camera (rgb_enabled = false)"));
        }
        let topic = self.commands.shared.data().rgb_topic.clone().unwrap_or_else(|| c.topics.rgb.clone());
        let sample = self.fresh(&topic, c.camera_stale_s, |d| d.rgb.clone())?;
        if let Some((at, frame)) = &self.rgb_cache {
            if *at == sample.received_s {
                return Ok(frame.clone());
            }
        }
        let decoded = match sample.value.as_ref() {
            RawImage::Raw(img) => convert::rgb_from_image(img),
            RawImage::Compressed(img) => convert::rgb_from_compressed(img),
        };
        let frame = decoded.inspect_err(|e| self.rejected(&topic, e))?;
        let frame = CameraFrame { frame, hfov_rad: c.rgb_hfov_deg.to_radians(), stamp_s: sample.received_s };
        self.rgb_cache = Some((sample.received_s, frame.clone()));
        Ok(frame)
    }

    /// Turns on the spot through `views` headings with the discrete turns
    /// (`steps.turn_deg` each, so `views × turn_deg` must be 360°: 12 at
    /// 30°) and takes a colour image (and depth, when enabled) at each,
    /// waiting for a frame that arrived after the turn ended. The robot ends
    /// facing about the way it started (each turn is closed-loop; an
    /// Ackermann base drifts a few centimetres per turn). Needs the
    /// discrete actions (a motion guard, no dry run); a turn the guard
    /// blocks fails the panorama with the reason.
    async fn panorama(&mut self, views: usize) -> Result<Panorama, HalError> {
        let c = Arc::clone(&self.commands.config);
        if !c.rgb_enabled {
            return Err(HalError::unsupported("panorama (rgb_enabled = false)"));
        }
        let turn = c.steps.turn_deg;
        if views == 0 || (views as f64 * turn - 360.0).abs() > 1e-6 {
            return Err(HalError::invalid_command(
                "views",
                format!("{views} views × {turn}° turns do not make a full circle (steps.turn_deg = {turn})"),
            ));
        }
        let mut out = Vec::with_capacity(views);
        for (i, heading_rad) in Panorama::headings(views).into_iter().enumerate() {
            if i > 0 {
                self.panorama_turn().await?;
            }
            let frame = self.fresh_frame().await?;
            let depth = if c.depth_enabled { self.depth().await.ok() } else { None };
            out.push(PanoramaView { heading_rad, frame, depth, labels: None });
        }
        self.panorama_turn().await?;
        Ok(Panorama { views: out })
    }

    /// The newest depth image (`16UC1` mm → m, 0 → NaN; or `32FC1`;
    /// or `compressedDepth`); `Stale` past `camera_stale_s`.
    async fn depth(&mut self) -> Result<DepthFrame, HalError> {
        let c = Arc::clone(&self.commands.config);
        if !c.depth_enabled {
            return Err(HalError::unsupported("depth camera (depth_enabled = false)"));
        }
        let topic = self.commands.shared.data().depth_topic.clone().unwrap_or_else(|| c.topics.depth.clone());
        let sample = self.fresh(&topic, c.camera_stale_s, |d| d.depth.clone())?;
        let decoded = match sample.value.as_ref() {
            RawImage::Raw(img) => convert::depth_from_image(img, sample.received_s),
            RawImage::Compressed(img) => convert::depth_from_compressed(img, sample.received_s),
        };
        decoded.inspect_err(|e| self.rejected(&topic, e))
    }
}

#[async_trait]
impl Actuators for RosbridgeHal {
    /// Executes one discrete action as a closed-loop motion on odometry,
    /// every Twist through the installed [`MotionGuard`] (see
    /// [`set_motion_guard`](RosbridgeHal::set_motion_guard)): `forward`
    /// drives `steps.forward_m`, the turns turn `steps.turn_deg` (in place
    /// on a differential base, as a forward-then-reverse arc pair on an
    /// Ackermann base), `stop` publishes the stop burst. A guard halt ends
    /// the step early with [`StepOutcome::blocked`] and the pose reached;
    /// stale sensors, a lost link or `steps.timeout_s` stop the robot and
    /// fail. Refused without a guard, in a dry run (the robot would not
    /// move, so no step could finish) and while the emergency stop is
    /// latched.
    async fn act(&mut self, action: Action) -> Result<StepOutcome, HalError> {
        let config = Arc::clone(&self.commands.config);
        let Some(guard) = self.guard.clone() else {
            return Err(HalError::unsupported(
                "discrete actions without a motion guard (RosbridgeHal::set_motion_guard; nav rosmaster installs \
                 the safety layer's continuous guard)",
            ));
        };
        if config.dry_run && action != Action::Stop {
            return Err(HalError::invalid_command(
                "act",
                "a dry run publishes nothing, so a closed-loop step could never finish; drop --dry-run",
            ));
        }
        if self.commands.shared.is_latched() && action != Action::Stop {
            return Err(latched_error("act"));
        }
        let clock = self.commands.shared.clock;
        let now_s = move || clock.now_s();
        let ctx = super::steps::StepContext {
            config: &config.steps,
            drive: config.drive,
            max_linear_mps: config.max_linear_mps,
            guard: guard.as_ref(),
            now_s: &now_s,
        };
        let outcome = super::steps::run(self, action, &ctx).await?;
        match &outcome.blocked {
            Some(why) => warn!(target: LOG, "{} step blocked: {why}", action.as_str()),
            None => info!(target: LOG, "{} step done: moved {:.3} m", action.as_str(), outcome.moved_m),
        }
        Ok(outcome)
    }

    /// Publishes ONE Twist (clamped to `max_linear_mps` / `max_angular_rps`)
    /// and returns at once: the robot holds it until the next command, so
    /// the caller's 20 Hz control loop calls this every cycle and is the
    /// only `cmd_vel` publisher; `duration_s` is not waited for. The
    /// outcome reports zero distance and duration (read odometry for
    /// progress). In a dry run nothing is published: the command is logged
    /// and kept in [`RosbridgeHal::last_command`].
    async fn drive(&mut self, command: VelocityCommand) -> Result<MotionOutcome, HalError> {
        command.validate()?;
        let c = &self.commands;
        if c.shared.is_latched() {
            return Err(latched_error("drive"));
        }
        let linear = command.linear.clamp(-c.config.max_linear_mps, c.config.max_linear_mps);
        let angular = command.angular.clamp(-c.config.max_angular_rps, c.config.max_angular_rps);
        if linear != command.linear || angular != command.angular {
            let message = format!(
                "velocity ({:.3}, {:.3}) clamped to ({linear:.3}, {angular:.3})",
                command.linear, command.angular
            );
            c.shared.warn_limited("clamped", &message);
        }
        if !c.config.dry_run {
            c.withhold_if_unhealthy().await?;
        }
        if c.config.dry_run {
            c.shared.ensure_connected()?;
            info!(target: LOG, "dry run: would publish Twist linear.x={linear:.3} angular.z={angular:.3} on {}", c.config.topics.cmd_vel);
            c.record(linear, angular, false);
        } else {
            c.request("drive", |tx| Request::Twist(Twist::planar(linear, angular), tx)).await?;
            c.record(linear, angular, true);
        }
        Ok(MotionOutcome { distance_m: 0.0, duration_s: 0.0, collided: false, stopped_early: false })
    }

    /// Publishes the stop burst: `stop_repeats` (5) zero Twists
    /// `stop_interval_s` (20 ms) apart, after cancelling a
    /// goal Nav2 still drives. Logged only in a dry run.
    async fn stop(&mut self) -> Result<(), HalError> {
        self.commands.stop().await
    }

    /// Sends the goal to Nav2 on the goal topic (`geometry_msgs/PoseStamped`
    /// in the odometry's frame) when `[rosbridge] nav2` allows it: `on`, or
    /// `auto` with Nav2 found this session. `Unsupported` (the caller
    /// drives the path itself) with `nav2 = "off"`, when Nav2 is not found,
    /// and in a dry run (which sends no goals).
    async fn start_goal(&mut self, goal: Pose2) -> Result<(), HalError> {
        for (field, v) in [("x", goal.x), ("y", goal.y), ("yaw", goal.yaw)] {
            if !v.is_finite() {
                return Err(HalError::invalid_command(field, format!("must be finite, got {v}")));
            }
        }
        let c = &self.commands;
        if c.shared.is_latched() {
            return Err(latched_error("start_goal"));
        }
        c.shared.ensure_connected()?;
        let frame = {
            let d = c.shared.data();
            nav2_usable(&c.config, &d.nav2)?;
            if d.odom_frame.is_empty() { "odom".to_string() } else { d.odom_frame.clone() }
        };
        let msg = PoseStamped {
            header: Header { stamp: convert::time_from_s(0.0), frame_id: frame },
            pose: Pose {
                position: Point { x: goal.x, y: goal.y, z: 0.0 },
                orientation: Quaternion::from_yaw(goal.yaw),
            },
        };
        {
            let mut d = c.shared.data();
            let known = d.nav2.seen.keys().cloned().collect();
            d.nav2.goal = Some(Nav2Goal { sent_s: c.shared.now_s(), known, id: None, status: 0 });
        }
        c.request("send Nav2 goal", |tx| Request::Goal(msg, tx)).await?;
        c.shared.data().goal_sent = true;
        info!(target: LOG, "goal ({:.2}, {:.2}) handed to Nav2 on {}", goal.x, goal.y, c.config.topics.goal);
        Ok(())
    }

    /// The goal's state from Nav2's status topic: `Pending` until its id
    /// shows up (`Failed` with `not_accepted` after
    /// `nav2_accept_timeout_s`), then accepted/executing → `Active`,
    /// succeeded, aborted, cancelled.
    async fn goal_state(&mut self) -> Result<NavGoalState, HalError> {
        let c = &self.commands;
        c.shared.ensure_connected()?;
        let now = c.shared.now_s();
        let d = c.shared.data();
        let Some(goal) = &d.nav2.goal else {
            return Err(HalError::invalid_command("goal_state", "no goal was handed to Nav2"));
        };
        Ok(nav2_goal_state(goal, now, &c.config))
    }

    /// Cancels every NavigateToPose goal (Nav2's cancel service); the goal
    /// handed over counts as cancelled from now on.
    async fn cancel_goal(&mut self) -> Result<(), HalError> {
        self.cancel_goals().await?;
        if !self.commands.config.dry_run {
            info!(target: LOG, "Nav2 goal cancelled");
        }
        Ok(())
    }
}
