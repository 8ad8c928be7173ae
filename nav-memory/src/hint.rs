//! The rule-based `avoid_hint` of a Discovered-Context record.
//!
//! The hint is never written by a VLM; the memory computes it from the recent
//! place/anchor sequence when a DC record is pushed. Format (short, one line):
//!
//! ```text
//! pattern:<P>[,<P>…][; avoid:<type>[,<type>]]
//! ```
//!
//! with `<P>` among `STUCK`, `ABABA`, `REVISIT` in that order, and `avoid:`
//! listing the place types the planner should not head for next (at most
//! two, normalized, no punctuation). A single pattern without targets reads
//! as just the pattern, e.g. `pattern:STUCK`.
//!
//! | pattern | rule | avoid target |
//! | --- | --- | --- |
//! | `STUCK` | the STUCK test holds now (≤ 1 unique location in the last W steps, see [`StuckGranularity`](crate::StuckGranularity)) | — |
//! | `ABABA` | the last four places are A, B, A, B with A ≠ B (place types) | A, the place just left twice |
//! | `REVISIT` | the current anchor has ≥ 2 localization hints older than the last K anchors: the robot is back in an anchor cluster it explored before | the current place type |

use serde::{Deserialize, Serialize};
use std::fmt;

/// One oscillation / revisit pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Pattern {
    /// No progress: at most one unique location over the last W steps.
    Stuck,
    /// Alternating between two places: A, B, A, B.
    Ababa,
    /// Back in an anchor cluster explored earlier (nav-memory's extra rule).
    Revisit,
}

impl Pattern {
    /// The upper-case name used in hints and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Pattern::Stuck => "STUCK",
            Pattern::Ababa => "ABABA",
            Pattern::Revisit => "REVISIT",
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A computed avoid hint: the active patterns and the place types to avoid.
///
/// ```
/// use nav_memory::{AvoidHint, Pattern};
/// let h = AvoidHint { patterns: vec![Pattern::Ababa], avoid: vec!["kitchen".into()] };
/// assert_eq!(h.to_string(), "pattern:ABABA; avoid:kitchen");
/// let h = AvoidHint { patterns: vec![Pattern::Stuck], avoid: vec![] };
/// assert_eq!(h.to_string(), "pattern:STUCK");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AvoidHint {
    /// Active patterns, in the fixed order STUCK, ABABA, REVISIT.
    pub patterns: Vec<Pattern>,
    /// Place types not to head for next (at most [`AvoidHint::MAX_AVOID`]).
    pub avoid: Vec<String>,
}

impl AvoidHint {
    /// Most avoid targets listed.
    pub const MAX_AVOID: usize = 2;

    /// Builds a hint; returns `None` when no pattern is active. Patterns are
    /// sorted and de-duplicated; avoid targets de-duplicated (first kept),
    /// empty ones dropped, at most [`Self::MAX_AVOID`], each clipped to
    /// `type_chars` characters.
    pub fn new(mut patterns: Vec<Pattern>, avoid: Vec<String>, type_chars: usize) -> Option<Self> {
        patterns.sort();
        patterns.dedup();
        if patterns.is_empty() {
            return None;
        }
        let mut targets: Vec<String> = Vec::new();
        for t in avoid {
            let t = crate::text::clip_chars(&t, type_chars);
            if !t.is_empty() && !targets.contains(&t) && targets.len() < Self::MAX_AVOID {
                targets.push(t);
            }
        }
        Some(Self { patterns, avoid: targets })
    }

    /// True when `pattern` is active.
    pub fn has(&self, pattern: Pattern) -> bool {
        self.patterns.contains(&pattern)
    }
}

impl fmt::Display for AvoidHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("pattern:")?;
        for (i, p) in self.patterns.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(p.as_str())?;
        }
        if !self.avoid.is_empty() {
            write!(f, "; avoid:{}", self.avoid.join(","))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_combined_patterns() {
        let h = AvoidHint::new(
            vec![Pattern::Revisit, Pattern::Stuck, Pattern::Ababa],
            vec!["kitchen".into(), "kitchen".into(), "corridor".into(), "bedroom".into()],
            24,
        )
        .unwrap();
        assert_eq!(h.to_string(), "pattern:STUCK,ABABA,REVISIT; avoid:kitchen,corridor");
        assert!(AvoidHint::new(vec![], vec!["x".into()], 24).is_none());
    }
}
