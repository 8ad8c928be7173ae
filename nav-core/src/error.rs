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

/// The text of an error followed by each of its causes that adds something
/// (`error sending request: connection refused`; `I/O error …: No space left
/// on device`): the outermost message often hides the one a user can act on.
///
/// ```
/// let io = std::io::Error::other("No space left on device");
/// let outer = std::io::Error::new(std::io::ErrorKind::Other, io);
/// assert_eq!(nav_core::error::error_chain(&outer), "No space left on device");
/// ```
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}
