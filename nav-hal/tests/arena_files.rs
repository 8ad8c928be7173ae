//! Arena files: built-ins, round trips, bad files, procedural houses.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use nav_core::geometry::Point2;
use nav_hal::HalError;
use nav_hal::arena::procedural::{MIN_OBJECTS, generate_house};
use nav_hal::arena::semantics::objects_for_room;
use nav_hal::arena::{Arena, Goal};
use nav_hal::sim::{SimConfig, SimWorld};
use proptest::prelude::*;

const ROOM_TYPES: [&str; 6] = ["kitchen", "living room", "bedroom", "bathroom", "corridor", "office"];

fn field_of(err: &HalError) -> (&str, &str) {
    match err {
        HalError::InvalidArena { field, message, .. } => (field.as_str(), message.as_str()),
        other => panic!("expected InvalidArena, got {other:?}"),
    }
}

#[test]
fn every_builtin_is_valid_and_round_trips() {
    let names = Arena::builtin_names();
    assert_eq!(&names[..4], &["simple", "exploration", "dead_end", "narrow_corridor"]);
    for name in names {
        let a = Arena::builtin(name).unwrap();
        assert_eq!(a.name, name);
        a.validate().unwrap();
        let back = Arena::from_json_str(&a.to_json_pretty()).unwrap();
        assert_eq!(a, back, "{name}");
    }
    // The files on disk are the ones embedded.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("arenas");
    for name in Arena::builtin_names() {
        let from_file = Arena::load(dir.join(format!("{name}.json"))).unwrap();
        assert_eq!(from_file, Arena::builtin(name).unwrap());
    }
}

#[test]
fn seed_arenas_match_seed_002() {
    let simple = Arena::builtin("simple").unwrap();
    assert_eq!(simple.bounds, [-2.5, -2.5, 2.5, 2.5]);
    assert_eq!((simple.start.x, simple.start.y, simple.start.yaw_deg), (-1.5, -1.5, 45.0));
    assert_eq!(simple.goal, Some(Goal::Point { x: 1.5, y: 1.5 }));
    assert_eq!(simple.obstacles.len(), 3);
    assert!(simple.obstacles.iter().all(|o| o.r == 0.2));
    assert_eq!((simple.criteria.max_steps, simple.criteria.max_collisions), (100, Some(0)));
    assert_eq!(simple.success_distance_m(), 0.3);

    let exploration = Arena::builtin("exploration").unwrap();
    assert!(exploration.goal.is_none());
    assert_eq!(exploration.obstacles.len(), 5);
    assert!(exploration.obstacles.iter().all(|o| o.r == 0.15));
    assert_eq!(exploration.criteria.min_coverage, Some(0.8));
    assert_eq!(exploration.criteria.max_steps, 150);
    assert_eq!(exploration.start.yaw_deg, 90.0); // "North" = +y

    let dead_end = Arena::builtin("dead_end").unwrap();
    // The seed's L-wall closes the goal's room completely; ours leaves a
    // 0.9 m gap at the south-east corner so the goal is reachable.
    assert_eq!(dead_end.walls, vec![[0.0, 2.5, 0.0, -0.5], [0.0, -0.5, 1.6, -0.5]]);
    assert_eq!(dead_end.goal, Some(Goal::Point { x: 1.5, y: 1.0 }));
    assert_eq!(dead_end.criteria.max_steps, 120);

    let corridor = Arena::builtin("narrow_corridor").unwrap();
    assert_eq!(corridor.walls, vec![[-0.3, 2.5, -0.3, -1.0], [0.3, 2.5, 0.3, -1.0]]);
    assert_eq!(corridor.criteria.max_steps, 80);
    // The robot fits into the 0.6 m corridor: a pose on its axis is free.
    let mut world = SimWorld::new(corridor, SimConfig::default()).unwrap();
    world.teleport(nav_core::geometry::Pose2::new(0.0, 1.0, 0.0)).unwrap();
}

fn check_house(a: &Arena) {
    let kinds: std::collections::BTreeSet<&str> =
        a.rooms.iter().map(|r| r.name.as_str()).filter(|n| ROOM_TYPES.contains(n)).collect();
    assert!(a.rooms.len() >= 5 && kinds.len() >= 5, "{}: rooms {:?}", a.name, kinds);
    for needed in ["kitchen", "living room", "bedroom", "bathroom"] {
        assert!(kinds.contains(needed), "{}: no {needed}", a.name);
    }
    assert!(a.objects.len() >= MIN_OBJECTS, "{}: {} objects", a.name, a.objects.len());
    assert!(matches!(a.goal, Some(Goal::Object { .. })), "{}", a.name);
    // Objects sit where they belong.
    for o in &a.objects {
        let room = a.room_at(o.center()).unwrap_or_else(|| panic!("{}: {} outside every room", a.name, o.label));
        assert!(objects_for_room(room).iter().any(|s| s.label == o.label), "{}: {} in the {room}", a.name, o.label);
    }
    // No two solid circles overlap, and every object can serve as a goal.
    let circles = a.all_circles();
    for (i, (c1, r1, _)) in circles.iter().enumerate() {
        for (c2, r2, _) in &circles[i + 1..] {
            assert!(c1.distance(*c2) >= r1 + r2, "{}: overlapping circles at {c1:?} and {c2:?}", a.name);
        }
    }
    for label in a.labels() {
        let mut b = a.clone();
        b.goal = Some(Goal::Object { label: label.to_string() });
        b.validate().unwrap_or_else(|e| panic!("{}: goal {label}: {e}", a.name));
    }
}

#[test]
fn houses_have_rooms_objects_and_reachable_goals() {
    for name in ["house_a", "house_b", "house_c"] {
        let a = Arena::builtin(name).unwrap();
        check_house(&a);
        // Doors are at least 0.8 m: the 0.8 m test disc passes every door.
        let wide = a.validate_for_radius(0.4);
        assert!(wide.is_ok(), "{name}: {wide:?}");
    }
}

#[test]
fn procedural_houses_are_valid_over_many_seeds() {
    for seed in 0..40u64 {
        let a = generate_house(seed);
        assert_eq!(a.name, format!("proc_{seed}"));
        a.validate().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        check_house(&a);
        assert_eq!(a, generate_house(seed), "seed {seed} is not deterministic");
    }
    assert_ne!(generate_house(1), generate_house(2));
    assert_eq!(Arena::builtin("proc_7").unwrap(), generate_house(7));
}

fn bad(text: &str) -> HalError {
    Arena::from_json_str(text).unwrap_err()
}

const GOOD: &str = r#"{
  "name": "t", "bounds": [-2.5, -2.5, 2.5, 2.5],
  "walls": [[0.0, 2.5, 0.0, -0.5], [1.0, 1.0, 2.0, 1.0], [1.0, -1.0, 2.0, -1.0], [-1.0, -2.0, -1.0, -1.0]],
  "obstacles": [{"x": -0.5, "y": 0.5, "r": 0.2}],
  "objects": [{"label": "chair", "x": 1.5, "y": 1.5, "r": 0.25}, {"label": "bed", "x": -2.0, "y": 2.0, "r": 0.3}],
  "start": {"x": -1.5, "y": -1.5, "yaw_deg": 45.0},
  "goal": {"object": "chair"}
}"#;

fn edited(f: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut v: serde_json::Value = serde_json::from_str(GOOD).unwrap();
    f(&mut v);
    v.to_string()
}

#[test]
fn bad_arena_files_name_the_problem() {
    Arena::from_json_str(GOOD).unwrap();
    let cases: Vec<(String, &str, &str)> = vec![
        (edited(|v| v["colour"] = "red".into()), "colour", "unknown field `colour`"),
        (edited(|v| v["start"]["z"] = 1.0.into()), "start.z", "unknown field `z`"),
        (edited(|v| v["start"] = serde_json::json!({"x": 1.0, "y": 1.0})), "start", "inside wall 1"),
        (edited(|v| v["start"] = serde_json::json!({"x": -0.5, "y": 0.45})), "start", "inside obstacle 0"),
        (edited(|v| v["start"] = serde_json::json!({"x": 1.5, "y": 1.6})), "start", "inside object 0"),
        (edited(|v| v["start"] = serde_json::json!({"x": 7.0, "y": 0.0})), "start", "outside the bounds"),
        (edited(|v| v["start"] = serde_json::json!({"x": 2.4, "y": 0.0})), "start", "too close to the bounds"),
        (edited(|v| drop(v.as_object_mut().unwrap().remove("start"))), "start", "missing"),
        (edited(|v| v["goal"] = serde_json::json!({"object": "tv"})), "goal.object", "no object labelled \"tv\""),
        (edited(|v| v["objects"][1]["r"] = (-0.1).into()), "objects[1].r", "must be positive"),
        (edited(|v| v["obstacles"][0]["r"] = 0.0.into()), "obstacles[0].r", "must be positive"),
        (edited(|v| v["bounds"] = serde_json::json!([2.5, -2.5, -2.5, 2.5])), "bounds", "xmin must be < xmax"),
        (edited(|v| v["bounds"] = serde_json::json!([-2.5, 2.5, 2.5, -2.5])), "bounds", "ymin must be < ymax"),
        (edited(|v| v["objects"][0]["r"] = "big".into()), "objects[0].r", "invalid type"),
        (edited(|v| v["goal"] = serde_json::json!({"x": 1.0})), "goal", "expected"),
        ("{ not json".to_string(), "document", "not JSON"),
        ("".to_string(), "document", "empty file"),
        ("   \n".to_string(), "document", "empty file"),
        ("[1, 2]".to_string(), "document", "expected a JSON object, got an array"),
    ];
    for (text, field, needle) in cases {
        let err = bad(&text);
        let (f, m) = field_of(&err);
        assert_eq!(f, field, "{err}");
        assert!(m.contains(needle), "{err} should mention {needle:?}");
    }
    // An unreachable goal: wall the bed into the top-left corner.
    let boxed = edited(|v| {
        v["walls"].as_array_mut().unwrap().push(serde_json::json!([-2.5, 0.5, 0.0, 0.5]));
        v["goal"] = serde_json::json!({"object": "bed"});
    });
    let err = bad(&boxed);
    let (f, m) = field_of(&err);
    assert_eq!(f, "goal");
    assert!(m.contains("unreachable from start"), "{err}");
}

#[test]
fn load_names_the_file() {
    let dir = std::env::temp_dir().join(format!("nav-hal-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("broken.json");
    std::fs::write(&path, r#"{"name": "x"}"#).unwrap();
    let err = Arena::load(&path).unwrap_err();
    assert!(err.to_string().contains("broken.json"), "{err}");
    assert!(err.is_bad_input());
    let missing = Arena::load(dir.join("nope.json")).unwrap_err();
    assert!(matches!(missing, HalError::Io { .. }) && missing.to_string().contains("nope.json"));
    let unknown = Arena::builtin("house_z").unwrap_err();
    assert!(unknown.to_string().contains("house_a"), "{unknown}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn room_lookup_and_success_distance_defaults() {
    let a = Arena::builtin("house_a").unwrap();
    assert_eq!(a.room_at(Point2::new(1.0, 6.0)), Some("bedroom"));
    assert_eq!(a.room_at(Point2::new(20.0, 6.0)), None);
    assert_eq!(a.success_distance_m(), 1.0);
}

fn arb_arena() -> impl Strategy<Value = Arena> {
    let f = -1e6f64..1e6;
    (
        "[a-z_]{1,12}",
        prop::array::uniform4(f.clone()),
        prop::collection::vec(prop::array::uniform4(f.clone()), 0..4),
        prop::collection::vec((f.clone(), f.clone(), 0.01f64..3.0), 0..4),
        prop::collection::vec(("[a-z ]{1,10}", f.clone(), f.clone(), 0.01f64..3.0), 0..4),
        (f.clone(), f.clone(), -360.0f64..360.0),
        prop_oneof![
            Just(None),
            "[a-z]{1,6}".prop_map(|l| Some(Goal::Object { label: l })),
            (f.clone(), f).prop_map(|(x, y)| Some(Goal::Point { x, y }))
        ],
        (1u32..1000, prop::option::of(0u32..10), prop::option::of(0.01f64..5.0), prop::option::of(0.0f64..1.0)),
    )
        .prop_map(|(name, bounds, walls, obstacles, objects, (sx, sy, yaw), goal, (ms, mc, sd, cov))| Arena {
            name,
            description: None,
            bounds,
            walls,
            obstacles: obstacles.into_iter().map(|(x, y, r)| nav_hal::arena::Obstacle { x, y, r }).collect(),
            objects: objects
                .into_iter()
                .map(|(label, x, y, r)| nav_hal::arena::ArenaObject { label, x, y, r })
                .collect(),
            rooms: vec![],
            start: nav_hal::arena::Start { x: sx, y: sy, yaw_deg: yaw },
            goal,
            criteria: nav_hal::arena::Criteria {
                max_steps: ms,
                max_collisions: mc,
                success_distance_m: sd,
                min_coverage: cov,
            },
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn arena_json_round_trips(a in arb_arena()) {
        let text = a.to_json_pretty();
        let back = Arena::parse_unvalidated(&text, "prop").unwrap();
        prop_assert_eq!(a, back);
    }

    #[test]
    fn parsing_never_panics(text in ".{0,200}") {
        let _ = Arena::from_json_str(&text);
    }
}
