//! Adaptive VLM call frequency: when to
//! call the VLM, when a call may be skipped or sent without an image, and
//! the per-minute statistics line.
//!
//! Decision rules, in order:
//!
//! 1. the first decision is always a call;
//! 2. a fired trigger calls at once (the triggers have their own 2 s
//!    cooldown);
//! 3. otherwise **wait** until the base period (5 s) has passed since the
//!    last call *or skip*;
//! 4. right after a safety override or a stuck detection, call (never
//!    skip);
//! 5. **skip**, there being no trigger by rule 2, when a navigation goal is
//!    making progress (the plan stands) and less than 15 s have passed
//!    since the last call, or when frame similarity > 0.92 AND nearest
//!    obstacle > 2 m (the scene has not changed) and less than 10 s have
//!    passed (the backstop);
//! 6. otherwise call; **text-only** (no image) when similarity > 0.95 AND
//!    nearest obstacle > 3 m and the call is not triggered or after an
//!    override.
//!
//! A skip counts as a decision, so in a static scene the pattern is call
//! (t = 0), skip (5 s), call (10 s, backstop): half the calls.
//!
//! ```
//! use nav_safety::schedule::{CallDecision, CallScheduler, ScheduleInput};
//! let mut s = CallScheduler::new(Default::default());
//! let quiet = |now_s| ScheduleInput {
//!     now_s, triggers: &[], similarity: Some(0.99), nearest_obstacle_m: 4.0, after_override: false, goal_progressing: false,
//! };
//! assert!(matches!(s.decide(&quiet(0.0)), CallDecision::Call { .. }));
//! assert_eq!(s.decide(&quiet(2.0)), CallDecision::Wait);
//! assert!(matches!(s.decide(&quiet(5.0)), CallDecision::Skip { .. }));
//! assert!(matches!(s.decide(&quiet(10.0)), CallDecision::Call { text_only: true, .. }));
//! ```

use crate::config::ScheduleConfig;
use crate::network::NetworkTier;
use crate::triggers::TriggerEvent;
use serde::Serialize;
use std::collections::VecDeque;

/// What the caller of [`CallScheduler::decide`] observed this tick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScheduleInput<'a> {
    /// Current time, s.
    pub now_s: f64,
    /// Events from [`EventTriggers::check`](crate::triggers::EventTriggers::check).
    pub triggers: &'a [TriggerEvent],
    /// Similarity of the current frame to the last frame sent (`None` when
    /// there is no frame or nothing was sent yet).
    pub similarity: Option<f64>,
    /// Nearest obstacle in any direction, m (`f64::INFINITY` if none).
    pub nearest_obstacle_m: f64,
    /// A safety override or stuck detection happened since the last call.
    pub after_override: bool,
    /// A navigation goal is being carried out and the robot is making
    /// progress along it: the plan stands, so a base-period call waits for
    /// the backstop (rule 5).
    pub goal_progressing: bool,
}

/// Why a call is made.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum CallReason {
    /// No call yet.
    First,
    /// An event trigger.
    Trigger {
        /// The event.
        event: TriggerEvent,
    },
    /// The base period elapsed.
    BasePeriod,
    /// The maximum interval elapsed (skipping not allowed).
    Backstop,
    /// A safety override or stuck detection since the last call.
    AfterOverride,
    /// Nothing is in progress: the robot waits for a decision
    /// ([`CallScheduler::decide_idle`]).
    Idle,
}

/// The scheduler's decision for this tick.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum CallDecision {
    /// Call the VLM now.
    Call {
        /// Send no image (static scene, open space).
        text_only: bool,
        /// Why.
        reasons: Vec<CallReason>,
    },
    /// The period is up but the scene has not changed: skip this call.
    Skip {
        /// Why (for the log).
        reason: String,
    },
    /// Nothing to do yet.
    Wait,
}

/// Statistics over the rolling window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ScheduleStats {
    /// Calls per minute.
    pub calls_per_min: f64,
    /// Triggered calls per minute.
    pub triggered_per_min: f64,
    /// Skips per minute.
    pub skipped_per_min: f64,
    /// Mean latency of the calls finished in the window, ms.
    pub mean_latency_ms: Option<f64>,
}

impl ScheduleStats {
    /// The log line: `VLM stats: X calls/min (Y triggered, Z
    /// skipped), avg latency Nms, tier T`.
    pub fn line(&self, tier: NetworkTier) -> String {
        let latency = self.mean_latency_ms.map_or_else(|| "n/a".to_owned(), |ms| format!("{ms:.0}ms"));
        format!(
            "VLM stats: {} calls/min ({} triggered, {} skipped), avg latency {latency}, tier {}",
            fmt_rate(self.calls_per_min),
            fmt_rate(self.triggered_per_min),
            fmt_rate(self.skipped_per_min),
            tier.number()
        )
    }
}

fn fmt_rate(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 { format!("{x:.0}") } else { format!("{x:.1}") }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Event {
    Call {
        triggered: bool,
    },
    /// Further requests a decision made (a perception sub-call and the
    /// follow-up it needs).
    Requests(u32),
    Skip,
    Latency(f64),
}

/// Counts over a whole run: every request, not a window.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct RunTotals {
    /// Requests sent to the model: one per call decided, plus the further
    /// requests of a decision ([`CallScheduler::record_requests`]).
    pub calls: u64,
    /// Calls made because an event trigger fired.
    pub triggered: u64,
    /// Calls skipped (frame similarity).
    pub skipped: u64,
    /// Time of the first decision, s.
    pub first_s: Option<f64>,
    /// Summed latency of the finished calls, s, and how many.
    latency: (f64, u64),
}

impl RunTotals {
    /// Mean latency of the finished calls, ms.
    pub fn mean_latency_ms(&self) -> Option<f64> {
        (self.latency.1 > 0).then(|| self.latency.0 / self.latency.1 as f64 * 1000.0)
    }

    /// The run's statistics line: `VLM stats for the run: N calls in T min
    /// (X calls/min; Y triggered, Z skipped), avg latency Nms`.
    pub fn line(&self, now_s: f64) -> String {
        let minutes = self.first_s.map_or(0.0, |t| (now_s - t).max(0.0) / 60.0);
        let rate = if minutes > 0.0 { self.calls as f64 / minutes } else { 0.0 };
        let latency = self.mean_latency_ms().map_or_else(|| "n/a".to_owned(), |ms| format!("{ms:.0}ms"));
        format!(
            "VLM stats for the run: {} calls in {minutes:.1} min ({} calls/min; {} triggered, {} skipped), avg latency {latency}",
            self.calls,
            fmt_rate((rate * 10.0).round() / 10.0),
            self.triggered,
            self.skipped
        )
    }
}

/// Decides when to call the VLM and keeps the statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct CallScheduler {
    config: ScheduleConfig,
    last_call_s: Option<f64>,
    last_decision_s: Option<f64>,
    last_report_s: Option<f64>,
    events: VecDeque<(f64, Event)>,
    totals: RunTotals,
}

impl CallScheduler {
    /// A scheduler that has not called yet.
    pub fn new(config: ScheduleConfig) -> Self {
        Self {
            config,
            last_call_s: None,
            last_decision_s: None,
            last_report_s: None,
            events: VecDeque::new(),
            totals: RunTotals::default(),
        }
    }

    /// Counts over the whole run so far.
    pub fn totals(&self) -> RunTotals {
        self.totals
    }

    /// Records `n` further requests a decided call made at `now_s` (a
    /// perception sub-call's follow-up, a scene description): each request
    /// sent counts in the statistics, not only the first of a decision.
    pub fn record_requests(&mut self, now_s: f64, n: u32) {
        if n > 0 {
            self.events.push_back((now_s, Event::Requests(n)));
            self.totals.calls += u64::from(n);
        }
        self.prune(now_s);
    }

    /// The parameters.
    pub fn config(&self) -> &ScheduleConfig {
        &self.config
    }

    /// Time of the last call, s.
    pub fn last_call_s(&self) -> Option<f64> {
        self.last_call_s
    }

    /// Decides, and records the decision (a call or a skip) in the
    /// statistics. Call [`EventTriggers::mark_call`](crate::triggers::EventTriggers::mark_call)
    /// when the answer is [`CallDecision::Call`].
    pub fn decide(&mut self, input: &ScheduleInput<'_>) -> CallDecision {
        let c = &self.config;
        let now = input.now_s;
        let sim = input.similarity.filter(|s| s.is_finite());
        let nearest = if input.nearest_obstacle_m.is_nan() { 0.0 } else { input.nearest_obstacle_m };
        let decision = match (self.last_call_s, self.last_decision_s) {
            (None, _) | (_, None) => CallDecision::Call { text_only: false, reasons: vec![CallReason::First] },
            (Some(last_call), Some(last_decision)) => {
                if !input.triggers.is_empty() {
                    let reasons = input.triggers.iter().map(|e| CallReason::Trigger { event: e.clone() }).collect();
                    CallDecision::Call { text_only: false, reasons }
                } else if now - last_decision < c.base_period_s {
                    CallDecision::Wait
                } else if input.after_override {
                    CallDecision::Call { text_only: false, reasons: vec![CallReason::AfterOverride] }
                } else {
                    let since = now - last_call;
                    let backstop = since.is_nan() || since >= c.max_interval_s;
                    let goal_backstop = since.is_nan() || since >= c.goal_max_interval_s;
                    let static_scene = sim.is_some_and(|s| s > c.skip_similarity);
                    if !goal_backstop && input.goal_progressing {
                        CallDecision::Skip {
                            reason: format!("goal in progress, {:.1}s since last call", now - last_call),
                        }
                    } else if !backstop && static_scene && nearest > c.skip_min_obstacle_m {
                        CallDecision::Skip {
                            reason: format!(
                                "scene unchanged (similarity {:.3}), nearest obstacle {nearest:.1}m, {:.1}s since last call",
                                sim.unwrap_or(0.0),
                                now - last_call
                            ),
                        }
                    } else {
                        let text_only =
                            sim.is_some_and(|s| s > c.text_only_similarity) && nearest > c.text_only_min_obstacle_m;
                        let reason = if backstop { CallReason::Backstop } else { CallReason::BasePeriod };
                        CallDecision::Call { text_only, reasons: vec![reason] }
                    }
                }
            }
        };
        match &decision {
            CallDecision::Call { reasons, .. } => {
                let triggered = reasons.iter().any(|r| matches!(r, CallReason::Trigger { .. }));
                self.record_call(now, triggered);
            }
            CallDecision::Skip { .. } => {
                self.last_decision_s = Some(now);
                self.events.push_back((now, Event::Skip));
                self.totals.skipped += 1;
                self.totals.first_s.get_or_insert(now);
            }
            CallDecision::Wait => {}
        }
        self.prune(now);
        decision
    }

    /// Decides for the fixed-rate loop ([`ScheduleMode::Fixed`](crate::config::ScheduleMode::Fixed)),
    /// asked once the base period has passed since the last call: always a
    /// call with the image, counted like every other.
    pub fn decide_fixed(&mut self, now_s: f64) -> CallDecision {
        let reason = if self.last_call_s.is_none() { CallReason::First } else { CallReason::BasePeriod };
        self.record_call(now_s, false);
        self.prune(now_s);
        CallDecision::Call { text_only: false, reasons: vec![reason] }
    }

    /// Decides for a robot with nothing in progress: always a call (with an
    /// image), since the robot waits for it, and counted in the statistics
    /// like every other — the rules above name its reason when one applies
    /// (first call, trigger, override, base period), else it is
    /// [`CallReason::Idle`].
    pub fn decide_idle(&mut self, input: &ScheduleInput<'_>) -> CallDecision {
        let input = ScheduleInput { similarity: None, after_override: true, ..*input };
        match self.decide(&input) {
            call @ CallDecision::Call { .. } => call,
            CallDecision::Skip { .. } | CallDecision::Wait => {
                self.record_call(input.now_s, false);
                CallDecision::Call { text_only: false, reasons: vec![CallReason::Idle] }
            }
        }
    }

    fn record_call(&mut self, now: f64, triggered: bool) {
        self.last_call_s = Some(now);
        self.last_decision_s = Some(now);
        self.events.push_back((now, Event::Call { triggered }));
        self.totals.calls += 1;
        self.totals.triggered += u64::from(triggered);
        self.totals.first_s.get_or_insert(now);
    }

    /// Records the latency of a finished call for the statistics.
    pub fn record_latency(&mut self, now_s: f64, latency_s: f64) {
        if latency_s.is_finite() && latency_s >= 0.0 {
            self.events.push_back((now_s, Event::Latency(latency_s)));
            self.totals.latency.0 += latency_s;
            self.totals.latency.1 += 1;
        }
        self.prune(now_s);
    }

    fn prune(&mut self, now_s: f64) {
        let horizon = now_s - self.config.stats_window_s;
        while self.events.front().is_some_and(|(t, _)| *t < horizon) {
            self.events.pop_front();
        }
    }

    /// Statistics over the last `stats_window_s` (60 s), per minute.
    pub fn stats(&self, now_s: f64) -> ScheduleStats {
        let horizon = now_s - self.config.stats_window_s;
        let (mut calls, mut triggered, mut skipped, mut lat_sum, mut lat_n) = (0u32, 0u32, 0u32, 0.0, 0u32);
        for (_, e) in self.events.iter().filter(|(t, _)| *t >= horizon && *t <= now_s) {
            match e {
                Event::Call { triggered: tr } => {
                    calls += 1;
                    triggered += u32::from(*tr);
                }
                Event::Requests(n) => calls += n,
                Event::Skip => skipped += 1,
                Event::Latency(l) => {
                    lat_sum += l;
                    lat_n += 1;
                }
            }
        }
        let per_min = 60.0 / self.config.stats_window_s;
        ScheduleStats {
            calls_per_min: f64::from(calls) * per_min,
            triggered_per_min: f64::from(triggered) * per_min,
            skipped_per_min: f64::from(skipped) * per_min,
            mean_latency_ms: (lat_n > 0).then(|| lat_sum / f64::from(lat_n) * 1000.0),
        }
    }

    /// The stats line when a report is due (every `stats_window_s`,
    /// counted from the first call of this method), else `None`.
    pub fn report_due(&mut self, now_s: f64, tier: NetworkTier) -> Option<String> {
        match self.last_report_s {
            None => {
                self.last_report_s = Some(now_s);
                None
            }
            Some(t) if now_s - t >= self.config.stats_window_s => {
                self.last_report_s = Some(now_s);
                Some(self.stats(now_s).line(tier))
            }
            Some(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn input(now_s: f64, triggers: &[TriggerEvent], sim: Option<f64>, near: f64, ov: bool) -> ScheduleInput<'_> {
        ScheduleInput {
            now_s,
            triggers,
            similarity: sim,
            nearest_obstacle_m: near,
            after_override: ov,
            goal_progressing: false,
        }
    }

    #[test]
    fn a_progressing_goal_waits_for_the_goal_backstop_and_triggers_still_call() {
        let mut s = CallScheduler::new(ScheduleConfig::default());
        let going =
            |now_s, triggers| ScheduleInput { goal_progressing: true, ..input(now_s, triggers, None, 1.0, false) };
        assert!(matches!(s.decide(&going(0.0, &[])), CallDecision::Call { .. }));
        assert!(matches!(s.decide(&going(5.0, &[])), CallDecision::Skip { .. }));
        assert!(
            matches!(s.decide(&going(10.0, &[])), CallDecision::Skip { .. }),
            "past max_interval_s, not the goal's"
        );
        let call = s.decide(&going(15.0, &[]));
        assert_eq!(call, CallDecision::Call { text_only: false, reasons: vec![CallReason::Backstop] });
        let door = [TriggerEvent::DeadEnd { front_m: 0.5 }];
        assert!(matches!(s.decide(&going(16.0, &door)), CallDecision::Call { .. }), "a trigger calls at once");
        // without a goal, the 10 s backstop
        let mut s = CallScheduler::new(ScheduleConfig::default());
        assert!(matches!(s.decide(&input(0.0, &[], None, 1.0, false)), CallDecision::Call { .. }));
        assert!(matches!(s.decide(&input(5.0, &[], Some(0.99), 4.0, false)), CallDecision::Skip { .. }));
        assert!(matches!(s.decide(&input(10.0, &[], Some(0.99), 4.0, false)), CallDecision::Call { .. }));
    }

    #[test]
    fn the_fixed_rate_loop_always_calls_with_the_image() {
        let mut s = CallScheduler::new(ScheduleConfig::default());
        assert_eq!(s.decide_fixed(0.0), CallDecision::Call { text_only: false, reasons: vec![CallReason::First] });
        assert_eq!(s.decide_fixed(5.0), CallDecision::Call { text_only: false, reasons: vec![CallReason::BasePeriod] });
        assert_eq!(s.totals().calls, 2);
        assert_eq!(s.last_call_s(), Some(5.0));
    }

    #[test]
    fn every_request_counts_in_the_window_and_the_run_totals() {
        let mut s = CallScheduler::new(ScheduleConfig::default());
        assert!(matches!(s.decide(&input(0.0, &[], None, 1.0, false)), CallDecision::Call { .. }));
        s.record_requests(1.0, 1); // the follow-up of a perception sub-call
        s.record_latency(1.0, 1.0);
        assert!(matches!(s.decide(&input(5.0, &[], Some(0.99), 4.0, false)), CallDecision::Skip { .. }));
        assert!(matches!(s.decide(&input(10.0, &[], None, 1.0, false)), CallDecision::Call { .. }));
        s.record_requests(10.5, 0);
        assert_eq!(s.stats(30.0).calls_per_min, 3.0);
        let t = s.totals();
        assert_eq!((t.calls, t.triggered, t.skipped), (3, 0, 1));
        assert_eq!(
            t.line(60.0),
            "VLM stats for the run: 3 calls in 1.0 min (3 calls/min; 0 triggered, 1 skipped), avg latency 1000ms"
        );
        // the window forgets, the run totals do not
        assert_eq!(s.stats(200.0).calls_per_min, 0.0);
        assert_eq!(s.totals().calls, 3);
    }

    #[test]
    fn skip_rules() {
        let mut s = CallScheduler::new(ScheduleConfig::default());
        assert!(matches!(s.decide(&input(0.0, &[], None, 1.0, false)), CallDecision::Call { .. }));
        // Similar but an obstacle within 2 m: no skip.
        assert_eq!(
            s.decide(&input(5.0, &[], Some(0.99), 1.5, false)),
            CallDecision::Call { text_only: false, reasons: vec![CallReason::BasePeriod] }
        );
        // Similar, open: skip; then the backstop forces a call.
        assert!(matches!(s.decide(&input(10.0, &[], Some(0.93), 2.5, false)), CallDecision::Skip { .. }));
        assert_eq!(s.decide(&input(14.9, &[], Some(0.93), 2.5, false)), CallDecision::Wait);
        assert_eq!(
            s.decide(&input(15.0, &[], Some(0.93), 2.5, false)),
            CallDecision::Call { text_only: false, reasons: vec![CallReason::Backstop] }
        );
        // After an override: never skip.
        assert_eq!(
            s.decide(&input(20.0, &[], Some(0.99), 5.0, true)),
            CallDecision::Call { text_only: false, reasons: vec![CallReason::AfterOverride] }
        );
        // A trigger calls at once, with the image.
        let ev = [TriggerEvent::Moved { distance_m: 1.6 }];
        let d = s.decide(&input(21.0, &ev, Some(0.99), 5.0, false));
        assert_eq!(
            d,
            CallDecision::Call { text_only: false, reasons: vec![CallReason::Trigger { event: ev[0].clone() }] }
        );
        // Similarity 0.92 exactly does not skip; NaN similarity never skips.
        assert!(matches!(s.decide(&input(26.0, &[], Some(0.92), 5.0, false)), CallDecision::Call { .. }));
        assert!(matches!(
            s.decide(&input(31.0, &[], Some(f64::NAN), 5.0, false)),
            CallDecision::Call { text_only: false, .. }
        ));
    }

    #[test]
    fn stats_line() {
        let mut s = CallScheduler::new(ScheduleConfig::default());
        let ev = [TriggerEvent::DeadEnd { front_m: 0.8 }];
        let mut now = 0.0;
        for k in 0..12 {
            let trig: &[TriggerEvent] = if k % 4 == 0 { &ev } else { &[] };
            if let CallDecision::Call { .. } = s.decide(&input(now, trig, Some(0.99), 4.0, false)) {
                s.record_latency(now + 1.2, 1.0 + f64::from(k) * 0.1);
            }
            now += 5.0;
        }
        let line = s.stats(59.0).line(NetworkTier::Elevated);
        insta::assert_snapshot!(line, @"VLM stats: 6 calls/min (2 triggered, 6 skipped), avg latency 1500ms, tier 1");
        assert_eq!(s.report_due(0.0, NetworkTier::Normal), None);
        assert_eq!(s.report_due(30.0, NetworkTier::Normal), None);
        assert!(s.report_due(60.0, NetworkTier::Normal).is_some());
        let empty = CallScheduler::new(ScheduleConfig::default()).stats(10.0).line(NetworkTier::Normal);
        assert_eq!(empty, "VLM stats: 0 calls/min (0 triggered, 0 skipped), avg latency n/a, tier 0");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        /// Never skip with a trigger, after an override, near obstacles, at
        /// low similarity, or at/after the 10 s backstop; never two calls
        /// inside the base period without a trigger.
        #[test]
        fn skip_and_call_invariants(
            steps in proptest::collection::vec((0.0f64..4.0, any::<bool>(), 0.8f64..1.0, 0.0f64..6.0, prop::bool::weighted(0.1)), 1..50)
        ) {
            let cfg = ScheduleConfig::default();
            let mut s = CallScheduler::new(cfg.clone());
            let ev = [TriggerEvent::Moved { distance_m: 2.0 }];
            let mut now = 0.0;
            let mut last_call: Option<f64> = None;
            for (dt, trig, sim, near, ov) in steps {
                now += dt;
                let triggers: &[TriggerEvent] = if trig { &ev } else { &[] };
                let d = s.decide(&input(now, triggers, Some(sim), near, ov));
                match d {
                    CallDecision::Skip { .. } => {
                        prop_assert!(!trig && !ov && sim > cfg.skip_similarity && near > cfg.skip_min_obstacle_m);
                        prop_assert!(now - last_call.unwrap() < cfg.max_interval_s);
                    }
                    CallDecision::Call { text_only, .. } => {
                        if let Some(t) = last_call {
                            prop_assert!(trig || now - t >= cfg.base_period_s);
                        }
                        if text_only {
                            prop_assert!(!trig && !ov && sim > cfg.text_only_similarity && near > cfg.text_only_min_obstacle_m);
                        }
                        last_call = Some(now);
                    }
                    CallDecision::Wait => {
                        prop_assert!(!trig);
                        prop_assert!(last_call.is_some());
                    }
                }
            }
        }
    }
}
