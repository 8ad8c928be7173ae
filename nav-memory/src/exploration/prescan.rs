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
    // a quoted scalar still open at the end of the previous line (an emitter folds long ones)
    let mut quote: Option<u8> = None;
    // a plain scalar that may go on below: lines indented at least this much are its text
    let mut plain: Option<usize> = None;
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        let body = line.trim_start_matches(' ');
        let indent = line.len() - body.len();
        items += 1;
        // a document marker (`---`, `...`) at column 0 ends any scalar going on, and what follows
        // `--- ` is a node (`--- &a`): it is scanned, never taken as text
        let marker = (indent == 0 && quote.is_none())
            .then(|| body.strip_prefix("---").or_else(|| body.strip_prefix("...")))
            .flatten()
            .filter(|r| r.is_empty() || r.starts_with([' ', '\t']));
        if marker.is_some() {
            (block, plain) = (None, None);
        }
        if let Some(b) = block {
            if body.trim().is_empty() || indent > b {
                continue;
            }
            block = None;
        }
        if let Some(min) = plain.take() {
            if !body.trim().is_empty() && indent >= min {
                plain = Some(min);
                continue;
            }
        }
        // leading "- - x": each dash is a level (not inside a quoted scalar going on)
        let mut rest = marker.map_or(body, str::trim_start);
        let mut dashes = 0usize;
        if quote.is_none() {
            while let Some(r) = rest.strip_prefix('-').filter(|r| r.is_empty() || r.starts_with([' ', '\t'])) {
                dashes += 1;
                rest = r.trim_start();
            }
        }
        items += dashes;
        if indent / 2 + dashes > MAX_DEPTH {
            return Err(format!("line {line_no}: nested deeper than {MAX_DEPTH} levels"));
        }
        let scan = scan_line(rest, flow, quote, line_no)?;
        flow = scan.flow;
        quote = scan.quote;
        items += scan.items;
        if items > MAX_ITEMS {
            return Err(format!("line {line_no}: more than {MAX_ITEMS} items"));
        }
        if flow == 0 && quote.is_none() {
            if opens_block_scalar(rest) {
                block = Some(indent);
            } else if scan.plain {
                // `key: text` goes on deeper than the key; a bare `- text` at its own column
                let column = line.len() - rest.len();
                plain = Some(if scan.keyed { indent + 2 * dashes + 1 } else { column });
            }
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

/// What [`scan_line`] found on one line.
struct Scanned {
    /// Items (mapping keys, flow elements) on the line.
    items: usize,
    /// The flow depth after it.
    flow: usize,
    /// The quoted scalar still open at its end.
    quote: Option<u8>,
    /// It ends inside a plain scalar (block context), which may go on below.
    plain: bool,
    /// It holds a `key: ` separator outside flow collections.
    keyed: bool,
}

/// One line's items, flow depth and open quote. Structure (`[`, `{`,
/// quotes, anchors `&x` and aliases `*x`) counts only where a node can
/// begin: at the line's start, after `: `, `- `, `[`, `{` or a flow `,`.
/// Inside a plain scalar (`kitchen & dining`, `0{`) those characters are
/// text, as for a YAML parser, so a file the memory writes always passes.
fn scan_line(line: &str, mut flow: usize, mut quote: Option<u8>, line_no: usize) -> Result<Scanned, String> {
    let bytes = line.as_bytes();
    let mut items = 0usize;
    let mut keyed = false;
    let mut at_node = quote.is_none();
    let mut in_plain = false;
    let mut prev = b' ';
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let blank_after = bytes.get(i + 1).is_none_or(|n| matches!(n, b' ' | b'\t'));
        if let Some(q) = quote {
            if b == b'\\' && q == b'"' {
                i += 1;
            } else if b == q {
                if q == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                    i += 1;
                } else {
                    quote = None;
                }
            }
        } else {
            match b {
                b' ' | b'\t' => {}
                b'#' if matches!(prev, b' ' | b'\t') => break,
                b':' if blank_after => {
                    items += 1;
                    keyed |= flow == 0;
                    at_node = true;
                    in_plain = false;
                }
                b',' if flow > 0 => {
                    items += 1;
                    at_node = true;
                    in_plain = false;
                }
                b']' | b'}' if flow > 0 => {
                    flow -= 1;
                    at_node = false;
                    in_plain = false;
                }
                // inside a flow collection a bracket always opens one (a YAML
                // parser ends a plain scalar there, and takes `"a":[` as a key
                // and its value)
                b'[' | b'{' if at_node || flow > 0 => {
                    flow += 1;
                    items += 1;
                    at_node = true;
                    in_plain = false;
                    if flow > MAX_DEPTH {
                        return Err(format!("line {line_no}: nested deeper than {MAX_DEPTH} levels"));
                    }
                }
                _ if at_node => match b {
                    // a tag (`!!seq`, `!x`, `!<tag:…>`) is a property of the node after it
                    b'!' => {
                        let end: &[u8] = if bytes.get(i + 1) == Some(&b'<') { b">" } else { b" \t,[]{}" };
                        while bytes.get(i + 1).is_some_and(|n| !end.contains(n)) {
                            i += 1;
                        }
                        if end == b">" {
                            i += 1;
                        }
                    }
                    b'-' | b'?' if blank_after => {}
                    b'&' | b'*' if bytes.get(i + 1).is_some_and(u8::is_ascii_alphanumeric) => {
                        return Err(format!(
                            "line {line_no}: YAML anchors and aliases are not allowed in a memory file"
                        ));
                    }
                    b'"' | b'\'' => {
                        quote = Some(b);
                        at_node = false;
                    }
                    _ => {
                        in_plain = true;
                        at_node = false;
                    }
                },
                _ => {}
            }
        }
        prev = b;
        i += 1;
    }
    Ok(Scanned { items, flow, quote, plain: in_plain && flow == 0 && quote.is_none(), keyed })
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
        // inside a plain scalar, and on its folded lines, these are text
        assert!(check("name: kitchen & dining\nroom: 0{\nnotes: a b\n  *c [d &e\nnext: 1\n").is_ok());
        assert!(check("- a [b\n  &c\n- d\n").is_ok());
        assert!(check("name: x\nb: *x\n").unwrap_err().contains("aliases"));
        assert!(check("- &x\n").unwrap_err().contains("aliases"));
        // a tag before the node, and JSON-style keys inside flow collections,
        // hid the nesting after them (a 200 KB file took a minute to refuse)
        for text in [
            format!("a: !!seq {}", "[".repeat(100_000)),
            format!("a: !x {}", "[".repeat(1000)),
            format!("a: !<tag:yaml.org,2002:seq> {}", "[".repeat(1000)),
            format!("a: {}", "!!seq [".repeat(1000)),
            format!("a: [{{\"k\":{}", "[".repeat(1000)),
            format!("a: {}", "{\"k\":".repeat(1000)),
        ] {
            assert!(check(&text).unwrap_err().contains("deeper"), "{}", &text[..40]);
        }
        assert!(check(&format!("a: !!seq [{}]", "1,".repeat(30_000))).unwrap_err().contains("items"));
        assert!(check("a: !!str x\nb: !!seq [1, 2]\nc: [x, \"y\"]\nd: {e: [f]}\n").is_ok());
        // a document marker is not a plain scalar whose text the rest of the file would be
        // (behind `---` an alias bomb went unscanned and aborted nav at 3.6 GB)
        for text in [
            "---\nrooms: &a [1]\nb: *a\n".to_string(),
            "--- &a\nrooms: [1]\n".to_string(),
            "---\n&a\n".to_string(),
            "...\n---\nb: *a\n".to_string(),
        ] {
            assert!(check(&text).unwrap_err().contains("aliases"), "{text}");
        }
        assert!(check(&format!("---\n{}", "- 1\n".repeat(30_000))).unwrap_err().contains("items"));
        assert!(check(&format!("---\n{}", "[".repeat(100))).unwrap_err().contains("deeper"));
        assert!(check("---\nname: x\n---text: y\n").is_ok());
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
        fn random_deep_nesting_is_refused(opens in proptest::collection::vec(prop_oneof![Just("["), Just("{a: "), Just("- ["), Just("!!seq ["), Just("{\"a\":")], 33..300)) {
            let text: String = opens.concat();
            prop_assert!(check(&text).is_err());
        }
    }
}
