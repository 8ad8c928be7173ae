//! Episode metrics: success, SPL, path length, coverage and the
//! oscillation patterns ABABA and STUCK.

use crate::geometry::Point2;
use serde::{Deserialize, Serialize};

/// Success weighted by path length: `S · l / max(p, l)`, with `l` the
/// shortest (geodesic) path length and `p` the travelled length. Returns 0
/// on failure or for a non-finite or non-positive shortest path... except
/// that a zero-length shortest path (start already in the success region)
/// scores 1 on success.
///
/// ```
/// use nav_core::metrics::spl;
/// assert_eq!(spl(true, 4.0, 5.0), 0.8);
/// assert_eq!(spl(true, 4.0, 3.0), 1.0); // p < l clamps to 1
/// assert_eq!(spl(false, 4.0, 4.0), 0.0);
/// ```
pub fn spl(success: bool, shortest: f64, travelled: f64) -> f64 {
    if !success || !shortest.is_finite() || shortest < 0.0 || travelled.is_nan() {
        return 0.0;
    }
    if shortest == 0.0 {
        return 1.0;
    }
    shortest / travelled.max(shortest)
}

/// ABABA: the last four entries of a place sequence (consecutive duplicates
/// already collapsed) are A, B, A, B with A ≠ B.
///
/// ```
/// use nav_core::metrics::is_ababa;
/// assert!(is_ababa(&[7, 1, 2, 1, 2]));
/// assert!(!is_ababa(&[1, 2, 3, 2]));
/// ```
pub fn is_ababa<T: PartialEq>(places: &[T]) -> bool {
    let n = places.len();
    n >= 4 && places[n - 4] == places[n - 2] && places[n - 3] == places[n - 1] && places[n - 4] != places[n - 3]
}

/// STUCK: at most one unique place among the last `window` per-step place
/// ids. Needs at least `window` steps of history.
///
/// ```
/// use nav_core::metrics::is_stuck;
/// assert!(is_stuck(&[1, 1, 1], 3));
/// assert!(!is_stuck(&[1, 2, 1], 3));
/// assert!(!is_stuck(&[1, 1], 3));
/// ```
pub fn is_stuck<T: PartialEq>(per_step_places: &[T], window: usize) -> bool {
    let n = per_step_places.len();
    if window == 0 || n < window {
        return false;
    }
    let tail = &per_step_places[n - window..];
    tail.iter().all(|p| *p == tail[0])
}

/// Accumulates the length of a trajectory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PathTracker {
    last: Option<Point2>,
    length_m: f64,
}

impl PathTracker {
    /// Adds the next position; returns the total length.
    pub fn push(&mut self, p: Point2) -> f64 {
        if p.is_finite() {
            if let Some(last) = self.last {
                self.length_m += last.distance(p);
            }
            self.last = Some(p);
        }
        self.length_m
    }

    /// Total length so far, metres.
    pub fn length_m(&self) -> f64 {
        self.length_m
    }
}

/// Counts oscillation events in an episode. An ABABA event is counted each
/// time a place change completes the pattern; a STUCK event when the STUCK
/// condition becomes true (rising edge), so a long stay counts once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OscillationCounter {
    window: usize,
    collapsed: Vec<u64>,
    per_step: Vec<u64>,
    stuck_now: bool,
    /// ABABA events so far.
    pub ababa: u32,
    /// STUCK events so far.
    pub stuck: u32,
}

/// What one step of [`OscillationCounter::observe`] detected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OscillationEvents {
    /// ABABA was completed by this step.
    pub ababa: bool,
    /// STUCK began at this step.
    pub stuck: bool,
}

impl OscillationCounter {
    /// A counter with STUCK window `window` (W = 10 by default).
    pub fn new(window: usize) -> Self {
        Self { window, ..Self::default() }
    }

    /// Feeds the place id of one step.
    pub fn observe(&mut self, place: u64) -> OscillationEvents {
        let mut ev = OscillationEvents::default();
        if self.collapsed.last() != Some(&place) {
            self.collapsed.push(place);
            if self.collapsed.len() > 8 {
                self.collapsed.remove(0);
            }
            if is_ababa(&self.collapsed) {
                self.ababa += 1;
                ev.ababa = true;
            }
        }
        self.per_step.push(place);
        if self.per_step.len() > self.window.max(1) {
            self.per_step.remove(0);
        }
        let stuck = is_stuck(&self.per_step, self.window);
        if stuck && !self.stuck_now {
            self.stuck += 1;
            ev.stuck = true;
        }
        self.stuck_now = stuck;
        ev
    }
}

/// The metrics of one episode (a subset of the run summary).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EpisodeMetrics {
    /// Whether the episode met its success condition.
    pub success: bool,
    /// Success weighted by path length.
    pub spl: f64,
    /// Steps (actions or cycles) taken.
    pub steps: u32,
    /// Travelled path length, metres.
    pub path_length_m: f64,
    /// Geodesic shortest path length, metres.
    pub geodesic_m: f64,
    /// Collisions.
    pub collisions: u32,
    /// Fraction of free space seen.
    pub coverage: f64,
    /// ABABA events.
    pub ababa: u32,
    /// STUCK events.
    pub stuck: u32,
}

impl EpisodeMetrics {
    /// Recomputes `spl` from the other fields.
    pub fn finish(&mut self) {
        self.spl = spl(self.success, self.geodesic_m, self.path_length_m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oscillation_counter_counts_events_once() {
        let mut c = OscillationCounter::new(3);
        for p in [1, 1, 1, 1, 1] {
            c.observe(p);
        }
        assert_eq!(c.stuck, 1);
        for p in [2, 1, 2] {
            c.observe(p);
        }
        assert_eq!(c.ababa, 1);
        c.observe(1); // 1,2,1,2,1 → again ABAB over the last four
        assert_eq!(c.ababa, 2);
    }

    #[test]
    fn path_tracker_sums() {
        let mut t = PathTracker::default();
        t.push(Point2::new(0.0, 0.0));
        t.push(Point2::new(3.0, 4.0));
        assert_eq!(t.push(Point2::new(3.0, 5.0)), 6.0);
    }
}
