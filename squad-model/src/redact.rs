//! Redaction of credentials in text that came from outside: git's messages, HTTP errors, the
//! operating system's words.
//!
//! This is the one redactor of the workspace. Every crate that prints, logs or wraps into an
//! error a line it did not write itself runs the line through [`redact`] (or a [`Redactor`] it
//! keeps). It lives here, in the crate every other crate already depends on, because it is
//! plain text processing: no I/O beyond reading a few environment variables, no dependency.
//!
//! What is replaced by [`REDACTED`] (`***`):
//!
//! - the exact values of the secret environment variables ([`SECRET_ENV_VARS`]: `GITHUB_TOKEN`,
//!   `GH_TOKEN`, `SQUAD_WEBHOOK_SECRET`, the whole `SQUAD_WEBHOOK_URL` and its path, query and
//!   user information) and the user information and query of `GITHUB_API_URL`, wherever they
//!   appear, when [`Redactor::from_env`] built the redactor (as [`redact`] does);
//! - in every URL (`scheme://…`): the user information (`https://***@host/…`), the whole query
//!   string (`?***`), and path segments that look like tokens (see below);
//! - anywhere: the value of a `name=value` pair whose name says it is secret (`token`, `secret`,
//!   `password`, `passwd`, `pwd`, `credential`, `signature`, or a `key`, `apikey`, `sig`, `auth`
//!   or `session` component: `access_token=…`, `X-Amz-Signature=…`, `api_key=…`), and what
//!   follows `Authorization:` or `Bearer ` on the line;
//! - anywhere: tokens with a known prefix (`ghp_`, `gho_`, `ghs_`, `ghu_`, `ghr_`,
//!   `github_pat_`, `glpat-`, `xoxb-`, `xoxp-`, `xoxa-`, `xoxs-`) followed by at least eight
//!   token characters.
//!
//! A URL path segment looks like a token when it has a known prefix, when it is 32 or more hex
//! digits, or when it is at least 20 characters long, holds at least 16 letters and digits, both
//! letters and digits, and changes between lowercase, uppercase and digit at least once every
//! five of them (random strings do; names such as `my-repository-2024` do not).
//!
//! Redaction is idempotent (redacting twice gives the text redacting once gave) and never
//! panics, whatever the text.

use std::borrow::Cow;
use std::fmt;

/// What replaces a secret.
pub const REDACTED: &str = "***";

/// The environment variables whose exact values [`Redactor::from_env`] redacts.
pub const SECRET_ENV_VARS: [&str; 4] = [
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "SQUAD_WEBHOOK_SECRET",
    "SQUAD_WEBHOOK_URL",
];

/// Prefixes of well-known token formats.
const TOKEN_PREFIXES: [&str; 11] = [
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxs-",
];

/// The fewest token characters after a known prefix for the run to count as a token.
const MIN_AFTER_PREFIX: usize = 8;

/// Secrets shorter than this are not looked for: replacing every `ab` would garble the text
/// and hide nothing.
const MIN_SECRET_LEN: usize = 4;

/// Redacts `text` with a [`Redactor::from_env`]: the secret environment variables' values and
/// everything credential-shaped.
///
/// ```
/// use squad_model::redact::redact;
///
/// assert_eq!(
///     redact("fatal: unable to access 'https://me:pw@example.invalid/r.git/?access_token=abc'"),
///     "fatal: unable to access 'https://***@example.invalid/r.git/?***'"
/// );
/// assert_eq!(
///     redact("push to https://example.invalid/ghp_0123456789abcdefABCDEF/r.git failed"),
///     "push to https://example.invalid/***/r.git failed"
/// );
/// assert_eq!(redact("no secret here"), "no secret here");
/// ```
pub fn redact(text: &str) -> Cow<'_, str> {
    Redactor::from_env().redact(text)
}

/// A redactor: the structural rules of this module, plus exact secret values.
///
/// `Debug` shows how many secrets it holds, never their values.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Longest first, so that a secret containing another is replaced whole.
    secrets: Vec<String>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.secrets.len())
            .finish()
    }
}

impl Redactor {
    /// A redactor with the structural rules only (no exact values).
    pub fn new() -> Self {
        Self::default()
    }

    /// A redactor that also replaces the values of [`SECRET_ENV_VARS`] (and the parts of
    /// `SQUAD_WEBHOOK_URL` and `GITHUB_API_URL` that may carry credentials), as set now.
    pub fn from_env() -> Self {
        let mut redactor = Self::new();
        for var in SECRET_ENV_VARS.iter().copied().chain(["GITHUB_API_URL"]) {
            let Some(value) = std::env::var_os(var) else {
                continue;
            };
            let value = value.to_string_lossy();
            let value = value.trim();
            match var {
                "SQUAD_WEBHOOK_URL" => {
                    redactor = redactor.with_secret(value);
                    for part in url_parts(value, true) {
                        redactor = redactor.with_secret(part);
                    }
                }
                "GITHUB_API_URL" => {
                    for part in url_parts(value, false) {
                        redactor = redactor.with_secret(part);
                    }
                }
                _ => redactor = redactor.with_secret(value),
            }
        }
        redactor
    }

    /// Adds an exact value to replace wherever it appears. Values shorter than four bytes are
    /// ignored.
    ///
    /// ```
    /// use squad_model::redact::Redactor;
    ///
    /// let r = Redactor::new().with_secret("hunter22");
    /// assert_eq!(r.redact("password is hunter22!"), "password is ***!");
    /// ```
    #[must_use]
    pub fn with_secret(mut self, secret: impl Into<String>) -> Self {
        let secret = secret.into();
        if secret.len() >= MIN_SECRET_LEN && !self.secrets.contains(&secret) {
            self.secrets.push(secret);
            self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
        self
    }

    /// The text with every secret this redactor knows of, and everything credential-shaped,
    /// replaced by [`REDACTED`]. Borrows when nothing changes.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        // A rule's `***` can complete a secret of another rule (only a secret holding `*` can
        // be completed so): run them until nothing changes, which a few rounds reach.
        for _ in 0..8 {
            let next = self.redact_once(&out);
            if next == out.as_ref() {
                break;
            }
            out = Cow::Owned(next);
        }
        out
    }

    /// One round of every rule.
    fn redact_once(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        let urls = redact_urls(&out);
        let pairs = redact_pairs(&urls);
        redact_prefixed(&pairs).into_owned()
    }
}

/// The parts of `url` that may be secret: user information, query, and with `path_too` the
/// path (a webhook's path is its secret, as Slack's and Discord's are).
fn url_parts(url: &str, path_too: bool) -> Vec<String> {
    let mut out = Vec::new();
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let (authority, path) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
    if let Some((userinfo, _)) = authority.rsplit_once('@') {
        out.push(userinfo.to_owned());
    }
    let (path, query) = match path.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path, None),
    };
    if let Some(q) = query {
        out.push(q.split('#').next().unwrap_or(q).to_owned());
    }
    if path_too && path.trim_matches('/').len() >= MIN_SECRET_LEN {
        out.push(path.to_owned());
    }
    out
}

/// Characters that end a URL inside running text.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | ')' | ']' | '}' | ',')
}

/// User information, queries and token-looking path segments of every URL.
fn redact_urls(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (before, after) = rest.split_at(i + 3);
        out.push_str(before);
        let mut end = after.find(ends_url).unwrap_or(after.len());
        // A URL ends where the next one's scheme starts (`a://bhttps://u:p@h` is two).
        if let Some(j) = after[..end].find("://") {
            end = after[..j]
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-')))
                .map_or(0, |k| k + 1);
        }
        let (url, tail) = after.split_at(end);
        let authority_end = url.find(['/', '?', '#']).unwrap_or(url.len());
        let (authority, rest_of_url) = url.split_at(authority_end);
        match authority.rfind('@') {
            Some(at) => {
                out.push_str(REDACTED);
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        let path_end = rest_of_url.find(['?', '#']).unwrap_or(rest_of_url.len());
        let (path, rest_of_url) = rest_of_url.split_at(path_end);
        for (n, segment) in path.split('/').enumerate() {
            if n > 0 {
                out.push('/');
            }
            out.push_str(if looks_like_token(segment) {
                REDACTED
            } else {
                segment
            });
        }
        match rest_of_url.strip_prefix('?') {
            Some(query_and_fragment) => {
                let query_end = query_and_fragment
                    .find('#')
                    .unwrap_or(query_and_fragment.len());
                out.push('?');
                if query_end > 0 {
                    out.push_str(REDACTED);
                }
                out.push_str(&query_and_fragment[query_end..]);
            }
            None => out.push_str(rest_of_url),
        }
        rest = tail;
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Whether a URL path segment looks like a token (see the module docs).
fn looks_like_token(segment: &str) -> bool {
    if TOKEN_PREFIXES.iter().any(|p| {
        segment
            .strip_prefix(p)
            .is_some_and(|t| t.len() >= MIN_AFTER_PREFIX)
    }) {
        return true;
    }
    if segment.len() >= 32 && segment.bytes().all(|b| b.is_ascii_hexdigit()) {
        return true;
    }
    if segment.len() < 20
        || !segment.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'+' | b'=' | b'%')
        })
    {
        return false;
    }
    let alnum: Vec<u8> = segment.bytes().filter(u8::is_ascii_alphanumeric).collect();
    let has_digit = alnum.iter().any(u8::is_ascii_digit);
    let has_letter = alnum.iter().any(u8::is_ascii_alphabetic);
    let class = |b: &u8| {
        if b.is_ascii_digit() {
            0
        } else if b.is_ascii_lowercase() {
            1
        } else {
            2
        }
    };
    let changes = alnum
        .windows(2)
        .filter(|w| class(&w[0]) != class(&w[1]))
        .count();
    alnum.len() >= 16 && has_digit && has_letter && changes * 5 >= alnum.len()
}

/// Whether the name of a `name=value` pair says its value is secret.
fn secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    ["token", "secret", "passw", "pwd", "credential", "signature"]
        .iter()
        .any(|w| lower.contains(w))
        || lower
            .split(['_', '-', '.'])
            .any(|part| matches!(part, "key" | "apikey" | "sig" | "auth" | "session"))
}

/// Characters of a pair's name.
fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// Characters that end a pair's value.
fn ends_value(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '&' | ';' | ',' | '"' | '\'' | '`' | ')' | ']' | '}' | '<' | '>' | '#'
        )
}

/// Values of secret-named `name=value` pairs, and what follows `Authorization:` or `Bearer `.
fn redact_pairs(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0;
    let mut search = 0;
    while let Some(rel) = text[search..].find('=') {
        let eq = search + rel;
        let name_start = text[..eq]
            .char_indices()
            .rev()
            .take_while(|&(_, c)| name_char(c))
            .last()
            .map_or(eq, |(i, _)| i);
        let value_start = eq + 1;
        let value_end = text[value_start..]
            .find(ends_value)
            .map_or(text.len(), |e| value_start + e);
        let secret = name_start < eq
            && value_end > value_start
            && &text[value_start..value_end] != REDACTED
            && secret_name(&text[name_start..eq]);
        if secret {
            out.push_str(&text[copied..value_start]);
            out.push_str(REDACTED);
            copied = value_end;
            search = value_end;
        } else {
            // A pair may hide inside this value (`x=token=abc`).
            search = value_start;
        }
    }
    let text = if copied == 0 {
        Cow::Borrowed(text)
    } else {
        out.push_str(&text[copied..]);
        Cow::Owned(out)
    };
    redact_after_markers(text)
}

/// What follows `Authorization:` (to the end of the line) or `Bearer ` (one word).
fn redact_after_markers(text: Cow<'_, str>) -> Cow<'_, str> {
    let lower = text.to_ascii_lowercase();
    if !lower.contains("authorization:") && !text.contains("Bearer ") {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        let lower = line.to_ascii_lowercase();
        if let Some(i) = lower.find("authorization:") {
            let start = i + "authorization:".len();
            let value = line[start..].trim();
            out.push_str(&line[..start]);
            if !value.is_empty() {
                out.push(' ');
                out.push_str(REDACTED);
            }
            if line.ends_with('\r') {
                out.push('\r');
            }
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("Bearer ") {
            let start = i + "Bearer ".len();
            out.push_str(&rest[..start]);
            let word_end = rest[start..]
                .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | ';'))
                .map_or(rest.len(), |e| start + e);
            if word_end > start {
                out.push_str(REDACTED);
            }
            rest = &rest[word_end..];
        }
        out.push_str(rest);
    }
    Cow::Owned(out)
}

/// Tokens with a known prefix, anywhere.
fn redact_prefixed(text: &str) -> Cow<'_, str> {
    let token_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-');
    let mut out = String::new();
    let mut copied = 0;
    let mut search = 0;
    while search < text.len() {
        let next = TOKEN_PREFIXES
            .iter()
            .filter_map(|p| text[search..].find(p).map(|i| (search + i, p.len())))
            .min();
        let Some((start, prefix_len)) = next else {
            break;
        };
        let after = start + prefix_len;
        let end = text[after..]
            .find(|c: char| !token_char(c))
            .map_or(text.len(), |e| after + e);
        if end - after >= MIN_AFTER_PREFIX {
            out.push_str(&text[copied..start]);
            out.push_str(REDACTED);
            copied = end;
            search = end;
        } else {
            search = start + 1;
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_user_information_queries_and_token_segments() {
        let r = Redactor::new();
        let cases = [
            ("http://user:pw@host/x", "http://***@host/x"),
            ("https://token@host", "https://***@host"),
            (
                "\"https://a:b@h:8080/p?q=1#f\"",
                "\"https://***@h:8080/p?***#f\"",
            ),
            (
                "ssh://git@github.com/o/r.git",
                "ssh://***@github.com/o/r.git",
            ),
            ("https://h/p?", "https://h/p?"),
            (
                "a http://h/x b https://u:p@h2/y",
                "a http://h/x b https://***@h2/y",
            ),
            ("mailto:x@y", "mailto:x@y"),
            ("://@", "://***@"),
            ("x://", "x://"),
            (
                "https://h/ghp_abcdefgh12345678/r.git",
                "https://h/***/r.git",
            ),
            (
                "https://h/Zk3mQ9xT2pL8vR4nB7cY/r.git",
                "https://h/***/r.git",
            ),
            (
                "https://h/0123456789abcdef0123456789abcdef/r",
                "https://h/***/r",
            ),
            // Names stay.
            (
                "https://h/my-long-repository-name-2024/squad-notes.git",
                "https://h/my-long-repository-name-2024/squad-notes.git",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(r.redact(input), want, "{input}");
        }
    }

    #[test]
    fn secret_pairs_markers_and_prefixed_tokens_are_hidden_anywhere() {
        let r = Redactor::new();
        let cases = [
            ("access_token=abc&page=2", "access_token=***&page=2"),
            ("X-Amz-Signature=deadbeef ok", "X-Amz-Signature=*** ok"),
            ("api_key=k1 password=\"p\"", "api_key=*** password=\"p\""),
            ("author=alice page=3", "author=alice page=3"),
            ("Authorization: token abc\nnext", "Authorization: ***\nnext"),
            ("sent Bearer abc.def, done", "sent Bearer ***, done"),
            ("key ghp_0123456789abcdef end", "key *** end"),
            ("mygithub_pat_11ABCDEFG0123456789_x.", "my***."),
            ("ghp_short", "ghp_short"),
            (
                "oid 0123456789abcdef0123456789abcdef01234567",
                "oid 0123456789abcdef0123456789abcdef01234567",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(r.redact(input), want, "{input}");
        }
    }

    #[test]
    fn exact_secrets_are_replaced_longest_first_and_debug_hides_them() {
        let r = Redactor::new()
            .with_secret("s3cr3t-value")
            .with_secret("s3cr3t")
            .with_secret("ab");
        assert_eq!(r.redact("a s3cr3t-value b s3cr3t c ab"), "a *** b *** c ab");
        assert!(!format!("{r:?}").contains("s3cr3t"));
        // A secret that reappears once another is replaced.
        let r = Redactor::new().with_secret("x***y").with_secret("wxyz");
        assert_eq!(r.redact("xwxyzy"), "***");
    }

    #[test]
    fn webhook_url_parts() {
        assert_eq!(
            url_parts("https://u:p@hooks.example/services/T0/B0/XYZ?k=v#f", true),
            ["u:p", "k=v", "/services/T0/B0/XYZ"]
        );
        assert_eq!(
            url_parts("http://127.0.0.1:9/api", false),
            Vec::<String>::new()
        );
    }
}
