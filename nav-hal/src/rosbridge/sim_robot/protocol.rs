//! The rosbridge v2 protocol side of the simulated robot: connections, the client
//! operations, `service_response` and `status` replies.

use super::{PeerShared, ReceivedMessage};
use crate::rosbridge::images;
use crate::rosbridge::msg::builtin_interfaces::Time;
use crate::rosbridge::msg::geometry_msgs::Twist;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::Message;

/// Outgoing queue per connection; a slow client loses messages beyond this,
/// as with rosbridge's `queue_length`.
const QUEUE: usize = 512;

/// rosbridge's `compression` of a subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compression {
    None,
    Png,
    Cbor,
}

/// How a connection subscribed to a topic.
#[derive(Debug, Clone)]
struct SubOpts {
    compression: Compression,
    /// `throttle_rate`, s: at most one message per period.
    throttle_s: f64,
    last_sent_s: Option<f64>,
}

#[derive(Debug)]
struct Conn {
    id: u64,
    subs: HashMap<String, SubOpts>,
    tx: mpsc::Sender<Message>,
}

/// One message to publish: its JSON body, and for images the CBOR frame
/// (the typed message, `uint8[]` as bytes, as rosbridge encodes it).
#[derive(Debug, Clone, Default)]
pub(crate) struct Outgoing {
    pub topic: String,
    pub msg: Value,
    pub cbor: Option<Vec<u8>>,
    /// Send broken frames ([`ImageCorruption::Frames`]): a `png` message
    /// that holds no PNG, a truncated CBOR frame, truncated JSON.
    pub broken_frame: bool,
}

/// The open connections.
#[derive(Debug)]
pub(crate) struct Connections {
    list: Mutex<Vec<Conn>>,
    next_id: AtomicU64,
    kill: watch::Sender<u64>,
}

impl Default for Connections {
    fn default() -> Self {
        Self { list: Mutex::new(Vec::new()), next_id: AtomicU64::new(1), kill: watch::Sender::new(0) }
    }
}

impl Connections {
    fn list(&self) -> MutexGuard<'_, Vec<Conn>> {
        self.list.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn len(&self) -> usize {
        self.list().len()
    }

    pub fn drop_all(&self) {
        self.kill.send_modify(|g| *g += 1);
        self.list().clear();
    }

    pub fn has_subscriber(&self, topic: &str) -> bool {
        self.list().iter().any(|c| c.subs.contains_key(topic))
    }

    /// True when a connection subscribed to `topic` with CBOR compression.
    pub fn wants_cbor(&self, topic: &str) -> bool {
        self.list().iter().any(|c| c.subs.get(topic).is_some_and(|o| o.compression == Compression::Cbor))
    }

    /// Sends `msg` on `topic` to every subscribed connection (nothing while
    /// the peer is silent).
    pub fn publish(&self, shared: &PeerShared, topic: &str, msg: &Value) {
        let out = Outgoing { topic: topic.to_string(), msg: msg.clone(), ..Outgoing::default() };
        self.publish_outgoing(shared, &out);
    }

    /// Sends `out` to every subscriber, as each asked (`compression`,
    /// `throttle_rate`), encoding each form once.
    pub fn publish_outgoing(&self, shared: &PeerShared, out: &Outgoing) {
        if shared.silent.load(Ordering::SeqCst) {
            return;
        }
        let now = shared.now_s();
        let mut list = self.list();
        let mut forms: HashMap<&str, Option<Message>> = HashMap::new();
        for c in list.iter_mut() {
            let Some(opts) = c.subs.get_mut(&out.topic) else { continue };
            if opts.last_sent_s.is_some_and(|last| now - last < opts.throttle_s) {
                continue;
            }
            let key = match opts.compression {
                Compression::None => "none",
                Compression::Png => "png",
                Compression::Cbor => "cbor",
            };
            let form = forms.entry(key).or_insert_with(|| encode(out, opts.compression));
            // A full queue drops the message, like a slow rosbridge client.
            if let Some(m) = form {
                if c.tx.try_send(m.clone()).is_ok() {
                    opts.last_sent_s = Some(now);
                }
            }
        }
    }

    fn send_to(&self, shared: &PeerShared, id: u64, value: Value) {
        if shared.silent.load(Ordering::SeqCst) {
            return;
        }
        if let Some(c) = self.list().iter().find(|c| c.id == id) {
            let _ = c.tx.try_send(Message::text(value.to_string()));
        }
    }

    fn with_conn(&self, id: u64, f: impl FnOnce(&mut Conn)) {
        if let Some(c) = self.list().iter_mut().find(|c| c.id == id) {
            f(c);
        }
    }

    fn remove(&self, id: u64) {
        self.list().retain(|c| c.id != id);
    }
}

/// `out` as a subscriber with `compression` receives it.
fn encode(out: &Outgoing, compression: Compression) -> Option<Message> {
    let text = || json!({ "op": "publish", "topic": out.topic, "msg": out.msg }).to_string();
    match compression {
        Compression::None if out.broken_frame => {
            let t = text();
            Some(Message::text(t[..t.len() / 2].to_string()))
        }
        Compression::None => Some(Message::text(text())),
        Compression::Png if out.broken_frame => {
            Some(Message::text(json!({ "op": "png", "data": "bm90IGEgUE5H" }).to_string()))
        }
        Compression::Png => images::png_wrap(&text()).ok().map(Message::text),
        Compression::Cbor => {
            let mut bytes = match &out.cbor {
                Some(b) => b.clone(),
                None => images::cbor_publish(&out.topic, &out.msg).ok()?,
            };
            if out.broken_frame {
                bytes.truncate(bytes.len() / 2);
            }
            Some(Message::binary(bytes))
        }
    }
}

/// Accepts connections until the peer is dropped.
pub(crate) async fn accept_loop(listener: TcpListener, shared: Arc<PeerShared>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // out of file descriptors, say: wait instead of spinning
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            continue;
        };
        if !shared.accepting.load(Ordering::SeqCst) {
            drop(stream);
            continue;
        }
        tokio::spawn(serve(stream, Arc::clone(&shared)));
    }
}

async fn serve(stream: TcpStream, shared: Arc<PeerShared>) {
    let Ok(ws) = tokio_tungstenite::accept_async(stream).await else { return };
    let (mut sink, mut source) = ws.split();
    let (tx, mut rx) = mpsc::channel::<Message>(QUEUE);
    let mut kill = shared.conns.kill.subscribe();
    kill.mark_unchanged();
    let mut frozen = shared.frozen.subscribe();
    let id = shared.conns.next_id.fetch_add(1, Ordering::SeqCst);
    shared.conns.list().push(Conn { id, subs: HashMap::new(), tx });
    loop {
        if *frozen.borrow_and_update() {
            // a frozen link: nothing is read or written; the client's
            // messages wait in the socket and are handled on the thaw
            tokio::select! {
                _ = frozen.changed() => continue,
                _ = kill.changed() => break,
            }
        }
        // biased: what the client sent is read before anything is written, so after a thaw every queued
        // message is handled (as rosbridge_server replays them) even when writing to the client fails
        tokio::select! {
            biased;
            _ = frozen.changed() => continue,
            incoming = source.next() => match incoming {
                Some(Ok(Message::Text(text))) => handle(&shared, id, text.as_str()),
                Some(Ok(Message::Binary(_))) => {
                    status(&shared, id, "error", "binary frames (BSON/CBOR) are not supported by navkit's simulated robot", None);
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            },
            out = rx.recv() => match out {
                Some(message) => if sink.send(message).await.is_err() { break },
                None => break,
            },
            _ = kill.changed() => break,
        }
    }
    shared.conns.remove(id);
}

fn status(shared: &PeerShared, id: u64, level: &str, msg: &str, op_id: Option<&Value>) {
    let mut v = json!({ "op": "status", "level": level, "msg": msg });
    if let Some(op_id) = op_id {
        v["id"] = op_id.clone();
    }
    shared.conns.send_to(shared, id, v);
}

/// Handles one client message.
fn handle(shared: &PeerShared, id: u64, text: &str) {
    let value: Value = match serde_json::from_str(text) {
        Ok(v @ Value::Object(_)) => v,
        other => {
            let raw = Value::String(text.to_string());
            shared.record(ReceivedMessage { at_s: shared.now_s(), connection: id, op: "?".into(), topic: None, raw });
            let msg = match other {
                Err(e) => format!("invalid JSON: {e}"),
                Ok(_) => "message is not a JSON object".to_string(),
            };
            return status(shared, id, "error", &msg, None);
        }
    };
    let op = value.get("op").and_then(Value::as_str).unwrap_or("?").to_string();
    let topic = value.get("topic").or_else(|| value.get("service")).and_then(Value::as_str).map(str::to_string);
    let op_id = value.get("id").cloned();
    let now = shared.now_s();
    shared.record(ReceivedMessage {
        at_s: now,
        connection: id,
        op: op.clone(),
        topic: topic.clone(),
        raw: value.clone(),
    });
    let topics = &shared.config.topics;
    let need_topic = |what: &str| {
        status(shared, id, "error", &format!("{op}: missing string field \"{what}\""), op_id.as_ref());
    };
    match op.as_str() {
        "advertise" | "unadvertise" | "unsubscribe" if topic.is_none() => need_topic("topic"),
        "advertise" | "unadvertise" | "set_level" | "status" => {}
        "subscribe" => match topic {
            Some(t) => subscribe(shared, id, t, &value, op_id.as_ref()),
            None => need_topic("topic"),
        },
        "unsubscribe" => {
            if let Some(t) = topic {
                shared.conns.with_conn(id, |c| {
                    c.subs.remove(&t);
                });
            }
        }
        "publish" => {
            let (Some(t), Some(msg)) = (topic, value.get("msg")) else {
                return status(shared, id, "error", "publish: needs \"topic\" and \"msg\"", op_id.as_ref());
            };
            if t == topics.cmd_vel {
                match serde_json::from_value::<Twist>(msg.clone()) {
                    Ok(tw) if tw.linear.x.is_finite() && tw.angular.z.is_finite() => shared.set_command(tw, now),
                    _ => status(
                        shared,
                        id,
                        "error",
                        &format!("publish on {t}: not a valid geometry_msgs/Twist"),
                        op_id.as_ref(),
                    ),
                }
            }
            if t == topics.goal && shared.config.nav2 {
                let accepted = {
                    let mut st = shared.state();
                    st.nav2.accept(msg, now).map(|()| st.nav2.status_msg())
                };
                match accepted {
                    Ok(status) => shared.conns.publish(shared, &topics.nav2_status, &status),
                    Err(e) => status(shared, id, "error", &format!("publish on {t}: {e}"), op_id.as_ref()),
                }
            }
            // rosbridge delivers a publish to every subscriber of the topic.
            shared.conns.publish(shared, &t, msg);
        }
        "call_service" => call_service(shared, id, topic, op_id),
        other => status(
            shared,
            id,
            "warning",
            &format!("op {other:?} is not supported by navkit's simulated robot"),
            op_id.as_ref(),
        ),
    }
}

/// A `subscribe` with rosbridge's options: `compression` (`none`, `png`,
/// `cbor`; `cbor-raw` needs ROS serialization and is refused) and
/// `throttle_rate` (ms). `queue_length` is accepted: the peer never queues
/// more than its per-connection bound.
fn subscribe(shared: &PeerShared, id: u64, topic: String, value: &Value, op_id: Option<&Value>) {
    let asked = if shared.config.compression { value.get("compression").and_then(Value::as_str) } else { None };
    let compression = match asked.unwrap_or("none") {
        "none" => Compression::None,
        "png" => Compression::Png,
        "cbor" => Compression::Cbor,
        other => {
            status(
                shared,
                id,
                "warning",
                &format!("subscribe {topic}: compression {other:?} is not supported; sending JSON"),
                op_id,
            );
            Compression::None
        }
    };
    let throttle_ms = value.get("throttle_rate").and_then(Value::as_u64).unwrap_or(0);
    let opts = SubOpts { compression, throttle_s: throttle_ms as f64 / 1000.0, last_sent_s: None };
    shared.conns.with_conn(id, |c| {
        c.subs.insert(topic, opts);
    });
}

/// `/rosapi/topics`: every topic the peer serves and its ROS 2 type.
fn topic_list(shared: &PeerShared) -> Value {
    let t = &shared.config.topics;
    let mut list = vec![
        (t.scan.clone(), "sensor_msgs/msg/LaserScan"),
        (t.odom.clone(), "nav_msgs/msg/Odometry"),
        (t.rgb.clone(), "sensor_msgs/msg/Image"),
        (t.depth.clone(), "sensor_msgs/msg/Image"),
        (t.pause.clone(), "std_msgs/msg/Bool"),
        (t.voice_command.clone(), "std_msgs/msg/String"),
        (t.cmd_vel.clone(), "geometry_msgs/msg/Twist"),
    ];
    if shared.config.serve_compressed {
        list.push((t.rgb_topic(true), "sensor_msgs/msg/CompressedImage"));
        list.push((t.depth_topic(true), "sensor_msgs/msg/CompressedImage"));
    }
    if shared.config.nav2 {
        list.push((t.goal.clone(), "geometry_msgs/msg/PoseStamped"));
        list.push((t.nav2_status.clone(), "action_msgs/msg/GoalStatusArray"));
    }
    let (topics, types): (Vec<_>, Vec<_>) = list.into_iter().unzip();
    json!({ "topics": topics, "types": types })
}

fn call_service(shared: &PeerShared, id: u64, service: Option<String>, op_id: Option<Value>) {
    let Some(service) = service else {
        return status(shared, id, "error", "call_service: missing string field \"service\"", op_id.as_ref());
    };
    let topics = &shared.config.topics;
    let (values, result) = if service == topics.probe_service || service == "/rosapi/get_time" {
        let t = Time::from_secs_f64(nav_core::time::Clock::now_s(&shared.sim_clock));
        (json!({ "time": t }), true)
    } else if service == topics.topics_service && shared.config.rosapi_topics {
        (topic_list(shared), true)
    } else if service == topics.nav2_cancel_service {
        if shared.config.nav2 {
            let now = shared.now_s();
            let status = {
                let mut st = shared.state();
                st.nav2.end(5, now).then(|| st.nav2.status_msg())
            };
            if let Some(status) = status {
                shared.conns.publish(shared, &topics.nav2_status, &status);
            }
        }
        (json!({ "return_code": 0, "goals_canceling": [] }), true)
    } else {
        (json!(format!("Service {service} does not exist")), false)
    };
    let mut reply = json!({ "op": "service_response", "service": service, "values": values, "result": result });
    if let Some(op_id) = op_id {
        reply["id"] = op_id;
    }
    shared.conns.send_to(shared, id, reply);
}
