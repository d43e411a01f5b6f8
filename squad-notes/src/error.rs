//! The one public error type of `squad-notes`.

use std::fmt;

/// Result alias used throughout `squad-notes`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What the caller should do about an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The thing asked for does not exist (a commit, a ref, a key).
    NotFound,
    /// The input is malformed or breaks a rule (bad JSON, schema violation, bad name, bad key).
    /// Nothing was changed.
    InvalidInput,
    /// The caller may not do this (for example, write into another agent's namespace).
    /// Nothing was changed.
    PermissionDenied,
    /// A compare-and-swap lost a race and the bounded retries ran out. Retrying may succeed.
    Conflict,
    /// The backend does not support this operation.
    Unsupported,
    /// Stored data could not be read as expected (a corrupt object or tree).
    Corrupt,
    /// The git repository, the git CLI or the file system failed.
    Backend,
    /// A lock file that no running process holds (left by a process that was killed in the
    /// middle of an update) blocks the update; [`Error::path`] names it. Nothing was changed.
    /// Remove the file when no git command is running, then try again.
    Locked,
}

impl ErrorKind {
    /// A short lowercase name (`not found`, `invalid input`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not found",
            ErrorKind::InvalidInput => "invalid input",
            ErrorKind::PermissionDenied => "permission denied",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Corrupt => "corrupt data",
            ErrorKind::Backend => "backend failure",
            ErrorKind::Locked => "locked",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error of `squad-notes`: a kind, the operation that failed, a message, and the source.
///
/// `Display` prints the message alone (one line, naming what is wrong, for example
/// `commit deadbeef not found`); the underlying cause, when there is one, is available through
/// [`std::error::Error::source`] (walk the chain to print it). `Debug` prints every field.
/// Backend error types (gix, git2, serde_json) are kept as the boxed `source` and never appear in
/// the API.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    op: &'static str,
    message: String,
    path: Option<std::path::PathBuf>,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Error {
    /// A new error of `kind` raised by operation `op` (for example `"notes.write"`).
    pub fn new(kind: ErrorKind, op: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind,
            op,
            message: message.into(),
            path: None,
            source: None,
        }
    }

    /// Names the file the error is about (for [`ErrorKind::Locked`]: the lock file).
    pub fn with_path(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// The file the error is about, when there is one (the lock file of an
    /// [`ErrorKind::Locked`] error).
    pub fn path(&self) -> Option<&std::path::Path> {
        self.path.as_deref()
    }

    /// Attaches the underlying cause.
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

    /// `true` when trying again may succeed (a lost race).
    pub fn is_retryable(&self) -> bool {
        self.kind == ErrorKind::Conflict
    }

    /// `true` for errors caused by the caller's input (exit code 2 at the CLI): nothing was changed.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::InvalidInput | ErrorKind::PermissionDenied | ErrorKind::NotFound
        )
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
    fn display_is_the_message_and_the_cause_is_the_source() {
        let io = std::io::Error::other("disk on fire");
        let e = Error::new(
            ErrorKind::Backend,
            "state.write",
            "cannot write decisions.md",
        )
        .with_source(io);
        assert_eq!(e.to_string(), "cannot write decisions.md");
        let source = std::error::Error::source(&e).map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("disk on fire"));
        assert_eq!(e.op(), "state.write");
        assert!(!e.is_retryable() && !e.is_user_error());
        assert!(Error::new(ErrorKind::Conflict, "x", "lost").is_retryable());
    }
}
