//! The network monitor: a rolling record of the last
//! 20 VLM calls and the tier of API health it implies.
//!
//! Tiers, most severe first: **offline** — no successful call for 30 s;
//! **degraded** — none for 10 s; **elevated** — mean latency of the
//! recorded calls above 3 s; otherwise **normal**. The silence is measured
//! from the last success, or from [`NetworkMonitor::new`]'s start time
//! when nothing has succeeded yet.
//!
//! ```
//! use nav_safety::network::{NetworkMonitor, NetworkTier};
//! let mut net = NetworkMonitor::new(Default::default(), 0.0);
//! net.record_call(1.0, 1.2, true);
//! assert_eq!(net.tier(2.0), NetworkTier::Normal);
//! assert_eq!(net.tier(12.0), NetworkTier::Degraded);
//! assert_eq!(net.tier(31.5), NetworkTier::Offline);
//! ```

use crate::config::NetworkConfig;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// API health tier; the discriminant is the tier number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkTier {
    /// Tier 0.
    Normal = 0,
    /// Tier 1: slow answers.
    Elevated = 1,
    /// Tier 2: no success for a while.
    Degraded = 2,
    /// Tier 3: no success for long.
    Offline = 3,
}

impl NetworkTier {
    /// The tier number (0–3).
    pub fn number(self) -> u8 {
        self as u8
    }

    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkTier::Normal => "normal",
            NetworkTier::Elevated => "elevated",
            NetworkTier::Degraded => "degraded",
            NetworkTier::Offline => "offline",
        }
    }
}

/// One recorded call.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// When it finished, s.
    pub at_s: f64,
    /// Latency, s.
    pub latency_s: f64,
    /// Whether it produced a usable answer.
    pub success: bool,
}

/// Rolling API health.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkMonitor {
    config: NetworkConfig,
    calls: VecDeque<CallRecord>,
    since_s: f64,
    last_success_s: Option<f64>,
}

impl NetworkMonitor {
    /// A monitor started at `start_s`.
    pub fn new(config: NetworkConfig, start_s: f64) -> Self {
        let cap = config.window.max(1);
        Self { config, calls: VecDeque::with_capacity(cap), since_s: start_s, last_success_s: None }
    }

    /// Records a finished call. A non-finite or negative latency is stored
    /// as the configured elevated threshold's double (it was certainly not
    /// fast) so that the mean stays finite.
    pub fn record_call(&mut self, now_s: f64, latency_s: f64, success: bool) {
        let latency_s =
            if latency_s.is_finite() && latency_s >= 0.0 { latency_s } else { 2.0 * self.config.elevated_latency_s };
        if self.calls.len() >= self.config.window.max(1) {
            self.calls.pop_front();
        }
        self.calls.push_back(CallRecord { at_s: now_s, latency_s, success });
        if success && now_s.is_finite() {
            self.last_success_s = Some(self.last_success_s.map_or(now_s, |t| t.max(now_s)));
        }
    }

    /// The recorded calls, oldest first.
    pub fn calls(&self) -> impl Iterator<Item = &CallRecord> {
        self.calls.iter()
    }

    /// Mean latency of the recorded calls, s (`None` when empty).
    pub fn mean_latency_s(&self) -> Option<f64> {
        (!self.calls.is_empty()).then(|| self.calls.iter().map(|c| c.latency_s).sum::<f64>() / self.calls.len() as f64)
    }

    /// Fraction of recorded calls that succeeded (`None` when empty).
    pub fn success_rate(&self) -> Option<f64> {
        (!self.calls.is_empty())
            .then(|| self.calls.iter().filter(|c| c.success).count() as f64 / self.calls.len() as f64)
    }

    /// Seconds without a successful call at `now_s`.
    pub fn silence_s(&self, now_s: f64) -> f64 {
        now_s - self.last_success_s.unwrap_or(self.since_s)
    }

    /// The time up to `now_s` was no silence of the model's: the operator
    /// held the run (a pause), so no call was asked for. Silence counts
    /// from `now_s` on.
    pub fn excuse_silence(&mut self, now_s: f64) {
        if now_s.is_finite() {
            self.since_s = self.since_s.max(now_s);
            if let Some(t) = self.last_success_s.as_mut() {
                *t = t.max(now_s);
            }
        }
    }

    /// The tier at `now_s`.
    pub fn tier(&self, now_s: f64) -> NetworkTier {
        let silence = self.silence_s(now_s);
        if silence.is_nan() || silence >= self.config.offline_after_s {
            NetworkTier::Offline
        } else if silence >= self.config.degraded_after_s {
            NetworkTier::Degraded
        } else if self.mean_latency_s().is_some_and(|m| m > self.config.elevated_latency_s) {
            NetworkTier::Elevated
        } else {
            NetworkTier::Normal
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers() {
        let mut net = NetworkMonitor::new(NetworkConfig::default(), 0.0);
        assert_eq!(net.tier(5.0), NetworkTier::Normal);
        assert_eq!(net.tier(10.0), NetworkTier::Degraded);
        net.record_call(10.0, 4.0, true);
        assert_eq!(net.tier(10.5), NetworkTier::Elevated);
        for i in 0..20 {
            net.record_call(11.0 + f64::from(i), 1.0, true);
        }
        assert_eq!(net.calls().count(), 20);
        assert_eq!(net.mean_latency_s(), Some(1.0));
        assert_eq!(net.tier(31.0), NetworkTier::Normal);
        net.record_call(35.0, 8.0, false);
        assert_eq!(net.success_rate(), Some(0.95));
        assert_eq!(net.tier(40.5), NetworkTier::Degraded);
        assert_eq!(net.tier(60.0), NetworkTier::Offline);
        assert_eq!(NetworkTier::Offline.number(), 3);
        net.record_call(61.0, f64::NAN, false);
        assert!(net.mean_latency_s().unwrap().is_finite());
    }
}
