//! Bounded reads: every reader of outside input (arena, config and
//! grounding files, step logs, model replies) stops at a size limit instead
//! of growing until the allocator gives up (`/dev/zero` as a file). The
//! functions take a reader, so nav-core itself still opens nothing; the
//! caller names the file in its error. [`refuse_fifo`] only looks at a
//! path's metadata, so a caller can refuse a FIFO before opening it, for
//! reading or for writing ([`create_regular`]).

use std::io::{self, BufRead, Read};
use std::path::Path;

/// An `InvalidInput` error for a FIFO or a socket at `path` (links
/// followed); `Ok` for anything else, a missing file included (its open
/// then names the problem). Opening a FIFO that has no writer blocks
/// forever, so every reader of a named file calls this before opening it
/// (a device such as `/dev/zero` is opened; its reader's limit ends it).
pub fn refuse_fifo(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if let Ok(m) = std::fs::metadata(path) {
            let t = m.file_type();
            if t.is_fifo() || t.is_socket() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a FIFO or socket, not a regular file (it is not opened: that could block forever)",
                ));
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Opens `path` for reading after [`refuse_fifo`]: a FIFO or a socket is an
/// error before anything is opened.
pub fn open_regular(path: &Path) -> io::Result<std::fs::File> {
    refuse_fifo(path)?;
    std::fs::File::open(path)
}

/// Creates (or truncates) `path` for writing after [`refuse_fifo`]:
/// opening a FIFO that has no reader for writing blocks forever, so every
/// writer of a named output file calls this (or [`refuse_fifo`] before its
/// own open).
pub fn create_regular(path: &Path) -> io::Result<std::fs::File> {
    refuse_fifo(path)?;
    std::fs::File::create(path)
}

/// The error for input over `limit` bytes: `InvalidData`, naming the limit.
pub fn too_large(limit: u64) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("larger than the {} limit", human_bytes(limit)))
}

/// `limit` as people read it: `16 MiB`, `512 KiB`, or bytes.
pub fn human_bytes(limit: u64) -> String {
    const MIB: u64 = 1 << 20;
    const KIB: u64 = 1 << 10;
    if limit >= MIB && limit % MIB == 0 {
        format!("{} MiB", limit / MIB)
    } else if limit >= KIB && limit % KIB == 0 {
        format!("{} KiB", limit / KIB)
    } else {
        format!("{limit}-byte")
    }
}

/// `text` cut to about `max_chars` characters when it is longer: its start
/// and its end around `… (N characters in all) …`. For messages that quote
/// input from outside: a parser's error quotes a whole string value (a
/// 20 MB one from a bridge), and its end says what was expected and where.
///
/// ```
/// use nav_core::bounded::cut_middle;
/// assert_eq!(cut_middle("short", 10), "short");
/// let long = format!("invalid type: string \"{}\", expected u32", "v".repeat(1000));
/// let cut = cut_middle(&long, 60);
/// assert!(cut.starts_with("invalid type: string \"vvv") && cut.ends_with("expected u32"));
/// assert!(cut.contains("(1037 characters in all)") && cut.chars().count() < 100);
/// ```
pub fn cut_middle(text: &str, max_chars: usize) -> std::borrow::Cow<'_, str> {
    let n = text.chars().count();
    if n <= max_chars {
        return std::borrow::Cow::Borrowed(text);
    }
    let tail = max_chars / 4;
    let head = max_chars - tail;
    let at = |k: usize| text.char_indices().nth(k).map_or(text.len(), |(i, _)| i);
    std::borrow::Cow::Owned(format!("{}… ({n} characters in all) …{}", &text[..at(head)], &text[at(n - tail)..]))
}

/// Reads all of `reader` as UTF-8, at most `limit` bytes: one byte more is
/// [`too_large`]. Only `limit + 1` bytes are ever buffered. A leading UTF-8
/// byte-order mark is dropped.
///
/// ```
/// use nav_core::bounded::read_to_string_limited;
/// assert_eq!(read_to_string_limited("abc".as_bytes(), 3).unwrap(), "abc");
/// assert_eq!(read_to_string_limited("\u{feff}abc".as_bytes(), 6).unwrap(), "abc");
/// let err = read_to_string_limited("abcd".as_bytes(), 3).unwrap_err();
/// assert!(err.to_string().contains("3-byte limit"));
/// ```
pub fn read_to_string_limited(reader: impl Read, limit: u64) -> io::Result<String> {
    let mut buf = Vec::new();
    reader.take(limit.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(too_large(limit));
    }
    // a UTF-8 byte-order mark (editors on Windows write one) is not content
    if buf.starts_with(b"\xEF\xBB\xBF") {
        buf.drain(..3);
    }
    String::from_utf8(buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Reads one line (through `\n`, kept) into `buf`, cleared first; a line
/// longer than `limit` bytes (without its newline) is [`too_large`].
/// Returns the bytes read, 0 at the end of the input. A leading UTF-8
/// byte-order mark is dropped from `buf` (and counted in the bytes read).
///
/// ```
/// use nav_core::bounded::read_line_limited;
/// let mut input = "ab\ncdef\n".as_bytes();
/// let mut buf = Vec::new();
/// assert_eq!(read_line_limited(&mut input, 3, &mut buf).unwrap(), 3);
/// assert_eq!(buf, b"ab\n");
/// assert!(read_line_limited(&mut input, 3, &mut buf).is_err());
/// // a byte-order mark is dropped, and still counted in the bytes read
/// let mut input = "\u{feff}{}\n".as_bytes();
/// assert_eq!(read_line_limited(&mut input, 8, &mut buf).unwrap(), 6);
/// assert_eq!(buf, b"{}\n");
/// ```
pub fn read_line_limited(reader: &mut impl BufRead, limit: u64, buf: &mut Vec<u8>) -> io::Result<usize> {
    buf.clear();
    let n = reader.by_ref().take(limit.saturating_add(1)).read_until(b'\n', buf)?;
    let content = if buf.ends_with(b"\n") { n - 1 } else { n };
    if content as u64 > limit {
        return Err(too_large(limit));
    }
    // a byte-order mark (an editor's, before the first line) is not content; `n` still counts it
    if buf.starts_with(b"\xEF\xBB\xBF") {
        buf.drain(..3);
    }
    Ok(n)
}

/// The bidirectional-text controls (embeddings, overrides, isolates and
/// marks): a right-to-left override shows the rest of a line reversed.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Characters that print as nothing, or as a blank, on their own: format
/// characters (zero-width spaces and joiners, the word joiner, the byte-
/// order mark, the soft hyphen, bidi controls, variation selectors, tags),
/// Hangul fillers, the blank braille pattern, and combining marks.
pub fn is_invisible(c: char) -> bool {
    is_bidi_control(c)
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2060}'..='\u{206F}'
                | '\u{2800}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{E0000}'..='\u{E0FFF}'
                | '\u{0300}'..='\u{036F}'
                | '\u{1AB0}'..='\u{1AFF}'
                | '\u{1DC0}'..='\u{1DFF}'
                | '\u{20D0}'..='\u{20FF}'
                | '\u{FE20}'..='\u{FE2F}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_input_stops_at_the_limit() {
        let err = read_to_string_limited(io::repeat(0), 1 << 20).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("1 MiB limit"), "{err}");
        let mut endless = io::BufReader::new(io::repeat(b'x'));
        let mut buf = Vec::new();
        assert!(read_line_limited(&mut endless, 4096, &mut buf).is_err());
        assert!(buf.len() <= 4097);
        // exactly the limit is fine, with or without the newline
        let mut input = "abc\nabc".as_bytes();
        assert_eq!(read_line_limited(&mut input, 3, &mut buf).unwrap(), 4);
        assert_eq!(read_line_limited(&mut input, 3, &mut buf).unwrap(), 3);
        assert_eq!(read_line_limited(&mut input, 3, &mut buf).unwrap(), 0);
        assert!(read_to_string_limited([0xff_u8].as_slice(), 4).is_err(), "not UTF-8");
        assert_eq!(human_bytes(512 << 10), "512 KiB");
    }
}
