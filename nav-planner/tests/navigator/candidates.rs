//! The candidates loop: the goal, STOP fallbacks for garbage replies and
//! for an inference timeout, and the run going on after them.

use crate::doubles::{candidates_answer, candidates_spec};
use crate::{assert_consecutive, events, run};
use async_trait::async_trait;
use nav_planner::navigator::candidates_loop::CandidatesLoopConfig;
use nav_planner::vlm::{BackendInfo, FnVlm, VisionLanguageModel, VlmError, VlmRequest, VlmResponse};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

#[tokio::test]
async fn candidates_reaches_the_goal_choosing_the_best_candidate() {
    let vlm = Arc::new(FnVlm::new(|r: &VlmRequest| Ok(VlmResponse::from_text(candidates_answer(r).to_string()))));
    let (summary, records) = run(&candidates_spec(vlm)).await;
    assert!(summary.success && summary.passed, "{}", summary.report());
    assert_eq!((summary.end.as_str(), summary.collisions, summary.fallbacks), ("goal_reached", 0, 0));
    assert_consecutive(&records);
    let last = records.last().unwrap();
    assert!(events(std::slice::from_ref(last), "goal_reached").next().is_some());
    let gt = last.gt_pose.unwrap();
    assert!(((gt.x - 1.5).powi(2) + (gt.y - 1.5).powi(2)).sqrt() <= 0.3);
    // every cycle but the last asked the model and moved to the candidate it named
    for r in &records[1..records.len() - 1] {
        let p = r.planner.as_ref().unwrap();
        assert_eq!(p.parsed["action"]["type"], "MOVE_TO");
        assert_eq!(r.action, format!("MOVE_TO {}", p.parsed["action"]["target_id"].as_str().unwrap()));
    }
    assert_eq!(summary.vlm_calls as usize, records.len() - 2);
}

#[tokio::test]
async fn candidates_garbage_replies_fall_back_to_stop_and_the_run_goes_on() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let vlm = Arc::new(FnVlm::new(move |r: &VlmRequest| {
        Ok(VlmResponse::from_text(match c.fetch_add(1, Ordering::SeqCst) {
            1 => "I would rather not say.".to_string(),
            2 => r#"{"action": {"type": "FLY", "target_id": "c1"}, "fallback": {"if_failed": "STOP"}}"#.to_string(),
            _ => candidates_answer(r).to_string(),
        }))
    }));
    let (summary, records) = run(&candidates_spec(vlm)).await;
    for cycle in [2, 3] {
        let r = &records[cycle];
        let p = r.planner.as_ref().unwrap();
        let reason = p.fallback.as_deref().expect("a fallback with its reason");
        assert_eq!(p.parsed["action"]["type"], "STOP");
        assert_eq!(p.parsed["fallback"]["if_failed"], "STOP");
        assert!(p.parsed["explanation"].as_str().unwrap().starts_with("Fallback: "));
        assert_eq!(r.action, "STOP");
        assert!(r.events.iter().any(|e| e["event"] == "fallback" && e["reason"] == reason), "{:?}", r.events);
        // the robot held still for the fallback cycle
        assert_eq!(r.gt_pose, records[cycle - 1].gt_pose);
    }
    assert!(records[3].planner.as_ref().unwrap().fallback.as_deref().unwrap().contains("FLY"));
    assert_eq!(summary.fallbacks, 2);
    assert!(summary.success, "the run goes on after the fallbacks: {}", summary.report());
    assert_eq!(summary.end, "goal_reached");
    assert_consecutive(&records);
}

/// A candidates model that takes 2 s (tokio time) to answer its `slow`-th call.
struct SlowOnce {
    calls: AtomicUsize,
    slow: usize,
}

#[async_trait]
impl VisionLanguageModel for SlowOnce {
    async fn complete(&self, req: VlmRequest) -> Result<VlmResponse, VlmError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == self.slow {
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        Ok(VlmResponse::from_text(candidates_answer(&req).to_string()))
    }
    fn describe(&self) -> BackendInfo {
        BackendInfo::new("test", "slow-once")
    }
}

#[tokio::test(start_paused = true)]
async fn candidates_inference_timeout_falls_back_and_lowers_confidence() {
    let mut spec = candidates_spec(Arc::new(SlowOnce { calls: AtomicUsize::new(0), slow: 1 }));
    spec.candidates = CandidatesLoopConfig { inference_timeout_s: 0.5, ..CandidatesLoopConfig::default() };
    let (summary, records) = run(&spec).await;
    let r = &records[2];
    let p = r.planner.as_ref().unwrap();
    assert_eq!(p.fallback.as_deref(), Some("inference timed out after 0.5 s"));
    assert_eq!(p.parsed["action"]["type"], "STOP");
    assert_eq!(records[1].info["confidence"], 1.0);
    assert!((r.info["confidence"].as_f64().unwrap() - 0.7).abs() < 1e-9);
    assert_eq!(summary.fallbacks, 1);
    assert!(summary.success, "{}", summary.report());
}
