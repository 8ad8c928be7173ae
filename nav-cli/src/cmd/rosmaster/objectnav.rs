//! `nav rosmaster --protocol objectnav --target LABEL`: the
//! ObjectNav loop (the same [`ObjectNavLoop`] as `nav run` and
//! `nav habitat`) on the robot. The discrete actions are the HAL's
//! closed-loop motions under the safety layer's continuous guard, the
//! panorama is 12 turns on the spot, and the model plays every deciding
//! part: planner, perception stage (bounding box and range from depth)
//! and scene analyzer. There is no detector on a real robot and the
//! offline stand-in needs a simulator's label buffers, so objectnav
//! requires `--planner vlm` (checked before connecting).
//!
//! The episode ends with the agent's own STOP (the target confirmed within
//! the stop distance), the step budget, the time budget, a signal, or the
//! operator's voice (`stop`, `go home`); the robot is stopped in every
//! case. Success is not judged: there is no ground truth on a robot.
//!
//! Voice commands (and the pause topic) are read between steps: `pause`
//! holds the robot after the step in progress until `resume`. On `go home`
//! the robot is sent back to its start pose through Nav2 when Nav2 is in
//! use (`[rosbridge] nav2`), for at most [`HOME_TIMEOUT`]; without Nav2
//! there is no map to plan the way back on, so the robot stops where it
//! is and says so.

use super::Setup;
use super::progress::Progress;
use super::voice::{final_announcements, spawn_relay};
use crate::exit::{CmdResult, Exit, internal, usage};
use nav_core::geometry::Pose2;
use nav_hal::hal::{Actuators, NavGoalState, Sensors};
use nav_hal::rosbridge::RosbridgeHal;
use nav_planner::navigator::motion_guard::SafetyMotionGuard;
use nav_planner::navigator::objectnav_loop::{
    ObjectNavEnd, ObjectNavLoop, ObjectNavLoopConfig, ObjectNavOutcome, ObjectNavParts,
};
use nav_planner::navigator::pixel_policy::{PixelGoalConfig, PixelGoalPolicy};
use nav_planner::navigator::voice::{VoiceCommand, VoiceInbox};
use nav_planner::navigator::{NavError, Observer, RunContext, StepLog};
use nav_planner::protocol::objectnav::{ObjectNavPromptConfig, VlmObjectNavPlanner};
use nav_planner::protocol::perception::{VlmGoalPerception, VlmPerceptionConfig};
use nav_planner::protocol::scene::VlmSceneAnalyzer;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Where the robot stops in front of the target, metres: the usual 1 m
/// ObjectNav success distance minus a margin, as `nav run` uses.
const STOP_DISTANCE_M: f64 = 0.8;

/// The longest way home through Nav2 after `go home`.
const HOME_TIMEOUT: Duration = Duration::from_secs(180);

/// What objectnav needs beyond the explore setup.
#[derive(Debug, Clone)]
pub(super) struct ObjectNavTask {
    /// The object class to find, e.g. `chair`.
    pub target: String,
    /// Step budget.
    pub max_steps: u32,
}

/// Checks the arguments that make objectnav impossible on a robot, before
/// connecting (exit 2 naming the problem).
pub(super) fn check(setup: &Setup, text_only: bool) -> Result<(), Exit> {
    if setup.vlm.is_none() {
        return Err(usage(
            "--protocol objectnav on a robot needs --planner vlm: the model is also the perception stage \
             (there is no object detector on the robot, and the offline stand-in reads a simulator's label \
             buffers, which a real camera does not have)",
        ));
    }
    if setup.robot.dry_run {
        return Err(usage(
            "--protocol objectnav cannot --dry-run: every discrete action is a closed-loop motion on odometry, \
             which never finishes while nothing is published",
        ));
    }
    if text_only || !setup.robot.rgb_enabled {
        return Err(usage(
            "--protocol objectnav needs camera images for the planner's panorama and the perception stage: \
             drop --text-only and keep [rosbridge] rgb_enabled = true",
        ));
    }
    Ok(())
}

/// Runs one episode on the connected robot and prints the summary.
pub(super) async fn run(
    mut hal: RosbridgeHal,
    setup: &Setup,
    task: &ObjectNavTask,
    mut log: StepLog,
    mut interrupted: watch::Receiver<bool>,
    progress: &Progress,
) -> CmdResult {
    let Some(vlm) = setup.vlm.clone() else {
        return Err(internal("objectnav without a model (checked before connecting)"));
    };
    let guard =
        SafetyMotionGuard::new(setup.explore.safety.clone()).map_err(|e| usage(format!("[explore.safety] {e}")))?;
    hal.set_motion_guard(Arc::new(guard));
    let timeout_s = setup.prompt.timeout_s;
    let planner = VlmObjectNavPlanner::new(
        Arc::clone(&vlm),
        ObjectNavPromptConfig { timeout_s, ..ObjectNavPromptConfig::default() },
    );
    let parts = ObjectNavParts {
        planner: Box::new(planner),
        policy: Box::new(PixelGoalPolicy::new(PixelGoalConfig {
            stop_distance_m: STOP_DISTANCE_M,
            ..PixelGoalConfig::default()
        })),
        perception: Box::new(VlmGoalPerception::new(Arc::clone(&vlm), VlmPerceptionConfig::default())),
        scene: Box::new(VlmSceneAnalyzer::new(Arc::clone(&vlm), timeout_s)),
    };
    let config = ObjectNavLoopConfig { max_steps: task.max_steps, ..ObjectNavLoopConfig::default() };
    let inbox = VoiceInbox::new();
    let mut lp = ObjectNavLoop::new(config, task.target.clone(), parts)
        .map_err(|e| usage(e.to_string()))?
        .with_voice(inbox.clone());
    let speech = hal.speech_handle();
    let relay = spawn_relay(speech.clone(), inbox.clone(), progress.clone(), &setup.robot.topics, false);
    let start = hal.odometry().await.map(|o| o.pose).ok();
    let stop = hal.stop_handle();
    let clock = hal.clock();
    let url = setup.robot.url.trim().to_string();
    crate::exit::diag!(
        "nav rosmaster: objectnav: looking for {:?} (up to {} steps, {:.0} s); each step is a closed-loop \
         motion under the safety guard, each planner call a 12-view panorama turned on the spot; Ctrl-C stops \
         the robot",
        task.target,
        task.max_steps,
        setup.explore.max_time_s
    );
    let observer = Observer::new()
        .with_info("robot", json!(url))
        .with_info("command", json!("rosmaster"))
        .with_info("protocol", json!("objectnav"))
        .with_halt(Arc::clone(&setup.halt));
    let mut ctx = RunContext::new(&clock, &mut log).with_observer(observer);
    let started = Instant::now();
    let budget = Duration::from_secs_f64(setup.explore.max_time_s);
    let result = tokio::select! {
        r = tokio::time::timeout(budget, lp.run(&mut hal, &mut ctx)) => match r {
            Ok(r) => Ended::Loop(Box::new(r)),
            Err(_) => Ended::Cut("time_limit"),
        },
        _ = interrupted.wait_for(|i| *i) => Ended::Cut("interrupted"),
    };
    // whatever ended it, the robot stands still (a step cut mid-motion may have published last)
    let mut stopped = stop.stop().await;
    let home = matches!(&result, Ended::Loop(r) if matches!(**r, Ok(ref o) if o.end == ObjectNavEnd::GoHome));
    let home_note = if home {
        let note = go_home(&mut hal, start, &inbox, &interrupted).await;
        stopped = stop.stop().await;
        Some(note)
    } else {
        None
    };
    relay.abort();
    let elapsed = started.elapsed().as_secs_f64();
    if let Some(failure) = vlm.link_failure() {
        return Err(crate::exit::Exit::ModelLink(failure.to_string()));
    }
    let end = match &result {
        Ended::Loop(r) => r.as_ref().as_ref().map_or("failed", |o| o.end.as_str()),
        Ended::Cut(why) => *why,
    };
    let said = home_note.clone().unwrap_or_else(|| format!("Run ended: {}.", end.replace('_', " ")));
    final_announcements(&speech, progress, false, &setup.robot.topics.say, &said).await;
    let text = match result {
        Ended::Loop(r) => match *r {
            Ok(out) => summary(&out, elapsed, &hal, home_note.as_deref()),
            Err(e) => {
                return Err(match e {
                    NavError::Config(m) => usage(m),
                    other => internal(format!("objectnav on the robot failed (the robot was stopped): {other}")),
                });
            }
        },
        Ended::Cut(why) => format!(
            "nav rosmaster: objectnav ended ({why}) after {elapsed:.1} s; the step log has every step{}",
            if stopped.is_err() { " (the final stop burst failed: use the hardware e-stop)" } else { "" }
        ),
    };
    crate::exit::print(&text)?;
    Ok(0)
}

/// How the episode ended.
enum Ended {
    /// The loop returned (STOP, step budget, or an error).
    Loop(Box<Result<ObjectNavOutcome, NavError>>),
    /// The time budget or a signal cut it short.
    Cut(&'static str),
}

/// After `go home`: back to `start` through Nav2 (at most
/// [`HOME_TIMEOUT`]; a `stop` or a signal ends the way home), or, without
/// Nav2, nowhere. The sentence to announce.
async fn go_home(
    hal: &mut RosbridgeHal,
    start: Option<Pose2>,
    inbox: &VoiceInbox,
    interrupted: &watch::Receiver<bool>,
) -> String {
    let Some(start) = start else { return "I do not know where the start is. Stopped here.".into() };
    if let Err(e) = hal.start_goal(start).await {
        crate::exit::diag!("nav rosmaster: go home: no way back without Nav2 ({e}); the robot stays where it is");
        return "I cannot find the way home without a map. Stopped here.".into();
    }
    crate::exit::diag!("nav rosmaster: go home: Nav2 drives back to ({:.2}, {:.2})", start.x, start.y);
    let deadline = tokio::time::Instant::now() + HOME_TIMEOUT;
    let note = loop {
        if inbox.take().contains(&VoiceCommand::Stop) || *interrupted.borrow() {
            break "Stopped on the way home.";
        }
        if tokio::time::Instant::now() >= deadline {
            break "The way home took too long. Stopped.";
        }
        match hal.goal_state().await {
            Ok(NavGoalState::Succeeded) => break "I am home.",
            Ok(NavGoalState::Failed { .. }) | Err(_) => break "I could not get home. Stopped.",
            Ok(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    hal.cancel_goal().await.ok();
    note.into()
}

/// The final report (stdout).
fn summary(out: &ObjectNavOutcome, elapsed_s: f64, hal: &RosbridgeHal, home: Option<&str>) -> String {
    let s = &out.stats;
    let link = hal.link_status();
    let home = home.map(|h| format!("the operator's go home: {h}"));
    let stop_note = match out.end.as_str() {
        "stopped" => "the agent's STOP: target confirmed by the perception stage within the stop distance",
        "operator_stop" => "the operator's stop",
        "go_home" => home.as_deref().unwrap_or("the operator's go home"),
        "halted" => "halted",
        _ => "step budget used up without a confirmed target",
    };
    format!(
        "nav rosmaster: objectnav ended ({}) after {elapsed_s:.1} s, {} steps ({stop_note})\n  \
         planner calls {} | VLM calls {} | fallbacks {} | tokens {}+{} | ABABA {} | STUCK {}\n  \
         link {}: {} session(s)",
        out.end.as_str(),
        s.steps,
        s.planner_calls,
        s.vlm_calls,
        s.fallbacks,
        s.usage.prompt_tokens,
        s.usage.completion_tokens,
        s.ababa,
        s.stuck,
        link.endpoint,
        link.sessions,
    )
}
