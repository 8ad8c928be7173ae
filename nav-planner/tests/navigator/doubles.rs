//! Model doubles that answer from the request they receive, and the
//! episode specs the tests run them in.

use nav_hal::arena::{Arena, Goal};
use nav_planner::navigator::episode::{EpisodeSpec, PerceptionChoice, PlannerChoice};
use nav_planner::protocol::ProtocolKind;
use nav_planner::vlm::{FnVlm, ScriptedVlm, VisionLanguageModel, VlmRequest, VlmResponse};
use serde_json::{Value, json};
use std::sync::Arc;

/// The text parts of a request's user message, joined.
pub(crate) fn text_of(req: &VlmRequest) -> String {
    req.user_text()
}

/// One direction of the text-only panorama: `(angle°, free metres, [(label, metres)])`.
pub(crate) type View = (f64, Option<f64>, Vec<(String, f64)>);

/// Parses the `PANORAMA (text)` block of an objectnav request.
pub(crate) fn panorama_views(text: &str) -> Vec<View> {
    let Some(start) = text.find("PANORAMA (text)") else { return Vec::new() };
    text[start..]
        .lines()
        .skip(1)
        .filter_map(|line| {
            let (angle, rest) = line.trim().split_once(": ")?;
            let angle: f64 = angle.parse().ok()?;
            let (free, objects) = match rest.split_once("; ") {
                Some((f, o)) => (f, o),
                None => (rest, ""),
            };
            let free = free.strip_suffix('m').and_then(|f| f.parse().ok());
            let objects = objects
                .split(", ")
                .filter_map(|o| {
                    let (label, d) = o.rsplit_once(' ')?;
                    Some((label.to_string(), d.strip_suffix('m')?.parse().ok()?))
                })
                .collect();
            Some((angle, free, objects))
        })
        .collect()
}

/// Which objects share a room with which: the common sense a model brings.
pub(crate) const ROOMS: [&[&str]; 5] = [
    &["tv", "sofa", "coffee table", "armchair"],
    &["fridge", "oven", "sink", "dining table"],
    &["bed", "wardrobe", "nightstand", "lamp"],
    &["toilet", "sink", "bathtub"],
    &["desk", "chair", "bookshelf"],
];

/// A text-only objectnav "model" that answers from the request it gets:
/// toward the target when the panorama lists it, else toward an object that
/// usually shares its room, else the most open direction that is not behind
/// the robot. Like a model that sees door frames, it heads for the open
/// direction nearest to where it wants to go when the straight way is
/// blocked.
pub(crate) fn objectnav_answer(req: &VlmRequest) -> Value {
    let text = text_of(req);
    let target = text.lines().find_map(|l| l.strip_prefix("TARGET: ")).unwrap_or("").trim().to_string();
    let views = panorama_views(&text);
    let nearest = |want: &dyn Fn(&str) -> bool| {
        views
            .iter()
            .flat_map(|(a, f, objs)| objs.iter().filter(|(l, _)| want(l)).map(move |(_, d)| (*a, f.unwrap_or(0.0), *d)))
            .min_by(|x, y| x.2.total_cmp(&y.2))
    };
    // the open direction (1.5 m free) closest to `want`, when the way toward `want` is not open
    let toward = |want: f64, free: f64, dist: f64| {
        if free >= (dist - 0.8).clamp(0.3, 1.5) {
            return want;
        }
        let diff = |a: f64| ((a - want + 540.0) % 360.0 - 180.0).abs();
        views
            .iter()
            .filter(|(_, f, _)| f.is_some_and(|f| f >= 1.5))
            .map(|(a, _, _)| *a)
            .min_by(|x, y| diff(*x).total_cmp(&diff(*y)))
            .unwrap_or(want)
    };
    if let Some((angle, free, dist)) = nearest(&|l| l == target) {
        return json!({"goal_flag": true, "angle": toward(angle, free, dist),
            "discovered_context": {"goal_scene_type": "target", "why": format!("the {target} is in view")}});
    }
    let related: Vec<&str> =
        ROOMS.iter().filter(|r| r.contains(&target.as_str())).flat_map(|r| r.iter().copied()).collect();
    if let Some((angle, free, dist)) = nearest(&|l| related.contains(&l)) {
        return json!({"goal_flag": false, "angle": toward(angle, free, dist),
            "discovered_context": {"goal_scene_type": "room", "why": format!("objects that go with a {target}")}});
    }
    let open = views
        .iter()
        .filter(|(a, _, _)| a.abs() <= 120.0)
        .filter_map(|(a, f, _)| f.map(|f| (*a, f)))
        .max_by(|x, y| x.1.total_cmp(&y.1))
        .map_or(0.0, |(a, _)| a);
    json!({"goal_flag": false, "angle": open,
        "discovered_context": {"goal_scene_type": "corridor", "why": "the most open way"}})
}

/// A model built from `objectnav_answer`.
pub(crate) fn objectnav_model() -> Arc<dyn VisionLanguageModel> {
    Arc::new(FnVlm::new(|r: &VlmRequest| Ok(VlmResponse::from_text(objectnav_answer(r).to_string()))))
}

/// An ObjectNav episode in `house_a` with a text-only model and `target`.
pub(crate) fn objectnav_spec(vlm: Arc<dyn VisionLanguageModel>, target: &str, max_steps: u32) -> EpisodeSpec {
    let mut spec = EpisodeSpec::new(Arena::builtin("house_a").unwrap(), "builtin:house_a");
    spec.arena.goal = Some(Goal::Object { label: target.to_string() });
    spec.protocol = ProtocolKind::Objectnav;
    spec.planner = PlannerChoice::Vlm;
    spec.vlm = Some(vlm);
    spec.text_only = true;
    spec.max_steps = Some(max_steps);
    // the scripted planner with the simulator's perfect perception stage
    spec.perception = Some(PerceptionChoice::Sim);
    spec
}

/// A candidates "model": MOVE_TO the best-scored candidate listed in the
/// request, EXPLORE as the fallback.
pub(crate) fn candidates_answer(req: &VlmRequest) -> Value {
    let text = text_of(req);
    let block = text.split("CANDIDATES:").nth(1).unwrap_or("");
    let best = block
        .lines()
        .filter_map(|l| {
            let (id, rest) = l.trim().split_once(' ')?;
            let score: f64 = rest.split("score=").nth(1)?.split_whitespace().next()?.parse().ok()?;
            Some((id.to_string(), score))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1));
    match best {
        Some((id, _)) => json!({"action": {"type": "MOVE_TO", "target_id": id},
            "fallback": {"if_failed": "EXPLORE"}, "explanation": "the best-scored candidate"}),
        None => json!({"action": {"type": "STOP"}, "fallback": {"if_failed": "STOP"}, "explanation": "no candidates"}),
    }
}

pub(crate) fn candidates_spec(vlm: Arc<dyn VisionLanguageModel>) -> EpisodeSpec {
    let mut spec = EpisodeSpec::new(Arena::builtin("simple").unwrap(), "builtin:simple");
    spec.protocol = ProtocolKind::Candidates;
    spec.planner = PlannerChoice::Vlm;
    spec.vlm = Some(vlm);
    spec.text_only = true;
    spec
}

/// `navigate_to_goal` on frontier 1 (the nearest), as a tool call.
pub(crate) fn to_frontier(vlm: ScriptedVlm) -> ScriptedVlm {
    vlm.then_tool_call("navigate_to_goal", json!({"goal_type": "frontier", "frontier_id": 1, "reason": "unexplored"}))
}
