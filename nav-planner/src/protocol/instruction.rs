//! [`UserInstruction`]: what an operator said to the planner (a voice
//! command that is no control word), cleaned and bounded before it goes
//! into a request as an `OPERATOR SAYS:` line.

/// Longest [`UserInstruction`], in characters (longer text is cut).
pub const MAX_INSTRUCTION_CHARS: usize = 200;

/// Free text for the planner: trimmed, without control characters, at
/// most [`MAX_INSTRUCTION_CHARS`] characters, never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInstruction(String);

impl UserInstruction {
    /// The cleaned text of `raw` (control characters become spaces, runs
    /// of whitespace one space, cut at [`MAX_INSTRUCTION_CHARS`]); `None`
    /// when nothing is left.
    pub fn new(raw: &str) -> Option<Self> {
        let spaced: String = raw.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        let words: Vec<&str> = spaced.split_whitespace().collect();
        if words.is_empty() {
            return None;
        }
        let text: String = words.join(" ").chars().take(MAX_INSTRUCTION_CHARS).collect();
        Some(Self(text.trim_end().to_string()))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for UserInstruction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
