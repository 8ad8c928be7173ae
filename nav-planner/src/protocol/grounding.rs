//! Grounding generation (docs/GROUNDING.md): at the end of an episode, the
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
        .of_kind(crate::vlm::RequestKind::Grounding)
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

/// The verbalized-entropy variant: appended to a system prompt when
/// [`SystemPromptOptions::verbalized_entropy`] is on.
pub const VERBALIZED_ENTROPY_NOTE: &str = "### Verbalized uncertainty
Before you commit to a decision, state in one short sentence how uncertain you are \
(low, medium or high) and why, inside the free-text field of your answer (the `why` or \
reasoning field). Prefer the grounding knowledge above when it applies; when it \
contradicts what you see, trust what you see and say so.";

/// What is added to a protocol's fixed system prompt (the grounding
/// section; the verbalized-entropy variant).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SystemPromptOptions {
    /// Grounding knowledge, already merged and rendered.
    pub grounding: Option<String>,
    /// Append the verbalized-entropy instructions.
    pub verbalized_entropy: bool,
}

/// Most characters of grounding knowledge one system prompt carries (about
/// 400 tokens): past it the oldest items are dropped first (see
/// [`cap_grounding`]).
pub const MAX_GROUNDING_CHARS: usize = 1_500;

/// Where the grounding section goes in each protocol's system prompt: just
/// before the text that starts with one of these (the output-format rule:
/// objectnav's `Rules:` ending in the JSON contract, candidates' `OUTPUT:`,
/// explore's perceive-then-call instruction), so the output rule stays the
/// last thing the model reads. A base prompt with none of them (a custom
/// one) gets the section at its end.
pub const GROUNDING_SLOTS: [&str; 3] = ["\nRules:\n", "\nOUTPUT: exactly one JSON", "\nFirst say in 1-3 sentences"];

/// `grounding` cut to [`MAX_GROUNDING_CHARS`], and a note saying what was
/// cut (also logged as a warning). An item is one line of the rendered
/// grounding (one feedback entry, one knowledge line); headers, code fences
/// and blank lines are structure, kept. Items go oldest first: the rendered
/// grounding lists older files and steps before newer ones. The newest item
/// is kept; when what is left is still over the cap, it is cut at the cap.
///
/// ```
/// use nav_planner::protocol::grounding::{MAX_GROUNDING_CHARS, cap_grounding};
/// let long: String = (0..200).map(|i| format!("- [ Step{i} - WiP ] : fact {i}\n")).collect();
/// let (kept, note) = cap_grounding(&format!("#### Spatial\n{long}"));
/// assert!(kept.chars().count() <= MAX_GROUNDING_CHARS);
/// assert!(kept.starts_with("#### Spatial\n") && kept.contains("fact 199") && !kept.contains("fact 0\n"));
/// assert!(note.is_some());
/// assert_eq!(cap_grounding("#### Spatial\n- kitchen").1, None);
/// ```
pub fn cap_grounding(grounding: &str) -> (String, Option<String>) {
    let total = grounding.chars().count();
    if total <= MAX_GROUNDING_CHARS {
        return (grounding.to_string(), None);
    }
    let lines: Vec<&str> = grounding.lines().collect();
    let is_item = |l: &str| {
        let t = l.trim();
        !(t.is_empty() || t.starts_with('#') || t.starts_with("```") || t == "---")
    };
    // every line costs its characters plus a newline (the last one's is not kept, a safe overcount)
    let mut size: usize = lines.iter().map(|l| l.chars().count() + 1).sum();
    let mut dropped = vec![false; lines.len()];
    let mut n_dropped = 0usize;
    // the newest item stays (cut below if it alone is too long)
    let newest = lines.iter().rposition(|l| is_item(l));
    for (i, l) in lines.iter().enumerate() {
        if size <= MAX_GROUNDING_CHARS {
            break;
        }
        if is_item(l) && Some(i) != newest {
            dropped[i] = true;
            n_dropped += 1;
            size -= l.chars().count() + 1;
        }
    }
    let mut kept: String =
        lines.iter().zip(&dropped).filter(|(_, d)| !**d).map(|(l, _)| *l).collect::<Vec<_>>().join("\n");
    let mut cut_hard = false;
    if kept.chars().count() > MAX_GROUNDING_CHARS {
        kept = kept.chars().take(MAX_GROUNDING_CHARS).collect();
        cut_hard = true;
    }
    let note = format!(
        "grounding knowledge is {total} characters, over the {MAX_GROUNDING_CHARS} a system prompt carries: \
         dropped the {n_dropped} oldest item(s){}",
        if cut_hard { " and cut the rest at the limit" } else { "" }
    );
    tracing::warn!("{note}");
    (kept, Some(note))
}

/// `base` with the grounding section (under [`GROUNDING_HEADER`], capped by
/// [`cap_grounding`]) in its slot before the output-format rule (see
/// [`GROUNDING_SLOTS`]) and the verbalized-entropy note appended, as
/// configured. With no grounding (or blank grounding) and the variant off,
/// `base` exactly: default prompts stay byte-identical.
///
/// ```
/// use nav_planner::protocol::grounding::{SystemPromptOptions, system_prompt};
/// assert_eq!(system_prompt("SYS", &SystemPromptOptions::default()), "SYS");
/// let o = SystemPromptOptions { grounding: Some("#### Spatial\n- kitchen".into()), verbalized_entropy: false };
/// assert!(system_prompt("SYS", &o).ends_with("earlier episodes\n#### Spatial\n- kitchen"));
/// let with_rule = system_prompt("Find it.\n\nOUTPUT: exactly one JSON object", &o);
/// assert!(with_rule.ends_with("- kitchen\n\nOUTPUT: exactly one JSON object"));
/// ```
pub fn system_prompt(base: &str, options: &SystemPromptOptions) -> String {
    system_prompt_with_note(base, options).0
}

/// [`system_prompt`] and the note [`cap_grounding`] gives when it had to
/// cut the grounding (`None` when all of it fit).
pub fn system_prompt_with_note(base: &str, options: &SystemPromptOptions) -> (String, Option<String>) {
    let mut s = base.to_string();
    let mut note = None;
    if let Some(g) = options.grounding.as_deref().filter(|g| !g.trim().is_empty()) {
        let (g, n) = cap_grounding(g);
        note = n;
        let section = format!("{GROUNDING_HEADER}\n{g}");
        match GROUNDING_SLOTS.iter().filter_map(|m| base.find(m)).min() {
            // "…text.\n" + "\n### Grounding…\n<g>\n" + "\nRules:…": one blank line either side
            Some(at) => s.insert_str(at, &format!("\n{section}\n")),
            None => {
                s.push_str("\n\n");
                s.push_str(&section);
            }
        }
    }
    if options.verbalized_entropy {
        s.push_str("\n\n");
        s.push_str(VERBALIZED_ENTROPY_NOTE);
    }
    (s, note)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vlm::ScriptedVlm;
    use nav_memory::grounding::{CategoryFeedback, EpisodeGrounding, GroundingCategory, StepStatus};

    #[test]
    fn the_grounding_goes_before_each_protocols_output_rule_and_nothing_else_changes() {
        use crate::protocol::prompts::{CANDIDATES_SYSTEM, EXPLORE_SYSTEM, OBJECTNAV_SYSTEM};
        let g = "#### Spatial\n- [ Step1 - Success ] : kitchen is green";
        let o = SystemPromptOptions { grounding: Some(g.into()), verbalized_entropy: true };
        let section = format!("\n{GROUNDING_HEADER}\n{g}\n");
        for (base, rule) in [
            (OBJECTNAV_SYSTEM, "Rules:\n"),
            (CANDIDATES_SYSTEM, "OUTPUT: exactly one JSON"),
            (EXPLORE_SYSTEM, "First say in 1-3 sentences"),
        ] {
            let (p, note) = system_prompt_with_note(base, &o);
            assert_eq!(note, None);
            let at = p.find(GROUNDING_HEADER).unwrap();
            assert!(at < p.find(rule).unwrap(), "{p}");
            assert!(p.contains(&format!("{g}\n\n{rule}")), "{p}");
            // taking the section and the entropy note out gives the prompt back
            let back = p.replacen(&section, "", 1).replacen(&format!("\n\n{VERBALIZED_ENTROPY_NOTE}"), "", 1);
            assert_eq!(back, base);
        }
    }

    #[test]
    fn a_long_grounding_loses_its_oldest_items_first() {
        let items: Vec<String> = (0..300).map(|i| format!("- [ Step{i} - WiP ] : fact number {i}")).collect();
        let g = format!("#### Spatial\n{}\n\n#### General\n- newest rule", items.join("\n"));
        let (kept, note) = cap_grounding(&g);
        assert!(kept.chars().count() <= MAX_GROUNDING_CHARS);
        assert!(note.unwrap().contains("oldest"));
        assert!(kept.contains("#### Spatial") && kept.contains("#### General\n- newest rule"));
        assert!(kept.contains("fact number 299") && !kept.contains("fact number 0\n"));
        let p = system_prompt(
            crate::protocol::prompts::OBJECTNAV_SYSTEM,
            &SystemPromptOptions { grounding: Some(g), verbalized_entropy: false },
        );
        assert!(p.len() < crate::protocol::prompts::OBJECTNAV_SYSTEM.len() + MAX_GROUNDING_CHARS + 100);
        // one huge line: cut at the limit, on a character boundary
        let (kept, note) = cap_grounding(&"é".repeat(5_000));
        assert_eq!(kept.chars().count(), MAX_GROUNDING_CHARS);
        assert!(note.is_some());
    }

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
