//! The error type of nav-memory.

use std::path::PathBuf;

/// Everything that can go wrong in nav-memory: bad configuration, unreadable
/// or corrupt files, and malformed user input. Every file error names the
/// file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// A configuration value is outside its documented range.
    #[error("invalid memory config: {0}")]
    Config(#[from] nav_core::config::ConfigError),
    /// A file could not be read or written.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done: `reading`, `writing`, `creating directory`…
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not valid JSON of the expected shape (includes truncated
    /// files: "EOF while parsing").
    #[error("corrupt {what} {path}: {source}")]
    Parse {
        /// What the file should hold: `memory snapshot`, `grounding file`…
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The JSON error with line and column.
        #[source]
        source: serde_json::Error,
    },
    /// A YAML file is not valid YAML of the expected shape.
    #[error("corrupt {what} {path}: {source}")]
    ParseYaml {
        /// What the file should hold: `exploration memory`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The YAML error with line and column.
        #[source]
        source: serde_yaml_ng::Error,
    },
    /// A value could not be written as YAML.
    #[error("serializing {what} as YAML: {source}")]
    SerializeYaml {
        /// What was being serialized.
        what: &'static str,
        /// The YAML error.
        #[source]
        source: serde_yaml_ng::Error,
    },
    /// A file parsed but its content is inconsistent (dangling ids, wrong
    /// version…).
    #[error("invalid {what} {path}: {reason}")]
    InvalidFile {
        /// What the file should hold.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What is inconsistent.
        reason: String,
    },
    /// In-memory state failed a consistency check (for example a snapshot
    /// value built by hand).
    #[error("inconsistent memory state: {0}")]
    Inconsistent(String),
    /// A value could not be serialized (non-finite numbers are the only
    /// cause in practice).
    #[error("serializing {what}: {source}")]
    Serialize {
        /// What was being serialized.
        what: &'static str,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// A keyword (format, status, significance, category) is not one of the
    /// accepted values.
    #[error("unknown {kind} {value:?}: expected one of {expected}")]
    UnknownKeyword {
        /// Which keyword, e.g. `grounding category`.
        kind: &'static str,
        /// The text given.
        value: String,
        /// The accepted values.
        expected: &'static str,
    },
    /// A user feedback line could not be understood.
    #[error("bad feedback line {line:?}: {reason}")]
    BadFeedback {
        /// The line as given.
        line: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}
