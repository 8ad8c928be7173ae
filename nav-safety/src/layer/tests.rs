use super::*;
use crate::tools::ToolCall;
use serde_json::json;

fn open_scan(stamp_s: f64) -> StampedScan {
    StampedScan { scan: LaserScan::full_circle(360, 0.05, 12.0, f32::INFINITY), stamp_s }
}

/// A wall `d` metres ahead (±30°), open elsewhere.
fn wall_ahead(d: f32, stamp_s: f64) -> StampedScan {
    let mut s = open_scan(stamp_s);
    for i in 150..=210 {
        s.scan.ranges[i] = d;
    }
    s
}

fn forward(speed: &str) -> ToolCall {
    ToolCall::parse("move_toward", &json!({"direction": "forward", "speed": speed, "duration_s": 2.0})).unwrap()
}

#[test]
fn a_refusal_counts_as_an_override_and_holds_the_next_call_off_for_the_cooldown() {
    let mut layer = SafetyLayer::new(SafetyConfig::default(), 0.0).unwrap();
    let scan = wall_ahead(0.25, 10.0);
    layer.call_started(Pose2::origin(), 10.0);
    layer.call_finished(10.5, 0.5, true);
    let out = layer.execute(&forward("fast"), &SafetySensors::from_stamped(&scan, Pose2::origin(), 10.5));
    assert!(out.is_refused(), "{:?}", out.feedback);
    assert_eq!(layer.overrides(), 1);
    assert!(layer.after_override());
    // not on the next tick, nor until the cooldown (2 s) has passed, even with nothing to do
    for now in [10.55, 11.0, 12.4] {
        assert!(!layer.call_due(now, true, &[]), "t = {now}");
    }
    assert!(layer.call_due(12.5, true, &[]));
    // a call the executor only slowed down is an override but no cooldown
    let scan = wall_ahead(0.8, 13.0);
    let out = layer.execute(&forward("fast"), &SafetySensors::from_stamped(&scan, Pose2::origin(), 13.0));
    assert!(!out.is_refused() && out.feedback.safety_override);
    assert_eq!(layer.overrides(), 2);
    assert!(layer.call_due(13.05, false, &[]));
}

#[test]
fn a_lasting_slowdown_is_one_override_and_a_new_one_counts_again() {
    let mut layer = SafetyLayer::new(SafetyConfig::default(), 0.0).unwrap();
    let v = VelocityTarget { linear: 0.18, angular: 0.0, duration_s: 3.0 };
    let near = wall_ahead(0.7, 0.0);
    let mut new = 0;
    for k in 0..20 {
        let now = f64::from(k) * 0.05;
        let out = layer.tick(&v, Some(&StampedScan { stamp_s: now, ..near.clone() }), Pose2::origin(), now);
        assert!(out.velocity.linear > 0.0 && out.velocity.linear < 0.18);
        assert!(out.stopped_motion.is_none());
        new += out.new_overrides.len();
    }
    assert_eq!((new, layer.overrides()), (1, 1));
    let out = layer.tick(&v, Some(&open_scan(1.0)), Pose2::origin(), 1.0);
    assert_eq!(out.velocity.linear, 0.18);
    let out = layer.tick(&v, Some(&wall_ahead(0.2, 1.05)), Pose2::origin(), 1.05);
    assert_eq!(out.velocity.linear, 0.0);
    assert!(out.stopped_motion.is_some(), "an emergency stop of a moving command ends the action");
    assert_eq!(layer.overrides(), 2, "the slowdown, then the emergency stop");
}

#[test]
fn sensing_failures_hold_the_robot_with_the_source_named() {
    let mut layer = SafetyLayer::new(SafetyConfig::default(), 0.0).unwrap();
    let v = VelocityTarget { linear: 0.12, angular: 0.0, duration_s: 3.0 };
    layer.sensing(Some("LiDAR /scan: sensor fault: only 0 of 720 beams valid".into()), 1.0);
    assert!(layer.is_waiting(), "no decision can be made: the watchdog counts");
    let out = layer.tick(&v, Some(&open_scan(1.0)), Pose2::origin(), 1.0);
    assert_eq!(out.velocity.linear, 0.0);
    assert!(out.new_overrides.iter().any(|o| o.reason.contains("sensor fault")), "{:?}", out.new_overrides);
    assert_eq!(layer.arbiter().active().map(|s| s.source), Some(StopSource::SensorLoss));
    // a stale scan holds it too
    layer.sensing(None, 2.0);
    let out = layer.tick(&v, Some(&open_scan(-10.0)), Pose2::origin(), 2.0);
    assert_eq!(out.velocity.linear, 0.0);
}

#[test]
fn while_waiting_continue_decays_and_a_slow_network_halves_it() {
    let mut layer = SafetyLayer::new(SafetyConfig::default(), 0.0).unwrap();
    let v = VelocityTarget { linear: 0.12, angular: 0.2, duration_s: 10.0 };
    let scan = open_scan(0.0);
    // answers in 4 s: the network is elevated (mean latency above 3 s)
    layer.call_started(Pose2::origin(), 0.0);
    layer.call_finished(4.0, 4.0, true);
    layer.call_started(Pose2::origin(), 5.0);
    assert_eq!(layer.tier(7.0).tier, WatchdogTier::Continue);
    let out = layer.tick(&v, Some(&StampedScan { stamp_s: 7.0, ..scan.clone() }), Pose2::origin(), 7.0);
    let expected = 0.12 * (-1.0f64).exp() * 0.5;
    assert!((out.velocity.linear - expected).abs() < 1e-9, "{} vs {expected}", out.velocity.linear);
    // past 3 s: STOP_WAIT, the stop named by the arbiter
    let t = layer.tier(8.0);
    assert_eq!((t.tier, t.changed), (WatchdogTier::StopWait, true));
    let out = layer.tick(&v, Some(&StampedScan { stamp_s: 8.0, ..scan }), Pose2::origin(), 8.0);
    assert_eq!(out.velocity.linear, 0.0);
    assert_eq!(layer.arbiter().active().map(|s| s.source), Some(StopSource::VlmTimeout));
    assert!(!layer.tier(8.05).changed);
}

#[test]
fn a_wait_counts_from_its_start_and_the_time_thresholds_hold() {
    let mut layer = SafetyLayer::new(SafetyConfig::default(), 0.0).unwrap();
    // answered at 1 s; nothing asked until 10.5 s (the scheduler's choice): no silence of the model's
    layer.call_started(Pose2::origin(), 0.0);
    layer.call_finished(1.0, 1.0, true);
    assert_eq!(layer.tier(10.5).tier, WatchdogTier::Continue, "not waiting: the silence alone changes nothing");
    layer.call_started(Pose2::origin(), 10.5);
    assert_eq!(layer.tier(11.0).tier, WatchdogTier::Continue, "coasting allowed at the start of the wait");
    // the call fails after 8 s and is asked again: the wait goes on
    layer.call_finished(18.5, 8.0, false);
    layer.call_started(Pose2::origin(), 18.5);
    // the time thresholds count from the start of the wait: LOCAL_NAV 10 s after it began
    assert_eq!(layer.tier(20.4).tier, WatchdogTier::StopWait);
    assert_eq!(layer.tier(20.5).tier, WatchdogTier::LocalNav);
    layer.call_finished(26.5, 8.0, false);
    assert_eq!(layer.tier(40.5).tier, WatchdogTier::ReturnHome, "30 s after the wait began");
    assert_eq!(layer.worst_tier(), WatchdogTier::ReturnHome);
    layer.call_finished(41.0, 1.0, true);
    assert_eq!(layer.tier(41.1).tier, WatchdogTier::Continue);
    layer.call_started(Pose2::origin(), 49.0);
    assert_eq!(layer.tier(49.1).tier, WatchdogTier::Continue, "a success 8 s ago: coasting allowed");
    // a long quiet stretch (a pause, no call) before a wait: coasting allowed
    let mut fresh = SafetyLayer::new(SafetyConfig::default(), 0.0).unwrap();
    assert_eq!(fresh.tier(40.0).tier, WatchdogTier::Continue);
    fresh.call_started(Pose2::origin(), 40.0);
    assert_eq!(fresh.tier(40.1).tier, WatchdogTier::Continue);
}

#[test]
fn the_stats_line_comes_once_a_minute() {
    let mut layer = SafetyLayer::new(SafetyConfig::default(), 0.0).unwrap();
    let scan = open_scan(0.0);
    let mut lines = Vec::new();
    let mut now = 0.0;
    while now < 130.0 {
        if layer.call_due(now, true, &[]) {
            let input = ScheduleInput {
                now_s: now,
                triggers: &[],
                similarity: None,
                nearest_obstacle_m: 5.0,
                after_override: false,
                goal_progressing: false,
            };
            if let CallDecision::Call { .. } = layer.schedule(false, input) {
                layer.call_started(Pose2::origin(), now);
                layer.call_finished(now + 1.5, 1.5, true);
            }
        }
        let _ = layer.tick(
            &VelocityTarget::STOP,
            Some(&StampedScan { stamp_s: now, ..scan.clone() }),
            Pose2::origin(),
            now,
        );
        lines.extend(layer.stats_line(now));
        now += 0.5;
    }
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with("VLM stats: "), "{}", lines[0]);
    assert!(lines[0].contains("avg latency 1500ms, tier 0"), "{}", lines[0]);
}

#[test]
fn idle_calls_go_through_the_scheduler_and_are_counted() {
    let mut layer = SafetyLayer::new(SafetyConfig::default(), 0.0).unwrap();
    let quiet = |now_s| ScheduleInput {
        now_s,
        triggers: &[],
        similarity: Some(0.99),
        nearest_obstacle_m: 5.0,
        after_override: false,
        goal_progressing: false,
    };
    assert!(matches!(layer.schedule(true, quiet(0.0)), CallDecision::Call { .. }));
    layer.call_started(Pose2::origin(), 0.0);
    layer.call_finished(1.0, 1.0, true);
    // the action ended at once: the robot waits, so it is a call, named and counted
    let idle = layer.schedule(true, quiet(2.0));
    assert_eq!(idle, CallDecision::Call { text_only: false, reasons: vec![crate::schedule::CallReason::Idle] });
    // the base period counts from it: a busy robot is not asked again before 7 s
    assert_eq!(layer.schedule(false, quiet(5.0)), CallDecision::Wait);
    assert_eq!(layer.scheduler().totals().calls, 2, "both counted");
    layer.extra_requests(6.0, 1);
    assert!(layer.run_stats_line(60.0).starts_with("VLM stats for the run: 3 calls in 1.0 min"));
    assert_eq!(layer.scheduler().stats(60.0).calls_per_min, 3.0, "and in the per-minute line");
}

#[test]
fn an_operator_hold_is_no_model_failure() {
    let mut layer = SafetyLayer::new(SafetyConfig::default(), 0.0).unwrap();
    layer.call_started(Pose2::default(), 0.0);
    // a pause of a minute while the call is awaited: the watchdog does not count it
    for t in 0..=60 {
        layer.excuse_wait(f64::from(t));
    }
    assert_eq!(layer.tier(60.0).tier, WatchdogTier::Continue);
    assert!(layer.is_waiting(), "the call is still awaited");
    // counted again from the end of the hold
    assert_eq!(layer.tier(65.0).tier, WatchdogTier::StopWait);
}

#[test]
fn the_fixed_rate_loop_calls_every_base_period_and_at_no_other_time() {
    let mut config = SafetyConfig::default();
    config.schedule.mode = crate::config::ScheduleMode::Fixed;
    let mut layer = SafetyLayer::new(config, 0.0).unwrap();
    let input = |now_s| ScheduleInput {
        now_s,
        triggers: &[],
        similarity: Some(0.99),
        nearest_obstacle_m: 5.0,
        after_override: false,
        goal_progressing: true,
    };
    assert!(layer.call_due(0.0, true, &[]));
    assert!(matches!(layer.schedule(true, input(0.0)), CallDecision::Call { text_only: false, .. }));
    layer.call_started(Pose2::origin(), 0.0);
    layer.call_finished(1.0, 1.0, true);
    let door = [crate::triggers::TriggerEvent::DeadEnd { front_m: 0.5 }];
    assert!(!layer.call_due(2.0, true, &door), "idle and a trigger wait for the period");
    assert!(layer.call_due(5.0, false, &[]));
    assert!(matches!(layer.schedule(false, input(5.0)), CallDecision::Call { text_only: false, .. }), "no skipping");
}

#[test]
fn time_without_a_call_is_no_silence_of_the_model() {
    let mut layer = SafetyLayer::new(SafetyConfig::default(), 0.0).unwrap();
    layer.call_started(Pose2::origin(), 0.0);
    layer.call_finished(1.5, 1.5, true);
    // the scheduler does not call for 15 s (a navigation goal in progress), then asks again
    layer.call_started(Pose2::origin(), 16.5);
    assert_eq!(layer.tier(17.0).tier, WatchdogTier::Continue, "the wait has just begun");
    // an API that then stays silent is still noticed, counted from the start of the wait
    assert_eq!(layer.tier(30.0).tier, WatchdogTier::LocalNav);
}
