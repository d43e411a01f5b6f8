//! The note entry: one JSON object per line in a squad note.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::{AgentName, EntryId, Timestamp};

/// The kind of a note entry (the `type` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum NoteType {
    /// An architecture or implementation decision.
    Decision,
    /// Research findings.
    Research,
    /// Code review context.
    Review,
    /// Work-round progress.
    Progress,
    /// A security review or finding.
    Security,
}

impl NoteType {
    /// Every type, in declaration order.
    pub const ALL: [NoteType; 5] = [
        NoteType::Decision,
        NoteType::Research,
        NoteType::Review,
        NoteType::Progress,
        NoteType::Security,
    ];

    /// The wire name (`decision`, `research`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            NoteType::Decision => "decision",
            NoteType::Research => "research",
            NoteType::Review => "review",
            NoteType::Progress => "progress",
            NoteType::Security => "security",
        }
    }
}

impl fmt::Display for NoteType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for NoteType {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        NoteType::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| Error::Json {
                what: "note type",
                message: format!(
                    "unknown type {s:?}: expected one of decision, research, review, progress, security"
                ),
            })
    }
}

/// How sure the author of a decision is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Confidence {
    /// Low confidence.
    Low,
    /// Medium confidence.
    Medium,
    /// High confidence.
    High,
}

impl fmt::Display for Confidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        })
    }
}

/// One entry of a squad note, as in the notes protocol.
///
/// Required: `id`, `agent`, `timestamp`, `type`. The typed optional fields of decision and
/// research notes are fields here; every other key is kept in [`NoteEntry::extra`] and written
/// back unchanged, so a round trip through this type loses nothing.
///
/// On the wire an entry is one line of compact JSON ([`NoteEntry::to_line`]).
///
/// ```
/// use squad_model::{AgentName, NoteEntry, NoteType};
///
/// let mut entry = NoteEntry::new(AgentName::new("data")?, NoteType::Decision);
/// entry.decision = Some("Use JWT RS256 for auth middleware".into());
/// entry.promote_to_permanent = Some(true);
/// let line = entry.to_line();
/// assert!(line.ends_with('\n') && !line.trim_end().contains('\n'));
///
/// let back = NoteEntry::from_json(&line)?;
/// assert_eq!(back, entry);
/// assert!(back.promotes());
/// # Ok::<(), squad_model::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NoteEntry {
    /// Unique, sortable id (UUIDv7 or ULID).
    pub id: EntryId,
    /// The agent that wrote the entry.
    pub agent: AgentName,
    /// When it was written (RFC 3339, UTC).
    pub timestamp: Timestamp,
    /// The kind of entry.
    #[serde(rename = "type")]
    pub kind: NoteType,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,

    /// Decision notes: what was decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// Decision notes: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Decision notes: what else was considered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alternatives_considered: Option<Vec<String>>,
    /// Decision notes: how sure the author is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<Confidence>,
    /// Asks Ralph to copy the entry to `decisions.md` once its commit is merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promote_to_permanent: Option<bool>,

    /// Research notes: the subject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// Research notes: the findings (any JSON value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findings: Option<Value>,
    /// Research notes: hours spent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort_hours: Option<f64>,
    /// Asks Ralph to archive the entry even when its branch is closed unmerged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_on_close: Option<bool>,

    /// Every other key, kept verbatim and in order.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl NoteEntry {
    /// A new entry with a fresh id, the current time and no optional fields.
    pub fn new(agent: AgentName, kind: NoteType) -> Self {
        Self::with_id(EntryId::generate(), agent, Timestamp::now(), kind)
    }

    /// An entry with the given required fields and no optional ones.
    pub fn with_id(id: EntryId, agent: AgentName, timestamp: Timestamp, kind: NoteType) -> Self {
        Self {
            id,
            agent,
            timestamp,
            kind,
            content: None,
            decision: None,
            reasoning: None,
            alternatives_considered: None,
            confidence: None,
            promote_to_permanent: None,
            topic: None,
            findings: None,
            effort_hours: None,
            archive_on_close: None,
            extra: Map::new(),
        }
    }

    /// Validates `value` against the note-entry schema, then converts it.
    ///
    /// # Errors
    ///
    /// [`Error::Schema`] naming each field at fault and the rule it broke.
    pub fn from_value(value: Value) -> Result<Self> {
        crate::schema::validate_note_entry(&value)?;
        serde_json::from_value(value).map_err(|e| Error::Json {
            what: "note entry",
            message: e.to_string(),
        })
    }

    /// Parses one entry from JSON text (surrounding whitespace allowed), with schema validation.
    ///
    /// # Errors
    ///
    /// [`Error::Json`] for text that is not JSON, [`Error::Schema`] for a schema violation.
    pub fn from_json(text: &str) -> Result<Self> {
        let value: Value = serde_json::from_str(text).map_err(|e| Error::Json {
            what: "note entry",
            message: e.to_string(),
        })?;
        Self::from_value(value)
    }

    /// The entry as a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The entry as one line of compact JSON, ending in `\n`.
    pub fn to_line(&self) -> String {
        // Serialising this type cannot fail: every key is a string and every value is plain data.
        let mut line = serde_json::to_string(self).unwrap_or_default();
        line.push('\n');
        line
    }

    /// `true` when the entry asks to be promoted to `decisions.md`.
    pub fn promotes(&self) -> bool {
        self.promote_to_permanent == Some(true)
    }

    /// `true` when the entry asks to be archived when its branch closes unmerged.
    pub fn archives_on_close(&self) -> bool {
        self.archive_on_close == Some(true)
    }

    /// The order in which entries of one note are shown: by (`timestamp`, `id`).
    pub fn display_order(&self, other: &NoteEntry) -> Ordering {
        self.timestamp
            .cmp(&other.timestamp)
            .then_with(|| self.id.cmp(&other.id))
    }
}
