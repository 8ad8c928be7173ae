//! The perception stage and the low-level policy served by a Python worker
//! process (docs/BRIDGE.md, "Workers"): [`ExternalGoalPerception`] asks a
//! detector (GroundingDINO + SAM, Habitat's semantic sensor, the bundled
//! colour detector) with the op `detect`; [`ExternalPolicy`] lets a learned
//! pixel-goal policy (PixelNav, the bundled rule policy) choose each
//! discrete action with the op `act`.
//!
//! Both send the current view (RGB, depth) with each request, so a worker
//! serves the built-in simulator, a bridge simulator or a robot alike, and
//! both treat a worker's reply like a model's: validated, and a bad reply,
//! a timeout or a dead worker becomes the documented fallback (recorded,
//! never a panic or a hang). Neither reads the simulator's objects.
//!
//! A worker is shared ([`SharedWorker`]) so one process (one model load)
//! serves every episode of a run.

use crate::navigator::policy::{LowLevelPolicy, PolicyAction, PolicyGoal, PolicyObservation, PolicyStop};
use crate::protocol::CallRecord;
use crate::protocol::perception::{
    GoalPerception, GoalSighting, PerceptionInput, PerceptionNeeds, PerceptionReply, validate_perception,
};
use async_trait::async_trait;
use nav_core::action::{Action, StepConfig};
use nav_core::geometry::{Pose2, normalize_angle};
use nav_core::lidar::corridor_clearance;
use nav_hal::HalError;
use nav_hal::bridge::{BridgeEndpoint, BridgeWorker, WorkerConfig, view_json};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::Mutex;

/// A worker connection shared by the parts built for each episode.
pub type SharedWorker = Arc<Mutex<BridgeWorker>>;

/// Longest worker reply kept in the step log, characters.
const MAX_LOGGED_REPLY: usize = 2000;

/// Starts (or attaches to) a worker serving `op` and wraps it for sharing.
pub async fn connect_worker(
    endpoint: &BridgeEndpoint,
    role: &str,
    op: &str,
    config: WorkerConfig,
) -> Result<SharedWorker, HalError> {
    Ok(Arc::new(Mutex::new(BridgeWorker::connect(endpoint, role, op, config).await?)))
}

fn logged(reply: &Map<String, Value>) -> String {
    // a worker inherits the credential variables and may echo one
    let text = crate::vlm::scrub_credentials(&Value::Object(reply.clone()).to_string());
    match text.char_indices().nth(MAX_LOGGED_REPLY) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

/// The perception stage answered by a detector worker (op `detect`). See
/// the [module docs](self).
#[derive(Debug, Clone)]
pub struct ExternalGoalPerception {
    worker: SharedWorker,
    min_score: f64,
}

impl ExternalGoalPerception {
    /// A perception stage asking `worker`; answers with a `score` below
    /// `min_score` count as "not seen".
    pub fn new(worker: SharedWorker, min_score: f64) -> Self {
        Self { worker, min_score }
    }

    /// Parses a `detect` result for an image `width` × `height`: the
    /// model's perception answer (`seen`, `bbox`, checked the same way),
    /// plus an optional `score` in [0, 1].
    pub fn parse_reply(
        reply: &Map<String, Value>,
        width: usize,
        height: usize,
        min_score: f64,
    ) -> Result<Option<[u32; 4]>, String> {
        let answer = validate_perception(reply, width, height).map_err(|e| e.to_string())?;
        let score = match reply.get("score") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_f64() {
                Some(s) if (0.0..=1.0).contains(&s) => Some(s),
                _ => return Err(format!("score: expected a number in [0, 1], got {v}")),
            },
        };
        Ok(answer.bbox.filter(|_| score.is_none_or(|s| s >= min_score)))
    }
}

#[async_trait]
impl GoalPerception for ExternalGoalPerception {
    fn name(&self) -> String {
        match self.worker.try_lock() {
            Ok(w) => format!("external:{}", w.info().name),
            Err(_) => "external".into(),
        }
    }

    fn needs(&self) -> PerceptionNeeds {
        PerceptionNeeds { rgb: true, depth: true, labels: false }
    }

    /// Sends the view; a bad reply, a worker error, a timeout or a dead
    /// worker is "not seen", recorded as a fallback with its reason.
    async fn locate(&mut self, input: &PerceptionInput<'_>) -> PerceptionReply {
        let mut record = CallRecord::default();
        let Some(frame) = input.frame else {
            record.fallback = Some("no camera image".into());
            return PerceptionReply { sighting: None, record };
        };
        let (w, h) = (frame.frame.width(), frame.frame.height());
        let mut fields = Map::new();
        fields.insert("target".into(), json!(input.target));
        fields.insert("view".into(), view_json(Some(frame), input.depth));
        let started = Instant::now();
        let result = self.worker.lock().await.call("detect", fields).await;
        record.latency_ms = started.elapsed().as_secs_f64() * 1e3;
        let parsed = match result {
            Ok(reply) => {
                record.raw.push(logged(&reply));
                Self::parse_reply(&reply, w, h, self.min_score)
            }
            Err(e) => Err(e.to_string()),
        };
        match parsed.map_err(|reason| crate::vlm::scrub_credentials(&reason)) {
            Ok(Some(b)) => PerceptionReply { sighting: Some(GoalSighting::from_box(b, frame, input.depth)), record },
            Ok(None) => PerceptionReply { sighting: None, record },
            Err(reason) => {
                tracing::warn!(%reason, "external perception failed, treating the target as not seen");
                record.errors.push(reason.clone());
                record.fallback = Some(reason);
                PerceptionReply { sighting: None, record }
            }
        }
    }
}

/// Settings of [`ExternalPolicy`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExternalPolicyConfig {
    /// Step sizes of the action space.
    pub step: StepConfig,
    /// Half width of the corridor that must be free for a `forward`
    /// (robot radius plus a margin), metres (0.22).
    pub corridor_half_width_m: f64,
    /// Extra free distance required beyond one step, metres (0.05).
    pub forward_margin_m: f64,
    /// The target counts as reached (the worker is told `stop_suggested`,
    /// and its `stop` is the final STOP) at this perceived range, metres (0.8).
    pub stop_distance_m: f64,
    /// Run the perception stage every this many actions (1: the goal
    /// pixel always belongs to the view the worker gets).
    pub reperceive_every: u32,
    /// Hand back to the planner after this many actions on one goal (60).
    pub max_steps_per_goal: u32,
}

impl ExternalPolicyConfig {
    /// The settings for a task: its step sizes, the forward corridor's
    /// half width and the success distance (the stopping distance keeps a
    /// 0.2 m margin inside it, at least 0.3 m).
    pub fn for_task(step: StepConfig, corridor_half_width_m: f64, success_distance_m: f64) -> Self {
        Self { step, corridor_half_width_m, stop_distance_m: (success_distance_m - 0.2).max(0.3), ..Self::default() }
    }
}

impl Default for ExternalPolicyConfig {
    fn default() -> Self {
        Self {
            step: StepConfig::default(),
            corridor_half_width_m: 0.22,
            forward_margin_m: 0.05,
            stop_distance_m: 0.8,
            reperceive_every: 1,
            max_steps_per_goal: 60,
        }
    }
}

/// The low-level policy chosen by a policy worker (op `act`), under
/// navkit's guards: a `forward` into an obstacle closer than one step (by
/// the range sensor) is vetoed and hands back to the planner, the per-goal
/// step budget and the loop's episode budget apply, and a `stop` is the
/// episode's final STOP only when the planner said `goal_flag` and the
/// perception stage puts the target within [`ExternalPolicyConfig::stop_distance_m`].
/// See the [module docs](self).
#[derive(Debug)]
pub struct ExternalPolicy {
    worker: SharedWorker,
    config: ExternalPolicyConfig,
    goal: Option<PolicyGoal>,
    start_yaw: f64,
    steps: u32,
    since_perceive: Option<u32>,
    sighting: Option<GoalSighting>,
}

impl ExternalPolicy {
    /// A policy asking `worker`.
    pub fn new(worker: SharedWorker, config: ExternalPolicyConfig) -> Self {
        Self { worker, config, goal: None, start_yaw: 0.0, steps: 0, since_perceive: None, sighting: None }
    }

    fn within_reach(&self) -> bool {
        self.sighting.as_ref().and_then(|s| s.range_m).is_some_and(|r| r <= self.config.stop_distance_m)
    }

    fn forward_clear(&self, obs: &PolicyObservation<'_>) -> bool {
        let need = self.config.step.forward_m + self.config.forward_margin_m;
        let free = match obs.scan {
            Some(scan) => f64::from(corridor_clearance(scan, self.config.corridor_half_width_m)),
            None => obs.forward_clearance_m.unwrap_or(f64::INFINITY),
        };
        free > need
    }

    /// The `act` request's fields.
    fn request(&self, goal: &PolicyGoal, obs: &PolicyObservation<'_>) -> Map<String, Value> {
        let turned = normalize_angle(obs.pose.yaw - self.start_yaw);
        let s = self.sighting.as_ref();
        let mut fields = Map::new();
        fields.insert("target".into(), json!(goal.target));
        fields.insert(
            "goal".into(),
            json!({
                "goal_flag": goal.goal_flag,
                "angle_deg": normalize_angle(goal.angle_rad - turned).to_degrees(),
                "pixel": s.map(|s| s.pixel),
                "bbox": s.and_then(|s| s.bbox),
                "range_m": s.and_then(|s| s.range_m),
                "stop_suggested": goal.goal_flag && self.within_reach(),
            }),
        );
        fields.insert("steps_since_goal".into(), json!(self.steps));
        fields.insert("view".into(), view_json(obs.frame, obs.depth));
        fields
    }

    /// What a worker's `stop` means here.
    fn stop_kind(&self, goal_flag: bool) -> PolicyStop {
        match (goal_flag, &self.sighting) {
            (true, _) if self.within_reach() => PolicyStop::Reached,
            (true, None) => PolicyStop::NotSeen,
            _ => PolicyStop::Arrived,
        }
    }
}

/// Parses an `act` result: `{"action": "forward" | "turn_left" |
/// "turn_right" | "stop", ...}` (other fields, such as `why`, are ignored).
pub fn parse_act_reply(reply: &Map<String, Value>) -> Result<Action, String> {
    match reply.get("action") {
        Some(Value::String(s)) => match s.as_str() {
            "forward" => Ok(Action::Forward),
            "turn_left" => Ok(Action::TurnLeft),
            "turn_right" => Ok(Action::TurnRight),
            "stop" => Ok(Action::Stop),
            other => Err(format!("action: expected forward, turn_left, turn_right or stop, got {other:?}")),
        },
        Some(other) => Err(format!("action: expected a string, got {other}")),
        None => Err("action: missing".into()),
    }
}

#[async_trait]
impl LowLevelPolicy for ExternalPolicy {
    fn name(&self) -> &str {
        "external"
    }

    fn needs_view(&self) -> PerceptionNeeds {
        PerceptionNeeds { rgb: true, depth: true, labels: false }
    }

    fn reset(&mut self, goal: &PolicyGoal, pose: Pose2) {
        self.goal = Some(goal.clone());
        self.start_yaw = pose.yaw;
        self.steps = 0;
        self.since_perceive = None;
        self.sighting = None;
    }

    fn perceived(&mut self, sighting: Option<&GoalSighting>, _pose: Pose2) {
        self.sighting = sighting.cloned();
        self.since_perceive = Some(0);
    }

    /// Perceives when due, then asks the worker. A failed request or an
    /// invalid reply hands back to the planner (`no_progress`, logged).
    async fn act(&mut self, obs: &PolicyObservation<'_>) -> PolicyAction {
        let Some(goal) = self.goal.clone() else {
            return PolicyAction::Done(PolicyStop::NoProgress);
        };
        if self.steps >= self.config.max_steps_per_goal {
            return PolicyAction::Done(PolicyStop::NoProgress);
        }
        if self.since_perceive.is_none_or(|n| n >= self.config.reperceive_every.max(1)) {
            return PolicyAction::Perceive;
        }
        let fields = self.request(&goal, obs);
        let reply = self.worker.lock().await.call("act", fields).await;
        let action = match reply.map_err(|e| e.to_string()).and_then(|r| parse_act_reply(&r)) {
            Ok(a) => a,
            Err(reason) => {
                let reason = crate::vlm::scrub_credentials(&reason);
                tracing::warn!(%reason, "external policy failed, handing back to the planner");
                return PolicyAction::Done(PolicyStop::NoProgress);
            }
        };
        match action {
            Action::Stop => PolicyAction::Done(self.stop_kind(goal.goal_flag)),
            Action::Forward if !self.forward_clear(obs) => PolicyAction::Done(PolicyStop::Blocked),
            a => {
                self.steps += 1;
                self.since_perceive = self.since_perceive.map(|n| n + 1);
                PolicyAction::Step(a)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn detect_replies_are_validated_like_the_models() {
        let ok = obj(json!({"seen": true, "bbox": [1, 2, 3, 4], "score": 0.7}));
        assert_eq!(ExternalGoalPerception::parse_reply(&ok, 10, 10, 0.0), Ok(Some([1, 2, 3, 4])));
        assert_eq!(ExternalGoalPerception::parse_reply(&ok, 10, 10, 0.8), Ok(None), "below min_score");
        let unseen = obj(json!({"seen": false, "bbox": null}));
        assert_eq!(ExternalGoalPerception::parse_reply(&unseen, 10, 10, 0.0), Ok(None));
        for (bad, field) in [
            (json!({"seen": true, "bbox": [1, 2, 30, 4]}), "bbox[2]"),
            (json!({"seen": true}), "bbox"),
            (json!({"seen": "yes", "bbox": null}), "seen"),
            (json!({"seen": true, "bbox": [1, 2, 3, 4], "score": 1.5}), "score"),
            (json!({"seen": true, "bbox": [1, 2, 3, 4], "score": "high"}), "score"),
        ] {
            let err = ExternalGoalPerception::parse_reply(&obj(bad.clone()), 10, 10, 0.0).unwrap_err();
            assert!(err.contains(field), "{bad}: {err}");
        }
    }

    #[test]
    fn act_replies_name_one_of_the_four_actions() {
        assert_eq!(parse_act_reply(&obj(json!({"action": "turn_left", "why": "x"}))), Ok(Action::TurnLeft));
        assert_eq!(parse_act_reply(&obj(json!({"action": "stop"}))), Ok(Action::Stop));
        assert!(parse_act_reply(&obj(json!({"action": "jump"}))).unwrap_err().contains("jump"));
        assert!(parse_act_reply(&obj(json!({"action": 3}))).unwrap_err().contains("string"));
        assert!(parse_act_reply(&obj(json!({}))).unwrap_err().contains("missing"));
    }

    proptest! {
        #[test]
        fn parsing_never_panics_and_boxes_stay_inside(
            seen in any::<bool>(),
            b in proptest::collection::vec(-5i64..80, 0..6),
            score in proptest::option::of(-1.0f64..2.0),
            action in "[a-z_]{0,12}",
        ) {
            let mut m = Map::new();
            m.insert("seen".into(), json!(seen));
            m.insert("bbox".into(), json!(b));
            if let Some(s) = score {
                m.insert("score".into(), json!(s));
            }
            if let Ok(Some(bx)) = ExternalGoalPerception::parse_reply(&m, 64, 48, 0.0) {
                prop_assert!(bx[0] <= bx[2] && bx[2] < 64 && bx[1] <= bx[3] && bx[3] < 48);
            }
            let _ = parse_act_reply(&obj(json!({"action": action})));
        }
    }
}
