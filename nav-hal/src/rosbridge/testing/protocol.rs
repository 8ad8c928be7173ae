//! The rosbridge v2 protocol side of the peer: connections, the client
//! operations, `service_response` and `status` replies.

use super::{PeerShared, ReceivedMessage};
use crate::rosbridge::msg::builtin_interfaces::Time;
use crate::rosbridge::msg::geometry_msgs::Twist;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::Message;

/// Outgoing queue per connection; a slow client loses messages beyond this,
/// as with rosbridge's `queue_length`.
const QUEUE: usize = 512;

#[derive(Debug)]
struct Conn {
    id: u64,
    subs: HashSet<String>,
    tx: mpsc::Sender<String>,
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
        self.list().iter().any(|c| c.subs.contains(topic))
    }

    /// Sends `msg` on `topic` to every subscribed connection (nothing while
    /// the peer is silent).
    pub fn publish(&self, shared: &PeerShared, topic: &str, msg: &Value) {
        if shared.silent.load(Ordering::SeqCst) {
            return;
        }
        let list = self.list();
        if !list.iter().any(|c| c.subs.contains(topic)) {
            return;
        }
        let text = json!({ "op": "publish", "topic": topic, "msg": msg }).to_string();
        for c in list.iter().filter(|c| c.subs.contains(topic)) {
            // A full queue drops the message, like a slow rosbridge client.
            let _ = c.tx.try_send(text.clone());
        }
    }

    fn send_to(&self, shared: &PeerShared, id: u64, value: Value) {
        if shared.silent.load(Ordering::SeqCst) {
            return;
        }
        if let Some(c) = self.list().iter().find(|c| c.id == id) {
            let _ = c.tx.try_send(value.to_string());
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

/// Accepts connections until the peer is dropped.
pub(crate) async fn accept_loop(listener: TcpListener, shared: Arc<PeerShared>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
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
    let (tx, mut rx) = mpsc::channel::<String>(QUEUE);
    let mut kill = shared.conns.kill.subscribe();
    kill.mark_unchanged();
    let mut frozen = shared.frozen.subscribe();
    let id = shared.conns.next_id.fetch_add(1, Ordering::SeqCst);
    shared.conns.list().push(Conn { id, subs: HashSet::new(), tx });
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
                    status(&shared, id, "error", "binary frames (BSON/CBOR) are not supported by the test peer", None);
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            },
            out = rx.recv() => match out {
                Some(text) => if sink.send(Message::text(text)).await.is_err() { break },
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
            shared.log().push(ReceivedMessage {
                at_s: shared.now_s(),
                connection: id,
                op: "?".into(),
                topic: None,
                raw,
            });
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
    shared.log().push(ReceivedMessage {
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
            Some(t) => shared.conns.with_conn(id, |c| {
                c.subs.insert(t);
            }),
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
        other => {
            status(shared, id, "warning", &format!("op {other:?} is not supported by the test peer"), op_id.as_ref())
        }
    }
}

fn call_service(shared: &PeerShared, id: u64, service: Option<String>, op_id: Option<Value>) {
    let Some(service) = service else {
        return status(shared, id, "error", "call_service: missing string field \"service\"", op_id.as_ref());
    };
    let topics = &shared.config.topics;
    let (values, result) = if service == topics.probe_service || service == "/rosapi/get_time" {
        let t = Time::from_secs_f64(nav_core::time::Clock::now_s(&shared.sim_clock));
        (json!({ "time": t }), true)
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
    } else if service == topics.topics_service {
        let mut names = vec![topics.scan.clone(), topics.odom.clone(), topics.cmd_vel.clone(), "/rosout".to_string()];
        if shared.config.nav2 {
            names.extend([topics.goal.clone(), topics.nav2_status.clone()]);
        }
        (json!({ "topics": names, "types": [] }), true)
    } else {
        (json!(format!("Service {service} does not exist")), false)
    };
    let mut reply = json!({ "op": "service_response", "service": service, "values": values, "result": result });
    if let Some(op_id) = op_id {
        reply["id"] = op_id;
    }
    shared.conns.send_to(shared, id, reply);
}
