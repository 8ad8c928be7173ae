//! One ObjectNav episode in the built-in simulator, decided by a scripted
//! "model", end to end through [`run_episode`]: the same path `nav run
//! --planner vlm` takes, with the network replaced by a closure.
//!
//! The arena is the built-in `house_a` (find the tv in a six-room house).
//! The model is an [`FnVlm`]: it reads the text-only request (target,
//! Navigation Context, and a per-30° list of free distances and objects)
//! and answers objectnav JSON by a fixed rule: head for the target if it
//! is listed, else for the most open direction that is not behind the
//! robot. navkit's protocol layer parses and validates each reply, the
//! low-level policy turns the angle into `forward`/`turn` actions, and the
//! Place–Anchor memory fills the Navigation Context of the next request.
//!
//! The step log (one JSON line per step) goes to a temporary file; the
//! example prints a few of the model's decisions from it, then the run
//! summary (`RunSummary::report()`) with model calls and tokens. The
//! episode may or may not find the tv: the printout says which.
//!
//! Run: `cargo run -p navkit-examples --example objectnav_episode`

use std::sync::Arc;

use nav_hal::arena::Arena;
use nav_planner::navigator::StepLog;
use nav_planner::navigator::episode::{EpisodeSpec, PlannerChoice, run_episode};
use nav_planner::navigator::read_log;
use nav_planner::protocol::ProtocolKind;
use nav_planner::vlm::{FnVlm, Usage, VlmError, VlmRequest, VlmResponse};
use serde_json::json;

/// One direction of the request's text panorama.
struct View {
    angle: f64,
    free_m: Option<f64>,
    /// Objects seen in this direction: label and distance, metres.
    objects: Vec<(String, f64)>,
}

/// Reads the `PANORAMA (text)` block of an objectnav request: lines like
/// `  +30: 2.1m; sofa 2.0m, tv 3.1m` (a `?` when the distance is unknown).
fn parse_panorama(text: &str) -> Vec<View> {
    let Some(start) = text.find("PANORAMA (text)") else { return Vec::new() };
    text[start..]
        .lines()
        .skip(1)
        .filter_map(|line| {
            let (angle, rest) = line.trim().split_once(':')?;
            let angle: f64 = angle.trim().parse().ok()?;
            let (free, objects) = rest.split_once(';').unwrap_or((rest, ""));
            let free_m = free.trim().strip_suffix('m').and_then(|f| f.parse().ok());
            let objects = objects
                .split(',')
                .filter_map(|o| {
                    let (label, dist) = o.trim().rsplit_once(' ')?;
                    Some((label.to_string(), dist.strip_suffix('m')?.parse().ok()?))
                })
                .collect();
            Some(View { angle, free_m, objects })
        })
        .collect()
}

/// The rule the scripted model follows.
fn decide(req: &VlmRequest) -> Result<VlmResponse, VlmError> {
    let text = req.user_text();
    let target = text
        .lines()
        .find_map(|l| l.strip_prefix("TARGET: "))
        .map(str::trim)
        .ok_or_else(|| VlmError::Config { message: "request names no TARGET".into() })?;
    let views = parse_panorama(&text);
    let free = |v: &View| v.free_m.unwrap_or(0.0);
    let seen = views.iter().find_map(|v| v.objects.iter().find(|(o, _)| o == target).map(|(_, d)| (v, *d)));
    let answer = match seen {
        // in sight with a clear line to it: go for it
        Some((v, dist)) if free(v) + 0.5 >= dist => json!({
            "goal_flag": true,
            "angle": v.angle,
            "discovered_context": {"goal_scene_type": "target", "why": format!("the {target} is {dist:.1} m away at {:+}°", v.angle)}
        }),
        // in sight but something is in the way: the open direction (at least
        // 1 m free) closest to it
        Some((v, dist)) => {
            let off = |w: &View| {
                let d = (w.angle - v.angle).abs() % 360.0;
                d.min(360.0 - d)
            };
            let around = views
                .iter()
                .filter(|w| free(w) >= 1.0)
                .min_by(|a, b| off(a).total_cmp(&off(b)).then(free(b).total_cmp(&free(a))))
                .unwrap_or(v);
            json!({
                "goal_flag": false,
                "angle": around.angle,
                "discovered_context": {"goal_scene_type": "target", "why": format!("the {target} is {dist:.1} m away at {:+}° but blocked; going around at {:+}°", v.angle, around.angle)}
            })
        }
        None => {
            // the most open direction, not behind the robot
            let open = views.iter().filter(|v| v.angle.abs() <= 90.0).max_by(|a, b| free(a).total_cmp(&free(b)));
            let (angle, free_m) = open.map_or((0.0, 0.0), |v| (v.angle, free(v)));
            json!({
                "goal_flag": false,
                "angle": angle,
                "discovered_context": {"goal_scene_type": "unexplored", "why": format!("most open way ahead: {free_m:.1} m at {angle:+}°")}
            })
        }
    };
    let reply = answer.to_string();
    // A real backend reports the provider's token counts; this model has
    // no tokenizer, so it estimates them as characters / 4.
    let prompt_chars = req.system.len() + text.len();
    let usage = Usage {
        prompt_tokens: (prompt_chars / 4) as u64,
        completion_tokens: (reply.len() / 4) as u64,
        ..Usage::default()
    };
    Ok(VlmResponse::from_text(reply).with_usage(usage))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // optional arguments: ARENA (a built-in house) and SEED (0 = the arena's own start and
    // target; others draw a start pose and a target object)
    let mut args = std::env::args().skip(1);
    let arena_name = args.next().unwrap_or_else(|| "house_a".to_string());
    let seed: u64 = match args.next() {
        Some(s) => s.parse().map_err(|e| format!("SEED {s:?}: {e}"))?,
        None => 6,
    };
    let arena = Arena::builtin(&arena_name)?;
    println!("arena: {} ({}), seed {seed}", arena.name, arena.description.as_deref().unwrap_or("no description"));

    let model = FnVlm::new(decide).with_model("open-space-rule");
    let mut spec = EpisodeSpec::new(arena, format!("builtin:{arena_name}"));
    spec.seed = seed;
    spec.protocol = ProtocolKind::Objectnav;
    spec.planner = PlannerChoice::Vlm;
    spec.text_only = true; // the rule reads the text panorama, so send no images
    spec.vlm = Some(Arc::new(model));
    spec.max_steps = Some(200);
    // no images are sent (text_only), so a small camera keeps the simulator fast in debug builds
    spec.sim.camera.width = 80;
    spec.sim.camera.height = 60;

    let dir = tempfile::Builder::new().prefix("navkit-objectnav-").tempdir()?;
    let log_path = dir.path().join("steps.jsonl");
    let mut log = StepLog::create(&log_path)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let summary = runtime.block_on(run_episode(&spec, &mut log, &mut |_step| {}))?;

    let (records, truncated) = read_log(&log_path)?;
    println!(
        "step log: {} lines written to {} (deleted on exit){}",
        records.len(),
        log_path.display(),
        if truncated { "; last line truncated" } else { "" }
    );
    let decisions: Vec<_> = records.iter().filter_map(|r| r.planner.as_ref().map(|p| (r, p))).collect();
    println!(
        "the model was asked at {} steps; the first decisions (pose after that step, odometry frame):",
        decisions.len()
    );
    for (r, p) in decisions.iter().take(5) {
        let pose = r.pose; // odometry frame: the start pose is (0, 0, 0°)
        println!(
            "  step {:>3} at ({:.2}, {:.2}, {:+.0}°): {}{}",
            r.step,
            pose.x,
            pose.y,
            pose.yaw_deg,
            p.parsed,
            p.fallback.as_ref().map(|f| format!("  [fallback: {f}]")).unwrap_or_default()
        );
    }
    println!();
    println!("{}", summary.report());
    println!();
    println!(
        "model calls: {} | tokens: {} prompt + {} completion (estimated by the example's model) | {}",
        summary.vlm_calls,
        summary.prompt_tokens,
        summary.completion_tokens,
        match (summary.success, summary.target.as_deref().unwrap_or("target")) {
            (true, t) => format!("the {t} was found"),
            (false, t) => format!("the {t} was not found within the budget"),
        }
    );
    Ok(())
}
