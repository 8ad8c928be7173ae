//! The VLM watchdog: what the
//! robot does while no VLM response arrives.
//!
//! | tier | elapsed since the last response | behaviour |
//! | --- | --- | --- |
//! | `CONTINUE` | < 3 s | keep the last command, decayed by `exp(−t/τ)`, τ = 2 s |
//! | `STOP_WAIT` | 3–10 s | stop and wait |
//! | `LOCAL_NAV` | 10–30 s | hand over to the frontier planner |
//! | `RETURN_HOME` | ≥ 30 s | navigate to the start pose and stop |
//!
//! The tier is monotone in the elapsed time. A negative elapsed time (the
//! clock went backwards) counts as zero; NaN counts as "never responded".
//!
//! ```
//! use nav_safety::watchdog::{Watchdog, WatchdogTier};
//! use nav_safety::guard::VelocityTarget;
//! let mut dog = Watchdog::new(Default::default());
//! dog.record_response(10.0);
//! assert_eq!(dog.tier(12.0), WatchdogTier::Continue);
//! let last = VelocityTarget { linear: 0.12, angular: 0.25, duration_s: 3.0 };
//! let v = dog.command(12.0, &last);
//! assert!((v.linear - 0.12 * (-1.0f64).exp()).abs() < 1e-12); // 36.8 % after 2 s
//! assert_eq!(dog.tier(45.0), WatchdogTier::ReturnHome);
//! ```

use crate::config::WatchdogConfig;
use crate::guard::VelocityTarget;
use serde::{Deserialize, Serialize};

/// Degradation tier, ordered from normal to most degraded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WatchdogTier {
    /// Keep going with decaying velocity.
    Continue,
    /// Stop and wait for the VLM.
    StopWait,
    /// Fall back to local (frontier) exploration.
    LocalNav,
    /// Go back to the start.
    ReturnHome,
}

impl WatchdogTier {
    /// The tier name (`CONTINUE`, `STOP_WAIT`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            WatchdogTier::Continue => "CONTINUE",
            WatchdogTier::StopWait => "STOP_WAIT",
            WatchdogTier::LocalNav => "LOCAL_NAV",
            WatchdogTier::ReturnHome => "RETURN_HOME",
        }
    }

    /// What to tell the user on entering the tier, if
    /// anything.
    pub fn announcement(self) -> Option<&'static str> {
        match self {
            WatchdogTier::Continue => None,
            WatchdogTier::StopWait => Some("I'm thinking... please wait."),
            WatchdogTier::LocalNav => Some("Connection slow. Switching to autonomous exploration."),
            WatchdogTier::ReturnHome => Some("Extended connection loss. Returning to start."),
        }
    }
}

impl std::fmt::Display for WatchdogTier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Tier evaluation and velocity decay, with the time of the last response.
#[derive(Debug, Clone, PartialEq)]
pub struct Watchdog {
    config: WatchdogConfig,
    last_response_s: Option<f64>,
}

impl Watchdog {
    /// A watchdog that has seen no response yet (call
    /// [`Self::record_response`] when exploration starts).
    pub fn new(config: WatchdogConfig) -> Self {
        Self { config, last_response_s: None }
    }

    /// The parameters.
    pub fn config(&self) -> &WatchdogConfig {
        &self.config
    }

    /// Notes a VLM response (or the start of exploration) at `now_s`.
    pub fn record_response(&mut self, now_s: f64) {
        if now_s.is_finite() {
            self.last_response_s = Some(self.last_response_s.map_or(now_s, |t| t.max(now_s)));
        }
    }

    /// Seconds since the last response (infinite before the first).
    pub fn elapsed(&self, now_s: f64) -> f64 {
        self.last_response_s.map_or(f64::INFINITY, |t| now_s - t)
    }

    /// The tier at `now_s`.
    pub fn tier(&self, now_s: f64) -> WatchdogTier {
        self.tier_for(self.elapsed(now_s))
    }

    /// The tier for an elapsed time. Monotone non-decreasing.
    pub fn tier_for(&self, elapsed_s: f64) -> WatchdogTier {
        let t = if elapsed_s.is_nan() { f64::INFINITY } else { elapsed_s.max(0.0) };
        let c = &self.config;
        if t < c.continue_s {
            WatchdogTier::Continue
        } else if t < c.stop_wait_s {
            WatchdogTier::StopWait
        } else if t < c.local_nav_s {
            WatchdogTier::LocalNav
        } else {
            WatchdogTier::ReturnHome
        }
    }

    /// The decay factor `exp(−t/τ)` for an elapsed time (1 at t ≤ 0, 0
    /// for NaN).
    pub fn decay_factor(&self, elapsed_s: f64) -> f64 {
        if elapsed_s.is_nan() {
            return 0.0;
        }
        (-elapsed_s.max(0.0) / self.config.decay_tau_s).exp()
    }

    /// Velocity decay: both components scaled by the decay
    /// factor; a |linear| below `zero_below_mps` (0.01 m/s) becomes zero.
    pub fn decay(&self, elapsed_s: f64, last: &VelocityTarget) -> VelocityTarget {
        let k = self.decay_factor(elapsed_s);
        let mut linear = last.linear * k;
        if linear.is_nan() || linear.abs() < self.config.zero_below_mps {
            linear = 0.0;
        }
        let angular = last.angular * k;
        VelocityTarget { linear, angular: if angular.is_finite() { angular } else { 0.0 }, duration_s: last.duration_s }
    }

    /// The command to publish at `now_s` given the last VLM-derived target:
    /// the decayed target in `CONTINUE`, zero in every other tier (the
    /// caller starts the local planner or the return home).
    pub fn command(&self, now_s: f64, last: &VelocityTarget) -> VelocityTarget {
        let elapsed = self.elapsed(now_s);
        match self.tier_for(elapsed) {
            WatchdogTier::Continue => self.decay(elapsed, last),
            _ => VelocityTarget { duration_s: last.duration_s, ..VelocityTarget::STOP },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn seed_decay_numbers() {
        let dog = Watchdog::new(WatchdogConfig::default());
        let last = VelocityTarget { linear: 0.18, angular: 0.45, duration_s: 3.0 };
        let pct = |t: f64| dog.decay(t, &last).linear / 0.18 * 100.0;
        assert!((pct(2.0) - 36.8).abs() < 0.05, "{}", pct(2.0));
        assert!((pct(3.0) - 22.3).abs() < 0.05, "{}", pct(3.0));
        assert!((dog.decay_factor(5.0) - 0.082).abs() < 0.001);
        assert_eq!(dog.decay(0.0, &last), last);
        // 0.05 m/s decays below 0.01 m/s after τ·ln 5 ≈ 3.2 s.
        let slow = VelocityTarget { linear: 0.05, angular: 0.1, duration_s: 1.0 };
        assert_eq!(dog.decay(3.3, &slow).linear, 0.0);
        assert!(dog.decay(3.1, &slow).linear > 0.0);
    }

    #[test]
    fn tiers_at_the_seed_thresholds() {
        let mut dog = Watchdog::new(WatchdogConfig::default());
        assert_eq!(dog.tier(0.0), WatchdogTier::ReturnHome, "no response ever");
        dog.record_response(100.0);
        for (t, tier) in [
            (100.0, WatchdogTier::Continue),
            (102.99, WatchdogTier::Continue),
            (103.0, WatchdogTier::StopWait),
            (109.9, WatchdogTier::StopWait),
            (110.0, WatchdogTier::LocalNav),
            (129.9, WatchdogTier::LocalNav),
            (130.0, WatchdogTier::ReturnHome),
            (99.0, WatchdogTier::Continue),
        ] {
            assert_eq!(dog.tier(t), tier, "t={t}");
        }
        let last = VelocityTarget { linear: 0.12, angular: 0.0, duration_s: 3.0 };
        assert_eq!(dog.command(104.0, &last).linear, 0.0);
        assert_eq!(dog.tier_for(f64::NAN), WatchdogTier::ReturnHome);
        assert_eq!(WatchdogTier::StopWait.to_string(), "STOP_WAIT");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        #[test]
        fn tier_is_monotone_and_decay_never_grows(
            a in -10.0f64..100.0, b in -10.0f64..100.0,
            continue_s in 0.1f64..5.0, d1 in 0.1f64..10.0, d2 in 0.1f64..30.0,
            v in -1.0f64..1.0, w in -1.0f64..1.0,
        ) {
            let cfg = WatchdogConfig { continue_s, stop_wait_s: continue_s + d1, local_nav_s: continue_s + d1 + d2, ..Default::default() };
            let dog = Watchdog::new(cfg);
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            prop_assert!(dog.tier_for(lo) <= dog.tier_for(hi));
            prop_assert!(dog.tier_for(hi) <= dog.tier_for(f64::INFINITY));
            let last = VelocityTarget { linear: v, angular: w, duration_s: 1.0 };
            let (x, y) = (dog.decay(lo, &last), dog.decay(hi, &last));
            prop_assert!(y.linear.abs() <= x.linear.abs() && x.linear.abs() <= v.abs());
            prop_assert!(y.angular.abs() <= x.angular.abs() + 1e-15 && x.angular.abs() <= w.abs());
            prop_assert!(x.linear * v >= 0.0);
        }
    }
}
