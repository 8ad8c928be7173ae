//! A linear pre-scan of an exploration memory file's text, run before any
//! YAML or JSON value is built: the parsers' own costs grow faster than the
//! text on deep nesting (a 200 KB file of nested flow sequences took a
//! minute to be rejected) and their memory with the number of items, so
//! both are bounded here first, from the text alone.
//!
//! The scan over-approximates (it counts every `- `, `: ` and flow `,`
//! outside quotes and comments as an item, and indentation, leading dashes
//! and open brackets as nesting), which is safe: a memory file that
//! [`ExplorationMemory::save`](super::ExplorationMemory::save) writes is
//! far below both limits (at most a few thousand items, nesting 5).

/// Deepest nesting a memory file may have (brackets, indentation steps and
/// leading `- ` together).
pub const MAX_DEPTH: usize = 32;

/// Most items (sequence entries, mapping entries, flow elements) a memory
/// file may hold; the caps on rooms, objects, frontiers and the rest keep a
/// real one under 3,000.
pub const MAX_ITEMS: usize = 20_000;

/// Checks `text` against [`MAX_DEPTH`] and [`MAX_ITEMS`] and refuses YAML
/// anchors and aliases (never written by the memory, and the way to make a
/// small file expand without bound). The error says which limit and where.
pub fn check(text: &str) -> Result<(), String> {
    let mut items = 0usize;
    let mut flow = 0usize;
    // inside a block scalar (`key: |`): lines indented deeper than this are text
    let mut block: Option<usize> = None;
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        let body = line.trim_start_matches(' ');
        let indent = line.len() - body.len();
        items += 1;
        if let Some(b) = block {
            if body.trim().is_empty() || indent > b {
                continue;
            }
            block = None;
        }
        // leading "- - x": each dash is a level
        let mut rest = body;
        let mut dashes = 0usize;
        while let Some(r) = rest.strip_prefix('-').filter(|r| r.is_empty() || r.starts_with([' ', '\t'])) {
            dashes += 1;
            rest = r.trim_start();
        }
        items += dashes;
        if indent / 2 + dashes > MAX_DEPTH {
            return Err(format!("line {line_no}: nested deeper than {MAX_DEPTH} levels"));
        }
        let (line_items, new_flow) = scan_line(rest, flow, line_no)?;
        flow = new_flow;
        items += line_items;
        if items > MAX_ITEMS {
            return Err(format!("line {line_no}: more than {MAX_ITEMS} items"));
        }
        if flow == 0 && opens_block_scalar(rest) {
            block = Some(indent);
        }
    }
    Ok(())
}

/// Whether a line ends in a block scalar header (`key: |`, `- >-`, `|2+`).
fn opens_block_scalar(rest: &str) -> bool {
    let t = rest.trim_end();
    let head = t.trim_end_matches(|c: char| c == '-' || c == '+' || c.is_ascii_digit());
    (head.ends_with('|') || head.ends_with('>')) && (head.len() == 1 || head[..head.len() - 1].ends_with([' ', '\t']))
}

/// One line's items and the flow depth after it (quotes and comments
/// skipped; a quoted scalar is taken to end on its line, which holds for
/// everything the memory writes and only overcounts otherwise).
fn scan_line(line: &str, mut flow: usize, line_no: usize) -> Result<(usize, usize), String> {
    let bytes = line.as_bytes();
    let mut items = 0usize;
    let mut quote: Option<u8> = None;
    let mut prev = b' ';
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) => {
                if b == b'\\' && q == b'"' {
                    i += 1;
                } else if b == q {
                    quote = None;
                }
            }
            None => match b {
                b'"' | b'\'' if matches!(prev, b' ' | b'\t' | b'[' | b'{' | b',' | b':' | b'-') => quote = Some(b),
                b'#' if matches!(prev, b' ' | b'\t') => break,
                b'[' | b'{' => {
                    flow += 1;
                    items += 1;
                    if flow > MAX_DEPTH {
                        return Err(format!("line {line_no}: nested deeper than {MAX_DEPTH} levels"));
                    }
                }
                b']' | b'}' => flow = flow.saturating_sub(1),
                b',' if flow > 0 => items += 1,
                b':' if bytes.get(i + 1).is_none_or(|n| matches!(n, b' ' | b'\t')) => items += 1,
                b'&' | b'*'
                    if matches!(prev, b' ' | b'\t' | b'[' | b'{' | b',' | b':' | b'-')
                        && bytes.get(i + 1).is_some_and(u8::is_ascii_alphanumeric) =>
                {
                    return Err(format!("line {line_no}: YAML anchors and aliases are not allowed in a memory file"));
                }
                _ => {}
            },
        }
        prev = b;
        i += 1;
    }
    Ok((items, flow))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn deep_nesting_many_items_and_aliases_are_refused() {
        assert!(check(&"[".repeat(200_000)).unwrap_err().contains("deeper"));
        assert!(check(&"{a: ".repeat(1000)).unwrap_err().contains("deeper"));
        let deep_block: String = (0..100).map(|i| format!("{}k{i}:\n", " ".repeat(2 * i))).collect();
        assert!(check(&deep_block).unwrap_err().contains("deeper"));
        assert!(check(&"- ".repeat(100)).unwrap_err().contains("deeper"));
        assert!(check(&"- 1\n".repeat(30_000)).unwrap_err().contains("items"));
        assert!(check(&format!("[{}]", "1,".repeat(30_000))).unwrap_err().contains("items"));
        assert!(check("a: &x [1]\nb: *x\n").unwrap_err().contains("aliases"));
        // quoted, commented and block-scalar text is not structure
        assert!(check(&format!("a: \"{}\" # {}\n", "[,&x".repeat(10_000), "[".repeat(100))).is_ok());
        assert!(check("notes: |-\n  *bold* [[[[\n  - &x\nnext: 1\n").is_ok());
    }

    #[test]
    fn a_saved_memory_passes() {
        let mut m = crate::ExplorationMemory::new(0.0);
        for i in 0..40 {
            m.record_discovery(
                &format!("room {i}"),
                "a note: with, commas [and] brackets",
                nav_core::discovery::Significance::Room,
                nav_core::geometry::Point2::new(f64::from(i), 1.0),
            );
        }
        let dir = tempfile::tempdir().unwrap();
        for name in ["m.yaml", "m.json"] {
            let path = dir.path().join(name);
            m.save(&path).unwrap();
            check(&std::fs::read_to_string(&path).unwrap()).unwrap();
        }
    }

    proptest! {
        /// Linear and never panics on any text.
        #[test]
        fn any_text_is_scanned(text in "[\\[\\]{}:,\\-'\"#&* a-z\n]{0,400}") {
            let _ = check(&text);
        }

        /// Random nesting deeper than the limit is refused.
        #[test]
        fn random_deep_nesting_is_refused(opens in proptest::collection::vec(prop_oneof![Just("["), Just("{a: "), Just("- [")], 33..300)) {
            let text: String = opens.concat();
            prop_assert!(check(&text).is_err());
        }
    }
}
