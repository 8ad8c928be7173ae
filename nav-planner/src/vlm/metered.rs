//! Call statistics (LLMos-style statistics tracking): [`MeteredVlm`] wraps
//! any model and keeps [`VlmStats`].

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{BackendInfo, RequestKind, Usage, VisionLanguageModel, VlmError, VlmRequest, VlmResponse};

/// Running totals over many calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct VlmStats {
    /// Calls made.
    pub calls: u64,
    /// Calls that returned a response.
    pub successes: u64,
    /// Calls that returned an error.
    pub failures: u64,
    /// Failures by [`VlmError::kind`].
    pub failures_by_kind: BTreeMap<String, u64>,
    /// Summed token usage of successful calls.
    pub usage: Usage,
    /// Summed wall time of all calls, failed ones included.
    pub total_latency_ms: f64,
    /// Summed estimated cost of calls whose model has a price.
    pub cost_usd: f64,
    /// Summed HTTP attempts of successful calls (retries show as attempts
    /// beyond one per success).
    pub attempts: u64,
    /// Requests sent, by [`RequestKind`] name (`planner`, `scene`, …).
    pub requests_by_kind: BTreeMap<String, u64>,
}

impl VlmStats {
    /// Records one request sent, before its reply.
    pub fn record_request(&mut self, kind: RequestKind) {
        *self.requests_by_kind.entry(kind.as_str().to_string()).or_default() += 1;
    }

    /// Records one successful call.
    pub fn record_success(&mut self, reply: &VlmResponse) {
        self.calls += 1;
        self.successes += 1;
        self.usage += reply.usage;
        self.total_latency_ms += reply.latency_ms;
        self.cost_usd += reply.cost_usd.unwrap_or(0.0);
        self.attempts += u64::from(reply.attempts.max(1));
    }

    /// Records one failed call that took `latency_ms`.
    pub fn record_failure(&mut self, error: &VlmError, latency_ms: f64) {
        self.calls += 1;
        self.failures += 1;
        *self.failures_by_kind.entry(error.kind().to_string()).or_default() += 1;
        self.total_latency_ms += latency_ms;
    }

    /// Mean wall time per call, or 0 with no calls.
    pub fn mean_latency_ms(&self) -> f64 {
        if self.calls == 0 { 0.0 } else { self.total_latency_ms / self.calls as f64 }
    }

    /// Fraction of calls that succeeded, or 0 with no calls.
    pub fn success_rate(&self) -> f64 {
        if self.calls == 0 { 0.0 } else { self.successes as f64 / self.calls as f64 }
    }
}

/// A model wrapper that records [`VlmStats`] for every call.
///
/// ```
/// use nav_planner::vlm::{MeteredVlm, ScriptedVlm, VisionLanguageModel, VlmError, VlmRequest};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let vlm = MeteredVlm::new(
///     ScriptedVlm::new().then_text("ok").then_error(VlmError::Refused { message: "no".into() }),
/// );
/// let req = || VlmRequest::new("s").text("u");
/// let _ = vlm.complete(req()).await;
/// let _ = vlm.complete(req()).await;
/// let stats = vlm.stats();
/// assert_eq!((stats.calls, stats.successes, stats.failures), (2, 1, 1));
/// assert_eq!(stats.failures_by_kind["refused"], 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct MeteredVlm<V> {
    inner: V,
    stats: Mutex<VlmStats>,
}

impl<V: VisionLanguageModel> MeteredVlm<V> {
    /// Wraps a model with empty statistics.
    pub fn new(inner: V) -> Self {
        Self { inner, stats: Mutex::new(VlmStats::default()) }
    }

    fn lock(&self) -> MutexGuard<'_, VlmStats> {
        self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A snapshot of the statistics so far.
    pub fn stats(&self) -> VlmStats {
        self.lock().clone()
    }

    /// Returns the statistics so far and starts again from zero.
    pub fn take_stats(&self) -> VlmStats {
        std::mem::take(&mut *self.lock())
    }

    /// The wrapped model.
    pub fn inner(&self) -> &V {
        &self.inner
    }
}

#[async_trait]
impl<V: VisionLanguageModel> VisionLanguageModel for MeteredVlm<V> {
    async fn complete(&self, req: VlmRequest) -> Result<VlmResponse, VlmError> {
        let start = Instant::now();
        self.lock().record_request(req.kind);
        let result = self.inner.complete(req).await;
        match &result {
            Ok(reply) => self.lock().record_success(reply),
            Err(e) => self.lock().record_failure(e, start.elapsed().as_secs_f64() * 1e3),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vlm::ScriptedVlm;

    #[tokio::test]
    async fn sums_usage_cost_and_attempts() {
        let mut a = VlmResponse::from_text("a").with_usage(Usage {
            prompt_tokens: 100,
            completion_tokens: 10,
            ..Usage::default()
        });
        a.cost_usd = Some(0.5);
        a.attempts = 2;
        let b = VlmResponse::from_text("b").with_usage(Usage {
            prompt_tokens: 50,
            completion_tokens: 5,
            cached_tokens: 20,
            cache_write_tokens: 0,
        });
        let vlm = MeteredVlm::new(
            ScriptedVlm::new().then_reply(a).then_reply(b).then_error(VlmError::Timeout { after_ms: 1 }),
        );
        for _ in 0..3 {
            let _ = vlm.complete(VlmRequest::new("s").text("u")).await;
        }
        let s = vlm.take_stats();
        assert_eq!((s.calls, s.successes, s.failures, s.attempts), (3, 2, 1, 3));
        assert_eq!(
            s.usage,
            Usage { prompt_tokens: 150, completion_tokens: 15, cached_tokens: 20, cache_write_tokens: 0 }
        );
        assert_eq!(s.cost_usd, 0.5);
        assert_eq!(s.failures_by_kind.get("timeout"), Some(&1));
        assert!((s.success_rate() - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(vlm.stats(), VlmStats::default());
    }
}
