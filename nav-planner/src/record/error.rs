//! [`RecordError`]: what can go wrong making or reading a recording.

use std::path::PathBuf;

/// A recording that could not be made, finished or read. Every message
/// names the file (never a credential: none is ever recorded).
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The file name does not end in `.mcap`.
    #[error("{}: recordings must end in .mcap", path.display())]
    NotMcap {
        /// The file asked for.
        path: PathBuf,
    },
    /// Frames every 0 steps.
    #[error("sensor frames must be recorded every 1 step or more")]
    Every,
    /// The file (or its folder) could not be created.
    #[error("{}: {source}", path.display())]
    Create {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Writing failed (a full disk); what was written before may be
    /// incomplete.
    #[error("recording {}: {message}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// A recording could not be read: unreadable, truncated, corrupt, over
    /// the reader's limits, or a message that is not what its channel holds.
    #[error("{}: {message}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A finished recording's failure, as first reported.
    #[error("{0}")]
    Finished(String),
    /// The live server could not start at `addr`.
    #[error("live view on {addr}: {message}")]
    Live {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// Why.
        message: String,
    },
    /// Bytes given in memory are not a readable recording (as
    /// [`RecordError::Read`], without a file name).
    #[error("{0}")]
    Corrupt(String),
}
