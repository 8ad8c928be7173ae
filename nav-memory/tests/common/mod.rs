//! Scenarios shared by the test files.
#![allow(dead_code)]

use nav_core::discovery::Significance;
use nav_core::geometry::Point2;
use nav_memory::{ActionRecord, ExplorationMemory, Frontier};

/// A typical house exploration: three rooms, seven discoveries, three
/// frontiers, a dead end and the five seed-003 example decisions.
pub fn typical_exploration() -> ExplorationMemory {
    let mut m = ExplorationMemory::new(0.0);
    m.record_discovery("hallway", "long hallway with three doors", Significance::Room, Point2::new(1.0, 0.0));
    m.record_discovery("light switch", "", Significance::Landmark, Point2::new(1.4, 0.2));
    m.record_discovery("doormat", "", Significance::PointOfInterest, Point2::new(1.8, 0.0));
    m.set_explored_pct("hallway", 80.0);
    m.record_discovery("Kitchen", "counter and a fridge", Significance::Room, Point2::new(3.2, 1.1));
    m.record_discovery("counter", "", Significance::Landmark, Point2::new(3.5, 1.4));
    m.record_discovery("refrigerator", "", Significance::Landmark, Point2::new(3.9, 1.6));
    m.set_explored_pct("kitchen", 30.0);
    m.record_discovery("hallway", "back in the hallway", Significance::Room, Point2::new(2.3, -1.5));
    m.update_frontiers([
        Frontier { id: 1, direction_deg: 315.0, distance_m: 2.1, kind: "doorway".into(), width_m: Some(0.9) },
        Frontier { id: 2, direction_deg: 180.0, distance_m: 4.5, kind: "corridor".into(), width_m: None },
        Frontier { id: 3, direction_deg: 45.0, distance_m: 3.0, kind: "open".into(), width_m: Some(2.0) },
    ]);
    m.record_dead_end(90.0, "wall", Point2::new(3.1, -1.2));
    let p = Point2::new(2.3, -1.5);
    m.update_after_action(ActionRecord::new("move_toward", "forward, medium", "success, +0.36m", p));
    m.update_after_action(ActionRecord::new("move_toward", "forward, medium", "success, +0.35m", p));
    m.update_after_action(ActionRecord::new("move_toward", "forward_left, slow", "safety_override at 0.3m", p));
    m.update_after_action(ActionRecord::new("rotate", "-90", "success, now facing NW", p));
    m.update_after_action(ActionRecord::new("check_path_clear", "left, 2.0", "clear, no obstacles", p));
    m.update_time(272.0);
    m
}
