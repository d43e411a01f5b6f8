//! The crate's one public error type.

use std::fmt;

/// What went wrong, named for what the caller should do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A trace line is not valid JSON, or not a valid record (missing or mistyped fields).
    InvalidTrace,
    /// A trace event has a kind this crate does not know.
    UnknownEventKind,
    /// A trace record names an entity that the trace never defined (or defines one twice).
    UnknownReference,
    /// The trace declares a schema version newer than this crate reads.
    UnsupportedVersion,
    /// A size or count is over its documented limit.
    OutOfRange,
    /// A policy file is not a JSON object of known policy fields.
    InvalidPolicy,
    /// The storage behind a directory failed (a database error); retrying may succeed.
    Storage,
    /// The wording of the briefing's commands is not a JSON object of known templates, or a
    /// template lacks a placeholder or is not one line (see
    /// [`BriefingCommands`](crate::briefing::BriefingCommands)).
    InvalidCommands,
}

/// An error from parsing or replaying a trace.
///
/// `Display` prints `line <n>: <message>` when the error belongs to a trace line, else just the
/// message. `Debug` prints the structure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Error {
    kind: ErrorKind,
    line: Option<usize>,
    message: String,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            line: None,
            message: message.into(),
        }
    }

    pub(crate) fn at_line(mut self, line: usize) -> Self {
        self.line = Some(line);
        self
    }

    /// The kind of error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The 1-based trace line the error is about, if any.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// The message without the line prefix.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// `true` only for [`ErrorKind::Storage`]: every other error is about the input, and
    /// retrying the same input fails the same way.
    pub fn is_retryable(&self) -> bool {
        self.kind == ErrorKind::Storage
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
