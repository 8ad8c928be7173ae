//! Files: memory snapshots, exploration memory and grounding files — atomic
//! writes, the seed layout, and clear errors naming the file for bad input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use nav_core::action::Action;
use nav_core::discovery::Significance;
use nav_core::geometry::Point2;
use nav_memory::grounding::{
    CategoryFeedback, EpisodeGrounding, FinalGrounding, GroundingStore, MergeFormat, PART_SEPARATOR, SaveFormat,
    StepStatus, load_grounding_file, merge_files,
};
use nav_memory::{
    ActionRecord, ExplorationMemory, Frontier, MemoryConfig, MemoryError, SceneObservation, SpatialMemory, StepFlags,
};
use std::path::{Path, PathBuf};

fn sample_memory() -> SpatialMemory {
    let mut m = SpatialMemory::new(MemoryConfig::default()).unwrap();
    for i in 0..80 {
        let scene = m.scene_due().then(|| SceneObservation::new(if i < 30 { "kitchen" } else { "hallway" }));
        let a = if i % 5 == 4 { Action::TurnLeft } else { Action::Forward };
        m.observe_step(a, scene, StepFlags::default());
        if i % 20 == 0 {
            m.push_dc(false, "corridor", "explore the rest");
        }
    }
    m
}

#[test]
fn snapshot_round_trip_and_atomic_replace() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/memory.json");
    let m = sample_memory();
    m.save_json(&path).unwrap();
    assert_eq!(SpatialMemory::load_json(&path).unwrap(), m);
    // Saving again replaces the file; no temporary files are left behind.
    m.save_json(&path).unwrap();
    let entries: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
    assert_eq!(entries.len(), 1);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"format\": \"navkit-memory\""));
    assert!(text.contains("\"places\""));
    assert!(text.contains("\"dc\""));
}

fn assert_names_file(err: &MemoryError, path: &Path, needle: &str) {
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains(needle), "expected {needle:?} in {msg}");
}

#[test]
fn truncated_snapshot_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.json");
    sample_memory().save_json(&path).unwrap();
    let full = std::fs::read(&path).unwrap();
    for cut in [0, 1, full.len() / 3, full.len() / 2, full.len() - 3] {
        std::fs::write(&path, &full[..cut]).unwrap();
        let err = SpatialMemory::load_json(&path).unwrap_err();
        assert!(matches!(err, MemoryError::Parse { .. }), "cut {cut}: {err}");
        assert_names_file(&err, &path, "corrupt memory snapshot");
    }
}

#[test]
fn inconsistent_snapshots_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.json");
    sample_memory().save_json(&path).unwrap();
    let good = std::fs::read_to_string(&path).unwrap();

    let wrong_version = good.replacen("\"version\": 1", "\"version\": 7", 1);
    std::fs::write(&path, wrong_version).unwrap();
    assert_names_file(&SpatialMemory::load_json(&path).unwrap_err(), &path, "version 7");

    let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
    v["memory"]["current_place"] = serde_json::json!(99);
    std::fs::write(&path, v.to_string()).unwrap();
    assert_names_file(&SpatialMemory::load_json(&path).unwrap_err(), &path, "current place P99");

    let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
    v["memory"]["anchors"]["anchors"][1]["neighbors"].as_array_mut().unwrap().push(serde_json::json!(42));
    std::fs::write(&path, v.to_string()).unwrap();
    assert_names_file(&SpatialMemory::load_json(&path).unwrap_err(), &path, "A1 links to missing anchor A42");

    let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
    v["memory"]["anchors"]["anchors"][0]["neighbors"] = serde_json::json!([]);
    std::fs::write(&path, v.to_string()).unwrap();
    assert_names_file(&SpatialMemory::load_json(&path).unwrap_err(), &path, "link A1 → A0 is not symmetric");

    let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
    v["memory"]["dc"]["records"][0]["idx"] = serde_json::json!(3);
    std::fs::write(&path, v.to_string()).unwrap();
    assert_names_file(&SpatialMemory::load_json(&path).unwrap_err(), &path, "has idx 3");

    let missing = dir.path().join("nope.json");
    let err = SpatialMemory::load_json(&missing).unwrap_err();
    assert!(matches!(err, MemoryError::Io { .. }));
    assert_names_file(&err, &missing, "reading");
}

#[test]
fn exploration_memory_save_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("exploration.json");
    let mut m = ExplorationMemory::new(5.0);
    m.record_discovery("kitchen", "fridge", Significance::Room, Point2::new(2.0, 1.0));
    m.update_frontiers([Frontier {
        id: 1,
        direction_deg: 315.0,
        distance_m: 2.1,
        kind: "doorway".into(),
        width_m: Some(0.9),
    }]);
    m.record_dead_end(90.0, "wall", Point2::new(3.1, -1.2));
    m.update_after_action(ActionRecord::new("rotate", "-90", "success, now facing NW", Point2::new(2.0, 1.0)));
    m.update_time(65.0);
    m.save_json(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"type\": \"doorway\""), "seed key `type` for frontiers");
    assert_eq!(ExplorationMemory::load_json(&path).unwrap(), m);

    std::fs::write(&path, &text[..text.len() / 2]).unwrap();
    let err = ExplorationMemory::load_json(&path).unwrap_err();
    assert!(err.to_string().contains("corrupt exploration memory"), "{err}");
    let bad = text.replace("\"current_room\": \"kitchen\"", "\"current_room\": \"attic\"");
    std::fs::write(&path, bad).unwrap();
    let err = ExplorationMemory::load_json(&path).unwrap_err();
    assert!(err.to_string().contains("\"attic\" is not among the rooms"), "{err}");
}

fn episode_with_feedback(id: u64) -> EpisodeGrounding {
    let mut g = EpisodeGrounding::new(id);
    g.append_step_feedback(
        1,
        "go to the kitchen",
        StepStatus::Success,
        CategoryFeedback::parse("feedback : spatial: kitchen is green").unwrap(),
    );
    g.append_step_feedback(
        2,
        "find the mug",
        StepStatus::Failure,
        CategoryFeedback::parse("procedural: look on the counter first\nuser_preference: move slowly near people")
            .unwrap(),
    );
    g.set_final(FinalGrounding::new(
        Some("2026-01-27T10:00:00Z".into()),
        ["Move slowly near people.", "The green room is the kitchen.", "Check counters before tables.", ""],
    ));
    g
}

#[test]
fn grounding_files_follow_the_seed_layout() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroundingStore::new(dir.path());
    let g = episode_with_feedback(3);
    let written = store.save(g.file(), SaveFormat::Both).unwrap();
    let expected: Vec<PathBuf> = vec![
        dir.path().join("episode_3/grounding_episode_3.json"),
        dir.path().join("grounding/grounding_latest.json"),
        dir.path().join("episode_3/grounding_episode_3.txt"),
        dir.path().join("grounding/grounding_latest.txt"),
    ];
    assert_eq!(written, expected);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&expected[0]).unwrap()).unwrap();
    assert_eq!(v["expr_info"]["episode_id"], 3);
    assert_eq!(v["grounding_per_step"][0]["status"], "Success");
    assert_eq!(v["grounding_per_step"][0]["feedback"]["spatial"], "kitchen is green");
    assert!(v["grounding_per_step"][0]["feedback"]["general"].is_null());
    assert_eq!(v["stacked_grounding"]["spatial"][0], "[ Step1 - Success ] : kitchen is green");
    assert_eq!(v["stacked_grounding"]["procedural"][0], "[ Step2 - Failure ] : look on the counter first");
    assert_eq!(v["stacked_grounding"]["general"], serde_json::json!([]));
    assert_eq!(v["final_grounding"]["generation_timestamp"], "2026-01-27T10:00:00Z");
    assert_eq!(v["final_grounding"]["spatial_grounding"]["content"], "The green room is the kitchen.");
    assert_eq!(v["final_grounding"]["general_grounding_rules"]["content"], "");
    assert_eq!(load_grounding_file(&expected[1]).unwrap(), *g.file());
    let txt = std::fs::read_to_string(&expected[3]).unwrap();
    assert!(txt.starts_with("#### User Preference\n- Move slowly near people."), "{txt}");

    let only_txt = tempfile::tempdir().unwrap();
    let written = GroundingStore::new(only_txt.path()).save(g.file(), SaveFormat::Txt).unwrap();
    assert!(written.iter().all(|p| p.extension().unwrap() == "txt"));
}

#[test]
fn request_holds_only_the_current_episode() {
    let g = episode_with_feedback(4);
    let r = g.request();
    assert_eq!(r.episode_id, 4);
    assert_eq!(r.stacked, *g.stacked());
    assert!(r.feedback_text().contains("spatial:\n- [ Step1 - Success ] : kitchen is green\n"));
}

#[test]
fn merge_files_skips_corrupt_json_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let corrupt = dir.path().join("corrupt.json");
    let note = dir.path().join("note.txt");
    let empty = dir.path().join("empty.txt");
    std::fs::write(&a, serde_json::to_string(episode_with_feedback(1).file()).unwrap()).unwrap();
    std::fs::write(&corrupt, "{\"stacked_grounding\": {\"spatial\": [").unwrap();
    std::fs::write(&note, "Never enter the garage.\n").unwrap();
    std::fs::write(&empty, "  \n").unwrap();
    let merged = merge_files(&[a.clone(), corrupt.clone(), note.clone(), empty.clone()], MergeFormat::Txt).unwrap();
    assert_eq!(merged.warnings.len(), 2);
    assert_eq!(merged.warnings[0].path, corrupt);
    assert!(merged.warnings[0].to_string().contains("corrupt.json"));
    assert_eq!(merged.warnings[1].path, empty);
    assert_eq!(merged.json_sources, std::slice::from_ref(&a));
    let section = merged.render_prompt_section();
    assert!(section.ends_with(&format!("{PART_SEPARATOR}Never enter the garage.")), "{section}");
    assert!(section.starts_with("#### User Preference"));

    // A file that does not exist is an error, not a warning.
    let err = merge_files(&[dir.path().join("missing.txt")], MergeFormat::Txt).unwrap_err();
    assert!(err.to_string().contains("missing.txt"), "{err}");
    // A JSON file of another kind is no grounding.
    let other = dir.path().join("other.json");
    std::fs::write(&other, r#"{"format": "navkit-memory", "version": 1}"#).unwrap();
    let merged = merge_files(std::slice::from_ref(&other), MergeFormat::Txt).unwrap();
    assert!(merged.warnings[0].message.contains("no grounding content"), "{:?}", merged.warnings);
    // Nothing usable → an empty section.
    let merged = merge_files(&[corrupt], MergeFormat::Both).unwrap();
    assert!(merged.is_empty());
    assert_eq!(merged.render_prompt_section(), "");
}

/// Grounding text from files, typed lines and models never carries control
/// characters (an escape sequence would act on the terminal `nav grounding
/// merge` prints to, and would reach the system prompt): each becomes a space.
#[test]
fn grounding_text_loses_its_control_characters() {
    let dir = tempfile::tempdir().unwrap();
    let esc = "the door\u{1b}[2J is red\u{7}";
    let typed = CategoryFeedback::parse(&format!("spatial: {esc}")).unwrap();
    assert_eq!(typed.spatial.as_deref(), Some("the door [2J is red"));
    let json = serde_json::json!({
        "stacked_grounding": {"spatial": [format!("[ Step1 - Success ] : {esc}")]},
        "final_grounding": {"general_grounding_rules": {"content": format!("rule 1\n{esc}\r")}},
    });
    let doc = dir.path().join("g.json");
    std::fs::write(&doc, json.to_string()).unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, format!("remember: {esc}\u{9b}31m")).unwrap();
    let merged = merge_files(&[doc, text], MergeFormat::Both).unwrap().render_prompt_section();
    assert!(!merged.chars().any(|c| c.is_control() && c != '\n' && c != '\t'), "{merged:?}");
    assert!(merged.contains("the door [2J is red") && merged.contains("rule 1\n"), "{merged}");
}

/// A memory file reached through a symbolic link: the save replaces the
/// link's target and keeps the link; a link to a file not made yet creates
/// that file; a link in a loop is there but unreadable (an error naming it,
/// nothing overwritten).
#[cfg(unix)]
#[test]
fn memory_files_behind_symbolic_links() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("real.yaml");
    let link = dir.path().join("mem.yaml");
    let mut m = ExplorationMemory::new(0.0);
    m.record_discovery("kitchen", "a stove", Significance::Room, Point2::new(1.0, 2.0));
    // a link to a file not made yet: not present, and the save creates the target
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert!(!ExplorationMemory::file_present(&link));
    m.save(&link).unwrap();
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link is kept");
    assert!(target.is_file() && ExplorationMemory::file_present(&link));
    let first = std::fs::read(&target).unwrap();
    m.record_discovery("hallway", "long", Significance::Room, Point2::new(3.0, 2.0));
    m.save(&link).unwrap();
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_ne!(std::fs::read(&target).unwrap(), first, "the target was updated");
    assert_eq!(ExplorationMemory::load(&link).unwrap(), m);
    // a loop
    let a = dir.path().join("a.yaml");
    let b = dir.path().join("b.yaml");
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    assert!(ExplorationMemory::file_present(&a), "a loop is there, to be refused by its load");
    assert!(ExplorationMemory::load(&a).is_err());
    assert!(m.save(&a).unwrap_err().to_string().contains("a.yaml"));
    assert!(std::fs::symlink_metadata(&a).unwrap().file_type().is_symlink(), "nothing overwritten");
}
