//! [`LedgerVlm`]: the bill of a run. Every call runs to its end in its own
//! task, so a reply that arrives after the caller stopped waiting (a loop's
//! inference timeout, a superseded request) is still counted — the provider
//! bills it all the same.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::Notify;

use super::{
    BackendInfo, CostBudget, LinkFault, RequestKind, VisionLanguageModel, VlmError, VlmRequest, VlmResponse, VlmStats,
};

#[derive(Debug, Default)]
struct Shared {
    stats: Mutex<VlmStats>,
    in_flight: AtomicUsize,
    idle: Notify,
    /// The first link fault seen (the run ends on it).
    link: Mutex<Option<ModelLinkFailure>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, VlmStats> {
        self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn link(&self) -> MutexGuard<'_, Option<ModelLinkFailure>> {
        self.link.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Why a run's model cannot be reached: a link fault retrying cannot heal
/// ([`VlmError::link_fault`]), or any connection failure before the run's
/// first reply. One line, naming the backend and its URL (never a key).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ModelLinkFailure {
    /// `provider/model`.
    pub backend: String,
    /// The URL requests went to, without query string or user info.
    pub endpoint: Option<String>,
    /// What is wrong.
    pub fault: LinkFault,
    /// The error as the backend reported it (redacted, one line).
    pub message: String,
    /// For [`LinkFault::ReplayMiss`]: where and how the replayed run left
    /// its recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub divergence: Option<Box<super::calls::Divergence>>,
}

impl std::fmt::Display for ModelLinkFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(d) = &self.divergence {
            return write!(f, "{d}");
        }
        write!(f, "cannot use the model {}", self.backend)?;
        if let Some(url) = &self.endpoint {
            write!(f, " at {url}")?;
        }
        write!(f, ": {} ({})", self.fault.describe(), self.message)
    }
}

impl ModelLinkFailure {
    /// The failure `error` means for a run whose model is `info`, if it is
    /// one: a link fault, or a connection failure before any reply
    /// (`answered_before` false). Timeouts never are.
    pub fn classify(error: &VlmError, info: &BackendInfo, answered_before: bool) -> Option<Self> {
        let fault = error.link_fault().or_else(|| match error {
            VlmError::Connection { message } if !answered_before && !message.contains("no response within") => {
                Some(LinkFault::Unreachable)
            }
            _ => None,
        })?;
        let message: String = error.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
        Some(Self {
            backend: info.to_string(),
            endpoint: info.endpoint.as_deref().map(public_url),
            fault,
            message: message.chars().take(300).collect(),
            divergence: match error {
                VlmError::ReplayMiss { divergence } => Some(divergence.clone()),
                _ => None,
            },
        })
    }
}

/// `url` without its query string, fragment and user info (where keys
/// travel).
fn public_url(url: &str) -> String {
    let cut = url.find(['?', '#']).map_or(url, |i| &url[..i]);
    match (cut.find("://"), cut.find('@')) {
        (Some(scheme), Some(at)) if at > scheme => format!("{}{}", &cut[..scheme + 3], &cut[at + 1..]),
        _ => cut.to_string(),
    }
}

/// Wraps a model and keeps the run's [`VlmStats`] the way a bill would:
/// each call is spawned as its own task that records its outcome when it
/// ends, whether or not the caller is still waiting. A call whose caller
/// gave up keeps running until the backend's own deadline; [`settle`]
/// waits for those before the run's totals are read.
///
/// Needs a Tokio runtime (calls are spawned).
///
/// ```
/// use std::time::Duration;
/// use nav_planner::vlm::{LedgerVlm, ScriptStep, ScriptedVlm, VisionLanguageModel, VlmRequest, VlmResponse};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let late = ScriptStep::Reply(VlmResponse::from_text("late"));
/// let ledger = LedgerVlm::new(ScriptedVlm::new().then_delayed(Duration::from_millis(50), late));
/// // the caller stops waiting after 10 ms…
/// let gave_up = tokio::time::timeout(Duration::from_millis(10), ledger.complete(VlmRequest::new("s").text("u"))).await;
/// assert!(gave_up.is_err());
/// // …but the answered request still counts once it arrives
/// ledger.settle(Duration::from_secs(1)).await;
/// assert_eq!(ledger.stats().successes, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// [`settle`]: LedgerVlm::settle
pub struct LedgerVlm {
    inner: Arc<dyn VisionLanguageModel>,
    shared: Arc<Shared>,
    budget: Option<Arc<CostBudget>>,
    halt: Option<Arc<AtomicBool>>,
}

impl std::fmt::Debug for LedgerVlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LedgerVlm").field("model", &self.inner.describe()).field("stats", &self.stats()).finish()
    }
}

impl LedgerVlm {
    /// Wraps a model with an empty ledger.
    pub fn new(inner: impl VisionLanguageModel + 'static) -> Self {
        Self::shared(Arc::new(inner))
    }

    /// Wraps a shared model with an empty ledger.
    pub fn shared(inner: Arc<dyn VisionLanguageModel>) -> Self {
        Self { inner, shared: Arc::new(Shared::default()), budget: None, halt: None }
    }

    /// Bills every answered call to `budget` too, and refuses calls once it
    /// is reached ([`VlmError::CostLimit`], nothing sent, not counted as a
    /// failure: no request was made).
    pub fn with_budget(mut self, budget: Arc<CostBudget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Sets `flag` when the run must end: a link fault
    /// ([`LedgerVlm::link_failure`]) or a refused call of a reached budget.
    /// The loops end at their next step once it is set (pass the same flag
    /// to their observer's halt, or as the explore loop's shutdown).
    pub fn with_halt(mut self, flag: Arc<AtomicBool>) -> Self {
        self.halt = Some(flag);
        self
    }

    /// The first link fault of the run, if one happened: the model cannot
    /// be reached or used, and retrying will not help.
    pub fn link_failure(&self) -> Option<ModelLinkFailure> {
        self.shared.link().clone()
    }

    /// Wraps another model on the **same** bill: a second backend of the
    /// same run (the scene analyzer's own endpoint, `[scene]`) whose calls,
    /// tokens and cost belong in the run's totals. [`settle`](Self::settle)
    /// on either waits for both.
    pub fn sibling(&self, inner: Arc<dyn VisionLanguageModel>) -> Self {
        Self { inner, shared: Arc::clone(&self.shared), budget: self.budget.clone(), halt: self.halt.clone() }
    }

    /// The totals so far (calls still in flight are not in them yet).
    pub fn stats(&self) -> VlmStats {
        self.shared.lock().clone()
    }

    /// Calls started whose outcome is not recorded yet.
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::SeqCst)
    }

    /// Waits until no call is in flight or `max_wait` passed; returns how
    /// many calls were still in flight (0 = the ledger is complete).
    pub async fn settle(&self, max_wait: Duration) -> usize {
        let until = tokio::time::Instant::now() + max_wait;
        loop {
            let idle = self.shared.idle.notified();
            let left = self.in_flight();
            if left == 0 {
                return 0;
            }
            if tokio::time::timeout_at(until, idle).await.is_err() {
                return self.in_flight();
            }
        }
    }
}

#[async_trait]
impl VisionLanguageModel for LedgerVlm {
    async fn complete(&self, req: VlmRequest) -> Result<VlmResponse, VlmError> {
        let halt = |flag: &Option<Arc<AtomicBool>>| {
            if let Some(f) = flag {
                f.store(true, Ordering::SeqCst);
            }
        };
        if let Some(b) = self.budget.as_ref().filter(|b| b.reached()) {
            halt(&self.halt);
            return Err(VlmError::CostLimit { limit_usd: b.limit_usd(), spent_usd: b.spent_usd() });
        }
        if let Some(failure) = self.link_failure() {
            // the run is ending on it: send nothing more to a link that cannot work
            halt(&self.halt);
            return Err(match failure.divergence {
                Some(divergence) => VlmError::ReplayMiss { divergence },
                None => VlmError::Connection { message: failure.to_string() },
            });
        }
        let inner = Arc::clone(&self.inner);
        let shared = Arc::clone(&self.shared);
        let budget = self.budget.clone();
        let flag = self.halt.clone();
        let info = self.inner.describe();
        shared.in_flight.fetch_add(1, Ordering::SeqCst);
        shared.lock().record_request(req.kind);
        let task = tokio::spawn(async move {
            let start = Instant::now();
            let result = inner.complete(req).await;
            {
                let mut stats = shared.lock();
                match &result {
                    Ok(reply) => {
                        stats.record_success(reply);
                        if let Some(b) = &budget {
                            b.add(reply.cost_usd.unwrap_or(0.0));
                            if b.reached() {
                                halt(&flag);
                            }
                        }
                    }
                    Err(e) => {
                        stats.record_failure(e, start.elapsed().as_secs_f64() * 1e3);
                        if let Some(failure) = ModelLinkFailure::classify(e, &info, stats.successes > 0) {
                            shared.link().get_or_insert(failure);
                            halt(&flag);
                        }
                    }
                }
            }
            shared.in_flight.fetch_sub(1, Ordering::SeqCst);
            shared.idle.notify_waiters();
            result
        });
        task.await.unwrap_or_else(|e| {
            Err(VlmError::Connection { message: format!("the model call task ended abnormally: {e}") })
        })
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
    use crate::vlm::{ScriptStep, ScriptedVlm, Usage};

    #[tokio::test]
    async fn a_sibling_bills_to_the_same_ledger() {
        let planner = LedgerVlm::new(ScriptedVlm::new().then_text("a"));
        let scene = planner.sibling(Arc::new(ScriptedVlm::new().then_text("b")));
        planner.complete(VlmRequest::new("s").text("u")).await.unwrap();
        assert_eq!(scene.complete(VlmRequest::new("s").text("u")).await.unwrap().text, "b");
        assert_eq!(planner.stats().successes, 2);
        assert_eq!(scene.stats().successes, 2);
    }

    #[tokio::test]
    async fn late_superseded_and_failed_calls_are_all_on_the_bill() {
        let usage = Usage { prompt_tokens: 100, completion_tokens: 10, ..Usage::default() };
        let scripted = ScriptedVlm::new()
            .then_reply(VlmResponse::from_text("on time").with_usage(usage))
            .then_delayed(Duration::from_millis(80), ScriptStep::Reply(VlmResponse::from_text("late")))
            .then_delayed(Duration::from_millis(40), ScriptStep::Reply(VlmResponse::from_text("superseded")))
            .then_error(VlmError::Http { status: 500, message: "boom".into() });
        let ledger = LedgerVlm::new(scripted);
        let req = || VlmRequest::new("s").text("u");
        assert!(ledger.complete(req()).await.is_ok());
        // the caller's inference timeout passes before the reply
        assert!(tokio::time::timeout(Duration::from_millis(5), ledger.complete(req())).await.is_err());
        // a newer request replaces this one: its future is dropped
        drop(ledger.complete(req()));
        let superseded = ledger.complete(req());
        tokio::select! {
            _ = superseded => {}
            () = tokio::time::sleep(Duration::from_millis(1)) => {}
        }
        assert!(ledger.complete(req()).await.is_err());
        assert_eq!(ledger.settle(Duration::from_secs(2)).await, 0);
        let stats = ledger.stats();
        // the call dropped before it was polled never started; the other four ended
        assert_eq!((stats.calls, stats.successes, stats.failures), (4, 3, 1), "{stats:?}");
        assert_eq!(stats.usage.prompt_tokens, 100);
        assert_eq!(stats.failures_by_kind["http"], 1);
    }

    #[tokio::test]
    async fn a_reached_budget_refuses_calls_without_counting_them() {
        let priced = |cost| VlmResponse { cost_usd: Some(cost), ..VlmResponse::from_text("ok") };
        let scripted = ScriptedVlm::new().then_reply(priced(0.004)).then_reply(priced(0.007)).then_reply(priced(0.1));
        let budget = Arc::new(CostBudget::new(0.01).expect("a valid limit"));
        let ledger = LedgerVlm::new(scripted).with_budget(Arc::clone(&budget));
        let req = || VlmRequest::new("s").text("u");
        assert!(ledger.complete(req()).await.is_ok());
        assert!(!budget.reached());
        assert!(ledger.complete(req()).await.is_ok());
        assert!(budget.reached());
        let refused = ledger.complete(req()).await;
        assert!(matches!(refused, Err(VlmError::CostLimit { .. })), "{refused:?}");
        let stats = ledger.stats();
        assert_eq!((stats.calls, stats.successes, stats.failures), (2, 2, 0));
        assert!((budget.spent_usd() - 0.011).abs() < 1e-12);
    }
}
