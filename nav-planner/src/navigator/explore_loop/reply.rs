//! A planner reply applied to the loop state: the call is booked (stats,
//! network monitor, scheduler, the step log's planner record), reports go
//! to the exploration memory, and the action goes through the safety
//! executor to become the active target.

use super::active::{Active, GoalRun};
use super::decision::PendingCall;
use super::state::{LoopState, TickLog, TickView};
use crate::navigator::log::PlannerRecord;
use crate::protocol::PlannerReply;
use crate::protocol::explore::{ExploreDecision, decision_json, rejected_line};
use nav_core::geometry::{Point2, Pose2};
use nav_memory::ActionRecord;
use nav_safety::executor::{ExecutionOutcome, MotionReport, Target};
use nav_safety::tools::StopReason;
use nav_safety::{SafetySensors, ToolCall};
use serde_json::json;

impl LoopState {
    /// Applies the reply to `call`, as this tick sees it. Discoveries go to
    /// the exploration memory from any reply. A failed call (a fallback) is
    /// no response: the loop keeps waiting and the watchdog tiers run —
    /// unless the model answered with invalid tool calls: that is an answer
    /// refused like an unsafe call (the action in progress ends, no new
    /// decision for the refusal cooldown), and the next prompt says why
    /// each call was rejected. A
    /// reply with only discoveries is an answer that leaves the action in
    /// progress running. Any other good one replaces the action in
    /// progress; `path_speed` sets a navigation goal's deadline.
    pub(super) fn apply_reply(
        &mut self,
        reply: PlannerReply<ExploreDecision>,
        call: &PendingCall,
        tick: &TickView<'_>,
        out: &mut TickLog,
        path_speed: f64,
    ) {
        let ok = self.book_call(&reply, call, tick.now, out);
        let d = reply.decision;
        self.remember(&d, tick.pose, out);
        self.note_rejected(&d, out);
        if !ok {
            if !d.rejected.is_empty() {
                self.finish_active(tick.pose, tick.now);
                self.safety.hold_off(tick.now);
            }
            return;
        }
        if d.action.is_communication() {
            return; // only discoveries: the action in progress goes on
        }
        let Some(scan) = tick.scan else {
            // nothing can be checked against the LiDAR: the robot stays held, and no new decision
            // comes before the cooldown (a blind sensor does not become a loop of calls)
            self.safety.hold_off(tick.now);
            let reason = self.safety.sensing_failure().unwrap_or("no LiDAR scan").to_owned();
            out.events.push(json!({"event": "decision_dropped", "reason": reason}));
            return;
        };
        // a new decision replaces the running one
        self.finish_active(tick.pose, tick.now);
        // frontier ids mean the list the model was shown, not today's
        let sensors = SafetySensors::from_stamped(scan, tick.pose, tick.now).with_frontiers(&call.frontiers);
        let exec = self.safety.execute(&d.action, &sensors);
        if exec.feedback.safety_override {
            out.events.push(
                json!({"event": "safety_override", "tool": d.action.name(), "message": exec.feedback.safety_message}),
            );
        }
        self.start(exec, &d.action, tick, out, path_speed);
    }

    /// Books a finished call: statistics, network latency, the scheduler,
    /// the planner record (and a fallback event). True when the call
    /// succeeded. A reply with invalid tool calls only is a fallback, but
    /// the model did answer: the network monitor and the watchdog hear it.
    fn book_call(
        &mut self,
        reply: &PlannerReply<ExploreDecision>,
        call: &PendingCall,
        now: f64,
        out: &mut TickLog,
    ) -> bool {
        let r = &reply.record;
        self.stats.add_call(r);
        let ok = r.fallback.is_none();
        let answered = ok || !reply.decision.rejected.is_empty();
        let latency_s = (now - call.started_s).max(r.latency_ms / 1000.0);
        self.safety.call_finished(now, latency_s, answered);
        // every request the call made counts in the statistics line, not only its first
        let sent = r.vlm_calls + r.vlm_failures;
        if sent > 1 {
            self.safety.extra_requests(now, sent - 1);
        }
        out.tool = Some(reply.decision.action.name());
        out.planner = Some(PlannerRecord::of(r, decision_json(&reply.decision.action)));
        if let Some(reason) = &r.fallback {
            out.events.push(json!({"event": "fallback", "reason": reason}));
        }
        ok
    }

    /// Invalid tool calls of the reply: counted, logged, and kept for the
    /// next prompt with the reason each was rejected.
    fn note_rejected(&mut self, d: &ExploreDecision, out: &mut TickLog) {
        for f in &d.rejected {
            self.stats.invalid_tool_calls += 1;
            out.events.push(json!({"event": "invalid_tool_call", "command": f.original_command,
                                    "message": f.safety_message}));
            self.rejected.push(rejected_line(f));
        }
    }

    /// Discoveries and the perception sub-call's result go to the
    /// exploration memory.
    fn remember(&mut self, d: &ExploreDecision, pose: Pose2, out: &mut TickLog) {
        for r in &d.reports {
            if let ToolCall::ReportDiscovery { label, notes, significance } = r {
                self.memory.record_discovery(label, notes, *significance, pose.position());
                out.events.push(json!({"event": "discovery", "label": label, "notes": notes,
                                        "significance": significance.as_str()}));
            }
        }
        if let Some((p, result)) = &d.perception {
            self.memory.update_after_action(ActionRecord::new(
                p.name(),
                &p.args_text(),
                &perception_summary(result),
                pose.position(),
            ));
        }
    }

    /// Makes the executed call the action in progress; a call with nothing
    /// to execute is closed at once.
    fn start(
        &mut self,
        exec: ExecutionOutcome,
        action: &ToolCall,
        tick: &TickView<'_>,
        out: &mut TickLog,
        path_speed: f64,
    ) {
        let (pose, now) = (tick.pose, tick.now);
        self.active = match &exec.target {
            Target::Velocity(v) => Active::Velocity { v: *v, started_s: now },
            Target::NavGoal(g) => {
                out.events.push(json!({"event": "nav_goal", "x": g.x, "y": g.y, "frontier_id": g.frontier_id}));
                Active::Goal(GoalRun::new(Point2::new(g.x, g.y), pose, now, path_speed))
            }
            Target::Observe(_) => Active::Hold { until_s: now + 1.0 },
            Target::Stop(s) => {
                if matches!(action, ToolCall::StopRobot { reason: StopReason::ExplorationComplete }) {
                    self.complete = true;
                }
                out.events.push(json!({"event": "stop", "reason": s.reason}));
                Active::Idle
            }
            Target::PathCheck(_) | Target::Report(_) => Active::Idle,
        };
        self.motion = MotionReport::default();
        self.outcome = Some(exec);
        if self.active.is_idle() {
            // nothing to execute: close the record now
            self.finish_active(pose, now);
        }
    }
}

/// A perception sub-call's result (the JSON the model was given) as the
/// short outcome the memory lists: `clear`, `not clear: wall at 0.8m`, the
/// start of a scene description, or the error.
fn perception_summary(result: &str) -> String {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(result) else { return result.to_string() };
    if let Some(clear) = v["clear"].as_bool() {
        if clear {
            return "clear".into();
        }
        let kind = v["obstacle_type"].as_str().unwrap_or("obstacle");
        return match v["obstacle_distance_m"].as_f64() {
            Some(d) => format!("not clear: {kind} at {d:.1}m"),
            None => format!("not clear: {kind}"),
        };
    }
    v["description"].as_str().or_else(|| v["error"].as_str()).unwrap_or(result).to_string()
}
