//! The one public error type of `squad-memory`.

use std::fmt;

/// Result alias used throughout `squad-memory`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What the caller should do about an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A memory document or wiki topic asked for does not exist.
    NotFound,
    /// The input is malformed or breaks a rule (a bad agent or topic name, a malformed memory
    /// file). Nothing was changed.
    InvalidInput,
    /// Another Scribe holds the memory lock. Retrying later may succeed.
    Locked,
    /// The store does not support this operation.
    Unsupported,
    /// The file system (or another storage back end) failed.
    Backend,
}

impl ErrorKind {
    /// A short lowercase name (`not found`, `invalid input`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not found",
            ErrorKind::InvalidInput => "invalid input",
            ErrorKind::Locked => "locked",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Backend => "backend failure",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How serious a [`Problem`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Level {
    /// The file is malformed (`validate` fails, exit 2). Readers skip the document and say so.
    #[default]
    Error,
    /// Read leniently and reported (a renamed duplicate id, a date that is not one). Never
    /// fatal.
    Warning,
}

/// One problem found in a memory file, reported as `file:line: message` (`file:line: warning:
/// message` for a warning).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    /// The file, as the store names it (for example `hot/data.md`).
    pub file: String,
    /// The 1-based line the problem is on (1 for whole-file problems such as size).
    pub line: usize,
    /// What is wrong, one lowercase sentence.
    pub message: String,
    /// Error or warning.
    pub level: Level,
}

impl Problem {
    /// An error-level problem.
    pub fn error(file: impl Into<String>, line: usize, message: impl Into<String>) -> Self {
        Self {
            file: file.into(),
            line,
            message: message.into(),
            level: Level::Error,
        }
    }

    /// A warning.
    pub fn warning(file: impl Into<String>, line: usize, message: impl Into<String>) -> Self {
        Self {
            level: Level::Warning,
            ..Self::error(file, line, message)
        }
    }

    /// `true` for an error-level problem.
    pub fn is_error(&self) -> bool {
        self.level == Level::Error
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.level {
            Level::Error => write!(f, "{}:{}: {}", self.file, self.line, self.message),
            Level::Warning => write!(f, "{}:{}: warning: {}", self.file, self.line, self.message),
        }
    }
}

/// An error of `squad-memory`: a kind, the operation that failed, a message, the problems found
/// in memory files (if any) and the source.
///
/// `Display` prints the message alone; when the error carries [`Problem`]s the message is one
/// `file:line: problem` line per problem, joined by newlines. The underlying cause, when there is
/// one, is available through [`std::error::Error::source`]. `Debug` prints every field. I/O
/// errors are kept as the boxed `source` and never appear in the API.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    op: &'static str,
    message: String,
    problems: Vec<Problem>,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Error {
    /// A new error of `kind` raised by operation `op` (for example `"memory.write"`).
    pub fn new(kind: ErrorKind, op: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind,
            op,
            message: message.into(),
            problems: Vec::new(),
            source: None,
        }
    }

    /// An [`ErrorKind::InvalidInput`] error listing malformed-file problems.
    pub fn malformed(op: &'static str, problems: Vec<Problem>) -> Self {
        let message = problems
            .iter()
            .map(Problem::to_string)
            .collect::<Vec<_>>()
            .join("\n");
        Self {
            kind: ErrorKind::InvalidInput,
            op,
            message,
            problems,
            source: None,
        }
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

    /// The message (one line, or one line per problem).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The malformed-file problems, if this error is about file contents.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// `true` when trying again later may succeed (the Scribe lock was busy).
    pub fn is_retryable(&self) -> bool {
        self.kind == ErrorKind::Locked
    }

    /// `true` for errors caused by the caller's input (exit code 2 at the CLI): nothing was
    /// changed.
    pub fn is_user_error(&self) -> bool {
        matches!(self.kind, ErrorKind::InvalidInput | ErrorKind::NotFound)
    }
}

/// What a reader that skips unreadable memory files makes of `r`: `Ok(Some(v))` for a value;
/// `Ok(None)` for an error carrying [`Problem`]s (a malformed file, a symlink, a file too
/// large), whose problems are added to `skipped`; any other error (a storage failure) as it
/// is.
pub(crate) fn or_skip<T>(r: Result<T>, skipped: &mut Vec<Problem>) -> Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(mut e) if !e.problems.is_empty() => {
            skipped.append(&mut e.problems);
            Ok(None)
        }
        Err(e) => Err(e),
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
    fn malformed_lists_one_line_per_problem() {
        let e = Error::malformed(
            "memory.parse",
            vec![
                Problem::error("hot/data.md", 3, "unknown kind \"x\""),
                Problem::error("cold/data.md", 9, "bad date"),
            ],
        );
        assert_eq!(
            e.to_string(),
            "hot/data.md:3: unknown kind \"x\"\ncold/data.md:9: bad date"
        );
        assert!(e.is_user_error() && !e.is_retryable());
        assert_eq!(e.problems().len(), 2);
    }

    #[test]
    fn display_is_the_message_and_the_cause_is_the_source() {
        let io = std::io::Error::other("disk on fire");
        let e = Error::new(
            ErrorKind::Backend,
            "memory.write",
            "cannot write hot/data.md",
        )
        .with_source(io);
        assert_eq!(e.to_string(), "cannot write hot/data.md");
        let source = std::error::Error::source(&e).map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("disk on fire"));
        assert_eq!((e.kind(), e.op()), (ErrorKind::Backend, "memory.write"));
        assert!(!e.is_retryable() && !e.is_user_error());
    }
}
