//! Checking configuration values: one [`ConfigError`] naming the key, and
//! the range checks every config struct's `validate()` is built from.
//!
//! Keys are dotted paths relative to the struct being checked
//! (`speeds.fast_mps`); a parent struct that validates a child puts its own
//! field name in front with [`ConfigError::under`] (`safety.speeds.fast_mps`),
//! so the error from the top names the whole path.
//!
//! ```
//! use nav_core::config::{ConfigError, in_range, positive};
//! assert!(positive("tick_s", 0.05).is_ok());
//! let e = positive("tick_s", -1.0).map_err(|e| e.under("explore")).unwrap_err();
//! assert_eq!(e.to_string(), "explore.tick_s: must be > 0 (got -1)");
//! assert_eq!(e.key, "explore.tick_s");
//! assert!(in_range("skip_similarity", 1.5, 0.0, 1.0).is_err());
//! # let _: Option<ConfigError> = None;
//! ```

use std::fmt::Display;

/// A configuration value outside its documented range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct ConfigError {
    /// Dotted path of the offending key (`explore.safety.speeds.fast_mps`).
    pub key: String,
    /// What is wrong, with the value given (`must be > 0 (got -0.1)`).
    pub message: String,
}

impl ConfigError {
    /// An error for `key`.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self { key: key.into(), message: message.into() }
    }

    /// The same error seen from a parent struct whose field `prefix` holds
    /// the checked one: the key becomes `prefix.key`.
    #[must_use]
    pub fn under(mut self, prefix: &str) -> Self {
        if !prefix.is_empty() {
            self.key = format!("{prefix}.{}", self.key);
        }
        self
    }
}

/// `v` must be a finite number (not NaN or infinite).
pub fn finite(key: &str, v: f64) -> Result<(), ConfigError> {
    if v.is_finite() { Ok(()) } else { Err(ConfigError::new(key, format!("must be a finite number (got {v})"))) }
}

/// `v` must be finite and > 0.
pub fn positive(key: &str, v: f64) -> Result<(), ConfigError> {
    finite(key, v)?;
    if v > 0.0 { Ok(()) } else { Err(ConfigError::new(key, format!("must be > 0 (got {v})"))) }
}

/// `v` must be finite and ≥ 0.
pub fn non_negative(key: &str, v: f64) -> Result<(), ConfigError> {
    finite(key, v)?;
    if v >= 0.0 { Ok(()) } else { Err(ConfigError::new(key, format!("must be >= 0 (got {v})"))) }
}

/// `v` must be finite and within `[lo, hi]`.
pub fn in_range(key: &str, v: f64, lo: f64, hi: f64) -> Result<(), ConfigError> {
    finite(key, v)?;
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(ConfigError::new(key, format!("must be in [{lo}, {hi}] (got {v})")))
    }
}

/// `v` must be finite, above `lo` (exclusive) and at most `hi`: the shape
/// of periods, cell sizes and speeds, whose zero makes no sense and whose
/// upper bound keeps grids and loops finite.
pub fn in_range_above(key: &str, v: f64, lo: f64, hi: f64) -> Result<(), ConfigError> {
    finite(key, v)?;
    if v > lo && v <= hi { Ok(()) } else { Err(ConfigError::new(key, format!("must be in ({lo}, {hi}] (got {v})"))) }
}

/// A count must be at least `min`.
pub fn at_least<T: PartialOrd + Display + Copy>(key: &str, n: T, min: T) -> Result<(), ConfigError> {
    if n >= min { Ok(()) } else { Err(ConfigError::new(key, format!("must be >= {min} (got {n})"))) }
}

/// A count must be within `[lo, hi]`.
pub fn count_in<T: PartialOrd + Display + Copy>(key: &str, n: T, lo: T, hi: T) -> Result<(), ConfigError> {
    if n >= lo && n <= hi { Ok(()) } else { Err(ConfigError::new(key, format!("must be in {lo}..={hi} (got {n})"))) }
}

/// `a` (at `a_key`) must be strictly below `b` (at `b_key`).
pub fn below(a_key: &str, a: f64, b_key: &str, b: f64) -> Result<(), ConfigError> {
    if a < b { Ok(()) } else { Err(ConfigError::new(a_key, format!("must be below `{b_key}` ({a} >= {b})"))) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn messages_name_the_key_and_the_value() {
        assert_eq!(positive("tick_s", 0.0).unwrap_err().to_string(), "tick_s: must be > 0 (got 0)");
        assert_eq!(non_negative("a", -0.5).unwrap_err().to_string(), "a: must be >= 0 (got -0.5)");
        assert_eq!(in_range("p", 2.0, 0.0, 1.0).unwrap_err().to_string(), "p: must be in [0, 1] (got 2)");
        assert_eq!(in_range_above("c", 0.0, 0.0, 5.0).unwrap_err().message, "must be in (0, 5] (got 0)");
        assert_eq!(at_least("views", 0usize, 1).unwrap_err().to_string(), "views: must be >= 1 (got 0)");
        assert_eq!(count_in("n", 13u32, 1, 12).unwrap_err().message, "must be in 1..=12 (got 13)");
        assert_eq!(below("lo", 2.0, "hi", 1.0).unwrap_err().message, "must be below `hi` (2 >= 1)");
        assert_eq!(finite("x", f64::NAN).unwrap_err().message, "must be a finite number (got NaN)");
    }

    #[test]
    fn accepts_values_inside_and_on_the_bounds() {
        assert!(positive("a", f64::MIN_POSITIVE).is_ok());
        assert!(non_negative("a", 0.0).is_ok());
        assert!(in_range("a", 0.0, 0.0, 1.0).is_ok() && in_range("a", 1.0, 0.0, 1.0).is_ok());
        assert!(in_range_above("a", 5.0, 0.0, 5.0).is_ok());
        assert!(at_least("a", 1u32, 1).is_ok());
        assert!(count_in("a", 12usize, 1, 12).is_ok());
        assert!(below("a", 1.0, "b", 2.0).is_ok());
    }

    #[test]
    fn infinities_and_nan_are_rejected_everywhere() {
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(positive("a", v).is_err());
            assert!(non_negative("a", v).is_err());
            assert!(in_range("a", v, f64::MIN, f64::MAX).is_err());
            assert!(in_range_above("a", v, f64::MIN, f64::MAX).is_err());
        }
        assert!(below("a", f64::NAN, "b", 1.0).is_err());
    }

    #[test]
    fn under_builds_the_key_path() {
        let e = ConfigError::new("fast_mps", "x").under("speeds").under("safety").under("explore");
        assert_eq!(e.key, "explore.safety.speeds.fast_mps");
        assert_eq!(ConfigError::new("a", "x").under("").key, "a");
    }

    proptest! {
        #[test]
        fn in_range_agrees_with_the_interval(v in proptest::num::f64::ANY, lo in -10.0f64..0.0, hi in 0.0f64..10.0) {
            prop_assert_eq!(in_range("k", v, lo, hi).is_ok(), v.is_finite() && v >= lo && v <= hi);
        }
    }
}
