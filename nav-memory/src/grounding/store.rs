//! Recording one episode's feedback and writing the grounding files.
//!
//! Layout under a log root (the episode directory is `episode_<id>` or,
//! with [`GroundingStore::with_run_label`], the original grounding tool's
//! `episode_<id>_<timestamp>_<script>`):
//!
//! ```text
//! <root>/episode_<id>[_<label>]/grounding_episode_<id>.json   (and/or .txt)
//! <root>/grounding/grounding_latest.json                      (and/or .txt)
//! ```
//!
//! The `.txt` form is the prompt-ready Markdown of that one file (what
//! [`merge_files`](super::merge_files) renders for it in `txt` mode), so a
//! TXT and a JSON grounding look the same in the system prompt. Every write
//! is atomic.

use super::merge::{MergeFormat, MergedGrounding};
use super::types::{
    CategoryFeedback, ExprInfo, FinalGrounding, GroundingFile, GroundingRequest, StackedGrounding, StepFeedback,
    StepStatus,
};
use crate::error::MemoryError;
use crate::snapshot::{self, write_atomic};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Which grounding files to write (the original grounding tool's `GROUNDING_SAVE_FORMAT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SaveFormat {
    /// Only `.json`.
    Json,
    /// Only `.txt`.
    Txt,
    /// Both (the default).
    #[default]
    Both,
}

impl SaveFormat {
    fn json(self) -> bool {
        matches!(self, Self::Json | Self::Both)
    }
    fn txt(self) -> bool {
        matches!(self, Self::Txt | Self::Both)
    }
}

impl FromStr for SaveFormat {
    type Err = MemoryError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "json" => Ok(Self::Json),
            "txt" | "text" => Ok(Self::Txt),
            "both" => Ok(Self::Both),
            _ => Err(MemoryError::UnknownKeyword {
                kind: "save format",
                value: s.to_string(),
                expected: "json, txt, both",
            }),
        }
    }
}

impl fmt::Display for SaveFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Json => "json",
            Self::Txt => "txt",
            Self::Both => "both",
        })
    }
}

/// The grounding record of one episode while it runs (the original
/// grounding tool's `GroundingFileManager`).
///
/// ```
/// use nav_memory::grounding::{CategoryFeedback, EpisodeGrounding, FinalGrounding, StepStatus};
/// let mut g = EpisodeGrounding::new(1);
/// let fb = CategoryFeedback::parse("spatial: kitchen is green")?;
/// g.append_step_feedback(1, "go to the kitchen", StepStatus::Success, fb);
/// assert_eq!(g.stacked().spatial, ["[ Step1 - Success ] : kitchen is green"]);
/// let request = g.request(); // → the planner's VLM call
/// g.set_final(FinalGrounding::new(Some("2026-01-27T10:00:00Z".into()), ["", "The green room is the kitchen.", "", ""]));
/// assert!(g.to_txt().contains("#### Spatial"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EpisodeGrounding {
    file: GroundingFile,
}

impl EpisodeGrounding {
    /// An empty record for episode `episode_id`.
    pub fn new(episode_id: u64) -> Self {
        Self { file: GroundingFile { expr_info: ExprInfo { episode_id }, ..GroundingFile::default() } }
    }

    /// Continues a saved record (e.g. to regenerate its final grounding).
    pub fn from_file(file: GroundingFile) -> Self {
        Self { file }
    }

    /// Records one step's feedback: appended to `grounding_per_step` and,
    /// per non-empty category, to the stacked lists as `[ StepN - Status ] :
    /// text`.
    pub fn append_step_feedback(
        &mut self,
        step_id: u32,
        instruction: &str,
        status: StepStatus,
        feedback: CategoryFeedback,
    ) -> &StepFeedback {
        let step = StepFeedback { step_id, instruction: instruction.trim().to_string(), status, feedback };
        self.file.stacked_grounding.push_step(&step);
        self.file.grounding_per_step.push(step);
        let last = self.file.grounding_per_step.len() - 1;
        &self.file.grounding_per_step[last]
    }

    /// The stacked lists so far.
    pub fn stacked(&self) -> &StackedGrounding {
        &self.file.stacked_grounding
    }

    /// The input of the final-grounding VLM call: this episode's stacked
    /// feedback only.
    pub fn request(&self) -> GroundingRequest {
        GroundingRequest { episode_id: self.file.expr_info.episode_id, stacked: self.file.stacked_grounding.clone() }
    }

    /// Stores the VLM's final grounding.
    pub fn set_final(&mut self, final_grounding: FinalGrounding) {
        self.file.final_grounding = Some(final_grounding);
    }

    /// The whole record in the grounding file layout.
    pub fn file(&self) -> &GroundingFile {
        &self.file
    }

    /// The TXT rendering: the prompt-ready Markdown of this one file.
    pub fn to_txt(&self) -> String {
        render_txt(&self.file)
    }
}

/// The TXT form of a grounding file (its prompt-ready Markdown).
pub fn render_txt(file: &GroundingFile) -> String {
    MergedGrounding::from_parts(MergeFormat::Txt, vec![(PathBuf::new(), file.clone())], Vec::new())
        .render_prompt_section()
}

/// Reads one grounding JSON file (strict: a corrupt file is an error naming
/// it; merging skips such files instead).
pub fn load_grounding_file(path: impl AsRef<Path>) -> Result<GroundingFile, MemoryError> {
    Ok(load_grounding_document(path)?.0)
}

/// Reads one grounding JSON file (at most
/// [`MAX_GROUNDING_BYTES`](crate::snapshot::MAX_GROUNDING_BYTES)) as the
/// typed file and as its whole JSON object, so a tool rewriting one section
/// keeps the keys it does not know (files may come from the original
/// grounding tool, or a newer one).
pub fn load_grounding_document(
    path: impl AsRef<Path>,
) -> Result<(GroundingFile, serde_json::Map<String, serde_json::Value>), MemoryError> {
    const WHAT: &str = "grounding file";
    let path = path.as_ref();
    let text = snapshot::read_text(path, snapshot::MAX_GROUNDING_BYTES)?;
    let parse = |source| MemoryError::Parse { what: WHAT, path: path.to_path_buf(), source };
    let serde_json::Value::Object(object) = serde_json::from_str(&text).map_err(parse)? else {
        return Err(MemoryError::InvalidFile {
            what: WHAT,
            path: path.to_path_buf(),
            reason: "not a JSON object".into(),
        });
    };
    let file = GroundingFile::deserialize(serde_json::Value::Object(object.clone())).map_err(parse)?;
    Ok((file, object))
}

/// Writes grounding files under a log root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroundingStore {
    root: PathBuf,
    label: Option<String>,
}

impl GroundingStore {
    /// A store writing under `root` (the experiment's log directory).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into(), label: None }
    }

    /// Names episode directories `episode_<id>_<label>` (the original
    /// grounding tool's `<timestamp>_<script>`, e.g. `20260127_101500_nav`).
    pub fn with_run_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// The directory of episode `episode_id`'s files.
    pub fn episode_dir(&self, episode_id: u64) -> PathBuf {
        match &self.label {
            Some(l) => self.root.join(format!("episode_{episode_id}_{l}")),
            None => self.root.join(format!("episode_{episode_id}")),
        }
    }

    /// The episode number after the highest `episode_<N>` or
    /// `episode_<N>_…` directory under the root (1 when there is none or
    /// the root does not exist).
    pub fn next_episode_id(&self) -> u64 {
        let Ok(entries) = std::fs::read_dir(&self.root) else { return 1 };
        entries
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let rest = name.strip_prefix("episode_")?;
                rest.split('_').next()?.parse::<u64>().ok()
            })
            .max()
            .map_or(1, |m| m.saturating_add(1))
    }

    /// The existing global latest file, preferring `.json` over `.txt` (both
    /// hold the same grounding when the save format is `both`).
    pub fn existing_latest(&self) -> Option<PathBuf> {
        ["json", "txt"].into_iter().map(|ext| self.latest_path(ext)).find(|p| p.is_file())
    }

    /// The log root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<episode dir>/grounding_episode_<id>.<ext>`.
    pub fn episode_path(&self, episode_id: u64, ext: &str) -> PathBuf {
        self.episode_dir(episode_id).join(format!("grounding_episode_{episode_id}.{ext}"))
    }

    /// `<root>/grounding/grounding_latest.<ext>`.
    pub fn latest_path(&self, ext: &str) -> PathBuf {
        self.root.join("grounding").join(format!("grounding_latest.{ext}"))
    }

    /// Writes the episode files and the global latest files in `format`,
    /// atomically; returns the paths written.
    pub fn save(&self, file: &GroundingFile, format: SaveFormat) -> Result<Vec<PathBuf>, MemoryError> {
        self.save_episode(file, format, true)
    }

    /// Writes the episode files in `format` and, when `update_latest`, the
    /// global latest files too, atomically; returns the paths written.
    pub fn save_episode(
        &self,
        file: &GroundingFile,
        format: SaveFormat,
        update_latest: bool,
    ) -> Result<Vec<PathBuf>, MemoryError> {
        let id = file.expr_info.episode_id;
        let mut written = Vec::new();
        let targets = |ext: &str| {
            let mut v = vec![self.episode_path(id, ext)];
            if update_latest {
                v.push(self.latest_path(ext));
            }
            v
        };
        // never write a file the next run refuses to read
        let fits = |bytes: usize, ext: &str| {
            if bytes as u64 > crate::snapshot::MAX_GROUNDING_BYTES {
                let path = self.episode_path(id, ext);
                let e = nav_core::bounded::too_large(crate::snapshot::MAX_GROUNDING_BYTES);
                return Err(MemoryError::Io { op: "writing", path, source: e });
            }
            Ok(())
        };
        if format.json() {
            let mut json = serde_json::to_vec_pretty(file)
                .map_err(|source| MemoryError::Serialize { what: "grounding file", source })?;
            json.push(b'\n');
            fits(json.len(), "json")?;
            for path in targets("json") {
                write_atomic(&path, &json)?;
                written.push(path);
            }
        }
        if format.txt() {
            let mut txt = render_txt(file);
            txt.push('\n');
            fits(txt.len(), "txt")?;
            for path in targets("txt") {
                write_atomic(&path, txt.as_bytes())?;
                written.push(path);
            }
        }
        Ok(written)
    }
}
