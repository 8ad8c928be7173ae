//! Robust extraction of one JSON object from a model's reply: strip `<think>`
//! blocks, prefer a fenced code block, find the first balanced `{…}` that
//! parses (braces inside strings are not structure), remove trailing
//! commas and escape raw control characters inside strings (a line break a
//! grammar-constrained small model wrote into a string). Never panics.

use serde_json::{Map, Value};

/// Why no JSON object could be recovered from a reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExtractError {
    /// The reply is empty after stripping reasoning blocks.
    #[error("empty reply")]
    Empty,
    /// No `{` in the reply.
    #[error("no JSON object in reply")]
    NoObject,
    /// Objects were found but none parsed.
    #[error("malformed JSON: {0}")]
    Malformed(String),
}

/// Removes `<think>…</think>` blocks (case-insensitive). An unclosed
/// `<think>` drops the rest of the text; a `</think>` without an opening
/// tag drops everything before it (chat templates that open the block in
/// the prompt).
pub fn strip_think_blocks(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut pos = 0usize;
    // orphan closing tag before any opening tag
    if let Some(close) = lower.find("</think>") {
        let open = lower.find("<think>");
        if open.is_none_or(|o| o > close) {
            pos = close + "</think>".len();
        }
    }
    while pos < text.len() {
        match lower[pos..].find("<think>") {
            Some(rel) => {
                let start = pos + rel;
                out.push_str(&text[pos..start]);
                match lower[start..].find("</think>") {
                    Some(end_rel) => pos = start + end_rel + "</think>".len(),
                    None => {
                        pos = text.len();
                    }
                }
            }
            None => {
                out.push_str(&text[pos..]);
                break;
            }
        }
    }
    out
}

/// Contents of markdown code fences (```` ```json … ``` ```` or plain
/// ```` ``` … ``` ````), in order. An unclosed fence runs to the end.
pub fn fenced_blocks(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        // skip the info string (e.g. "json") up to the end of the line
        let body_start = after.find('\n').map_or(after.len(), |i| i + 1);
        let info = &after[..body_start];
        let body_start = if info.trim_start().starts_with('{') { 0 } else { body_start };
        let body = &after[body_start..];
        match body.find("```") {
            Some(close) => {
                out.push(&body[..close]);
                rest = &body[close + 3..];
            }
            None => {
                out.push(body);
                break;
            }
        }
    }
    out
}

/// Where a JSON text's characters fall, fed one at a time: inside a
/// string literal (its quotes and escapes included) or in the structure
/// around it. Bytes fed as `char::from(b)` work too: only `"` and `\`
/// matter, and both are ASCII.
#[derive(Debug, Default)]
struct Literals {
    in_str: bool,
    escaped: bool,
}

impl Literals {
    /// Feeds `c`; true when it belongs to a string literal.
    fn inside(&mut self, c: char) -> bool {
        if self.in_str {
            if self.escaped {
                self.escaped = false;
            } else if c == '\\' {
                self.escaped = true;
            } else if c == '"' {
                self.in_str = false;
            }
            true
        } else {
            self.in_str = c == '"';
            self.in_str
        }
    }
}

/// Removes commas that directly precede `}` or `]` (ignoring whitespace),
/// outside string literals.
pub fn remove_trailing_commas(json: &str) -> String {
    let bytes = json.as_bytes();
    let mut out = String::with_capacity(json.len());
    let mut literals = Literals::default();
    let mut last = 0usize;
    let mut i = 0usize;
    while i < bytes.len() {
        let b = bytes[i];
        if !literals.inside(char::from(b)) && b == b',' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                j += 1;
            }
            if j < bytes.len() && (bytes[j] == b'}' || bytes[j] == b']') {
                out.push_str(&json[last..i]);
                last = i + 1;
            }
        }
        i += 1;
    }
    out.push_str(&json[last..]);
    out
}

/// Escapes raw control characters (below U+0020) inside string literals —
/// `\n`, `\r`, `\t`, others as `\u00XX` — which JSON forbids there but
/// llama.cpp's grammar for a JSON string lets a model write.
pub fn escape_string_controls(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut literals = Literals::default();
    for c in json.chars() {
        // a character of a string's text, not an escape's second half
        let text = literals.in_str && !literals.escaped;
        literals.inside(c);
        if text && u32::from(c) < 0x20 {
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                _ => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// The balanced `{…}` starting at byte `start` (which must be `{`),
/// honouring string literals and escapes. `None` if it never closes.
pub fn balanced_object_at(text: &str, start: usize) -> Option<&str> {
    let bytes = text.as_bytes();
    if bytes.get(start) != Some(&b'{') {
        return None;
    }
    let mut depth = 0usize;
    let mut literals = Literals::default();
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if literals.inside(char::from(b)) {
            continue;
        }
        match b {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(&text[start..=i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// Maximum number of `{` positions tried before giving up.
const MAX_ATTEMPTS: usize = 64;

/// Finds the first JSON object in `text` that parses after trailing-comma
/// removal and control-character escaping, trying each `{` in order.
fn first_object(text: &str) -> Result<Map<String, Value>, ExtractError> {
    let mut last_err = None;
    let mut found_brace = false;
    for (attempts, (i, _)) in text.match_indices('{').enumerate() {
        if attempts >= MAX_ATTEMPTS {
            break;
        }
        found_brace = true;
        let Some(candidate) = balanced_object_at(text, i) else {
            // an unclosed object: try closing it is not safe; report
            last_err.get_or_insert_with(|| "unbalanced braces (truncated reply?)".to_string());
            continue;
        };
        let cleaned = escape_string_controls(&remove_trailing_commas(candidate));
        match serde_json::from_str::<Value>(&cleaned) {
            Ok(Value::Object(map)) => return Ok(map),
            Ok(_) => {}
            Err(e) => {
                last_err.get_or_insert_with(|| e.to_string());
            }
        }
    }
    if !found_brace {
        return Err(ExtractError::NoObject);
    }
    Err(ExtractError::Malformed(last_err.unwrap_or_else(|| "no object parsed".to_string())))
}

/// The full pipeline: strip think blocks, then look inside code fences
/// first and in the whole text second, for the first JSON object that
/// parses.
///
/// ```
/// # use nav_planner::protocol::json::extract_json_object;
/// let reply = "<think>hmm {not json}</think>Sure! ```json\n{\"a\": 1,}\n```";
/// assert_eq!(extract_json_object(reply).unwrap()["a"], 1);
/// ```
pub fn extract_json_object(reply: &str) -> Result<Map<String, Value>, ExtractError> {
    let text = strip_think_blocks(reply);
    if text.trim().is_empty() {
        return Err(ExtractError::Empty);
    }
    let mut first_err = None;
    for block in fenced_blocks(&text) {
        match first_object(block) {
            Ok(m) => return Ok(m),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match first_object(&text) {
        Ok(m) => Ok(m),
        Err(e) => Err(match (e, first_err) {
            (ExtractError::NoObject, Some(f)) => f,
            (e, _) => e,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn strips_think_blocks() {
        assert_eq!(strip_think_blocks("a<think>x</think>b"), "ab");
        assert_eq!(strip_think_blocks("a<THINK>x</Think>b<think>y"), "ab");
        assert_eq!(strip_think_blocks("reasoning</think>{\"a\":1}"), "{\"a\":1}");
    }

    #[test]
    fn fences() {
        assert_eq!(fenced_blocks("x ```json\n{}\n``` y"), vec!["{}\n"]);
        assert_eq!(fenced_blocks("```{\"a\":1}```"), vec!["{\"a\":1}"]);
        assert_eq!(fenced_blocks("```\n{\"a\":1}"), vec!["{\"a\":1}"]);
    }

    #[test]
    fn trailing_commas_outside_strings_only() {
        assert_eq!(remove_trailing_commas(r#"{"a": [1, 2,], "b": ",}",}"#), r#"{"a": [1, 2], "b": ",}"}"#);
    }

    #[test]
    fn raw_line_breaks_inside_strings_are_escaped() {
        let reply = "{\"action\": {\"type\": \"STOP\"}, \"explanation\": \"first line\nsecond\tthird\u{1}\"}";
        let obj = extract_json_object(reply).unwrap();
        assert_eq!(obj["explanation"], "first line\nsecond\tthird\u{1}");
        assert_eq!(escape_string_controls("{\n\"a\": \"b\\\"\n\"}"), "{\n\"a\": \"b\\\"\\n\"}");
    }

    #[test]
    fn braces_inside_strings_are_not_structure() {
        let reply = r#"Here: {"why": "부엌 {주방} 은 } 열린", "x": 1} trailing } text"#;
        let m = extract_json_object(reply).unwrap();
        assert_eq!(m["x"], 1);
        assert_eq!(m["why"], "부엌 {주방} 은 } 열린");
    }

    #[test]
    fn skips_prose_braces() {
        let m = extract_json_object(r#"I think {maybe} this: {"a": true}"#).unwrap();
        assert_eq!(m["a"], true);
    }

    #[test]
    fn errors() {
        assert_eq!(extract_json_object(" <think>x</think> "), Err(ExtractError::Empty));
        assert_eq!(extract_json_object("no json here"), Err(ExtractError::NoObject));
        assert!(matches!(extract_json_object(r#"{"a": 1"#), Err(ExtractError::Malformed(_))));
        assert!(matches!(extract_json_object(r#"{"a": }"#), Err(ExtractError::Malformed(_))));
    }

    proptest! {
        #[test]
        fn never_panics(s in ".*") {
            let _ = extract_json_object(&s);
        }

        #[test]
        fn never_panics_on_bracey_strings(s in r#"[{}\[\]",:\\a-z0-9 `<>/]{0,200}"#) {
            let _ = extract_json_object(&s);
        }
    }
}
