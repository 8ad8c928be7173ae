//! Model calls as recordings keep them, so that a run can be replayed
//! (`nav_planner::replay`):
//!
//! - [`request_hash`]: what a request *is*, for matching — SHA-256 of the
//!   canonical JSON of the model, the request kind and everything the model
//!   reads ([`canonical_request`]: system prompt, user text, image digests,
//!   turns, tools, output constraints; not deadlines);
//! - [`RecordedReply`]: a reply or an error as a value;
//! - [`ModelCall`] / [`CallJournal`] / [`JournalVlm`]: the calls of a step,
//!   which the step log writes with the next record;
//! - [`Divergence`]: the first request of a replayed run that its recording
//!   does not hold, with the lines that differ.
//!
//! ```
//! use nav_planner::vlm::VlmRequest;
//! use nav_planner::vlm::calls::request_hash;
//!
//! let a = VlmRequest::new("Find the chair.").text("where?");
//! let b = VlmRequest::new("Find the chair.").text("where?").timeout(std::time::Duration::from_secs(3));
//! assert_eq!(request_hash("gpt-4o", &a), request_hash("gpt-4o", &b), "deadlines do not count");
//! assert_ne!(request_hash("gpt-4o", &a), request_hash("gpt-4o-mini", &a));
//! ```

mod canonical;
mod diverge;
mod journal;

pub use canonical::{
    SECTIONS, canonical_request, hash_of, matching_part, request_hash, request_lines, section_digests, sha256_hex,
};
pub use diverge::{Divergence, common_prefix, line_diff};
pub use journal::{CallJournal, JournalVlm, ModelCall, RecordedReply};
