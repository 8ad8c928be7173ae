//! [`ReplayBook`]: the model calls a recording holds, indexed by request
//! hash, and the readers that fill it from a step log or from recorded
//! model-call messages.

use crate::navigator::StepRecord;
use crate::vlm::calls::{ModelCall, RecordedReply, hash_of, request_lines, section_digests};
use crate::vlm::{BackendInfo, VlmError, VlmResponse};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::path::Path;

/// What a recording keeps of a request: the canonical request itself (an
/// MCAP recording) or only the digests of its sections (a step log).
#[derive(Debug, Clone, PartialEq)]
pub enum RecordedRequest {
    /// The canonical request ([`crate::vlm::calls::canonical_request`]).
    Full(Value),
    /// Section digests ([`crate::vlm::calls::SECTIONS`]).
    Sections(Vec<String>),
}

/// One recorded model call.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    /// The backend that answered it.
    pub backend: BackendInfo,
    /// The request kind (`planner`, `scene`, …).
    pub kind: String,
    /// The request hash ([`crate::vlm::calls::request_hash`]).
    pub hash: String,
    /// The request, as far as the recording keeps it.
    pub request: RecordedRequest,
    /// The reply or the error.
    pub reply: Result<VlmResponse, VlmError>,
}

impl RecordedCall {
    /// A call a step record carries (its request known by digests only).
    pub fn from_model_call(call: &ModelCall) -> Self {
        let reply = call.reply.clone().into_result().unwrap_or_else(|m| Err(VlmError::InvalidResponse { message: m }));
        Self {
            backend: BackendInfo::new(call.provider.clone(), call.model.clone()),
            kind: call.kind.clone(),
            hash: call.hash.clone(),
            request: RecordedRequest::Sections(call.sections.clone()),
            reply,
        }
    }

    /// The request's lines for a diff (a full request only).
    pub fn lines(&self) -> Option<Vec<String>> {
        match &self.request {
            RecordedRequest::Full(v) => Some(request_lines(&self.backend.model, &self.kind, v)),
            RecordedRequest::Sections(_) => None,
        }
    }

    /// The request's section digests.
    pub fn sections(&self) -> Vec<String> {
        match &self.request {
            RecordedRequest::Full(v) => section_digests(v),
            RecordedRequest::Sections(s) => s.clone(),
        }
    }
}

/// Why a recording cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {message}")]
pub struct ReplayError {
    /// The file or folder.
    pub source_name: String,
    /// What is wrong with it.
    pub message: String,
}

impl ReplayError {
    /// An error about `source`.
    pub fn new(source: impl Into<String>, message: impl Into<String>) -> Self {
        Self { source_name: source.into(), message: message.into() }
    }
}

/// The model calls of one or more recordings, in recorded order, found by
/// request hash. Identical requests (a deterministic simulator asks the
/// same thing in two episodes) are answered in the order they were
/// recorded.
#[derive(Debug, Clone, Default)]
pub struct ReplayBook {
    source: String,
    calls: Vec<RecordedCall>,
}

impl ReplayBook {
    /// A book of `calls` read from `source` (a name for messages).
    pub fn new(source: impl Into<String>, calls: Vec<RecordedCall>) -> Self {
        Self { source: source.into(), calls }
    }

    /// The calls of the model-call messages of a recording (MCAP's
    /// `/navkit/planner` channel, one JSON document each).
    ///
    /// # Errors
    /// A message that is not a recorded model call, or one recorded without
    /// a request hash (older recordings), names its number.
    pub fn from_call_messages(
        source: impl Into<String>,
        messages: impl IntoIterator<Item = Value>,
    ) -> Result<Self, ReplayError> {
        let source = source.into();
        let mut calls = Vec::new();
        for (i, msg) in messages.into_iter().enumerate() {
            let call =
                recorded_message(&msg).map_err(|m| ReplayError::new(&source, format!("model call {}: {m}", i + 1)))?;
            calls.push(call);
        }
        Ok(Self { source, calls })
    }

    /// The calls the step records carry (their `model_calls`).
    pub fn from_step_records(source: impl Into<String>, records: &[StepRecord]) -> Self {
        let calls = records.iter().flat_map(|r| &r.model_calls).map(RecordedCall::from_model_call).collect();
        Self { source: source.into(), calls }
    }

    /// The calls of a step log (JSONL) written with a model.
    ///
    /// # Errors
    /// An unreadable log, or one whose records carry no model calls.
    pub fn from_step_log(path: &Path) -> Result<Self, ReplayError> {
        let name = path.display().to_string();
        let (records, _) = crate::navigator::read_log(path).map_err(|e| ReplayError::new(&name, e.to_string()))?;
        let book = Self::from_step_records(&name, &records);
        if book.is_empty() && !records.is_empty() {
            return Err(ReplayError::new(
                name,
                "the step log holds no model calls (written by an offline planner, or by a navkit that did not log them)",
            ));
        }
        Ok(book)
    }

    /// Appends `other`'s calls after this book's.
    pub fn extend(&mut self, other: ReplayBook) {
        if self.source.is_empty() {
            self.source = other.source;
        }
        self.calls.extend(other.calls);
    }

    /// Where the calls came from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The calls, in recorded order.
    pub fn calls(&self) -> &[RecordedCall] {
        &self.calls
    }

    /// Number of recorded calls.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Whether the book holds no call.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The model time the recorded calls took, ms (their latencies summed).
    pub fn recorded_latency_ms(&self) -> f64 {
        // `+ 0.0`: an empty sum is -0.0
        self.calls.iter().filter_map(|c| c.reply.as_ref().ok()).map(|r| r.latency_ms).sum::<f64>() + 0.0
    }

    /// The recorded calls' cost, US dollars (answers with a price).
    pub fn recorded_cost_usd(&self) -> f64 {
        self.calls.iter().filter_map(|c| c.reply.as_ref().ok()).filter_map(|r| r.cost_usd).sum::<f64>() + 0.0
    }

    /// Queues of call indices by hash, in recorded order.
    pub(super) fn queues(&self) -> HashMap<String, VecDeque<usize>> {
        let mut q: HashMap<String, VecDeque<usize>> = HashMap::new();
        for (i, c) in self.calls.iter().enumerate() {
            q.entry(c.hash.clone()).or_default().push_back(i);
        }
        q
    }

    /// The distinct models of the recording, in order of first use.
    pub fn models(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in &self.calls {
            if !out.contains(&c.backend.model) {
                out.push(c.backend.model.clone());
            }
        }
        out
    }
}

/// One `/navkit/planner` message as a recorded call.
fn recorded_message(msg: &Value) -> Result<RecordedCall, String> {
    let backend = msg.get("backend").ok_or("no `backend`")?;
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let provider = field(backend, "provider").ok_or("no `backend.provider`")?;
    let model = field(backend, "model").ok_or("no `backend.model`")?;
    let hash = field(msg, "request_hash").ok_or(
        "no `request_hash`: the recording was made before navkit recorded request hashes; record the run again",
    )?;
    let kind = field(msg, "kind").unwrap_or_else(|| "planner".into());
    let request = msg.get("request").cloned().ok_or("no `request`")?;
    if hash_of(&model, &kind, &request) != hash {
        return Err("its request does not hash to its `request_hash` (the file was altered)".into());
    }
    let reply: RecordedReply =
        serde_json::from_value(msg.get("reply").cloned().ok_or("no `reply`")?).map_err(|e| format!("`reply`: {e}"))?;
    Ok(RecordedCall {
        backend: BackendInfo::new(provider, model),
        kind,
        hash,
        request: RecordedRequest::Full(request),
        reply: reply.into_result()?,
    })
}
