//! Finding a recording's model calls on disk: an MCAP recording (its
//! model-call channel; needs the `record` feature), a step log (JSONL), or
//! a folder of them.

use super::book::{ReplayBook, ReplayError};
use std::path::{Path, PathBuf};

/// The most files of a folder a replay reads.
const MAX_FILES: usize = 100_000;

/// The first bytes of every MCAP file.
const MCAP_MAGIC: &[u8; 8] = b"\x89MCAP0\r\n";

impl ReplayBook {
    /// The model calls `path` holds: an MCAP recording, a step log, or
    /// every `.mcap` and `.jsonl` file directly in a folder, in name order.
    ///
    /// # Errors
    /// A file that cannot be read or holds no model call, a folder without
    /// recordings; the error names the file.
    pub fn load(path: &Path) -> Result<Self, ReplayError> {
        if path.is_dir() {
            let files = recording_files(path)?;
            if files.is_empty() {
                return Err(ReplayError::new(path.display().to_string(), "the folder holds no .mcap or .jsonl file"));
            }
            let mut book = ReplayBook::new(path.display().to_string(), Vec::new());
            for f in files {
                book.extend(Self::load_file(&f)?);
            }
            return Ok(book);
        }
        Self::load_file(path)
    }

    /// One recording file: MCAP (told by its first bytes or its `.mcap`
    /// name) or a step log.
    ///
    /// # Errors
    /// As [`ReplayBook::load`].
    pub fn load_file(path: &Path) -> Result<Self, ReplayError> {
        if is_mcap(path) { Self::from_mcap(path) } else { Self::from_step_log(path) }
    }

    /// The model calls of an MCAP recording.
    ///
    /// # Errors
    /// An unreadable or damaged file, one without model calls, or (without
    /// the `record` feature) any MCAP file.
    #[cfg(feature = "record")]
    pub fn from_mcap(path: &Path) -> Result<Self, ReplayError> {
        let name = path.display().to_string();
        let messages = crate::record::read::read_planner_calls(path).map_err(|e| match e {
            crate::record::RecordError::Read { message, .. } => ReplayError::new(&name, message),
            other => ReplayError::new(&name, other.to_string()),
        })?;
        if messages.is_empty() {
            return Err(ReplayError::new(name, "the recording holds no model call (an offline planner's run?)"));
        }
        Self::from_call_messages(name, messages)
    }

    /// The model calls of an MCAP recording.
    ///
    /// # Errors
    /// Always: reading MCAP needs nav-planner's `record` feature.
    #[cfg(not(feature = "record"))]
    pub fn from_mcap(path: &Path) -> Result<Self, ReplayError> {
        Err(ReplayError::new(
            path.display().to_string(),
            "replaying an MCAP recording needs nav-planner built with the `record` cargo feature",
        ))
    }
}

/// Whether `path` is an MCAP file: its first bytes, or its name.
fn is_mcap(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 8];
    let magic =
        nav_core::bounded::open_regular(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && &head == MCAP_MAGIC;
    magic || path.extension().is_some_and(|e| e.eq_ignore_ascii_case("mcap"))
}

/// The `.mcap` and `.jsonl` files directly in `dir`, sorted by name.
///
/// # Errors
/// An unreadable folder, or one with more than 100,000 recordings.
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
