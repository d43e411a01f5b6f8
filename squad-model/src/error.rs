//! The one error type of this crate.

use std::fmt;

/// Result alias used throughout `squad-model`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong when a value of the shared vocabulary was parsed or validated.
///
/// `Display` prints one lowercase sentence naming the offending value and the rule it broke,
/// for example `invalid agent name "Data": only lowercase a-z, 0-9, '-' and '_' are allowed`.
/// `Debug` prints the structured fields.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An agent name (or notes namespace) broke the naming rule.
    #[error("invalid agent name {name:?}: {reason}")]
    InvalidAgentName {
        /// The rejected input.
        name: String,
        /// The rule it broke.
        reason: &'static str,
    },
    /// An identifier was empty or malformed.
    #[error("invalid {what} {value:?}: {reason}")]
    InvalidId {
        /// Which kind of identifier (for example `entry id`).
        what: &'static str,
        /// The rejected input.
        value: String,
        /// The rule it broke.
        reason: &'static str,
    },
    /// A timestamp was not RFC 3339 in UTC.
    #[error("invalid timestamp {value:?}: {reason}")]
    InvalidTimestamp {
        /// The rejected input.
        value: String,
        /// The rule it broke.
        reason: String,
    },
    /// A document broke its JSON Schema.
    #[error("{0}")]
    Schema(SchemaViolations),
    /// A document was not valid JSON or did not have the expected shape.
    #[error("invalid {what}: {message}")]
    Json {
        /// What was being read (for example `note entry`).
        what: &'static str,
        /// The parser's description of the problem, with line and column when known.
        message: String,
    },
}

/// One rule of a JSON Schema that a document broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaViolation {
    /// The field at fault, as a JSON Pointer (`/agent`, `/alternatives_considered/0`);
    /// the empty string means the document itself.
    pub field: String,
    /// The schema keyword that failed (`required`, `type`, `enum`, `format`, `pattern`, ...).
    pub rule: String,
    /// A human-readable description of the failure.
    pub message: String,
}

impl fmt::Display for SchemaViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = if self.field.is_empty() {
            "(document)"
        } else {
            self.field.trim_start_matches('/')
        };
        write!(
            f,
            "field `{field}` breaks rule `{}`: {}",
            self.rule, self.message
        )
    }
}

/// Every violation found when a document was checked against one schema (never empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaViolations {
    /// The schema that was applied (for example `note-entry`).
    pub schema: &'static str,
    /// The violations, in the order the validator reported them.
    pub violations: Vec<SchemaViolation>,
}

impl fmt::Display for SchemaViolations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} schema violation", self.schema)?;
        for (i, v) in self.violations.iter().enumerate() {
            f.write_str(if i == 0 { ": " } else { "; " })?;
            write!(f, "{v}")?;
        }
        Ok(())
    }
}
