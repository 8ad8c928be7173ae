//! The built-in arenas, embedded from `nav-hal/arenas/*.json`.

use super::{Arena, procedural};
use crate::HalError;

/// `(name, JSON text)` of every built-in arena file.
const FILES: &[(&str, &str)] = &[
    ("simple", include_str!("../../arenas/simple.json")),
    ("exploration", include_str!("../../arenas/exploration.json")),
    ("dead_end", include_str!("../../arenas/dead_end.json")),
    ("narrow_corridor", include_str!("../../arenas/narrow_corridor.json")),
    ("house_a", include_str!("../../arenas/house_a.json")),
    ("house_b", include_str!("../../arenas/house_b.json")),
    ("house_c", include_str!("../../arenas/house_c.json")),
];

pub(super) fn names() -> Vec<&'static str> {
    FILES.iter().map(|(n, _)| *n).collect()
}

pub(super) fn load(name: &str) -> Result<Arena, HalError> {
    if let Some((file, text)) = FILES.iter().find(|(n, _)| *n == name) {
        return Arena::from_json_named(text, &format!("arenas/{file}.json"));
    }
    if let Some(seed) = name.strip_prefix("proc_").and_then(|s| s.parse::<u64>().ok()) {
        return Ok(procedural::generate_house(seed));
    }
    Err(HalError::UnknownArena { name: name.to_string(), known: names().into_iter().map(String::from).collect() })
}
