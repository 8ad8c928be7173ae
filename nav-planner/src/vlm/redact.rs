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
/// (`ya29.`), and a few other providers' key prefixes.
const KEY_PREFIXES: &[&str] = &["sk-", "AIza", "ya29.", "xai-", "gsk_", "pk-", "hf_"];

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
    let mut out = text.to_string();
    for secret in secrets {
        let secret = secret.trim();
        // Very short strings would mangle ordinary words; real keys are long.
        if secret.len() >= 6 {
            out = out.replace(secret, REDACTED);
        }
    }
    let mut result = String::with_capacity(out.len());
    let mut rest = out.as_str();
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
        let prefixed = KEY_PREFIXES.iter().any(|p| value.starts_with(p) && value.len() > p.len() + 2);
        let assigned = !param.is_empty()
            && !value.is_empty()
            && CREDENTIAL_PARAMS.iter().any(|k| param[..param.len() - 1].eq_ignore_ascii_case(k));
        if introduced || prefixed || assigned || is_long_token(value) {
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
        assert_eq!(redact("got Zq8uRt5LmN3bV7cX1zA9sD4fG6hJ2kL0 here", &[]), "got [REDACTED] here");
        assert_eq!(
            redact("a short Abc123 and a lowercase_only_identifier_of_length_40", &[]),
            "a short Abc123 and a lowercase_only_identifier_of_length_40"
        );
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

    proptest! {
        #[test]
        fn a_secret_never_survives(prefix in ".{0,40}", suffix in ".{0,40}", secret in "[A-Za-z0-9_-]{6,40}") {
            let text = format!("{prefix}{secret}{suffix}");
            let clean = redact(&text, &[&secret]);
            prop_assert!(!clean.contains(&secret), "{clean}");
        }
    }
}
