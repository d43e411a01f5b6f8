//! The JSON Schemas shipped with this crate, and validation against them.
//!
//! The schema files live in `squad-model/schemas/` so that programs in other languages can use
//! them; this module embeds the same bytes. Validators are compiled once, on first use, with
//! format validation on (so `date-time` is checked) and no network access (remote `$ref`s are
//! never resolved).

use std::sync::OnceLock;

use jsonschema::Validator;
use serde_json::Value;

use crate::error::{Error, Result, SchemaViolation, SchemaViolations};

/// The note-entry schema (`schemas/note-entry.schema.json`), verbatim.
pub const NOTE_ENTRY_SCHEMA: &str = include_str!("../schemas/note-entry.schema.json");

/// The schema of the `notify` object of `state.json` (`schemas/notify-state.schema.json`), verbatim.
pub const NOTIFY_STATE_SCHEMA: &str = include_str!("../schemas/notify-state.schema.json");

/// The schema of the `approval` object of `state.json` (`schemas/approval-state.schema.json`),
/// verbatim: the runs, the pending gates (one per run) and the older single `pendingGate`.
pub const APPROVAL_STATE_SCHEMA: &str = include_str!("../schemas/approval-state.schema.json");

/// A schema shipped with this crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Schema {
    /// One entry of a squad note.
    NoteEntry,
    /// The `notify` object of `state.json`.
    NotifyState,
    /// The `approval` object of `state.json`.
    ApprovalState,
}

impl Schema {
    /// Every shipped schema.
    pub const ALL: [Schema; 3] = [
        Schema::NoteEntry,
        Schema::NotifyState,
        Schema::ApprovalState,
    ];

    /// The short name used in messages and file names (`note-entry`, `notify-state`,
    /// `approval-state`).
    pub fn name(&self) -> &'static str {
        match self {
            Schema::NoteEntry => "note-entry",
            Schema::NotifyState => "notify-state",
            Schema::ApprovalState => "approval-state",
        }
    }

    /// The schema document as text.
    pub fn text(&self) -> &'static str {
        match self {
            Schema::NoteEntry => NOTE_ENTRY_SCHEMA,
            Schema::NotifyState => NOTIFY_STATE_SCHEMA,
            Schema::ApprovalState => APPROVAL_STATE_SCHEMA,
        }
    }

    /// Checks `instance` against this schema.
    ///
    /// # Errors
    ///
    /// [`Error::Schema`] listing every violation, each naming the field (a JSON Pointer) and the
    /// rule (the schema keyword) it broke.
    ///
    /// ```
    /// use squad_model::schema::Schema;
    /// use serde_json::json;
    ///
    /// let err = Schema::NoteEntry
    ///     .validate(&json!({"id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "timestamp": "2026-03-23T14:00:00Z", "type": "decision"}))
    ///     .unwrap_err();
    /// assert!(err.to_string().contains("field `agent` breaks rule `required`"), "{err}");
    /// ```
    pub fn validate(&self, instance: &Value) -> Result<()> {
        let violations: Vec<SchemaViolation> = self
            .validator()
            .iter_errors(instance)
            .map(|e| violation(&e))
            .collect();
        if violations.is_empty() {
            Ok(())
        } else {
            Err(Error::Schema(SchemaViolations {
                schema: self.name(),
                violations,
            }))
        }
    }

    fn validator(&self) -> &'static Validator {
        static NOTE: OnceLock<Validator> = OnceLock::new();
        static NOTIFY: OnceLock<Validator> = OnceLock::new();
        static APPROVAL: OnceLock<Validator> = OnceLock::new();
        let cell = match self {
            Schema::NoteEntry => &NOTE,
            Schema::NotifyState => &NOTIFY,
            Schema::ApprovalState => &APPROVAL,
        };
        cell.get_or_init(|| compile(self.text()))
    }
}

fn compile(text: &str) -> Validator {
    // The schema texts are constants of this crate, and a unit test compiles both, so a failure
    // here is a build defect, not an input error.
    let schema: Value = serde_json::from_str(text).expect("shipped schema is valid JSON");
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("shipped schema compiles")
}

fn violation(e: &jsonschema::ValidationError<'_>) -> SchemaViolation {
    use jsonschema::error::ValidationErrorKind as K;
    let mut field = e.instance_path().as_str().to_owned();
    if let K::Required { property } = e.kind() {
        field.push('/');
        field.push_str(property.as_str().unwrap_or_default());
    }
    SchemaViolation {
        field,
        rule: e.kind().keyword().to_owned(),
        message: e.to_string(),
    }
}

/// Checks a note entry against the note-entry schema.
///
/// # Errors
///
/// As [`Schema::validate`].
pub fn validate_note_entry(instance: &Value) -> Result<()> {
    Schema::NoteEntry.validate(instance)
}

/// Checks a `notify` object against the notify-state schema.
///
/// # Errors
///
/// As [`Schema::validate`].
pub fn validate_notify(instance: &Value) -> Result<()> {
    Schema::NotifyState.validate(instance)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_schema_compiles() {
        for s in Schema::ALL {
            let _ = s.validator();
        }
    }
}
