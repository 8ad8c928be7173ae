//! The connection task: connects with exponential backoff, subscribes and
//! advertises, probes the link, publishes on request, and tears everything
//! down and starts over when the link is lost.
//!
//! All publishing happens here, one request at a time, so a stop burst is
//! never interleaved with a drive command. The code is generic over
//! roslibrust's [`TopicProvider`] + [`ServiceProvider`] traits; only
//! [`RosbridgeConnector`] names the rosbridge backend.

use super::config::{Nav2Mode, RosbridgeConfig, TopicsConfig};
use super::convert;
use super::images::{self, Camera, ImageRoute, ImageTransport};
use super::msg::action_msgs::{CancelGoal, CancelGoalRequest};
use super::msg::geometry_msgs::{PoseStamped, Twist};
use super::msg::nav_msgs::Odometry as OdometryMsg;
use super::msg::rosapi::{GetTime, GetTimeRequest, Topics, TopicsRequest};
use super::msg::sensor_msgs::{CompressedImage, Image, LaserScan};
use super::msg::std_msgs::{Bool, String as StringMsg};
use super::nav2;
use super::state::{RawImage, Sample, Shared};
use crate::HalError;
use crate::hal::StampedScan;
use roslibrust::{Publish, RosMessageType, RosServiceType, ServiceProvider, Subscribe, TopicProvider};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tracing::{info, warn};

const LOG: &str = "nav_hal::rosbridge";

/// How often the connection task checks, while the robot moves, whether
/// the link has gone quiet.
const QUIET_CHECK: Duration = Duration::from_millis(10);

/// Opens a connection to a ROS graph through one of roslibrust's backends.
///
/// [`RosbridgeConnector`] is the rosbridge one. Another backend (roslibrust's
/// `zenoh` feature) plugs in by implementing this trait for a type whose
/// `connect` returns that backend's client; the link probe then calls
/// [`TopicsConfig::probe_service`] through [`ServiceProvider`] (set it empty
/// where the backend has its own liveliness).
pub trait Connect: Send + Sync + 'static {
    /// The connected client.
    type Link: TopicProvider + ServiceProvider + Clone + Send + Sync + 'static;

    /// Where it connects, for messages.
    fn endpoint(&self) -> String;

    /// One connection attempt.
    fn connect(&self) -> impl Future<Output = Result<Self::Link, roslibrust::Error>> + Send;

    /// The rosbridge WebSocket URL, when the backend is rosbridge: the
    /// cameras then get a socket of their own ([`images`](super::images))
    /// with server-side throttling and CBOR/PNG compression. `None` (the
    /// default) subscribes to the cameras through [`TopicProvider`], JSON
    /// and unthrottled.
    fn websocket_url(&self) -> Option<String> {
        None
    }

    /// Calls a service (the link probe, Nav2's cancel service). The default
    /// goes through [`ServiceProvider`], which only accepts names whose
    /// every segment starts with a letter; a backend that can reach ROS 2's
    /// hidden names (`/navigate_to_pose/_action/cancel_goal`) overrides it.
    fn call<S: RosServiceType>(
        link: &Self::Link,
        service: &str,
        request: S::Request,
    ) -> impl Future<Output = Result<S::Response, roslibrust::Error>> + Send {
        let service = service.to_string();
        async move { link.call_service::<S>(service.as_str(), request).await }
    }

    /// Subscribes to a topic whose name roslibrust's [`TopicProvider`]
    /// refuses (ROS 2's hidden names, `/navigate_to_pose/_action/status`).
    /// The default goes through [`TopicProvider`]; a backend that can reach
    /// hidden names overrides it.
    fn subscribe_hidden<M: RosMessageType>(
        link: &Self::Link,
        topic: &str,
    ) -> impl Future<Output = Result<<Self::Link as TopicProvider>::Subscriber<M>, roslibrust::Error>> + Send {
        let topic = topic.to_string();
        async move { link.subscribe::<M>(topic.as_str()).await }
    }
}

/// Connects to rosbridge_server over WebSocket (`ws://HOST:9090`).
#[derive(Debug, Clone)]
pub struct RosbridgeConnector {
    url: String,
    timeout: Duration,
}

impl RosbridgeConnector {
    /// A connector for `url`; `timeout` bounds the connection attempt and
    /// every subscribe and service call of the client.
    pub fn new(url: impl Into<String>, timeout: Duration) -> Self {
        Self { url: url.into(), timeout }
    }
}

impl Connect for RosbridgeConnector {
    type Link = roslibrust::rosbridge::ClientHandle;

    fn endpoint(&self) -> String {
        self.url.clone()
    }

    fn websocket_url(&self) -> Option<String> {
        Some(self.url.clone())
    }

    async fn connect(&self) -> Result<Self::Link, roslibrust::Error> {
        let opts = roslibrust::rosbridge::ClientHandleOptions::new(self.url.clone()).timeout(self.timeout);
        roslibrust::rosbridge::ClientHandle::new_with_options(opts).await
    }

    /// rosbridge takes any name the server knows (no client-side check).
    async fn call<S: RosServiceType>(
        link: &Self::Link,
        service: &str,
        request: S::Request,
    ) -> Result<S::Response, roslibrust::Error> {
        link.call_service::<S>(service, request).await
    }

    /// rosbridge takes any topic the graph has (no client-side check).
    async fn subscribe_hidden<M: RosMessageType>(
        link: &Self::Link,
        topic: &str,
    ) -> Result<roslibrust::rosbridge::Subscriber<M>, roslibrust::Error> {
        link.subscribe::<M>(topic).await
    }
}

/// A reply channel for a request.
pub(crate) type Reply = oneshot::Sender<Result<(), HalError>>;

/// What the HAL asks the connection task to publish.
#[derive(Debug)]
pub(crate) enum Request {
    /// One Twist on `cmd_vel`.
    Twist(Twist, Reply),
    /// The stop burst: `stop_repeats` zero Twists, `stop_interval_s` apart.
    Stop(Reply),
    /// A `std_msgs/String` on the speech topic.
    Say(String, Reply),
    /// A `std_msgs/String` on the announcement topic.
    Announce(String, Reply),
    /// A Nav2 goal.
    Goal(PoseStamped, Reply),
    /// Cancel every Nav2 goal.
    CancelGoals(Reply),
}

impl Request {
    fn reply(self, result: Result<(), HalError>) {
        let tx = match self {
            Request::Twist(_, tx) | Request::Stop(tx) | Request::Say(_, tx) | Request::Announce(_, tx) => tx,
            Request::Goal(_, tx) => tx,
            Request::CancelGoals(tx) => tx,
        };
        // The caller may have given up waiting; nothing to do then.
        let _ = tx.send(result);
    }
}

/// Exponential backoff: `initial`, doubling up to `max`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Backoff {
    initial: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self { initial, max, next: initial }
    }

    /// The delay to wait now; the next one doubles.
    pub fn step(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(self.max);
        d
    }

    pub fn reset(&mut self) {
        self.next = self.initial;
    }
}

/// Why a session ended.
enum End {
    /// Every HAL handle is gone.
    Closed,
    /// The link failed.
    Lost(String),
}

/// Runs until every HAL handle is dropped.
pub(crate) async fn run<C: Connect>(
    connector: C,
    config: Arc<RosbridgeConfig>,
    shared: Arc<Shared>,
    mut requests: mpsc::Receiver<Request>,
) {
    let mut backoff =
        Backoff::new(RosbridgeConfig::secs(config.reconnect_initial_s), RosbridgeConfig::secs(config.reconnect_max_s));
    let mut had_session = false;
    loop {
        let attempt = {
            let connect = tokio::time::timeout(RosbridgeConfig::secs(config.connect_timeout_s), async {
                let link = connector.connect().await.map_err(|e| format!("connect failed: {}", describe(&e)))?;
                Session::<C>::open(link, connector.websocket_url(), &config, &shared).await
            });
            tokio::pin!(connect);
            loop {
                tokio::select! {
                    res = &mut connect => break res,
                    req = requests.recv() => match req {
                        Some(req) => req.reply(Err(shared.disconnected_error())),
                        None => return,
                    },
                }
            }
        };
        let mut session = match attempt {
            Ok(Ok(session)) => session,
            Ok(Err(reason)) => {
                if !wait_backoff(&shared, &mut backoff, reason, &mut requests).await {
                    return;
                }
                continue;
            }
            Err(_) => {
                let reason = format!("no connection within {:.1} s", config.connect_timeout_s);
                if !wait_backoff(&shared, &mut backoff, reason, &mut requests).await {
                    return;
                }
                continue;
            }
        };
        backoff.reset();
        shared.set_connected();
        info!(target: LOG, "connected to {}", shared.endpoint);
        if had_session && !config.dry_run && std::mem::take(&mut shared.data().goal_sent) {
            // Nav2 may still drive a goal navkit could not follow while the link was down.
            if let Err(e) = session.cancel_goals(&config).await {
                warn!(target: LOG, "cancelling Nav2 goals after reconnect failed: {e}");
            }
        }
        if had_session && !config.dry_run {
            // The base may still hold the last Twist from before the loss.
            if let Err(e) = session.stop_burst(&config).await {
                warn!(target: LOG, "stop after reconnect failed: {e}");
            }
        }
        had_session = true;
        match session.serve(&config, &shared, &mut requests).await {
            End::Closed => {
                if !config.dry_run {
                    // Best effort: every handle was dropped, stop the robot.
                    let _ = session.stop_burst(&config).await;
                }
                return;
            }
            End::Lost(reason) => {
                warn!(target: LOG, "link to {} lost: {reason}", shared.endpoint);
                // First: calls fail fast and this session's readers store nothing more.
                shared.set_disconnected(reason.clone());
                if !config.dry_run {
                    // Best effort: a half-open link may still carry it.
                    let _ = session.stop_burst(&config).await;
                }
                drop(session);
                if !wait_backoff(&shared, &mut backoff, reason, &mut requests).await {
                    return;
                }
            }
        }
    }
}

/// Waits one backoff step, answering requests with `Disconnected`. False
/// when every HAL handle is gone.
async fn wait_backoff(
    shared: &Shared,
    backoff: &mut Backoff,
    reason: String,
    requests: &mut mpsc::Receiver<Request>,
) -> bool {
    let delay = backoff.step();
    warn!(target: LOG, "{}: {reason}; retrying in {:.1} s", shared.endpoint, delay.as_secs_f64());
    shared.set_disconnected(reason);
    let sleep = tokio::time::sleep(delay);
    tokio::pin!(sleep);
    loop {
        tokio::select! {
            _ = &mut sleep => return true,
            req = requests.recv() => match req {
                Some(req) => req.reply(Err(shared.disconnected_error())),
                None => return false,
            },
        }
    }
}

/// One connected session: the client, its publishers and the reader tasks.
struct Session<C: Connect> {
    // Publishers first: they unadvertise (through the client) when dropped.
    cmd_vel: Option<<C::Link as TopicProvider>::Publisher<Twist>>,
    speech: <C::Link as TopicProvider>::Publisher<StringMsg>,
    say: <C::Link as TopicProvider>::Publisher<StringMsg>,
    goal: Option<<C::Link as TopicProvider>::Publisher<PoseStamped>>,
    readers: JoinSet<String>,
    link: C::Link,
    /// The newest Twist published on `cmd_vel` moves the robot.
    moving: bool,
}

fn link_error(what: &str, e: roslibrust::Error) -> String {
    format!("{what}: {}", describe(&e))
}

/// A roslibrust error in words for a user: no debug renderings of inner
/// values (roslibrust's timeout reads "Operation timed out: Elapsed(())").
pub(crate) fn describe(e: &roslibrust::Error) -> String {
    use roslibrust::Error as E;
    match e {
        E::Disconnected => "no connection to the rosbridge server".into(),
        E::Timeout(_) => "timed out".into(),
        E::IoError(io) => io.to_string(),
        E::ServerError(m) => format!("the rosbridge server reported an error: {m}"),
        E::SerializationError(m) => format!("a message could not be decoded: {m}"),
        E::InvalidName(m) => format!("not a valid ROS name: {m}"),
        other => other.to_string(),
    }
}

impl<C: Connect> Session<C> {
    /// Subscribes to every sensor topic and advertises the publishers
    /// (`cmd_vel` and the goal topic only outside a dry run).
    async fn open(
        link: C::Link,
        websocket_url: Option<String>,
        config: &RosbridgeConfig,
        shared: &Arc<Shared>,
    ) -> Result<Self, String> {
        let t: &TopicsConfig = &config.topics;
        let mut readers = JoinSet::new();
        let yaw_offset = config.scan_yaw_offset_deg.to_radians();
        let min_valid = config.scan_min_valid_fraction;
        spawn_reader::<C::Link, LaserScan, _>(&link, &t.scan, shared, &mut readers, move |msg, now| {
            let scan = convert::scan_from_msg(&msg, yaw_offset)?;
            let fault = convert::scan_fault(&scan, min_valid);
            let header_s = convert::stamp_s(&msg.header);
            Ok((
                header_s,
                Box::new(move |d: &mut super::state::Data| {
                    d.scan = Some(Sample { value: StampedScan { scan, stamp_s: now }, received_s: now });
                    d.scan_fault = fault;
                }),
            ))
        })
        .await?;
        spawn_reader::<C::Link, OdometryMsg, _>(&link, &t.odom, shared, &mut readers, |msg, now| {
            let odom = convert::odometry_from_msg(&msg, now)?;
            let header_s = convert::stamp_s(&msg.header);
            let frame = msg.header.frame_id;
            Ok((
                header_s,
                Box::new(move |d: &mut super::state::Data| {
                    d.odom = Some(Sample { value: odom, received_s: now });
                    if d.odom_frame != frame {
                        d.odom_frame = frame;
                    }
                }),
            ))
        })
        .await?;
        open_cameras::<C>(&link, websocket_url, config, shared, &mut readers).await?;
        spawn_reader::<C::Link, Bool, _>(&link, &t.pause, shared, &mut readers, |msg, _now| {
            Ok((f64::NAN, Box::new(move |d: &mut super::state::Data| d.paused = msg.data)))
        })
        .await?;
        spawn_reader::<C::Link, StringMsg, _>(&link, &t.voice_command, shared, &mut readers, |msg, _now| {
            let text: String = msg.data.chars().take(super::state::VOICE_MAX_CHARS).collect();
            Ok((
                f64::NAN,
                Box::new(move |d: &mut super::state::Data| {
                    if d.voice.len() >= super::state::VOICE_QUEUE {
                        d.voice.pop_front();
                    }
                    d.voice.push_back(text);
                }),
            ))
        })
        .await?;
        if config.nav2 != Nav2Mode::Off {
            readers.spawn(nav2::nav2_task::<C>(link.clone(), nav2::Nav2Watch::new(config), Arc::clone(shared)));
        }
        let speech = link.advertise::<StringMsg>(t.speech.as_str()).await.map_err(|e| link_error(&t.speech, e))?;
        let say = link.advertise::<StringMsg>(t.say.as_str()).await.map_err(|e| link_error(&t.say, e))?;
        let (cmd_vel, goal) = if config.dry_run {
            (None, None)
        } else {
            let cmd = link.advertise::<Twist>(t.cmd_vel.as_str()).await.map_err(|e| link_error(&t.cmd_vel, e))?;
            let goal = link.advertise::<PoseStamped>(t.goal.as_str()).await.map_err(|e| link_error(&t.goal, e))?;
            (Some(cmd), Some(goal))
        };
        Ok(Self { cmd_vel, speech, say, goal, readers, link, moving: false })
    }

    /// Publishes requests and probes the link until it fails or every
    /// handle is gone.
    async fn serve(
        &mut self,
        config: &RosbridgeConfig,
        shared: &Arc<Shared>,
        requests: &mut mpsc::Receiver<Request>,
    ) -> End {
        let probing = !config.topics.probe_service.is_empty();
        let mut tick = tokio::time::interval(RosbridgeConfig::secs(config.probe_interval_s));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut probe: Option<tokio::task::JoinHandle<Result<f64, String>>> = None;
        let mut quiet_tick = tokio::time::interval(QUIET_CHECK);
        quiet_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = quiet_tick.tick(), if self.moving => {
                    if let Err(reason) = self.zero_if_quiet(config, shared).await {
                        return End::Lost(reason);
                    }
                }
                req = requests.recv() => {
                    let Some(req) = req else { return End::Closed };
                    if let Err(reason) = self.handle(req, config, shared).await {
                        return End::Lost(reason);
                    }
                }
                _ = tick.tick(), if probing && probe.is_none() => {
                    probe = Some(tokio::spawn(probe_link::<C>(self.link.clone(), config.topics.probe_service.clone(),
                        RosbridgeConfig::secs(config.probe_timeout_s))));
                }
                res = async { match probe.as_mut() { Some(p) => p.await, None => std::future::pending().await } } => {
                    probe = None;
                    match res {
                        Ok(Ok(rtt)) => {
                            let now = shared.now_s();
                            let mut d = shared.data();
                            d.probe_rtt_s = Some(rtt);
                            d.last_inbound_s = Some(now);
                        }
                        Ok(Err(reason)) => return End::Lost(reason),
                        Err(_) => return End::Lost("the link probe task ended unexpectedly".into()),
                    }
                }
                Some(ended) = self.readers.join_next() => {
                    let reason = match ended { Ok(reason) => reason, Err(_) => "a subscription task ended unexpectedly".into() };
                    return End::Lost(reason);
                }
            }
        }
    }

    /// Executes one request. An `Err` means the link is lost (the request
    /// was answered already).
    async fn handle(&mut self, req: Request, config: &RosbridgeConfig, shared: &Shared) -> Result<(), String> {
        let timeout = RosbridgeConfig::secs(config.publish_timeout_s);
        // Outer error: the link is lost; inner error: this request failed.
        let outcome: Result<Result<(), HalError>, String> = match &req {
            Request::Twist(twist, _) => self.twist(twist, config, shared).await,
            Request::Stop(_) => self.stop_burst(config).await.map(Ok),
            Request::Say(text, _) => {
                publish(&self.speech, &StringMsg { data: text.clone() }, timeout, &config.topics.speech).await.map(Ok)
            }
            Request::Announce(text, _) => {
                publish(&self.say, &StringMsg { data: text.clone() }, timeout, &config.topics.say).await.map(Ok)
            }
            Request::Goal(goal, _) => match &self.goal {
                Some(p) => publish(p, goal, timeout, &config.topics.goal).await.map(Ok),
                None => Ok(Ok(())),
            },
            Request::CancelGoals(_) => self.cancel_goals(config).await,
        };
        match outcome {
            Ok(result) => {
                req.reply(result);
                Ok(())
            }
            Err(reason) => {
                req.reply(Err(HalError::Disconnected { endpoint: shared.endpoint.clone(), reason: reason.clone() }));
                Err(reason)
            }
        }
    }

    /// Publishes one Twist, unless it moves the robot while the link is
    /// quiet (nothing received for `link_quiet_s`): then nothing goes out
    /// and the request fails. The check is made here, where the Twists are
    /// written, so nothing that moves can follow the zero Twist
    /// [`zero_if_quiet`](Self::zero_if_quiet) queued.
    async fn twist(
        &mut self,
        twist: &Twist,
        config: &RosbridgeConfig,
        shared: &Shared,
    ) -> Result<Result<(), HalError>, String> {
        let Some(p) = &self.cmd_vel else { return Ok(Ok(())) };
        let moving = twist.linear.x != 0.0 || twist.angular.z != 0.0;
        if let Some(error) = shared.link_unhealthy(config.link_quiet_s).filter(|_| moving) {
            return Ok(Err(error));
        }
        publish(p, twist, RosbridgeConfig::secs(config.publish_timeout_s), &config.topics.cmd_vel).await?;
        self.moving = moving;
        Ok(Ok(()))
    }

    /// The moment the link goes quiet (nothing received for
    /// `link_quiet_s`) with the robot moving, one zero Twist goes out: in a
    /// frozen socket it waits right behind the last command, so when the
    /// link thaws and the server replays what was queued, the replay ends
    /// at rest within milliseconds instead of holding the stale motion.
    async fn zero_if_quiet(&mut self, config: &RosbridgeConfig, shared: &Shared) -> Result<(), String> {
        if shared.quiet_s() <= config.link_quiet_s {
            return Ok(());
        }
        if let Some(p) = &self.cmd_vel {
            let timeout = RosbridgeConfig::secs(config.publish_timeout_s);
            publish(p, &Twist::default(), timeout, &config.topics.cmd_vel).await?;
        }
        self.moving = false;
        shared.data().withholding = true;
        let message = format!(
            "link quiet for {:.2} s while moving: zero velocity queued behind the last command; velocity withheld \
             until data flows",
            shared.quiet_s()
        );
        shared.warn_limited("quiet while moving", &message);
        Ok(())
    }

    /// Cancels every NavigateToPose goal through Nav2's cancel service.
    /// Outer error: the link is lost; inner error: the server refused.
    async fn cancel_goals(&self, config: &RosbridgeConfig) -> Result<Result<(), HalError>, String> {
        let service = config.topics.nav2_cancel_service.clone();
        let call = C::call::<CancelGoal>(&self.link, &service, CancelGoalRequest::all());
        match tokio::time::timeout(RosbridgeConfig::secs(config.probe_timeout_s), call).await {
            Ok(Ok(_)) => Ok(Ok(())),
            Ok(Err(roslibrust::Error::ServerError(m))) => {
                Ok(Err(HalError::Protocol { message: format!("{service}: {m}") }))
            }
            Ok(Err(e)) => Err(link_error(&service, e)),
            Err(_) => Err(format!("{service}: no reply within {:.1} s", config.probe_timeout_s)),
        }
    }

    /// `stop_repeats` zero Twists, `stop_interval_s` apart.
    /// Nothing in a dry run.
    async fn stop_burst(&mut self, config: &RosbridgeConfig) -> Result<(), String> {
        self.moving = false;
        let Some(p) = &self.cmd_vel else { return Ok(()) };
        let zero = Twist::default();
        let timeout = RosbridgeConfig::secs(config.publish_timeout_s);
        for i in 0..config.stop_repeats {
            if i > 0 {
                tokio::time::sleep(RosbridgeConfig::secs(config.stop_interval_s)).await;
            }
            publish(p, &zero, timeout, &config.topics.cmd_vel).await?;
        }
        Ok(())
    }
}

/// Publishes with a deadline; errors say the link is lost.
async fn publish<P: Publish<T>, T: RosMessageType>(
    p: &P,
    msg: &T,
    timeout: Duration,
    topic: &str,
) -> Result<(), String> {
    match tokio::time::timeout(timeout, p.publish(msg)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(link_error(&format!("publish on {topic}"), e)),
        Err(_) => Err(format!("publish on {topic} took longer than {:.2} s", timeout.as_secs_f64())),
    }
}

/// One round trip through the server. Any reply, even an error for an
/// unknown service, proves the link; silence or a transport error does not.
async fn probe_link<C: Connect>(link: C::Link, service: String, timeout: Duration) -> Result<f64, String> {
    let start = std::time::Instant::now();
    match tokio::time::timeout(timeout, C::call::<GetTime>(&link, &service, GetTimeRequest {})).await {
        Ok(Ok(_)) | Ok(Err(roslibrust::Error::ServerError(_))) | Ok(Err(roslibrust::Error::SerializationError(_))) => {
            Ok(start.elapsed().as_secs_f64())
        }
        Ok(Err(e)) => Err(link_error("link probe", e)),
        Err(_) => Err(format!("link probe: no reply from {service} within {:.1} s", timeout.as_secs_f64())),
    }
}

/// Decides each enabled camera's transport (asking rosapi which topics
/// exist when a transport is `auto`) and subscribes: on a camera socket of
/// its own when the backend is rosbridge, else through [`TopicProvider`].
async fn open_cameras<C: Connect>(
    link: &C::Link,
    websocket_url: Option<String>,
    config: &RosbridgeConfig,
    shared: &Arc<Shared>,
    readers: &mut JoinSet<String>,
) -> Result<(), String> {
    let t = &config.topics;
    let mut wanted = Vec::new();
    if config.rgb_enabled {
        wanted.push((Camera::Rgb, t.rgb.as_str(), config.rgb_transport));
    }
    if config.depth_enabled {
        wanted.push((Camera::Depth, t.depth.as_str(), config.depth_transport));
    }
    let available = if wanted.iter().any(|(_, _, tr)| *tr == ImageTransport::Auto) {
        list_topics::<C>(link, &t.topics_service, RosbridgeConfig::secs(config.probe_timeout_s.max(1.0)), shared).await
    } else {
        None
    };
    let routes: Vec<ImageRoute> =
        wanted.into_iter().map(|(cam, base, tr)| ImageRoute::resolve(cam, base, tr, available.as_ref())).collect();
    {
        let mut d = shared.data();
        let topic_of = |cam| routes.iter().find(|r| r.camera == cam).map(|r| r.topic.clone());
        d.rgb_topic = topic_of(Camera::Rgb);
        d.depth_topic = topic_of(Camera::Depth);
    }
    if routes.is_empty() {
        return Ok(());
    }
    if let Some(url) = websocket_url {
        let timeout = RosbridgeConfig::secs(config.connect_timeout_s);
        return images::open(&url, timeout, routes, config.image_rate_hz, shared, readers).await;
    }
    for route in routes {
        info!(target: LOG, "camera: {} (unthrottled: the backend has no rosbridge WebSocket)", route.describe());
        let slot = route.camera;
        let store = move |d: &mut super::state::Data, image: RawImage, now: f64| {
            let sample = Some(Sample { value: Arc::new(image), received_s: now });
            match slot {
                Camera::Rgb => d.rgb = sample,
                Camera::Depth => d.depth = sample,
            }
        };
        if route.compressed_msg {
            spawn_reader::<C::Link, CompressedImage, _>(link, &route.topic, shared, readers, move |msg, now| {
                let header_s = convert::stamp_s(&msg.header);
                Ok((header_s, Box::new(move |d: &mut super::state::Data| store(d, RawImage::Compressed(msg), now))))
            })
            .await?;
        } else {
            spawn_reader::<C::Link, Image, _>(link, &route.topic, shared, readers, move |msg, now| {
                let header_s = convert::stamp_s(&msg.header);
                Ok((header_s, Box::new(move |d: &mut super::state::Data| store(d, RawImage::Raw(msg), now))))
            })
            .await?;
        }
    }
    Ok(())
}

/// rosapi's topic list (name → type) from `service`, or `None` (logged)
/// when rosapi does not answer within `timeout`.
async fn list_topics<C: Connect>(
    link: &C::Link,
    service: &str,
    timeout: Duration,
    shared: &Shared,
) -> Option<std::collections::BTreeMap<String, String>> {
    let call = C::call::<Topics>(link, service, TopicsRequest {});
    let why = match tokio::time::timeout(timeout, call).await {
        Ok(Ok(r)) => return Some(r.topics.into_iter().zip(r.types).collect()),
        Ok(Err(e)) => describe(&e),
        Err(_) => format!("no reply within {:.1} s", timeout.as_secs_f64()),
    };
    shared.warn_limited(
        "rosapi topics",
        &format!("{service}: {why}; cameras with transport auto use the raw topic as CBOR"),
    );
    None
}

/// Stores a converted message in the shared data.
type Store = Box<dyn FnOnce(&mut super::state::Data) + Send>;

/// Subscribes to `topic` and spawns a task that converts each message with
/// `convert` (returning its header stamp and how to store it) or counts it
/// as rejected. The task ends (returning why) only if the subscription
/// fails.
async fn spawn_reader<L, M, F>(
    link: &L,
    topic: &str,
    shared: &Arc<Shared>,
    readers: &mut JoinSet<String>,
    convert: F,
) -> Result<(), String>
where
    L: TopicProvider,
    M: RosMessageType,
    F: Fn(M, f64) -> Result<(f64, Store), HalError> + Send + 'static,
{
    let mut sub = link.subscribe::<M>(topic).await.map_err(|e| link_error(&format!("subscribe {topic}"), e))?;
    let session = shared.data().session;
    let shared = Arc::clone(shared);
    let topic = topic.to_string();
    readers.spawn(async move {
        loop {
            match sub.next().await {
                Ok(msg) => {
                    let now = shared.now_s();
                    match convert(msg, now) {
                        Ok((header_s, store)) => {
                            let mut d = shared.data();
                            if d.session != session {
                                // The link was declared lost: nothing from it is served.
                                return format!("session of {topic} ended");
                            }
                            store(&mut d);
                            Shared::accepted(&mut d, &topic, now, header_s);
                        }
                        Err(e) => shared.rejected(&topic, &e),
                    }
                }
                Err(e) => return link_error(&format!("subscription {topic}"), e),
            }
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_the_cap_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(500));
        let steps: Vec<u128> = (0..5).map(|_| b.step().as_millis()).collect();
        assert_eq!(steps, vec![100, 200, 400, 500, 500]);
        b.reset();
        assert_eq!(b.step().as_millis(), 100);
    }
}
