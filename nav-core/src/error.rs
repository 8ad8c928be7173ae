//! The error type of nav-core.

/// Errors from nav-core constructors and decoders. Algorithms that can fail
/// on valid input (planning) report through their own result types instead.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    /// A grid could not be built with the given size, resolution or origin.
    #[error("invalid occupancy grid: {0}")]
    InvalidGrid(String),
    /// A run-length encoded grid string is malformed.
    #[error("invalid grid run-length encoding: {0}")]
    Rle(String),
    /// An image buffer does not match its stated size.
    #[error("image buffer of {len} bytes does not match {width}x{height}x{channels}")]
    ImageSize {
        /// Buffer length in bytes.
        len: usize,
        /// Stated width.
        width: usize,
        /// Stated height.
        height: usize,
        /// Channels per pixel.
        channels: usize,
    },
}
