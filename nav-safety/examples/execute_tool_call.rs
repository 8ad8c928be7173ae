//! Sends one VLM tool call through the safety executor and prints the
//! feedback the VLM would get back.
//!
//! The robot stands in a 1.2 m wide corridor whose end is 0.8 m ahead; the
//! VLM asks for `move_toward(forward, fast)`. The executor downgrades the
//! speed to slow (clearance below 1 m). The 20 Hz control loop then runs
//! the motion through the continuous guard; two seconds in, a person steps
//! in 0.25 m in front of the robot and the guard stops it. The completed
//! feedback is printed.
//!
//! Run: `cargo run -p nav-safety --example execute_tool_call`.

use nav_core::geometry::Pose2;
use nav_core::lidar::LaserScan;
use nav_safety::geofence::integrate_unicycle;
use nav_safety::{MotionReport, SafetyConfig, SafetyExecutor, SafetySensors, Target, ToolCall};

/// The corridor as seen from `x` metres along it: side walls at y = ±0.6,
/// end wall at x = 0.8; `person` puts legs 0.25 m straight ahead.
fn corridor_scan(x: f64, person: bool) -> LaserScan {
    let mut scan = LaserScan::full_circle(720, 0.05, 12.0, f32::INFINITY);
    for i in 0..scan.len() {
        let a = scan.angle(i);
        let side = 0.6 / a.sin().abs().max(1e-9);
        let front = if a.cos() > 0.0 { (0.8 - x) / a.cos() } else { f64::INFINITY };
        let legs = if person && a.abs() < 0.15 { 0.25 } else { f64::INFINITY };
        scan.ranges[i] = side.min(front).min(legs) as f32;
    }
    scan
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut executor = SafetyExecutor::new(SafetyConfig::default())?;
    let args = serde_json::json!({"direction": "forward", "speed": "fast", "duration_s": 6});
    let call = ToolCall::parse("move_toward", &args)?;

    let start = Pose2::origin();
    let scan = corridor_scan(start.x, false);
    let mut outcome = executor.execute(&call, &SafetySensors::new(&scan, 0.0, start, 0.0));
    println!("target: {}", serde_json::to_string(&outcome.target)?);

    let Target::Velocity(target) = outcome.target.clone() else {
        println!("feedback: {}", outcome.result_text());
        return Ok(());
    };
    // The 20 Hz control loop: guard every tick, integrate the motion.
    let dt = 0.05;
    let ticks = (target.duration_s / dt).round() as u32;
    let (mut pose, mut report) = (start, MotionReport::default());
    for tick in 0..ticks {
        let now = f64::from(tick) * dt;
        let scan = corridor_scan(pose.x, now >= 2.0);
        let safe = executor.guard().guard(&target, &scan, 0.0);
        for o in &safe.overrides {
            println!("t={now:.2}s override {:?}: {:.3} -> {:.3} ({})", o.kind, o.from, o.to, o.reason);
        }
        if let Some(stop) = safe.stop() {
            report.safety_stop = Some(stop.clone());
            report.duration_s = now;
            break;
        }
        pose = integrate_unicycle(pose, safe.linear, safe.angular, dt);
        report.duration_s = now + dt;
    }
    report.distance_m = start.distance(pose);
    report.final_pose = Some(pose);
    executor.finish(&mut outcome, &report, report.duration_s);
    println!("feedback: {}", serde_json::to_string_pretty(&outcome.feedback)?);
    Ok(())
}
