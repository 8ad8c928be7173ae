//! Grounding knowledge (see docs/GROUNDING.md): feedback collected per step in four
//! categories, a final grounding the planner's VLM writes at episode end,
//! JSON/TXT files per episode plus a global `grounding_latest`, and merging
//! several files into one system-prompt section.
//!
//! - [`EpisodeGrounding`] records an episode's [`StepFeedback`] and stacked
//!   lists; [`EpisodeGrounding::request`] gives the planner a typed
//!   [`GroundingRequest`], and the planner hands back a [`FinalGrounding`].
//! - [`GroundingStore`] writes the files in a [`SaveFormat`].
//! - [`merge_files`] reads, merges and renders several files
//!   ([`MergedGrounding::render_prompt_section`]); [`merge_documents`] is the
//!   pure merge.
//!
//! No clock is read: timestamps come from the caller.

mod merge;
mod store;
mod types;

pub use merge::{
    GroundingText, GroundingWarning, MergeFormat, MergedDocument, MergedGrounding, PART_SEPARATOR, merge_documents,
    merge_files, parse_path_list, shift_markdown_headers,
};
pub use store::{
    EpisodeGrounding, GroundingStore, SaveFormat, load_grounding_document, load_grounding_file, render_txt,
};
pub use types::{
    CategoryFeedback, ExprInfo, FinalGrounding, GroundingCategory, GroundingContent, GroundingFile, GroundingRequest,
    StackedGrounding, StepFeedback, StepStatus, clean_text,
};
