//! Keeping credentials out of logs and error messages: the [`Secret`]
//! wrapper and [`redact`], applied to every provider error body and
//! transport error before it becomes a [`VlmError`](super::VlmError) message
//! or a tracing event.

use serde::{Deserialize, Serialize, Serializer};

/// The placeholder that replaces a credential.
pub const REDACTED: &str = "[REDACTED]";

/// A credential (API key, bearer token). `Debug` and `Serialize` print
/// `[REDACTED]`, so a config holding one can be logged or dumped safely;
/// only [`Secret::expose`] gives the value, for the auth header.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The credential itself. Use only to build the request's auth header.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// True when no credential is held.
    pub fn is_empty(&self) -> bool {
        self.0.trim().is_empty()
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(REDACTED)
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(REDACTED)
    }
}

/// Prefixes of well-known credential formats: OpenAI and Anthropic keys
/// (`sk-`, `sk-ant-`), Google API keys (`AIza`), Google OAuth access tokens
/// (`ya29.`), GitHub tokens (`ghp_`, `github_pat_`, …), and a few other
/// providers' key prefixes.
const KEY_PREFIXES: &[&str] =
    &["sk-", "AIza", "ya29.", "xai-", "gsk_", "pk-", "hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"];

/// Parameter names whose value is a credential (`key=abc`, `token=abc`).
const CREDENTIAL_PARAMS: &[&str] = &["key", "token", "api_key", "apikey", "access_token", "x-goog-api-key"];

/// Parts of a setting's name that mark its value as a credential
/// (`api_key`, a typo such as `api_kee`, `token`, `client_secret`, …).
const CREDENTIAL_NAME_PARTS: &[&str] = &["key", "kee", "token", "secret", "passw", "cred", "auth"];

/// The shortest token the shape rule takes for a key without a known prefix.
const LONG_TOKEN_CHARS: usize = 32;

/// True for a long base64-ish token (at least 32 characters with upper- and
/// lower-case letters and digits): the shape of most API keys and tokens.
fn is_long_token(token: &str) -> bool {
    token.len() >= LONG_TOKEN_CHARS
        && token.chars().any(|c| c.is_ascii_uppercase())
        && token.chars().any(|c| c.is_ascii_lowercase())
        && token.chars().any(|c| c.is_ascii_digit())
        && !token.contains('.')
}

/// True when `token` starts with the key prefix `prefix` (as it is, or with
/// its first letter capitalised, as at the start of a sentence: `Sk-…`) and
/// goes on for more than two characters. All capitals (`HF_HOME`) is a
/// name, not a key.
fn has_key_prefix(token: &str, prefix: &str) -> bool {
    let (t, p) = (token.as_bytes(), prefix.as_bytes());
    t.len() > p.len() + 2 && t[0].eq_ignore_ascii_case(&p[0]) && t[1..p.len()] == p[1..]
}

/// The values of every `name = value` / `name: value` line of a
/// configuration text whose name marks a credential (see
/// [`redact`]'s key-name rule): pass them to [`redact`] as secrets so a
/// parse error about that file cannot quote them, whatever their shape.
/// Quotes, brackets and commas around a value are dropped.
///
/// ```
/// use nav_planner::vlm::{credential_values, redact};
/// let text = "[vlm]\napi_kee = \"plainsecretvalue\"\nmodel = \"gpt\"";
/// let secrets = credential_values(text);
/// assert_eq!(secrets, ["plainsecretvalue"]);
/// let refs: Vec<&str> = secrets.iter().map(String::as_str).collect();
/// assert_eq!(redact("bad value plainsecretvalue", &refs), "bad value [REDACTED]");
/// ```
pub fn credential_values(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(i) = line.find(['=', ':']) else { continue };
        let name = line[..i].trim().trim_matches(['"', '\'']).to_ascii_lowercase();
        if !CREDENTIAL_NAME_PARTS.iter().any(|p| name.contains(p)) {
            continue;
        }
        let value = line[i + 1..].trim().trim_matches(|c: char| matches!(c, '"' | '\'' | '[' | ']' | ',' | ' '));
        for part in value.split(['"', '\'', ',', ' ']).filter(|p| !p.is_empty()) {
            out.push(part.to_string());
        }
        if !value.is_empty() {
            out.push(value.to_string());
        }
    }
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out.dedup();
    out
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~' | '+' | '/' | '=')
}

/// Returns `text` with every occurrence of the given secrets, and anything
/// shaped like a credential (known key prefixes, the token after `Bearer`,
/// the value of `key=` / `token=`, long base64-ish tokens of 32 characters
/// or more mixing upper- and lower-case letters and digits), replaced by
/// `[REDACTED]`.
///
/// ```
/// use nav_planner::vlm::redact;
/// let body = "Incorrect API key provided: sk-proj-abcdEFGH1234. Authorization: Bearer ya29.tok";
/// let clean = redact(body, &["my-configured-key"]);
/// assert_eq!(clean, "Incorrect API key provided: [REDACTED]. Authorization: Bearer [REDACTED]");
/// ```
pub fn redact(text: &str, secrets: &[&str]) -> String {
    redact_shapes(&redact_secrets(text, secrets), true)
}

/// [`redact`] without its long-token rule: the given secrets (whole and
/// altered) and tokens with a known key prefix (`sk-…`, `AIza…`, `ya29.…`),
/// the token after `Bearer` and the value of `key=` / `token=`. For text
/// that may hold long mixed-case names that are not keys (file paths in a
/// command's final error message).
///
/// ```
/// use nav_planner::vlm::redact_key_prefixes;
/// let msg = "bad URL `sk-abcdefgh1234` in /tmp/AbCdEfGh1234IjKlMnOp5678QrStUv/run";
/// assert_eq!(redact_key_prefixes(msg, &[]), "bad URL `[REDACTED]` in /tmp/AbCdEfGh1234IjKlMnOp5678QrStUv/run");
/// ```
pub fn redact_key_prefixes(text: &str, secrets: &[&str]) -> String {
    redact_shapes(&redact_secrets(text, secrets), false)
}

/// The values of every provider's credential variables that are set
/// (`OPENAI_API_KEY`, `OPENROUTER_API_KEY`, `GEMINI_API_KEY`,
/// `GOOGLE_API_KEY`, `VERTEX_ACCESS_TOKEN`, `GOOGLE_OAUTH_ACCESS_TOKEN`,
/// `ANTHROPIC_API_KEY`): a child process (a bridge, a worker) inherits them
/// and may echo one.
pub fn credential_env_values() -> Vec<String> {
    let mut vars: Vec<&str> =
        super::Provider::ALL.iter().flat_map(|p| p.credential_env_vars().iter().copied()).collect();
    vars.push("OPENROUTER_API_KEY");
    vars.iter().filter_map(|v| std::env::var(v).ok()).filter(|v| !v.trim().is_empty()).collect()
}

/// `text` for a message, a log line or a step record when it comes from
/// outside the model's own channel (what a user typed, what a bridge or a
/// worker said): [`redact_key_prefixes`] with the
/// [`credential_env_values`].
pub fn scrub_credentials(text: &str) -> String {
    let values = credential_env_values();
    let secrets: Vec<&str> = values.iter().map(String::as_str).collect();
    redact_key_prefixes(text, &secrets)
}

/// The shape rules of [`redact`] on `out`; `long_tokens` adds the rule for
/// long base64-ish tokens without a known prefix.
fn redact_shapes(out: &str, long_tokens: bool) -> String {
    let mut result = String::with_capacity(out.len());
    let mut rest = out;
    let mut after_bearer = false;
    while let Some(start) = rest.find(is_token_char) {
        let (before, tail) = rest.split_at(start);
        result.push_str(before);
        let end = tail.find(|c: char| !is_token_char(c)).unwrap_or(tail.len());
        // A sentence's full stop is not part of the token.
        let core_end = match tail[..end].trim_end_matches('.').len() {
            0 => end,
            n => n,
        };
        let (token, after) = tail.split_at(core_end);
        let (param, value) = split_assignment(token);
        let introduced = after_bearer && !before.is_empty() && before.chars().all(|c| c == ' ');
        let prefixed = KEY_PREFIXES.iter().any(|p| has_key_prefix(value, p));
        let assigned = !param.is_empty()
            && !value.is_empty()
            && CREDENTIAL_PARAMS.iter().any(|k| param[..param.len() - 1].eq_ignore_ascii_case(k));
        if introduced || prefixed || assigned || (long_tokens && is_long_token(value)) {
            result.push_str(param);
            result.push_str(REDACTED);
        } else {
            result.push_str(token);
        }
        after_bearer = token.eq_ignore_ascii_case("bearer");
        rest = after;
    }
    result.push_str(rest);
    result
}

/// The shortest piece of a secret [`redact`] recognises on its own (a key's
/// suffix in a server's error message, say).
pub const MIN_FRAGMENT_CHARS: usize = 8;

/// Secrets at least this long are also looked for in pieces, reversed and
/// encoded (shorter ones only whole: their pieces would be ordinary words).
pub const MIN_FRAGMENT_SECRET_CHARS: usize = 12;

/// The shortest base64 or hex run [`redact`] decodes to look for a secret
/// in it: the base64 of a [`MIN_FRAGMENT_CHARS`]-byte piece, unpadded.
const MIN_ENCODED_RUN: usize = (MIN_FRAGMENT_CHARS * 4).div_ceil(3);

/// `text` with every altered form of `secret` replaced by `[REDACTED]`: any
/// piece of [`MIN_FRAGMENT_CHARS`] characters or more, in any letter case,
/// of the secret, of it reversed or of every other character of either (see
/// [`piece_set`] for the shifted alphabets also tried); any base64 (standard
/// or URL-safe), base32, hex (also of UTF-16, or bytes such as `73:6b`),
/// percent-encoded or character-code run (`115, 107`, `115 and 107`,
/// `&#115;&#107;`, `&#x73;`, `0x73`, `\x73`, `\u{73}`, `\163`, `163 153`,
/// `0o163`, CSS's `\73 `), base85 (ascii85, Z85, RFC 1924) or uuencoded
/// run whose decoded bytes hold such a piece; such a piece in leet
/// (`5k-n4vk17`); and such a piece of its letters and digits spelled out
/// with anything between them (`s k - t e s t`, `["s","k"]`). Linear in the
/// text for a given secret.
fn redact_altered(text: &str, secret: &str) -> String {
    let pieces = piece_set(secret);
    let holds_piece = |bytes: &[u8]| {
        let lower = bytes.to_ascii_lowercase();
        pieces.iter().any(|(len, set)| lower.windows(*len).any(|w| set.contains(w)))
    };
    let mut hide: Vec<(usize, usize)> = Vec::new();
    // plain pieces: every window of the text starting on a character boundary
    let lower = text.to_ascii_lowercase();
    for (i, _) in lower.char_indices() {
        for (len, set) in pieces.iter() {
            if let Some(w) = lower.as_bytes().get(i..i + len) {
                if set.contains(w) {
                    hide.push((i, i + len));
                }
            }
        }
    }
    hide.extend(encoded_spans(text, &holds_piece));
    // an encoding written backwards: the same runs in the text read from its end
    let reversed: String = text.chars().rev().collect();
    hide.extend(encoded_spans(&reversed, &holds_piece).into_iter().map(|(s, e)| (text.len() - e, text.len() - s)));
    // leet: look-alike digits and signs for letters
    let folded = leet_fold(text.as_bytes());
    let leet = leet_piece_set(secret);
    for i in 0..folded.len().saturating_sub(MIN_FRAGMENT_CHARS - 1) {
        if text.is_char_boundary(i) && leet.contains(&folded[i..i + MIN_FRAGMENT_CHARS]) {
            hide.push((i, i + MIN_FRAGMENT_CHARS));
        }
    }
    hide.extend(spelled_out(text, secret));
    if hide.is_empty() {
        return text.to_string();
    }
    hide.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (s, e) in hide {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    // a piece may end inside a multi-byte character of the text
    let boundary = |mut i: usize| {
        while !text.is_char_boundary(i) {
            i += 1;
        }
        i
    };
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (s, e) in merged {
        if s < at {
            continue;
        }
        out.push_str(&text[at..s]);
        out.push_str(REDACTED);
        at = boundary(e.min(text.len()));
    }
    out.push_str(&text[at..]);
    out
}

/// The byte ranges of `text`'s encoded runs (base64, base32, hex, bits,
/// percent, character codes, CSS escapes, base85, uuencode) whose decoded
/// bytes hold a piece of the secret.
fn encoded_spans(text: &str, holds_piece: &dyn Fn(&[u8]) -> bool) -> Vec<(usize, usize)> {
    let mut hide = Vec::new();
    for (start, end) in encoded_runs(text) {
        if decodings(&text[start..end]).iter().any(|d| holds_piece(d)) {
            hide.push((start, end));
        }
    }
    for (start, end) in percent_runs(text) {
        if holds_piece(&percent_decode(&text[start..end])) {
            hide.push((start, end));
        }
    }
    let codes = char_code_runs(text).into_iter().chain(hex_pair_runs(text)).chain(number_runs(text));
    for (start, end, decoded) in codes.chain(css_escape_runs(text)) {
        if holds_piece(&decoded) {
            hide.push((start, end));
        }
    }
    for (start, end, decoded) in radix85_and_uu_runs(text) {
        if decoded.iter().any(|d| holds_piece(d)) {
            hide.push((start, end));
        }
    }
    hide
}

/// The [`MIN_FRAGMENT_CHARS`]-character pieces [`redact_altered`] looks for,
/// lower-cased, as bytes, by byte length (one length for an ASCII secret):
/// those of the secret and of it reversed, of every other character of
/// either (a key split into its odd and even characters), each also in every
/// Caesar shift of its letters (rot13 among them) and every rotation of the
/// printable ASCII characters (rot47 among them). Built once per secret.
fn piece_set(secret: &str) -> std::sync::Arc<Pieces> {
    type Cache = std::sync::Mutex<Vec<(String, std::sync::Arc<Pieces>)>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, p)) = cache.iter().find(|(s, _)| s == secret) {
        return p.clone();
    }
    let reversed: String = secret.chars().rev().collect();
    let every = |s: &str, stride: usize, from: usize| -> String { s.chars().skip(from).step_by(stride).collect() };
    let mut bases = vec![secret.to_string(), reversed.clone()];
    for s in [secret, reversed.as_str()] {
        for stride in [2, 3, 4] {
            for from in 0..stride {
                bases.push(every(s, stride, from));
            }
        }
    }
    let mut pieces = Pieces::new();
    for base in &bases {
        let lower = base.to_lowercase();
        let shifted = (0..26u8)
            .map(|n| caesar(&lower, n))
            .chain((1..94u8).map(|n| rotate_printable(base, n).to_lowercase()))
            .chain([atbash(&lower)]);
        for form in shifted {
            let starts: Vec<usize> = form.char_indices().map(|(i, _)| i).chain([form.len()]).collect();
            for w in starts.windows(MIN_FRAGMENT_CHARS + 1) {
                let piece = &form.as_bytes()[w[0]..w[MIN_FRAGMENT_CHARS]];
                pieces.entry(piece.len()).or_default().insert(piece.into());
            }
        }
    }
    let pieces = std::sync::Arc::new(pieces);
    if cache.len() >= 8 {
        cache.remove(0);
    }
    cache.push((secret.to_string(), pieces.clone()));
    pieces
}

/// The [`MIN_FRAGMENT_CHARS`]-byte pieces of an ASCII secret and of it
/// reversed, [`leet_fold`]ed (empty for a secret with other characters:
/// its pieces would not be a fixed number of bytes).
fn leet_piece_set(secret: &str) -> std::collections::HashSet<Vec<u8>> {
    if !secret.is_ascii() {
        return Default::default();
    }
    let reversed: Vec<u8> = secret.bytes().rev().collect();
    [leet_fold(secret.as_bytes()), leet_fold(&reversed)]
        .iter()
        .flat_map(|f| f.windows(MIN_FRAGMENT_CHARS).map(<[u8]>::to_vec).collect::<Vec<_>>())
        .collect()
}

/// Pieces of a secret by byte length.
type Pieces = std::collections::BTreeMap<usize, std::collections::HashSet<Box<[u8]>>>;

/// `s` with its ASCII letters rotated by `n` places (rot13 for 13).
fn caesar(s: &str, n: u8) -> String {
    s.chars()
        .map(|c| match c {
            'a'..='z' => char::from(b'a' + (c as u8 - b'a' + n) % 26),
            'A'..='Z' => char::from(b'A' + (c as u8 - b'A' + n) % 26),
            _ => c,
        })
        .collect()
}

/// `s` with its ASCII letters mirrored (a ↔ z, b ↔ y: atbash).
fn atbash(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'a'..='z' => char::from(b'z' - (c as u8 - b'a')),
            'A'..='Z' => char::from(b'Z' - (c as u8 - b'A')),
            _ => c,
        })
        .collect()
}

/// `s` with its printable ASCII characters (`!` to `~`) rotated by `n`
/// places (rot47 for 47).
fn rotate_printable(s: &str, n: u8) -> String {
    s.chars()
        .map(|c| match c {
            '!'..='~' => char::from(b'!' + (c as u8 - b'!' + n) % 94),
            _ => c,
        })
        .collect()
}

/// Maximal runs of [`MIN_FRAGMENT_CHARS`] or more bare numbers with at most
/// 12 other characters between each two (`115 and 107 and 45`, octal bytes
/// `163 153 055`, bits `01110011 01101011`), each with the characters they
/// spell read as decimal, as octal and as binary (where the digits allow).
fn number_runs(text: &str) -> Vec<(usize, usize, Vec<u8>)> {
    let b = text.as_bytes();
    let mut numbers: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            numbers.push((start, i));
        } else {
            i += 1;
        }
    }
    let mut out = Vec::new();
    for radix in [10, 8, 2] {
        let code = |&(s, e): &(usize, usize)| {
            (e - s <= if radix == 2 { 8 } else { 7 })
                .then(|| u32::from_str_radix(&text[s..e], radix).ok())
                .flatten()
                .and_then(char::from_u32)
        };
        let mut run: Vec<(usize, usize, char)> = Vec::new();
        let mut close = |run: &mut Vec<(usize, usize, char)>| {
            if run.len() >= MIN_FRAGMENT_CHARS {
                out.push((run[0].0, run[run.len() - 1].1, run.iter().map(|r| r.2).collect::<String>().into_bytes()));
            }
            run.clear();
        };
        for n in &numbers {
            match code(n) {
                Some(c) => {
                    if run.last().is_some_and(|last| n.0 - last.1 > 12) {
                        close(&mut run);
                    }
                    run.push((n.0, n.1, c));
                }
                None => close(&mut run),
            }
        }
        close(&mut run);
    }
    out
}

/// Maximal runs of [`MIN_FRAGMENT_CHARS`] or more character codes, each
/// with the UTF-8 bytes they spell: decimal numbers (`115, 107, 45`,
/// `[115,107]`, HTML's `&#115;&#107;`), HTML hex entities (`&#x73;`),
/// program escapes (`0x73`, `\x73`, `\x{73}`, `\u0073`, `\u{73}`,
/// `\U00000073`, `\163`, `0o163`, `0b01110011`) or code points (`U+0073`), at
/// most three characters that are neither letters nor digits apart. A
/// decimal, `0x`, `0o` or `0b` number glued to a letter or digit before it
/// is not a code.
fn char_code_runs(text: &str) -> Vec<(usize, usize, Vec<u8>)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut run: Option<(usize, usize, Vec<u8>, usize)> = None; // start, end, bytes, codes
    let mut close = |run: &mut Option<(usize, usize, Vec<u8>, usize)>| {
        if let Some((start, end, bytes, codes)) = run.take() {
            if codes >= MIN_FRAGMENT_CHARS {
                out.push((start, end, bytes));
            }
        }
    };
    let glued = |i: usize| i > 0 && b[i - 1].is_ascii_alphanumeric();
    let mut i = 0;
    while i < b.len() {
        // a prefixed code right after the previous one (`0b01110011` + `0b01101011`…)
        let run_end = run.as_ref().map(|r| r.1);
        let continues = |i: usize| run_end == Some(i);
        let at = &b[i..];
        let next_is = |set: &[u8]| at.get(1).is_some_and(|c| set.contains(c));
        // where the digits start, their radix and how many a code may have
        let (digits, radix, max) =
            if at.starts_with(b"&#x") || at.starts_with(b"&#X") || at.starts_with(b"\\u{") || at.starts_with(b"\\x{") {
                (i + 3, 16, 6)
            } else if at.starts_with(b"\\U") {
                (i + 2, 16, 8)
            } else if ((at.starts_with(b"0x") || at.starts_with(b"0X")) && (!glued(i) || continues(i)))
                || at.starts_with(b"U+")
                || at.starts_with(b"u+")
                || (at[0] == b'\\' && next_is(b"xXu"))
            {
                (i + 2, 16, 6)
            } else if (at.starts_with(b"0o") || at.starts_with(b"0O")) && (!glued(i) || continues(i)) {
                (i + 2, 8, 7)
            } else if (at.starts_with(b"0b") || at.starts_with(b"0B")) && (!glued(i) || continues(i)) {
                (i + 2, 2, 8)
            } else if at[0] == b'\\' && next_is(b"01234567") {
                (i + 1, 8, 3)
            } else if at[0].is_ascii_digit() && !glued(i) {
                (i, 10, 7)
            } else {
                i += 1;
                continue;
            };
        let is_digit = |c: u8| char::from(c).is_digit(radix);
        // a prefixed code ends where the next one's prefix starts (`0b01110011` + `0b0110…`)
        let prefixed = digits == i + 2 && at[0] == b'0';
        let next_prefix = |j: usize| prefixed && b[j] == b'0' && b.get(j + 1) == Some(&at[1]);
        let mut j = digits;
        while j < b.len() && j - digits < max && is_digit(b[j]) && !(j > digits && next_prefix(j)) {
            j += 1;
        }
        // a longer number is not a code (octal escapes end after three digits)
        let longer = radix != 8 && j < b.len() && is_digit(b[j]) && !next_prefix(j);
        let code = (j > digits && !longer)
            .then(|| u32::from_str_radix(&text[digits..j], radix).ok())
            .flatten()
            .and_then(char::from_u32);
        let Some(c) = code else {
            i += 1;
            continue;
        };
        let mut utf8 = [0u8; 4];
        let joins = run.as_ref().is_some_and(|r| i - r.1 <= 3 && !b[r.1..i].iter().any(u8::is_ascii_alphanumeric));
        if !joins {
            close(&mut run);
            let entity = radix == 10 && i >= 2 && &b[i - 2..i] == b"&#";
            run = Some((if entity { i - 2 } else { i }, j, Vec::new(), 0));
        }
        if let Some(r) = run.as_mut() {
            r.1 = if j < b.len() && matches!(b[j], b';' | b'}') { j + 1 } else { j };
            r.2.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
            r.3 += 1;
        }
        i = j;
    }
    close(&mut run);
    out
}

/// Maximal runs of [`MIN_FRAGMENT_CHARS`] or more two-digit hex bytes
/// separated by one of `: - , . _ ; / |` or a space (`73:6b:2d`, a hex dump's
/// `73 6b 2d`), each with the bytes they spell.
fn hex_pair_runs(text: &str) -> Vec<(usize, usize, Vec<u8>)> {
    let b = text.as_bytes();
    let alnum = |k: usize| b.get(k).is_some_and(u8::is_ascii_alphanumeric);
    let pair = |k: usize| {
        k + 1 < b.len()
            && b[k].is_ascii_hexdigit()
            && b[k + 1].is_ascii_hexdigit()
            && !(k > 0 && alnum(k - 1))
            && !alnum(k + 2)
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !pair(i) {
            i += 1;
            continue;
        }
        let (start, mut k, mut bytes) = (i, i, Vec::new());
        loop {
            bytes.push(u8::from_str_radix(&text[k..k + 2], 16).unwrap_or(0));
            let separator = |c: &u8| matches!(c, b':' | b'-' | b' ' | b',' | b'.' | b'_' | b';' | b'/' | b'|');
            if b.get(k + 2).is_some_and(separator) && pair(k + 3) {
                k += 3;
            } else {
                break;
            }
        }
        if bytes.len() >= MIN_FRAGMENT_CHARS {
            out.push((start, k + 2, bytes));
        }
        i = k + 2;
    }
    out
}

/// A fullwidth form (`ＳＥＣ`) as its ASCII letter or digit, and any
/// ASCII letter or digit as itself; `None` for everything else.
fn letter_or_digit(c: char) -> Option<char> {
    let c = match u32::from(c) {
        0xFF01..=0xFF5E => char::from_u32(u32::from(c) - 0xFEE0).unwrap_or(c),
        _ => c,
    };
    c.is_ascii_alphanumeric().then_some(c)
}

/// The byte ranges of `text` that spell out a piece of `secret`'s letters
/// and digits (or of them reversed) with anything between them: `s k - t e
/// s t`, a JSON array of its characters, pieces of 7 characters apart, zero-
/// width spaces between them, fullwidth letters. Each range runs from the
/// piece's first letter to its last.
fn spelled_out(text: &str, secret: &str) -> Vec<(usize, usize)> {
    let core: String = secret.chars().filter_map(letter_or_digit).collect();
    if core.len() < MIN_FRAGMENT_CHARS {
        return Vec::new();
    }
    // the text's letters and digits, each with its byte range in `text`
    let mut compact = String::new();
    let mut at: Vec<(usize, usize)> = Vec::new();
    for (i, c) in text.char_indices() {
        if let Some(a) = letter_or_digit(c) {
            compact.push(a);
            at.push((i, i + c.len_utf8()));
        }
    }
    let reversed: String = core.chars().rev().collect();
    let mut out = Vec::new();
    for form in [core.as_str(), reversed.as_str()] {
        for w in 0..=form.len() - MIN_FRAGMENT_CHARS {
            let piece = &form[w..w + MIN_FRAGMENT_CHARS];
            out.extend(compact.match_indices(piece).map(|(i, m)| (at[i].0, at[i + m.len() - 1].1)));
        }
    }
    out
}

/// The byte ranges of maximal runs of URL characters holding at least
/// [`MIN_FRAGMENT_CHARS`] percent or quoted-printable escapes (`%73%6B`,
/// `sk%2Dtest`, `=73=6B`).
fn percent_runs(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    // `%73` (URLs) or `=73` (quoted-printable)
    let escape = |i: usize| {
        matches!(bytes[i], b'%' | b'=') && bytes.get(i + 1..i + 3).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    };
    let plain = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'+');
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let (start, mut escapes) = (i, 0usize);
        loop {
            if i < bytes.len() && escape(i) {
                escapes += 1;
                i += 3;
            } else if i < bytes.len() && plain(bytes[i]) {
                i += 1;
            } else {
                break;
            }
        }
        if escapes >= MIN_FRAGMENT_CHARS {
            out.push((start, i));
        }
        i = i.max(start + 1);
    }
    out
}

/// `run` with its percent escapes decoded.
fn percent_decode(run: &str) -> Vec<u8> {
    let bytes = run.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%' | b'=', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// The byte ranges of maximal runs of base64 / hex characters long enough
/// to hide a piece of a secret, line breaks inside them allowed.
fn encoded_runs(text: &str) -> Vec<(usize, usize)> {
    // '=' ends a run: padding is only at a run's end, and `name=value` is two runs
    let is_b64 = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_');
    let bytes = text.as_bytes();
    runs_of(bytes, is_b64, MIN_ENCODED_RUN)
        .into_iter()
        .map(|(start, end)| {
            // the padding belongs to the run (redacted with it)
            (start, end + bytes[end..].iter().take(2).take_while(|b| **b == b'=').count())
        })
        .collect()
}

/// What a base64 or hex run may decode to: base64 (both alphabets) from
/// each of the four alignments a cut-out piece can start at, and hex from
/// both nibble alignments.
fn decodings(run: &str) -> Vec<Vec<u8>> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let joined: String = run.chars().filter(|c| !matches!(c, '\r' | '\n')).collect();
    let core = joined.trim_end_matches('=');
    let mut out = Vec::new();
    for skip in 0..4.min(core.len()) {
        let part = &core[skip..];
        // the whole rest (a final partial group decodes too), else whole groups only
        let whole = &part[..part.len() - part.len() % 4];
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            if let Some(d) = [part, whole].into_iter().find_map(|p| engine.decode(p).ok()) {
                out.push(d);
            }
        }
    }
    // bits without separators (`0111001101101011…`), from each of the eight alignments
    if core.len() >= 8 * MIN_FRAGMENT_CHARS && core.bytes().all(|b| b == b'0' || b == b'1') {
        for skip in 0..8 {
            let bits = &core.as_bytes()[skip..];
            out.push(bits.chunks_exact(8).map(|c| c.iter().fold(0u8, |acc, b| (acc << 1) | (b - b'0'))).collect());
        }
    }
    // one hex number (`0x736b2d…`)
    if let Some(hex) = core.strip_prefix("0x").or_else(|| core.strip_prefix("0X")) {
        if hex.len() >= 2 * MIN_FRAGMENT_CHARS && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            for skip in 0..2 {
                let digits: Vec<u8> =
                    hex.bytes().skip(skip).filter_map(|b| (b as char).to_digit(16)).map(|d| d as u8).collect();
                out.push(digits.chunks_exact(2).map(|p| (p[0] << 4) | p[1]).collect());
            }
        }
    }
    let upper = core.to_ascii_uppercase();
    for alphabet in [BASE32, BASE32_HEX] {
        if upper.bytes().all(|b| alphabet.contains(&b)) {
            for skip in 0..8.min(upper.len()) {
                out.push(base32_decode(&upper.as_bytes()[skip..], alphabet));
            }
        }
    }
    if core.bytes().all(|b| b.is_ascii_hexdigit()) {
        for skip in 0..2.min(core.len()) {
            let digits: Vec<u8> =
                core.bytes().skip(skip).filter_map(|b| (b as char).to_digit(16)).map(|d| d as u8).collect();
            let decoded: Vec<u8> = digits.chunks_exact(2).map(|p| (p[0] << 4) | p[1]).collect();
            if decoded.contains(&0) {
                // UTF-16 (`0073006b…`): the same letters with zero bytes between them
                out.push(decoded.iter().copied().filter(|&b| b != 0).collect());
            }
            out.push(decoded);
        }
    }
    out
}

/// The base32 alphabet (RFC 4648).
const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
/// The "extended hex" base32 alphabet (RFC 4648).
const BASE32_HEX: &[u8; 32] = b"0123456789ABCDEFGHIJKLMNOPQRSTUV";

/// The bytes an unpadded base32 run spells (a final partial byte dropped).
fn base32_decode(run: &[u8], alphabet: &[u8; 32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(run.len() * 5 / 8);
    let (mut bits, mut held) = (0u32, 0u32);
    for c in run {
        let Some(v) = alphabet.iter().position(|a| a == c) else { break };
        bits = (bits << 5) | v as u32;
        held += 5;
        if held >= 8 {
            held -= 8;
            out.push((bits >> held) as u8);
            bits &= (1 << held) - 1;
        }
    }
    out
}

/// `s` with look-alike digits and signs folded onto the letters they stand
/// for in leet (`4`/`@` a, `8` b, `3` e, `9` g, `1`/`!`/`|` i and l,
/// `0` o, `5`/`$` s, `7`/`+` t, `2` z), letters lower-cased. Byte for
/// byte, so offsets stay those of `s`.
fn leet_fold(s: &[u8]) -> Vec<u8> {
    s.iter()
        .map(|&b| match b.to_ascii_lowercase() {
            b'4' | b'@' => b'a',
            b'8' => b'b',
            b'3' => b'e',
            b'9' => b'g',
            b'1' | b'!' | b'|' | b'l' => b'i',
            b'0' => b'o',
            b'5' | b'$' => b's',
            b'7' | b'+' => b't',
            b'2' => b'z',
            c => c,
        })
        .collect()
}

/// Maximal runs of CSS escapes (`\73 \6b \2d`: a backslash, one to six hex
/// digits and at most one white space), each with the UTF-8 bytes they
/// spell.
fn css_escape_runs(text: &str) -> Vec<(usize, usize, Vec<u8>)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let (start, mut bytes, mut codes) = (i, Vec::new(), 0usize);
        let mut j = i;
        while j + 1 < b.len() && b[j] == b'\\' && b[j + 1].is_ascii_hexdigit() {
            let digits = j + 1;
            let mut k = digits;
            while k < b.len() && k - digits < 6 && b[k].is_ascii_hexdigit() {
                k += 1;
            }
            let Some(c) = u32::from_str_radix(&text[digits..k], 16).ok().and_then(char::from_u32) else { break };
            bytes.extend_from_slice(c.encode_utf8(&mut [0u8; 4]).as_bytes());
            codes += 1;
            // one white space ends an escape (CSS: space, tab, newline, CR LF, form feed)
            j = match b.get(k..k + 2) {
                Some(b"\r\n") => k + 2,
                _ if b.get(k).is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')) => k + 1,
                _ => k,
            };
        }
        if codes >= MIN_FRAGMENT_CHARS {
            out.push((start, j, bytes));
        }
        i = j.max(i + 1);
    }
    out
}

/// The ascii85 alphabet (`!` … `u`; Adobe's and btoa's).
const ASCII85: &[u8] = b"!\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstu";
/// ZeroMQ's Z85 alphabet.
const Z85: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
/// RFC 1924's base85 alphabet (Git's binary patches, Python's `b85encode`).
const BASE85_RFC1924: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

/// Maximal runs of characters of one base85 alphabet (ascii85's `z` for
/// four zero bytes included) or of uuencode's (space to backtick) long
/// enough to hide a piece of a secret, each with what it may decode to from
/// every alignment a cut-out piece can start at.
fn radix85_and_uu_runs(text: &str) -> Vec<(usize, usize, Vec<Vec<u8>>)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let alphabets: [(&[u8], bool); 3] = [(ASCII85, true), (Z85, false), (BASE85_RFC1924, false)];
    for (alphabet, z_zeros) in alphabets {
        let mut lookup = [None; 256];
        for (v, c) in alphabet.iter().enumerate() {
            lookup[usize::from(*c)] = Some(v as u32);
        }
        let member = |c: u8| lookup[usize::from(c)].is_some() || (z_zeros && c == b'z');
        for (start, end) in runs_of(b, member, (MIN_FRAGMENT_CHARS * 5).div_ceil(4)) {
            let mut values: Vec<u32> = Vec::with_capacity(end - start);
            for &c in b[start..end].iter().filter(|c| !matches!(c, b'\r' | b'\n')) {
                match lookup[usize::from(c)] {
                    Some(v) => values.push(v),
                    None => values.extend([0; 5]), // ascii85's `z`: four zero bytes
                }
            }
            let decoded = (0..5.min(values.len()))
                .map(|skip| {
                    // a final partial group decodes as if padded with the last digit
                    let mut v = values[skip..].to_vec();
                    v.resize(v.len().div_ceil(5) * 5, 84);
                    v.chunks_exact(5)
                        .flat_map(|g| g.iter().fold(0u32, |acc, v| acc.wrapping_mul(85).wrapping_add(*v)).to_be_bytes())
                        .collect()
                })
                .collect();
            out.push((start, end, decoded));
        }
    }
    // uuencode: four characters (space or backtick for 0, up to `_` for 63) carry three bytes
    let uu = |c: u8| (b' '..=b'`').contains(&c);
    for (start, end) in runs_of(b, uu, (MIN_FRAGMENT_CHARS * 4).div_ceil(3)) {
        let values: Vec<u8> =
            b[start..end].iter().filter(|c| !matches!(c, b'\r' | b'\n')).map(|c| (c - b' ') & 63).collect();
        let decoded = (0..4.min(values.len()))
            .map(|skip| {
                let mut v = values[skip..].to_vec();
                v.resize(v.len().div_ceil(4) * 4, 0);
                v.chunks_exact(4)
                    .flat_map(|g| [(g[0] << 2) | (g[1] >> 4), (g[1] << 4) | (g[2] >> 2), (g[2] << 6) | g[3]])
                    .collect()
            })
            .collect();
        // spaces at a run's ends are the text's (uuencoders write zeros as backticks): not hidden
        let from = start + b[start..end].iter().take_while(|c| c.is_ascii_whitespace()).count();
        let to = end - b[from..end].iter().rev().take_while(|c| c.is_ascii_whitespace()).count();
        out.push((from, to, decoded));
    }
    out
}

/// The byte ranges of maximal runs of at least `min` `member` bytes, line
/// breaks between them allowed (a run never starts or ends with one).
fn runs_of(b: &[u8], member: impl Fn(u8) -> bool, min: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !member(b[i]) {
            i += 1;
            continue;
        }
        let (start, mut members, mut end) = (i, 0, i);
        // a line break inside a run continues it (encoders wrap their lines)
        while i < b.len() && (member(b[i]) || matches!(b[i], b'\r' | b'\n')) {
            if member(b[i]) {
                members += 1;
                end = i + 1;
            }
            i += 1;
        }
        if members >= min {
            out.push((start, end));
        }
        i = end.max(start + 1);
    }
    out
}

/// `text` with the given secrets replaced by `[REDACTED]`: each whole (at
/// least 6 characters), and for a secret of 12 characters
/// or more any piece of 8 characters of it or of it
/// reversed, plain or inside a base64 or hex run. Nothing else is touched
/// (the key-shape rules are [`redact`]'s).
///
/// ```
/// use nav_planner::vlm::redact_secrets;
/// let key = "sk-navkit-test-SECRET123";
/// assert_eq!(redact_secrets("bad key …SECRET123", &[key]), "bad key …[REDACTED]");
/// assert_eq!(redact_secrets("321TERCES-tset", &[key]), "[REDACTED]");
/// assert_eq!(redact_secrets("nothing here", &[key]), "nothing here");
/// ```
pub fn redact_secrets(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_string();
    for secret in secrets {
        let secret = secret.trim();
        // Very short strings would mangle ordinary words; real keys are long.
        if secret.len() >= 6 {
            out = out.replace(secret, REDACTED);
        }
        if secret.chars().count() >= MIN_FRAGMENT_SECRET_CHARS {
            out = redact_altered(&out, secret);
        }
    }
    out
}

/// Splits `key=value` into (`key=`, `value`); other tokens into ("", token).
fn split_assignment(token: &str) -> (&str, &str) {
    match token.find('=') {
        Some(i)
            if i > 0
                && i + 1 < token.len()
                && token[..i].chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
        {
            token.split_at(i + 1)
        }
        _ => ("", token),
    }
}

/// `text` cut to at most `max_chars` characters, with `…` when cut.
pub(crate) fn truncate_chars(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn redacts_known_shapes() {
        assert_eq!(redact("key sk-ant-api03-XYZxyz123 bad", &[]), "key [REDACTED] bad");
        assert_eq!(redact("url?key=AIzaSyABCDEF&alt=json", &[]), "url?key=[REDACTED]&alt=json");
        assert_eq!(redact("token=abc123&x=1", &[]), "token=[REDACTED]&x=1");
        assert_eq!(redact("Authorization: bearer abc.def", &[]), "Authorization: bearer [REDACTED]");
        assert_eq!(redact("the secret is hunter2-long", &["hunter2-long"]), "the secret is [REDACTED]");
        assert_eq!(
            redact("ordinary text, no keys: skeleton sky-high", &[]),
            "ordinary text, no keys: skeleton sky-high"
        );
        assert_eq!(redact("", &["abcdef"]), "");
        assert_eq!(redact("... a..b. . end.", &[]), "... a..b. . end.");
        assert_eq!(redact("token ya29.abc.def.", &[]), "token [REDACTED].");
        assert_eq!(redact("push with ghp_16C7e42F292c6912E7710c838347Ae178B4a", &[]), "push with [REDACTED]");
        assert_eq!(redact("github_pat_11ABCDEFG0123456789_abc", &[]), "[REDACTED]");
        assert_eq!(redact("got Zq8uRt5LmN3bV7cX1zA9sD4fG6hJ2kL0 here", &[]), "got [REDACTED] here");
        assert_eq!(
            redact("a short Abc123 and a lowercase_only_identifier_of_length_40", &[]),
            "a short Abc123 and a lowercase_only_identifier_of_length_40"
        );
    }

    #[test]
    fn a_key_at_the_start_of_a_sentence_is_still_a_key() {
        assert_eq!(redact_key_prefixes("Sk-test-SECRET123abcdef.", &[]), "[REDACTED].");
        assert_eq!(redact_key_prefixes("see HF_HOME and SK-12", &[]), "see HF_HOME and SK-12");
    }

    #[test]
    fn secret_never_prints() {
        let s = Secret::new("sk-very-secret");
        assert_eq!(format!("{s:?}"), REDACTED);
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"[REDACTED]\"");
        assert_eq!(s.expose(), "sk-very-secret");
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_chars("한국어 텍스트", 3), "한국어…");
        assert_eq!(truncate_chars("abc", 3), "abc");
    }

    #[test]
    fn credential_values_by_key_name() {
        let text = "[sim]\napi_key = [\"abcdef123\", \"ghijkl456\"]\ntick_s = 0.5\nclient_secret: 'zzzzzz99'";
        let v = credential_values(text);
        for s in ["abcdef123", "ghijkl456", "zzzzzz99"] {
            assert!(v.iter().any(|x| x == s), "{v:?}");
        }
        assert!(!v.iter().any(|x| x.contains("0.5")), "{v:?}");
    }

    /// RFC 4648 base32 with padding, as servers write it.
    fn base32(bytes: &[u8]) -> String {
        let mut out = String::new();
        for chunk in bytes.chunks(5) {
            let mut buf = [0u8; 5];
            buf[..chunk.len()].copy_from_slice(chunk);
            let v = buf.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
            let chars = (chunk.len() * 8).div_ceil(5);
            for k in 0..8 {
                out.push(if k < chars { char::from(BASE32[((v >> (35 - 5 * k)) & 31) as usize]) } else { '=' });
            }
        }
        out
    }

    #[test]
    fn altered_forms_of_a_key_are_redacted() {
        use base64::Engine as _;
        let key = "sk-navkit-test-SECRET123";
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let reversed: String = key.chars().rev().collect();
        let hex: String = key.bytes().map(|b| format!("{b:02x}")).collect();
        for leak in [
            "SECRET123".to_string(),
            reversed.clone(),
            b64(key),
            b64(&reversed),
            b64("test-SECRET123"),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key),
            hex.clone(),
            hex.to_uppercase(),
            format!("x{}", &b64(&format!("..{key}"))[3..]),
            // percent-encoded, as UTF-16
            key.bytes().map(|b| format!("%{b:02X}")).collect(),
            "SECRET123".bytes().map(|b| format!("%{b:02x}")).collect(),
            key.encode_utf16().map(|u| format!("{u:04x}")).collect(),
            // rot13, forwards and reversed
            caesar(key, 13),
            caesar(&reversed, 13),
            caesar(key, 1),
            rotate_printable(key, 47),
            key.to_uppercase(),
            base32(key.as_bytes()),
            key.bytes().map(|b| b.to_string()).collect::<Vec<_>>().join(" and "),
            key.bytes().map(|b| format!("{b:08b}")).collect::<Vec<_>>().join(" "),
            key.bytes().map(|b| format!("{b:08b}")).collect(),
            key.bytes().map(|b| format!("0b{b:08b}")).collect::<Vec<_>>().join(", "),
            key.bytes().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join("|"),
            key.bytes().map(|b| format!("U+{b:04X}")).collect(),
            key.bytes().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(","),
            key.bytes().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join("_"),
            format!("0x{}", key.bytes().map(|b| format!("{b:02x}")).collect::<String>()),
            key.bytes().map(|b| format!("={b:02X}")).collect(),
            key.bytes().map(|b| format!("U+{b:04X}")).collect::<Vec<_>>().join(" "),
            key.bytes().map(|b| format!("\\x{{{b:x}}}")).collect(),
            key.bytes().map(|b| format!("\\U{:08x}", u32::from(b))).collect(),
            atbash(key),
            key.bytes().map(|b| format!("{b:03o}")).collect::<Vec<_>>().join(" "),
            // character codes: decimal, HTML entities (decimal and hex)
            key.bytes().map(|b| b.to_string()).collect::<Vec<_>>().join(", "),
            key.bytes().map(|b| b.to_string()).collect::<Vec<_>>().join(","),
            key.bytes().map(|b| format!("&#{b};")).collect(),
            key.bytes().map(|b| format!("&#x{b:x};")).collect(),
            // hex and octal codes as programs write them, hex dumps
            key.bytes().map(|b| format!("0x{b:02x}")).collect::<Vec<_>>().join(", "),
            key.bytes().map(|b| format!("\\x{b:02x}")).collect(),
            key.bytes().map(|b| format!("\\u{:04x}", u32::from(b))).collect(),
            key.bytes().map(|b| format!("\\{b:03o}")).collect(),
            key.bytes().map(|b| format!("\\u{{{b:x}}}")).collect(),
            key.bytes().map(|b| format!("0o{b:o}")).collect::<Vec<_>>().join(" "),
            key.bytes().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":"),
            key.bytes().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(" "),
            // CSS escapes, leet
            key.bytes().map(|b| format!("\\{b:x} ")).collect::<String>().trim_end().to_string(),
            "5k-n4vk17-7e57-5ECRE7123".to_string(),
            "5K-N@VK!7-+3$+-$3CR3+I23".to_string(),
        ] {
            let body = format!("invalid key ending {leak}, try again");
            let clean = redact(&body, &[key]);
            assert_eq!(clean, "invalid key ending [REDACTED], try again", "{leak}");
        }
        // base85 as Python's base64.a85encode (plain and Adobe), b85encode and ZeroMQ's Z85
        // write it, and uuencode (binascii.b2a_uu): their alphabets hold punctuation, so the
        // redacted run may take a comma or bracket beside it along
        for leak in [
            "F)*@F@<QF#F=hTGF*'!4770sA<&$-a",
            "<~F)*@F@<QF#F=hTGF*'!4770sA<&$-a~>",
            "b89VbVRmb2bS-pcb960JMMF|WR53C$",
            "B89vBvrMB2Bs?PCB960jmmf%wr53c:",
            "8<VLM;F%V:VET+71E<W0M4T5#4D54,3(S",
        ] {
            let clean = redact(&format!("invalid key ending {leak}, try again"), &[key]);
            assert!(clean.contains(REDACTED) && !clean.contains(&leak[3..leak.len() - 3]), "{leak}: {clean}");
            assert!(clean.starts_with("invalid key ending ") && clean.ends_with(" try again"), "{clean}");
        }
        // written backwards after encoding, wrapped at 10 columns with CR LF, CSS escapes ended
        // by tabs or newlines, 0b codes without separators, and uuencoded 8-character pieces
        let wrap10 =
            |s: &str| s.as_bytes().chunks(10).map(|c| std::str::from_utf8(c).unwrap()).collect::<Vec<_>>().join("\r\n");
        for leak in [
            "a-$&<As0774!'*FGThT=F#FQ<@F@*)F".to_string(),
            base32(key.as_bytes()).chars().rev().collect(),
            b64(key).chars().rev().collect(),
            wrap10("<~F)*@F@<QF#F=hTGF*'!4770sA<&$-a~>"),
            wrap10(&b64(key)),
            key.bytes().map(|b| format!("\\{b:x}\t")).collect(),
            key.bytes().map(|b| format!("\\{b:x}\n")).collect(),
            key.bytes().map(|b| format!("\\{b:x}\r\n")).collect(),
            key.bytes().map(|b| format!("0b{b:08b}")).collect(),
            "(=\"U314-2150 ".to_string(),
            "(+5-%0U)%5#$ ".to_string(),
        ] {
            let clean = redact(&format!("invalid key ending {leak}; try again"), &[key]);
            let left = clean.replace("invalid key ending ", "").replace(" try again", "");
            assert!(left.trim_matches([';', ' ', '<', '~', '>']) == REDACTED, "{leak:?}: {clean:?}");
        }
        // every other character: the even ones, then the odd ones
        let halves = format!(
            "{} {}",
            key.chars().step_by(2).collect::<String>(),
            key.chars().skip(1).step_by(2).collect::<String>()
        );
        assert_eq!(redact(&format!("key {halves}!"), &[key]), "key [REDACTED] [REDACTED]!");
        let thirds: String = key.chars().skip(1).step_by(3).collect();
        assert_eq!(redact(&format!("key {thirds}!"), &[key]), "key [REDACTED]!");
        // spelled out with separators or cut into short pieces: from its first
        // letter to its last
        let chars: Vec<String> = key.chars().map(String::from).collect();
        for leak in [
            chars.join(" "),
            serde_json::to_string(&chars).unwrap(),
            key.as_bytes().chunks(7).map(|c| std::str::from_utf8(c).unwrap()).collect::<Vec<_>>().join(" "),
            chars.join("\u{200b}"),
            key.chars().map(|c| char::from_u32(u32::from(c) + 0xFEE0).unwrap()).collect(),
        ] {
            let clean = redact(&format!("invalid key ending {leak}, try again"), &[key]);
            let letters: String = clean.chars().filter(char::is_ascii_alphanumeric).collect();
            assert!(clean.contains(REDACTED) && !letters.contains("SECRET"), "{leak}: {clean}");
            assert!(clean.starts_with("invalid key ending ") && clean.ends_with(", try again"), "{clean}");
        }
        // ordinary text stays, numbers too
        let text = "The kitchen is north of the hallway; SGVsbG8gd29ybGQh is base64 of something else.";
        assert_eq!(redact(text, &[key]), text);
        let numbers = "poses 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and &#65;&#66;&#67;&#68;&#69;&#70;&#71;&#72; at 20251001";
        assert_eq!(redact(numbers, &[key]), numbers);
        // a short secret is only redacted whole
        assert_eq!(redact("hunter2-lng and hunter2-l", &["hunter2-lng"]), "[REDACTED] and hunter2-l");
    }

    proptest! {
        /// Any piece of 8 or more characters of a key, as it is, reversed,
        /// base64-, hex- or percent-encoded, in rot13, as HTML character
        /// codes or spelled out, inside any text, never survives.
        #[test]
        fn altered_pieces_never_survive(
            key in "[A-Za-z0-9_-]{16,48}",
            prefix in "[ -~]{0,40}",
            suffix in "[ -~]{0,40}",
            from in 0usize..40,
            len in 8usize..48,
            form in 0u8..13,
            shift in 1u8..26,
            sep in "[ ,\"'\\-]{1,3}",
        ) {
            use base64::Engine as _;
            let from = from.min(key.len() - 8);
            let piece = &key[from..(from + len).min(key.len())];
            let rev: String = piece.chars().rev().collect();
            let leak = match form {
                0 => piece.to_string(),
                1 => rev.clone(),
                2 => base64::engine::general_purpose::STANDARD.encode(piece),
                3 => piece.bytes().map(|b| format!("{b:02x}")).collect(),
                4 => piece.bytes().map(|b| format!("%{b:02X}")).collect(),
                5 => caesar(piece, 13),
                6 => piece.bytes().map(|b| format!("&#{b};")).collect(),
                8 => base32(piece.as_bytes()),
                9 => caesar(piece, shift),
                10 => rotate_printable(piece, 47),
                11 => piece.bytes().map(|b| b.to_string()).collect::<Vec<_>>().join(" and "),
                12 => piece.bytes().map(|b| format!("{b:03o}")).collect::<Vec<_>>().join(" "),
                _ => piece.chars().map(String::from).collect::<Vec<_>>().join(&sep),
            };
            let clean = redact(&format!("{prefix} {leak} {suffix}"), &[&key]);
            let letters: String = piece.chars().filter(char::is_ascii_alphanumeric).collect();
            if form != 7 {
                prop_assert!(!clean.contains(&leak), "{clean}");
                prop_assert!(!clean.contains(piece) && !clean.contains(&rev), "{clean}");
            } else if letters.len() >= 8 {
                // spelled out: none of its 8 letters and digits in a row survive, whatever is between them
                let left: String = clean.chars().filter(char::is_ascii_alphanumeric).collect();
                prop_assert!(!left.contains(&letters[..8]) || prefix.contains(&letters[..8]) || suffix.contains(&letters[..8]), "{clean}");
            }
        }

        #[test]
        fn a_secret_never_survives(prefix in ".{0,40}", suffix in ".{0,40}", secret in "[A-Za-z0-9_-]{6,40}") {
            let text = format!("{prefix}{secret}{suffix}");
            let clean = redact(&text, &[&secret]);
            prop_assert!(!clean.contains(&secret), "{clean}");
        }
    }
}
