//! Bring your own model: implement [`VisionLanguageModel`] for a backend of
//! your own and let navkit's objectnav protocol use it.
//!
//! The trait has one required method, `complete(VlmRequest) ->
//! Result<VlmResponse, VlmError>`, plus an optional `describe()` naming the
//! provider and model. This example's backend, `KeywordModel`, is a tiny
//! rule-based "model": it cannot see images, but it reads the request's
//! text (the target and, for text-only requests, a list of free distances
//! and objects every 30°) and answers objectnav JSON. It reports token
//! usage and latency the way an HTTP backend would (tokens are estimated:
//! characters / 4, 85 per low-detail image).
//!
//! The robot stands at the start of the built-in `house_a` simulator; the
//! example takes a panorama (the objects its label buffers show stand in for
//! what a model reads in the images) and a LiDAR scan, and asks
//! `protocol::objectnav::VlmObjectNavPlanner` for two decisions:
//!
//! 1. with the default prompt config: one stitched panorama JPEG plus text;
//!    the model wraps its JSON in prose and a code fence, which the
//!    protocol's parser recovers;
//! 2. text only: the panorama described in words, which the model uses.
//!
//! For each it prints what the request looked like (system prompt, parts,
//! images, schema, limits), the parsed decision and the call record
//! (calls, tokens, latency, fallback), and at the end the model's own
//! totals as [`MeteredVlm`] counted them.
//!
//! Run: `cargo run -p navkit-examples --example custom_vlm`

use std::time::Instant;

use async_trait::async_trait;
use nav_hal::hal::{Panorama, Sensors};
use nav_hal::sim::{SimConfig, SimHal};
use nav_planner::protocol::objectnav::{
    ObjectNavObservation, ObjectNavPlanner, ObjectNavPromptConfig, VlmObjectNavPlanner,
};
use nav_planner::vlm::{BackendInfo, MeteredVlm, Part, Usage, VisionLanguageModel, VlmError, VlmRequest, VlmResponse};
use serde_json::json;

/// A rule-based stand-in for a model: see the module docs.
#[derive(Debug, Default)]
struct KeywordModel;

impl KeywordModel {
    /// The rule: if a text panorama lists the target, head for it;
    /// otherwise head for the most open listed direction, or straight on.
    fn answer(text: &str) -> serde_json::Value {
        let target = text.lines().find_map(|l| l.strip_prefix("TARGET: ")).map_or("target", str::trim);
        // lines like "  +30: 2.1m; sofa 2.0m, tv 3.1m"
        let views: Vec<(f64, f64, &str)> = text
            .lines()
            .skip_while(|l| !l.starts_with("PANORAMA (text)"))
            .skip(1)
            .filter_map(|l| {
                let (angle, rest) = l.trim().split_once(':')?;
                let (free, objects) = rest.split_once(';').unwrap_or((rest, ""));
                let free = free.trim().strip_suffix('m').and_then(|f| f.parse().ok()).unwrap_or(0.0);
                Some((angle.trim().parse().ok()?, free, objects))
            })
            .collect();
        if let Some((angle, _, _)) = views.iter().find(|(_, _, objects)| objects.contains(target)) {
            return json!({"goal_flag": true, "angle": angle,
                "discovered_context": {"goal_scene_type": "target", "why": format!("{target} listed at {angle:+}°")}});
        }
        match views.iter().filter(|v| v.0.abs() <= 90.0).max_by(|a, b| a.1.total_cmp(&b.1)) {
            Some((angle, free, _)) => json!({"goal_flag": false, "angle": angle,
                "discovered_context": {"goal_scene_type": "unexplored", "why": format!("most open: {free:.1} m at {angle:+}°")}}),
            None => json!({"goal_flag": false, "angle": 0,
                "discovered_context": {"goal_scene_type": "corridor", "why": "no text panorama (I cannot see images); straight on"}}),
        }
    }
}

#[async_trait]
impl VisionLanguageModel for KeywordModel {
    async fn complete(&self, req: VlmRequest) -> Result<VlmResponse, VlmError> {
        let started = Instant::now();
        // a real backend would reject an incoherent request before sending it
        req.validate()?;
        let text = req.user_text();
        let answer = Self::answer(&text);
        // Prose around a fenced block: what chatty models do. The protocol's
        // parser recovers the JSON object.
        let reply = format!("Sure! Here is my decision:\n```json\n{answer}\n```");
        let usage = Usage {
            prompt_tokens: ((req.system.len() + text.len()) / 4 + 85 * req.image_count()) as u64,
            completion_tokens: (reply.len() / 4) as u64,
            ..Usage::default()
        };
        let mut response = VlmResponse::from_text(reply).with_usage(usage).with_finish_reason("stop");
        response.model = "keyword-1".to_string();
        response.latency_ms = started.elapsed().as_secs_f64() * 1e3;
        Ok(response)
    }

    fn describe(&self) -> BackendInfo {
        BackendInfo::new("keyword", "keyword-1")
    }
}

/// Prints the shape of a request: what every backend receives.
fn show_request(req: &VlmRequest) {
    let first_line = req.system.lines().next().unwrap_or("");
    println!("  system: {} chars, starts {first_line:?}", req.system.len());
    for part in &req.user {
        match part {
            Part::Text(t) => {
                let lines: Vec<&str> = t.lines().collect();
                println!("  text part: {} lines, e.g.", lines.len());
                for l in lines.iter().filter(|l| !l.trim().is_empty()).take(4) {
                    println!("      | {l}");
                }
            }
            Part::Image { mime, data, detail } => {
                println!("  image part: {mime}, {} bytes, detail {}", data.len(), detail.as_str());
            }
        }
    }
    let schema = req.json_schema.as_ref().map_or("none", |s| s.name.as_str());
    println!(
        "  json schema: {schema} | temperature {:?} | max tokens {:?} | timeout {:?}",
        req.temperature, req.max_tokens, req.timeout
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        // what the robot senses at the start of house_a
        let mut robot = SimHal::builtin("house_a", SimConfig::default())?;
        let pose = robot.odometry().await?.pose;
        let panorama: Panorama = robot.panorama(Panorama::DEFAULT_VIEWS).await?;
        let objects = nav_planner::protocol::objectnav::panorama_objects(&panorama);
        let scan = robot.scan().await?.scan;
        let obs = ObjectNavObservation {
            target: "bed",
            pose,
            panorama: Some(&panorama),
            scan: Some(&scan),
            context: None,
            instruction: None,
        };
        println!(
            "robot at the start of house_a: {} panorama views, {} objects rendered around it, target: {}",
            panorama.views.len(),
            objects.len(),
            obs.target
        );

        let model = MeteredVlm::new(KeywordModel);
        for (title, config) in [
            ("1. default prompt config (image + text)", ObjectNavPromptConfig::default()),
            ("2. text only (the panorama described in words)", ObjectNavPromptConfig {
                text_only: true,
                ..ObjectNavPromptConfig::default()
            }),
        ] {
            println!("\n{title}");
            println!("request:");
            show_request(&nav_planner::protocol::objectnav::build_request(&obs, &config));
            // the planner borrows the model; it builds the same request and parses the reply
            let mut planner = VlmObjectNavPlanner::new(&model, config);
            let reply = planner.plan(&obs).await;
            println!("planner {}:", planner.name());
            println!("  decision: {}", serde_json::to_string(&reply.decision)?);
            let r = &reply.record;
            println!(
                "  call record: {} model call(s) | {} prompt + {} completion tokens | {:.3} ms | fallback: {}",
                r.vlm_calls,
                r.usage.prompt_tokens,
                r.usage.completion_tokens,
                r.latency_ms,
                r.fallback.as_deref().unwrap_or("none")
            );
            for raw in &r.raw {
                println!("  raw reply (kept in the step log): {}", raw.replace('\n', " "));
            }
        }

        let stats = model.stats();
        println!(
            "\nmodel totals: {} calls, {} succeeded, {} prompt + {} completion tokens (estimated), mean latency {:.3} ms",
            stats.calls,
            stats.successes,
            stats.usage.prompt_tokens,
            stats.usage.completion_tokens,
            stats.mean_latency_ms()
        );
        Ok::<(), Box<dyn std::error::Error>>(())
    })
}
