//! The error type of the GitHub layer.

use std::fmt;
use std::time::Duration;

/// What went wrong, named for what the caller should do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GithubErrorKind {
    /// A setting is missing or malformed (no token in the environment, a bad `owner/repo`, a bad
    /// API base URL). Fix the configuration; retrying does not help.
    Config,
    /// GitHub refused the token (401). Fix the token.
    Unauthorized,
    /// GitHub refused the request (403 without rate-limit signs): the token lacks a scope or the
    /// repository forbids the operation.
    Forbidden,
    /// The repository, issue, comment or user does not exist (or the token cannot see it).
    NotFound,
    /// A primary or secondary rate limit: wait [`GithubError::retry_after`] and try again.
    RateLimited,
    /// GitHub could not be reached or answered 5xx: retry later with backoff.
    Unavailable,
    /// GitHub answered something this crate cannot read (unexpected JSON, a bad header).
    Protocol,
    /// The issue exists but is not ours to read a gate from: its body was not written by the
    /// squad's own account, or holds no single well-formed gate block.
    UntrustedIssue,
    /// The issue now shows another gate than the one being resumed (a later gate of the run
    /// superseded it).
    Superseded,
}

impl GithubErrorKind {
    /// Whether the same request may succeed later without any change on our side.
    pub fn is_retryable(self) -> bool {
        matches!(self, Self::RateLimited | Self::Unavailable)
    }
}

/// An error of the GitHub layer.
///
/// `Display` prints the operation, the HTTP status when there was one, and a short message of ours
/// (`github: list comments: HTTP 403: forbidden`). It never contains a token, an `Authorization`
/// header or a response body. `Debug` prints the same fields plus the kind. The underlying transport
/// error, when there is one, is available through [`std::error::Error::source`]; its type is private.
#[derive(thiserror::Error)]
#[error("github: {op}{}: {message}", status.map(|s| format!(": HTTP {s}")).unwrap_or_default())]
pub struct GithubError {
    kind: GithubErrorKind,
    op: &'static str,
    status: Option<u16>,
    message: String,
    retry_after: Option<Duration>,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl fmt::Debug for GithubError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GithubError")
            .field("kind", &self.kind)
            .field("op", &self.op)
            .field("status", &self.status)
            .field("message", &self.message)
            .field("retry_after", &self.retry_after)
            .finish()
    }
}

impl GithubError {
    pub(crate) fn new(kind: GithubErrorKind, op: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind,
            op,
            status: None,
            message: message.into(),
            retry_after: None,
            source: None,
        }
    }

    pub(crate) fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    pub(crate) fn with_retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }

    pub(crate) fn with_source(
        mut self,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// The classification.
    pub fn kind(&self) -> GithubErrorKind {
        self.kind
    }

    /// The operation that failed (`"create issue"`, `"list comments"`, ...).
    pub fn op(&self) -> &'static str {
        self.op
    }

    /// The HTTP status GitHub answered, when the request got that far.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// How long GitHub asked us to wait (`Retry-After`, or until `x-ratelimit-reset`), for
    /// [`GithubErrorKind::RateLimited`].
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// Whether the same request may succeed later without any change on our side.
    pub fn is_retryable(&self) -> bool {
        self.kind.is_retryable()
    }
}

/// The result type of the GitHub layer.
pub type GithubResult<T> = std::result::Result<T, GithubError>;
