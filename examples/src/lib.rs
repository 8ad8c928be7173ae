//! Runnable examples for navkit live in this directory; see README.md.
