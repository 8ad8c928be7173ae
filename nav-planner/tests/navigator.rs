//! Integration tests of the three Navigator loops in the built-in simulator
//! with scripted model doubles (issue 7, "Tests"): each loop reaches its
//! goal; garbage replies lead to the documented fallback and the run goes
//! on; a model that goes silent stops the robot within 3 s of simulated
//! time and hands over to the frontier fallback after 10 s; pause stops
//! motion at once; the step log has one parseable line per step.
//!
//! - `doubles`: the model doubles (answers computed from the request text)
//!   and the episode specs;
//! - `objectnav`, `candidates`, `explore`: one module per loop;
//! - `step_log`: the log file, complete and parseable when a run is cut short.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "navigator/candidates.rs"]
mod candidates;
#[path = "navigator/candidates_protocol.rs"]
mod candidates_protocol;
#[path = "navigator/doubles.rs"]
mod doubles;
#[path = "navigator/explore.rs"]
mod explore;
#[path = "navigator/explore_latency.rs"]
mod explore_latency;
#[path = "navigator/explore_memory.rs"]
mod explore_memory;
#[path = "navigator/objectnav.rs"]
mod objectnav;
#[path = "navigator/objectnav_goal.rs"]
mod objectnav_goal;
#[path = "navigator/objectnav_memory.rs"]
mod objectnav_memory;
#[path = "navigator/step_log.rs"]
mod step_log;

use nav_planner::navigator::episode::{EpisodeSpec, RunSummary, run_episode};
use nav_planner::navigator::{StepLog, StepRecord};
use serde_json::Value;

async fn run(spec: &EpisodeSpec) -> (RunSummary, Vec<StepRecord>) {
    let mut log = StepLog::memory();
    let summary = run_episode(spec, &mut log, &mut |_| {}).await.unwrap();
    (summary, log.records().to_vec())
}

fn events<'a>(records: &'a [StepRecord], kind: &'a str) -> impl Iterator<Item = (&'a StepRecord, &'a Value)> + 'a {
    records.iter().flat_map(move |r| r.events.iter().filter(move |e| e["event"] == kind).map(move |e| (r, e)))
}

fn assert_consecutive(records: &[StepRecord]) {
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.step, i as u64, "step numbers are consecutive from 0");
    }
}
