//! The grounding records: per-step feedback, stacked lists, the
//! final grounding and the file layout.

use crate::error::MemoryError;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// `text` without control characters: each one (ESC, BEL, a carriage
/// return, …) but newline and tab becomes a space. Grounding text comes
/// from people and models, and goes into system prompts and onto terminals
/// (`nav grounding merge` prints it), where an escape sequence would act.
///
/// ```
/// assert_eq!(nav_memory::grounding::clean_text("red\u{1b}[2J door\u{7}\nnext"), "red [2J door \nnext");
/// ```
pub fn clean_text(text: &str) -> String {
    text.chars().map(|c| if c.is_control() && c != '\n' && c != '\t' { ' ' } else { c }).collect()
}

fn clean_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    String::deserialize(d).map(|s| clean_text(&s))
}

fn clean_option<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Option::<String>::deserialize(d).map(|s| s.map(|s| clean_text(&s)))
}

fn clean_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Vec::<String>::deserialize(d).map(|v| v.iter().map(|s| clean_text(s)).collect())
}

/// Outcome of the step the feedback is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StepStatus {
    /// The step did what the user asked.
    Success,
    /// It did not.
    Failure,
    /// Work in progress.
    WiP,
}

impl StepStatus {
    /// The file spelling: `Success`, `Failure`, `WiP`.
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Success => "Success",
            StepStatus::Failure => "Failure",
            StepStatus::WiP => "WiP",
        }
    }
}

impl fmt::Display for StepStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for StepStatus {
    type Err = MemoryError;
    /// Case-insensitive; `wip`, `in_progress` and `work in progress` mean WiP.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_lowercase().replace(['-', ' '], "_").as_str() {
            "success" | "succeeded" => Ok(Self::Success),
            "failure" | "failed" | "fail" => Ok(Self::Failure),
            "wip" | "in_progress" | "work_in_progress" => Ok(Self::WiP),
            _ => Err(MemoryError::UnknownKeyword {
                kind: "step status",
                value: s.to_string(),
                expected: "Success, Failure, WiP",
            }),
        }
    }
}

/// The four feedback categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroundingCategory {
    /// What the user prefers ("stay away from the couch").
    UserPreference,
    /// Facts about the space ("kitchen is green").
    Spatial,
    /// How to do things ("open doors slowly").
    Procedural,
    /// Anything else.
    General,
}

impl GroundingCategory {
    /// All four, in file order.
    pub const ALL: [GroundingCategory; 4] = [Self::UserPreference, Self::Spatial, Self::Procedural, Self::General];

    /// Key in `feedback` and `stacked_grounding`.
    pub fn key(self) -> &'static str {
        match self {
            Self::UserPreference => "user_preference",
            Self::Spatial => "spatial",
            Self::Procedural => "procedural",
            Self::General => "general",
        }
    }

    /// Key in `final_grounding` (note the fourth: `general_grounding_rules`).
    pub fn final_key(self) -> &'static str {
        match self {
            Self::UserPreference => "user_preference_grounding",
            Self::Spatial => "spatial_grounding",
            Self::Procedural => "procedural_grounding",
            Self::General => "general_grounding_rules",
        }
    }

    /// Markdown section title.
    pub fn title(self) -> &'static str {
        match self {
            Self::UserPreference => "User Preference",
            Self::Spatial => "Spatial",
            Self::Procedural => "Procedural",
            Self::General => "General Rules",
        }
    }
}

impl FromStr for GroundingCategory {
    type Err = MemoryError;
    /// Case-insensitive keys; `preference` and `user` mean user_preference,
    /// `rules` means general.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_lowercase().replace(['-', ' '], "_").as_str() {
            "user_preference" | "preference" | "user" | "user_preferences" => Ok(Self::UserPreference),
            "spatial" => Ok(Self::Spatial),
            "procedural" | "procedure" => Ok(Self::Procedural),
            "general" | "rules" | "general_rules" => Ok(Self::General),
            _ => Err(MemoryError::UnknownKeyword {
                kind: "grounding category",
                value: s.to_string(),
                expected: "user_preference, spatial, procedural, general",
            }),
        }
    }
}

/// One step's feedback, by category (`null` where none was given).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CategoryFeedback {
    /// User preference feedback.
    #[serde(deserialize_with = "clean_option")]
    pub user_preference: Option<String>,
    /// Spatial feedback.
    #[serde(deserialize_with = "clean_option")]
    pub spatial: Option<String>,
    /// Procedural feedback.
    #[serde(deserialize_with = "clean_option")]
    pub procedural: Option<String>,
    /// General feedback.
    #[serde(deserialize_with = "clean_option")]
    pub general: Option<String>,
}

impl CategoryFeedback {
    /// The feedback of one category.
    pub fn get(&self, category: GroundingCategory) -> Option<&str> {
        match category {
            GroundingCategory::UserPreference => self.user_preference.as_deref(),
            GroundingCategory::Spatial => self.spatial.as_deref(),
            GroundingCategory::Procedural => self.procedural.as_deref(),
            GroundingCategory::General => self.general.as_deref(),
        }
    }

    /// Sets one category (empty text clears it).
    pub fn set(&mut self, category: GroundingCategory, text: impl Into<String>) {
        let text = clean_text(&text.into());
        let value = if text.trim().is_empty() { None } else { Some(text.trim().to_string()) };
        match category {
            GroundingCategory::UserPreference => self.user_preference = value,
            GroundingCategory::Spatial => self.spatial = value,
            GroundingCategory::Procedural => self.procedural = value,
            GroundingCategory::General => self.general = value,
        }
    }

    /// Builder form of [`set`](Self::set).
    pub fn with(mut self, category: GroundingCategory, text: impl Into<String>) -> Self {
        self.set(category, text);
        self
    }

    /// True when no category has text.
    pub fn is_empty(&self) -> bool {
        GroundingCategory::ALL.iter().all(|c| self.get(*c).is_none())
    }

    /// Parses what a user types at a step (e.g. `feedback :
    /// spatial: kitchen is green`). One `<category>: <text>` per line; an
    /// optional leading `feedback :` is ignored; a line without any `:` is
    /// `general` feedback; two lines of the same category are joined with
    /// `"; "`. A line whose prefix before `:` is not a category is an error
    /// (most likely a typo), as is input without any feedback.
    ///
    /// ```
    /// use nav_memory::grounding::{CategoryFeedback, GroundingCategory};
    /// let f = CategoryFeedback::parse("feedback : spatial: kitchen is green")?;
    /// assert_eq!(f.get(GroundingCategory::Spatial), Some("kitchen is green"));
    /// assert!(CategoryFeedback::parse("spacial: typo").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn parse(input: &str) -> Result<Self, MemoryError> {
        Self::parse_typed(input).map(|(_, f)| f)
    }

    /// [`parse`](Self::parse) for a typed line that may also set the step's
    /// status: a line starting with `Success:`, `Failure:` or `WiP:`
    /// (case-insensitive, before or after the optional `feedback :`) sets
    /// it, and the rest of the line is the feedback. The last status given
    /// wins; `None` when no line gives one.
    ///
    /// ```
    /// use nav_memory::grounding::{CategoryFeedback, GroundingCategory, StepStatus};
    /// let (status, f) = CategoryFeedback::parse_typed("failure: spatial: the kitchen is not here")?;
    /// assert_eq!(status, Some(StepStatus::Failure));
    /// assert_eq!(f.get(GroundingCategory::Spatial), Some("the kitchen is not here"));
    /// assert_eq!(CategoryFeedback::parse_typed("SUCCESS: found it")?.0, Some(StepStatus::Success));
    /// assert_eq!(CategoryFeedback::parse_typed("spatial: kitchen is green")?.0, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn parse_typed(input: &str) -> Result<(Option<StepStatus>, Self), MemoryError> {
        let mut out = Self::default();
        let mut status = None;
        for raw in input.lines() {
            let mut line = raw.trim();
            for _ in 0..2 {
                if let Some(rest) = strip_prefix_ci(line, "feedback") {
                    if let Some(rest) = rest.trim_start().strip_prefix(':') {
                        line = rest.trim();
                    }
                }
                if let Some((s, rest)) = strip_status(line) {
                    status = Some(s);
                    line = rest;
                }
            }
            if line.is_empty() {
                continue;
            }
            let (category, text) = match line.split_once(':') {
                Some((head, text)) => match head.parse::<GroundingCategory>() {
                    Ok(c) => (c, text.trim()),
                    Err(_) => {
                        return Err(MemoryError::BadFeedback {
                            line: raw.to_string(),
                            reason: "expected <category>: <text> with category user_preference, spatial, procedural or general",
                        });
                    }
                },
                None => (GroundingCategory::General, line),
            };
            if text.is_empty() {
                return Err(MemoryError::BadFeedback { line: raw.to_string(), reason: "the feedback text is empty" });
            }
            let joined = match out.get(category) {
                Some(prev) => format!("{prev}; {text}"),
                None => text.to_string(),
            };
            out.set(category, joined);
        }
        if out.is_empty() {
            return Err(MemoryError::BadFeedback { line: input.to_string(), reason: "no feedback given" });
        }
        Ok((status, out))
    }
}

/// A leading `Success:`, `Failure:` or `WiP:` (case-insensitive, spaces
/// allowed before the colon): the status and the rest of the line.
fn strip_status(line: &str) -> Option<(StepStatus, &str)> {
    [StepStatus::Success, StepStatus::Failure, StepStatus::WiP].into_iter().find_map(|status| {
        let rest = strip_prefix_ci(line, status.as_str())?.trim_start().strip_prefix(':')?;
        Some((status, rest.trim()))
    })
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &s[prefix.len()..])
}

/// One step of `grounding_per_step`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepFeedback {
    /// Step number (as the user sees it, usually from 1).
    pub step_id: u32,
    /// The user's instruction at that step.
    #[serde(default, deserialize_with = "clean_string")]
    pub instruction: String,
    /// Outcome.
    pub status: StepStatus,
    /// Feedback by category.
    #[serde(default)]
    pub feedback: CategoryFeedback,
}

/// `stacked_grounding`: per category, the feedback entries formatted
/// `[ Step1 - Success ] : text`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StackedGrounding {
    /// User preference entries.
    #[serde(deserialize_with = "clean_list")]
    pub user_preference: Vec<String>,
    /// Spatial entries.
    #[serde(deserialize_with = "clean_list")]
    pub spatial: Vec<String>,
    /// Procedural entries.
    #[serde(deserialize_with = "clean_list")]
    pub procedural: Vec<String>,
    /// General entries.
    #[serde(deserialize_with = "clean_list")]
    pub general: Vec<String>,
}

impl StackedGrounding {
    /// Formats one entry exactly as the original grounding tool does:
    /// `[ Step1 - Success ] : text`.
    pub fn entry(step_id: u32, status: StepStatus, text: &str) -> String {
        format!("[ Step{step_id} - {status} ] : {}", clean_text(text.trim()))
    }

    /// The entries of one category.
    pub fn get(&self, category: GroundingCategory) -> &[String] {
        match category {
            GroundingCategory::UserPreference => &self.user_preference,
            GroundingCategory::Spatial => &self.spatial,
            GroundingCategory::Procedural => &self.procedural,
            GroundingCategory::General => &self.general,
        }
    }

    /// The entries of one category, mutably.
    pub fn get_mut(&mut self, category: GroundingCategory) -> &mut Vec<String> {
        match category {
            GroundingCategory::UserPreference => &mut self.user_preference,
            GroundingCategory::Spatial => &mut self.spatial,
            GroundingCategory::Procedural => &mut self.procedural,
            GroundingCategory::General => &mut self.general,
        }
    }

    /// Adds every category of one step's feedback.
    pub fn push_step(&mut self, step: &StepFeedback) {
        for c in GroundingCategory::ALL {
            if let Some(text) = step.feedback.get(c).filter(|t| !t.trim().is_empty()) {
                self.get_mut(c).push(Self::entry(step.step_id, step.status, text));
            }
        }
    }

    /// True when every list is empty.
    pub fn is_empty(&self) -> bool {
        GroundingCategory::ALL.iter().all(|c| self.get(*c).is_empty())
    }
}

/// `{"content": "..."}` of one final-grounding category.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct GroundingContent {
    /// The text (may be empty).
    #[serde(deserialize_with = "clean_string")]
    pub content: String,
}

/// `final_grounding`: what the VLM distilled at the end of an episode.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct FinalGrounding {
    /// When it was generated (the caller's clock; dropped when merging).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation_timestamp: Option<String>,
    /// User preference rules.
    pub user_preference_grounding: GroundingContent,
    /// Spatial knowledge.
    pub spatial_grounding: GroundingContent,
    /// Procedural rules.
    pub procedural_grounding: GroundingContent,
    /// General rules.
    pub general_grounding_rules: GroundingContent,
}

impl FinalGrounding {
    /// A final grounding from the four contents in [`GroundingCategory::ALL`]
    /// order.
    pub fn new(generation_timestamp: Option<String>, contents: [&str; 4]) -> Self {
        let mut g = Self { generation_timestamp, ..Self::default() };
        for (c, text) in GroundingCategory::ALL.into_iter().zip(contents) {
            g.set(c, text);
        }
        g
    }

    /// The content of one category.
    pub fn content(&self, category: GroundingCategory) -> &str {
        match category {
            GroundingCategory::UserPreference => &self.user_preference_grounding.content,
            GroundingCategory::Spatial => &self.spatial_grounding.content,
            GroundingCategory::Procedural => &self.procedural_grounding.content,
            GroundingCategory::General => &self.general_grounding_rules.content,
        }
    }

    /// Sets the content of one category.
    pub fn set(&mut self, category: GroundingCategory, content: impl Into<String>) {
        let slot = match category {
            GroundingCategory::UserPreference => &mut self.user_preference_grounding,
            GroundingCategory::Spatial => &mut self.spatial_grounding,
            GroundingCategory::Procedural => &mut self.procedural_grounding,
            GroundingCategory::General => &mut self.general_grounding_rules,
        };
        slot.content = clean_text(&content.into());
    }

    /// True when every content is blank.
    pub fn is_empty(&self) -> bool {
        GroundingCategory::ALL.iter().all(|c| self.content(*c).trim().is_empty())
    }
}

/// `expr_info` of a grounding file.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ExprInfo {
    /// The episode number.
    pub episode_id: u64,
}

/// A grounding file in the JSON layout of the original (Python) grounding
/// tool. Reading is lenient (missing sections default to empty, unknown keys
/// are ignored) because files may come from that tool.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct GroundingFile {
    /// Episode information.
    pub expr_info: ExprInfo,
    /// Every step's feedback, in order.
    pub grounding_per_step: Vec<StepFeedback>,
    /// The stacked lists.
    pub stacked_grounding: StackedGrounding,
    /// The final grounding (`null` until generated).
    pub final_grounding: Option<FinalGrounding>,
}

/// What the planner needs to ask a VLM for the final grounding: the current
/// episode's stacked feedback only (previous grounding is ignored when
/// generating).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroundingRequest {
    /// The episode.
    pub episode_id: u64,
    /// Its stacked feedback.
    pub stacked: StackedGrounding,
}

impl GroundingRequest {
    /// True when there is no feedback to distill (skip the VLM call).
    pub fn is_empty(&self) -> bool {
        self.stacked.is_empty()
    }

    /// The feedback as prompt text: one `key:` block per non-empty category,
    /// one `- entry` line each.
    pub fn feedback_text(&self) -> String {
        let mut s = String::new();
        for c in GroundingCategory::ALL {
            let entries = self.stacked.get(c);
            if entries.is_empty() {
                continue;
            }
            s.push_str(c.key());
            s.push_str(":\n");
            for e in entries {
                s.push_str("- ");
                s.push_str(e);
                s.push('\n');
            }
        }
        s
    }
}
