//! The stop arbiter: the one place where stop requests
//! from different sources meet.
//!
//! Each source owns one slot. A request fills the source's slot; a release
//! empties *only that* slot. The active stop is the highest-priority filled
//! slot: LiDAR emergency > TTC > sensor loss > VLM timeout > geofence. So a
//! lower-priority source can neither release nor override a higher one's
//! stop — the VLM coming back (releasing `VlmTimeout`) never lifts a LiDAR
//! emergency stop.
//!
//! ```
//! use nav_safety::arbiter::{StopArbiter, StopSource};
//! let mut arb = StopArbiter::default();
//! arb.request(StopSource::VlmTimeout, "no VLM response for 4 s");
//! arb.request(StopSource::LidarEmergency, "obstacle 0.2 m ahead");
//! arb.release(StopSource::VlmTimeout);
//! assert_eq!(arb.active().map(|s| s.source), Some(StopSource::LidarEmergency));
//! arb.release(StopSource::LidarEmergency);
//! assert!(arb.allows_motion());
//! ```

use crate::guard::{GuardedVelocity, Override, OverrideKind};
use serde::{Deserialize, Serialize};

/// Where a stop request comes from, highest priority first (`Ord`: a
/// smaller value is a higher priority).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopSource {
    /// P1: obstacle nearer than the stop distance.
    LidarEmergency,
    /// P2: time to collision below the stop tier.
    Ttc,
    /// P3: LiDAR scan older than 5 s.
    SensorLoss,
    /// P4: VLM not responding.
    VlmTimeout,
    /// P5: geofence violation.
    Geofence,
}

impl StopSource {
    /// All sources, highest priority first.
    pub const ALL: [StopSource; 5] = [
        StopSource::LidarEmergency,
        StopSource::Ttc,
        StopSource::SensorLoss,
        StopSource::VlmTimeout,
        StopSource::Geofence,
    ];

    /// The priority number (P1 … P5).
    pub fn priority(self) -> u8 {
        self as u8 + 1
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One active stop request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StopRequest {
    /// Who asked.
    pub source: StopSource,
    /// Why.
    pub reason: String,
}

/// Merges stop requests by priority.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StopArbiter {
    slots: [Option<StopRequest>; 5],
}

impl StopArbiter {
    /// Files (or refreshes) `source`'s stop request.
    pub fn request(&mut self, source: StopSource, reason: impl Into<String>) {
        self.slots[source.index()] = Some(StopRequest { source, reason: reason.into() });
    }

    /// Withdraws `source`'s own request; other sources' requests stay.
    /// Returns true when there was one.
    pub fn release(&mut self, source: StopSource) -> bool {
        self.slots[source.index()].take().is_some()
    }

    /// Level-triggered form for sources evaluated every tick: requests
    /// when `stop` is true, releases otherwise.
    pub fn update(&mut self, source: StopSource, stop: bool, reason: impl Into<String>) {
        if stop {
            self.request(source, reason);
        } else {
            self.release(source);
        }
    }

    /// The highest-priority active stop.
    pub fn active(&self) -> Option<&StopRequest> {
        self.slots.iter().flatten().next()
    }

    /// Every active stop, highest priority first.
    pub fn all_active(&self) -> impl Iterator<Item = &StopRequest> {
        self.slots.iter().flatten()
    }

    /// True when `source` has an active request.
    pub fn is_requested(&self, source: StopSource) -> bool {
        self.slots[source.index()].is_some()
    }

    /// True when no stop is active.
    pub fn allows_motion(&self) -> bool {
        self.active().is_none()
    }

    /// Files or releases the guard-driven sources from one guard tick:
    /// `LidarEmergency` (emergency stop), `Ttc` (TTC stop), `SensorLoss`
    /// (stale, unusable or blind scan) and `Geofence` (keepout).
    pub fn observe_guard(&mut self, g: &GuardedVelocity) {
        let find = |kinds: &[OverrideKind]| g.overrides.iter().find(|o| kinds.contains(&o.kind));
        for (source, kinds) in [
            (StopSource::LidarEmergency, &[OverrideKind::EmergencyStop][..]),
            (StopSource::Ttc, &[OverrideKind::TtcStop][..]),
            (StopSource::SensorLoss, &[OverrideKind::SensorLoss, OverrideKind::Blind][..]),
            (StopSource::Geofence, &[OverrideKind::GeofenceKeepout][..]),
        ] {
            match find(kinds) {
                Some(o) => self.request(source, o.reason.clone()),
                None => {
                    self.release(source);
                }
            }
        }
    }

    /// Applies the active stop to a guarded velocity (zeroing it and
    /// recording an [`OverrideKind::Arbiter`] override).
    pub fn apply(&self, mut v: GuardedVelocity) -> GuardedVelocity {
        if let Some(stop) = self.active() {
            if v.linear != 0.0 || v.angular != 0.0 {
                v.overrides.push(Override {
                    kind: OverrideKind::Arbiter,
                    from: v.linear,
                    to: 0.0,
                    code: format!("stop_{}", serde_plain_name(stop.source)),
                    reason: format!("Movement stopped (P{}): {}", stop.source.priority(), stop.reason),
                });
                v.linear = 0.0;
                v.angular = 0.0;
            }
        }
        v
    }
}

fn serde_plain_name(s: StopSource) -> &'static str {
    match s {
        StopSource::LidarEmergency => "lidar_emergency",
        StopSource::Ttc => "ttc",
        StopSource::SensorLoss => "sensor_loss",
        StopSource::VlmTimeout => "vlm_timeout",
        StopSource::Geofence => "geofence",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn apply_zeroes_motion() {
        let mut arb = StopArbiter::default();
        let v = GuardedVelocity { linear: 0.1, angular: 0.2, overrides: vec![], clearance_m: None, ttc_s: None };
        assert_eq!(arb.apply(v.clone()), v);
        arb.request(StopSource::SensorLoss, "scan 6 s old");
        let out = arb.apply(v);
        assert_eq!((out.linear, out.angular), (0.0, 0.0));
        assert_eq!(out.overrides[0].code, "stop_sensor_loss");
        assert_eq!(out.overrides[0].reason, "Movement stopped (P3): scan 6 s old");
    }

    #[test]
    fn guard_ticks_feed_the_arbiter() {
        use crate::config::SafetyConfig;
        use crate::guard::{ContinuousGuard, VelocityTarget};
        use nav_core::lidar::LaserScan;
        let guard = ContinuousGuard::new(SafetyConfig::default());
        let mut scan = LaserScan::full_circle(360, 0.05, 12.0, f32::INFINITY);
        scan.ranges[180] = 0.2;
        let fwd = VelocityTarget { linear: 0.1, angular: 0.0, duration_s: 1.0 };
        let mut arb = StopArbiter::default();
        arb.request(StopSource::VlmTimeout, "no VLM response for 4 s");
        arb.observe_guard(&guard.guard(&fwd, &scan, 0.0));
        assert_eq!(arb.active().map(|s| s.source), Some(StopSource::LidarEmergency));
        arb.observe_guard(&guard.guard(&fwd, &scan, 9.0));
        assert_eq!(
            arb.active().map(|s| s.source),
            Some(StopSource::SensorLoss),
            "emergency released, sensor loss filed"
        );
        scan.ranges[180] = 3.0;
        arb.observe_guard(&guard.guard(&fwd, &scan, 0.0));
        assert_eq!(
            arb.active().map(|s| s.source),
            Some(StopSource::VlmTimeout),
            "the VLM stop is not the guard's to release"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        /// After any sequence of requests and releases, the active stop is
        /// the highest-priority source with an outstanding request; no
        /// operation by a lower-priority source ever changes or removes a
        /// higher one's active stop.
        #[test]
        fn higher_priority_stops_are_never_overridden(
            ops in proptest::collection::vec((0usize..5, 0u8..3), 0..40)
        ) {
            let mut arb = StopArbiter::default();
            let mut model = [false; 5];
            for (i, op) in ops {
                let src = StopSource::ALL[i];
                let before = arb.active().cloned();
                match op {
                    0 => { arb.request(src, format!("r{i}")); model[i] = true; }
                    1 => { arb.release(src); model[i] = false; }
                    _ => { arb.update(src, i % 2 == 0, "u"); model[i] = i % 2 == 0; }
                }
                if let Some(b) = before {
                    if b.source < src {
                        prop_assert_eq!(arb.active(), Some(&b), "{:?} changed a {:?} stop", src, b.source);
                    }
                }
                let expected = model.iter().position(|&m| m).map(|k| StopSource::ALL[k]);
                prop_assert_eq!(arb.active().map(|s| s.source), expected);
                prop_assert_eq!(arb.allows_motion(), expected.is_none());
            }
        }
    }
}
