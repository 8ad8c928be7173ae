//! Evaluation suites: which episodes `nav eval` runs by default, and how
//! their summaries aggregate into a table (SR, SPL, collisions, coverage,
//! ABABA and STUCK per episode, planner and VLM calls, tokens).

use crate::navigator::candidates_loop::CandidatesLoopConfig;
use crate::navigator::episode::{EpisodeSpec, PlannerChoice, RunSummary};
use crate::navigator::explore_loop::ExploreLoopConfig;
use crate::navigator::objectnav_loop::ObjectNavLoopConfig;
use crate::navigator::place_score::PlaceTotals;
use crate::protocol::ProtocolKind;
use nav_hal::HalError;
use nav_hal::arena::Arena;
use nav_hal::arena::procedural::generate_house;
use nav_hal::sim::SimConfig;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Loop and simulator settings shared by every episode of a suite.
#[derive(Debug, Clone, Default)]
pub struct EvalConfig {
    /// Simulator settings.
    pub sim: SimConfig,
    /// ObjectNav loop settings.
    pub objectnav: ObjectNavLoopConfig,
    /// Explore loop settings.
    pub explore: ExploreLoopConfig,
    /// Candidates loop settings.
    pub candidates: CandidatesLoopConfig,
}

impl EvalConfig {
    /// One episode spec with these settings.
    pub fn spec(
        &self,
        arena: Arena,
        source: String,
        protocol: ProtocolKind,
        planner: PlannerChoice,
        memory: bool,
        seed: u64,
    ) -> EpisodeSpec {
        let mut s = EpisodeSpec::new(arena, source);
        s.protocol = protocol;
        s.planner = planner;
        s.memory = memory;
        s.seed = seed;
        s.sim = self.sim.clone();
        s.objectnav = self.objectnav.clone();
        s.explore = self.explore.clone();
        s.candidates = self.candidates.clone();
        s
    }
}

/// The built-in houses.
pub const HOUSES: [&str; 3] = ["house_a", "house_b", "house_c"];
/// The four test arenas of the candidates pipeline: simple navigation,
/// exploration, dead-end recovery, narrow corridor.
pub const SEED_ARENAS: [&str; 4] = ["simple", "exploration", "dead_end", "narrow_corridor"];

/// The number of episodes [`default_suite`] builds for these arguments
/// (saturating): three configurations of every house episode, the four
/// candidates arenas and the two explore arenas. A caller checks it
/// against a limit before building the suite.
pub fn default_suite_len(house_seeds: u64, procedural: u64) -> u64 {
    house_suite_len(house_seeds, procedural, DEFAULT_HOUSE_CONFIGS.len()).saturating_add(SEED_ARENAS.len() as u64 + 2)
}

/// The configurations the default suite runs in its houses: the frontier
/// baseline and the offline stand-in with memory off and on.
const DEFAULT_HOUSE_CONFIGS: [(ProtocolKind, PlannerChoice, bool); 3] = [
    (ProtocolKind::Objectnav, PlannerChoice::Frontier, true),
    (ProtocolKind::Objectnav, PlannerChoice::Offline, false),
    (ProtocolKind::Objectnav, PlannerChoice::Offline, true),
];

/// The number of episodes [`house_suite`] builds (saturating).
pub fn house_suite_len(house_seeds: u64, procedural: u64, configs: usize) -> u64 {
    (HOUSES.len() as u64).saturating_mul(house_seeds.max(1)).saturating_add(procedural).saturating_mul(configs as u64)
}

/// The default suite's houses — the built-in houses with seeds
/// `0..house_seeds` and `procedural` generated houses (episode seed = house
/// seed) — each run with every configuration (protocol, planner, memory
/// on), configuration by configuration: e.g. the map baseline over the
/// same houses the default suite's rows use.
pub fn house_suite(
    base: &EvalConfig,
    house_seeds: u64,
    procedural: u64,
    configs: &[(ProtocolKind, PlannerChoice, bool)],
) -> Result<Vec<EpisodeSpec>, HalError> {
    let mut houses: Vec<(Arena, String, u64)> = Vec::new();
    for name in HOUSES {
        let a = Arena::builtin(name)?;
        for seed in 0..house_seeds.max(1) {
            houses.push((a.clone(), format!("builtin:{name}"), seed));
        }
    }
    // procedural houses run with their own seed as the episode seed: a drawn start at least 1 m
    // (geodesic) from a drawn target, as Habitat's episodes are
    for seed in 1..=procedural {
        houses.push((generate_house(seed), format!("procedural:{seed}"), seed));
    }
    let mut out = Vec::new();
    for &(protocol, planner, memory) in configs {
        for (a, src, seed) in &houses {
            out.push(base.spec(a.clone(), src.clone(), protocol, planner, memory, *seed));
        }
    }
    Ok(out)
}

/// The default suite: objectnav in the built-in houses (seeds
/// `0..house_seeds`) and `procedural` generated houses (episode seed = house
/// seed), each with the frontier baseline and the offline stand-in with
/// memory off and on (the map baseline runs with `--configs
/// objectnav:map:on`); the
/// candidates protocol's offline planner in the four [`SEED_ARENAS`]; the
/// explore protocol's offline planner in `exploration` and `house_a`.
pub fn default_suite(base: &EvalConfig, house_seeds: u64, procedural: u64) -> Result<Vec<EpisodeSpec>, HalError> {
    let mut out = house_suite(base, house_seeds, procedural, &DEFAULT_HOUSE_CONFIGS)?;
    for name in SEED_ARENAS {
        out.push(base.spec(
            Arena::builtin(name)?,
            format!("builtin:{name}"),
            ProtocolKind::Candidates,
            PlannerChoice::Offline,
            true,
            0,
        ));
    }
    for name in ["exploration", "house_a"] {
        let mut a = Arena::builtin(name)?;
        if a.criteria.min_coverage.is_none() {
            a.criteria.min_coverage = Some(0.8);
        }
        a.goal = None;
        out.push(base.spec(a, format!("builtin:{name}"), ProtocolKind::Explore, PlannerChoice::Offline, true, 0));
    }
    Ok(out)
}

/// What identifies one episode of a suite: the key `nav eval --resume`
/// skips finished episodes by and `nav eval merge` de-duplicates by.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EpisodeKey {
    /// Arena name.
    pub arena: String,
    /// Protocol (`objectnav`, …).
    pub protocol: String,
    /// Planner (`offline`, …).
    pub planner: String,
    /// Memory on.
    pub memory: bool,
    /// Episode seed.
    pub seed: u64,
}

impl EpisodeKey {
    /// The key of an episode about to run (a model's planner is named
    /// `vlm:PROVIDER/MODEL`, as its summary names it).
    pub fn of_spec(s: &EpisodeSpec) -> Self {
        let planner = match (s.planner, &s.vlm) {
            (PlannerChoice::Vlm, Some(v)) => {
                let i = v.describe();
                format!("vlm:{}/{}", i.provider, i.model)
            }
            (p, _) => p.as_str().to_string(),
        };
        Self {
            arena: s.arena.name.clone(),
            protocol: s.protocol.as_str().to_string(),
            planner,
            memory: s.memory,
            seed: s.seed,
        }
    }

    /// The key of a finished episode.
    pub fn of_summary(s: &RunSummary) -> Self {
        Self {
            arena: s.arena.clone(),
            protocol: s.protocol.clone(),
            planner: s.planner.clone(),
            memory: s.memory,
            seed: s.seed,
        }
    }
}

impl std::fmt::Display for EpisodeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let memory = if self.memory { "on" } else { "off" };
        write!(f, "{} {} {} memory {} seed {}", self.arena, self.protocol, self.planner, memory, self.seed)
    }
}

/// One of `count` disjoint slices of a suite (`index` is 1-based): every
/// `count`-th episode starting at `index - 1`, so the slices cover the
/// suite exactly once, are deterministic, and are balanced across the
/// suite's kinds of episodes. Empty for an `index` outside `1..=count`.
pub fn shard<T>(suite: Vec<T>, index: usize, count: usize) -> Vec<T> {
    if index == 0 || index > count {
        return Vec::new();
    }
    suite.into_iter().enumerate().filter(|(i, _)| i % count == index - 1).map(|(_, t)| t).collect()
}

/// Aggregates of one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    /// `protocol / planner / memory`.
    pub configuration: String,
    /// Which arenas.
    pub arenas: String,
    /// Episodes.
    pub episodes: usize,
    /// Success rate.
    pub sr: f64,
    /// Mean SPL.
    pub spl: f64,
    /// Collisions per episode.
    pub collisions: f64,
    /// Mean coverage.
    pub coverage: f64,
    /// ABABA events per episode.
    pub ababa: f64,
    /// STUCK events per episode.
    pub stuck: f64,
    /// Planner calls per episode.
    pub planner_calls: f64,
    /// VLM calls per episode.
    pub vlm_calls: f64,
    /// Tokens (prompt + completion) per episode.
    pub tokens: f64,
    /// Fraction of episodes that passed all their criteria.
    pub passed: f64,
    /// Median of the episodes' median per-cycle local overhead, ms.
    pub median_overhead_ms: Option<f64>,
    /// Scene analyses per episode (objectnav).
    #[serde(default)]
    pub scene_calls: f64,
    /// How the memory's places followed the rooms, summed over the
    /// episodes (objectnav in arenas with rooms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub places: Option<PlaceTotals>,
}

/// A finished evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    /// Every episode's summary.
    pub summaries: Vec<RunSummary>,
    /// Per-configuration aggregates.
    pub aggregates: Vec<Aggregate>,
    /// Wall-clock duration, seconds.
    pub wall_s: f64,
    /// Parallel jobs used.
    pub jobs: usize,
}

fn arena_group(s: &RunSummary) -> String {
    if s.protocol == "objectnav" { "houses".to_string() } else { s.arena.clone() }
}

fn place_totals(v: &[&RunSummary]) -> Option<PlaceTotals> {
    let mut totals: Option<PlaceTotals> = None;
    for p in v.iter().filter_map(|s| s.places.as_ref()) {
        totals.get_or_insert_with(PlaceTotals::default).add(p);
    }
    totals
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

impl EvalReport {
    /// Aggregates summaries by configuration and arena group; summaries
    /// are listed in [`EpisodeKey`] order, so the report does not depend on
    /// the order episodes finished in or on how a suite was sharded.
    pub fn new(mut summaries: Vec<RunSummary>, wall_s: f64, jobs: usize) -> Self {
        summaries.sort_by_cached_key(EpisodeKey::of_summary);
        let mut groups: BTreeMap<(String, String), Vec<&RunSummary>> = BTreeMap::new();
        for s in &summaries {
            let cfg = format!("{} / {} / memory {}", s.protocol, s.planner, if s.memory { "on" } else { "off" });
            groups.entry((cfg, arena_group(s))).or_default().push(s);
        }
        let aggregates = groups
            .into_iter()
            .map(|((configuration, arenas), v)| {
                let n = v.len() as f64;
                let mean = |f: &dyn Fn(&RunSummary) -> f64| v.iter().map(|s| f(s)).sum::<f64>() / n;
                Aggregate {
                    configuration,
                    arenas,
                    episodes: v.len(),
                    sr: mean(&|s| f64::from(u8::from(s.success))),
                    spl: mean(&|s| s.spl),
                    collisions: mean(&|s| f64::from(s.collisions)),
                    coverage: mean(&|s| s.coverage),
                    ababa: mean(&|s| f64::from(s.ababa)),
                    stuck: mean(&|s| f64::from(s.stuck)),
                    planner_calls: mean(&|s| f64::from(s.planner_calls)),
                    vlm_calls: mean(&|s| f64::from(s.vlm_calls)),
                    tokens: mean(&|s| (s.prompt_tokens + s.completion_tokens) as f64),
                    passed: mean(&|s| f64::from(u8::from(s.passed))),
                    median_overhead_ms: median(v.iter().filter_map(|s| s.median_overhead_ms).collect()),
                    scene_calls: mean(&|s| f64::from(s.scene_calls)),
                    places: place_totals(&v),
                }
            })
            .collect();
        Self { summaries, aggregates, wall_s, jobs }
    }

    /// The Markdown report.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "## nav eval: {} episodes in {:.1} s ({} jobs)\n",
            self.summaries.len(),
            self.wall_s,
            self.jobs
        );
        s.push_str("| configuration | arenas | episodes | SR | SPL | collisions/ep | coverage | ABABA/ep | STUCK/ep | planner calls/ep | VLM calls/ep | tokens/ep | criteria passed | median local overhead |\n");
        s.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for a in &self.aggregates {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} | {:.1} | {:.0} | {:.0}% | {} |",
                cell(&a.configuration),
                cell(&a.arenas),
                a.episodes,
                a.sr,
                a.spl,
                a.collisions,
                a.coverage,
                a.ababa,
                a.stuck,
                a.planner_calls,
                a.vlm_calls,
                a.tokens,
                a.passed * 100.0,
                a.median_overhead_ms.map_or("n/a".to_string(), |m| format!("{m:.3} ms"))
            );
        }
        self.memory_table(&mut s);
        let per_arena: Vec<&RunSummary> = self.summaries.iter().filter(|s| s.protocol != "objectnav").collect();
        if !per_arena.is_empty() {
            s.push_str("\n| arena | protocol | planner | result | steps | collisions | coverage | ended |\n");
            s.push_str("|---|---|---|---|---|---|---|---|\n");
            for r in per_arena {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} | {:.0}% | {} |",
                    cell(&r.arena),
                    cell(&r.protocol),
                    cell(&r.planner),
                    if r.passed { "PASS" } else { "FAIL" },
                    r.steps,
                    r.collisions,
                    r.coverage * 100.0,
                    cell(&r.end)
                );
            }
        }
        s
    }
}

/// `text` as one Markdown table cell: a `|` escaped and a line break made
/// a space, so a name read from an eval file cannot break the table.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
        .replace(['\n', '\r'], " ")
        .chars()
        .map(|c| if c.is_control() || nav_core::bounded::is_bidi_control(c) { '?' } else { c })
        .collect()
}

impl EvalReport {
    /// The ObjectNav memory table: oscillation, revisits and how the places
    /// followed the rooms, per configuration.
    fn memory_table(&self, s: &mut String) {
        let rows: Vec<(&Aggregate, &PlaceTotals)> =
            self.aggregates.iter().filter_map(|a| a.places.as_ref().map(|p| (a, p))).collect();
        if rows.is_empty() {
            return;
        }
        s.push_str(
            "\n| configuration | episodes | ABABA+STUCK/ep | revisit ratio | scene analyses/ep | place accuracy | places per room entry | median switch lag (steps) | scene analyses per 100 steps |\n",
        );
        s.push_str("|---|---|---|---|---|---|---|---|---|\n");
        let opt = |v: Option<f64>, digits: usize| v.map_or("n/a".to_string(), |x| format!("{x:.digits$}"));
        for (a, p) in rows {
            let _ = writeln!(
                s,
                "| {} | {} | {:.2} | {} | {:.1} | {} | {} | {} | {} |",
                cell(&a.configuration),
                a.episodes,
                a.ababa + a.stuck,
                opt(p.revisit_ratio(), 2),
                a.scene_calls,
                opt(p.accuracy(), 2),
                opt(p.places_per_entry(), 2),
                opt(p.median_lag(), 1),
                opt(p.scene_per_100(), 1),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_the_suite_once_whatever_the_count() {
        let suite: Vec<u32> = (0..23).collect();
        for count in 1..=7 {
            let mut all: Vec<u32> = (1..=count).flat_map(|k| shard(suite.clone(), k, count)).collect();
            all.sort_unstable();
            assert_eq!(all, suite, "{count} shards");
        }
        assert!(shard(suite.clone(), 0, 3).is_empty());
        assert!(shard(suite, 4, 3).is_empty());
    }
}
