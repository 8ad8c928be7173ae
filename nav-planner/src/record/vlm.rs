//! [`RecordingVlm`]: a model wrapper that writes every request and reply
//! into a recording.

use super::{Call, Recording};
use crate::vlm::calls::RecordedReply;
use crate::vlm::{BackendInfo, VisionLanguageModel, VlmError, VlmRequest, VlmResponse};
use async_trait::async_trait;
use std::sync::Arc;

/// Forwards every call to the model it wraps and records the request (the
/// text the model got, its images once each on their own channel) and the
/// reply or error. The reply reaches the caller unchanged.
pub struct RecordingVlm {
    inner: Arc<dyn VisionLanguageModel>,
    recording: Recording,
}

impl RecordingVlm {
    /// Wraps `inner`; calls go into `recording`.
    pub fn new(inner: Arc<dyn VisionLanguageModel>, recording: Recording) -> Self {
        Self { inner, recording }
    }
}

#[async_trait]
impl VisionLanguageModel for RecordingVlm {
    async fn complete(&self, req: VlmRequest) -> Result<VlmResponse, VlmError> {
        let kept = req.clone();
        let result = self.inner.complete(req).await;
        // error texts are the backends' own, already redacted; a replay's miss is no model call
        if matches!(result, Err(VlmError::ReplayMiss { .. })) {
            return result;
        }
        let reply = RecordedReply::of(result.as_ref());
        self.recording.planner_call(Call { request: kept, reply, backend: self.inner.describe() });
        result
    }

    fn describe(&self) -> BackendInfo {
        self.inner.describe()
    }

    fn answers(&self, kind: crate::vlm::RequestKind) -> bool {
        self.inner.answers(kind)
    }
}
