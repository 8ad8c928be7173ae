//! The safety layer on its own (nav-safety): how navkit disposes of what a
//! model proposes, with no model, robot or simulator involved.
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
//! 1. **Tool calls** through [`SafetyExecutor::execute`]: arguments a
//!    model might send, strictly parsed by [`ToolCall::parse`] (a bad one is
//!    rejected before it reaches the executor), then pre-validated against
//!    the LiDAR scan: some run (possibly slowed), some are refused, and a
//!    call refused repeatedly is suppressed by the blocked-action memory.
//! 2. The **continuous guard** (the 20 Hz check) on a 0.18 m/s forward
//!    command as the robot gets closer to the box: full speed, scaled
//!    down, then stopped.
//! 3. The **watchdog** when the model goes silent: the last command
//!    decays (τ = 2 s) while the tier climbs from CONTINUE to STOP_WAIT,
//!    LOCAL_NAV and RETURN_HOME.
//!
//! nav-safety's own example (`cargo run -p nav-safety --example
//! execute_tool_call`) follows one `move_toward` through a full motion and
//! its feedback record; this one covers the layer's other decisions.
//!
//! Run: `cargo run -p navkit-examples --example safety_layer`

use nav_core::geometry::Pose2;
use nav_core::lidar::LaserScan;
use nav_safety::{SafetyConfig, SafetyExecutor, SafetySensors, Target, ToolCall, VelocityTarget, Watchdog};
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
    let config = SafetyConfig::default();
    let mut executor = SafetyExecutor::new(config.clone())?;
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
        let outcome = executor.execute(&call, &SafetySensors::new(&scan, now, Pose2::origin(), now));
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

    println!("\n2. the continuous guard on a 0.18 m/s forward command, approaching the box");
    let command = VelocityTarget { linear: 0.18, angular: 0.0, duration_s: 10.0 };
    for ahead in [1.5, 1.0, 0.8, 0.6, 0.45, 0.35, 0.29] {
        let safe = executor.guard().guard(&command, &scan_facing_box(ahead), 0.0);
        print!("  box {ahead:.2} m ahead: {:.3} m/s", safe.linear);
        match safe.overrides.first() {
            Some(o) => println!(" ({:?}: {})", o.kind, o.reason),
            None => println!(" (unchanged)"),
        }
    }

    println!("\n3. the watchdog: the last reply came at t=0, then the model goes silent");
    let mut watchdog = Watchdog::new(config.watchdog.clone());
    watchdog.record_response(0.0);
    let last = VelocityTarget { linear: 0.12, angular: 0.2, duration_s: 3.0 };
    for t in [0.5, 1.0, 2.0, 2.9, 3.5, 9.0, 12.0, 29.0, 31.0] {
        let tier = watchdog.tier(t);
        let cmd = watchdog.command(t, &last);
        println!(
            "  t={t:4.1}s {:<11} publish {:.3} m/s, {:.3} rad/s{}",
            tier.as_str(),
            cmd.linear,
            cmd.angular,
            tier.announcement().map(|a| format!("  (says: {a:?})")).unwrap_or_default()
        );
    }
    watchdog.record_response(31.5);
    println!("  t=31.5s a reply arrives: tier {}", watchdog.tier(31.5).as_str());
    Ok(())
}
