//! The explore loop's exploration memory (issue 16 item 2): discoveries from
//! any reply (one with only `report_discovery` is an answer, not a failed
//! call), rooms on `significance = room`, dead ends from failed moves, each
//! room's explored percentage from the map, and the PREVIOUS ACTION line
//! naming the finished action next to its own result.

use crate::doubles::text_of;
use nav_hal::sim::{SimConfig, SimHal, SimWorld};
use nav_memory::ExplorationMemory;
use nav_planner::navigator::explore_loop::{ExploreLoop, ExploreLoopConfig, ExploreOutcome, ExploreSignals, Pacing};
use nav_planner::navigator::{RunContext, StepLog};
use nav_planner::protocol::explore::{ExplorePromptConfig, VlmExplorePlanner};
use nav_planner::vlm::{RawToolCall, ScriptedVlm};
use nav_safety::SafetyConfig;
use serde_json::json;
use std::sync::Arc;

/// Runs `vlm` in the `exploration` arena (text only) for `max_decisions`
/// decisions, starting from `memory` when given.
async fn run(vlm: Arc<ScriptedVlm>, max_decisions: u32, memory: Option<ExplorationMemory>) -> ExploreOutcome {
    let world = SimWorld::builtin("exploration", SimConfig::default()).unwrap();
    let clock = world.clock();
    let mut hal = SimHal::new(world);
    let planner = VlmExplorePlanner::new(
        vlm,
        ExplorePromptConfig { text_only: true, ..ExplorePromptConfig::default() },
        SafetyConfig::default(),
    );
    let cfg = ExploreLoopConfig {
        max_time_s: 120.0,
        max_decisions,
        pacing: Pacing::Simulated { time_scale: 1000.0 },
        use_camera: false,
        ..ExploreLoopConfig::default()
    };
    let mut lp = ExploreLoop::new(cfg, Box::new(planner), ExploreSignals::default()).unwrap();
    if let Some(m) = memory {
        lp = lp.with_memory(m);
    }
    let mut log = StepLog::memory();
    let mut ctx = RunContext::new(clock.as_ref(), &mut log);
    lp.run(&mut hal, &mut ctx).await.unwrap()
}

fn report(label: &str, significance: &str) -> RawToolCall {
    RawToolCall::new("r", "report_discovery", json!({"label": label, "notes": "seen", "significance": significance}))
}

#[tokio::test]
async fn a_reply_with_only_a_discovery_is_an_answer_and_the_room_is_remembered() {
    let vlm = Arc::new(
        ScriptedVlm::new()
            .then_tool_calls(vec![report("Hallway", "room")])
            .then_tool_calls(vec![
                report("coat rack", "landmark"),
                RawToolCall::new("m", "rotate", json!({"degrees": 90})),
            ])
            .then_tool_call("stop_robot", json!({"reason": "exploration_complete"})),
    );
    let out = run(Arc::clone(&vlm), 3, None).await;
    assert_eq!(out.stats.fallbacks, 0, "a report-only reply is no failed call");
    let m = &out.memory;
    assert_eq!(m.current_room(), "hallway");
    assert_eq!(m.rooms().iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["start", "hallway"]);
    assert_eq!(m.rooms()[1].objects, ["coat rack"]);
    assert_eq!(m.total_discoveries(), 2);
    // the room the robot is in has been seen by the LiDAR
    let pct = m.rooms()[1].explored_pct;
    assert!(pct > 20.0 && pct <= 100.0, "hallway {pct}% explored");
    // the third request hears about the turn, named next to its own result
    let third = text_of(&vlm.requests()[2]);
    let prev = third.lines().find(|l| l.starts_with("PREVIOUS ACTION: ")).unwrap();
    assert!(prev.starts_with("PREVIOUS ACTION: rotate(90) → "), "{prev}");
    assert!(third.contains("rooms (% explored) start "), "{third}");
}

#[tokio::test]
async fn failed_moves_become_dead_ends_and_a_saved_session_goes_on() {
    // a goal beyond the arena's wall, 20 m to the robot's right (east of a robot facing north)
    let into_wall = json!({"goal_type": "coordinates", "frontier_id": null, "x": 20.0, "y": 0.0, "reason": "east"});
    let vlm = Arc::new(
        ScriptedVlm::new()
            .then_tool_call("navigate_to_goal", into_wall.clone())
            .then_tool_call("navigate_to_goal", into_wall)
            .then_tool_call("stop_robot", json!({"reason": "exploration_complete"})),
    );
    let out = run(Arc::clone(&vlm), 3, None).await;
    let dead: Vec<_> = out.memory.dead_ends().collect();
    let heard: Vec<String> = vlm
        .requests()
        .iter()
        .map(text_of)
        .filter_map(|t| t.lines().find(|l| l.starts_with("PREVIOUS")).map(String::from))
        .collect();
    assert!(!dead.is_empty(), "a refused move is a dead end: {heard:?}");
    assert!(["blocked", "unreachable", "no progress"].contains(&dead[0].reason.as_str()), "{:?}", dead[0]);
    // right of a robot facing north (compass 0) is east: 90°
    let heading = text_of(&vlm.requests()[0]);
    assert!(heading.contains("heading 0° N"), "{heading}");
    assert!((dead[0].direction_deg - 90.0).abs() < 20.0, "{:?}", dead[0]);
    let failed = heard.iter().find(|l| l.contains("navigate_to_goal(x 20.0, y 0.0) → ")).expect("the goal's result");
    assert!(failed.contains("→ failed (") || failed.contains("→ SAFETY OVERRIDE"), "{failed}");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.yaml");
    out.memory.save(&path).unwrap();
    let loaded = ExplorationMemory::load(&path).unwrap();
    let vlm = Arc::new(ScriptedVlm::new().then_tool_call("stop_robot", json!({"reason": "exploration_complete"})));
    let again = run(Arc::clone(&vlm), 1, Some(loaded)).await;
    let first = text_of(&vlm.requests()[0]);
    assert!(first.contains("dead ends ") && !first.contains("dead ends none"), "the next session knows: {first}");
    assert!(again.memory.duration_s() > out.memory.duration_s(), "its clock goes on");
    assert_eq!(again.memory.dead_ends().len(), out.memory.dead_ends().len());
}
