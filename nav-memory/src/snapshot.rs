//! Atomic file writes and the memory snapshot format (JSON of places,
//! anchors, DC queue; written atomically).
//!
//! A snapshot is `{"format": "navkit-memory", "version": 1, "memory": {…}}`
//! where `memory` is the whole [`SpatialMemory`] state (config, dead
//! reckoning, anchors, places, dwell filter, pattern state, DC queue), so a
//! loaded memory continues exactly where the saved one stopped. Loading
//! checks every cross-reference; a truncated or corrupt file is an error
//! naming the file, never a panic.

use crate::error::MemoryError;
use crate::spatial::SpatialMemory;
use serde::{Deserialize, Serialize};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The `format` tag of memory snapshots.
pub const SNAPSHOT_FORMAT: &str = "navkit-memory";
/// The current snapshot version.
pub const SNAPSHOT_VERSION: u32 = 1;

/// Writes `bytes` to `path` atomically: a temporary file in the same
/// directory is written, flushed to disk and renamed over `path`, so readers
/// see either the old or the new content, never a partial file. Creates the
/// parent directory if needed. A symbolic link is followed: its target is
/// replaced and the link kept (a link that leads nowhere, or in a loop, is
/// an error naming it).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), MemoryError> {
    let resolved;
    let path = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            let link_error = |source| MemoryError::Io { op: "following the link", path: path.to_path_buf(), source };
            resolved = match std::fs::canonicalize(path) {
                Ok(target) => target,
                // a link to a file not made yet: the file it names
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let target = std::fs::read_link(path).map_err(link_error)?;
                    path.parent().map_or(target.clone(), |dir| dir.join(&target))
                }
                Err(e) => return Err(link_error(e)),
            };
            resolved.as_path()
        }
        _ => path,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fn io<'a>(op: &'static str, p: &'a Path) -> impl FnOnce(std::io::Error) -> MemoryError + 'a {
        move |source| MemoryError::Io { op, path: p.to_path_buf(), source }
    }
    std::fs::create_dir_all(&dir).map_err(io("creating directory", &dir))?;
    let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(io("creating a temporary file in", &dir))?;
    tmp.write_all(bytes).map_err(io("writing", path))?;
    // Temporary files are created owner-only; keep the target's permissions,
    // or use the ordinary 0644 for a new file.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let perms =
            std::fs::metadata(path).map(|m| m.permissions()).unwrap_or_else(|_| std::fs::Permissions::from_mode(0o644));
        tmp.as_file().set_permissions(perms).map_err(io("setting permissions of", path))?;
    }
    tmp.as_file().sync_all().map_err(io("flushing", path))?;
    tmp.persist(path).map_err(|e| MemoryError::Io {
        op: "renaming into place",
        path: path.to_path_buf(),
        source: e.error,
    })?;
    Ok(())
}

/// The largest memory snapshot file the loaders read.
pub const MAX_SNAPSHOT_BYTES: u64 = 256 << 20;

/// The largest grounding file [`merge_files`](crate::grounding::merge_files) reads.
pub const MAX_GROUNDING_BYTES: u64 = 16 << 20;

/// Reads a whole UTF-8 file of at most `limit` bytes, naming it in the
/// error (a larger file is an error naming the limit).
/// A FIFO or a socket is an `InvalidInput` error before it is opened:
/// opening a FIFO that has no writer would block forever (a device such as
/// `/dev/zero` is read, up to the limit).
pub(crate) fn read_text(path: &Path, limit: u64) -> Result<String, MemoryError> {
    refuse_fifo(path)
        .and_then(|()| std::fs::File::open(path))
        .and_then(|f| nav_core::bounded::read_to_string_limited(f, limit))
        .map_err(|source| MemoryError::Io { op: "reading", path: path.to_path_buf(), source })
}

/// An `InvalidInput` error for a FIFO or a socket at `path`
/// ([`nav_core::bounded::refuse_fifo`]).
pub use nav_core::bounded::refuse_fifo;

/// Serializes `value` as pretty JSON and writes it atomically.
pub(crate) fn save_json<T: Serialize>(value: &T, path: &Path, what: &'static str) -> Result<(), MemoryError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|source| MemoryError::Serialize { what, source })?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Reads and parses a JSON file, naming it in every error.
pub(crate) fn load_json<T: for<'de> Deserialize<'de>>(path: &Path, what: &'static str) -> Result<T, MemoryError> {
    let text = read_text(path, MAX_SNAPSHOT_BYTES)?;
    serde_json::from_str(&text).map_err(|source| MemoryError::Parse { what, path: path.to_path_buf(), source })
}

#[derive(Serialize)]
struct SnapshotOut<'a> {
    format: &'static str,
    version: u32,
    memory: &'a SpatialMemory,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapshotIn {
    format: String,
    version: u32,
    memory: SpatialMemory,
}

impl SpatialMemory {
    /// Saves the whole memory as a JSON snapshot, atomically.
    pub fn save_json(&self, path: impl AsRef<Path>) -> Result<(), MemoryError> {
        let out = SnapshotOut { format: SNAPSHOT_FORMAT, version: SNAPSHOT_VERSION, memory: self };
        save_json(&out, path.as_ref(), "memory snapshot")
    }

    /// Loads a snapshot written by [`save_json`](Self::save_json) and checks
    /// it. Errors name the file.
    pub fn load_json(path: impl AsRef<Path>) -> Result<Self, MemoryError> {
        let path = path.as_ref();
        let what = "memory snapshot";
        let snap: SnapshotIn = load_json(path, what)?;
        let invalid = |reason: String| MemoryError::InvalidFile { what, path: path.to_path_buf(), reason };
        if snap.format != SNAPSHOT_FORMAT {
            return Err(invalid(format!("format is {:?}, expected {SNAPSHOT_FORMAT:?}", snap.format)));
        }
        if snap.version != SNAPSHOT_VERSION {
            return Err(invalid(format!("version {} is not supported (expected {SNAPSHOT_VERSION})", snap.version)));
        }
        snap.memory.validate().map_err(|e| invalid(e.to_string()))?;
        Ok(snap.memory)
    }
}
