//! The step log: one complete, parseable line per step, also when a run
//! ends on its budget, is dropped mid-way, or is killed mid-write.

use crate::assert_consecutive;
use crate::doubles::{objectnav_model, objectnav_spec, to_frontier};
use nav_hal::sim::{SimConfig, SimHal, SimWorld};
use nav_planner::navigator::episode::run_episode;
use nav_planner::navigator::explore_loop::{ExploreLoop, ExploreLoopConfig, ExploreSignals, Pacing};
use nav_planner::navigator::{LogError, RunContext, StepLog, StepRecord, read_log};
use nav_planner::protocol::explore::{ExplorePromptConfig, VlmExplorePlanner};
use nav_planner::vlm::ScriptedVlm;
use nav_safety::SafetyConfig;
use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

/// The lines of a log file.
fn lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().map(str::to_string).collect()
}

#[tokio::test]
async fn the_step_log_has_one_parseable_line_per_step_even_when_a_run_is_cut_short() {
    let dir = tempfile::tempdir().unwrap();

    // a step budget that ends the episode early: start + 5 steps, each its own complete line
    let path = dir.path().join("objectnav.jsonl");
    let mut log = StepLog::create(&path).unwrap();
    let spec = objectnav_spec(objectnav_model(), "toilet", 5);
    let summary = run_episode(&spec, &mut log, &mut |_| {}).await.unwrap();
    assert_eq!((summary.steps, summary.end.as_str(), summary.success), (5, "step_limit", false));
    let (records, truncated) = read_log(&path).unwrap();
    assert!(!truncated);
    assert_eq!(records.len(), 6);
    assert_eq!(lines(&path).len(), 6);
    assert_consecutive(&records);
    assert_eq!((records[0].action.as_str(), records[0].info["arena"].as_str()), ("start", Some("house_a")));
    assert!(records[1].planner_called && records[1].planner.is_some());
    for (line, r) in lines(&path).iter().zip(&records) {
        assert_eq!(&serde_json::from_str::<StepRecord>(line).unwrap(), r);
    }

    // a run dropped mid-way (as on Ctrl-C): every line written so far is complete
    let path = dir.path().join("explore.jsonl");
    let world = SimWorld::builtin("exploration", SimConfig::default()).unwrap();
    let clock = world.clock();
    let mut hal = SimHal::new(world);
    let vlm = Arc::new(to_frontier(ScriptedVlm::new()).repeat_last());
    let planner = VlmExplorePlanner::new(
        vlm,
        ExplorePromptConfig { text_only: true, ..ExplorePromptConfig::default() },
        SafetyConfig::default(),
    );
    // real-time pacing: 20 ticks a second, so 0.5 s of wall time is about 10 of them
    let config = ExploreLoopConfig { pacing: Pacing::RealTime, use_camera: false, ..ExploreLoopConfig::default() };
    let mut lp = ExploreLoop::new(config, Box::new(planner), ExploreSignals::default()).unwrap();
    let mut log = StepLog::create(&path).unwrap();
    let mut ctx = RunContext::new(clock.as_ref(), &mut log);
    let run = lp.run(&mut hal, &mut ctx);
    assert!(tokio::time::timeout(Duration::from_millis(500), run).await.is_err(), "the run was cut short");
    drop(log);
    let (records, truncated) = read_log(&path).unwrap();
    assert!(!truncated);
    assert!(records.len() >= 3, "{} lines", records.len());
    assert_eq!(records.len(), lines(&path).len());
    assert_consecutive(&records);
    assert!(records[1..].iter().all(|r| r.velocity.is_some()));

    // a line cut mid-write (the process killed): the complete lines still read back
    let text = std::fs::read_to_string(&path).unwrap();
    let cut = text.trim_end().len() - 10;
    std::fs::write(&path, &text[..cut]).unwrap();
    let (partial, truncated) = read_log(&path).unwrap();
    assert!(truncated);
    assert_eq!(partial[..], records[..records.len() - 1]);
    // a broken line that is not the last is an error naming the line
    let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    writeln!(f, "\n{}", serde_json::to_string(&records[0]).unwrap()).unwrap();
    match read_log(&path) {
        Err(LogError::Parse { line, .. }) => assert_eq!(line, records.len()),
        other => panic!("expected a parse error, got {other:?}"),
    }
}
