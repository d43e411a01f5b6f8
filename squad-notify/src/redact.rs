//! Credentials written into URLs never reach an output, an error or a log.

use std::borrow::Cow;

/// Replaces every credential in `text` by `***`: the user information of every URL
/// (`https://user:password@host` becomes `https://***@host`), its query string (`?token=...`
/// becomes `?***`), token-looking path segments, secret `name=value` pairs, prefixed tokens
/// (`ghp_…`) and the values of the secret environment variables (`GITHUB_TOKEN`, `GH_TOKEN`,
/// `SQUAD_WEBHOOK_SECRET`, `SQUAD_WEBHOOK_URL`). Host names and ordinary paths are kept, so
/// messages still name what they are about. It is [`squad_model::redact::redact`], the
/// workspace's one redactor.
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
    squad_model::redact::redact(text)
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
