//! The wall clock. nav-core, nav-memory and nav-safety never read the
//! system clock; they take a [`Clock`]. Real robots run on
//! [`MonotonicClock`]; the simulator runs on a shared
//! [`ManualClock`](nav_core::time::ManualClock) it advances itself.

use nav_core::time::Clock;
use std::time::Instant;

/// Seconds since the clock was created, from `std::time::Instant`
/// (monotonic: never jumps back when the system time is set).
///
/// ```
/// use nav_core::time::Clock;
/// use nav_hal::clock::MonotonicClock;
/// let clock = MonotonicClock::new();
/// let a = clock.now_s();
/// assert!(clock.now_s() >= a && a >= 0.0);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    epoch: Instant,
}

impl MonotonicClock {
    /// A clock reading zero now.
    pub fn new() -> Self {
        Self { epoch: Instant::now() }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now_s(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64()
    }
}
