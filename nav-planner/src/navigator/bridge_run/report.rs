//! What a bridge run reports: one summary per episode with the simulator's
//! own metrics, and the aggregate over the run.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One episode through the bridge. `success`, `spl` and
/// `distance_to_goal` are the simulator's own (Habitat's `get_metrics()`,
/// the MiniWorld backend's geometry); the rest are navkit's counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BridgeEpisodeSummary {
    /// Position in the run (0-based).
    pub run_index: u32,
    /// The backend's episode index, when it reported one.
    pub index: Option<u64>,
    /// The backend's episode id.
    pub episode_id: String,
    /// Scene id.
    pub scene_id: String,
    /// The target object class.
    pub target: String,
    /// The simulator judged the episode (it ended by STOP or the
    /// simulator's own step limit and reported its metrics).
    pub judged_by_simulator: bool,
    /// The simulator's success (false when not judged).
    pub success: bool,
    /// The simulator's SPL (0 when not judged).
    pub spl: f64,
    /// The simulator's final geodesic distance to the goal, metres.
    pub distance_to_goal: Option<f64>,
    /// Every other metric the simulator reported (`path_length_m`,
    /// `geodesic_m`, `soft_spl`, `collisions`, ...).
    pub sim_metrics: BTreeMap<String, Value>,
    /// How the episode ended: `stopped` (the agent's STOP), `step_limit`
    /// (the step budget ran out), `cost_limit` (the spending limit).
    pub end: String,
    /// Actions executed.
    pub steps: u32,
    /// Forward steps the simulator reported as blocked.
    pub collisions: u32,
    /// Planner invocations.
    pub planner_calls: u32,
    /// Model calls (0 offline).
    pub vlm_calls: u32,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Estimated model cost, US dollars.
    pub cost_usd: f64,
    /// Fallback decisions.
    pub fallbacks: u32,
    /// ABABA events.
    pub ababa: u32,
    /// STUCK events.
    pub stuck: u32,
    /// Model requests sent, per kind (`planner`, `scene`, `perception`,
    /// `stop_check`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub requests: BTreeMap<String, u64>,
    /// The first few distinct fallback reasons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback_reasons: Vec<String>,
    /// Median round trip of a step request, ms (simulator included).
    pub median_step_round_trip_ms: Option<f64>,
    /// Median bridge overhead of a step (round trip minus the simulator's
    /// own time: pipes, JSON, base64, parsing), ms.
    pub median_step_overhead_ms: Option<f64>,
    /// Wall-clock time of the episode, ms.
    pub wall_ms: f64,
}

impl BridgeEpisodeSummary {
    /// One line for a progress log:
    /// `[ 3/20] house-3: green ball SUCCESS spl 0.71 d 0.00 m | 87 steps ...`.
    pub fn line(&self, of: u32) -> String {
        let width = of.max(1).to_string().len();
        let verdict = match (self.judged_by_simulator, self.success) {
            (true, true) => "SUCCESS",
            (true, false) => "failure",
            (false, _) => "not judged",
        };
        format!(
            "[{:>width$}/{of}] {}: {} {verdict} spl {:.2} d {} | {} {} steps, {} collisions, {} planner calls, ABABA {}, STUCK {} | {:.1} s",
            self.run_index + 1,
            self.episode_id,
            self.target,
            self.spl,
            self.distance_to_goal.map_or("n/a".to_string(), |d| format!("{d:.2} m")),
            self.end,
            self.steps,
            self.collisions,
            self.planner_calls,
            self.ababa,
            self.stuck,
            self.wall_ms / 1000.0,
        )
    }
}

/// Aggregates over the episodes of a run (SR and SPL as the simulator
/// judged them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BridgeAggregate {
    /// Episodes that ran to their end.
    pub episodes: u32,
    /// Successful episodes.
    pub successes: u32,
    /// Success rate, successes / episodes.
    pub sr: f64,
    /// Mean SPL.
    pub spl: f64,
    /// Mean final distance to the goal over the episodes that report one,
    /// metres.
    pub mean_distance_to_goal: Option<f64>,
    /// Mean steps per episode.
    pub mean_steps: f64,
    /// Collisions over all episodes.
    pub collisions: u32,
    /// ABABA events over all episodes.
    pub ababa: u32,
    /// Episodes with at least one ABABA event.
    pub episodes_with_ababa: u32,
    /// STUCK events over all episodes.
    pub stuck: u32,
    /// Episodes with at least one STUCK event.
    pub episodes_with_stuck: u32,
    /// Planner invocations over all episodes.
    pub planner_calls: u32,
    /// Mean planner invocations per episode.
    pub mean_planner_calls: f64,
    /// Model calls over all episodes.
    pub vlm_calls: u32,
    /// Prompt tokens over all episodes.
    pub prompt_tokens: u64,
    /// Completion tokens over all episodes.
    pub completion_tokens: u64,
    /// Estimated model cost, US dollars.
    pub cost_usd: f64,
    /// Fallback decisions over all episodes.
    pub fallbacks: u32,
    /// Median of the episodes' median step round trips, ms.
    pub median_step_round_trip_ms: Option<f64>,
    /// Median of the episodes' median per-step bridge overheads, ms.
    pub median_step_overhead_ms: Option<f64>,
}

impl BridgeAggregate {
    /// Aggregates `episodes`.
    pub fn of(episodes: &[BridgeEpisodeSummary]) -> Self {
        let n = episodes.len() as u32;
        if n == 0 {
            return Self::default();
        }
        let nf = f64::from(n);
        let sum_u32 = |f: fn(&BridgeEpisodeSummary) -> u32| episodes.iter().map(f).sum::<u32>();
        let successes = episodes.iter().filter(|e| e.success).count() as u32;
        let distances: Vec<f64> =
            episodes.iter().filter_map(|e| e.distance_to_goal).filter(|d| d.is_finite()).collect();
        let planner_calls = sum_u32(|e| e.planner_calls);
        Self {
            episodes: n,
            successes,
            sr: f64::from(successes) / nf,
            spl: episodes.iter().map(|e| e.spl).sum::<f64>() / nf,
            mean_distance_to_goal: (!distances.is_empty())
                .then(|| distances.iter().sum::<f64>() / distances.len() as f64),
            mean_steps: f64::from(sum_u32(|e| e.steps)) / nf,
            collisions: sum_u32(|e| e.collisions),
            ababa: sum_u32(|e| e.ababa),
            episodes_with_ababa: episodes.iter().filter(|e| e.ababa > 0).count() as u32,
            stuck: sum_u32(|e| e.stuck),
            episodes_with_stuck: episodes.iter().filter(|e| e.stuck > 0).count() as u32,
            planner_calls,
            mean_planner_calls: f64::from(planner_calls) / nf,
            vlm_calls: sum_u32(|e| e.vlm_calls),
            prompt_tokens: episodes.iter().map(|e| e.prompt_tokens).sum(),
            completion_tokens: episodes.iter().map(|e| e.completion_tokens).sum(),
            cost_usd: episodes.iter().map(|e| e.cost_usd).sum(),
            fallbacks: sum_u32(|e| e.fallbacks),
            median_step_round_trip_ms: median(episodes.iter().filter_map(|e| e.median_step_round_trip_ms).collect()),
            median_step_overhead_ms: median(episodes.iter().filter_map(|e| e.median_step_overhead_ms).collect()),
        }
    }
}

/// The median of `v` (the upper one for an even count), `None` when empty.
pub(crate) fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// A whole run: who served it, every episode, the aggregate, and why it
/// stopped early if it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BridgeRunReport {
    /// The bridge backend (`miniworld`, `habitat`, ...).
    pub backend: String,
    /// The simulator and its version.
    pub simulator: String,
    /// The planner (`offline`, `frontier`, `vlm:PROVIDER/MODEL`).
    pub planner: String,
    /// The low-level policy.
    pub policy: String,
    /// Memory on or off.
    pub memory: bool,
    /// Episodes asked for.
    pub requested: u32,
    /// The episodes that ran to their end.
    pub episodes: Vec<BridgeEpisodeSummary>,
    /// Aggregates over `episodes`.
    pub aggregate: BridgeAggregate,
    /// Why the run stopped before all requested episodes ran (the bridge
    /// died, a request failed), naming the episode.
    pub aborted: Option<String>,
    /// Per-backend call statistics of the run: answered and failed calls,
    /// mean latency, tokens, cost.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backends: Vec<crate::navigator::billing::BackendSummary>,
}

impl BridgeRunReport {
    /// The final table: SR / SPL / oscillation / planner calls.
    pub fn table(&self) -> String {
        let a = &self.aggregate;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "ObjectNav through the bridge: {} ({}) | planner {} | policy {} | memory {}",
            self.backend,
            self.simulator,
            self.planner,
            self.policy,
            if self.memory { "on" } else { "off" }
        );
        s.push('\n');
        let _ = writeln!(
            s,
            "| episodes | SR | SPL | mean dist. to goal | mean steps | collisions | ABABA (episodes) | STUCK (episodes) | planner calls / ep | VLM calls | tokens | fallbacks | step overhead |"
        );
        let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        let _ = writeln!(
            s,
            "| {} | {:.2} ({}/{}) | {:.3} | {} | {:.1} | {} | {} ({}) | {} ({}) | {:.1} | {} | {}+{} | {} | {} |",
            a.episodes,
            a.sr,
            a.successes,
            a.episodes,
            a.spl,
            a.mean_distance_to_goal.map_or("n/a".to_string(), |d| format!("{d:.2} m")),
            a.mean_steps,
            a.collisions,
            a.ababa,
            a.episodes_with_ababa,
            a.stuck,
            a.episodes_with_stuck,
            a.mean_planner_calls,
            a.vlm_calls,
            a.prompt_tokens,
            a.completion_tokens,
            a.fallbacks,
            a.median_step_overhead_ms.map_or("n/a".to_string(), |m| format!("{m:.2} ms")),
        );
        for b in &self.backends {
            let _ = writeln!(s, "{}", crate::navigator::billing::backend_line(b));
        }
        if let Some(why) = &self.aborted {
            let _ = writeln!(s, "\naborted after {} of {} episodes: {why}", a.episodes, self.requested);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(i: u32, success: bool, spl: f64, ababa: u32) -> BridgeEpisodeSummary {
        BridgeEpisodeSummary {
            run_index: i,
            index: Some(u64::from(i)),
            episode_id: format!("house-{i}"),
            scene_id: "house".into(),
            target: "red box".into(),
            judged_by_simulator: true,
            success,
            spl,
            distance_to_goal: Some(if success { 0.0 } else { 2.0 }),
            sim_metrics: BTreeMap::new(),
            end: "stopped".into(),
            steps: 40,
            collisions: 1,
            planner_calls: 3,
            vlm_calls: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            cost_usd: 0.0,
            fallbacks: 0,
            ababa,
            stuck: 0,
            requests: BTreeMap::new(),
            fallback_reasons: Vec::new(),
            median_step_round_trip_ms: Some(20.0 + f64::from(i)),
            median_step_overhead_ms: Some(3.0 + f64::from(i)),
            wall_ms: 1500.0,
        }
    }

    #[test]
    fn aggregates_follow_the_simulator_verdicts() {
        let eps = vec![ep(0, true, 0.8, 0), ep(1, false, 0.0, 2), ep(2, true, 0.5, 0), ep(3, true, 0.9, 1)];
        let a = BridgeAggregate::of(&eps);
        assert_eq!((a.episodes, a.successes), (4, 3));
        assert!((a.sr - 0.75).abs() < 1e-12 && (a.spl - 0.55).abs() < 1e-12);
        assert_eq!((a.ababa, a.episodes_with_ababa), (3, 2));
        assert_eq!(a.mean_distance_to_goal, Some(0.5));
        assert_eq!((a.planner_calls, a.mean_planner_calls), (12, 3.0));
        assert_eq!(a.median_step_overhead_ms, Some(5.0));
        assert_eq!(BridgeAggregate::of(&[]), BridgeAggregate::default());
        let line = eps[1].line(20);
        assert!(line.starts_with("[ 2/20] house-1: red box failure spl 0.00 d 2.00 m"), "{line}");
        let report = BridgeRunReport {
            backend: "miniworld".into(),
            simulator: "miniworld 2.1.0".into(),
            planner: "offline".into(),
            policy: "heading".into(),
            memory: true,
            requested: 5,
            episodes: eps,
            aggregate: a,
            aborted: Some("episode 4: the bridge died".into()),
            backends: vec![crate::navigator::billing::BackendSummary {
                backend: "openai/gpt-4o-mini".into(),
                successes: 12,
                failures: 1,
                mean_latency_ms: 850.4,
                prompt_tokens: 9000,
                completion_tokens: 400,
                cost_usd: 0.0016,
                unsettled: 0,
            }],
        };
        let t = report.table();
        assert!(t.contains("| 4 | 0.75 (3/4) | 0.550 |"), "{t}");
        assert!(
            t.contains("backend openai/gpt-4o-mini: 12 ok, 1 failed, mean latency 850 ms, tokens 9000+400, $0.0016"),
            "{t}"
        );
        assert!(t.contains("aborted after 4 of 5 episodes: episode 4: the bridge died"), "{t}");
    }
}
