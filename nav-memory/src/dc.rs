//! The Discovered-Context queue: one short record per planner
//! call, FIFO, at most N, re-indexed 1..N oldest → newest on every push.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// One Discovered-Context record (the minimal form: goal flag, goal scene
/// type, a short reason and the rule-based hint).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DcRecord {
    /// Position in the queue, 1 = oldest, N = newest (re-assigned on push).
    pub idx: usize,
    /// Whether the planner saw the goal object.
    pub goal_flag: bool,
    /// The scene type the planner is heading for (its own string).
    pub goal_scene_type: String,
    /// The planner's one-sentence reason.
    pub why: String,
    /// Rule-based pattern hint computed by the memory, e.g.
    /// `pattern:ABABA; avoid:kitchen` (see [`AvoidHint`](crate::AvoidHint)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avoid_hint: Option<String>,
}

/// A bounded FIFO of [`DcRecord`]s.
///
/// ```
/// use nav_memory::DcQueue;
/// let mut q = DcQueue::new(2);
/// q.push(false, "kitchen", "sinks are there", None);
/// q.push(false, "corridor", "connects rooms", None);
/// q.push(true, "bedroom", "bed visible", Some("pattern:STUCK".into()));
/// let idx: Vec<usize> = q.iter().map(|r| r.idx).collect();
/// assert_eq!(idx, [1, 2]);
/// assert_eq!(q.iter().next().unwrap().goal_scene_type, "corridor");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DcQueue {
    capacity: usize,
    records: VecDeque<DcRecord>,
}

impl DcQueue {
    /// Longest `why` kept, in characters (one sentence).
    pub const MAX_WHY_CHARS: usize = 160;
    /// Longest `goal_scene_type` kept, in characters.
    pub const MAX_SCENE_CHARS: usize = 60;

    /// An empty queue holding at most `capacity` records (at least 1).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self { capacity, records: VecDeque::with_capacity(capacity) }
    }

    /// Appends a record, dropping the oldest on overflow, re-indexes 1..N
    /// and returns the new record. `goal_scene_type` and `why` are stored as
    /// given, clipped to [`Self::MAX_SCENE_CHARS`] / [`Self::MAX_WHY_CHARS`].
    pub fn push(&mut self, goal_flag: bool, goal_scene_type: &str, why: &str, avoid_hint: Option<String>) -> &DcRecord {
        if self.records.len() >= self.capacity {
            self.records.pop_front();
        }
        self.records.push_back(DcRecord {
            idx: 0,
            goal_flag,
            goal_scene_type: crate::text::clip_chars(goal_scene_type, Self::MAX_SCENE_CHARS),
            why: crate::text::clip_chars(why, Self::MAX_WHY_CHARS),
            avoid_hint,
        });
        for (i, r) in self.records.iter_mut().enumerate() {
            r.idx = i + 1;
        }
        let last = self.records.len() - 1;
        &self.records[last]
    }

    /// Records oldest → newest (idx 1 → N), the order they go to the planner.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &DcRecord> + '_ {
        self.records.iter()
    }

    /// The newest record.
    pub fn latest(&self) -> Option<&DcRecord> {
        self.records.back()
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True when no planner call has been recorded.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Maximum number of records (N).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Checks the invariants: at most N records, indices exactly 1..len.
    pub fn validate(&self) -> Result<(), String> {
        if self.capacity == 0 {
            return Err("DC queue capacity is 0".into());
        }
        if self.records.len() > self.capacity {
            return Err(format!("DC queue holds {} records, more than N = {}", self.records.len(), self.capacity));
        }
        for (i, r) in self.records.iter().enumerate() {
            if r.idx != i + 1 {
                return Err(format!("DC record at position {} has idx {}", i + 1, r.idx));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn seed_example_n5() {
        let mut q = DcQueue::new(5);
        for i in 0..7 {
            let r = q.push(false, "corridor", &format!("call {i}"), None);
            assert_eq!(r.idx, (i + 1).min(5));
        }
        let whys: Vec<&str> = q.iter().map(|r| r.why.as_str()).collect();
        assert_eq!(whys, ["call 2", "call 3", "call 4", "call 5", "call 6"]);
        q.validate().unwrap();
    }

    #[test]
    fn long_strings_are_clipped() {
        let mut q = DcQueue::new(5);
        let r = q.push(true, &"k".repeat(500), &"w".repeat(500), None);
        assert_eq!(r.why.chars().count(), DcQueue::MAX_WHY_CHARS);
        assert_eq!(r.goal_scene_type.chars().count(), DcQueue::MAX_SCENE_CHARS);
    }

    proptest! {
        #[test]
        fn bounded_indexed_fifo(capacity in 1usize..8, pushes in proptest::collection::vec(any::<bool>(), 0..40)) {
            let mut q = DcQueue::new(capacity);
            for (i, flag) in pushes.iter().enumerate() {
                let r = q.push(*flag, "s", &i.to_string(), None);
                prop_assert_eq!(r.why.clone(), i.to_string());
                prop_assert!(q.len() <= capacity);
                let idx: Vec<usize> = q.iter().map(|r| r.idx).collect();
                prop_assert_eq!(idx, (1..=q.len()).collect::<Vec<_>>());
                // FIFO: the queue holds exactly the last len() pushes, in order.
                let whys: Vec<String> = q.iter().map(|r| r.why.clone()).collect();
                let first = i + 1 - q.len();
                let expected: Vec<String> = (first..=i).map(|k| k.to_string()).collect();
                prop_assert_eq!(whys, expected);
            }
            prop_assert!(q.validate().is_ok());
        }
    }
}
