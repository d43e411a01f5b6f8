//! The one error type of `squad-notify` (the GitHub layer included).

use std::fmt;
use std::time::Duration;

use crate::redact::redact_urls;

/// Result alias used throughout `squad-notify`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What the caller should do about an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input is malformed or breaks a rule (bad trigger, bad settings, a secret in an
    /// argument, a malformed GitHub setting). Nothing was changed; retrying does not help.
    InvalidInput,
    /// There is no such thing (no pending gate, unknown gate id; on GitHub: the repository,
    /// issue, comment or user does not exist or the token cannot see it).
    NotFound,
    /// The operation conflicts with the current state: a gate is already pending, the run was
    /// stopped, or the gate was already decided. Nothing was changed.
    Conflict,
    /// Not allowed: the signal's author may not decide this gate (unknown user, bot, the squad
    /// itself), or the remote service refused our credentials (GitHub answered 401).
    Unauthorized,
    /// The remote service refused the request (GitHub answered 403 without rate-limit signs):
    /// the token lacks a scope, or the repository forbids the operation.
    Forbidden,
    /// The gate expired; a decision after expiry does not count.
    Expired,
    /// A channel cannot work here (missing environment such as the token, not built in).
    /// Degrade to in-chat.
    Unavailable,
    /// A remote endpoint failed (timeout, connection refused, HTTP 5xx) after the bounded
    /// retries. Try again later.
    Delivery,
    /// The remote service asked us to slow down (GitHub's primary or secondary rate limit): wait
    /// [`Error::retry_after`] and try again.
    RateLimited,
    /// The remote service answered something this crate cannot read (unexpected JSON, a bad
    /// header, endless pages).
    Protocol,
    /// A GitHub issue is not ours to read a gate from: its body was not written by the squad's
    /// own account, or holds no single well-formed gate block.
    Untrusted,
    /// The approval issue now shows another gate than the one waited on (a later gate of the run
    /// superseded it).
    Superseded,
    /// Stored state could not be read as expected (torn JSON, schema violation, a log that does
    /// not verify, a symbolic link where a state file should be).
    Corrupt,
    /// `notifications.md` was tampered with and no human has acknowledged it yet
    /// (`squad approval acknowledge-tamper`): new gates and decisions are refused until then.
    Tampered,
    /// The file system failed.
    Io,
}

impl ErrorKind {
    /// A short lowercase name (`invalid input`, `not found`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorKind::InvalidInput => "invalid input",
            ErrorKind::NotFound => "not found",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Unauthorized => "unauthorized",
            ErrorKind::Forbidden => "forbidden",
            ErrorKind::Expired => "expired",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Delivery => "delivery failed",
            ErrorKind::RateLimited => "rate limited",
            ErrorKind::Protocol => "protocol error",
            ErrorKind::Untrusted => "untrusted",
            ErrorKind::Superseded => "superseded",
            ErrorKind::Corrupt => "corrupt data",
            ErrorKind::Tampered => "tampered",
            ErrorKind::Io => "i/o failure",
        }
    }

    /// `true` when the same request may succeed later without any change on our side.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::Delivery | ErrorKind::Unavailable | ErrorKind::RateLimited
        )
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error of `squad-notify`: a kind, the operation that failed, a one-line message, and for
/// remote failures the HTTP status and how long the service asked us to wait.
///
/// `Display` prints the message alone (one line, naming what is wrong, for example
/// `gate g-0123456789ab is already decided (approved)`, or for the GitHub layer
/// `github: list comments: HTTP 403: forbidden: ...`). `Debug` prints every field but the source.
/// The underlying cause, when there is one, is available through
/// [`std::error::Error::source`]; its type is private.
///
/// Messages never contain a secret: tokens and webhook URLs are never put into a message, errors
/// of the HTTP clients are reduced to their class (timeout, connection, status), and every
/// message goes through [`crate::redact_urls`], so credentials written into a URL
/// (`https://user:password@host`) or a query string never show.
#[derive(thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    op: &'static str,
    message: String,
    status: Option<u16>,
    retry_after: Option<Duration>,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The source is left out: a transport error may print the URL it was sent to.
        f.debug_struct("Error")
            .field("kind", &self.kind)
            .field("op", &self.op)
            .field("message", &self.message)
            .field("status", &self.status)
            .field("retry_after", &self.retry_after)
            .finish_non_exhaustive()
    }
}

impl Error {
    /// A new error of `kind` raised by operation `op` (for example `"gate.decide"`).
    pub fn new(kind: ErrorKind, op: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind,
            op,
            message: redact_urls(&message.into()).into_owned(),
            status: None,
            retry_after: None,
            source: None,
        }
    }

    /// An error of the GitHub layer: the message reads `github: <op>[: HTTP <status>]: <message>`.
    #[cfg(feature = "github")]
    pub(crate) fn github(
        kind: ErrorKind,
        op: &'static str,
        status: Option<u16>,
        message: impl fmt::Display,
    ) -> Self {
        let status_text = status.map(|s| format!(": HTTP {s}")).unwrap_or_default();
        let mut e = Self::new(kind, op, format!("github: {op}{status_text}: {message}"));
        e.status = status;
        e
    }

    /// Attaches the underlying cause. Never attach an error that may print a secret in its
    /// `Display`.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// Records how long the remote service asked us to wait.
    #[cfg(feature = "github")]
    pub(crate) fn with_retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }

    /// What the caller should do about it.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The operation that failed (for messages and logs; branch on [`Error::kind`], never on
    /// this text).
    pub fn op(&self) -> &'static str {
        self.op
    }

    /// The one-line message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The HTTP status the remote service answered, when the request got that far.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// How long the remote service asked us to wait (`Retry-After`, or until
    /// `x-ratelimit-reset`), for [`ErrorKind::RateLimited`].
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// `true` when trying again later may succeed (a failed delivery, an unavailable channel, a
    /// rate limit).
    pub fn is_retryable(&self) -> bool {
        self.kind.is_retryable()
    }

    /// `true` for errors caused by the caller's input (exit code 2 at the CLI): nothing was changed.
    pub fn is_user_error(&self) -> bool {
        self.kind == ErrorKind::InvalidInput
    }

    pub(crate) fn io(op: &'static str, what: impl fmt::Display, e: std::io::Error) -> Self {
        Error::new(ErrorKind::Io, op, format!("{what}: {e}")).with_source(e)
    }

    pub(crate) fn invalid(op: &'static str, message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidInput, op, message)
    }

    pub(crate) fn corrupt(op: &'static str, message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Corrupt, op, message)
    }
}

impl From<squad_model::Error> for Error {
    fn from(e: squad_model::Error) -> Self {
        Error::new(ErrorKind::InvalidInput, "validate", e.to_string()).with_source(e)
    }
}

impl From<squad_fs::Error> for Error {
    /// A file system failure is [`ErrorKind::Io`]; anything the state directory holds that is not
    /// what it should be (a symbolic link, a directory, a file too large or not UTF-8) is
    /// [`ErrorKind::Corrupt`]: stored state that cannot be used as it is.
    fn from(e: squad_fs::Error) -> Self {
        let kind = match e.kind() {
            squad_fs::ErrorKind::Io => ErrorKind::Io,
            _ => ErrorKind::Corrupt,
        };
        let op = match e.op() {
            "read" => "state.read",
            "lock" => "state.lock",
            "append" => "log.append",
            "remove" => "state.remove",
            _ => "state.write",
        };
        Error::new(kind, op, e.to_string()).with_source(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_the_message_and_the_cause_is_the_source() {
        let io = std::io::Error::other("disk on fire");
        let e = Error::io("state.write", "cannot write state.json", io);
        assert_eq!(e.to_string(), "cannot write state.json: disk on fire");
        assert_eq!(e.kind(), ErrorKind::Io);
        assert_eq!(e.op(), "state.write");
        assert!(std::error::Error::source(&e).is_some());
        assert!(!e.is_retryable() && !e.is_user_error());
        assert!(Error::new(ErrorKind::Delivery, "x", "HTTP 500").is_retryable());
        assert!(Error::invalid("x", "bad").is_user_error());
    }

    #[cfg(feature = "github")]
    #[test]
    fn github_errors_name_the_operation_and_status() {
        let e = Error::github(
            ErrorKind::Forbidden,
            "list comments",
            Some(403),
            "forbidden",
        );
        assert_eq!(e.to_string(), "github: list comments: HTTP 403: forbidden");
        assert_eq!(e.status(), Some(403));
        let e = Error::github(ErrorKind::InvalidInput, "read config", None, "bad");
        assert_eq!(e.to_string(), "github: read config: bad");
    }

    #[test]
    fn credentials_in_urls_never_reach_a_message() {
        let e = Error::new(
            ErrorKind::InvalidInput,
            "x",
            "API base \"http://user:pw@ghe.example.com/api?token=abc\" is bad",
        );
        let text = format!("{e} {e:?}");
        assert!(!text.contains("user:pw") && !text.contains("abc"), "{text}");
        assert!(text.contains("ghe.example.com"), "{text}");
    }
}
