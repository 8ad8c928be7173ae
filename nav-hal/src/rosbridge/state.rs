//! What the connection task shares with the HAL: the newest sample of each
//! sensor (stamped on our monotonic clock when it arrived), the link state
//! and per-topic statistics.

use super::msg::action_msgs::GoalStatus;
use super::msg::sensor_msgs::{CompressedImage, Image};
use crate::HalError;
use crate::clock::MonotonicClock;
use crate::hal::{Odometry, StampedScan};
use nav_core::time::Clock;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Voice commands kept until taken; beyond it the oldest is dropped.
pub(crate) const VOICE_QUEUE: usize = 32;

/// A voice command longer than this many characters is cut (the
/// command parser bounds free text much further).
pub(crate) const VOICE_MAX_CHARS: usize = 1000;
use tokio::sync::watch;

/// A colour or depth image as it arrived (decoded on demand).
#[derive(Debug, Clone)]
pub(crate) enum RawImage {
    /// `sensor_msgs/Image`.
    Raw(Image),
    /// `sensor_msgs/CompressedImage`.
    Compressed(CompressedImage),
}

/// The newest message of a topic.
#[derive(Debug, Clone)]
pub(crate) struct Sample<T> {
    pub value: T,
    /// Arrival time on [`Shared::clock`], s.
    pub received_s: f64,
}

/// Repeated warnings of one kind are logged once at first, then as a
/// count every this many seconds.
pub(crate) const WARN_PERIOD_S: f64 = 10.0;

/// Rate-limited warnings: the first of a kind at once, then how many more
/// came, at most once per period (a stream of bad messages at 50 Hz must
/// not flood the log).
#[derive(Debug, Default)]
pub(crate) struct WarnLimiter {
    /// Per kind: when it was last logged and how many were held back since.
    kinds: BTreeMap<String, (f64, u64)>,
}

impl WarnLimiter {
    /// The text to log now for a warning of `kind` at time `now_s`, if any.
    pub fn note(&mut self, kind: &str, now_s: f64, message: &str) -> Option<String> {
        match self.kinds.get_mut(kind) {
            None => {
                self.kinds.insert(kind.to_string(), (now_s, 0));
                Some(message.to_string())
            }
            Some((last, held)) => {
                *held += 1;
                if now_s - *last < WARN_PERIOD_S {
                    return None;
                }
                let text = format!("{message} ({held} like it in the last {:.0} s)", now_s - *last);
                (*last, *held) = (now_s, 0);
                Some(text)
            }
        }
    }
}

/// Counters and the newest error of one topic.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TopicStatus {
    /// Messages accepted.
    pub received: u64,
    /// Messages that arrived but could not be used (bad header, unknown
    /// encoding, non-finite pose, ...).
    pub rejected: u64,
    /// Why the newest rejected message was rejected.
    pub last_error: Option<String>,
    /// Seconds since the newest accepted message arrived (our clock).
    pub age_s: Option<f64>,
    /// Header stamp of the newest accepted message (the robot's clock), s.
    pub header_stamp_s: Option<f64>,
    /// Bytes received on the wire, counted for the camera topics (which
    /// travel on navkit's own camera socket; 0 for the others).
    pub bytes: u64,
}

/// The state of the connection to the robot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkStatus {
    /// Where the HAL connects.
    pub endpoint: String,
    /// A session is up (subscribed and advertised).
    pub connected: bool,
    /// Seconds since the current session came up.
    pub connected_for_s: Option<f64>,
    /// Sessions established so far (a value above 1 means reconnects).
    pub sessions: u32,
    /// Why the link was last lost or could not be established.
    pub last_error: Option<String>,
    /// Round-trip time of the newest link probe, s.
    pub probe_rtt_s: Option<f64>,
    /// Per-topic statistics, by topic name.
    pub topics: BTreeMap<String, TopicStatus>,
}

/// The newest velocity command: published, or what a dry run would have
/// published.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LastCommand {
    /// Forward speed, m/s (after the HAL's speed caps).
    pub linear: f64,
    /// Yaw rate, rad/s (after the HAL's speed caps).
    pub angular: f64,
    /// When it was issued, s on [`RosbridgeHal::clock`](super::RosbridgeHal::clock).
    pub at_s: f64,
    /// False in a dry run (nothing went out).
    pub published: bool,
}

/// What the HAL knows about Nav2 (`[rosbridge] nav2`).
#[derive(Debug, Default)]
pub(crate) struct Nav2State {
    /// Whether Nav2 is there in this session: `None` until detection has
    /// answered, with the reason when it is not.
    pub available: Option<Result<(), String>>,
    /// The newest status of every goal the status topic has shown.
    pub seen: BTreeMap<Vec<u8>, i8>,
    /// The goal handed over with `start_goal`, if any.
    pub goal: Option<Nav2Goal>,
}

/// A goal sent on the goal topic. Nav2's bt_navigator turns it into a
/// NavigateToPose goal with an id of its own: the first id on the status
/// topic that was not there when the goal was sent is this goal's.
#[derive(Debug, Clone)]
pub(crate) struct Nav2Goal {
    /// When it was sent, s on the HAL's clock.
    pub sent_s: f64,
    /// The ids the status topic had shown before.
    pub known: std::collections::BTreeSet<Vec<u8>>,
    /// Its id, once seen.
    pub id: Option<Vec<u8>>,
    /// Its newest status (`action_msgs/GoalStatus`), 0 until seen.
    pub status: i8,
}

impl Nav2State {
    /// Takes in one status array: every goal's newest status, and this
    /// HAL's goal matched to its id.
    pub fn update(&mut self, list: &[(Vec<u8>, i8)]) {
        if let Some(goal) = &mut self.goal {
            if goal.id.is_none() {
                // a new id, preferably one that is running (Nav2 runs one goal at a time)
                let new = || list.iter().filter(|(id, _)| !goal.known.contains(id));
                let running = new().find(|(_, s)| matches!(*s, GoalStatus::ACCEPTED | GoalStatus::EXECUTING));
                goal.id = running.or_else(|| new().next()).map(|(id, _)| id.clone());
            }
            if let Some(status) = goal.id.as_ref().and_then(|id| list.iter().find(|(i, _)| i == id)) {
                goal.status = status.1;
            }
        }
        for (id, status) in list {
            self.seen.insert(id.clone(), *status);
        }
        // a long run must not grow this without bound: Nav2 forgets finished goals too
        while self.seen.len() > 256 {
            self.seen.pop_first();
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Data {
    pub scan: Option<Sample<StampedScan>>,
    pub odom: Option<Sample<Odometry>>,
    pub rgb: Option<Sample<Arc<RawImage>>>,
    pub depth: Option<Sample<Arc<RawImage>>>,
    pub paused: bool,
    /// Voice commands received and not yet taken (bounded: the oldest is
    /// dropped beyond [`VOICE_QUEUE`]).
    pub voice: std::collections::VecDeque<String>,
    pub last_command: Option<LastCommand>,
    pub goal_sent: bool,
    pub connected_at_s: Option<f64>,
    pub sessions: u32,
    pub last_error: Option<String>,
    pub probe_rtt_s: Option<f64>,
    /// Bumped on every loss; readers of an older session store nothing.
    pub session: u64,
    /// Why the newest scan cannot be trusted (too few valid beams).
    pub scan_fault: Option<String>,
    /// When anything (a topic message, a probe reply) last arrived.
    pub last_inbound_s: Option<f64>,
    /// Velocity commands are being withheld (the link is unhealthy).
    pub withholding: bool,
    /// Rate limits of the warnings.
    pub warnings: WarnLimiter,
    /// The colour topic this session subscribed to (transport decided).
    pub rgb_topic: Option<String>,
    /// The depth topic this session subscribed to.
    pub depth_topic: Option<String>,
    /// Nav2: detection, goal statuses, the goal handed over.
    pub nav2: Nav2State,
    /// `frame_id` of the newest odometry message (the frame of the poses
    /// the HAL reports, so of the goals handed to Nav2).
    pub odom_frame: String,
    topics: BTreeMap<String, (TopicStatus, Option<f64>)>,
}

/// State shared by the HAL handles and the connection task.
#[derive(Debug)]
pub(crate) struct Shared {
    pub clock: MonotonicClock,
    pub endpoint: String,
    pub latched: AtomicBool,
    data: Mutex<Data>,
    connected: watch::Sender<bool>,
}

impl Shared {
    pub fn new(endpoint: String) -> Self {
        Self {
            clock: MonotonicClock::new(),
            endpoint,
            latched: AtomicBool::new(false),
            data: Mutex::new(Data::default()),
            connected: watch::Sender::new(false),
        }
    }

    /// The data, even after a panic elsewhere poisoned the lock (every
    /// write leaves it consistent).
    pub fn data(&self) -> MutexGuard<'_, Data> {
        self.data.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn now_s(&self) -> f64 {
        self.clock.now_s()
    }

    pub fn is_connected(&self) -> bool {
        *self.connected.borrow()
    }

    pub fn subscribe_connected(&self) -> watch::Receiver<bool> {
        self.connected.subscribe()
    }

    pub fn disconnected_error(&self) -> HalError {
        let reason = self.data().last_error.clone().unwrap_or_else(|| "not connected yet".into());
        HalError::Disconnected { endpoint: self.endpoint.clone(), reason }
    }

    /// Fails with [`HalError::Disconnected`] unless a session is up.
    pub fn ensure_connected(&self) -> Result<(), HalError> {
        if self.is_connected() { Ok(()) } else { Err(self.disconnected_error()) }
    }

    pub fn set_connected(&self) {
        {
            let mut d = self.data();
            let now = self.now_s();
            d.connected_at_s = Some(now);
            d.last_inbound_s = Some(now);
            d.sessions += 1;
        }
        self.connected.send_replace(true);
    }

    /// Marks the link down and forgets every sensor sample, so nothing from
    /// before the loss is served as fresh after a reconnect. The pause state
    /// is kept (it is only republished when it changes).
    pub fn set_disconnected(&self, reason: String) {
        self.connected.send_replace(false);
        let mut d = self.data();
        d.session += 1;
        d.last_error = Some(reason);
        d.connected_at_s = None;
        d.scan = None;
        d.scan_fault = None;
        d.last_inbound_s = None;
        d.withholding = false;
        d.odom = None;
        d.rgb = None;
        d.depth = None;
        d.probe_rtt_s = None;
        d.nav2.available = None;
    }

    /// Counts an accepted message on `topic`.
    pub fn accepted(d: &mut Data, topic: &str, now_s: f64, header_stamp_s: f64) {
        let (st, at) = d.topics.entry(topic.to_string()).or_default();
        st.received += 1;
        st.header_stamp_s = header_stamp_s.is_finite().then_some(header_stamp_s);
        *at = Some(now_s);
        d.last_inbound_s = Some(now_s);
    }

    /// Counts `bytes` received on `topic`.
    pub fn add_bytes(d: &mut Data, topic: &str, bytes: usize) {
        let (st, _) = d.topics.entry(topic.to_string()).or_default();
        st.bytes = st.bytes.saturating_add(bytes as u64);
    }

    /// Logs a warning of `kind`, rate-limited ([`WarnLimiter`]).
    pub fn warn_limited(&self, kind: &str, message: &str) {
        let now = self.now_s();
        let text = self.data().warnings.note(kind, now, message);
        if let Some(text) = text {
            tracing::warn!(target: "nav_hal::rosbridge", "{text}");
        }
    }

    /// Seconds since anything arrived from the robot (infinite while
    /// disconnected).
    pub fn quiet_s(&self) -> f64 {
        let now = self.now_s();
        self.data().last_inbound_s.map_or(f64::INFINITY, |t| (now - t).max(0.0))
    }

    /// The error velocity commands get while nothing has arrived from the
    /// robot for more than `limit_s` (a frozen link), or `None`.
    pub fn link_unhealthy(&self, limit_s: f64) -> Option<HalError> {
        let quiet = self.quiet_s();
        (quiet > limit_s).then(|| HalError::Disconnected {
            endpoint: self.endpoint.clone(),
            reason: format!("link unhealthy: nothing received from the robot for {quiet:.2} s; velocity withheld"),
        })
    }

    /// Counts a rejected message on `topic`.
    pub fn rejected(&self, topic: &str, error: &HalError) {
        let message = format!("{topic}: {error}");
        self.warn_limited(&format!("rejected {topic}"), &format!("rejected message: {message}"));
        let now = self.now_s();
        let mut d = self.data();
        // a message arrived, even if unusable: the link itself is alive
        d.last_inbound_s = Some(now);
        let (st, _) = d.topics.entry(topic.to_string()).or_default();
        st.rejected += 1;
        st.last_error = Some(message);
    }

    /// The rejection note of a topic, for staleness messages.
    pub fn rejection_note(d: &Data, topic: &str) -> String {
        match d.topics.get(topic) {
            Some((st, _)) if st.rejected > 0 => {
                format!(" ({} rejected; last: {})", st.rejected, st.last_error.as_deref().unwrap_or("?"))
            }
            _ => String::new(),
        }
    }

    pub fn status(&self) -> LinkStatus {
        let now = self.now_s();
        let connected = self.is_connected();
        let d = self.data();
        let topics = d
            .topics
            .iter()
            .map(|(k, (st, at))| (k.clone(), TopicStatus { age_s: at.map(|t| (now - t).max(0.0)), ..st.clone() }))
            .collect();
        LinkStatus {
            endpoint: self.endpoint.clone(),
            connected,
            connected_for_s: d.connected_at_s.map(|t| (now - t).max(0.0)),
            sessions: d.sessions,
            last_error: d.last_error.clone(),
            probe_rtt_s: d.probe_rtt_s,
            topics,
        }
    }

    pub fn is_latched(&self) -> bool {
        self.latched.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_logged_first_then_counted_per_period() {
        let mut w = WarnLimiter::default();
        assert_eq!(w.note("a", 0.0, "bad").as_deref(), Some("bad"));
        assert_eq!(w.note("a", 1.0, "bad"), None);
        assert_eq!(w.note("b", 1.0, "other").as_deref(), Some("other"), "kinds are limited separately");
        assert_eq!(w.note("a", 5.0, "bad"), None);
        assert_eq!(w.note("a", 10.5, "bad").as_deref(), Some("bad (3 like it in the last 10 s)"));
        assert_eq!(w.note("a", 11.0, "bad"), None);
        let logged = (0..1000).filter(|i| w.note("c", f64::from(*i) * 0.02, "flood").is_some()).count();
        assert_eq!(logged, 2, "1000 warnings in 20 s: the first and one count");
    }
}
