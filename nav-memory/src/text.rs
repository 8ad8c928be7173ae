//! Text normalization and clipping shared by the memory and its prompts.

/// Normalizes a scene type (place type) for the Navigation Context: any
/// string is accepted; the result is lowercase, with punctuation and other
/// special characters removed and `hallway` replaced by `corridor`.
///
/// Details (documented interpretations):
/// - `_` and `-` separate words, so `living_room`, `Living-Room` and
///   `living room` all become `living room`;
/// - runs of whitespace collapse to one space, ends are trimmed;
/// - letters and digits of every script are kept (`주방` stays `주방`);
/// - `hallway` is replaced wherever it occurs (`hallways` → `corridors`), a
///   plain substring replacement;
/// - input without any letter or digit normalizes to the empty string, which
///   the memory treats as "no label".
///
/// ```
/// use nav_memory::normalize_scene_type;
/// assert_eq!(normalize_scene_type("Hallway."), "corridor");
/// assert_eq!(normalize_scene_type("  Living_Room!! "), "living room");
/// assert_eq!(normalize_scene_type("kitchen/dining-area"), "kitchendining area");
/// assert_eq!(normalize_scene_type("?!"), "");
/// ```
pub fn normalize_scene_type(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut pending_space = false;
    for c in raw.chars() {
        if c.is_alphanumeric() {
            if pending_space && !out.is_empty() {
                out.push(' ');
            }
            pending_space = false;
            out.extend(c.to_lowercase().filter(|l| l.is_alphanumeric()));
        } else if c.is_whitespace() || c == '_' || c == '-' {
            pending_space = true;
        }
        // Every other character (punctuation, symbols) is dropped.
    }
    if out.contains("hallway") { out.replace("hallway", "corridor") } else { out }
}

/// Normalizes an object label for a place's object set: trimmed, lowercase,
/// whitespace collapsed, at most [`MAX_LABEL_CHARS`] characters. Returns
/// `None` for a label without any letter or digit.
pub(crate) fn normalize_label(raw: &str) -> Option<String> {
    let words: Vec<String> = raw.split_whitespace().map(str::to_lowercase).collect();
    let joined = words.join(" ");
    if !joined.chars().any(char::is_alphanumeric) {
        return None;
    }
    Some(clip_chars(&joined, MAX_LABEL_CHARS))
}

/// Longest object label kept, in characters.
pub(crate) const MAX_LABEL_CHARS: usize = 40;

/// Clips `s` to at most `max` characters (not bytes), marking a cut with a
/// trailing `…` that counts toward the limit. Whitespace runs (including
/// newlines) become single spaces so a clipped string is always one line.
///
/// ```
/// use nav_memory::text::clip_chars;
/// assert_eq!(clip_chars("short", 10), "short");
/// assert_eq!(clip_chars("a long sentence", 6), "a lon…");
/// assert_eq!(clip_chars("two\nlines", 20), "two lines");
/// ```
pub fn clip_chars(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max * 4));
    let mut count = 0usize;
    let total = s.split_whitespace().map(|w| w.chars().count() + 1).sum::<usize>().saturating_sub(1);
    if max == 0 {
        return out;
    }
    let budget = if total > max { max - 1 } else { max };
    'words: for (i, word) in s.split_whitespace().enumerate() {
        if i > 0 {
            if count >= budget {
                break;
            }
            out.push(' ');
            count += 1;
        }
        for c in word.chars() {
            if count >= budget {
                break 'words;
            }
            out.push(c);
            count += 1;
        }
    }
    if total > max {
        let kept = out.trim_end().len();
        out.truncate(kept);
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn seed_rules() {
        assert_eq!(normalize_scene_type("Kitchen"), "kitchen");
        assert_eq!(normalize_scene_type("hallway"), "corridor");
        assert_eq!(normalize_scene_type("HALLWAY"), "corridor");
        assert_eq!(normalize_scene_type("a hallway."), "a corridor");
        assert_eq!(normalize_scene_type("Bed-room"), "bed room");
        assert_eq!(normalize_scene_type("bathroom (small)"), "bathroom small");
        assert_eq!(normalize_scene_type(""), "");
        assert_eq!(normalize_scene_type("주방."), "주방");
    }

    #[test]
    fn labels() {
        assert_eq!(normalize_label("  Sofa  Bed "), Some("sofa bed".to_string()));
        assert_eq!(normalize_label("--"), None);
        assert_eq!(normalize_label(&"x".repeat(100)).map(|s| s.chars().count()), Some(MAX_LABEL_CHARS));
    }

    #[test]
    fn clip_marks_cuts() {
        assert_eq!(clip_chars("abcdef", 6), "abcdef");
        assert_eq!(clip_chars("abcdefg", 6), "abcde…");
        assert_eq!(clip_chars("abc", 0), "");
        assert_eq!(clip_chars("  a   b  ", 10), "a b");
    }

    proptest! {
        #[test]
        fn normalize_is_idempotent_and_clean(s in "\\PC{0,40}") {
            let n = normalize_scene_type(&s);
            prop_assert_eq!(normalize_scene_type(&n), n.clone());
            prop_assert!(!n.contains("hallway"));
            prop_assert!(n.chars().all(|c| c.is_alphanumeric() || c == ' '));
            prop_assert!(!n.starts_with(' ') && !n.ends_with(' ') && !n.contains("  "));
        }

        #[test]
        fn clip_respects_limit(s in "\\PC{0,80}", max in 0usize..30) {
            let c = clip_chars(&s, max);
            prop_assert!(c.chars().count() <= max);
            prop_assert!(!c.contains('\n'));
        }
    }
}
