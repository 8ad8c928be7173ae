//! The error type of nav-safety.
//!
//! Runtime safety decisions never fail: a rejected command is an
//! [`ExecutionOutcome`](crate::ExecutionOutcome) with explanatory feedback.
//! Errors are for input that cannot be turned into typed values at all: a
//! malformed tool call from a VLM, an invalid configuration, a bad zone.

/// Errors from parsing tool calls, validating configurations and building
/// geofences.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SafetyError {
    /// The tool name is not one of the seven explore tools.
    #[error("unknown tool `{name}` (expected one of: {expected})")]
    UnknownTool {
        /// The name the VLM used.
        name: String,
        /// Comma-separated list of valid names.
        expected: String,
    },
    /// The arguments are not a JSON object.
    #[error("arguments of `{tool}` must be a JSON object, got {found}")]
    NotAnObject {
        /// Tool name.
        tool: String,
        /// JSON type found instead.
        found: &'static str,
    },
    /// A required argument is absent (or null).
    #[error("`{tool}`: missing required field `{field}`")]
    MissingField {
        /// Tool name.
        tool: String,
        /// Field name.
        field: &'static str,
    },
    /// An argument has the wrong JSON type.
    #[error("`{tool}`: field `{field}` must be {expected}, got {found}")]
    WrongType {
        /// Tool name.
        tool: String,
        /// Field name.
        field: &'static str,
        /// Expected JSON type.
        expected: &'static str,
        /// JSON type (or value) found.
        found: String,
    },
    /// A numeric argument is outside its allowed range (or not finite).
    #[error("`{tool}`: field `{field}` = {value} is outside [{min}, {max}]")]
    OutOfRange {
        /// Tool name.
        tool: String,
        /// Field name.
        field: &'static str,
        /// The value given.
        value: f64,
        /// Smallest allowed value.
        min: f64,
        /// Largest allowed value.
        max: f64,
    },
    /// A string or integer argument is not one of the enum values.
    #[error("`{tool}`: field `{field}` = {value} is not one of: {allowed}")]
    UnknownEnumValue {
        /// Tool name.
        tool: String,
        /// Field name.
        field: &'static str,
        /// The value given (JSON text).
        value: String,
        /// Comma-separated allowed values.
        allowed: String,
    },
    /// A configuration value is invalid or inconsistent with another.
    #[error("invalid safety config: `{field}`: {reason}")]
    InvalidConfig {
        /// Dotted path of the field, e.g. `clearance.stop_m`.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// A geofence zone is invalid.
    #[error("invalid geofence zone `{name}`: {reason}")]
    InvalidZone {
        /// Zone name.
        name: String,
        /// What is wrong.
        reason: String,
    },
}

/// The error of [`ToolCall::parse`](crate::tools::ToolCall::parse): the same
/// enum as [`SafetyError`] (nav-safety has one error type), named for the
/// role it plays at the VLM boundary.
pub type ToolError = SafetyError;
