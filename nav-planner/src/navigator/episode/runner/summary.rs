//! The run summary and its criteria, from a loop's result and a judge's
//! [`Verdict`] (scoring only: nothing here reaches a loop).

use super::judge::Verdict;
use super::parts::{LoopResult, SuccessRule};
use crate::navigator::episode::{CriterionResult, EpisodeSpec, RunSummary};
use crate::navigator::place_score::PlaceScore;
use crate::protocol::ProtocolKind;
use nav_hal::arena::{Arena, Goal};

/// The episode a loop result is judged against.
pub(crate) struct Judged<'a> {
    pub(crate) spec: &'a EpisodeSpec,
    /// The task (goal and criteria).
    pub(crate) task: &'a Arena,
    pub(crate) max_steps: u32,
    pub(crate) planner_name: String,
}

/// The criteria and the run summary of a loop's result under a judge's
/// verdict (an empty verdict without a judge: criteria that need ground
/// truth then say "not judged" and fail, and `success` is false).
pub(crate) fn summarize(j: Judged<'_>, verdict: &Verdict, world: Option<&Arena>, run: LoopResult) -> RunSummary {
    let (spec, arena, max_steps) = (j.spec, j.task, j.max_steps);
    let stats = &run.stats;
    let coverage = run.coverage.or(verdict.coverage);
    let path = verdict.path_length_m;
    let geodesic = if arena.goal.is_some() { verdict.geodesic_m } else { None };
    // exploration without a stated coverage target is judged against the seed's 80 %
    let min_cov =
        arena.criteria.min_coverage.or((spec.protocol == ProtocolKind::Explore || arena.goal.is_none()).then_some(0.8));
    let at_goal = verdict.at_goal.unwrap_or(false);
    let success = match run.success {
        SuccessRule::AtGoal => at_goal,
        SuccessRule::StoppedAtGoal { stopped } => stopped && at_goal,
        SuccessRule::Fails => false,
        SuccessRule::Coverage => coverage.is_some_and(|c| min_cov.is_none_or(|m| c >= m)),
    };
    let spl = match (verdict.spl, geodesic, path) {
        // a simulator that scores its own episodes (Habitat) is taken at its word
        (Some(s), _, _) if success => s,
        (Some(_), _, _) => 0.0,
        (None, Some(l), Some(p)) => nav_core::metrics::spl(success, l, p),
        _ => 0.0,
    };

    let unit = match spec.protocol {
        ProtocolKind::Explore => "decision",
        ProtocolKind::Candidates => "cycle",
        ProtocolKind::Objectnav => "step",
    };
    let mut criteria = Vec::new();
    let crit = |name: &str, passed: bool, actual: String, expected: String, detail: String| CriterionResult {
        name: name.into(),
        passed,
        actual,
        expected,
        detail,
    };
    if let Some(goal) = &arena.goal {
        let tol = arena.success_distance_m();
        let what = match goal {
            Goal::Object { label } => format!("STOP within {tol:.1}m of a {label}"),
            Goal::Point { .. } => format!("within {tol:.1}m"),
        };
        let final_text = verdict.distance_to_goal_m.map_or("n/a".into(), |d| format!("{d:.2}m"));
        criteria.push(crit(
            "Goal Reached",
            success,
            if verdict.at_goal.is_none() {
                "not judged: no ground truth for this robot".to_string()
            } else if success {
                // explore counts decisions (as "Cycle Limit" does), the others steps or cycles
                match spec.protocol {
                    ProtocolKind::Explore => {
                        format!("Reached at decision {} (step {})", stats.planner_calls, stats.steps)
                    }
                    _ => format!("Reached at {unit} {}", stats.steps),
                }
            } else {
                format!("Not reached (final distance {final_text})")
            },
            what,
            format!("final distance {final_text} from the goal region (the judge's ground truth); ended: {}", run.end),
        ));
    }
    let max_coll = arena.criteria.max_collisions.unwrap_or(0);
    criteria.push(match verdict.collisions {
        Some(collisions) => crit(
            "Collisions",
            collisions <= max_coll,
            format!("{collisions} collisions"),
            format!("<= {max_coll}"),
            "contacts of the robot's disc with walls, obstacles or objects (the judge's count)".into(),
        ),
        None => crit(
            "Collisions",
            false,
            "not judged: no ground truth for this robot".into(),
            format!("<= {max_coll}"),
            "collisions need a judge that knows the world".into(),
        ),
    });
    if let Some(m) = min_cov {
        let how = if run.coverage.is_some() {
            "known cells / total cells of the world-model grid, as the robot's camera (and in LiDAR mode its LiDAR) saw them"
        } else {
            "free cells seen by the sensors / free cells reachable from the start (the judge's count)"
        };
        criteria.push(match coverage {
            Some(c) => crit(
                "Exploration",
                c >= m,
                format!("{:.0}% covered", c * 100.0),
                format!(">= {:.0}%", m * 100.0),
                format!("{:.1}%: {how}", c * 100.0),
            ),
            None => crit(
                "Exploration",
                false,
                "not judged: no ground truth for this robot".into(),
                format!(">= {:.0}%", m * 100.0),
                "coverage needs a judge that knows the free space".into(),
            ),
        });
    }
    let used = if spec.protocol == ProtocolKind::Explore { stats.planner_calls } else { stats.steps };
    criteria.push(crit(
        "Cycle Limit",
        used <= max_steps,
        format!("{used} of {max_steps} {unit}s"),
        format!("<= {max_steps}"),
        format!("ended: {}", run.end),
    ));
    if let Some((counter, max)) = run.stuck_recovery {
        criteria.push(crit(
            "Stuck Recovery",
            counter <= max,
            format!("stuckCounter={counter}"),
            format!("<= {max}"),
            format!(
                "final count of consecutive cycles that moved less than {:.0} cm; the detector fired {} time(s)",
                spec.candidates.stuck.min_motion_m * 100.0,
                stats.stuck
            ),
        ));
    }
    let passed = criteria.iter().all(|c| c.passed);
    let passed_count = criteria.iter().filter(|c| c.passed).count() as u32;
    let total_count = criteria.len() as u32;
    let stats = run.stats;
    RunSummary {
        arena: arena.name.clone(),
        protocol: spec.protocol.as_str().to_string(),
        planner: j.planner_name,
        seed: spec.seed,
        success,
        spl,
        steps: stats.steps,
        path_length_m: path.unwrap_or(0.0),
        geodesic_m: geodesic,
        collisions: verdict.collisions.unwrap_or(0),
        coverage: coverage.unwrap_or(0.0),
        explored_m2: verdict.explored_m2,
        ababa: stats.ababa,
        stuck: stats.stuck,
        vlm_calls: stats.vlm_calls,
        prompt_tokens: stats.usage.prompt_tokens,
        completion_tokens: stats.usage.completion_tokens,
        fallbacks: stats.fallbacks,
        wall_ms: 0.0,
        memory: spec.memory,
        target: match &arena.goal {
            Some(Goal::Object { label }) => Some(label.clone()),
            _ => None,
        },
        planner_calls: stats.planner_calls,
        cost_usd: stats.cost_usd,
        safety_overrides: stats.safety_overrides,
        end: run.end,
        median_overhead_ms: stats.median_overhead_ms(),
        passed,
        passed_count,
        total_count,
        criteria,
        vlm_failures: stats.vlm_failures,
        backends: Vec::new(),
        scene_calls: stats.scene_calls,
        places: world.and_then(|w| PlaceScore::of(w, &run.places, run.scene_calls)),
        invalid_tool_calls: stats.invalid_tool_calls,
        requests: Default::default(),
        judged: verdict.path_length_m.is_some(),
        fallback_reasons: stats.fallback_reasons,
        output_error: run.output_error,
    }
}
