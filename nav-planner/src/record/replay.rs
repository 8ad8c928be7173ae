//! The recording `--vlm replay --replay PATH` answers from: an MCAP
//! recording (its model-call channel), a step log (JSONL, whose records
//! carry the model calls), or a folder of them.

use super::read::{is_mcap, read_planner_calls};
use crate::vlm::replay::{ReplayBook, ReplayError};
use std::path::{Path, PathBuf};

/// The most files of a folder a replay reads.
const MAX_FILES: usize = 100_000;

/// The model calls `path` holds (a file, or every `.mcap` and `.jsonl`
/// file of a folder, in name order); an error names the file and what is
/// wrong with it.
pub fn load_book(path: &Path) -> Result<ReplayBook, ReplayError> {
    if path.is_dir() {
        let files = recording_files(path)?;
        if files.is_empty() {
            return Err(ReplayError::new(path.display().to_string(), "the folder holds no .mcap or .jsonl file"));
        }
        let mut book = ReplayBook::new(path.display().to_string(), Vec::new());
        for f in files {
            book.extend(load_file(&f)?);
        }
        return Ok(book);
    }
    load_file(path)
}

/// The `.mcap` and `.jsonl` files directly in `dir`, sorted by name.
pub fn recording_files(dir: &Path) -> Result<Vec<PathBuf>, ReplayError> {
    let name = dir.display().to_string();
    let entries = std::fs::read_dir(dir).map_err(|e| ReplayError::new(&name, e.to_string()))?;
    let mut files = Vec::new();
    for entry in entries {
        let p = entry.map_err(|e| ReplayError::new(&name, e.to_string()))?.path();
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or_default().to_ascii_lowercase();
        if p.is_file() && (ext == "mcap" || ext == "jsonl") {
            files.push(p);
            if files.len() > MAX_FILES {
                return Err(ReplayError::new(name, format!("more than {MAX_FILES} recordings in one folder")));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// One recording file.
pub fn load_file(path: &Path) -> Result<ReplayBook, ReplayError> {
    let name = path.display().to_string();
    if is_mcap(path) {
        let messages =
            read_planner_calls(path).map_err(|e| ReplayError::new(&name, strip_name(&e.to_string(), &name)))?;
        if messages.is_empty() {
            return Err(ReplayError::new(name, "the recording holds no model call (an offline planner's run?)"));
        }
        ReplayBook::from_call_messages(name, messages)
    } else {
        ReplayBook::from_step_log(path)
    }
}

/// `message` without a leading `name: ` (the reader names the file too).
fn strip_name(message: &str, name: &str) -> String {
    message.strip_prefix(&format!("{name}: ")).unwrap_or(message).to_string()
}
