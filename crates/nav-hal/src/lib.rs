//! # nav-hal
//!
//! Part of navkit; see the workspace README. Filled in by its own issue.
#![deny(missing_docs)]
