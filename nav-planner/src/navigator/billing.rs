//! The bill of a run: [`BackendSummary`] (one backend's answered and failed
//! calls, tokens, cost and mean latency, from its [`LedgerVlm`]) and how long
//! an episode waits for replies its loop stopped waiting for.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::vlm::{LedgerVlm, VisionLanguageModel as _};

/// One backend's share of a run: what its bill would show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackendSummary {
    /// `provider/model`.
    pub backend: String,
    /// Answered calls.
    pub successes: u64,
    /// Failed calls.
    pub failures: u64,
    /// Mean wall time per call, failed ones included, ms.
    pub mean_latency_ms: f64,
    /// Prompt tokens of answered calls.
    pub prompt_tokens: u64,
    /// Completion tokens of answered calls.
    pub completion_tokens: u64,
    /// Estimated cost, US dollars.
    pub cost_usd: f64,
    /// Calls still unanswered when the run's ledger was closed.
    pub unsettled: u64,
}

impl BackendSummary {
    /// The summary of one backend's ledger.
    pub fn from_ledger(ledger: &LedgerVlm, unsettled: usize) -> Self {
        let s = ledger.stats();
        Self {
            backend: ledger.describe().to_string(),
            successes: s.successes,
            failures: s.failures,
            mean_latency_ms: s.mean_latency_ms(),
            prompt_tokens: s.usage.prompt_tokens,
            completion_tokens: s.usage.completion_tokens,
            cost_usd: s.cost_usd,
            unsettled: unsettled as u64,
        }
    }
}

/// One backend's line in a report: `backend openai/gpt-4o-mini: 12 ok, 1
/// failed, mean latency 850 ms, tokens 9000+400, $0.0016`.
pub fn backend_line(b: &BackendSummary) -> String {
    format!(
        "backend {}: {} ok, {} failed, mean latency {:.0} ms, tokens {}+{}, ${:.4}{}",
        b.backend,
        b.successes,
        b.failures,
        b.mean_latency_ms,
        b.prompt_tokens,
        b.completion_tokens,
        b.cost_usd,
        if b.unsettled > 0 { format!(", {} unanswered at the end", b.unsettled) } else { String::new() }
    )
}

/// How long an episode waits, after its loop ended, for model calls its
/// loop stopped waiting for, so their replies are on the bill.
pub const LEDGER_SETTLE: Duration = Duration::from_secs(30);
