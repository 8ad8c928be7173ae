//! Camera images over rosbridge at a size and rate a WiFi link carries.
//!
//! roslibrust's rosbridge client writes a fixed `subscribe` message and
//! reads text frames only, so the cameras get a WebSocket of their own
//! (`tokio-tungstenite`, one more connection to the same rosbridge server)
//! whose `subscribe` asks for what rosbridge v2 offers and roslibrust
//! cannot ask for:
//!
//! - `throttle_rate` (ms): the server sends at most one image per period,
//!   set from [`RosbridgeConfig::image_rate_hz`](super::RosbridgeConfig::image_rate_hz)
//!   (the rate decisions are made at, not the camera's 30 fps);
//! - `queue_length: 1`: a slow link gets the newest image, never a backlog;
//! - `compression`: `"cbor"` sends the message as one binary CBOR frame
//!   (`uint8[]` as raw bytes, not base64 in JSON); `"png"` sends the JSON
//!   text PNG-compressed in an `{"op":"png"}` message.
//!
//! The camera socket also keeps the big frames off the control socket, so
//! a 1 MB image never holds up a scan or a probe reply behind it.
//! It belongs to the session: opened after the control socket's
//! subscriptions, closed with it, and its failure tears the session down
//! and reconnects like any other subscription's. A frame that cannot be
//! decoded is counted (under `camera connection` in
//! [`LinkStatus::topics`](super::LinkStatus::topics)) and skipped; the link
//! stays up.
//!
//! [`ImageTransport::Auto`] (the default) takes `<topic>/compressed`
//! (`sensor_msgs/CompressedImage`, JPEG; depth: `<topic>/compressedDepth`)
//! when rosapi's topic list has it, and otherwise the raw topic with CBOR.
//! A server that does not know the requested compression answers in plain
//! JSON; every reply form is accepted whatever was asked for.
//!
//! CBOR is decoded with `ciborium` (the maintained serde CBOR crate;
//! `serde_cbor` is archived), PNG and JPEG with the `image` crate.

use super::msg::sensor_msgs::{CompressedImage, Image};
use super::state::{RawImage, Sample, Shared};
use crate::HalError;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use futures_util::{SinkExt, StreamExt};
use image::ImageEncoder as _;
use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// Largest WebSocket message accepted on the camera socket (a raw
/// 1280×720 `rgb8` image as base64 JSON is 3.7 MB).
pub const MAX_MESSAGE_BYTES: usize = 32 << 20;

/// Largest image a PNG or JPEG may decode to, bytes.
const MAX_DECODED_BYTES: u64 = 64 << 20;

/// How a camera's images travel from rosbridge (`rgb_transport`,
/// `depth_transport` in `[rosbridge]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ImageTransport {
    /// `compressed` when rosapi lists `<topic>/compressed` (depth:
    /// `<topic>/compressedDepth`), else `cbor`; `cbor` too when rosapi does
    /// not answer.
    #[default]
    Auto,
    /// `sensor_msgs/CompressedImage` on `<topic>/compressed` (colour: JPEG
    /// or PNG) or `<topic>/compressedDepth` (depth: image_transport's
    /// 16-bit PNG), as CBOR frames (the compressed bytes without base64).
    Compressed,
    /// The raw `sensor_msgs/Image` topic as binary CBOR frames.
    Cbor,
    /// The raw topic, its JSON PNG-compressed by rosbridge.
    Png,
    /// The raw topic as JSON (`uint8[]` as base64): the largest.
    Raw,
}

impl ImageTransport {
    /// The name used in configuration files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Compressed => "compressed",
            Self::Cbor => "cbor",
            Self::Png => "png",
            Self::Raw => "raw",
        }
    }
}

/// Which camera a subscription feeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Camera {
    /// The colour camera.
    Rgb,
    /// The depth camera.
    Depth,
}

/// A camera subscription with its transport decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ImageRoute {
    /// The camera it feeds.
    pub camera: Camera,
    /// The topic subscribed to.
    pub topic: String,
    /// `sensor_msgs/CompressedImage` (else `sensor_msgs/Image`).
    pub compressed_msg: bool,
    /// rosbridge's `compression`: `none`, `png` or `cbor`.
    pub compression: &'static str,
}

impl ImageRoute {
    /// Decides the subscription of `camera` on `base` (the raw topic) for
    /// `transport`; `available` is rosapi's topic list (name → type), or
    /// `None` when rosapi did not answer.
    pub fn resolve(
        camera: Camera,
        base: &str,
        transport: ImageTransport,
        available: Option<&BTreeMap<String, String>>,
    ) -> Self {
        let suffix = match camera {
            Camera::Rgb => "compressed",
            Camera::Depth => "compressedDepth",
        };
        let compressed_topic = format!("{}/{suffix}", base.trim_end_matches('/'));
        let listed = available.and_then(|a| a.get(&compressed_topic)).is_some_and(|ty| {
            let ty = ty.replace("/msg/", "/");
            ty == "sensor_msgs/CompressedImage"
        });
        let transport = match transport {
            ImageTransport::Auto if listed => ImageTransport::Compressed,
            ImageTransport::Auto => ImageTransport::Cbor,
            other => other,
        };
        let raw = |compression| Self { camera, topic: base.to_string(), compressed_msg: false, compression };
        match transport {
            // CBOR spares the compressed bytes base64's third as well.
            ImageTransport::Compressed | ImageTransport::Auto => {
                Self { camera, topic: compressed_topic, compressed_msg: true, compression: "cbor" }
            }
            ImageTransport::Cbor => raw("cbor"),
            ImageTransport::Png => raw("png"),
            ImageTransport::Raw => raw("none"),
        }
    }

    /// The ROS type name rosbridge is told.
    pub fn ros_type(&self) -> &'static str {
        if self.compressed_msg { "sensor_msgs/CompressedImage" } else { "sensor_msgs/Image" }
    }

    /// The rosbridge v2 `subscribe` operation for this route.
    pub fn subscribe_op(&self, throttle_ms: u64) -> Value {
        json!({
            "op": "subscribe",
            "id": format!("navkit_camera:{}", self.topic),
            "topic": self.topic,
            "type": self.ros_type(),
            "throttle_rate": throttle_ms,
            "queue_length": 1,
            "compression": self.compression,
        })
    }

    /// How it travels, for log lines.
    pub fn describe(&self) -> String {
        let how = match (self.compressed_msg, self.compression) {
            (true, "cbor") => "sensor_msgs/CompressedImage as CBOR",
            (true, _) => "sensor_msgs/CompressedImage as JSON",
            (false, "cbor") => "sensor_msgs/Image as CBOR",
            (false, "png") => "sensor_msgs/Image as PNG-compressed JSON",
            _ => "sensor_msgs/Image as JSON",
        };
        format!("{} ({how})", self.topic)
    }
}

/// `throttle_rate` in milliseconds for at most `rate_hz` images a second.
pub(crate) fn throttle_ms(rate_hz: f64) -> u64 {
    if rate_hz.is_finite() && rate_hz > 0.0 { (1000.0 / rate_hz).round().clamp(0.0, 3.6e6) as u64 } else { 0 }
}

/// A message body as it came: JSON (text or PNG frames) or CBOR (binary).
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    /// From a text frame.
    Json(Value),
    /// From a binary frame.
    Cbor(ciborium::Value),
}

impl Payload {
    /// The body as a message type.
    pub fn into_message<M: DeserializeOwned>(self) -> Result<M, HalError> {
        match self {
            Payload::Json(v) => serde_json::from_value(v).map_err(|e| protocol(format!("message: {e}"))),
            Payload::Cbor(v) => untag_bytes(v)
                .deserialized()
                .map_err(|ciborium::value::Error::Custom(e)| protocol(format!("CBOR message: {e}"))),
        }
    }
}

/// RFC 8746 typed-array tags of byte sequences (64: uint8, 68: uint8
/// clamped), which a CBOR encoder may put on a `uint8[]`.
const BYTE_ARRAY_TAGS: [u64; 2] = [64, 68];

/// `value` with byte-array tags removed (the bytes they wrap remain), so a
/// tagged `uint8[]` reads like a plain byte string.
fn untag_bytes(value: ciborium::Value) -> ciborium::Value {
    use ciborium::Value as V;
    match value {
        V::Tag(tag, inner) if BYTE_ARRAY_TAGS.contains(&tag) && inner.is_bytes() => *inner,
        V::Tag(tag, inner) => V::Tag(tag, Box::new(untag_bytes(*inner))),
        V::Map(entries) => V::Map(entries.into_iter().map(|(k, v)| (k, untag_bytes(v))).collect()),
        V::Array(items) => V::Array(items.into_iter().map(untag_bytes).collect()),
        other => other,
    }
}

/// One server message on the camera socket.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// A message on `topic`.
    Publish {
        /// Its topic.
        topic: String,
        /// Its body.
        msg: Payload,
    },
    /// A `status` report (`level`, `msg`), e.g. an unknown topic type.
    Status {
        /// `error`, `warning`, `info`.
        level: String,
        /// The text.
        msg: String,
    },
    /// Any other operation (ignored).
    Other(String),
}

fn protocol(message: impl Into<String>) -> HalError {
    HalError::Protocol { message: message.into() }
}

/// Decodes a text frame: a JSON operation, or rosbridge's `png` operation
/// whose `data` is a base64 PNG holding the JSON text.
pub fn decode_text(text: &str) -> Result<Inbound, HalError> {
    decode_json(text, true)
}

fn decode_json(text: &str, png_allowed: bool) -> Result<Inbound, HalError> {
    let value: Value = serde_json::from_str(text).map_err(|e| protocol(format!("invalid JSON: {e}")))?;
    let op = value.get("op").and_then(Value::as_str).unwrap_or_default();
    if op == "png" {
        if !png_allowed {
            return Err(protocol("png: a png message inside a png message"));
        }
        if value.get("total").and_then(Value::as_u64).is_some_and(|t| t > 1) {
            return Err(protocol("fragmented png messages are not supported (navkit sets no fragment_size)"));
        }
        let data = value.get("data").and_then(Value::as_str).ok_or_else(|| protocol("png: missing \"data\""))?;
        let inner = png_unwrap(data)?;
        return decode_json(&inner, false);
    }
    envelope(op, value.get("topic").and_then(Value::as_str), || match value.get("msg") {
        Some(msg) => Ok(msg.clone()),
        None => Err(protocol("publish: missing \"msg\"")),
    })
    .and_then(|e| e.map_json(&value))
}

enum Envelope<T> {
    Publish(String, T),
    Status,
    Other(String),
}

impl Envelope<Value> {
    fn map_json(self, whole: &Value) -> Result<Inbound, HalError> {
        Ok(match self {
            Envelope::Publish(topic, msg) => Inbound::Publish { topic, msg: Payload::Json(msg) },
            Envelope::Status => Inbound::Status {
                level: whole.get("level").and_then(Value::as_str).unwrap_or("info").to_string(),
                msg: whole.get("msg").and_then(Value::as_str).unwrap_or_default().to_string(),
            },
            Envelope::Other(op) => Inbound::Other(op),
        })
    }
}

fn envelope<T>(
    op: &str,
    topic: Option<&str>,
    msg: impl FnOnce() -> Result<T, HalError>,
) -> Result<Envelope<T>, HalError> {
    match op {
        "publish" => {
            let topic = topic.ok_or_else(|| protocol("publish: missing \"topic\""))?;
            Ok(Envelope::Publish(topic.to_string(), msg()?))
        }
        "status" => Ok(Envelope::Status),
        "" => Err(protocol("message without \"op\"")),
        other => Ok(Envelope::Other(other.to_string())),
    }
}

/// Decodes a binary frame: a CBOR-encoded operation (rosbridge's
/// `compression: "cbor"`).
pub fn decode_binary(bytes: &[u8]) -> Result<Inbound, HalError> {
    let value: ciborium::Value =
        ciborium::from_reader(bytes).map_err(|e| protocol(format!("invalid CBOR frame: {}", cbor_error(&e))))?;
    let ciborium::Value::Map(entries) = value else {
        return Err(protocol("CBOR frame is not a map"));
    };
    let mut fields: BTreeMap<String, ciborium::Value> = BTreeMap::new();
    for (k, v) in entries {
        if let ciborium::Value::Text(k) = k {
            fields.insert(k, v);
        }
    }
    let text = |key: &str| fields.get(key).and_then(ciborium::Value::as_text).map(str::to_string);
    let op = text("op").unwrap_or_default();
    let topic = text("topic");
    let level = text("level");
    let status_msg = text("msg");
    match envelope(&op, topic.as_deref(), || fields.remove("msg").ok_or_else(|| protocol("publish: missing \"msg\"")))?
    {
        Envelope::Publish(topic, msg) => Ok(Inbound::Publish { topic, msg: Payload::Cbor(msg) }),
        Envelope::Status => {
            Ok(Inbound::Status { level: level.unwrap_or_else(|| "info".into()), msg: status_msg.unwrap_or_default() })
        }
        Envelope::Other(op) => Ok(Inbound::Other(op)),
    }
}

/// A CBOR decoding error in words (ciborium's `Display` is its `Debug`).
fn cbor_error(e: &ciborium::de::Error<std::io::Error>) -> String {
    use ciborium::de::Error as E;
    match e {
        E::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => "the frame ends early".into(),
        E::Io(io) => io.to_string(),
        E::Syntax(at) => format!("syntax error at byte {at}"),
        E::Semantic(Some(at), m) => format!("{m} at byte {at}"),
        E::Semantic(None, m) => m.clone(),
        E::RecursionLimitExceeded => "nested too deeply".into(),
    }
}

/// The text inside rosbridge's `png` operation: base64 of an RGB PNG whose
/// pixel bytes are the UTF-8 text padded with `\n`.
pub fn png_unwrap(data_b64: &str) -> Result<String, HalError> {
    let png = BASE64.decode(data_b64.trim()).map_err(|e| protocol(format!("png: invalid base64: {e}")))?;
    let mut reader = image::ImageReader::with_format(std::io::Cursor::new(png), image::ImageFormat::Png);
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(MAX_DECODED_BYTES);
    reader.limits(limits);
    let img = reader.decode().map_err(|e| protocol(format!("png: cannot decode the PNG: {e}")))?;
    let mut bytes = img.into_rgb8().into_raw();
    while bytes.last() == Some(&b'\n') {
        bytes.pop();
    }
    String::from_utf8(bytes).map_err(|_| protocol("png: the decoded message is not UTF-8 text"))
}

/// Wraps `text` (a JSON operation) the way rosbridge_server's
/// `compression: "png"` does: `{"op":"png","data":BASE64_PNG}`, the PNG an
/// RGB image of ⌊√(n/3)⌋ columns holding the text padded with `\n`
/// (compressed as Pillow does by default: zlib level 6, adaptive filter).
pub fn png_wrap(text: &str) -> Result<String, HalError> {
    let mut bytes = text.as_bytes().to_vec();
    let pixels = bytes.len().div_ceil(3).max(1);
    let width = ((pixels as f64).sqrt().floor() as usize).max(1);
    let height = pixels.div_ceil(width);
    bytes.resize(width * height * 3, b'\n');
    // zlib level 6 with adaptive filtering, as Pillow (rosbridge's encoder) writes PNGs.
    let mut png = Vec::new();
    let encoder = PngEncoder::new_with_quality(&mut png, CompressionType::Level(6), FilterType::Adaptive);
    encoder
        .write_image(&bytes, width as u32, height as u32, image::ExtendedColorType::Rgb8)
        .map_err(|e| HalError::Image { message: format!("png: {e}") })?;
    Ok(json!({ "op": "png", "data": BASE64.encode(png) }).to_string())
}

#[derive(Serialize)]
struct CborPublish<'a, M> {
    op: &'static str,
    topic: &'a str,
    msg: &'a M,
}

/// A `publish` operation as rosbridge_server's `compression: "cbor"` sends
/// it: one CBOR map, `uint8[]` as a byte string.
pub fn cbor_publish<M: Serialize>(topic: &str, msg: &M) -> Result<Vec<u8>, HalError> {
    let mut out = Vec::new();
    ciborium::into_writer(&CborPublish { op: "publish", topic, msg }, &mut out)
        .map_err(|e| protocol(format!("CBOR encoding: {e}")))?;
    Ok(out)
}

/// Opens the camera socket at `url`, subscribes every route at most
/// `rate_hz` images a second, and spawns the task that stores what arrives
/// (it ends, returning why, when the socket does).
pub(crate) async fn open(
    url: &str,
    timeout: Duration,
    routes: Vec<ImageRoute>,
    rate_hz: f64,
    shared: &Arc<Shared>,
    readers: &mut JoinSet<String>,
) -> Result<(), String> {
    let mut ws_config = WebSocketConfig::default();
    ws_config.max_message_size = Some(MAX_MESSAGE_BYTES);
    ws_config.max_frame_size = Some(MAX_MESSAGE_BYTES);
    let connect = tokio_tungstenite::connect_async_with_config(url, Some(ws_config), false);
    let (mut ws, _) = match tokio::time::timeout(timeout, connect).await {
        Ok(Ok(ws)) => ws,
        Ok(Err(e)) => return Err(format!("camera connection to {url}: {e}")),
        Err(_) => return Err(format!("camera connection to {url}: no answer within {:.1} s", timeout.as_secs_f64())),
    };
    let throttle = throttle_ms(rate_hz);
    for route in &routes {
        let op = route.subscribe_op(throttle).to_string();
        match tokio::time::timeout(timeout, ws.send(Message::text(op))).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(format!("subscribe {}: {e}", route.topic)),
            Err(_) => return Err(format!("subscribe {}: timed out", route.topic)),
        }
        tracing::info!(target: "nav_hal::rosbridge", "camera: {} at most {rate_hz} Hz", route.describe());
    }
    let session = shared.data().session;
    let shared = Arc::clone(shared);
    readers.spawn(async move {
        loop {
            let (inbound, bytes) = match ws.next().await {
                Some(Ok(Message::Text(text))) => (decode_text(text.as_str()), text.len()),
                Some(Ok(Message::Binary(bytes))) => (decode_binary(&bytes), bytes.len()),
                Some(Ok(Message::Close(_))) | None => return "the camera connection was closed".to_string(),
                Some(Ok(_)) => continue,
                Some(Err(e)) => return format!("camera connection: {e}"),
            };
            if let Some(reason) = deliver(&shared, session, &routes, inbound, bytes) {
                return reason;
            }
        }
    });
    Ok(())
}

/// Stores one decoded message; `Some(reason)` when the session is over.
fn deliver(
    shared: &Shared,
    session: u64,
    routes: &[ImageRoute],
    inbound: Result<Inbound, HalError>,
    bytes: usize,
) -> Option<String> {
    let (topic, msg) = match inbound {
        Ok(Inbound::Publish { topic, msg }) => (topic, msg),
        Ok(Inbound::Status { level, msg }) => {
            shared.warn_limited(&format!("camera status {level}"), &format!("rosbridge ({level}): {msg}"));
            return None;
        }
        Ok(Inbound::Other(_)) => return None,
        Err(e) => {
            shared.rejected("camera connection", &e);
            return None;
        }
    };
    let route = routes.iter().find(|r| r.topic == topic)?;
    let now = shared.now_s();
    let converted = if route.compressed_msg {
        msg.into_message::<CompressedImage>().map(|m| (super::convert::stamp_s(&m.header), RawImage::Compressed(m)))
    } else {
        msg.into_message::<Image>().map(|m| (super::convert::stamp_s(&m.header), RawImage::Raw(m)))
    };
    match converted {
        Ok((header_s, image)) => {
            let mut d = shared.data();
            if d.session != session {
                return Some(format!("session of {topic} ended"));
            }
            let sample = Some(Sample { value: Arc::new(image), received_s: now });
            match route.camera {
                Camera::Rgb => d.rgb = sample,
                Camera::Depth => d.depth = sample,
            }
            Shared::accepted(&mut d, &topic, now, header_s);
            Shared::add_bytes(&mut d, &topic, bytes);
        }
        Err(e) => shared.rejected(&topic, &e),
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rosbridge::msg::std_msgs::Header;

    fn topics(list: &[(&str, &str)]) -> BTreeMap<String, String> {
        list.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn auto_prefers_listed_compressed_topics_and_falls_back_to_cbor() {
        let listed = topics(&[
            ("/cam/image_raw/compressed", "sensor_msgs/msg/CompressedImage"),
            ("/depth/compressedDepth", "sensor_msgs/CompressedImage"),
        ]);
        let r = ImageRoute::resolve(Camera::Rgb, "/cam/image_raw", ImageTransport::Auto, Some(&listed));
        assert_eq!((r.topic.as_str(), r.compressed_msg, r.compression), ("/cam/image_raw/compressed", true, "cbor"));
        let d = ImageRoute::resolve(Camera::Depth, "/depth", ImageTransport::Auto, Some(&listed));
        assert_eq!(d.topic, "/depth/compressedDepth");
        let none = ImageRoute::resolve(Camera::Rgb, "/other", ImageTransport::Auto, Some(&listed));
        assert_eq!((none.topic.as_str(), none.compressed_msg, none.compression), ("/other", false, "cbor"));
        let silent = ImageRoute::resolve(Camera::Rgb, "/cam/image_raw", ImageTransport::Auto, None);
        assert_eq!(silent.compression, "cbor");
        let wrong_type = topics(&[("/cam/image_raw/compressed", "sensor_msgs/Image")]);
        assert!(
            !ImageRoute::resolve(Camera::Rgb, "/cam/image_raw", ImageTransport::Auto, Some(&wrong_type)).compressed_msg
        );
        let png = ImageRoute::resolve(Camera::Rgb, "/cam", ImageTransport::Png, Some(&listed));
        let op = png.subscribe_op(500);
        assert_eq!(op["compression"], "png");
        assert_eq!(op["throttle_rate"], 500);
        assert_eq!(op["queue_length"], 1);
        assert_eq!(op["type"], "sensor_msgs/Image");
        assert_eq!(throttle_ms(2.0), 500);
        assert_eq!(throttle_ms(3.0), 333);
    }

    #[test]
    fn transports_and_the_image_rate_are_configured_by_name() {
        use crate::rosbridge::RosbridgeConfig;
        let c: RosbridgeConfig =
            serde_json::from_str(r#"{"rgb_transport":"cbor","depth_transport":"compressed","image_rate_hz":5}"#)
                .unwrap();
        assert_eq!(
            (c.rgb_transport, c.depth_transport, c.image_rate_hz),
            (ImageTransport::Cbor, ImageTransport::Compressed, 5.0)
        );
        let err = serde_json::from_str::<RosbridgeConfig>(r#"{"rgb_transport":"jpeg"}"#).unwrap_err().to_string();
        assert!(err.contains("unknown variant `jpeg`") && err.contains("compressed"), "{err}");
        for rate in [0.0, -1.0, f64::NAN, 101.0] {
            match (RosbridgeConfig { image_rate_hz: rate, ..RosbridgeConfig::default() }).validate() {
                Err(HalError::InvalidConfig { field, .. }) => assert_eq!(field, "image_rate_hz"),
                other => panic!("{rate}: {other:?}"),
            }
        }
        let d = RosbridgeConfig::default();
        assert_eq!(
            (d.rgb_transport, d.depth_transport, d.image_rate_hz),
            (ImageTransport::Auto, ImageTransport::Auto, 2.0)
        );
    }

    #[test]
    fn png_wrap_round_trips_like_rosbridge() {
        for text in ["", "{}", r#"{"op":"publish","topic":"/t","msg":{"data":"\u00e9t\u00e9"}}"#] {
            let wrapped: Value = serde_json::from_str(&png_wrap(text).unwrap()).unwrap();
            assert_eq!(wrapped["op"], "png");
            assert_eq!(png_unwrap(wrapped["data"].as_str().unwrap()).unwrap(), text);
        }
        let msg = json!({"op": "publish", "topic": "/cam", "msg": {"width": 2}});
        let frame = png_wrap(&msg.to_string()).unwrap();
        match decode_text(&frame).unwrap() {
            Inbound::Publish { topic, msg: Payload::Json(m) } => {
                assert_eq!((topic.as_str(), &m["width"]), ("/cam", &json!(2)))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn cbor_frames_carry_images_as_bytes() {
        let img = Image {
            header: Header::new(3.5, "cam"),
            height: 1,
            width: 2,
            encoding: "rgb8".into(),
            is_bigendian: 0,
            step: 6,
            data: vec![1, 2, 3, 4, 5, 6],
        };
        let bytes = cbor_publish("/cam", &img).unwrap();
        assert!(bytes.windows(6).any(|w| w == [1, 2, 3, 4, 5, 6]), "uint8[] travels as raw bytes");
        match decode_binary(&bytes).unwrap() {
            Inbound::Publish { topic, msg } => {
                assert_eq!(topic, "/cam");
                assert_eq!(msg.into_message::<Image>().unwrap(), img);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn tagged_byte_arrays_read_as_bytes() {
        // RFC 8746 typed array (tag 64: uint8), as a CBOR encoder may tag a byte sequence
        use ciborium::Value as V;
        let msg = V::Map(vec![
            (V::Text("format".into()), V::Text("jpeg".into())),
            (V::Text("data".into()), V::Tag(64, Box::new(V::Bytes(vec![9, 8, 7])))),
        ]);
        let img = Payload::Cbor(msg).into_message::<CompressedImage>().unwrap();
        assert_eq!((img.format.as_str(), img.data), ("jpeg", vec![9, 8, 7]));
    }

    #[test]
    fn bad_frames_are_clear_errors() {
        let err = |r: Result<Inbound, HalError>| r.unwrap_err().to_string();
        assert!(err(decode_text("{")).contains("invalid JSON"));
        assert!(err(decode_text(r#"{"op":"png","data":"@@"}"#)).contains("base64"));
        assert!(err(decode_text(r#"{"op":"png","data":"AAAA"}"#)).contains("cannot decode the PNG"));
        assert!(err(decode_text(r#"{"op":"png","data":"AAAA","total":3}"#)).contains("fragmented"));
        assert!(err(decode_text(r#"{"op":"publish","msg":{}}"#)).contains("topic"));
        assert!(err(decode_binary(&[0xff, 0x00])).contains("CBOR"));
        assert!(err(decode_binary(&[0x01])).contains("not a map"));
        let whole = cbor_publish("/t", &json!({"data": [1, 2, 3]})).unwrap();
        let cut = err(decode_binary(&whole[..whole.len() / 2]));
        assert_eq!(cut, "protocol error: invalid CBOR frame: the frame ends early");
        let status = decode_text(r#"{"op":"status","level":"error","msg":"no such topic"}"#).unwrap();
        assert_eq!(status, Inbound::Status { level: "error".into(), msg: "no such topic".into() });
        let wrong = Payload::Json(json!({"width": "wide"})).into_message::<Image>();
        assert!(matches!(wrong, Err(HalError::Protocol { .. })));
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// Whatever bytes arrive, decoding fails cleanly or succeeds.
            #[test]
            fn frames_never_panic(data in prop::collection::vec(any::<u8>(), 0..400)) {
                let _ = decode_binary(&data);
                let _ = decode_text(&String::from_utf8_lossy(&data));
                let _ = png_unwrap(&BASE64.encode(&data));
                let cbor = Payload::Cbor(ciborium::from_reader(&data[..]).unwrap_or(ciborium::Value::Null));
                let _ = cbor.into_message::<Image>();
            }

            /// Any text survives the png wrapping.
            #[test]
            fn png_wrapping_round_trips(text in ".{0,300}") {
                let wrapped: Value = serde_json::from_str(&png_wrap(&text).unwrap()).unwrap();
                let back = png_unwrap(wrapped["data"].as_str().unwrap()).unwrap();
                prop_assert_eq!(back, text.trim_end_matches('\n'));
            }
        }
    }
}
