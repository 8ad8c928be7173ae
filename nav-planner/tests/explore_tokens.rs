//! The explore protocol's token budget (issue 16 item 6): the input tokens of
//! a decision cycle as OpenAI bills them — text counted with tiktoken's
//! `o200k_base`, the tool definitions as the API renders them
//! ([`openai_tool_tokens`]), the image at `detail: low` (85 tokens) — stay
//! within [`START_BUDGET`] (1,050: the 1,000 plus what `rotate`'s
//! enum of allowed angles costs) for the first cycle of a run,
//! [`AFTER_100_BUDGET`] (the 1,200) for the cycle after 100 and
//! [`LATER_BUDGET`] for every cycle up to then: the seven strict tool
//! schemas (481), the system prompt (219) and the image (85) leave 232
//! tokens for the sensor text at the start (1,017 in all), with nothing
//! dropped that seed 003 lists. The worst-cycle budget is the measured one, rounded up, to
//! catch any regression (docs/PROVIDERS.md, "Explore tokens per cycle").
//!
//! The requests measured are the real ones of a run: the explore loop in the
//! built-in `house_a` with its camera on, a model double answering every
//! request with the perceive-then-reason text and a mix of tool calls a
//! model makes (frontier goals, short moves, turns, path checks, room and
//! landmark reports), so the exploration memory, the recent actions and the
//! previous action's result fill up as they would.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use nav_hal::arena::Arena;
use nav_planner::navigator::StepLog;
use nav_planner::navigator::episode::{EpisodeSpec, PlannerChoice, run_episode};
use nav_planner::navigator::estimate::{RequestTokens, TokenCounter, openai_tool_tokens};
use nav_planner::navigator::explore_loop::Pacing;
use nav_planner::protocol::ProtocolKind;
use nav_planner::vlm::{FnVlm, Provider, RawToolCall, VlmRequest, VlmResponse};
use serde_json::json;

/// The budget at the start of a run: 1,000 plus what `rotate.degrees` as
/// an enum of the allowed angles costs (measured 1,017).
const START_BUDGET: u64 = 1_050;
/// The budget of the cycle after 100 (measured 1,182).
const AFTER_100_BUDGET: u64 = 1_200;
/// The budget of every cycle up to the 100th (measured at most 1,268).
const LATER_BUDGET: u64 = 1_270;
/// Cycles measured.
const CYCLES: u32 = 101;

/// The reply to the `n`-th first request of a cycle (follow-ups after a
/// path check get a move).
fn answer(n: usize, req: &VlmRequest) -> VlmResponse {
    let call = |name: &str, args: serde_json::Value| RawToolCall::new(format!("c{n}-{name}"), name, args);
    if !req.turns.is_empty() {
        return VlmResponse::from_tool_calls(vec![call(
            "move_toward",
            json!({"direction": "forward_left", "speed": "slow", "duration_s": 2.0}),
        )]);
    }
    let action = match n % 6 {
        0 | 3 => call(
            "navigate_to_goal",
            json!({"goal_type": "frontier", "frontier_id": 1, "x": null, "y": null,
            "reason": "largest unexplored opening"}),
        ),
        1 => call("move_toward", json!({"direction": "forward", "speed": "medium", "duration_s": 3.0})),
        2 => call("rotate", json!({"degrees": if n % 4 == 2 { 90 } else { -45 }})),
        4 => call("check_path_clear", json!({"direction": "right", "distance_m": 2.0})),
        _ => call("move_toward", json!({"direction": "right", "speed": "slow", "duration_s": 2.5})),
    };
    let mut calls = vec![action];
    if n % 10 == 5 {
        calls.push(call(
            "report_discovery",
            json!({"label": format!("room {}", n / 10),
            "notes": "a new room behind the doorway", "significance": "room"}),
        ));
    } else if n % 7 == 3 {
        calls.push(call(
            "report_discovery",
            json!({"label": format!("cabinet {n}"),
            "notes": "a tall cabinet by the wall", "significance": "landmark"}),
        ));
    }
    let mut r = VlmResponse::from_tool_calls(calls);
    r.text = "PERCEIVE: a corridor ahead, a doorway on the left. REASON: the doorway leads to unexplored space.".into();
    r
}

/// The first request of every cycle of an explore run of `cycles`
/// decisions in `house_a` with the camera on.
async fn cycle_requests(cycles: u32) -> Vec<VlmRequest> {
    let seen: Arc<Mutex<Vec<VlmRequest>>> = Arc::default();
    let log = seen.clone();
    let vlm = FnVlm::new(move |req: &VlmRequest| {
        let mut seen = log.lock().unwrap();
        let n = seen.iter().filter(|r| r.turns.is_empty()).count();
        let reply = answer(n, req);
        seen.push(req.clone());
        Ok(reply)
    });
    let mut spec = EpisodeSpec::new(Arena::builtin("house_a").unwrap(), "builtin:house_a");
    spec.protocol = ProtocolKind::Explore;
    spec.planner = PlannerChoice::Vlm;
    spec.vlm = Some(Arc::new(vlm));
    spec.text_only = false;
    spec.max_steps = Some(cycles);
    spec.explore.max_time_s = 3_600.0;
    spec.explore.pacing = Pacing::Simulated { time_scale: 1.0e6 };
    let mut log = StepLog::memory();
    run_episode(&spec, &mut log, &mut |_| {}).await.unwrap();
    let seen = seen.lock().unwrap();
    seen.iter().filter(|r| r.turns.is_empty()).cloned().collect()
}

/// One cycle's input tokens as OpenAI bills them (o200k): the system
/// prompt, the tool definitions as OpenAI renders them, the user text, the
/// image at `detail: low`.
struct Cycle {
    t: RequestTokens,
    /// The tools as OpenAI renders them.
    tools: u64,
}

impl Cycle {
    fn measure(counter: &TokenCounter, req: &VlmRequest) -> Self {
        Self { t: RequestTokens::measure(counter, req).unwrap(), tools: openai_tool_tokens(counter, &req.tools) }
    }
    fn images(&self) -> u64 {
        self.t.input(Provider::OpenAi) - self.t.text()
    }
    fn input(&self) -> u64 {
        self.t.system + self.tools + self.t.user_text + self.images()
    }
}

fn breakdown(c: &Cycle) -> String {
    format!(
        "system {} + tools {} (as JSON {}) + user text {} + images {} = {}",
        c.t.system,
        c.tools,
        c.t.tools,
        c.t.user_text,
        c.images(),
        c.input()
    )
}

#[tokio::test]
async fn explore_cycles_stay_within_the_token_budget() {
    let counter = TokenCounter::o200k().unwrap();
    let requests = cycle_requests(CYCLES).await;
    assert!(requests.len() >= CYCLES as usize, "{} cycles ran", requests.len());
    let tokens: Vec<Cycle> = requests.iter().map(|r| Cycle::measure(&counter, r)).collect();
    for (i, t) in tokens.iter().enumerate().step_by(10) {
        eprintln!("cycle {i:3}: {}", breakdown(t));
    }
    let first = &tokens[0];
    assert_eq!(first.t.images.len(), 1, "the first cycle sends the camera image");
    assert!(first.input() <= START_BUDGET, "first cycle: {}", breakdown(first));
    let (worst_i, worst) = tokens.iter().enumerate().max_by_key(|(_, t)| t.input()).unwrap();
    eprintln!("worst, cycle {worst_i}: {}", breakdown(worst));
    eprintln!("last, cycle {}: {}", tokens.len() - 1, breakdown(&tokens[tokens.len() - 1]));
    let after_100 = &tokens[CYCLES as usize - 1];
    assert!(after_100.input() <= AFTER_100_BUDGET, "cycle {}: {}", CYCLES - 1, breakdown(after_100));
    for (i, t) in tokens.iter().enumerate() {
        assert!(t.input() <= LATER_BUDGET, "cycle {i}: {}", breakdown(t));
    }
}
