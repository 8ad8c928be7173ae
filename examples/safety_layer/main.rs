//! The safety layer on its own (nav-safety): how navkit disposes of what a
//! model proposes, with no model, robot or simulator involved.
//!
//! Everything goes through one [`SafetyLayer`], the object a control loop
//! owns (the executor with its guard, the watchdog, the network monitor,
//! the scheduler, the triggers and the stop arbiter).
//!
//! A robot stands at the origin of a 4 m × 4 m room facing a box whose
//! near face is 0.45 m ahead. With `SafetyConfig::default()` (stop at
//! 0.3 m, slow down below 0.5 m, full speed from 1.0 m, blocked-action
//! memory of 2 retries, watchdog tiers at 3 / 10 / 30 s, and the drive of
//! the ROSMASTER A1, a car-like robot that cannot turn in place, so a
//! `rotate` becomes an arc — here a reversing one, since the box blocks the
//! forward arc) the example shows
//! three things and prints every decision with its reason:
//!
//! 1. **Tool calls** through [`SafetyLayer::execute`]: arguments a
//!    model might send, strictly parsed by [`ToolCall::parse`] (a bad one is
//!    rejected before it reaches the executor), then pre-validated against
//!    the LiDAR scan: some run (possibly slowed), some are refused, and a
//!    call refused repeatedly is suppressed by the blocked-action memory;
//!    every refusal or modification counts as an override.
//! 2. The **control tick** ([`SafetyLayer::tick`], the 20 Hz check) on a
//!    0.18 m/s forward command as the robot gets closer to the box: full
//!    speed, scaled down, then stopped (the stop arbiter names the source).
//! 3. The **watchdog** when the model goes silent: [`SafetyLayer::tier`]
//!    climbs from CONTINUE to STOP_WAIT, LOCAL_NAV and RETURN_HOME while
//!    the tick decays the last command (τ = 2 s) in CONTINUE.
//!
//! nav-safety's own example (`cargo run -p nav-safety --example
//! execute_tool_call`) follows one `move_toward` through a full motion and
//! its feedback record; this one covers the layer's other decisions.
//!
//! Run: `cargo run -p navkit-examples --example safety_layer`

use nav_core::geometry::Pose2;
use nav_core::lidar::{LaserScan, StampedScan};
use nav_safety::{SafetyConfig, SafetyLayer, SafetySensors, Target, ToolCall, VelocityTarget, WatchdogTier};
use serde_json::json;

/// The scan from `ahead_m` in front of the box (its face spans ±0.25 m
/// across), inside a 4 × 4 m room centred on the robot.
fn scan_facing_box(ahead_m: f64) -> LaserScan {
    let mut scan = LaserScan::full_circle(720, 0.05, 12.0, f32::INFINITY);
    for i in 0..scan.len() {
        let a = scan.angle(i);
        let (c, s) = (a.cos(), a.sin());
        // the room's walls at x = ±2 and y = ±2
        let wall_x = 2.0 / c.abs().max(1e-9);
        let wall_y = 2.0 / s.abs().max(1e-9);
        // the box's near face at x = ahead, |y| <= 0.25
        let face = if c > 0.0 && (ahead_m / c * s).abs() <= 0.25 { ahead_m / c } else { f64::INFINITY };
        scan.ranges[i] = wall_x.min(wall_y).min(face) as f32;
    }
    scan
}

fn describe(target: &Target) -> String {
    match target {
        Target::Velocity(v) => {
            format!("drive {:.2} m/s, turn {:.2} rad/s for {:.1} s", v.linear, v.angular, v.duration_s)
        }
        Target::Stop(_) => "stay stopped".to_string(),
        Target::PathCheck(p) => format!("path check: {}", serde_json::to_string(p).unwrap_or_default()),
        Target::NavGoal(_) => "hand a goal to the local planner".to_string(),
        Target::Observe(_) => "stop and observe".to_string(),
        Target::Report(_) => "record a discovery".to_string(),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut layer = SafetyLayer::new(SafetyConfig::default(), 0.0)?;
    let scan = scan_facing_box(0.45);

    println!("1. tool calls, with a box 0.45 m ahead");
    let calls = [
        ("move_toward", json!({"direction": "forward", "speed": "fast", "duration_s": 3})),
        ("move_toward", json!({"direction": "forward", "speed": "slow"})),
        ("move_toward", json!({"direction": "forward", "speed": "slow"})),
        ("move_toward", json!({"direction": "forward", "speed": "slow"})),
        ("rotate", json!({"degrees": 33})),
        ("rotate", json!({"degrees": 90})),
        ("move_toward", json!({"direction": "backward", "speed": "medium", "duration_s": 2})),
        ("check_path_clear", json!({"direction": "left", "distance_m": 1.5})),
        ("move_toward", json!({"direction": "forward", "speed": "turbo"})),
    ];
    // one call every 2 s of robot time, all from the same pose
    for (k, (name, args)) in calls.iter().enumerate() {
        let now = 2.0 * k as f64;
        print!("  t={now:4.1}s {name}({args}) -> ");
        let call = match ToolCall::parse(name, args) {
            Ok(call) => call,
            Err(e) => {
                println!("REJECTED by the parser: {e}");
                continue;
            }
        };
        let outcome = layer.execute(&call, &SafetySensors::new(&scan, now, Pose2::origin(), now));
        let verdict = if outcome.is_refused() {
            "REFUSED"
        } else if outcome.feedback.safety_override {
            "ALLOWED, modified"
        } else {
            "ALLOWED"
        };
        println!("{verdict}: {}", describe(&outcome.target));
        let fb = &outcome.feedback;
        if let Some(why) = fb.safety_message.as_deref().or(fb.stopped_reason.as_deref()) {
            println!("           reason: {why}");
        }
        if let (false, Some(executed)) = (outcome.is_refused(), &fb.executed_command) {
            println!("           executed as: {executed}");
        }
    }

    println!("  overrides so far: {}", layer.overrides());

    println!("\n2. the control tick on a 0.18 m/s forward command, approaching the box");
    let command = VelocityTarget { linear: 0.18, angular: 0.0, duration_s: 10.0 };
    for (k, ahead) in [1.5, 1.0, 0.8, 0.6, 0.45, 0.35, 0.29].into_iter().enumerate() {
        let now = 20.0 + 0.05 * k as f64;
        let stamped = StampedScan { scan: scan_facing_box(ahead), stamp_s: now };
        let safe = layer.tick(&command, Some(&stamped), Pose2::origin(), now).velocity;
        print!("  box {ahead:.2} m ahead: {:.3} m/s", safe.linear);
        match safe.overrides.first() {
            Some(o) => println!(" ({:?}: {})", o.kind, o.reason),
            None => println!(" (unchanged)"),
        }
    }
    let stop = layer.arbiter().active().map_or_else(|| "none".to_string(), |s| format!("{:?}: {}", s.source, s.reason));
    println!("  the stop arbiter holds: {stop}");

    println!("\n3. the watchdog: a reply at t=29.5, then a call at t=30 the model never answers");
    let open = scan_facing_box(1.5);
    layer.call_started(Pose2::origin(), 29.0);
    layer.call_finished(29.5, 0.5, true);
    layer.call_started(Pose2::origin(), 30.0);
    let last = VelocityTarget { linear: 0.12, angular: 0.2, duration_s: 60.0 };
    for dt in [0.5, 1.0, 2.0, 2.9, 3.5, 9.0, 12.0, 29.0, 31.0] {
        let t = 30.0 + dt;
        let update = layer.tier(t);
        // the loop's command for the tier: the last target in CONTINUE, its own planner in
        // LOCAL_NAV / RETURN_HOME (shown here as standing still), zero in STOP_WAIT
        let wanted = if update.tier == WatchdogTier::Continue { last } else { VelocityTarget::STOP };
        let stamped = StampedScan { scan: open.clone(), stamp_s: t };
        let cmd = layer.tick(&wanted, Some(&stamped), Pose2::origin(), t).velocity;
        println!(
            "  t={t:4.1}s {:<11} publish {:.3} m/s, {:.3} rad/s{}",
            update.tier.as_str(),
            cmd.linear,
            cmd.angular,
            update
                .tier
                .announcement()
                .filter(|_| update.changed)
                .map(|a| format!("  (says: {a:?})"))
                .unwrap_or_default()
        );
    }
    layer.call_finished(61.5, 31.5, true);
    println!("  t=61.5s a reply arrives: tier {}", layer.tier(61.5).tier.as_str());
    Ok(())
}
