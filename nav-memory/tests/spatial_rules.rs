//! The seed-000 rules with the seed's numbers: anchors (S = 2), dwell
//! (k = 3), localization (r = 1.5 m), DC queue (N = 5), STUCK (W = 10),
//! ABABA, and the added REVISIT rule.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use nav_core::action::Action;
use nav_memory::{
    AnchorId, AnchorReason, MemoryConfig, MemoryEvent, Pattern, PlaceId, SceneObservation, SceneTrigger, SpatialMemory,
    StepFlags, StuckGranularity,
};

const F: Action = Action::Forward;
const L: Action = Action::TurnLeft;
const R: Action = Action::TurnRight;

fn memory() -> SpatialMemory {
    SpatialMemory::new(MemoryConfig::default()).unwrap()
}

fn step(m: &mut SpatialMemory, a: Action) -> Vec<MemoryEvent> {
    m.observe_step(a, None, StepFlags::default())
}

/// One step with a scene label; the `scene_analyzed` log event is left out
/// (`scene_analysis_is_logged_with_its_trigger` checks it).
fn see(m: &mut SpatialMemory, a: Action, label: &str) -> Vec<MemoryEvent> {
    without_analysis(m.observe_step(a, Some(SceneObservation::new(label)), StepFlags::default()))
}

fn without_analysis(events: Vec<MemoryEvent>) -> Vec<MemoryEvent> {
    events.into_iter().filter(|e| !matches!(e, MemoryEvent::SceneAnalyzed { .. })).collect()
}

fn created(events: &[MemoryEvent]) -> Vec<AnchorReason> {
    events
        .iter()
        .filter_map(|e| match e {
            MemoryEvent::AnchorCreated { reason, .. } => Some(*reason),
            _ => None,
        })
        .collect()
}

#[test]
fn starts_with_one_unknown_place_and_anchor_at_origin() {
    let m = memory();
    assert_eq!(m.places().len(), 1);
    assert_eq!(m.current_place().place_type, "unknown");
    assert_eq!(m.anchors().len(), 1);
    assert_eq!(m.current_anchor().reason, AnchorReason::Start);
    assert_eq!(m.pose().x, 0.0);
    assert!(m.scene_due());
}

#[test]
fn anchor_every_two_forward_steps() {
    let mut m = memory();
    assert!(created(&step(&mut m, F)).is_empty());
    assert_eq!(created(&step(&mut m, F)), [AnchorReason::Distance]);
    let a1 = m.current_anchor();
    assert!((a1.pose.x - 0.5).abs() < 1e-12 && a1.pose.y.abs() < 1e-12);
    assert!(created(&step(&mut m, F)).is_empty());
    assert_eq!(created(&step(&mut m, F)), [AnchorReason::Distance]);
    assert!((m.current_anchor().pose.x - 1.0).abs() < 1e-12);
    // Consecutive anchors are linked both ways.
    let g = m.anchors();
    assert_eq!(g.get(AnchorId(0)).unwrap().neighbors, [AnchorId(1)]);
    assert_eq!(g.get(AnchorId(1)).unwrap().neighbors, [AnchorId(0), AnchorId(2)]);
    assert_eq!(g.get(AnchorId(2)).unwrap().neighbors, [AnchorId(1)]);
}

#[test]
fn rotation_followed_by_forward_creates_an_anchor() {
    let mut m = memory();
    assert!(created(&step(&mut m, L)).is_empty());
    assert!(created(&step(&mut m, L)).is_empty());
    assert_eq!(created(&step(&mut m, F)), [AnchorReason::Turn]);
    let p = m.current_anchor().pose;
    assert!((p.yaw.to_degrees() - 60.0).abs() < 1e-9);
    assert!((p.x - 0.125).abs() < 1e-9 && (p.y - 0.25 * 60f64.to_radians().sin()).abs() < 1e-9);
    // A left turn undone by a right turn is no rotation: the next anchor
    // comes from the distance rule.
    step(&mut m, L);
    step(&mut m, R);
    assert!(created(&step(&mut m, F)).is_empty());
    assert_eq!(created(&step(&mut m, F)), [AnchorReason::Distance]);
}

#[test]
fn branch_flag_creates_an_anchor_after_motion_only() {
    let mut m = memory();
    let branch = StepFlags { branch: true, ..StepFlags::default() };
    // No motion since A0: the current anchor already marks this spot.
    assert!(created(&m.observe_step(L, None, branch)).is_empty());
    step(&mut m, R);
    assert_eq!(created(&m.observe_step(F, None, branch)), [AnchorReason::Branch]);
}

#[test]
fn collided_steps_do_not_move_dead_reckoning() {
    let mut m = memory();
    let hit = StepFlags { collided: true, ..StepFlags::default() };
    for _ in 0..4 {
        assert!(created(&m.observe_step(F, None, hit)).is_empty());
    }
    assert_eq!(m.pose().x, 0.0);
    assert_eq!(m.anchors().len(), 1);
}

#[test]
fn first_label_names_the_initial_place() {
    let mut m = memory();
    let ev = see(&mut m, F, "Bed-Room.");
    assert_eq!(ev, [MemoryEvent::PlaceNamed { place: PlaceId(0), place_type: "bed room".into() }]);
    assert_eq!(m.places().len(), 1);
    assert_eq!(m.current_place().place_type, "bed room");
}

#[test]
fn dwell_single_noisy_label_never_splits_a_place() {
    let mut m = memory();
    see(&mut m, F, "kitchen");
    // Scene labels every 20 steps: kitchen, HALLWAY (noise), kitchen, kitchen.
    for (i, label) in ["hallway", "kitchen", "kitchen"].iter().enumerate() {
        for _ in 0..19 {
            step(&mut m, if i % 2 == 0 { F } else { L });
        }
        let ev = see(&mut m, F, label);
        assert!(!ev.iter().any(|e| matches!(e, MemoryEvent::PlaceCreated { .. })), "{ev:?}");
    }
    assert_eq!(m.places().len(), 1);
    assert_eq!(m.current_place().place_type, "kitchen");
    assert_eq!(m.pending_switch(), None);
    assert_eq!(m.counters().unconfirmed_labels, 1);
}

#[test]
fn dwell_interrupted_candidates_do_not_switch() {
    let mut m = memory();
    see(&mut m, F, "kitchen");
    for label in ["corridor", "corridor", "bedroom", "corridor", "corridor"] {
        see(&mut m, F, label);
    }
    assert_eq!(m.places().len(), 1);
    assert_eq!(m.pending_switch(), Some(("corridor", 2)));
}

#[test]
fn dwell_k3_confirms_a_switch_with_a_new_place_and_first_anchor() {
    let mut m = memory();
    see(&mut m, F, "kitchen");
    assert!(see(&mut m, L, "Hallway").is_empty());
    assert_eq!(m.pending_switch(), Some(("corridor", 1)));
    assert!(see(&mut m, L, "hallway!").is_empty());
    assert_eq!(m.pending_switch(), Some(("corridor", 2)));
    // This step also qualifies for a turn anchor; only one anchor results.
    let ev = without_analysis(m.observe_step(
        F,
        Some(SceneObservation::new("HALLWAY").with_objects(["Door", "rug"]).with_description("A narrow hallway.")),
        StepFlags::default(),
    ));
    assert_eq!(
        ev,
        [
            MemoryEvent::PlaceCreated { place: PlaceId(1), place_type: "corridor".into() },
            MemoryEvent::PlaceSwitched { from: PlaceId(0), to: PlaceId(1) },
            MemoryEvent::AnchorCreated { anchor: AnchorId(1), place: PlaceId(1), reason: AnchorReason::NewPlace },
        ]
    );
    let p = m.current_place();
    assert_eq!(p.anchors, [AnchorId(1)]);
    assert_eq!(p.objects.iter().collect::<Vec<_>>(), ["door", "rug"]);
    assert_eq!(p.semantic_description, "A narrow hallway.");
    assert_eq!(m.counters().place_switches, 1);
}

#[test]
fn abandoned_candidate_objects_stay_in_the_current_place() {
    let mut m = memory();
    see(&mut m, F, "kitchen");
    m.observe_step(F, Some(SceneObservation::new("bathroom").with_objects(["sink"])), StepFlags::default());
    see(&mut m, F, "kitchen");
    assert!(m.current_place().objects.contains("sink"));
}

#[test]
fn empty_and_unknown_labels_are_ignored() {
    let mut m = memory();
    see(&mut m, F, "kitchen");
    see(&mut m, F, "corridor");
    see(&mut m, F, "?!");
    see(&mut m, F, "Unknown.");
    // no evidence against it: the pending type has held since its sighting two steps ago
    assert_eq!(m.pending_switch(), Some(("corridor", 3)));
    assert_eq!(m.places().len(), 1, "a switch needs a second sighting");
    assert!(see(&mut m, F, "corridor").iter().any(|e| matches!(e, MemoryEvent::PlaceCreated { .. })));
}

#[test]
fn the_dwell_counts_steps_not_analyses() {
    // a label seen once, then again k - 1 = 2 steps later, has held for 3 steps: confirmed
    let mut m = memory();
    see(&mut m, F, "kitchen");
    see(&mut m, F, "bedroom");
    step(&mut m, F);
    assert_eq!(m.scene_trigger(false), Some(SceneTrigger::Confirm), "the confirming look is due");
    let ev = see(&mut m, F, "bedroom");
    assert!(ev.iter().any(|e| matches!(e, MemoryEvent::PlaceCreated { .. })), "{ev:?}");
    assert_eq!(m.current_place().place_type, "bedroom");
    // one look that disagrees drops the pending type
    see(&mut m, F, "kitchen");
    see(&mut m, F, "bedroom");
    step(&mut m, F);
    assert_eq!(m.current_place().place_type, "bedroom");
    assert_eq!(m.pending_switch(), None);
}

#[test]
fn scene_analysis_is_logged_with_its_trigger() {
    let mut m = memory();
    assert_eq!(m.scene_trigger(false), Some(SceneTrigger::First));
    let ev = m.observe_step(F, Some(SceneObservation::new("Kitchen")), StepFlags::default());
    assert!(ev.contains(&MemoryEvent::SceneAnalyzed {
        trigger: SceneTrigger::First,
        label: "Kitchen".into(),
        place_type: "kitchen".into(),
        pending: None,
        dwell_steps: 0,
        confirmed: false,
    }));
    // nothing due until the period has passed since the latest analysis, unless a doorway was crossed
    // 0.75 m (doorway_min_move_m) or more from where the latest analysis ran
    assert_eq!(m.scene_trigger(false), None);
    assert_eq!(m.scene_trigger(true), None, "a doorway right where the robot just looked shows nothing new");
    for _ in 0..4 {
        step(&mut m, F);
    }
    assert_eq!(m.scene_trigger(true), Some(SceneTrigger::Doorway));
    let ev =
        m.observe_step(F, Some(SceneObservation::new("hallway")), StepFlags { doorway: true, ..StepFlags::default() });
    assert!(ev.contains(&MemoryEvent::SceneAnalyzed {
        trigger: SceneTrigger::Doorway,
        label: "hallway".into(),
        place_type: "corridor".into(),
        pending: Some("corridor".into()),
        dwell_steps: 1,
        confirmed: false,
    }));
    // an analyzer that could not tell is an analysis too: it restarts the period
    see(&mut m, F, "kitchen");
    for _ in 0..18 {
        step(&mut m, F);
    }
    assert_eq!(m.scene_trigger(false), None);
    step(&mut m, F);
    assert_eq!(m.scene_trigger(false), Some(SceneTrigger::Periodic));
    assert_eq!(m.counters().scene_analyses, 3);
}

#[test]
fn a_confirming_look_that_names_nothing_is_retried_once_then_left_to_the_cadence() {
    let mut m = memory();
    see(&mut m, F, "kitchen");
    see(&mut m, F, "bedroom");
    step(&mut m, F);
    assert_eq!(m.scene_trigger(false), Some(SceneTrigger::Confirm));
    // a bare wall: no label; the switch stays pending and the next look comes k - 1 = 2 steps later
    see(&mut m, F, "");
    assert_eq!(m.pending_switch().map(|p| p.0), Some("bedroom"));
    assert_eq!(m.scene_trigger(false), None, "no analysis every step while the view names nothing");
    step(&mut m, F);
    assert_eq!(m.scene_trigger(false), Some(SceneTrigger::Confirm), "one retry");
    see(&mut m, F, "");
    for _ in 0..10 {
        assert_eq!(m.scene_trigger(false), None, "after the retry only the cadence looks");
        step(&mut m, F);
    }
    assert_eq!(m.pending_switch().map(|p| p.0), Some("bedroom"));
    // the next look that names the pending type confirms it at once: it has held all along
    let ev = see(&mut m, F, "bedroom");
    assert!(ev.iter().any(|e| matches!(e, MemoryEvent::PlaceCreated { .. })), "{ev:?}");
}

#[test]
fn doorway_min_move_zero_analyses_at_every_crossing() {
    let mut m = SpatialMemory::new(MemoryConfig { doorway_min_move_m: 0.0, ..MemoryConfig::default() }).unwrap();
    see(&mut m, F, "kitchen");
    assert_eq!(m.scene_trigger(true), Some(SceneTrigger::Doorway));
    let bad = MemoryConfig { doorway_min_move_m: f64::NAN, ..MemoryConfig::default() };
    assert!(SpatialMemory::new(bad).unwrap_err().to_string().contains("doorway_min_move_m"));
}

/// Runs a place switch to `label` with k = 3 observations.
fn switch_to(m: &mut SpatialMemory, label: &str) -> Vec<MemoryEvent> {
    let mut all = Vec::new();
    for _ in 0..3 {
        all.extend(see(m, F, label));
    }
    all
}

#[test]
fn ababa_over_place_types() {
    let mut m = memory();
    see(&mut m, F, "kitchen");
    switch_to(&mut m, "corridor");
    let ev = switch_to(&mut m, "kitchen");
    assert!(!ev.iter().any(|e| matches!(e, MemoryEvent::Ababa { .. })));
    let ev = switch_to(&mut m, "hallway");
    assert!(ev.contains(&MemoryEvent::Ababa { a: "kitchen".into(), b: "corridor".into() }), "{ev:?}");
    assert_eq!(m.places().len(), 4, "places are never reused");
    assert_eq!(m.counters().ababa, 1);
    let hint = m.avoid_hint().unwrap();
    assert!(hint.has(Pattern::Ababa));
    assert_eq!(hint.to_string(), "pattern:ABABA; avoid:kitchen");
    // The pattern ends with the next different place.
    switch_to(&mut m, "bedroom");
    assert!(m.avoid_hint().is_none());
}

#[test]
fn stuck_anchor_granularity_spinning_in_place() {
    let mut m = memory();
    for i in 1..=9 {
        assert!(step(&mut m, L).is_empty(), "step {i}");
    }
    let ev = step(&mut m, L);
    assert_eq!(ev, [MemoryEvent::Stuck { place: PlaceId(0), anchor: AnchorId(0) }]);
    // A long stay is one event.
    for _ in 0..20 {
        assert!(step(&mut m, R).is_empty());
    }
    assert!(m.is_stuck());
    assert_eq!(m.avoid_hint().unwrap().to_string(), "pattern:STUCK");
    // Moving on (a new anchor) clears it; the next spin is a new event.
    step(&mut m, F);
    assert!(!m.is_stuck());
    for _ in 0..9 {
        step(&mut m, L);
    }
    assert!(m.is_stuck());
    assert_eq!(m.counters().stuck, 2);
}

#[test]
fn stuck_anchor_granularity_ignores_a_robot_crossing_a_room() {
    let mut m = memory();
    for _ in 0..100 {
        assert!(!step(&mut m, F).iter().any(|e| matches!(e, MemoryEvent::Stuck { .. })));
    }
    assert_eq!(m.counters().stuck, 0);
}

#[test]
fn stuck_anchor_granularity_pinned_against_a_wall() {
    let mut m = memory();
    let hit = StepFlags { collided: true, ..StepFlags::default() };
    let mut events = Vec::new();
    for _ in 0..10 {
        events.extend(m.observe_step(F, None, hit));
    }
    assert_eq!(events, [MemoryEvent::Stuck { place: PlaceId(0), anchor: AnchorId(0) }]);
}

#[test]
fn stuck_place_granularity_is_the_literal_seed_rule() {
    let config = MemoryConfig { stuck_granularity: StuckGranularity::Place, ..MemoryConfig::default() };
    let mut m = SpatialMemory::new(config).unwrap();
    // Driving straight for 10 steps in one place is STUCK under this reading.
    let mut events = Vec::new();
    for _ in 0..10 {
        events.extend(step(&mut m, F));
    }
    assert!(events.contains(&MemoryEvent::Stuck { place: PlaceId(0), anchor: AnchorId(5) }), "{events:?}");
    // A place switch within the window clears it.
    see(&mut m, F, "kitchen");
    switch_to(&mut m, "corridor");
    assert!(!m.is_stuck());
}

#[test]
fn localization_hints_same_type_within_r() {
    let mut m = memory();
    see(&mut m, F, "kitchen"); // step 1: x = 0.25
    for _ in 0..5 {
        step(&mut m, F); // x = 1.5, anchors at 0.5, 1.0, 1.5
    }
    switch_to(&mut m, "corridor"); // x = 2.25: first anchor of P1
    for _ in 0..6 {
        step(&mut m, L); // now facing -x
    }
    step(&mut m, F); // turn anchor in the corridor at x = 2.0
    let hints = m.localization_hints();
    // Only corridor anchors count: the kitchen anchor A4 at x = 2.0 is 0 m
    // away but of another type.
    assert_eq!(hints.len(), 1, "{hints:?}");
    assert_eq!(hints[0].place, PlaceId(1));
    assert!((hints[0].distance_m - 0.25).abs() < 1e-9);
    switch_to(&mut m, "kitchen"); // x = 1.25, a new kitchen place P2
    let hints = m.localization_hints();
    // Kitchen anchors A0..A4 of P0 at x = 0.0 … 2.0 are all within 1.5 m.
    let mut ids: Vec<u32> = hints.iter().map(|h| h.anchor.0).collect();
    ids.sort_unstable();
    assert_eq!(ids, [0, 1, 2, 3, 4]);
    assert!(hints.iter().all(|h| h.place == PlaceId(0) && h.distance_m <= 1.5));
    assert!(hints.windows(2).all(|w| w[0].distance_m <= w[1].distance_m), "nearest first");
    // Hints only: nothing was merged.
    assert_eq!(m.places().len(), 3);
}

#[test]
fn revisit_fires_when_coming_back_to_an_explored_cluster() {
    let mut m = memory();
    see(&mut m, F, "corridor");
    for _ in 0..19 {
        step(&mut m, F); // x = 5.0, anchors every 0.5 m
    }
    for _ in 0..6 {
        step(&mut m, L); // facing back
    }
    let mut revisits = Vec::new();
    for _ in 0..6 {
        for e in step(&mut m, F) {
            if let MemoryEvent::Revisit { anchor, hints } = e {
                revisits.push((anchor, hints));
            }
        }
    }
    assert_eq!(revisits.len(), 1, "rising edge only: {revisits:?}");
    let (anchor, hints) = &revisits[0];
    let x = m.anchors().get(*anchor).unwrap().pose.x;
    assert!((x - 3.75).abs() < 1e-9, "first anchor with two old hints is at x = 3.75, got {x}");
    assert!(hints.len() >= 2);
    assert!(hints.iter().all(|h| h.0 + 6 <= anchor.0));
    assert_eq!(m.avoid_hint().unwrap().to_string(), "pattern:REVISIT; avoid:corridor");
    assert_eq!(m.counters().revisit, 1);
}

#[test]
fn dc_queue_keeps_five_and_records_the_hint_of_the_moment() {
    let mut m = memory();
    for i in 0..7 {
        let r = m.push_dc(i % 2 == 0, "kitchen", &format!("reason {i}"));
        assert_eq!(r.idx, (i + 1).min(5));
        assert_eq!(r.avoid_hint, None);
    }
    for _ in 0..10 {
        step(&mut m, L);
    }
    let r = m.push_dc(false, "corridor", "spinning");
    assert_eq!(r.avoid_hint.as_deref(), Some("pattern:STUCK"));
    let whys: Vec<&str> = m.dc_queue().iter().map(|r| r.why.as_str()).collect();
    assert_eq!(whys, ["reason 3", "reason 4", "reason 5", "reason 6", "spinning"]);
}

#[test]
fn events_serialize_with_a_tag_for_the_step_log() {
    let e = MemoryEvent::AnchorCreated { anchor: AnchorId(3), place: PlaceId(1), reason: AnchorReason::Turn };
    assert_eq!(
        serde_json::to_string(&e).unwrap(),
        r#"{"event":"anchor_created","anchor":3,"place":1,"reason":"turn"}"#
    );
}
