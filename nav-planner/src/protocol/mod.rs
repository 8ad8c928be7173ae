//! The three planner protocols plus the scene analyzer and
//! grounding generation. A protocol is a system prompt, per-cycle user
//! content, an output schema, a parser, a validator and a fallback; the
//! `*Planner` traits are the seams the Navigator loops call, implemented by
//! the VLM-backed planners here and the offline planners in
//! [`crate::offline`].

pub mod annotate;
pub mod candidates;
pub mod explore;
pub mod grounding;
pub mod instruction;
pub mod json;
pub mod objectnav;
pub mod perception;
pub mod prompts;
pub mod scene;

use crate::protocol::json::ExtractError;
use crate::vlm::Usage;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::str::FromStr;

/// Which protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProtocolKind {
    /// ObjectNav with the Place–Anchor memory: panorama + memory →
    /// `{goal_flag, angle, discovered_context}`.
    Objectnav,
    /// LLM-driven exploration: native tool calling with the seven explore tools.
    Explore,
    /// The LLMos pipeline: choose among scored candidates.
    Candidates,
}

impl ProtocolKind {
    /// The lowercase name used on the command line and in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolKind::Objectnav => "objectnav",
            ProtocolKind::Explore => "explore",
            ProtocolKind::Candidates => "candidates",
        }
    }
}

impl fmt::Display for ProtocolKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ProtocolKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "objectnav" => Ok(ProtocolKind::Objectnav),
            "explore" => Ok(ProtocolKind::Explore),
            "candidates" => Ok(ProtocolKind::Candidates),
            other => Err(format!("unknown protocol {other:?}: expected objectnav, explore or candidates")),
        }
    }
}

/// Why a reply is not a valid decision.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DecisionError {
    /// No JSON object could be recovered from the reply.
    #[error("{0}")]
    Extract(#[from] ExtractError),
    /// A field is missing, has the wrong type or is out of range.
    #[error("{field}: {message}")]
    Invalid {
        /// Path of the offending field, e.g. `discovered_context.why`.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// The model called no tool, or only tools that are not allowed now.
    #[error("no usable tool call: {0}")]
    NoToolCall(String),
    /// The VLM call itself failed (timeout, HTTP error, refusal).
    #[error("model call failed: {0}")]
    Call(String),
}

impl DecisionError {
    /// An invalid-field error.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        DecisionError::Invalid { field: field.into(), message: message.into() }
    }
}

/// What `nav parse` prints: `{"ok", "decision", "error"}` where `decision`
/// is the validated decision, or the protocol's fallback when `ok` is
/// false.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParseReport {
    /// Whether the reply was a valid decision.
    pub ok: bool,
    /// The decision (or the fallback).
    pub decision: Value,
    /// What was wrong, when `ok` is false.
    pub error: Option<String>,
}

impl ParseReport {
    /// Parses one raw reply under `protocol` (see the protocol modules).
    pub fn parse(protocol: ProtocolKind, reply: &str) -> Self {
        let to_value = |v: Result<Value, serde_json::Error>| v.unwrap_or(Value::Null);
        match protocol {
            ProtocolKind::Objectnav => match objectnav::ObjectNavDecision::parse(reply) {
                Ok(d) => Self { ok: true, decision: to_value(serde_json::to_value(d)), error: None },
                Err(e) => Self {
                    ok: false,
                    decision: to_value(serde_json::to_value(objectnav::ObjectNavDecision::fallback())),
                    error: Some(e.to_string()),
                },
            },
            ProtocolKind::Candidates => match candidates::CandidateDecision::parse(reply) {
                Ok((d, _)) => Self { ok: true, decision: to_value(serde_json::to_value(d)), error: None },
                Err(e) => Self {
                    ok: false,
                    decision: to_value(serde_json::to_value(candidates::CandidateDecision::fallback(&e.to_string()))),
                    error: Some(e.to_string()),
                },
            },
            ProtocolKind::Explore => match explore::parse_reply(reply) {
                Ok(call) => Self { ok: true, decision: explore::decision_json(&call), error: None },
                Err(e) => Self {
                    ok: false,
                    decision: explore::decision_json(&explore::fallback()),
                    error: Some(e.to_string()),
                },
            },
        }
    }
}

/// The record of one planner invocation, for the step log and the run
/// summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// Raw replies, one per model call (empty for offline planners).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub raw: Vec<String>,
    /// Model calls answered (0 for offline planners); failed calls are in
    /// `vlm_failures`.
    pub vlm_calls: u32,
    /// Model calls that failed (errors, timeouts, HTTP errors).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub vlm_failures: u32,
    /// Token usage summed over the calls.
    pub usage: Usage,
    /// Estimated cost in US dollars, when prices are known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Summed model latency, milliseconds.
    pub latency_ms: f64,
    /// Set when the fallback decision was used, with the reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// Errors of individual attempts (invalid replies, failed calls).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

impl CallRecord {
    /// Adds one model response to the record.
    pub fn add_response(&mut self, r: &crate::vlm::VlmResponse) {
        self.vlm_calls += 1;
        self.usage += r.usage;
        self.latency_ms += r.latency_ms;
        if let Some(c) = r.cost_usd {
            *self.cost_usd.get_or_insert(0.0) += c;
        }
        let mut raw = r.text.clone();
        if !r.tool_calls.is_empty() {
            let calls: Vec<Value> =
                r.tool_calls.iter().map(|c| serde_json::json!({ "name": c.name, "arguments": c.arguments })).collect();
            let calls = serde_json::to_string(&calls).unwrap_or_default();
            raw = if raw.is_empty() { calls } else { format!("{raw}\n{calls}") };
        }
        self.raw.push(cap_raw(raw));
    }

    /// Adds a failed model call.
    pub fn add_failure(&mut self, error: &str) {
        self.vlm_failures += 1;
        self.errors.push(error.to_string());
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The most characters of one raw reply kept in a [`CallRecord`] (and so
/// in one step-log line); the rest is cut with a note of how much.
pub const MAX_RAW_CHARS: usize = 16 * 1024;

fn cap_raw(raw: String) -> String {
    match raw.char_indices().nth(MAX_RAW_CHARS) {
        None => raw,
        Some((cut, _)) => format!("{}… [{} more bytes not logged]", &raw[..cut], raw.len() - cut),
    }
}

/// A decision with the record of how it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannerReply<D> {
    /// The validated decision (or the fallback).
    pub decision: D,
    /// How far to go before asking again, metres, when the planner knows.
    pub distance_hint_m: Option<f64>,
    /// The call record.
    pub record: CallRecord,
}

impl<D> PlannerReply<D> {
    /// A reply made without a model call.
    pub fn offline(decision: D) -> Self {
        Self { decision, distance_hint_m: None, record: CallRecord::default() }
    }
}

pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(crate) fn get<'a>(obj: &'a Map<String, Value>, key: &str, path: &str) -> Result<&'a Value, DecisionError> {
    obj.get(key).ok_or_else(|| DecisionError::invalid(path, "missing"))
}

pub(crate) fn get_str(obj: &Map<String, Value>, key: &str, path: &str) -> Result<String, DecisionError> {
    match get(obj, key, path)? {
        Value::String(s) => Ok(s.clone()),
        other => Err(DecisionError::invalid(path, format!("expected a string, got {}", type_name(other)))),
    }
}

pub(crate) fn get_f64(obj: &Map<String, Value>, key: &str, path: &str) -> Result<f64, DecisionError> {
    match get(obj, key, path)? {
        Value::Number(n) => {
            n.as_f64().filter(|v| v.is_finite()).ok_or_else(|| DecisionError::invalid(path, "not a finite number"))
        }
        other => Err(DecisionError::invalid(path, format!("expected a number, got {}", type_name(other)))),
    }
}

/// Calls `vlm` at most twice and returns the first reply `parse` accepts,
/// or the last error (a parse error or a failed call). A retry after an
/// invalid reply tells the model what was wrong with it; a retry after a
/// failed call (no reply at all) resends the request as it was. Every
/// answer and failure goes into `record`. The one-retry rule of the JSON
/// protocols (objectnav, the perception stage).
pub(crate) async fn ask_with_retry<T, M: crate::vlm::VisionLanguageModel + ?Sized>(
    vlm: &M,
    request: crate::vlm::VlmRequest,
    record: &mut CallRecord,
    parse: impl Fn(&str) -> Result<T, DecisionError>,
) -> Result<T, String> {
    let mut last_error = String::new();
    let mut invalid_reply = false;
    for attempt in 0..2 {
        let req = if attempt == 1 && invalid_reply {
            request
                .clone()
                .text(format!("Your previous reply was invalid ({last_error}). Reply with the JSON object only."))
        } else {
            request.clone()
        };
        match vlm.complete(req).await {
            Ok(resp) => {
                record.add_response(&resp);
                match parse(&resp.text) {
                    Ok(v) => return Ok(v),
                    Err(e) => {
                        last_error = e.to_string();
                        invalid_reply = true;
                        record.errors.push(last_error.clone());
                    }
                }
            }
            Err(e) => {
                last_error = e.to_string();
                invalid_reply = false;
                record.add_failure(&last_error);
            }
        }
    }
    Err(last_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A retry tells the model its reply was invalid only when there was a
    /// reply: after a failed call the request goes again as it was.
    #[tokio::test]
    async fn the_retry_names_an_invalid_reply_but_not_a_failed_call() {
        use crate::vlm::{FnVlm, VlmError, VlmRequest, VlmResponse};
        use std::sync::Mutex;
        let parse = |t: &str| if t == "ok" { Ok(()) } else { Err(DecisionError::invalid("reply", "not ok")) };
        for (first, corrected) in [("bad", true), ("fail", false)] {
            let sent: Mutex<Vec<String>> = Mutex::default();
            let vlm = FnVlm::new(|req: &VlmRequest| {
                let mut sent = sent.lock().unwrap();
                sent.push(req.user_text());
                match (sent.len(), first) {
                    (1, "fail") => Err(VlmError::Connection { message: "connection reset".into() }),
                    (1, _) => Ok(VlmResponse::from_text("bad")),
                    _ => Ok(VlmResponse::from_text("ok")),
                }
            });
            let mut record = CallRecord::default();
            ask_with_retry(&vlm, VlmRequest::new("s").text("decide"), &mut record, parse).await.unwrap();
            let sent = sent.into_inner().unwrap();
            assert_eq!(sent.len(), 2);
            assert_eq!(sent[1].contains("previous reply was invalid"), corrected, "{first}: {sent:?}");
        }
    }

    #[test]
    fn failed_calls_are_counted_apart_from_answered_ones() {
        let mut record = CallRecord::default();
        record.add_failure("VLM call timed out after 8000 ms");
        record.add_response(&crate::vlm::VlmResponse::from_text("{}"));
        record.add_failure("HTTP 500");
        assert_eq!((record.vlm_calls, record.vlm_failures), (1, 2));
        let logged = crate::navigator::PlannerRecord::of(&record, serde_json::Value::Null);
        assert_eq!((logged.vlm_calls, logged.vlm_failures), (1, 2));
        let mut stats = crate::navigator::EpisodeStats::default();
        stats.add_call(&record);
        assert_eq!((stats.vlm_calls, stats.vlm_failures), (1, 2));
    }

    #[test]
    fn raw_replies_are_capped_per_record() {
        let mut record = CallRecord::default();
        record.add_response(&crate::vlm::VlmResponse::from_text("é".repeat(MAX_RAW_CHARS + 10)));
        let raw = &record.raw[0];
        assert!(raw.ends_with("… [20 more bytes not logged]"), "{}", &raw[raw.len() - 40..]);
        assert_eq!(raw.chars().filter(|&c| c == 'é').count(), MAX_RAW_CHARS);
    }

    #[test]
    fn parse_report_uses_the_fallback_when_invalid() {
        let r = ParseReport::parse(ProtocolKind::Objectnav, "not json");
        assert!(!r.ok);
        assert_eq!(r.decision["angle"], 0.0);
        assert_eq!(r.decision["discovered_context"]["goal_scene_type"], "corridor");
        assert_eq!(r.decision["discovered_context"]["why"], "fallback");
        let r = ParseReport::parse(ProtocolKind::Candidates, "{}");
        assert!(!r.ok);
        assert_eq!(r.decision["action"]["type"], "STOP");
        let r = ParseReport::parse(
            ProtocolKind::Objectnav,
            r#"{"goal_flag": true, "angle": -45, "discovered_context": {"goal_scene_type": "kitchen", "why": "x"}, "extra": 1}"#,
        );
        assert!(r.ok, "{r:?}");
        assert_eq!(r.error, None);
    }
}
