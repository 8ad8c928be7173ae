//! Injected time. nav-core, nav-memory and nav-safety never read the system
//! clock; they take a [`Clock`] so that tests and simulations are exact and
//! repeatable. A monotonic wall clock lives in `nav-hal`.

use std::sync::atomic::{AtomicU64, Ordering};

/// A monotonic clock reporting seconds since an arbitrary epoch.
pub trait Clock: Send + Sync {
    /// Seconds since the clock's epoch. Never decreases.
    fn now_s(&self) -> f64;
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now_s(&self) -> f64 {
        (**self).now_s()
    }
}

impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    fn now_s(&self) -> f64 {
        (**self).now_s()
    }
}

/// A clock that only moves when told to: the test double and the clock of
/// simulated time. Thread-safe; cloning shares nothing (use `Arc` to share).
///
/// ```
/// use nav_core::time::{Clock, ManualClock};
/// let clock = ManualClock::new(0.0);
/// clock.advance(1.5);
/// assert_eq!(clock.now_s(), 1.5);
/// ```
#[derive(Debug, Default)]
pub struct ManualClock {
    bits: AtomicU64,
}

impl ManualClock {
    /// A clock reading `start_s`.
    pub fn new(start_s: f64) -> Self {
        Self { bits: AtomicU64::new(start_s.to_bits()) }
    }

    /// Moves the clock forward by `dt_s` seconds (negative or non-finite
    /// values are ignored: the clock is monotonic).
    pub fn advance(&self, dt_s: f64) {
        if dt_s.is_finite() && dt_s > 0.0 {
            let now = self.now_s();
            self.bits.store((now + dt_s).to_bits(), Ordering::SeqCst);
        }
    }

    /// Sets the reading, if it is not earlier than the current one.
    pub fn set(&self, t_s: f64) {
        if t_s.is_finite() && t_s >= self.now_s() {
            self.bits.store(t_s.to_bits(), Ordering::SeqCst);
        }
    }
}

impl Clock for ManualClock {
    fn now_s(&self) -> f64 {
        f64::from_bits(self.bits.load(Ordering::SeqCst))
    }
}

/// A clock that always reads zero: budgets measured with it never expire.
#[derive(Debug, Default, Clone, Copy)]
pub struct FrozenClock;

impl Clock for FrozenClock {
    fn now_s(&self) -> f64 {
        0.0
    }
}
