//! [`BridgeWorker`]: a Python helper process (an object detector such as
//! GroundingDINO + SAM, or a learned low-level policy such as PixelNav)
//! behind the navkit bridge protocol's framing, version handshake and error
//! replies (docs/BRIDGE.md, "Workers").
//!
//! A worker is not a simulator: it serves the ops it names in its `hello`
//! reply (`detect`, `act`) on views navkit sends it with each request, so
//! the same detector serves the built-in simulator, a bridge simulator or
//! a robot. The client side here only moves JSON: what a reply means is
//! validated by its user (nav-planner's `ExternalGoalPerception` and
//! `ExternalPolicy`), like a model's reply.
//!
//! Timeouts keep the connection usable (the late reply is skipped by its
//! id); a worker that died makes every later request fail at once with
//! [`HalError::Disconnected`] naming its exit status and last stderr lines.

use super::config::{BridgeConfig, BridgeEndpoint};
use super::transport::{LineError, Transport, secs};
use super::wire::{self, PROTOCOL, Reply, TypedReply, VERSION, protocol};
use crate::HalError;
use crate::hal::{CameraFrame, DepthFrame};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::time::Duration;

/// Settings of a worker connection (serde, every field optional).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerConfig {
    /// The handshake, including the worker importing its model, seconds (120).
    pub hello_timeout_s: f64,
    /// One `detect` or `act` request, seconds (10).
    pub request_timeout_s: f64,
    /// Waiting for the worker to exit after `close`, seconds (5).
    pub close_timeout_s: f64,
    /// Lines of the worker's stderr kept for error reports (20).
    pub stderr_lines: usize,
    /// Copy the worker's stderr to ours (false).
    pub echo_stderr: bool,
    /// Longest reply line accepted, bytes (16 MiB).
    pub max_reply_bytes: usize,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            hello_timeout_s: 120.0,
            request_timeout_s: 10.0,
            close_timeout_s: 5.0,
            stderr_lines: 20,
            echo_stderr: false,
            max_reply_bytes: 16 << 20,
        }
    }
}

impl WorkerConfig {
    /// Checks the fields.
    pub fn validate(&self) -> Result<(), HalError> {
        for (name, v) in [
            ("hello_timeout_s", self.hello_timeout_s),
            ("request_timeout_s", self.request_timeout_s),
            ("close_timeout_s", self.close_timeout_s),
        ] {
            if !(v.is_finite() && v > 0.0 && v <= 86_400.0) {
                return Err(HalError::InvalidCommand {
                    field: format!("worker.{name}"),
                    message: format!("must be within (0, 86400] s, got {v}"),
                });
            }
        }
        if self.max_reply_bytes < 1024 {
            return Err(HalError::InvalidCommand {
                field: "worker.max_reply_bytes".into(),
                message: format!("must be at least 1024, got {}", self.max_reply_bytes),
            });
        }
        Ok(())
    }

    fn transport_config(&self) -> BridgeConfig {
        BridgeConfig {
            hello_timeout_s: self.hello_timeout_s,
            stderr_lines: self.stderr_lines,
            echo_stderr: self.echo_stderr,
            max_reply_bytes: self.max_reply_bytes,
            ..BridgeConfig::default()
        }
    }
}

/// Who a worker says it is, from its `hello` reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerInfo {
    /// The worker's name (e.g. `colour-detector`, `grounding-dino`).
    pub name: String,
    /// Its version.
    #[serde(default)]
    pub version: String,
    /// The ops it serves (`detect`, `act`).
    #[serde(default)]
    pub ops: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct WorkerHello {
    protocol: String,
    version: u32,
    worker: WorkerHelloName,
    #[serde(default)]
    ops: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct WorkerHelloName {
    name: String,
    #[serde(default)]
    version: String,
}

/// A connection to a worker process (a detector or a policy serving the
/// `detect` / `act` ops of docs/BRIDGE.md, "Workers"): the handshake,
/// requests with timeouts (a late reply is skipped by its id), and a dead
/// worker reported with its exit status and last stderr lines.
pub struct BridgeWorker {
    transport: Transport,
    config: WorkerConfig,
    info: WorkerInfo,
    next_id: u64,
    broken: Option<String>,
    closed: bool,
    /// Requests in a row that timed out (reset by any answer).
    timeouts_in_a_row: u32,
}

/// Requests in a row that may time out before a worker is given up: every
/// later request fails at once (the caller's fallback) instead of waiting
/// out the timeout again at every step.
pub const MAX_TIMEOUTS_IN_A_ROW: u32 = 3;

impl std::fmt::Debug for BridgeWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridgeWorker")
            .field("endpoint", &self.transport.endpoint)
            .field("worker", &self.info.name)
            .field("broken", &self.broken)
            .finish_non_exhaustive()
    }
}

impl BridgeWorker {
    /// Starts (a command line) or attaches to (`tcp://HOST:PORT`) a worker
    /// and performs the handshake as `role` (`detector` or `policy`),
    /// checking that it serves `op`.
    pub async fn connect(
        endpoint: &BridgeEndpoint,
        role: &str,
        op: &str,
        config: WorkerConfig,
    ) -> Result<Self, HalError> {
        config.validate()?;
        let tc = config.transport_config();
        let transport = match endpoint {
            BridgeEndpoint::Command(c) => Transport::spawn(c, &tc)?,
            BridgeEndpoint::Tcp(addr) => Transport::connect(addr, &tc).await?,
        };
        let placeholder = WorkerInfo { name: String::new(), version: String::new(), ops: Vec::new() };
        let mut w = Self {
            transport,
            config,
            info: placeholder,
            next_id: wire::FIRST_REQUEST_ID,
            broken: None,
            closed: false,
            timeouts_in_a_row: 0,
        };
        let mut fields = Map::new();
        fields.insert("protocol".into(), json!(PROTOCOL));
        fields.insert("version".into(), json!(VERSION));
        fields.insert("role".into(), json!(role));
        let timeout = secs(w.config.hello_timeout_s);
        let hello: WorkerHello = match w.request_typed("hello", fields, timeout).await {
            Ok(h) => h,
            Err(e) => {
                w.transport.shutdown(Duration::from_millis(200)).await;
                return Err(e);
            }
        };
        let problem = if hello.protocol != PROTOCOL || hello.version != VERSION {
            Some(format!(
                "{} speaks {:?} version {}, this client speaks {PROTOCOL:?} version {VERSION}",
                w.transport.endpoint, hello.protocol, hello.version
            ))
        } else if !hello.ops.iter().any(|o| o == op) {
            Some(format!(
                "the worker {:?} at {} does not serve the op {op:?} (it serves: {})",
                hello.worker.name,
                w.transport.endpoint,
                hello.ops.join(", ")
            ))
        } else {
            None
        };
        if let Some(p) = problem {
            w.transport.shutdown(Duration::from_millis(200)).await;
            return Err(protocol(p));
        }
        w.info = WorkerInfo { name: hello.worker.name, version: hello.worker.version, ops: hello.ops };
        Ok(w)
    }

    /// Who is serving.
    pub fn info(&self) -> &WorkerInfo {
        &self.info
    }

    /// The worker's command line or `tcp://` address.
    pub fn endpoint(&self) -> &str {
        &self.transport.endpoint
    }

    /// The last lines the worker wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.transport.stderr.snapshot()
    }

    /// Process id of the spawned worker while it runs (`None` when
    /// attached over TCP).
    pub fn child_id(&self) -> Option<u32> {
        self.transport.child_id()
    }

    /// One request (`op` plus `fields`) within the configured request
    /// timeout; the reply's `result` object as it came (its meaning is the
    /// caller's to validate).
    ///
    /// After [`MAX_TIMEOUTS_IN_A_ROW`] timed-out requests in a row the
    /// worker is given up: this and every later call is a
    /// [`HalError::Disconnected`] at once, naming why.
    pub async fn call(&mut self, op: &str, fields: Map<String, Value>) -> Result<Map<String, Value>, HalError> {
        let timeout = secs(self.config.request_timeout_s);
        let result = self.request_typed(op, fields, timeout).await;
        match &result {
            Err(HalError::Timeout { .. }) => {
                self.timeouts_in_a_row += 1;
                if self.timeouts_in_a_row >= MAX_TIMEOUTS_IN_A_ROW && self.broken.is_none() {
                    let reason = format!(
                        "given up: {} requests in a row timed out (after {} s each)",
                        self.timeouts_in_a_row, self.config.request_timeout_s
                    );
                    self.broken = Some(reason);
                }
            }
            Ok(_) => self.timeouts_in_a_row = 0,
            Err(_) => {}
        }
        result
    }

    /// Ends the session: `close`, wait, then kill. Idempotent.
    pub async fn close(&mut self) -> Result<(), HalError> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let wait = secs(self.config.close_timeout_s);
        if self.broken.is_none() {
            let _ = self.request_typed::<Value>("close", Map::new(), wait).await;
        }
        self.transport.shutdown(wait).await;
        self.broken.get_or_insert_with(|| "the worker was closed".into());
        Ok(())
    }

    async fn fail(&mut self, op: &str, why: &str) -> HalError {
        let post = self.transport.post_mortem(Duration::from_secs(2)).await;
        let reason = format!("{why} during {op}: {post}");
        self.broken = Some(reason.clone());
        HalError::Disconnected { endpoint: self.transport.endpoint.clone(), reason }
    }

    async fn request_typed<T: serde::de::DeserializeOwned>(
        &mut self,
        op: &str,
        fields: Map<String, Value>,
        timeout: Duration,
    ) -> Result<T, HalError> {
        if let Some(reason) = &self.broken {
            return Err(HalError::Disconnected { endpoint: self.transport.endpoint.clone(), reason: reason.clone() });
        }
        let id = self.next_id;
        self.next_id += 1;
        let line = wire::request_line(id, op, fields);
        let deadline = tokio::time::Instant::now() + timeout;
        let timed_out =
            || HalError::Timeout { what: format!("worker {op} (request {id})"), after_s: timeout.as_secs_f64() };
        match tokio::time::timeout_at(deadline, self.transport.send(&line)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(self.fail(op, &format!("writing the request failed ({e})")).await),
            Err(_) => return Err(timed_out()),
        }
        loop {
            let line = match tokio::time::timeout_at(deadline, self.transport.reader.next_message()).await {
                Err(_) => return Err(timed_out()),
                Ok(Ok(Some(line))) => line,
                Ok(Ok(None)) => return Err(self.fail(op, "the worker closed its output").await),
                Ok(Err(LineError::Io(e))) => return Err(self.fail(op, &format!("reading failed ({e})")).await),
                Ok(Err(LineError::TooLong(n))) => {
                    return Err(self
                        .fail(op, &format!("a reply line exceeded max_reply_bytes ({n} bytes read)"))
                        .await);
                }
            };
            let (rid, result, error) = match serde_json::from_slice::<TypedReply<T>>(&line) {
                Ok(r) => (r.id, r.result, r.error),
                Err(typed_err) => {
                    let reply: Reply = serde_json::from_slice(&line).map_err(|e| {
                        let text = String::from_utf8_lossy(&line[..line.len().min(120)]).into_owned();
                        protocol(format!("worker {op}: reply is not a JSON reply object ({e}): {text:?}"))
                    })?;
                    if reply.id.as_u64().is_some_and(|r| wire::is_stale_id(r, id)) {
                        continue;
                    }
                    if reply.error.is_none() {
                        return Err(protocol(format!("worker {op}: unexpected reply shape: {typed_err}")));
                    }
                    (reply.id, None, reply.error)
                }
            };
            match rid.as_u64() {
                Some(r) if r == id => {}
                Some(r) if wire::is_stale_id(r, id) => continue,
                _ if rid.is_null() && error.is_some() => {}
                _ => return Err(protocol(format!("worker {op}: reply id {rid} does not match request {id}"))),
            }
            if let Some(err) = error {
                return Err(super::map_error(op, err));
            }
            return match result {
                Some(r) => Ok(r),
                None => serde_json::from_value(Value::Object(Map::new()))
                    .map_err(|e| protocol(format!("worker {op}: the reply has no result: {e}"))),
            };
        }
    }
}

/// The `view` object of a `detect` or `act` request: the RGB image as raw
/// base64 (`shape [H, W, 3]`), the depth image as base64 float32
/// little-endian metres (`shape [H, W]`; `inf` = nothing in range, NaN =
/// invalid, as in observations) when given, and the horizontal field of
/// view in degrees.
pub fn view_json(frame: Option<&CameraFrame>, depth: Option<&DepthFrame>) -> Value {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut view = Map::new();
    if let Some(f) = frame {
        let rgb = &f.frame;
        view.insert("hfov_deg".into(), json!(f.hfov_rad.to_degrees()));
        view.insert(
            "rgb".into(),
            json!({"encoding": "raw", "shape": [rgb.height(), rgb.width(), 3], "data": b64(rgb.as_bytes())}),
        );
    }
    if let Some(d) = depth {
        let mut bytes = Vec::with_capacity(d.depth_m.len() * 4);
        for v in &d.depth_m {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        view.insert("depth".into(), json!({"encoding": "f32le", "shape": [d.height, d.width], "data": b64(&bytes)}));
    }
    Value::Object(view)
}
