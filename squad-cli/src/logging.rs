//! The one tracing subscriber of the process: off by default; `-v` / `-vv` or `RUST_LOG` turn
//! it on, writing to stderr (stdout stays the command's output). The libraries only emit spans
//! and events; they never install a subscriber, and no secret ever reaches one.

use std::io::{self, Write};

use tracing_subscriber::EnvFilter;

/// The environment variables that hold secrets (or URLs that may carry them).
const SECRET_VARS: [&str; 5] = [
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "SQUAD_WEBHOOK_SECRET",
    "SQUAD_WEBHOOK_URL",
    "GITHUB_API_URL",
];

/// The crates whose events `-v` shows.
const CRATES: [&str; 7] = [
    "squad",
    "squad_fs",
    "squad_notes",
    "squad_notify",
    "squad_memory",
    "squad_routing",
    "squad_model",
];

/// Installs the subscriber when asked for: `RUST_LOG` when set (any directive), else `info`
/// for our crates at `-v` and `debug` at `-vv` (`trace` beyond).
pub(crate) fn init(verbose: u8) {
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => EnvFilter::new(spec),
        _ if verbose == 0 => return,
        _ => {
            let level = match verbose {
                1 => "info",
                2 => "debug",
                _ => "trace",
            };
            EnvFilter::new(
                CRATES
                    .iter()
                    .map(|c| format!("{c}={level}"))
                    .collect::<Vec<_>>()
                    .join(","),
            )
        }
    };
    let redactor = Redactor::from_env();
    // A second subscriber cannot be installed; there is none before this one.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(move || RedactingStderr {
            redactor: redactor.clone(),
            line: Vec::new(),
        })
        .with_ansi(false)
        .with_target(true)
        .try_init();
}

/// What must never reach a log line: the secret values of the environment, and the parts of the
/// configured URLs that may carry credentials (user info, webhook paths, query strings).
/// Dependencies log too (HTTP clients log the addresses they connect to), so redaction happens
/// on the way out, for every line whatever its source.
#[derive(Debug, Clone, Default)]
struct Redactor {
    secrets: std::sync::Arc<Vec<String>>,
}

impl Redactor {
    fn from_env() -> Self {
        let mut secrets = Vec::new();
        for var in SECRET_VARS {
            let Ok(value) = std::env::var(var) else {
                continue;
            };
            let value = value.trim();
            if value.is_empty() {
                continue;
            }
            if var.ends_with("_URL") {
                secrets.extend(url_secrets(value, var == "SQUAD_WEBHOOK_URL"));
            } else {
                secrets.push(value.to_owned());
            }
        }
        // Longest first, so that a secret containing another is replaced whole.
        secrets.retain(|s| s.len() >= 4);
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Self {
            secrets: std::sync::Arc::new(secrets),
        }
    }

    fn redact(&self, text: &str) -> String {
        let mut out = squad_notify::redact_urls(text).into_owned();
        for secret in self.secrets.iter() {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), "***");
            }
        }
        out
    }
}

/// The parts of a URL that may be secret: its user info, its query, and for a webhook (whose
/// path is the secret, as Slack's and Discord's are) the whole URL and its path.
fn url_secrets(url: &str, whole_is_secret: bool) -> Vec<String> {
    let mut out = Vec::new();
    if whole_is_secret {
        out.push(url.to_owned());
    }
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if let Some((userinfo, _)) = authority.rsplit_once('@') {
        out.push(userinfo.to_owned());
    }
    if let Some((_, query)) = path.split_once('?') {
        out.push(query.to_owned());
    }
    if whole_is_secret && path.len() > 1 {
        out.push(path.split('?').next().unwrap_or(path).to_owned());
    }
    out
}

/// Stderr, one log line at a time, redacted.
struct RedactingStderr {
    redactor: Redactor,
    line: Vec<u8>,
}

impl Write for RedactingStderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.line.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.line.is_empty() {
            let text = String::from_utf8_lossy(&self.line);
            let clean = self.redactor.redact(&text);
            self.line.clear();
            // A log line that cannot be written is dropped, never a panic.
            let _ = io::stderr().lock().write_all(clean.as_bytes());
        }
        Ok(())
    }
}

impl Drop for RedactingStderr {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_and_url_credentials_are_redacted() {
        let r = Redactor {
            secrets: std::sync::Arc::new(
                [
                    url_secrets("https://hooks.example/services/T0/B0/XYZ?k=v", true),
                    url_secrets("http://user:pw1234@127.0.0.1:9/api", false),
                    vec!["ghp_token1234".to_owned()],
                ]
                .concat(),
            ),
        };
        let line = r.redact(
            "checkout (\"http\", user:pw1234@127.0.0.1:9) token ghp_token1234 post /services/T0/B0/XYZ",
        );
        assert!(!line.contains("pw1234"), "{line}");
        assert!(!line.contains("ghp_token1234"), "{line}");
        assert!(!line.contains("/services/T0/B0/XYZ"), "{line}");
    }
}
