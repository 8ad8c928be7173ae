//! Grounding generation (seed 004 §3): at the end of an episode, the
//! episode's stacked feedback (only this episode's, never earlier
//! grounding) goes to the VLM, which writes the four-category final
//! grounding that nav-memory saves and later merges into system prompts.

use super::{CallRecord, DecisionError, type_name};
use crate::protocol::json::extract_json_object;
use crate::protocol::prompts::GROUNDING_SYSTEM;
use crate::vlm::{VisionLanguageModel, VlmRequest};
use nav_memory::grounding::{FinalGrounding, GroundingContent, GroundingRequest};
use serde_json::{Map, Value};
use std::time::Duration;

fn content(obj: &Map<String, Value>, key: &str) -> Result<GroundingContent, DecisionError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(GroundingContent::default()),
        Some(Value::String(s)) => Ok(GroundingContent { content: s.trim().to_string() }),
        Some(Value::Object(m)) => match m.get("content") {
            Some(Value::String(s)) => Ok(GroundingContent { content: s.trim().to_string() }),
            None | Some(Value::Null) => Ok(GroundingContent::default()),
            Some(other) => Err(DecisionError::invalid(
                format!("{key}.content"),
                format!("expected a string, got {}", type_name(other)),
            )),
        },
        Some(other) => Err(DecisionError::invalid(key, format!("expected an object, got {}", type_name(other)))),
    }
}

/// Parses the model's final grounding reply (each category as
/// `{"content": "..."}` or a plain string; missing categories are empty).
pub fn parse_final_grounding(reply: &str) -> Result<FinalGrounding, DecisionError> {
    let obj = extract_json_object(reply)?;
    Ok(FinalGrounding {
        generation_timestamp: None,
        user_preference_grounding: content(&obj, "user_preference_grounding")?,
        spatial_grounding: content(&obj, "spatial_grounding")?,
        procedural_grounding: content(&obj, "procedural_grounding")?,
        general_grounding_rules: content(&obj, "general_grounding_rules")?,
    })
}

/// Builds the request for one episode's feedback.
pub fn build_request(req: &GroundingRequest) -> VlmRequest {
    VlmRequest::new(GROUNDING_SYSTEM)
        .text(format!("Episode {} feedback:\n{}", req.episode_id, req.feedback_text()))
        .max_tokens(600)
        .temperature(0.2)
        .timeout(Duration::from_secs(30))
}

/// Asks the model for the final grounding of an episode. An episode without
/// feedback yields an empty grounding without a call. `timestamp` is the
/// caller's clock reading (ISO 8601), stored in the record.
pub async fn generate_final_grounding<M: VisionLanguageModel + ?Sized>(
    vlm: &M,
    req: &GroundingRequest,
    timestamp: Option<String>,
) -> Result<(FinalGrounding, CallRecord), DecisionError> {
    let mut record = CallRecord::default();
    if req.is_empty() {
        return Ok((FinalGrounding { generation_timestamp: timestamp, ..FinalGrounding::default() }, record));
    }
    let resp = match vlm.complete(build_request(req)).await {
        Ok(r) => r,
        Err(e) => {
            record.add_failure(&e.to_string());
            return Err(DecisionError::Call(e.to_string()));
        }
    };
    record.add_response(&resp);
    let mut g = parse_final_grounding(&resp.text)?;
    g.generation_timestamp = timestamp;
    Ok((g, record))
}

/// The header of the grounding section in every protocol's system prompt.
pub const GROUNDING_HEADER: &str = "### Grounding knowledge from earlier episodes";

/// The seed's verbalized-entropy variant: appended to a system prompt when
/// [`SystemPromptOptions::verbalized_entropy`] is on.
pub const VERBALIZED_ENTROPY_NOTE: &str = "### Verbalized uncertainty
Before you commit to a decision, state in one short sentence how uncertain you are \
(low, medium or high) and why, inside the free-text field of your answer (the `why` or \
reasoning field). Prefer the grounding knowledge above when it applies; when it \
contradicts what you see, trust what you see and say so.";

/// What is added to a protocol's fixed system prompt (seed 004: the
/// grounding section; the verbalized-entropy variant).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SystemPromptOptions {
    /// Grounding knowledge (seed 004), already merged and rendered.
    pub grounding: Option<String>,
    /// Append the verbalized-entropy instructions.
    pub verbalized_entropy: bool,
}

/// `base` with the grounding section (under [`GROUNDING_HEADER`]) and the
/// verbalized-entropy note appended as configured. With no grounding (or
/// blank grounding) and the variant off, `base` exactly: default prompts
/// stay byte-identical.
///
/// ```
/// use nav_planner::protocol::grounding::{SystemPromptOptions, system_prompt};
/// assert_eq!(system_prompt("SYS", &SystemPromptOptions::default()), "SYS");
/// let o = SystemPromptOptions { grounding: Some("#### Spatial\n- kitchen".into()), verbalized_entropy: false };
/// assert!(system_prompt("SYS", &o).ends_with("earlier episodes\n#### Spatial\n- kitchen"));
/// ```
pub fn system_prompt(base: &str, options: &SystemPromptOptions) -> String {
    let mut s = base.to_string();
    if let Some(g) = options.grounding.as_deref().filter(|g| !g.trim().is_empty()) {
        s.push_str("\n\n");
        s.push_str(GROUNDING_HEADER);
        s.push('\n');
        s.push_str(g);
    }
    if options.verbalized_entropy {
        s.push_str("\n\n");
        s.push_str(VERBALIZED_ENTROPY_NOTE);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vlm::ScriptedVlm;
    use nav_memory::grounding::{CategoryFeedback, EpisodeGrounding, GroundingCategory, StepStatus};

    #[test]
    fn generates_from_stacked_feedback() {
        let mut ep = EpisodeGrounding::new(3);
        ep.append_step_feedback(
            1,
            "find the fridge",
            StepStatus::Success,
            CategoryFeedback::default().with(GroundingCategory::Spatial, "kitchen is green"),
        );
        let vlm = ScriptedVlm::new().then_text(
            r#"{"user_preference_grounding": {"content": ""}, "spatial_grounding": {"content": "The green room is the kitchen."}, "procedural_grounding": "", "general_grounding_rules": {"content": ""}}"#,
        );
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (g, record) =
            rt.block_on(generate_final_grounding(&vlm, &ep.request(), Some("2026-11-22T00:00:00Z".into()))).unwrap();
        assert_eq!(g.spatial_grounding.content, "The green room is the kitchen.");
        assert_eq!(record.vlm_calls, 1);
        let sent = vlm.last_request().unwrap();
        let text = format!("{:?}", sent.user);
        assert!(text.contains("kitchen is green"), "{text}");
        // no feedback → no call
        let empty = EpisodeGrounding::new(4);
        let (g, record) = rt.block_on(generate_final_grounding(&vlm, &empty.request(), None)).unwrap();
        assert_eq!(record.vlm_calls, 0);
        assert!(g.spatial_grounding.content.is_empty());
    }
}
