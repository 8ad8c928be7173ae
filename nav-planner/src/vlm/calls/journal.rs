//! The model calls of a step: [`JournalVlm`] notes each call a run makes
//! (kind, request hash, section digests, the reply) in a [`CallJournal`],
//! and the step log writes the calls with the next step record (its
//! `model_calls`), so a step log can be replayed.

use super::canonical::{canonical_request, hash_of, section_digests};
use crate::vlm::{BackendInfo, RequestKind, VisionLanguageModel, VlmError, VlmRequest, VlmResponse};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex, PoisonError};

/// A model call's outcome as recordings keep it: `{"ok": true, "response":
/// …}` or `{"ok": false, "error": "…", "detail": {…}}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RecordedReply {
    /// Whether the call was answered.
    pub ok: bool,
    /// The answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<VlmResponse>,
    /// The error, as the backend worded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The error as a value (so a replay returns the same error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<VlmError>,
}

impl RecordedReply {
    /// The outcome of a call.
    pub fn of(result: Result<&VlmResponse, &VlmError>) -> Self {
        match result {
            Ok(r) => Self { ok: true, response: Some(r.clone()), ..Self::default() },
            Err(e) => Self { ok: false, error: Some(e.to_string()), detail: Some(e.clone()), response: None },
        }
    }

    /// Back to a result; an answer without a response is an error.
    ///
    /// # Errors
    /// `ok` without a `response`.
    pub fn into_result(self) -> Result<Result<VlmResponse, VlmError>, String> {
        match (self.ok, self.response, self.detail, self.error) {
            (true, Some(r), _, _) => Ok(Ok(r)),
            (true, None, _, _) => Err("`reply.ok` is true but there is no `reply.response`".into()),
            (false, _, Some(d), _) => Ok(Err(d)),
            (false, _, None, e) => {
                Ok(Err(VlmError::Connection { message: e.unwrap_or_else(|| "recorded without a message".into()) }))
            }
        }
    }
}

/// One model call in a step record.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ModelCall {
    /// The request kind (`planner`, `scene`, …).
    pub kind: String,
    /// The provider that answered.
    pub provider: String,
    /// The model.
    pub model: String,
    /// The request hash ([`super::request_hash`]).
    pub hash: String,
    /// Digests of the request's sections ([`super::SECTIONS`]), for telling
    /// where a later request differs.
    pub sections: Vec<String>,
    /// The reply or the error.
    pub reply: RecordedReply,
}

/// The calls made since the last step record (shared by the model wrapper
/// and the step log).
#[derive(Debug, Clone, Default)]
pub struct CallJournal {
    calls: Arc<Mutex<Vec<ModelCall>>>,
    /// The step of the last record written (set by the step log).
    step: Arc<Mutex<Option<u64>>>,
}

impl CallJournal {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Notes a call.
    pub fn push(&self, call: ModelCall) {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).push(call);
    }

    /// Notes that the record of `step` was written: later calls belong to
    /// the next one.
    pub fn set_step(&self, step: u64) {
        *self.step.lock().unwrap_or_else(PoisonError::into_inner) = Some(step);
    }

    /// The step of the last record written, if any.
    pub fn step(&self) -> Option<u64> {
        *self.step.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the calls noted so far.
    pub fn take(&self) -> Vec<ModelCall> {
        std::mem::take(&mut *self.calls.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Forwards every call to the model it wraps and notes it in a
/// [`CallJournal`]. The reply reaches the caller unchanged.
pub struct JournalVlm {
    inner: Arc<dyn VisionLanguageModel>,
    journal: CallJournal,
}

impl JournalVlm {
    /// Wraps `inner`; calls go into `journal`.
    pub fn new(inner: Arc<dyn VisionLanguageModel>, journal: CallJournal) -> Self {
        Self { inner, journal }
    }
}

#[async_trait]
impl VisionLanguageModel for JournalVlm {
    async fn complete(&self, req: VlmRequest) -> Result<VlmResponse, VlmError> {
        let info = self.inner.describe();
        let kind = req.kind.as_str().to_string();
        let canonical = canonical_request(&req);
        let result = match self.inner.complete(req).await {
            // a replay does not know the step; the step log does
            Err(VlmError::ReplayMiss { mut divergence }) => {
                divergence.step = divergence.step.or(self.journal.step());
                Err(VlmError::ReplayMiss { divergence })
            }
            other => other,
        };
        if !matches!(result, Err(VlmError::ReplayMiss { .. })) {
            self.journal.push(ModelCall {
                hash: hash_of(&info.model, &kind, &canonical),
                sections: section_digests(&canonical),
                kind,
                provider: info.provider,
                model: info.model,
                reply: RecordedReply::of(result.as_ref()),
            });
        }
        result
    }

    fn describe(&self) -> BackendInfo {
        self.inner.describe()
    }

    fn answers(&self, kind: RequestKind) -> bool {
        self.inner.answers(kind)
    }
}
