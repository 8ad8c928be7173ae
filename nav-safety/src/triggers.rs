//! Event triggers: LiDAR and odometry events that
//! warrant a VLM call before the 5 s base period is up.
//!
//! - **doorway**: a gap at least 0.7 m wide (nav-core
//!   [`detect_gaps`](nav_core::lidar::detect_gaps) with
//!   `gap_min_width_m` = 0.7);
//! - **intersection**: at least 3 adjacent sectors of the 12-sector summary
//!   are open, open meaning the summary's CLEAR (≥ 2 m), counted
//!   circularly;
//! - **dead end**: the three front sectors (330°, 000°, 030°) all nearer
//!   than 1.0 m;
//! - **moved**: more than 1.5 m from the pose of the last VLM call.
//!
//! A cooldown of 2 s follows every firing (all events of one check fire
//! together). The scene conditions are *edge-triggered*: a condition
//! fires once when it appears and re-arms when it has disappeared and the
//! robot is at least `rearm_m` (2 m) from where it fired, so standing next
//! to a doorway, or driving past one whose gap flickers in and out of the
//! scan, does not call the VLM every 2 s; a condition that appears during
//! the cooldown fires when the cooldown ends if it still holds. "Moved" fires once per call and re-arms at [`EventTriggers::mark_call`].
//!
//! ```
//! use nav_core::geometry::Pose2;
//! use nav_core::lidar::LaserScan;
//! use nav_safety::triggers::{EventTriggers, TriggerEvent};
//! let mut triggers = EventTriggers::new(Default::default());
//! triggers.mark_call(Pose2::origin(), 0.0);
//! let open = LaserScan::full_circle(360, 0.05, 12.0, 5.0);
//! let events = triggers.check(&open, Pose2::new(1.6, 0.0, 0.0), 3.0);
//! assert!(events.iter().any(|e| matches!(e, TriggerEvent::Moved { .. })));
//! ```

use crate::config::TriggerConfig;
use nav_core::geometry::{Point2, Pose2};
use nav_core::lidar::{LaserScan, LidarConfig, LidarSummary};
use serde::Serialize;

/// One fired trigger.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TriggerEvent {
    /// A doorway-sized gap (the widest one seen).
    Doorway {
        /// Gap width, m.
        width_m: f64,
        /// Clockwise bearing of its centre, degrees.
        bearing_deg: f64,
        /// Distance to its centre, m.
        distance_m: f64,
    },
    /// Adjacent open sectors.
    Intersection {
        /// Length of the longest run of open sectors.
        open_sectors: usize,
    },
    /// Blocked ahead.
    DeadEnd {
        /// The farthest of the three front sectors, m.
        front_m: f64,
    },
    /// Far from the last call's pose.
    Moved {
        /// Distance moved, m.
        distance_m: f64,
    },
}

impl TriggerEvent {
    /// Short name: `doorway`, `intersection`, `dead_end`, `moved`.
    pub fn name(&self) -> &'static str {
        match self {
            TriggerEvent::Doorway { .. } => "doorway",
            TriggerEvent::Intersection { .. } => "intersection",
            TriggerEvent::DeadEnd { .. } => "dead_end",
            TriggerEvent::Moved { .. } => "moved",
        }
    }
}

/// Which scene conditions hold in one summary (before edge detection).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct SceneConditions {
    /// The widest gap of at least the doorway width.
    pub doorway: Option<TriggerEvent>,
    /// The intersection event, if enough adjacent sectors are open.
    pub intersection: Option<TriggerEvent>,
    /// The dead-end event, if all front sectors are near.
    pub dead_end: Option<TriggerEvent>,
}

/// Edge-triggered event detection with a cooldown.
#[derive(Debug, Clone, PartialEq)]
pub struct EventTriggers {
    config: TriggerConfig,
    lidar: LidarConfig,
    /// Where each scene trigger last fired, and whether its condition has
    /// gone away since; `None`: armed.
    fired: [Option<(Point2, bool)>; 3],
    moved_armed: bool,
    last_fired_s: Option<f64>,
    last_call: Option<Point2>,
}

impl EventTriggers {
    /// Triggers with these thresholds, all armed, no call recorded yet.
    pub fn new(config: TriggerConfig) -> Self {
        let lidar = LidarConfig { gap_min_width_m: config.doorway_min_width_m, ..LidarConfig::default() };
        Self { config, lidar, fired: [None; 3], moved_armed: true, last_fired_s: None, last_call: None }
    }

    /// The LiDAR configuration used for summaries and gaps (doorway width
    /// as the minimum gap width).
    pub fn lidar_config(&self) -> &LidarConfig {
        &self.lidar
    }

    /// Records a VLM call made at `pose`: the reference for "moved".
    pub fn mark_call(&mut self, pose: Pose2, _now_s: f64) {
        if pose.x.is_finite() && pose.y.is_finite() {
            self.last_call = Some(pose.position());
            self.moved_armed = true;
        }
    }

    /// Evaluates the scene conditions of a summary (no state change).
    /// Gaps narrower than the doorway width are ignored even if the
    /// summary was built with a smaller minimum.
    pub fn conditions(&self, summary: &LidarSummary) -> SceneConditions {
        let c = &self.config;
        let doorway = summary
            .gaps
            .iter()
            .filter(|g| g.width_m >= c.doorway_min_width_m)
            .max_by(|a, b| a.width_m.total_cmp(&b.width_m))
            .map(|g| TriggerEvent::Doorway {
                width_m: g.width_m,
                bearing_deg: g.bearing_deg,
                distance_m: g.distance_m,
            });
        let open: Vec<bool> =
            summary.sectors.iter().map(|s| s.distance_m.is_some_and(|d| f64::from(d) >= c.open_sector_m)).collect();
        let run = longest_circular_run(&open);
        let intersection = (run >= c.min_adjacent_open).then_some(TriggerEvent::Intersection { open_sectors: run });
        let front: Vec<Option<f32>> = [11usize, 0, 1].iter().map(|&k| summary.sectors[k].distance_m).collect();
        let dead_end = if front.iter().all(|d| d.is_some_and(|d| f64::from(d) < c.dead_end_m)) {
            let front_m = front.iter().flatten().fold(0.0f64, |m, &d| m.max(f64::from(d)));
            Some(TriggerEvent::DeadEnd { front_m })
        } else {
            None
        };
        SceneConditions { doorway, intersection, dead_end }
    }

    /// Checks a scan at `pose` and time `now_s`; returns the events that
    /// fire now (empty during the cooldown or when nothing new happened).
    pub fn check(&mut self, scan: &LaserScan, pose: Pose2, now_s: f64) -> Vec<TriggerEvent> {
        // The summary's gaps come from nav-core `detect_gaps` with the
        // doorway width as minimum.
        let summary = LidarSummary::from_scan(scan, &self.lidar);
        self.check_summary(&summary, pose, now_s)
    }

    /// [`Self::check`] for an already computed summary.
    pub fn check_summary(&mut self, summary: &LidarSummary, pose: Pose2, now_s: f64) -> Vec<TriggerEvent> {
        let conds = self.conditions(summary);
        let scene = [conds.doorway, conds.intersection, conds.dead_end];
        let here = pose.position();
        for (fired, cond) in self.fired.iter_mut().zip(&scene) {
            if let Some((at, cleared)) = fired {
                *cleared |= cond.is_none();
                let d = at.distance(here);
                if *cleared && (d.is_nan() || d >= self.config.rearm_m) {
                    *fired = None; // re-armed (a NaN pose re-arms)
                }
            }
        }
        let moved = self.last_call.and_then(|p| {
            let d = p.distance(pose.position());
            (d > self.config.moved_m).then_some(TriggerEvent::Moved { distance_m: d })
        });
        let cooling = self.last_fired_s.is_some_and(|t| {
            let since = now_s - t;
            since.is_nan() || since < self.config.cooldown_s
        });
        if cooling {
            return Vec::new();
        }
        let mut events = Vec::new();
        for (fired, cond) in self.fired.iter_mut().zip(scene) {
            if let (None, Some(ev)) = (&fired, cond) {
                *fired = Some((here, false));
                events.push(ev);
            }
        }
        if let (true, Some(ev)) = (self.moved_armed, moved) {
            self.moved_armed = false;
            events.push(ev);
        }
        if !events.is_empty() {
            self.last_fired_s = Some(now_s);
        }
        events
    }
}

/// Longest run of `true` in a circular sequence.
fn longest_circular_run(v: &[bool]) -> usize {
    let n = v.len();
    if v.iter().all(|&b| b) {
        return n;
    }
    let (mut best, mut cur) = (0, 0);
    for i in 0..2 * n {
        if v[i % n] {
            cur += 1;
            best = best.max(cur);
        } else {
            cur = 0;
        }
    }
    best.min(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    /// A scan with per-beam distances given by a function of the CCW angle.
    fn scan_of(f: impl Fn(f64) -> f32) -> LaserScan {
        let mut s = LaserScan::full_circle(720, 0.05, 12.0, 0.0);
        for i in 0..720 {
            s.ranges[i] = f(s.angle(i));
        }
        s
    }

    /// A closed 1.2 m wide corridor along x (walls at y = ±0.6), ending
    /// 0.8 m ahead and 2 m behind.
    fn dead_end() -> LaserScan {
        scan_of(|a| {
            let side = 0.6 / a.sin().abs().max(1e-6);
            let end = if a.cos() > 0.0 { 0.8 / a.cos() } else { -2.0 / a.cos() };
            side.min(end) as f32
        })
    }

    /// A corridor (walls at y = ±0.6) with a 1 m doorway in the left wall at x ∈ [1, 2].
    fn corridor_with_door() -> LaserScan {
        scan_of(|a| {
            let (s, c) = a.sin_cos();
            if s > 1e-6 {
                let x = 0.6 * c / s;
                if (1.0..=2.0).contains(&x) { 6.0 } else { (0.6 / s) as f32 }
            } else if s < -1e-6 {
                (0.6 / -s) as f32
            } else {
                10.0
            }
        })
    }

    #[test]
    fn circular_runs() {
        assert_eq!(longest_circular_run(&[true, false, true, true]), 3);
        assert_eq!(longest_circular_run(&[true; 12]), 12);
        assert_eq!(longest_circular_run(&[false; 12]), 0);
    }

    #[test]
    fn detects_each_condition() {
        let t = EventTriggers::new(TriggerConfig::default());
        let lidar = t.lidar_config().clone();
        let c = t.conditions(&LidarSummary::from_scan(&dead_end(), &lidar));
        assert!(matches!(c.dead_end, Some(TriggerEvent::DeadEnd { front_m }) if front_m < 1.0), "{c:?}");
        assert!(c.intersection.is_none());
        let c = t.conditions(&LidarSummary::from_scan(&corridor_with_door(), &lidar));
        match c.doorway {
            Some(TriggerEvent::Doorway { width_m, bearing_deg, .. }) => {
                assert!((width_m - 1.0).abs() < 0.1, "{width_m}");
                assert!(bearing_deg > 270.0 && bearing_deg < 360.0, "{bearing_deg}");
            }
            other => panic!("{other:?}"),
        }
        assert!(c.dead_end.is_none());
        // An open room: every sector is open.
        let room = LaserScan::full_circle(720, 0.05, 12.0, 4.0);
        let c = t.conditions(&LidarSummary::from_scan(&room, &lidar));
        assert_eq!(c.intersection, Some(TriggerEvent::Intersection { open_sectors: 12 }));
        // Open between 30° and 150° to the left: exactly the sectors centred
        // at 60°, 90° and 120° are open — three adjacent ones.
        let opening = scan_of(|a| if (PI / 6.0..=5.0 * PI / 6.0).contains(&a) { 5.0 } else { 0.7 });
        let c = t.conditions(&LidarSummary::from_scan(&opening, &lidar));
        assert_eq!(c.intersection, Some(TriggerEvent::Intersection { open_sectors: 3 }));
        // Open between 50° and 130°: only the 90° sector is fully open.
        let narrow = scan_of(|a| if (50f64.to_radians()..=130f64.to_radians()).contains(&a) { 5.0 } else { 0.7 });
        assert_eq!(t.conditions(&LidarSummary::from_scan(&narrow, &lidar)).intersection, None);
    }

    #[test]
    fn a_flickering_condition_re_arms_only_once_the_robot_is_rearm_m_away() {
        let mut t = EventTriggers::new(TriggerConfig { cooldown_s: 0.0, ..TriggerConfig::default() });
        let (de, room) = (dead_end(), LaserScan::full_circle(720, 0.05, 12.0, 4.0));
        let at = |x: f64| Pose2::new(x, 0.0, 0.0);
        let dead_ends = |ev: Vec<TriggerEvent>| ev.iter().filter(|e| e.name() == "dead_end").count();
        assert_eq!(dead_ends(t.check(&de, at(0.0), 0.0)), 1, "fires when it appears");
        // driving past: it goes away and comes back within 2 m of where it fired
        assert_eq!(dead_ends(t.check(&room, at(0.5), 1.0)), 0);
        assert_eq!(dead_ends(t.check(&de, at(1.0), 2.0)), 0, "no second call for the same place");
        // 2 m on, gone and back: a new dead end
        assert_eq!(dead_ends(t.check(&room, at(2.1), 4.0)), 0);
        assert_eq!(dead_ends(t.check(&de, at(2.2), 5.0)), 1);
        // rearm_m = 0: the plain edge trigger
        let mut t = EventTriggers::new(TriggerConfig { cooldown_s: 0.0, rearm_m: 0.0, ..TriggerConfig::default() });
        assert_eq!(dead_ends(t.check(&de, at(0.0), 0.0)), 1);
        assert_eq!(dead_ends(t.check(&room, at(0.0), 1.0)), 0);
        assert_eq!(dead_ends(t.check(&de, at(0.0), 2.0)), 1);
    }

    #[test]
    fn cooldown_and_edge_triggering() {
        let mut t = EventTriggers::new(TriggerConfig::default());
        let p = Pose2::origin();
        let de = dead_end();
        let ev = t.check(&de, p, 0.0);
        assert_eq!(ev.iter().map(TriggerEvent::name).collect::<Vec<_>>(), ["dead_end"]);
        // Still a dead end: no re-trigger, neither inside nor after the cooldown.
        assert!(t.check(&de, p, 1.0).is_empty());
        assert!(t.check(&de, p, 5.0).is_empty());
        // The condition clears and comes back, 2.5 m on, inside the cooldown of another event.
        let room = LaserScan::full_circle(720, 0.05, 12.0, 4.0);
        let q = Pose2::new(2.5, 0.0, 0.0);
        let ev = t.check(&room, q, 6.0);
        assert_eq!(ev.iter().map(TriggerEvent::name).collect::<Vec<_>>(), ["intersection"]);
        assert!(t.check(&de, q, 7.0).is_empty(), "cooldown");
        let ev = t.check(&de, q, 8.0);
        assert_eq!(ev.iter().map(TriggerEvent::name).collect::<Vec<_>>(), ["dead_end"], "fires after the cooldown");
        // Moved: only after a call is marked, once per call.
        t.mark_call(p, 8.0);
        assert!(t.check(&de, Pose2::new(1.4, 0.0, 0.0), 11.0).is_empty());
        let ev = t.check(&de, Pose2::new(1.6, 0.0, 0.0), 11.5);
        assert!(matches!(ev.as_slice(), [TriggerEvent::Moved { distance_m }] if (*distance_m - 1.6).abs() < 1e-9));
        assert!(t.check(&de, Pose2::new(3.0, 0.0, 0.0), 14.0).is_empty());
        t.mark_call(Pose2::new(3.0, 0.0, 0.0), 14.0);
        assert!(t.check(&de, Pose2::new(4.6, 0.0, 0.0), 16.1).iter().any(|e| e.name() == "moved"));
    }
}
