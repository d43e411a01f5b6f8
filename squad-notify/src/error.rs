//! The one public error type of `squad-notify`.

use std::fmt;

/// Result alias used throughout `squad-notify`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What the caller should do about an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input is malformed or breaks a rule (bad trigger, bad settings, secret in an argument).
    /// Nothing was changed.
    InvalidInput,
    /// There is no such thing (no pending gate, unknown gate id).
    NotFound,
    /// The operation conflicts with the current state: a gate is already pending, the run was
    /// stopped, or the gate was already decided. Nothing was changed.
    Conflict,
    /// The signal's author may not decide this gate (unknown user, bot, the squad itself).
    Unauthorized,
    /// The gate expired; a decision after expiry does not count.
    Expired,
    /// A channel cannot work here (missing environment, not built in).
    Unavailable,
    /// A remote endpoint failed (timeout, connection refused, HTTP error) after the bounded retries.
    Delivery,
    /// The remote service asked us to slow down (GitHub's primary or secondary rate limit): try
    /// again later; the message says when, if the service said.
    RateLimited,
    /// Stored state could not be read as expected (torn JSON, schema violation, tampered log).
    Corrupt,
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
            ErrorKind::Expired => "expired",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Delivery => "delivery failed",
            ErrorKind::RateLimited => "rate limited",
            ErrorKind::Corrupt => "corrupt data",
            ErrorKind::Io => "i/o failure",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error of `squad-notify`: a kind, the operation that failed, a message, and the source.
///
/// `Display` prints the message alone (one line, naming what is wrong, for example
/// `gate g-0123456789ab is already decided (approved)`); `{:#}` appends the chain of sources.
/// `Debug` prints every field.
///
/// Messages never contain a secret: webhook URLs and secrets are never put into a message, and
/// errors of the HTTP client are reduced to their class (timeout, connection, status) before they
/// become a message. Backend error types never appear in the API.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    op: &'static str,
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Error {
    /// A new error of `kind` raised by operation `op` (for example `"gate.decide"`).
    pub fn new(kind: ErrorKind, op: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind,
            op,
            message: message.into(),
            source: None,
        }
    }

    /// Attaches the underlying cause. Never attach an error that may print a secret.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// What the caller should do about it.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The operation that failed.
    pub fn op(&self) -> &'static str {
        self.op
    }

    /// The one-line message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// `true` when trying again later may succeed (a failed delivery, an unavailable channel, a
    /// rate limit).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Delivery | ErrorKind::Unavailable | ErrorKind::RateLimited
        )
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
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if f.alternate() {
            let mut source = std::error::Error::source(self);
            while let Some(s) = source {
                write!(f, ": {s}")?;
                source = s.source();
            }
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

impl From<squad_model::Error> for Error {
    fn from(e: squad_model::Error) -> Self {
        Error::new(ErrorKind::InvalidInput, "validate", e.to_string()).with_source(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_the_message_and_alternate_adds_sources() {
        let io = std::io::Error::other("disk on fire");
        let e = Error::io("state.write", "cannot write state.json", io);
        assert_eq!(e.to_string(), "cannot write state.json: disk on fire");
        assert_eq!(e.kind(), ErrorKind::Io);
        assert_eq!(e.op(), "state.write");
        assert!(!e.is_retryable() && !e.is_user_error());
        assert!(Error::new(ErrorKind::Delivery, "x", "HTTP 500").is_retryable());
        assert!(Error::invalid("x", "bad").is_user_error());
    }
}
