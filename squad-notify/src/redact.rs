//! Credentials written into URLs never reach an output, an error or a log.

use std::borrow::Cow;

/// Characters that end a URL inside running text.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | ')' | ']' | '}' | ',')
}

/// Replaces the credentials of every URL in `text`: the user information before `@`
/// (`https://user:password@host` becomes `https://***@host`) and the query string
/// (`?token=...` becomes `?***`). Everything else is kept, so messages still name the host and
/// path they are about.
///
/// Every [`crate::Error`] message goes through it; hosts run text they print from the
/// environment (a URL a user configured) through it too.
///
/// ```
/// use squad_notify::redact_urls;
///
/// assert_eq!(
///     redact_urls("cannot reach http://user:pw@ghe.example.com/api/v3?access_token=abc now"),
///     "cannot reach http://***@ghe.example.com/api/v3?*** now"
/// );
/// assert_eq!(redact_urls("no url here"), "no url here");
/// ```
pub fn redact_urls(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (before, after) = rest.split_at(i + 3);
        out.push_str(before);
        let end = after.find(ends_url).unwrap_or(after.len());
        let (url, tail) = after.split_at(end);
        let authority_end = url.find(['/', '?', '#']).unwrap_or(url.len());
        let (authority, path) = url.split_at(authority_end);
        match authority.rfind('@') {
            Some(at) => {
                out.push_str("***");
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        match path.find('?') {
            Some(q) => {
                out.push_str(&path[..q]);
                let query_end = path[q..].find('#').map_or(path.len(), |h| q + h);
                out.push_str(if query_end > q + 1 { "?***" } else { "?" });
                out.push_str(&path[query_end..]);
            }
            None => out.push_str(path),
        }
        rest = tail;
    }
    out.push_str(rest);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_information_and_queries_are_hidden() {
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
        ];
        for (input, want) in cases {
            assert_eq!(redact_urls(input), want, "{input}");
        }
    }
}
