//! [`CostBudget`]: a spending limit on a run or a suite (`--max-cost-usd`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// A limit in US dollars on what the answered model calls of a run (or of
/// every episode of a suite: share it) may cost, as the replies' measured
/// usage and the price table put it.
///
/// [`LedgerVlm::with_budget`] adds each answered call's cost; once the total
/// reaches the limit the budget is *reached*: the ledger refuses further
/// calls with [`VlmError::CostLimit`] (no request is sent) and the loops,
/// which watch [`CostBudget::flag`], end the episode cleanly at their next
/// step (end `cost_limit`). Calls already in flight still finish and are
/// billed, so the total can pass the limit by what those cost.
///
/// ```
/// use nav_planner::vlm::CostBudget;
/// let budget = CostBudget::new(0.01)?;
/// budget.add(0.004);
/// assert!(!budget.reached());
/// budget.add(0.006);
/// assert!(budget.reached());
/// assert!((budget.spent_usd() - 0.01).abs() < 1e-12);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// [`LedgerVlm::with_budget`]: super::LedgerVlm::with_budget
/// [`VlmError::CostLimit`]: super::VlmError::CostLimit
#[derive(Debug)]
pub struct CostBudget {
    limit_usd: f64,
    spent_usd: Mutex<f64>,
    reached: Arc<AtomicBool>,
}

impl CostBudget {
    /// A budget of `limit_usd` dollars; an error unless it is a positive,
    /// finite number.
    pub fn new(limit_usd: f64) -> Result<Self, String> {
        if !(limit_usd.is_finite() && limit_usd > 0.0) {
            return Err(format!("a cost limit must be a positive number of US dollars, got {limit_usd}"));
        }
        Ok(Self { limit_usd, spent_usd: Mutex::new(0.0), reached: Arc::new(AtomicBool::new(false)) })
    }

    /// The limit, US dollars.
    pub fn limit_usd(&self) -> f64 {
        self.limit_usd
    }

    /// What the answered calls cost so far, US dollars.
    pub fn spent_usd(&self) -> f64 {
        *self.spent_usd.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds one answered call's cost; marks the budget reached when the
    /// total reaches the limit. Negative and non-finite costs count as 0.
    pub fn add(&self, cost_usd: f64) {
        let mut spent = self.spent_usd.lock().unwrap_or_else(PoisonError::into_inner);
        if cost_usd.is_finite() && cost_usd > 0.0 {
            *spent += cost_usd;
        }
        if *spent >= self.limit_usd {
            self.reached.store(true, Ordering::SeqCst);
        }
    }

    /// Whether the spending reached the limit.
    pub fn reached(&self) -> bool {
        self.reached.load(Ordering::SeqCst)
    }

    /// The flag that turns true when the limit is reached, for loops that
    /// stop on a signal (the explore loop's shutdown).
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.reached)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_limits_that_are_not_positive_numbers() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(CostBudget::new(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reaches_the_limit_exactly_and_ignores_nonsense_costs() {
        let b = CostBudget::new(1.0).expect("a valid limit");
        b.add(f64::NAN);
        b.add(-5.0);
        b.add(0.5);
        assert!(!b.reached());
        b.add(0.5);
        assert!(b.reached());
        assert!(b.flag().load(Ordering::SeqCst));
    }
}
