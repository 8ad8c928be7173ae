//! The Navigation Context must stay bounded: measured with a real tokenizer
//! (o200k_base) over a scripted 1,000-step episode with long VLM strings.
//! Run with `--nocapture` to see the counts recorded in docs/BENCHMARKS.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use nav_core::action::Action;
use nav_memory::{MemoryConfig, SceneObservation, SpatialMemory, StepFlags};

/// The budget with the default caps: the Navigation Context a planner
/// reads (places with where they lie, where the robot has been, the
/// headings tried from here, the DC queue) stays within 600 o200k tokens.
const TOKEN_CAP: usize = 600;

const TYPES: [&str; 5] = ["Kitchen", "hallway", "master bedroom", "living room", "bathroom"];

/// Runs a deterministic xorshift script; scene labels every 20 steps that
/// change every 80 steps (so switches are confirmed), deliberately long
/// strings everywhere. `checkpoint` sees the memory after every step.
fn episode(steps: usize, mut checkpoint: impl FnMut(usize, &SpatialMemory)) -> SpatialMemory {
    let mut m = SpatialMemory::new(MemoryConfig::default()).unwrap();
    let mut s: u64 = 0x2545_F491_4F6C_DD1D;
    let long_why = "Because the goal object, a coffee mug, is usually found on kitchen counters or dining tables, \
                    and the corridor to the left seems to lead toward the back of the house where kitchens often are.";
    m.push_dc(false, "kitchen or dining room adjacent to the living area", long_why);
    m.note_heading(30.0);
    for i in 0..steps {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        // Mostly forward with frequent turns: the path crosses itself, so
        // revisit hints and patterns show up along the way.
        let action = match s % 10 {
            0..=5 => Action::Forward,
            6 | 7 => Action::TurnLeft,
            _ => Action::TurnRight,
        };
        let scene = m.scene_due().then(|| {
            SceneObservation::new(TYPES[(i / 80) % TYPES.len()])
                .with_objects((0..12).map(|k| format!("object number {k} with a long descriptive name")))
                .with_description(long_why)
        });
        m.observe_step(action, scene, StepFlags { branch: s % 17 == 0, collided: s % 23 == 0, doorway: false });
        if i % 25 == 24 {
            m.push_dc(s % 2 == 0, "kitchen or dining room adjacent to the living area", long_why);
            m.note_heading(f64::from((s % 12) as u32) * 30.0 - 150.0);
        }
        // a robot that keeps asking from one spot (blocked): tried headings pile up here
        if (400..420).contains(&i) {
            m.push_dc(false, "corridor", long_why);
            m.note_heading(f64::from((i % 7) as u32) * 45.0 - 135.0);
        }
        checkpoint(i + 1, &m);
    }
    m
}

fn tokens(text: &str) -> usize {
    let bpe = tiktoken_rs::o200k_base().unwrap();
    bpe.encode_with_special_tokens(text).len()
}

#[test]
fn context_text_stays_under_the_token_cap() {
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let mut at = std::collections::BTreeMap::new();
    let mut worst = (0usize, 0usize, String::new());
    let start = tokens(&episode(0, |_, _| {}).context(None).to_text());
    episode(1_000, |step, m| {
        let text = m.context(None).to_text();
        let n = bpe.encode_with_special_tokens(&text).len();
        if step == 100 || step == 300 || step == 1_000 {
            at.insert(step, n);
        }
        if n > worst.0 {
            worst = (n, step, text);
        }
    });
    println!(
        "navigation context: {start} o200k tokens at step 0, {} at 100, {} at 300, {} at 1,000",
        at[&100], at[&300], at[&1_000]
    );
    println!("largest over all 1,000 steps: {} tokens at step {}:\n{}", worst.0, worst.1, worst.2);
    assert!(worst.0 <= TOKEN_CAP, "{} tokens at step {}:\n{}", worst.0, worst.1, worst.2);
    // Bounded: the late episode costs no more than the early one plus the
    // optional hint lines.
    assert!(at[&1_000] <= at[&100] + 120, "{at:?}");
}

mod common;

#[test]
fn exploration_prompt_stays_near_200_tokens() {
    use nav_core::discovery::Significance;
    use nav_core::geometry::Point2;
    use nav_memory::{ActionRecord, ExplorationMemory, Frontier};
    let mut m = ExplorationMemory::new(0.0);
    let empty = tokens(&m.to_prompt_text());
    for (i, room) in
        ["hallway", "kitchen", "living room", "bedroom", "bathroom", "office", "garage", "laundry"].iter().enumerate()
    {
        m.record_discovery(room, "", Significance::Room, Point2::new(i as f64, 0.0));
        for o in ["table", "chair", "lamp", "plant"] {
            m.record_discovery(o, "", Significance::Landmark, Point2::new(i as f64, 0.5));
        }
        m.set_explored_pct(room, 50.0 + i as f64);
    }
    m.update_frontiers((0..10).map(|i| Frontier {
        id: i,
        direction_deg: 36.0 * i as f64,
        distance_m: 1.0 + i as f64,
        kind: "doorway".into(),
        width_m: Some(0.9),
    }));
    for i in 0..10 {
        m.record_dead_end(30.0 * i as f64, "wall", Point2::new(i as f64, 1.0));
    }
    for _ in 0..10 {
        m.update_after_action(ActionRecord::new(
            "move_toward",
            "forward_left, medium",
            "safety_override at 0.3m",
            Point2::new(0.0, 0.0),
        ));
    }
    m.update_time(1234.0);
    let text = m.to_prompt_text();
    println!("{text}");
    let full = tokens(&text);
    let typical = tokens(&common::typical_exploration().to_prompt_text());
    println!(
        "exploration memory: {empty} tokens empty, {typical} for a typical house, {full} with every list full of long entries"
    );
    assert!(empty <= 80, "{empty}");
    assert!(typical <= 250, "{typical}");
    assert!(full <= 320, "{full}");
}
