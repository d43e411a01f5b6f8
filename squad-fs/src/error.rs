//! The error type of the crate.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// What went wrong, in categories callers branch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The path is not plain and relative (`..`, `.`, an absolute path, an empty path, NUL).
    InvalidPath,
    /// The path, or a directory on its way, is a symbolic link: never followed.
    Symlink,
    /// A file was expected and something else (a directory, a device) is there.
    NotAFile,
    /// A directory was expected and something else is there.
    NotADirectory,
    /// The file is larger than the caller's limit.
    TooLarge,
    /// The file is not valid UTF-8 text.
    NotUtf8,
    /// Any other I/O failure (permissions, a full disk).
    Io,
}

impl ErrorKind {
    /// Whether the error comes from what is in the state directory or from the caller's path
    /// (bad input: exit 2 at a command line) rather than from the system.
    pub fn is_user_error(self) -> bool {
        !matches!(self, ErrorKind::Io)
    }

    fn describe(self) -> &'static str {
        match self {
            ErrorKind::InvalidPath => "not a plain relative path inside the state directory",
            ErrorKind::Symlink => {
                "is a symbolic link, which squad never follows inside the state directory"
            }
            ErrorKind::NotAFile => "is not a regular file",
            ErrorKind::NotADirectory => "is not a directory",
            ErrorKind::TooLarge => "is too large",
            ErrorKind::NotUtf8 => "is not valid UTF-8",
            ErrorKind::Io => "I/O error",
        }
    }
}

/// An error of a state-directory operation: its kind, the operation, the path (the full path
/// for messages), and the underlying I/O error when there is one.
#[derive(Debug, thiserror::Error)]
pub struct Error {
    kind: ErrorKind,
    op: &'static str,
    path: PathBuf,
    line: Option<usize>,
    detail: Option<String>,
    #[source]
    source: Option<io::Error>,
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error of `kind` for operation `op` on `path`.
    pub fn new(kind: ErrorKind, op: &'static str, path: impl Into<PathBuf>) -> Self {
        Self {
            kind,
            op,
            path: path.into(),
            line: None,
            detail: None,
            source: None,
        }
    }

    /// An I/O failure of operation `op` on `path`.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self {
            source: Some(source),
            ..Self::new(ErrorKind::Io, op, path)
        }
    }

    pub(crate) fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    pub(crate) fn with_line(mut self, line: usize) -> Self {
        self.line = Some(line);
        self
    }

    /// The category.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The operation that failed (`read`, `write`, `append`, `lock`, …).
    pub fn op(&self) -> &'static str {
        self.op
    }

    /// The full path the error is about.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The 1-based line, for [`ErrorKind::NotUtf8`].
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// Whether this is bad input rather than a system failure (see [`ErrorKind::is_user_error`]).
    pub fn is_user_error(&self) -> bool {
        self.kind.is_user_error()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match (self.kind, self.line) {
            (ErrorKind::Io, _) => write!(f, "cannot {} {path}", self.op)?,
            (kind, Some(line)) => write!(f, "{path}:{line}: {}", kind.describe())?,
            (kind, None) => write!(f, "{path} {}", kind.describe())?,
        }
        if let Some(detail) = self
            .detail
            .as_ref()
            .filter(|_| self.kind != ErrorKind::NotUtf8)
        {
            write!(f, " ({detail})")?;
        }
        if let Some(source) = &self.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}
