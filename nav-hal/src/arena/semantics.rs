//! What rooms contain and how things look: the room → objects table used
//! by the procedural generator (and available to planners as a prior), and
//! the colours and sizes the camera and map pictures draw with.

use nav_core::raster::Rgb;

/// An object class that belongs in a room type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ObjectSpec {
    /// Class label.
    pub label: &'static str,
    /// Footprint radius, metres.
    pub r: f64,
    /// Placed against a wall (true) or free-standing.
    pub against_wall: bool,
}

const fn spec(label: &'static str, r: f64, against_wall: bool) -> ObjectSpec {
    ObjectSpec { label, r, against_wall }
}

/// Room types and the objects that belong in them, most characteristic
/// first (the generator always places the first two of each room).
pub const ROOM_OBJECTS: &[(&str, &[ObjectSpec])] = &[
    (
        "kitchen",
        &[
            spec("fridge", 0.35, true),
            spec("oven", 0.3, true),
            spec("sink", 0.25, true),
            spec("dining table", 0.45, false),
            spec("chair", 0.2, false),
            spec("microwave", 0.2, true),
        ],
    ),
    (
        "living room",
        &[
            spec("sofa", 0.5, true),
            spec("tv", 0.35, true),
            spec("armchair", 0.35, false),
            spec("coffee table", 0.35, false),
            spec("plant", 0.2, true),
            spec("bookshelf", 0.3, true),
        ],
    ),
    (
        "bedroom",
        &[
            spec("bed", 0.6, true),
            spec("wardrobe", 0.4, true),
            spec("nightstand", 0.2, true),
            spec("lamp", 0.15, true),
            spec("chair", 0.2, false),
        ],
    ),
    ("bathroom", &[spec("toilet", 0.25, true), spec("sink", 0.22, true), spec("bathtub", 0.45, true)]),
    (
        "office",
        &[
            spec("desk", 0.45, true),
            spec("chair", 0.22, false),
            spec("bookshelf", 0.3, true),
            spec("computer", 0.2, true),
            spec("plant", 0.2, true),
        ],
    ),
    ("corridor", &[spec("plant", 0.18, true), spec("shoe rack", 0.2, true)]),
];

/// The objects that belong in a room type (empty for unknown types).
pub fn objects_for_room(room: &str) -> &'static [ObjectSpec] {
    ROOM_OBJECTS.iter().find(|(name, _)| *name == room).map(|(_, v)| *v).unwrap_or(&[])
}

/// How an object class is drawn by the camera.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ObjectStyle {
    /// Body colour.
    pub colour: Rgb,
    /// Height of the top above the floor, metres.
    pub top_m: f64,
    /// Height of the bottom above the floor (a TV on a stand floats),
    /// metres.
    pub base_m: f64,
}

const fn style(r: u8, g: u8, b: u8, top_m: f64, base_m: f64) -> ObjectStyle {
    ObjectStyle { colour: Rgb([r, g, b]), top_m, base_m }
}

/// Drawing style of an object class; unknown labels get a stable colour
/// derived from the label and a 0.8 m height.
pub fn object_style(label: &str) -> ObjectStyle {
    match label {
        "bed" => style(70, 110, 200, 0.6, 0.0),
        "sofa" => style(190, 50, 50, 0.85, 0.0),
        "armchair" => style(200, 90, 60, 0.9, 0.0),
        "tv" => style(25, 25, 30, 1.3, 0.55),
        "toilet" => style(240, 240, 245, 0.75, 0.0),
        "bathtub" => style(225, 235, 245, 0.6, 0.0),
        "sink" => style(200, 205, 215, 0.9, 0.0),
        "fridge" => style(215, 220, 225, 1.8, 0.0),
        "oven" => style(60, 60, 65, 0.9, 0.0),
        "microwave" => style(90, 90, 95, 1.2, 0.9),
        "dining table" | "coffee table" => style(140, 95, 55, 0.75, 0.0),
        "desk" => style(120, 80, 45, 0.75, 0.0),
        "chair" => style(230, 140, 30, 0.9, 0.0),
        "plant" => style(40, 150, 50, 1.1, 0.0),
        "bookshelf" => style(110, 70, 40, 1.9, 0.0),
        "wardrobe" => style(150, 110, 75, 2.0, 0.0),
        "nightstand" => style(160, 120, 80, 0.55, 0.0),
        "lamp" => style(250, 220, 90, 1.5, 0.0),
        "computer" => style(40, 40, 50, 1.2, 0.75),
        "shoe rack" => style(100, 80, 60, 0.5, 0.0),
        other => {
            let h = hash(other);
            ObjectStyle {
                colour: Rgb([(h >> 16) as u8 | 0x40, (h >> 8) as u8 | 0x40, h as u8 | 0x40]),
                top_m: 0.8,
                base_m: 0.0,
            }
        }
    }
}

/// Characteristic colour of a room type (walls in the camera; mixed with
/// white for map fills). Matches on the type's key word, so `bedroom 2`
/// looks like a bedroom.
pub fn room_colour(name: &str) -> Rgb {
    let n = name.to_ascii_lowercase();
    if n.contains("kitchen") {
        Rgb([222, 190, 90])
    } else if n.contains("living") || n.contains("lounge") {
        Rgb([130, 185, 120])
    } else if n.contains("bed") {
        Rgb([120, 150, 215])
    } else if n.contains("bath") || n.contains("toilet") {
        Rgb([110, 200, 205])
    } else if n.contains("corridor") || n.contains("hall") {
        Rgb([200, 175, 150])
    } else if n.contains("office") || n.contains("study") {
        Rgb([175, 140, 200])
    } else if n.contains("dining") {
        Rgb([215, 150, 120])
    } else {
        let h = hash(&n);
        Rgb([(h >> 16) as u8 / 2 + 100, (h >> 8) as u8 / 2 + 100, h as u8 / 2 + 100])
    }
}

/// Colour of walls outside every room.
pub const NEUTRAL_WALL: Rgb = Rgb([185, 185, 180]);

/// FNV-1a, for stable colours of unknown names.
fn hash(s: &str) -> u32 {
    s.bytes().fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_room_type_has_objects_with_styles() {
        for (room, objs) in ROOM_OBJECTS {
            assert!(objs.len() >= 2, "{room}");
            assert_ne!(room_colour(room), NEUTRAL_WALL);
            for o in *objs {
                assert!(o.r > 0.0);
                let s = object_style(o.label);
                assert!(s.top_m > s.base_m);
            }
        }
        assert_eq!(objects_for_room("garage").len(), 0);
        assert_eq!(object_style("unicorn"), object_style("unicorn"));
    }
}
