//! The offline stand-in for the final-grounding VLM call:
//! a deterministic summary of the episode's stacked feedback, so `nav run
//! --experiment` writes a usable grounding without a model.

use nav_memory::grounding::{FinalGrounding, GroundingCategory, GroundingRequest};

/// Summarizes an episode's stacked feedback without a model: per category,
/// the feedback texts (the part after `] : `) in first-seen order, repeats
/// dropped, each capitalized and ending with a period, joined with spaces. Empty categories
/// stay empty; the same request always gives the same grounding.
///
/// ```
/// use nav_memory::grounding::{CategoryFeedback, EpisodeGrounding, GroundingCategory, StepStatus};
/// use nav_planner::offline::summarize_feedback;
/// let mut ep = EpisodeGrounding::new(1);
/// let fb = CategoryFeedback::default().with(GroundingCategory::Spatial, "kitchen is green");
/// ep.append_step_feedback(3, "find the fridge", StepStatus::Success, fb);
/// let g = summarize_feedback(&ep.request(), Some("2026-01-27T10:00:00Z".into()));
/// assert_eq!(g.spatial_grounding.content, "Kitchen is green.");
/// ```
pub fn summarize_feedback(req: &GroundingRequest, timestamp: Option<String>) -> FinalGrounding {
    let mut out = FinalGrounding { generation_timestamp: timestamp, ..FinalGrounding::default() };
    for c in GroundingCategory::ALL {
        // a set beside the list keeps this linear in the number of entries
        let mut seen: Vec<String> = Vec::new();
        let mut known: std::collections::HashSet<String> = std::collections::HashSet::new();
        for entry in req.stacked.get(c) {
            let text = entry.split_once("] : ").map_or(entry.as_str(), |(_, t)| t).trim();
            let mut chars = text.chars();
            let capitalized: String = chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default();
            let sentence = if capitalized.ends_with(['.', '!', '?']) { capitalized } else { format!("{capitalized}.") };
            if !text.is_empty() && known.insert(sentence.clone()) {
                seen.push(sentence);
            }
        }
        out.set(c, seen.join(" "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use nav_memory::grounding::{CategoryFeedback, EpisodeGrounding, StepStatus};

    #[test]
    fn summary_is_deterministic_and_deduplicated() {
        let mut ep = EpisodeGrounding::new(2);
        let fb = CategoryFeedback::default()
            .with(GroundingCategory::Procedural, "open doors slowly")
            .with(GroundingCategory::General, "Ask when unsure!");
        ep.append_step_feedback(1, "", StepStatus::Failure, fb.clone());
        ep.append_step_feedback(4, "", StepStatus::WiP, fb);
        let a = summarize_feedback(&ep.request(), None);
        assert_eq!(a, summarize_feedback(&ep.request(), None));
        assert_eq!(a.procedural_grounding.content, "Open doors slowly.");
        assert_eq!(a.general_grounding_rules.content, "Ask when unsure!");
        assert!(a.spatial_grounding.content.is_empty());
    }
}
