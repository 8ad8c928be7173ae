//! Property tests: anchor links stay symmetric, the memory stays consistent
//! and snapshots round-trip exactly, whatever the action/scene sequence.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use nav_core::action::Action;
use nav_memory::{MemoryConfig, SceneObservation, SpatialMemory, StepFlags, StuckGranularity};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Step {
    action: Action,
    scene: Option<SceneObservation>,
    flags: StepFlags,
    dc: Option<(bool, String)>,
}

fn arb_step() -> impl Strategy<Value = Step> {
    let action = prop::sample::select(Action::ALL.to_vec());
    let label = prop::sample::select(vec!["kitchen", "Hallway", "corridor", "bed room", "", "Unknown", "주방!"]);
    let scene = prop::option::weighted(
        0.3,
        (label, prop::collection::vec("[a-z]{1,6}", 0..3), "[ -~]{0,30}")
            .prop_map(|(l, objs, d)| SceneObservation::new(l).with_objects(objs).with_description(d)),
    );
    let flags = (prop::bool::weighted(0.1), prop::bool::weighted(0.1)).prop_map(|(branch, collided)| StepFlags {
        branch,
        collided,
        doorway: false,
    });
    let dc = prop::option::weighted(0.1, (any::<bool>(), "\\PC{0,40}"));
    (action, scene, flags, dc).prop_map(|(action, scene, flags, dc)| Step { action, scene, flags, dc })
}

fn arb_config() -> impl Strategy<Value = MemoryConfig> {
    (1u32..4, 1u32..4, 1usize..6, 1usize..12, any::<bool>(), 0.5f64..2.5).prop_map(|(s, k, n, w, place, r)| {
        MemoryConfig {
            anchor_forward_steps: s,
            dwell_k: k,
            dc_capacity: n,
            stuck_window: w,
            stuck_granularity: if place { StuckGranularity::Place } else { StuckGranularity::Anchor },
            localization_radius_m: r,
            ..MemoryConfig::default()
        }
    })
}

fn run(m: &mut SpatialMemory, steps: &[Step]) -> Vec<String> {
    let mut log = Vec::new();
    for s in steps {
        let ev = m.observe_step(s.action, s.scene.clone(), s.flags);
        log.push(serde_json::to_string(&ev).unwrap());
        if let Some((flag, why)) = &s.dc {
            let r = m.push_dc(*flag, "kitchen", why);
            log.push(serde_json::to_string(r).unwrap());
        }
    }
    log
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn anchor_links_are_symmetric_and_state_consistent(config in arb_config(), steps in prop::collection::vec(arb_step(), 0..150)) {
        let mut m = SpatialMemory::new(config.clone()).unwrap();
        run(&mut m, &steps);
        for a in m.anchors().anchors() {
            for n in &a.neighbors {
                let b = m.anchors().get(*n).unwrap();
                prop_assert!(b.neighbors.contains(&a.id), "{} → {} not symmetric", a.id, n);
            }
        }
        prop_assert!(m.validate().is_ok(), "{:?}", m.validate());
        prop_assert!(m.dc_queue().len() <= config.dc_capacity);
        let idx: Vec<usize> = m.dc_queue().iter().map(|r| r.idx).collect();
        prop_assert_eq!(idx, (1..=m.dc_queue().len()).collect::<Vec<_>>());
        // Every place except possibly the unnamed start has a named type.
        for p in &m.places()[1..] {
            prop_assert!(p.is_named());
        }
    }

    #[test]
    fn snapshot_round_trips_exactly(
        config in arb_config(),
        before in prop::collection::vec(arb_step(), 0..120),
        after in prop::collection::vec(arb_step(), 0..40),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.json");
        let mut m = SpatialMemory::new(config).unwrap();
        run(&mut m, &before);
        m.save_json(&path).unwrap();
        let mut loaded = SpatialMemory::load_json(&path).unwrap();
        prop_assert_eq!(&loaded, &m);
        // A loaded memory continues exactly like the original.
        let log_a = run(&mut m, &after);
        let log_b = run(&mut loaded, &after);
        prop_assert_eq!(log_a, log_b);
        prop_assert_eq!(&loaded, &m);
    }

    #[test]
    fn context_is_bounded_for_any_episode(steps in prop::collection::vec(arb_step(), 0..200), grounding in "\\PC{0,3000}") {
        let mut m = SpatialMemory::new(MemoryConfig::default()).unwrap();
        run(&mut m, &steps);
        let ctx = m.context(Some(&grounding));
        let limits = &m.config().context;
        prop_assert!(ctx.recent_places.len() <= limits.recent_places);
        prop_assert!(ctx.recent_anchors.len() <= limits.recent_anchors);
        prop_assert!(ctx.hints.len() <= limits.hints);
        prop_assert!(ctx.place.objects.len() <= limits.objects);
        prop_assert!(ctx.dc_queue.iter().all(|r| r.why.chars().count() <= limits.why_chars));
        prop_assert!(ctx.grounding.as_ref().is_none_or(|g| g.chars().count() <= limits.grounding_chars));
        let json: serde_json::Value = serde_json::from_str(&ctx.to_json().unwrap()).unwrap();
        prop_assert_eq!(json["step"].as_u64(), Some(steps.len() as u64));
    }
}
