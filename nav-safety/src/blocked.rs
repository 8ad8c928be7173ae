//! Blocked-action memory: stops
//! the VLM from retrying an action the safety layer just blocked.
//!
//! An entry is keyed by tool and direction (or angle, or goal) — never by
//! speed, because a slower attempt at the same wall is still blocked. After
//! `max_retries` (2) blocks, further attempts are *suppressed* until
//! `cooldown_s` (15 s) have passed since the last block; then the entry is
//! forgotten (the environment may have changed). Expired entries are
//! removed on every access. Suppressed attempts are not recorded as new
//! blocks, so the cooldown always ends 15 s after the last real block.
//!
//! ```
//! use nav_safety::blocked::{ActionKey, Allowance, BlockedActionMemory};
//! use nav_safety::config::BlockedConfig;
//! let mut memory = BlockedActionMemory::new(BlockedConfig::default());
//! let key = ActionKey::new("move_toward", "forward");
//! memory.record_blocked(&key, 0.0);
//! memory.record_blocked(&key, 1.0);
//! assert!(matches!(memory.check(&key, 2.0), Allowance::Suppressed { count: 2, .. }));
//! assert_eq!(memory.check(&key, 16.5), Allowance::Allowed);
//! ```

use crate::config::BlockedConfig;
use crate::tools::{GoalSpec, ToolCall};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The identity of an action for retry suppression: `tool:direction`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ActionKey(String);

impl ActionKey {
    /// A key from a tool name and its direction-like argument.
    pub fn new(tool: &str, direction: &str) -> Self {
        ActionKey(format!("{tool}:{direction}"))
    }

    /// The key of a call, or `None` for tools the safety layer never
    /// blocks (stop, perception, communication). `move_toward` keys on the
    /// direction, `rotate` on the angle,
    /// `navigate_to_goal` on the goal (coordinates rounded to 0.5 m, so
    /// that a nudged retry of the same spot is still recognised).
    pub fn of(call: &ToolCall) -> Option<Self> {
        match call {
            ToolCall::MoveToward { direction, .. } => Some(Self::new(call.name(), direction.as_str())),
            ToolCall::Rotate { degrees } => Some(Self::new(call.name(), &degrees.degrees().to_string())),
            ToolCall::NavigateToGoal { goal, .. } => {
                let arg = match goal {
                    GoalSpec::Frontier { id } => format!("frontier:{id}"),
                    GoalSpec::Coordinates { x, y } => {
                        let r = |v: f64| (v * 2.0).round() / 2.0;
                        format!("coordinates:{:.1},{:.1}", r(*x), r(*y))
                    }
                    GoalSpec::Retrace => "retrace".to_owned(),
                };
                Some(Self::new(call.name(), &arg))
            }
            _ => None,
        }
    }

    /// The key text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ActionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether an action may be attempted.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Allowance {
    /// Never blocked, or forgotten.
    Allowed,
    /// Allowed, but it was blocked recently; pass the warning on.
    Warned {
        /// Blocks inside the cooldown.
        count: u32,
        /// The warning text for the model.
        message: String,
    },
    /// Suppressed: do not execute, tell the VLM to change strategy.
    Suppressed {
        /// Blocks inside the cooldown.
        count: u32,
        /// The suppression message for the model.
        message: String,
    },
}

impl Allowance {
    /// True unless suppressed.
    pub fn is_allowed(&self) -> bool {
        !matches!(self, Allowance::Suppressed { .. })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
struct Entry {
    count: u32,
    last_blocked_s: f64,
}

/// Retry suppression for blocked actions. Time is passed in (seconds on
/// the caller's monotonic clock).
#[derive(Debug, Clone, Default)]
pub struct BlockedActionMemory {
    config: BlockedConfig,
    entries: BTreeMap<ActionKey, Entry>,
}

impl BlockedActionMemory {
    /// An empty memory.
    pub fn new(config: BlockedConfig) -> Self {
        Self { config, entries: BTreeMap::new() }
    }

    fn expire(&mut self, now_s: f64) {
        let cooldown = self.config.cooldown_s;
        // NaN ages (a broken clock) keep the entry: forgetting is the unsafe side.
        self.entries.retain(|_, e| {
            let age = now_s - e.last_blocked_s;
            age.is_nan() || age <= cooldown
        });
    }

    /// Whether `key` may be attempted at `now_s`.
    pub fn check(&mut self, key: &ActionKey, now_s: f64) -> Allowance {
        self.expire(now_s);
        let Some(e) = self.entries.get(key) else {
            return Allowance::Allowed;
        };
        if e.count >= self.config.max_retries {
            Allowance::Suppressed { count: e.count, message: suppressed_message(e.count, self.config.cooldown_s) }
        } else {
            Allowance::Warned { count: e.count, message: format!("Warning: blocked {}x recently.", e.count) }
        }
    }

    /// Records that `key` was blocked at `now_s`; returns the count of
    /// blocks inside the cooldown including this one.
    pub fn record_blocked(&mut self, key: &ActionKey, now_s: f64) -> u32 {
        self.expire(now_s);
        let e = self.entries.entry(key.clone()).or_insert(Entry { count: 0, last_blocked_s: now_s });
        e.count = e.count.saturating_add(1);
        e.last_blocked_s = now_s;
        e.count
    }

    /// Blocks of `key` inside the cooldown.
    pub fn count(&mut self, key: &ActionKey, now_s: f64) -> u32 {
        self.expire(now_s);
        self.entries.get(key).map_or(0, |e| e.count)
    }

    /// Number of remembered (unexpired at the last access) keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forgets everything (e.g. when exploration restarts).
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

/// The message for a suppressed action.
pub fn suppressed_message(count: u32, cooldown_s: f64) -> String {
    format!(
        "This direction was blocked {count} times in the last {cooldown_s} seconds. The obstacle has not moved. \
         Please choose a completely different direction or strategy."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{RotateDegrees, Speed};
    use nav_core::lidar::Direction;
    use proptest::prelude::*;

    #[test]
    fn keys_ignore_speed() {
        let a = ToolCall::MoveToward { direction: Direction::Left, speed: Speed::Fast, duration_s: 2.0 };
        let b = ToolCall::MoveToward { direction: Direction::Left, speed: Speed::Slow, duration_s: 5.0 };
        assert_eq!(ActionKey::of(&a), ActionKey::of(&b));
        assert_eq!(ActionKey::of(&a).unwrap().as_str(), "move_toward:left");
        let r = ToolCall::Rotate { degrees: RotateDegrees::new(-90).unwrap() };
        assert_eq!(ActionKey::of(&r).unwrap().as_str(), "rotate:-90");
        let g = ToolCall::NavigateToGoal { goal: GoalSpec::Coordinates { x: 1.6, y: -0.1 }, reason: String::new() };
        assert_eq!(ActionKey::of(&g).unwrap().as_str(), "navigate_to_goal:coordinates:1.5,-0.0");
        assert_eq!(ActionKey::of(&ToolCall::StopRobot { reason: crate::tools::StopReason::Uncertain }), None);
    }

    #[test]
    fn seed_scenario() {
        let mut m = BlockedActionMemory::new(BlockedConfig::default());
        let k = ActionKey::new("move_toward", "forward");
        assert_eq!(m.check(&k, 0.0), Allowance::Allowed);
        assert_eq!(m.record_blocked(&k, 0.0), 1);
        assert_eq!(m.check(&k, 1.0), Allowance::Warned { count: 1, message: "Warning: blocked 1x recently.".into() });
        assert_eq!(m.record_blocked(&k, 5.0), 2);
        let Allowance::Suppressed { count, message } = m.check(&k, 6.0) else { panic!("not suppressed") };
        assert_eq!(count, 2);
        assert_eq!(
            message,
            "This direction was blocked 2 times in the last 15 seconds. The obstacle has not moved. \
             Please choose a completely different direction or strategy."
        );
        // Still suppressed exactly at the cooldown, forgotten just after it.
        assert!(!m.check(&k, 20.0).is_allowed());
        assert_eq!(m.check(&k, 20.01), Allowance::Allowed);
        assert!(m.is_empty());
        // Another key is unaffected.
        assert_eq!(m.check(&ActionKey::new("move_toward", "left"), 6.0), Allowance::Allowed);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        /// Against a reference model: once `max_retries` blocks were
        /// recorded with no gap longer than the cooldown, every attempt is
        /// suppressed until the cooldown since the last block has passed.
        #[test]
        fn never_a_third_retry_inside_the_cooldown(
            ops in proptest::collection::vec((0.0f64..9.0, 0usize..3, any::<bool>()), 1..60)
        ) {
            let cfg = BlockedConfig::default();
            let mut m = BlockedActionMemory::new(cfg.clone());
            let keys = [ActionKey::new("move_toward", "forward"), ActionKey::new("rotate", "90"), ActionKey::new("move_toward", "left")];
            let mut model: [(u32, f64); 3] = [(0, f64::NEG_INFINITY); 3];
            let mut now = 0.0;
            for (dt, k, block) in ops {
                now += dt;
                let (count, last) = &mut model[k];
                if now - *last > cfg.cooldown_s {
                    *count = 0;
                }
                let allowance = m.check(&keys[k], now);
                let must_suppress = *count >= cfg.max_retries && now - *last <= cfg.cooldown_s;
                prop_assert_eq!(!allowance.is_allowed(), must_suppress, "t={} count={} last={}", now, count, last);
                if block && allowance.is_allowed() {
                    m.record_blocked(&keys[k], now);
                    *count += 1;
                    *last = now;
                }
            }
        }
    }
}
