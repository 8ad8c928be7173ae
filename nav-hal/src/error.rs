//! The error type of nav-hal.

use std::path::PathBuf;

/// Everything that can go wrong talking to a robot, a simulator or an arena
/// file. Structured so that callers can react (and the CLI can map bad
/// input to exit code 2) without parsing messages.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HalError {
    /// The robot does not offer this sensor or command (see
    /// [`Capabilities`](crate::hal::Capabilities)).
    #[error("unsupported by this robot: {what}")]
    Unsupported {
        /// What was asked for, e.g. `"panorama"`.
        what: String,
    },
    /// The connection to the robot or bridge is gone.
    #[error("disconnected from {endpoint}: {reason}")]
    Disconnected {
        /// Where we were connected (URL, command, ...).
        endpoint: String,
        /// Why, as reported by the transport.
        reason: String,
    },
    /// An operation did not complete in time.
    #[error("{what} timed out after {after_s:.1} s")]
    Timeout {
        /// The operation.
        what: String,
        /// How long we waited, seconds.
        after_s: f64,
    },
    /// The newest sensor message is too old to act on.
    #[error("{what} is stale: last message {age_s:.1} s old")]
    Stale {
        /// The sensor or topic.
        what: String,
        /// Age of the newest message, seconds.
        age_s: f64,
    },
    /// The sensor answers, but its data cannot be trusted: e.g. a LiDAR
    /// scan whose beams are almost all invalid (REP-117 NaN; rosbridge's
    /// `null`). Nothing may drive on it.
    #[error("{what}: sensor fault: {message}")]
    SensorFault {
        /// The sensor or topic.
        what: String,
        /// What is wrong with its data.
        message: String,
    },
    /// A message from the robot or bridge could not be understood.
    #[error("protocol error: {message}")]
    Protocol {
        /// What was wrong with it.
        message: String,
    },
    /// A command argument is out of range or not finite.
    #[error("invalid command: {field}: {message}")]
    InvalidCommand {
        /// The offending argument.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// An arena file (or string) is malformed or geometrically invalid.
    #[error("invalid arena {origin}: {field}: {message}")]
    InvalidArena {
        /// The file path or other source of the arena.
        origin: String,
        /// The field at fault (`start`, `objects[2].r`, `document` for the
        /// file as a whole).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// No built-in arena has this name.
    #[error("unknown arena {name:?}; built-in arenas: {}, or proc_<seed>", known.join(", "))]
    UnknownArena {
        /// The requested name.
        name: String,
        /// The names that exist.
        known: Vec<String>,
    },
    /// A simulator configuration value is unusable.
    #[error("invalid simulator config: {field}: {message}")]
    InvalidConfig {
        /// The offending field.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// Encoding an image failed.
    #[error("image encoding failed: {message}")]
    Image {
        /// The encoder's message.
        message: String,
    },
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl HalError {
    /// Shorthand for [`HalError::Unsupported`].
    pub fn unsupported(what: impl Into<String>) -> Self {
        HalError::Unsupported { what: what.into() }
    }

    /// Shorthand for [`HalError::InvalidCommand`].
    pub fn invalid_command(field: impl Into<String>, message: impl Into<String>) -> Self {
        HalError::InvalidCommand { field: field.into(), message: message.into() }
    }

    /// True for errors caused by bad input (an arena file, a config, a
    /// command argument) rather than by the robot or the machine.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            HalError::InvalidArena { .. }
                | HalError::UnknownArena { .. }
                | HalError::InvalidConfig { .. }
                | HalError::InvalidCommand { .. }
        )
    }
}
