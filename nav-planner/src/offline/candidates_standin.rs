//! The offline candidates planner: the LLMos pipeline's chooser without a model.
//! It takes the best-scored candidate that has not just failed — recovery
//! candidates first when stuck, the goal's subgoals when there is a goal,
//! frontiers when exploring — and always names a fallback. With nothing
//! left to explore it stops.

use crate::protocol::PlannerReply;
use crate::protocol::candidates::{
    ActionType, CandidateAction, CandidateDecision, CandidateFrame, CandidatePlanner, FallbackAction, FallbackType,
    NavMode,
};
use async_trait::async_trait;
use nav_core::candidates::{Candidate, CandidateKind};
use nav_core::geometry::Point2;

/// See the module docs.
#[derive(Debug, Clone, Default)]
pub struct OfflineCandidatePlanner {
    failed: Vec<(Point2, u32)>,
    last_target: Option<Point2>,
}

impl OfflineCandidatePlanner {
    /// A fresh planner.
    pub fn new() -> Self {
        Self::default()
    }

    fn failures_near(&self, p: Point2) -> u32 {
        self.failed.iter().filter(|(q, _)| q.distance(p) < 0.3).map(|(_, n)| *n).sum()
    }

    fn pick<'a>(&self, cands: &'a [Candidate], kinds: &[CandidateKind]) -> Option<&'a Candidate> {
        cands.iter().filter(|c| kinds.contains(&c.kind) && c.factors.feasibility > 0.0).min_by(|a, b| {
            let fa = self.failures_near(a.position);
            let fb = self.failures_near(b.position);
            fa.cmp(&fb).then(b.score.total_cmp(&a.score))
        })
    }
}

fn decision(
    kind: ActionType,
    target: Option<&Candidate>,
    fallback: Option<&Candidate>,
    why: String,
) -> CandidateDecision {
    CandidateDecision {
        action: CandidateAction { kind, target_id: target.map(|c| c.id.clone()), target_m: None, yaw_deg: None },
        fallback: match fallback {
            Some(f) => FallbackAction { if_failed: FallbackType::Explore, target_id: Some(f.id.clone()) },
            None => FallbackAction { if_failed: FallbackType::RotateTo, target_id: None },
        },
        world_model_update: None,
        explanation: why,
    }
}

#[async_trait]
impl CandidatePlanner for OfflineCandidatePlanner {
    fn name(&self) -> String {
        "offline".to_string()
    }

    async fn decide(&mut self, frame: &CandidateFrame<'_>) -> PlannerReply<CandidateDecision> {
        // Learn from the last action's result.
        if let (Some(last), Some(t)) = (frame.last_action, self.last_target) {
            if last.result != "moved" && last.result != "arrived" {
                match self.failed.iter_mut().find(|(q, _)| q.distance(t) < 0.3) {
                    Some((_, n)) => *n += 1,
                    None => self.failed.push((t, 1)),
                }
            }
        }
        let cands = frame.candidates;
        let frontier = self.pick(cands, &[CandidateKind::Frontier]);
        let d = if frame.mode == NavMode::GoalReached {
            let mut d = decision(ActionType::Stop, None, None, "the goal is reached".into());
            d.fallback.if_failed = FallbackType::Stop;
            d
        } else if let Some(r) = frame.stuck_cycles.and_then(|_| self.pick(cands, &[CandidateKind::Recovery])) {
            decision(ActionType::MoveTo, Some(r), frontier, format!("stuck: retreat to open space at {}", r.id))
        } else if frame.goal.is_some() {
            match self.pick(cands, &[CandidateKind::Subgoal, CandidateKind::Waypoint]) {
                Some(c) => decision(
                    ActionType::MoveTo,
                    Some(c),
                    frontier,
                    format!("{} ({}) leads to the goal", c.id, c.description),
                ),
                None => match frontier {
                    Some(f) => {
                        decision(ActionType::Explore, Some(f), None, "the goal direction is blocked; exploring".into())
                    }
                    None => {
                        let mut d =
                            decision(ActionType::RotateTo, None, None, "no candidate is feasible; turning".into());
                        d.action.yaw_deg = Some(frame.pose.yaw.to_degrees() + 90.0);
                        d
                    }
                },
            }
        } else {
            match frontier {
                Some(f) => {
                    let next = cands.iter().find(|c| c.kind == CandidateKind::Frontier && c.id != f.id);
                    decision(ActionType::Explore, Some(f), next, format!("explore {} ({})", f.id, f.description))
                }
                None => {
                    let mut d = decision(ActionType::Stop, None, None, "no frontier left: exploration complete".into());
                    d.fallback.if_failed = FallbackType::Stop;
                    d
                }
            }
        };
        self.last_target =
            d.action.target_id.as_ref().and_then(|id| cands.iter().find(|c| &c.id == id)).map(|c| c.position);
        PlannerReply::offline(d)
    }
}
