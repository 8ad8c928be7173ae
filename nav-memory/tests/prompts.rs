//! Snapshots of the prompt texts: the Navigation Context after a scripted
//! 60-step episode, the exploration memory block, and merged grounding for
//! a mixed JSON + TXT set (fixtures in tests/fixtures/grounding/).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use nav_core::action::Action;
use nav_memory::grounding::{MergeFormat, merge_files};
use nav_memory::{ExplorationMemory, MemoryConfig, SceneObservation, SpatialMemory, StepFlags};
use std::path::PathBuf;

mod common;

/// 60 actions: drive, turn, drive, a 10-step spin (STUCK), drive on.
const SCRIPT: &str = "FFFFFFFFLLFFFFFFRRFFLLLLLLLLLLFFFFFFFFFFFFRFFFFFFFFFFFLLFFFF";

fn action(c: char) -> Action {
    match c {
        'F' => Action::Forward,
        'L' => Action::TurnLeft,
        'R' => Action::TurnRight,
        _ => Action::Stop,
    }
}

/// The scripted episode. The place update period is 10 here (not 20) so
/// that a 60-step episode shows a confirmed switch: labels at steps 0, 10,
/// … 50 are bedroom, bedroom, hallway, hallway, hallway (confirmed), kitchen.
fn scripted_episode() -> SpatialMemory {
    let config = MemoryConfig { place_update_period: 10, ..MemoryConfig::default() };
    let mut m = SpatialMemory::new(config).unwrap();
    m.push_dc(false, "bedroom", "Episode start: a bed is visible, but no mug.");
    let scenes = [
        SceneObservation::new("Bedroom")
            .with_objects(["bed", "lamp", "wardrobe", "window"])
            .with_description("A bedroom with a double bed, a lamp and a wardrobe."),
        SceneObservation::new("bedroom.").with_objects(["nightstand", "rug"]),
        SceneObservation::new("Hallway").with_objects(["door"]),
        SceneObservation::new("hallway").with_objects(["shoe rack"]),
        SceneObservation::new("HALLWAY")
            .with_objects(["door", "painting"])
            .with_description("A narrow hallway with several doors and a painting on the wall."),
        SceneObservation::new("kitchen").with_objects(["counter", "stove"]),
    ];
    assert_eq!(SCRIPT.len(), 60);
    for (i, c) in SCRIPT.chars().enumerate() {
        let scene = m.scene_due().then(|| scenes[i / 10].clone());
        m.observe_step(action(c), scene, StepFlags { branch: i == 45, collided: false, doorway: false });
        match i {
            29 => {
                m.push_dc(false, "corridor", "The bedroom has been searched; the hallway leads to other rooms.");
            }
            49 => {
                m.push_dc(
                    false,
                    "kitchen",
                    "Mugs are usually kept in a kitchen, and the open door at the end of the hallway looks like one.",
                );
            }
            _ => {}
        }
    }
    m
}

#[test]
fn navigation_context_after_scripted_60_steps() {
    let m = scripted_episode();
    let ctx = m.context(Some("#### Spatial\n- The green room is the kitchen."));
    insta::assert_snapshot!("navigation_context_60_steps", ctx.to_text());
    // Poses are sums of sines and cosines: round them so the snapshot does
    // not depend on the platform's last-bit libm behaviour.
    insta::assert_json_snapshot!("navigation_context_60_steps_json", ctx, {
        ".pose.x" => insta::rounded_redaction(9),
        ".pose.y" => insta::rounded_redaction(9),
        ".pose.yaw" => insta::rounded_redaction(9),
    });
}

#[test]
fn exploration_memory_prompt() {
    let m = common::typical_exploration();
    insta::assert_snapshot!("exploration_memory_prompt", m.to_prompt_text());
    insta::assert_snapshot!("exploration_memory_prompt_empty", ExplorationMemory::new(0.0).to_prompt_text());
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/grounding").join(name)
}

#[test]
fn merged_grounding_mixed_json_and_txt() {
    let files =
        [fixture("grounding_episode_1.json"), fixture("grounding_episode_2.json"), fixture("custom_grounding.txt")];
    let merged = merge_files(&files, MergeFormat::Txt).unwrap();
    assert!(merged.warnings.is_empty());
    insta::assert_snapshot!("merged_grounding_mixed_txt", merged.render_prompt_section());

    // The same set with a corrupt file and format `both`: the corrupt file
    // is skipped with a warning naming it, the rest is unchanged.
    let files = [
        fixture("grounding_episode_1.json"),
        fixture("corrupt.json"),
        fixture("grounding_episode_2.json"),
        fixture("custom_grounding.txt"),
    ];
    let merged = merge_files(&files, MergeFormat::Both).unwrap();
    assert_eq!(merged.warnings.len(), 1);
    assert!(merged.warnings[0].to_string().contains("corrupt.json"));
    insta::assert_snapshot!("merged_grounding_mixed_both", merged.render_prompt_section());
}
