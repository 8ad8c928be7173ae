//! Merging several grounding files and rendering them for the system prompt
//! (the "merge several files" rules of the original grounding tool).
//!
//! - JSON files: `stacked_grounding` lists are merged per category (union,
//!   duplicates removed, first-seen order); each `final_grounding` category
//!   becomes `"- <content>\n\n- <content>"` over the files (blank and repeated
//!   contents skipped); `generation_timestamp` is dropped. The result is
//!   rendered as Markdown with `### <Category>` headers, shifted one level
//!   down (H3 → H4) because it is inserted into the system prompt.
//! - TXT files (any extension other than `.json`): their text, used as is.
//! - All parts are joined with `"\n\n---\n\n"`: the JSON part first, then the
//!   TXT files in the order given.
//! - A JSON file that does not parse, or parses without any grounding in
//!   it, is skipped with a warning naming it (returned in
//!   [`MergedGrounding::warnings`] and logged with `tracing::warn!`); so is
//!   an empty TXT file, and so is a file that exists but cannot be read
//!   (not UTF-8, no permission, a directory). A file that does not exist
//!   is an error naming it (most likely a typo in the file list).
//!
//! [`MergeFormat`] (the original grounding tool's `GROUNDING_MERGE_FORMAT`)
//! chooses how the merged JSON part appears: `txt` = the Markdown rendering
//! (the default), `json` = the merged document as a fenced ```json block,
//! `both` = Markdown then the JSON block. TXT inputs are text in every mode.

use super::types::{FinalGrounding, GroundingCategory, GroundingFile, StackedGrounding};
use crate::error::MemoryError;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The separator between merged parts.
pub const PART_SEPARATOR: &str = "\n\n---\n\n";

/// How the merged JSON grounding is rendered (`--format txt|json|both`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MergeFormat {
    /// Markdown (default).
    #[default]
    Txt,
    /// The merged document as a fenced JSON block.
    Json,
    /// Markdown, then the JSON block.
    Both,
}

impl FromStr for MergeFormat {
    type Err = MemoryError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "txt" | "text" | "markdown" | "md" => Ok(Self::Txt),
            "json" => Ok(Self::Json),
            "both" => Ok(Self::Both),
            _ => Err(MemoryError::UnknownKeyword {
                kind: "merge format",
                value: s.to_string(),
                expected: "txt, json, both",
            }),
        }
    }
}

impl fmt::Display for MergeFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Txt => "txt",
            Self::Json => "json",
            Self::Both => "both",
        })
    }
}

/// The merged JSON grounding: the grounding file layout without `expr_info`,
/// per-step records and timestamps.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MergedDocument {
    /// Union of the stacked lists.
    pub stacked_grounding: StackedGrounding,
    /// Joined final contents (`generation_timestamp` is always `None`).
    pub final_grounding: FinalGrounding,
}

impl MergedDocument {
    /// True when nothing was merged in.
    pub fn is_empty(&self) -> bool {
        self.stacked_grounding.is_empty() && self.final_grounding.is_empty()
    }

    /// Markdown with `### <Category>` headers (before the prompt shift):
    /// per non-empty category the final content, then the stacked entries
    /// under "Feedback log:".
    pub fn render_markdown(&self) -> String {
        let mut sections = Vec::new();
        for c in GroundingCategory::ALL {
            let content = self.final_grounding.content(c).trim();
            let entries = self.stacked_grounding.get(c);
            if content.is_empty() && entries.is_empty() {
                continue;
            }
            let mut s = format!("### {}\n", c.title());
            if !content.is_empty() {
                s.push_str(content);
                s.push('\n');
            }
            if !entries.is_empty() {
                if !content.is_empty() {
                    s.push('\n');
                }
                s.push_str("Feedback log:\n");
                for e in entries {
                    s.push_str("- ");
                    s.push_str(e);
                    s.push('\n');
                }
            }
            sections.push(s.trim_end().to_string());
        }
        sections.join("\n\n")
    }

    /// The Markdown as inserted into the system prompt (H3 → H4).
    pub fn render_prompt_markdown(&self) -> String {
        shift_markdown_headers(&self.render_markdown(), 1)
    }
}

/// Merges grounding documents by the rules in the module docs.
/// Pure and idempotent on duplicates: merging a list with itself, or with
/// repeated files, gives the same result as merging it once.
pub fn merge_documents<'a>(files: impl IntoIterator<Item = &'a GroundingFile>) -> MergedDocument {
    // hash sets beside the lists keep the merge linear in the number of entries
    let mut stacked = StackedGrounding::default();
    let mut seen_entries: [HashSet<&'a str>; 4] = Default::default();
    let mut contents: [Vec<&'a str>; 4] = Default::default();
    let mut seen_contents: [HashSet<&'a str>; 4] = Default::default();
    for file in files {
        for (i, c) in GroundingCategory::ALL.into_iter().enumerate() {
            let list = stacked.get_mut(c);
            for e in file.stacked_grounding.get(c) {
                if seen_entries[i].insert(e.as_str()) {
                    list.push(e.clone());
                }
            }
            if let Some(fg) = &file.final_grounding {
                let text = fg.content(c).trim();
                if !text.is_empty() && seen_contents[i].insert(text) {
                    contents[i].push(text);
                }
            }
        }
    }
    let mut final_grounding = FinalGrounding::default();
    for (i, c) in GroundingCategory::ALL.into_iter().enumerate() {
        let joined: Vec<String> = contents[i].iter().map(|t| format!("- {t}")).collect();
        final_grounding.set(c, joined.join("\n\n"));
    }
    MergedDocument { stacked_grounding: stacked, final_grounding }
}

/// Shifts every ATX Markdown header (`#`…`######` followed by a space)
/// outside fenced code blocks down by `levels` (capped at `######`).
///
/// ```
/// use nav_memory::grounding::shift_markdown_headers;
/// assert_eq!(shift_markdown_headers("### A\ntext\n```\n# code\n```", 1), "#### A\ntext\n```\n# code\n```");
/// ```
pub fn shift_markdown_headers(text: &str, levels: usize) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut in_fence = false;
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            out.push_str(line);
            continue;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        let is_header = !in_fence
            && (1..=6).contains(&hashes)
            && line[hashes..].chars().next().is_none_or(|c| c == ' ' || c == '\t');
        if is_header {
            let level = (hashes + levels).min(6);
            out.extend(std::iter::repeat_n('#', level));
            out.push_str(&line[hashes..]);
        } else {
            out.push_str(line);
        }
    }
    out
}

/// A problem with one input that did not stop the merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroundingWarning {
    /// The file.
    pub path: PathBuf,
    /// What was wrong; the file was skipped.
    pub message: String,
}

impl fmt::Display for GroundingWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "skipped {}: {}", self.path.display(), self.message)
    }
}

/// A TXT grounding input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroundingText {
    /// The file.
    pub path: PathBuf,
    /// Its text, trimmed.
    pub text: String,
}

/// The result of [`merge_files`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergedGrounding {
    /// The rendering mode.
    pub format: MergeFormat,
    /// The JSON files that were merged, in order.
    pub json_sources: Vec<PathBuf>,
    /// The merged JSON part (`None` when no JSON file parsed).
    pub document: Option<MergedDocument>,
    /// The TXT inputs, in order.
    pub texts: Vec<GroundingText>,
    /// Skipped inputs.
    pub warnings: Vec<GroundingWarning>,
}

impl MergedGrounding {
    /// Merges already-loaded inputs without touching the file system.
    pub fn from_parts(format: MergeFormat, json: Vec<(PathBuf, GroundingFile)>, texts: Vec<GroundingText>) -> Self {
        let document = (!json.is_empty()).then(|| merge_documents(json.iter().map(|(_, f)| f)));
        Self { format, json_sources: json.into_iter().map(|(p, _)| p).collect(), document, texts, warnings: Vec::new() }
    }

    /// The section for the system prompt (what `nav grounding merge`
    /// prints): the JSON part in the chosen format, then the TXT texts,
    /// joined with [`PART_SEPARATOR`]. Empty when nothing usable was merged.
    pub fn render_prompt_section(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Some(doc) = self.document.as_ref().filter(|d| !d.is_empty()) {
            if matches!(self.format, MergeFormat::Txt | MergeFormat::Both) {
                parts.push(doc.render_prompt_markdown());
            }
            if matches!(self.format, MergeFormat::Json | MergeFormat::Both) {
                // MergedDocument holds only strings: serialization cannot fail.
                let json = serde_json::to_string_pretty(doc).unwrap_or_default();
                parts.push(format!("```json\n{json}\n```"));
            }
        }
        parts.extend(self.texts.iter().map(|t| t.text.clone()));
        parts.join(PART_SEPARATOR)
    }

    /// True when the rendered section would be empty.
    pub fn is_empty(&self) -> bool {
        self.document.as_ref().is_none_or(MergedDocument::is_empty) && self.texts.is_empty()
    }
}

/// Reads and merges grounding files (see the module docs). `.json` files
/// (case-insensitive) are grounding documents, anything else is text.
/// A missing file is an error naming it; unreadable files (not UTF-8, no
/// permission…), corrupt JSON and empty text files are skipped and
/// reported in [`MergedGrounding::warnings`]
/// (logged here only at debug level, so the caller decides how to show them
/// and each is shown once).
pub fn merge_files(paths: &[PathBuf], format: MergeFormat) -> Result<MergedGrounding, MemoryError> {
    let mut json = Vec::new();
    let mut texts = Vec::new();
    let mut warnings = Vec::new();
    let mut warn = |path: &Path, message: String| {
        tracing::debug!(path = %path.display(), "skipping grounding file: {message}");
        warnings.push(GroundingWarning { path: path.to_path_buf(), message });
    };
    for path in paths {
        let text = match crate::snapshot::read_text(path, crate::snapshot::MAX_GROUNDING_BYTES) {
            Ok(text) => text,
            Err(MemoryError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Err(MemoryError::Io { op: "reading", path: path.clone(), source });
            }
            // not UTF-8: skipped like other corrupt files (a file over the size limit is an error)
            Err(MemoryError::Io { source, .. })
                if source.get_ref().is_some_and(|e| e.is::<std::string::FromUtf8Error>()) =>
            {
                warn(path, format!("not UTF-8 text ({source})"));
                continue;
            }
            // over the size limit (nav_core::bounded reports it as invalid data): an error naming the limit;
            // a FIFO or socket (refused unread): an error too
            Err(MemoryError::Io { source, .. })
                if matches!(source.kind(), std::io::ErrorKind::InvalidData | std::io::ErrorKind::InvalidInput) =>
            {
                return Err(MemoryError::Io { op: "reading", path: path.clone(), source });
            }
            Err(e) => {
                warn(path, format!("unreadable: {e}"));
                continue;
            }
        };
        if is_json_path(path) {
            match serde_json::from_str::<GroundingFile>(&text) {
                Ok(file) if is_contentless(&file) => {
                    warn(path, "no grounding content (no stacked_grounding entries, no final_grounding text)".into());
                }
                Ok(file) => json.push((path.clone(), file)),
                Err(e) => warn(path, format!("corrupt grounding JSON: {e}")),
            }
        } else if text.trim().is_empty() {
            warn(path, "empty text file".to_string());
        } else {
            texts.push(GroundingText { path: path.clone(), text: super::clean_text(text.trim()) });
        }
    }
    let mut merged = MergedGrounding::from_parts(format, json, texts);
    merged.warnings = warnings;
    Ok(merged)
}

/// Splits a comma-separated `GROUNDING_FILE_PATH` value (the original grounding tool's
/// file list) into paths
/// (blank entries dropped).
///
/// ```
/// use nav_memory::grounding::parse_path_list;
/// assert_eq!(parse_path_list("a.json, b.txt,,").len(), 2);
/// ```
pub fn parse_path_list(list: &str) -> Vec<PathBuf> {
    list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(PathBuf::from).collect()
}

/// A JSON object without any grounding (for example `{}` or another kind of
/// file): reading is lenient, so this is how a wrong file shows up.
fn is_contentless(file: &GroundingFile) -> bool {
    file.stacked_grounding.is_empty()
        && file.final_grounding.as_ref().is_none_or(FinalGrounding::is_empty)
        && file.grounding_per_step.is_empty()
}

fn is_json_path(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grounding::types::{CategoryFeedback, StepFeedback, StepStatus};
    use proptest::prelude::*;

    fn file(entries: &[(GroundingCategory, &str)], finals: [&str; 4]) -> GroundingFile {
        let mut f = GroundingFile::default();
        for (c, e) in entries {
            f.stacked_grounding.get_mut(*c).push((*e).to_string());
        }
        f.final_grounding = Some(FinalGrounding::new(Some("2026-01-27T10:00:00".into()), finals));
        f
    }

    #[test]
    fn seed_merge_rules() {
        let a = file(
            &[(GroundingCategory::Spatial, "[ Step1 - Success ] : kitchen is green")],
            ["", "The green room is the kitchen.", "", ""],
        );
        let b = file(
            &[
                (GroundingCategory::Spatial, "[ Step1 - Success ] : kitchen is green"),
                (GroundingCategory::Spatial, "[ Step4 - Failure ] : bathroom is left of the stairs"),
            ],
            ["", "The bathroom is left of the stairs.", "Open doors slowly.", ""],
        );
        let m = merge_documents([&a, &b]);
        assert_eq!(m.stacked_grounding.spatial.len(), 2);
        assert_eq!(
            m.final_grounding.spatial_grounding.content,
            "- The green room is the kitchen.\n\n- The bathroom is left of the stairs."
        );
        assert_eq!(m.final_grounding.procedural_grounding.content, "- Open doors slowly.");
        assert_eq!(m.final_grounding.generation_timestamp, None);
        let md = m.render_prompt_markdown();
        assert!(md.starts_with("#### Spatial\n- The green room"), "{md}");
        assert!(md.contains("\n\n#### Procedural\n- Open doors slowly."), "{md}");
        assert!(!md.contains("### User Preference"));
    }

    #[test]
    fn large_merge_is_fast_and_deduplicated() {
        // 200k stacked entries (half repeats) used to take many seconds
        let mut a = GroundingFile::default();
        a.stacked_grounding.spatial = (0..100_000).map(|i| format!("[ Step{i} - Success ] : room {i}")).collect();
        let b = a.clone();
        let t = std::time::Instant::now();
        let m = merge_documents([&a, &b]);
        assert_eq!(m.stacked_grounding.spatial.len(), 100_000);
        assert!(t.elapsed().as_secs_f64() < 5.0, "{:?}", t.elapsed());
    }

    #[test]
    fn non_utf8_and_directories_are_skipped_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("latin1.txt");
        std::fs::write(&bad, b"caf\xe9 is left\n").unwrap();
        let good = dir.path().join("note.txt");
        std::fs::write(&good, "Never enter the garage.").unwrap();
        let sub = dir.path().join("sub.json");
        std::fs::create_dir(&sub).unwrap();
        let m = merge_files(&[bad.clone(), sub.clone(), good], MergeFormat::Txt).unwrap();
        assert_eq!(m.render_prompt_section(), "Never enter the garage.");
        assert_eq!(m.warnings.len(), 2, "{:?}", m.warnings);
        assert_eq!(m.warnings[0].path, bad);
        assert!(m.warnings[0].message.contains("not UTF-8"), "{}", m.warnings[0]);
        assert_eq!(m.warnings[1].path, sub);
    }

    #[test]
    fn header_shift_caps_and_ignores_non_headers() {
        assert_eq!(shift_markdown_headers("###### deep\n#hashtag\n##", 1), "###### deep\n#hashtag\n###");
    }

    #[test]
    fn formats_parse() {
        assert_eq!("JSON".parse::<MergeFormat>().unwrap(), MergeFormat::Json);
        assert!("yaml".parse::<MergeFormat>().unwrap_err().to_string().contains("txt, json, both"));
    }

    fn arb_file() -> impl Strategy<Value = GroundingFile> {
        let entry = prop::sample::select(vec!["a", "b", "c", "d"]);
        (
            prop::collection::vec((0usize..4, 1u32..4, entry.clone()), 0..6),
            prop::collection::vec(prop::option::of(entry), 4),
        )
            .prop_map(|(entries, finals)| {
                let mut f = GroundingFile::default();
                for (c, step, text) in entries {
                    let fb = CategoryFeedback::default().with(GroundingCategory::ALL[c], text);
                    let s = StepFeedback {
                        step_id: step,
                        instruction: String::new(),
                        status: StepStatus::Success,
                        feedback: fb,
                    };
                    f.stacked_grounding.push_step(&s);
                }
                let contents: Vec<&str> = finals.iter().map(|o| o.unwrap_or("")).collect();
                f.final_grounding =
                    Some(FinalGrounding::new(None, [contents[0], contents[1], contents[2], contents[3]]));
                f
            })
    }

    proptest! {
        #[test]
        fn merge_is_idempotent_on_duplicates(files in prop::collection::vec(arb_file(), 0..4), dup in prop::collection::vec(0usize..4, 0..4)) {
            let once = merge_documents(&files);
            let twice = merge_documents(files.iter().chain(files.iter()));
            prop_assert_eq!(&once, &twice);
            // Repeating any file anywhere changes nothing.
            let mut with_dups = files.clone();
            for d in dup {
                if !files.is_empty() {
                    with_dups.push(files[d % files.len()].clone());
                }
            }
            prop_assert_eq!(&once, &merge_documents(&with_dups));
            // No stacked list holds duplicates.
            for c in GroundingCategory::ALL {
                let l = once.stacked_grounding.get(c);
                let mut sorted = l.to_vec();
                sorted.sort();
                sorted.dedup();
                prop_assert_eq!(sorted.len(), l.len());
            }
        }

        #[test]
        fn header_shift_never_panics(s in "\\PC{0,60}") {
            let _ = shift_markdown_headers(&s, 1);
        }
    }
}
